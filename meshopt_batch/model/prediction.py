"""Batch breakdown prediction: paper 001 (Kerbl et al. 2018), Algorithm 1.

The index buffer is consumed one triangle at a time.  Each index is looked up in the
profile's *memory module* (which earlier vertices of the current batch can be reused); a miss
costs one vertex-shader invocation and counts towards the batch's unique vertices.  When adding
index ``i`` of a triangle would exceed ``MAX_UNIQUES`` (``uniques + added > MAX_UNIQUES``) or
``MAX_SIZE`` (``size + i > MAX_SIZE``), the batch ends *before* that triangle and the whole
triangle starts the next batch (Algorithm 1, lines 16-27).

The printed pseudo-code does not reset ``added`` when a batch ends mid-triangle; doing so
would count the triangle's first vertices twice (once for a batch that never shaded them), so
``added`` restarts at zero with the new batch here.

:func:`predict` runs one compiled kernel per memory kind (:mod:`meshopt_batch.model.reuse_kernels`).
The batch optimizer (paper 001, Algorithm 2) asks the same questions incrementally, one index
at a time, through the functions of this module: :func:`new_memory`, the ``*_lookup`` /
``*_touch`` functions of each kind (look-back retention keeps each vertex's last
batch position, FIFO each vertex's insertion stamp, the direct-mapped table (vertex, batch) per
slot, LRU a most-recent-first table), :func:`note_block` and :func:`mem_new_batch`.  The aligned
``groups`` and whole-``range`` kinds do not depend on the triangle order and have no incremental
form.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numba import njit

from ..support.errors import MeshoptBatchError
from .profiles import Profile, get_profile
from .reuse_kernels import dx_reuse, run_kernel

KIND_FIFO, KIND_LOOKBACK, KIND_LOOKBACK_DX, KIND_LRU, KIND_DIRECT = 0, 1, 2, 3, 4
_KIND_CODES = {"fifo": KIND_FIFO, "lookback": KIND_LOOKBACK, "lookback_dx": KIND_LOOKBACK_DX,
               "lru": KIND_LRU, "direct": KIND_DIRECT}

# layout of the scalar state array
S_MEMORY_START, S_MISSES, S_BATCH_MISS_START, S_EPOCH, S_LRU_COUNT, S_BLOCK, S_LEN = range(7)


def memory_code(profile: Profile) -> int:
    """Numeric code of a profile's memory kind, for the compiled functions."""
    if profile.memory not in _KIND_CODES:
        raise MeshoptBatchError(f"profile {profile.name!r}: memory {profile.memory!r} has no "
                                "incremental form (the triangle order does not matter to it)")
    return _KIND_CODES[profile.memory]


def new_memory(profile: Profile, vertex_count: int):
    """Fresh memory-module state for ``vertex_count`` vertices.

    Returns
    -------
    scalars : (6,) int64
        Position from which the memory holds entries (the batch start or the last 2^16 block
        switch), FIFO miss counter, miss counter at that point, memory epoch, LRU fill, and
        the 2^16 block of the previous index.
    per_vertex : int64 array
        Last batch position (look-back), last position per residue mod 3 (Direct3D rule) or
        insertion stamp (FIFO); ``-1`` means never seen.
    table : int64 array
        LRU entries (most recent first) or direct-mapped slots (vertex, epoch) pairs.
    """
    kind = memory_code(profile)
    scalars = np.zeros(S_LEN, np.int64)
    scalars[S_BLOCK] = -1
    width = 3 if kind == KIND_LOOKBACK_DX else 1
    per_vertex = np.full(max(vertex_count, 1) * width if kind in (KIND_FIFO, KIND_LOOKBACK, KIND_LOOKBACK_DX) else 1,
                         -1, np.int64)
    if kind == KIND_DIRECT:
        table = np.full(2 * profile.memory_size, -1, np.int64)
    elif kind == KIND_LRU:
        table = np.full(profile.memory_size, -1, np.int64)
    else:
        table = np.zeros(1, np.int64)
    return scalars, per_vertex, table


# Memory modules for the batch optimizer.  Every kind has
# lookup(size, scalars, per_vertex, table, v, p) -> bool and touch(size, scalars, per_vertex,
# table, v, p, hit); the optimizer selects them by kind code (optimizers.batch.fit.mem_lookup).

@njit(cache=True)
def lookback_lookup(size, scalars, per_vertex, table, v, p):
    last = per_vertex[v]
    return last >= scalars[S_MEMORY_START] and p - last <= size


@njit(cache=True)
def lookback_touch(size, scalars, per_vertex, table, v, p, hit):
    per_vertex[v] = p


@njit(cache=True)
def dx_lookup(size, scalars, per_vertex, table, v, p):
    for r in range(3):
        last = per_vertex[3 * v + r]
        if last >= scalars[S_MEMORY_START] and dx_reuse(p - last, r):
            return True
    return False


@njit(cache=True)
def dx_touch(size, scalars, per_vertex, table, v, p, hit):
    per_vertex[3 * v + p % 3] = p


@njit(cache=True)
def fifo_lookup(size, scalars, per_vertex, table, v, p):
    stamp = per_vertex[v]
    return stamp >= 0 and stamp >= scalars[S_BATCH_MISS_START] and stamp >= scalars[S_MISSES] - size


@njit(cache=True)
def fifo_touch(size, scalars, per_vertex, table, v, p, hit):
    if not hit:
        per_vertex[v] = scalars[S_MISSES]
        scalars[S_MISSES] += 1


@njit(cache=True)
def lru_lookup(size, scalars, per_vertex, table, v, p):
    for k in range(scalars[S_LRU_COUNT]):
        if table[k] == v:
            return True
    return False


@njit(cache=True)
def lru_touch(size, scalars, per_vertex, table, v, p, hit):
    count = scalars[S_LRU_COUNT]
    k = count - 1
    if hit:
        for j in range(count):
            if table[j] == v:
                k = j
                break
    elif count < size:
        scalars[S_LRU_COUNT] = count + 1
        k = count
    for j in range(k, 0, -1):
        table[j] = table[j - 1]
    table[0] = v


@njit(cache=True)
def direct_lookup(size, scalars, per_vertex, table, v, p):
    slot = v % size
    return table[2 * slot] == v and table[2 * slot + 1] == scalars[S_EPOCH]


@njit(cache=True)
def direct_touch(size, scalars, per_vertex, table, v, p, hit):
    if not hit:
        slot = v % size
        table[2 * slot] = v
        table[2 * slot + 1] = scalars[S_EPOCH]


@njit(cache=True)
def note_block(bound16, scalars, v, p):
    """The ``+16bit`` rule (:func:`meshopt_batch.model.reuse_kernels._block_switch`): when ``v`` lies
    in another 2^16 block than the previous index, the memory forgets everything (it is
    emptied at absolute index position ``p``, before ``v`` is looked up)."""
    if not bound16:
        return
    block = v >> 16
    if scalars[S_BLOCK] >= 0 and scalars[S_BLOCK] != block:
        mem_flush(scalars, p)
    scalars[S_BLOCK] = block


@njit(cache=True)
def mem_flush(scalars, p):
    """Empty the memory from absolute index position ``p`` on (the batch goes on)."""
    scalars[S_MEMORY_START] = p
    scalars[S_BATCH_MISS_START] = scalars[S_MISSES]
    scalars[S_EPOCH] += 1
    scalars[S_LRU_COUNT] = 0


@njit(cache=True)
def mem_new_batch(scalars, p):
    """Forget everything: a new batch starts at absolute index position ``p``."""
    mem_flush(scalars, p)
    scalars[S_BLOCK] = -1


@dataclass
class Prediction:
    """Vertex-shader work predicted for one index buffer under one profile.

    Attributes
    ----------
    profile : str
        The profile's name.
    invocations : int
        Predicted vertex-shader invocations (Algorithm 1's output).
    triangles : int
        Triangles drawn (degenerate ones included, as the GPU draws them).
    vertices : int
        Distinct vertices the index buffer references.
    batches : int
        Batches formed (1 for a global cache).
    batch_starts : ndarray or None
        First triangle of every batch (when requested).
    shaded_per_vertex : ndarray or None
        Invocations per vertex (when requested), as the probe measures them.
    """

    profile: str
    invocations: int
    triangles: int
    vertices: int
    batches: int
    batch_starts: np.ndarray | None = field(default=None, repr=False)
    shaded_per_vertex: np.ndarray | None = field(default=None, repr=False)

    @property
    def asr(self) -> float:
        """Average shading rate: invocations per triangle (paper 001 sec. 3.1)."""
        return self.invocations / self.triangles if self.triangles else 0.0

    @property
    def acmr(self) -> float:
        """Average cache miss ratio: misses (= invocations) per triangle.

        The classic name of the same ratio under a cache model (Hoppe 1999).
        """
        return self.asr

    @property
    def atvr(self) -> float:
        """Average transform to vertex ratio: invocations per distinct referenced vertex."""
        return self.invocations / self.vertices if self.vertices else 0.0

    def to_dict(self) -> dict:
        """The figures the command line prints, as a dict.

        Returns
        -------
        dict
            ``profile``, ``invocations``, ``asr``, ``acmr``, ``atvr``, ``batches``.
        """
        return {"profile": self.profile, "invocations": int(self.invocations), "asr": self.asr,
                "acmr": self.acmr, "atvr": self.atvr, "batches": int(self.batches)}


def as_index_array(triangles, vertex_count: int | None = None) -> tuple[np.ndarray, int]:
    """Validate an index buffer and return it as a C-contiguous (T, 3) ``uint32`` array plus vertex count.

    Every integer type is taken and converted to ``uint32``, the one index type the compiled
    kernels are built for at install, so a caller's ``int64`` array compiles nothing on its
    first use.
    """
    tris = np.asarray(triangles)
    if tris.size == 0:
        return np.zeros((0, 3), np.uint32), int(vertex_count or 0)
    if tris.ndim == 1:
        if tris.size % 3:
            raise MeshoptBatchError(f"index buffer length {tris.size} is not a multiple of 3")
        tris = tris.reshape(-1, 3)
    if tris.ndim != 2 or tris.shape[1] != 3:
        raise MeshoptBatchError(f"expected (T, 3) triangle indices, got shape {tris.shape}")
    if not np.issubdtype(tris.dtype, np.integer):
        raise MeshoptBatchError(f"triangle indices must be integers, got {tris.dtype}")
    low, high = int(tris.min()), int(tris.max())
    if low < 0:
        raise MeshoptBatchError(f"negative vertex index {low}")
    if vertex_count is None:
        vertex_count = high + 1
    elif high >= vertex_count:
        raise MeshoptBatchError(f"vertex index {high} out of range for {vertex_count} vertices")
    if high > np.iinfo(np.uint32).max:
        raise MeshoptBatchError(f"vertex index {high} does not fit in 32 bits")
    return np.ascontiguousarray(tris, dtype=np.uint32), int(vertex_count)


def predict(triangles, vertex_count: int | None = None, *, profile: str | Profile = "nvidia_gl",
            return_batches: bool = False, per_vertex: bool = False) -> Prediction:
    """Predict vertex-shader invocations of an index buffer (paper 001, Algorithm 1).

    Parameters
    ----------
    triangles : (T, 3) or (3T,) integer array
        The index buffer in draw order (uint16 or uint32 or any integer type).
    vertex_count : int, optional
        Size of the vertex buffer; defaults to the largest index + 1.
    profile : str or Profile, keyword-only
        ``nvidia_gl`` (default), ``nvidia_dx``, ``amd``, ``intel``, ``llvmpipe``, ``fifo:N``,
        ``lru:N``, optionally suffixed ``+16bit`` (see :func:`meshopt_batch.model.profiles.get_profile`).
    return_batches : bool, keyword-only
        Also return the first triangle of every batch (for plots and the probe).
    per_vertex : bool, keyword-only
        Also return the invocations of every vertex.

    Returns
    -------
    Prediction
        Invocations, batches and the ratios; batch starts and per-vertex counts when asked.

    Raises
    ------
    MeshoptBatchError
        An unknown profile or a malformed index buffer.

    References
    ----------
    .. [1] B. Kerbl et al., "Revisiting the Vertex Cache", Proc. ACM CGIT 1(2), 2018 (paper 001),
       Algorithm 1 and sec. 3.4.
    """
    prof = get_profile(profile)
    tris, vcount = as_index_array(triangles, vertex_count)
    t_count = tris.shape[0]
    starts = np.zeros(t_count + 1 if return_batches else 0, np.int64)
    shaded = np.zeros(vcount if per_vertex else 0, np.int64)
    invocations, batches, referenced = run_kernel(prof, tris, vcount, starts, shaded)
    return Prediction(prof.name, int(invocations), t_count, referenced, int(batches),
                      starts[:batches].copy() if return_batches else None,
                      shaded if per_vertex else None)
