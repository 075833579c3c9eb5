"""GPU vertex-reuse profiles as data.

A profile is the triple of paper 001 sec. 3.4 (Kerbl et al. 2018): the batch bounds
``MAX_SIZE`` (indices per batch) and ``MAX_UNIQUES`` (shaded vertices per batch) and the
*memory module* that decides which earlier vertices of the batch can still be reused.
Profiles are plain data so that :mod:`gpu_probe` can fit a new one and save it as JSON.

Memory kinds
------------
``fifo``
    Classic FIFO cache of ``memory_size`` entries; a vertex is pushed only when it misses.
``lookback``
    NVIDIA OpenGL (paper 001 sec. 3.3): a FIFO that pushes *every* index, i.e. an index at
    batch position ``j`` reuses an earlier occurrence at position ``i`` of the same batch iff
    ``j - i <= memory_size`` (42).
``lookback_dx``
    NVIDIA Direct3D (paper 001 sec. 3.3): reuse between positions ``i < j`` at distance
    ``d = j - i`` iff ``d <= 44`` (``i % 3 == 0``), ``d <= 40 or d == 42`` (``i % 3 == 1``),
    ``d <= 42 and d != 40`` (``i % 3 == 2``).
``lru``
    LRU cache of ``memory_size`` distinct vertices (AMD: 15).
``direct``
    Direct-mapped table of ``memory_size`` slots keyed by ``vertex index % memory_size``
    (a vertex evicts whatever occupied its slot); the form Mesa's vertex splitter uses.
``groups``
    Aligned groups (Arm Mali Valhall and later): an index ``v`` shades the whole group of
    ``memory_size`` vertex ids ``memory_size * (v // memory_size)`` up to the next multiple
    (those that exist), each group once per draw; e.g. groups of 4 and indices 0, 7, 15 shade
    vertices 0-7 and 12-15.
``range``
    Whole index range (Arm Mali-400): a draw shades every vertex id from its smallest to its
    largest index once (indices 0, 1000, 2 shade 1001 vertices); ``memory_size`` is unused (1).

``max_size == 0`` / ``max_uniques == 0`` mean "unbounded" (a classic global cache).  For
``groups`` and ``range`` the triangle order does not change the vertices shaded; they take no
batch bounds.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, replace
from importlib.resources import files

from ..support.errors import MeshoptBatchError
from ..support.limits import check_profile_sizes
from .profile_file import load_profile_file

MEMORY_KINDS = ("fifo", "lookback", "lookback_dx", "lru", "direct", "groups", "range")
#: Memory kinds whose invocations do not depend on the triangle order (only on which vertex
#: ids a draw references).
ORDER_FREE_KINDS = ("groups", "range")


@dataclass(frozen=True)
class Profile:
    """Batching and retention rules of one GPU (paper 001, Algorithm 1 parameters).

    Attributes
    ----------
    name : str
        Profile name as used on the command line.
    max_size : int
        ``MAX_SIZE``: most indices in one batch (0 = unbounded).
    max_uniques : int
        ``MAX_UNIQUES``: most vertex-shader invocations in one batch (0 = unbounded).
    memory : str
        Retention rule, one of :data:`MEMORY_KINDS`.
    memory_size : int
        Size of the retention structure (entries, look-back distance or slots).
    boundary_16bit : bool
        Model NVIDIA's loss of reuse when indices straddle a multiple of 2^16 (paper 001
        sec. 3.3): an index in another 2^16 block than the index before it empties the
        memory, so reuse reaches back only to the last such switch (found and checked on an
        NVIDIA H100; the files in ``results/`` hold the draws).
    description, source : str
        What the profile models and where its numbers come from.

    Raises
    ------
    MeshoptBatchError
        Unknown memory kind, or sizes out of range.

    References
    ----------
    .. [1] B. Kerbl, M. Kenzel, E. Ivanchenko, D. Schmalstieg, M. Steinberger, "Revisiting the
       Vertex Cache: Understanding and Optimizing Vertex Processing on the modern GPU",
       Proc. ACM Comput. Graph. Interact. Tech. 1(2), 2018 (paper 001), sec. 3.3, Algorithm 1.
    """

    name: str
    max_size: int
    max_uniques: int
    memory: str
    memory_size: int
    boundary_16bit: bool = False
    description: str = ""
    source: str = ""

    def __post_init__(self):
        check_profile_sizes(self.name, self.max_size, self.max_uniques, self.memory_size)
        if self.memory not in MEMORY_KINDS:
            raise MeshoptBatchError(f"profile {self.name!r}: unknown memory kind {self.memory!r}")
        if self.max_size < 0 or self.max_uniques < 0 or self.memory_size < 1:
            raise MeshoptBatchError(f"profile {self.name!r}: bounds must be positive")
        if 0 < self.max_uniques < 3 or 0 < self.max_size < 3:
            raise MeshoptBatchError(f"profile {self.name!r}: a batch must hold one triangle")
        if self.order_free and (self.batched or self.boundary_16bit):
            raise MeshoptBatchError(f"profile {self.name!r}: memory {self.memory!r} takes no batch "
                                    "bounds and no 16-bit rule")

    @property
    def order_free(self) -> bool:
        """True when the triangle order cannot change the invocations (``groups``, ``range``)."""
        return self.memory in ORDER_FREE_KINDS

    @property
    def batched(self) -> bool:
        """True when the profile has batch boundaries (not a single global cache)."""
        return self.max_size > 0 or self.max_uniques > 0

    def with_16bit_boundaries(self, enabled: bool = True) -> Profile:
        """The same profile with the 2^16 block rule switched on or off.

        Parameters
        ----------
        enabled : bool
            Switch the rule on (the name gets ``+16bit``) or off (the suffix goes).

        Returns
        -------
        Profile
            The new profile.
        """
        suffix = "+16bit"
        name = self.name.removesuffix(suffix) + (suffix if enabled else "")
        return replace(self, name=name, boundary_16bit=enabled)

    def to_dict(self) -> dict:
        """The profile as a dict (its JSON form).

        Returns
        -------
        dict
            Field name to value.
        """
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Profile:
        """A profile from its dict form (unknown keys are ignored).

        Parameters
        ----------
        data : dict
            Field name to value, as :meth:`to_dict` writes.

        Returns
        -------
        Profile
            The profile, checked.
        """
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})

    def to_json(self) -> str:
        """The profile as JSON text (what ``--profile FILE`` reads).

        Returns
        -------
        str
            Indented JSON.
        """
        return json.dumps(self.to_dict(), indent=2)


BUILTIN_PROFILES: dict[str, Profile] = {
    "nvidia_gl": Profile(
        "nvidia_gl", 96, 32, "lookback", 42,
        description="NVIDIA Kepler-Pascal, OpenGL: batches of <= 96 indices and <= 32 shaded "
        "vertices, reuse within a look-back of 42 index positions",
        source="paper 001 sec. 3.3-3.4 (measured on GTX 780Ti-1080Ti)",
    ),
    "nvidia_dx": Profile(
        "nvidia_dx", 96, 32, "lookback_dx", 44,
        description="NVIDIA, Direct3D: as nvidia_gl with the 42+-3 look-back that depends on the "
        "index position modulo 3",
        source="paper 001 sec. 3.3",
    ),
    "amd": Profile(
        "amd", 384, 384, "lru", 15,
        description="AMD GCN: fixed batches of 384 indices, LRU retention of 15 vertices",
        source="paper 001 sec. 3.3-3.4 (R7 200, RX Vega 56)",
    ),
    "intel": Profile(
        "intel", 0, 0, "fifo", 128,
        description="Intel Gen9, the paper's approximation: a FIFO cache of 128 vertices "
        "(MAX_UNIQUES)",
        source="paper 001 sec. 3.3 (HD 520 / HD 630); approximation stated by the paper",
    ),
}


def _register_llvmpipe():
    """The llvmpipe profile was found by the probe (``meshopt-batch probe --fit``) and ships as
    data in ``meshopt_batch/data/llvmpipe.json``."""
    text = files("meshopt_batch").joinpath("data/llvmpipe.json").read_text()
    BUILTIN_PROFILES["llvmpipe"] = Profile.from_dict(json.loads(text))


_register_llvmpipe()

_CACHE_RE = re.compile(r"^(fifo|lru):(\d+)$")


def get_profile(spec: str | Profile) -> Profile:
    """Resolve a profile name, ``fifo:N`` / ``lru:N``, a ``+16bit`` suffix, or a JSON file.

    Parameters
    ----------
    spec : str or Profile
        ``nvidia_gl``, ``nvidia_dx``, ``amd``, ``intel``, ``llvmpipe``, ``fifo:N``,
        ``lru:N``, any of these followed by ``+16bit``, or a path to a profile JSON file
        (as written by ``meshopt-batch probe --fit``).

    Returns
    -------
    Profile
        The profile (a Profile given is returned as it is).

    Raises
    ------
    MeshoptBatchError
        An unknown name, a bad cache size or an unreadable profile file.
    """
    if isinstance(spec, Profile):
        return spec
    text = str(spec).strip()
    sixteen = text.endswith("+16bit")
    base = text.removesuffix("+16bit")
    if base in BUILTIN_PROFILES:
        profile = BUILTIN_PROFILES[base]
    elif m := _CACHE_RE.match(base):
        size = int(m.group(2))
        if size < 1:
            raise MeshoptBatchError(f"profile {text!r}: cache size must be at least 1")
        kind = m.group(1)
        profile = Profile(
            base, 0, 0, kind, size,
            description=f"global {kind.upper()} post-transform cache of {size} vertices",
            source="classic cache model (Hoppe 1999; Lin & Yu 2006)",
        )
    elif base.endswith(".json"):
        profile = load_profile_file(base, Profile)
    else:
        names = ", ".join(list(BUILTIN_PROFILES) + ["fifo:N", "lru:N"])
        raise MeshoptBatchError(f"unknown profile {text!r} (known: {names})")
    return profile.with_16bit_boundaries(True) if sixteen else profile


def builtin_profile_names() -> list[str]:
    """The names of the built-in GPU profiles.

    Returns
    -------
    list of str
        ``nvidia_gl``, ``nvidia_dx``, ``amd``, ``intel``, ``llvmpipe`` (not the classic
        ``fifo:N`` and ``lru:N`` caches).
    """
    return list(BUILTIN_PROFILES)
