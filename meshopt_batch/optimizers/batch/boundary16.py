"""The 16-bit boundary post-process of paper 001 (sec. 4) for NVIDIA profiles.

NVIDIA GPUs lose reuse inside a batch whose indices lie on both sides of a multiple of 2^16
(paper 001 sec. 3.3; on an H100 each switch of the index stream to another 2^16 block empties
the look-back, :mod:`meshopt_batch.model.reuse_kernels`).  After optimization we therefore simulate
the batches (Algorithm 1 on the plain profile) and make every batch reference a single block:
conflicting vertices are copied to the end of the vertex buffer and the batch's indices are
recast to the copies.  As the paper notes, copies may themselves land beyond the next
multiple of 2^16, in which case the batch is copied again into the new block.

Choices made here (the paper gives the idea, not the bookkeeping):

* Each original vertex remembers its latest copy.  A batch is first checked against every
  block in which all of its vertices already have a representative (the original or the
  latest copy): then only indices change and no vertex is added.  Neighbouring batches share
  their border vertices, so this saves most copies.
* Otherwise the batch moves to the block that holds the end of the vertex buffer: its vertices
  without a representative there are appended.  If they do not fit before the next multiple
  of 2^16, the remaining slots of the current block are filled with copies of the batch's
  first vertices (the paper's "copy another set of vertices to the back": these slots stay
  unreferenced unless a later batch can use them) and the whole batch is copied into the new
  block.
* Batch boundaries are unchanged (a batch keeps the same number of distinct vertices), so the
  result's ASR under the plain profile is unchanged and under the ``+16bit`` model it equals
  the plain one.  Every appended vertex is an exact copy of one original vertex; the returned
  remap says which.

The copies are new vertices to every other GPU's cache, so a target of several GPUs needs a
numbering that costs them nothing (:func:`number_in_blocks`): vertices numbered in first-use
order block after block, a vertex from an earlier block copied into the current one only at a
corner where every other profile shades it anyway.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ...model.prediction import as_index_array, predict
from ...model.profiles import Profile, get_profile
from ...vertices.vertex_fetch import first_use_order
from ..renumber import renumber_first_use

__all__ = ["fix_16bit_boundaries", "mixed_batches", "number_in_blocks"]

BLOCK_SHIFT = 16


@njit(cache=True, nogil=True)
def _fix(tris, vertex_count, starts, out, remap, limit):
    """Fix batch after batch; the new vertex count, or -1 as soon as it exceeds ``limit``."""
    t_count = tris.shape[0]
    latest = np.full(vertex_count, -1, np.int64)
    seen = np.full(vertex_count, -1, np.int64)
    local = np.empty(3 * t_count + 3, np.int64)
    cand = np.empty(6 * t_count + 8, np.int64)
    n = vertex_count
    nb = starts.shape[0]
    for b in range(nb):
        s = starts[b]
        e = starts[b + 1] if b + 1 < nb else t_count
        # distinct vertices of the batch
        m = 0
        for t in range(s, e):
            for i in range(3):
                v = tris[t, i]
                if seen[v] != b:
                    seen[v] = b
                    local[m] = v
                    m += 1
        first_block = local[0] >> BLOCK_SHIFT
        mixed = False
        for j in range(1, m):
            if (local[j] >> BLOCK_SHIFT) != first_block:
                mixed = True
                break
        if not mixed:
            for t in range(s, e):
                for i in range(3):
                    out[t, i] = tris[t, i]
            continue
        # candidate blocks: where a representative already exists, plus the tail block
        tail = n >> BLOCK_SHIFT
        nc = 0
        for j in range(m):
            v = local[j]
            cand[nc] = v >> BLOCK_SHIFT
            nc += 1
            if latest[v] >= 0:
                cand[nc] = latest[v] >> BLOCK_SHIFT
                nc += 1
        cand[nc] = tail
        nc += 1
        target = -1
        for c in range(nc):
            blk = cand[c]
            ok = True
            for j in range(m):
                v = local[j]
                if (v >> BLOCK_SHIFT) != blk and (latest[v] < 0 or (latest[v] >> BLOCK_SHIFT) != blk):
                    ok = False
                    break
            if ok:
                target = blk
                break
        if target < 0:
            missing = 0
            for j in range(m):
                v = local[j]
                if (v >> BLOCK_SHIFT) != tail and (latest[v] < 0 or (latest[v] >> BLOCK_SHIFT) != tail):
                    missing += 1
            room = ((tail + 1) << BLOCK_SHIFT) - n
            if missing > room:
                # fill the rest of this block, then copy the whole batch into the next one
                for j in range(room):
                    v = local[j % m]
                    remap[n] = v
                    latest[v] = n
                    n += 1
                tail += 1
            target = tail
            for j in range(m):
                v = local[j]
                if (v >> BLOCK_SHIFT) != target and (latest[v] < 0 or (latest[v] >> BLOCK_SHIFT) != target):
                    remap[n] = v
                    latest[v] = n
                    n += 1
        if n > limit:
            return -1
        for t in range(s, e):
            for i in range(3):
                v = tris[t, i]
                if (v >> BLOCK_SHIFT) == target:
                    out[t, i] = v
                else:
                    out[t, i] = latest[v]
    return n


def fix_16bit_boundaries(triangles, vertex_count: int | None = None, profile="nvidia_gl", *,
                         first_use: bool = False):
    """Make every simulated batch reference one 2^16 block (paper 001 sec. 4).

    Parameters
    ----------
    triangles : (T, 3) integer array
        Optimized index buffer.
    vertex_count : int, optional
        Vertex buffer size (default: largest index + 1).
    profile : str or Profile
        The batching model whose batches are fixed (its plain form, without ``+16bit``).
    first_use : bool, keyword-only
        Also fix the buffer with its vertices numbered in order of first use
        (:func:`~meshopt_batch.optimizers.renumber.renumber_first_use`) and keep whichever
        needs fewer copies.  A batch's vertices then mostly share a block: the batch
        optimizer's order of ``bunny_sub2`` needs 69,299 copies instead of 563,418.

    Returns
    -------
    triangles : (T, 3) int64 ndarray
        The index buffer referencing the copies.
    vertex_remap : (V', ) int64 ndarray
        ``new vertex -> original vertex``: the first ``vertex_count`` entries are the identity
        (or the first-use order), then the source of every appended copy.
    """
    prof = get_profile(profile)
    if isinstance(prof, Profile) and prof.boundary_16bit:
        prof = prof.with_16bit_boundaries(False)
    tris, vcount = as_index_array(triangles, vertex_count)
    tris = np.ascontiguousarray(tris, dtype=np.int64)
    t_count = tris.shape[0]
    if t_count == 0 or vcount <= (1 << BLOCK_SHIFT):
        return tris.copy(), np.arange(vcount, dtype=np.int64)
    numberings = [(tris, np.arange(vcount, dtype=np.int64))]
    if first_use:   # usually the fewer copies: tried first, so that the other can stop early
        renumbered, order = renumber_first_use(tris, vcount)
        numberings.insert(0, (np.asarray(renumbered, np.int64), order))
    best = None
    starts = None
    for tri, order in numberings:
        if starts is None or prof.memory == "direct":       # only direct-mapped batches depend on numbers
            starts = predict(tri, vcount, profile=prof, return_batches=True).batch_starts.astype(np.int64)
        out = np.empty_like(tri)
        remap = np.empty(vcount + 3 * t_count + (1 << BLOCK_SHIFT), np.int64)
        remap[:vcount] = np.arange(vcount)
        n = _fix(tri, vcount, starts, out, remap, remap.shape[0] if best is None else best[1].shape[0] - 1)
        if n >= 0:
            best = (out, order[remap[:n]])
    return best


def mixed_batches(triangles, vertex_count: int | None = None, profile="nvidia_gl") -> int:
    """Number of simulated batches that reference more than one 2^16 block."""
    prof = get_profile(profile).with_16bit_boundaries(False)
    tris, vcount = as_index_array(triangles, vertex_count)
    if tris.shape[0] == 0:
        return 0
    starts = predict(np.asarray(tris, np.uint32), vcount, profile=prof, return_batches=True).batch_starts
    blocks = tris.astype(np.int64) >> BLOCK_SHIFT
    lo = np.minimum.reduceat(blocks.min(axis=1), starts)
    hi = np.maximum.reduceat(blocks.max(axis=1), starts)
    return int(np.count_nonzero(lo != hi))


@njit(cache=True, nogil=True)
def _top_ids(base, block, modulus, top):
    """``top[q]``: the largest number of the block ``[base, base + block)`` that is ``q`` modulo
    ``modulus`` (where copies are numbered from, downwards)."""
    last = base + block - 1
    for q in range(modulus):
        top[q] = last - ((last - q) % modulus)


@njit(cache=True, nogil=True)
def _plan(tris, t, latest, free, base, block, modulus, top, shift, shifted, high, low, plan):
    """The numbers triangle ``t`` takes in the block at ``base`` (``plan[i]``: a new vertex's
    or a copy's number, -1 where the corner keeps its number or repeats one before it):
    ``(fits, shift, shifted, high, low)`` as they would be after it."""
    copies = 0                 # bit i: corner i takes a copy
    for i in range(3):
        v = tris[t, i]
        plan[i] = -1
        repeat = False
        for j in range(i):
            repeat |= tris[t, j] == v
        if repeat:
            continue
        if latest[v] < 0:
            if not shifted:
                shift, shifted = ((v - base) // modulus) * modulus, True
            plan[i] = v - shift
            high = max(high, plan[i])
        elif latest[v] < base and free[t] & (1 << i):
            q = v % modulus
            same = 0
            for j in range(i):
                same += (copies >> j) & 1 if tris[t, j] % modulus == q else 0
            copies |= 1 << i
            plan[i] = top[q] - same * modulus
            low = min(low, plan[i])
    fits = high < low
    for i in range(3):
        fits &= plan[i] < 0 or base <= plan[i] < base + block
    return fits, shift, shifted, high, low


@njit(cache=True, nogil=True)
def _number_in_blocks(tris, vertex_count, free, block, modulus, out, remap):
    """First-use numbering block after block (see :func:`number_in_blocks`): ``(the new vertex
    count, remap)``.  ``remap`` comes filled with -1 (numbers nothing references stay so) and
    grows by whole blocks when it must."""
    n = tris.shape[0]
    latest = np.full(vertex_count, -1, np.int64)
    top = np.empty(modulus, np.int64)
    base = 0
    _top_ids(base, block, modulus, top)
    shift = 0                  # a new vertex v is numbered v - shift (a multiple of modulus)
    shifted = True             # block 0 keeps the input's numbers
    high = -1                  # the highest number of a new vertex in the block
    low = block                # the lowest number of a copy in the block
    first = 0                  # the block's first triangle
    plan = np.empty(3, np.int64)
    for t in range(n):
        fits, s, done, hi, lo = _plan(tris, t, latest, free, base, block, modulus, top, shift, shifted, high, low,
                                      plan)
        if not fits:           # the next block (a triangle always fits an empty one)
            base += block
            if base + block > remap.shape[0]:
                grown = np.full(2 * remap.shape[0] + block, -1, np.int64)
                grown[:remap.shape[0]] = remap
                remap = grown
            _top_ids(base, block, modulus, top)
            first = t
            fits, s, done, hi, lo = _plan(tris, t, latest, free, base, block, modulus, top, 0, False, base - 1,
                                          base + block, plan)
        shift, shifted, high, low = s, done, hi, lo
        for i in range(3):
            v = tris[t, i]
            if plan[i] >= 0:
                if latest[v] >= 0:     # a copy: the next one of its residue lies below it
                    top[v % modulus] -= modulus
                latest[v] = plan[i]
                remap[plan[i]] = v
            out[t, i] = latest[v]
    # the last block's copies move down next to its new vertices, keeping their residues
    drop = ((low - high - 1) // modulus) * modulus if low < base + block else 0
    if drop > 0:
        for u in range(low, base + block):
            remap[u - drop] = remap[u]
            remap[u] = -1
        for t in range(first, n):
            for i in range(3):
                if out[t, i] >= low:
                    out[t, i] -= drop
    count = base + block - drop if low < base + block else high + 1
    # numbers nothing references: copies of a neighbour
    for u in range(count):
        if remap[u] < 0:
            remap[u] = remap[u - 1] if u > 0 else tris[0, 0]
    return count, remap


def number_in_blocks(triangles, vertex_count: int, free: np.ndarray, *, modulus: int = 1):
    """Number the vertices in first-use order in 2^16 blocks, copying a vertex into a later
    block only where ``free`` allows: NVIDIA's block rule without costing other GPUs.

    The order is kept.  A vertex first used in the current block is numbered as in the input
    (which should number by first use) less a multiple of ``modulus``, so that the new
    vertices of a block follow each other; a vertex numbered in an earlier block keeps that
    number unless the corner is ``free``, where it gets a copy numbered from the top of the
    current block down, with the residue modulo ``modulus`` of its input number.  When a
    triangle's numbers would not fit, the next block begins; the last block's copies move down
    next to its new vertices.  So every vertex keeps its input number modulo ``modulus`` (a
    direct-mapped table of that many slots, llvmpipe's, sees the same slots), and when ``free``
    marks the corners that every other profile shades (their miss masks of this order, ANDed),
    those profiles predict exactly what they did: a copy first appears where the original would
    have been shaded again, into the slot the original would have taken, and every later
    reference that reused the original reuses the copy.  NVIDIA's batches then stay in one
    block except near the blocks' ends (paper 001 sec. 3.3-4: a batch that switches block loses
    its look-back).  Numbers nothing references (at most ``modulus`` and the gap before the
    copies per block) are copies of a neighbour.

    Parameters
    ----------
    triangles : (T, 3) integer array
        Index buffer, its vertices numbered in order of first use.
    vertex_count : int
        Vertex buffer size.
    free : (T,) uint8 array
        Bit ``i`` of ``free[t]`` allows a copy at corner ``i`` of triangle ``t``.
    modulus : int, keyword-only
        Residues to keep (a divisor of 2^16 at most 4096; 1: none).

    Returns
    -------
    triangles : (T, 3) int64 ndarray
        The order with the new numbers.
    vertex_remap : (V',) int64 ndarray
        ``new vertex -> vertex of the input``.

    References
    ----------
    Kerbl, B. et al. (2018).  Revisiting the Vertex Cache.  Proc. ACM Comput. Graph. Interact.
    Tech. 1(2) (paper 001: sec. 3.3, the 2^16 block rule; sec. 4, its fix by copies).
    """
    tris, vcount = as_index_array(triangles, vertex_count)
    tris = np.ascontiguousarray(tris, dtype=np.int64)
    free = np.ascontiguousarray(free, dtype=np.uint8)
    if free.shape != (tris.shape[0],):
        raise ValueError(f"number_in_blocks: free has shape {free.shape}, expected ({tris.shape[0]},)")
    if tris.shape[0] and not np.array_equal(first_use_order([tris], vcount), np.arange(vcount)):
        raise ValueError("number_in_blocks: the vertices must be numbered in order of first use")
    if modulus < 1 or modulus > 4096 or (1 << BLOCK_SHIFT) % modulus:
        raise ValueError(f"number_in_blocks: modulus {modulus} is not a divisor of 2^16 up to 4096")
    out = np.empty_like(tris)
    remap = np.full(((vcount + vcount // 8) >> BLOCK_SHIFT) + 2 << BLOCK_SHIFT, -1, np.int64)
    count, remap = _number_in_blocks(tris, vcount, free, 1 << BLOCK_SHIFT, modulus, out, remap)
    return out, remap[:count].copy()
