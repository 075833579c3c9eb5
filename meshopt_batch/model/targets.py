"""Optimization targets: the GPU profiles one triangle order is made for.

An asset is built once and drawn on every GPU its users own, so the thing an order is
optimized for is a *set* of profiles (:mod:`meshopt_batch.model.profiles`).  A :class:`Target` is
that set, resolved once where a name enters (the command line's ``-p``, ``optimize_file``'s
``profile=``) and passed inward as one object:

``portable``
    ``nvidia_gl``, ``nvidia_dx``, ``amd``, ``intel``, ``llvmpipe``: every GPU family the
    project has a model of (paper 001 sec. 3.3 and the probe's llvmpipe fit).  The default of
    ``optimize`` for files and libraries.
``A,B,FILE.json``
    Any set: built-in names, ``fifo:N`` / ``lru:N``, ``+16bit`` forms and fitted profile files.
``NAME``
    One profile: exactly the single-profile optimizer (its output byte for byte what it was
    before targets existed, so every figure measured with it stays reproducible).

NVIDIA's 2^16 block rule (paper 001 sec. 3.3; measured on an H100 under OpenGL) applies where
an index buffer addresses more than 2^16 vertices: :meth:`Target.evaluation_profiles` then
evaluates each NVIDIA look-back profile in its ``+16bit`` form, as the hardware behaves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..support.errors import MeshoptBatchError
from .profiles import Profile, get_profile

__all__ = ["PORTABLE", "Target", "get_target", "target_names"]

#: The profiles of the ``portable`` target, in report order.
PORTABLE = ("nvidia_gl", "nvidia_dx", "amd", "intel", "llvmpipe")
#: Vertex count above which NVIDIA's 2^16 block rule can apply (paper 001 sec. 3.3).
BLOCK_16BIT = 1 << 16


@dataclass(frozen=True)
class Target:
    """The profiles one triangle order is optimized for.

    Attributes
    ----------
    name : str
        ``"portable"``, a profile name, or the comma-joined names of a set.
    profiles : tuple of Profile
        The set, in the order given (the first is the one single-profile figures use).

    Raises
    ------
    MeshoptBatchError
        No profile, or a profile listed twice.
    """

    name: str
    profiles: tuple[Profile, ...]

    def __post_init__(self):
        if not self.profiles:
            raise MeshoptBatchError("a target needs at least one profile")
        names = [p.name for p in self.profiles]
        if len(set(names)) != len(names):
            raise MeshoptBatchError(f"target {self.name!r}: a profile is listed twice")

    @property
    def single(self) -> bool:
        """One profile: the single-profile optimizer applies."""
        return len(self.profiles) == 1

    @property
    def first(self) -> Profile:
        """The profile single-profile figures (``before``/``after``) are given for."""
        return self.profiles[0]

    @property
    def ordered(self) -> tuple[Profile, ...]:
        """The profiles whose invocations depend on the triangle order (not ``groups``/``range``)."""
        return tuple(p for p in self.profiles if not p.order_free)

    def evaluation_profiles(self, vertex_count: int) -> tuple[Profile, ...]:
        """The profiles a buffer of a given size is judged on.

        Each NVIDIA look-back profile takes its ``+16bit`` form once the buffer passes 2^16
        vertices, as the hardware judges it.

        Parameters
        ----------
        vertex_count : int
            The vertex buffer's size.

        Returns
        -------
        tuple of Profile
            The target's profiles, in order.
        """
        return tuple(block_rule_form(p, vertex_count) for p in self.profiles)

    def to_dict(self) -> dict:
        """The target as a dict (the JSON outputs).

        Returns
        -------
        dict
            ``name`` and the ``profiles``' names.
        """
        return {"name": self.name, "profiles": [p.name for p in self.profiles]}


def block_rule_form(profile: Profile, vertex_count: int) -> Profile:
    """``profile`` as the hardware judges a buffer of ``vertex_count`` vertices: NVIDIA's
    look-back profiles with the 2^16 block rule once the buffer passes 2^16 vertices."""
    if profile.memory in ("lookback", "lookback_dx") and not profile.boundary_16bit and vertex_count > BLOCK_16BIT:
        return profile.with_16bit_boundaries(True)
    return profile


def target_names() -> list[str]:
    """Named targets besides single profiles."""
    return ["portable"]


def get_target(spec: str | Profile | Target | Sequence) -> Target:
    """Resolve a target name, a profile or a set of profiles into a :class:`Target`.

    Parameters
    ----------
    spec : str, Profile, Target or sequence
        ``portable``, a profile (name, file or object), a comma-separated set
        (``"nvidia_gl,amd,gpu.json"``), or a sequence of these; a Target is returned as it is.

    Returns
    -------
    Target
        The resolved target.

    Raises
    ------
    MeshoptBatchError
        An unknown name or file (the message lists the known ones), or a profile listed twice.
    """
    if isinstance(spec, Target):
        return spec
    if isinstance(spec, Profile):
        return Target(spec.name, (spec,))
    items = [spec] if isinstance(spec, str) else list(spec)
    names = [v.strip() for item in items for v in (item.split(",") if isinstance(item, str) else [item])
             if not isinstance(v, str) or v.strip()]
    if not names:
        raise MeshoptBatchError("empty target: name a profile or 'portable'")
    profiles: list[Profile] = []
    for item in names:
        if isinstance(item, str) and item == "portable":
            profiles.extend(get_profile(p) for p in PORTABLE)
        else:
            profiles.append(get_profile(item))
    label = ",".join(n if isinstance(n, str) else n.name for n in names)
    return Target(label, tuple(profiles))
