"""Vertex renumbering for GPUs whose reuse depends on vertex *numbers* (llvmpipe).

Mesa's llvmpipe (profile ``llvmpipe``: Algorithm 1 with ``MAX_SIZE`` 1023 and a ``direct``
memory of 256 slots) deduplicates vertices inside each segment of 1023 indices with a
direct-mapped table keyed by ``vertex index % 256``. Two vertices whose numbers are equal
modulo 256 evict each other, so the same triangle order can cost more or less depending
only on how the vertices are numbered.

Exact rule used here: inside one segment, a vertex ``v`` is shaded exactly once iff no other
vertex of the same slot is referenced between the first and the last use of ``v`` in that
segment (its *live interval*). A vertex that is shaded once in every segment it appears in
costs the unavoidable minimum, so the least possible cost of a triangle order is the sum
over segments of their distinct vertices (:func:`segment_lower_bound`).

:func:`renumber_for_direct_cache` colours the live intervals with the ``slots`` slot
numbers (an interval-graph colouring, greedy in order of first use, round-robin over the
slots so that every slot keeps enough numbers), which reaches that lower bound whenever no
segment has more than ``slots`` vertices live at once - true for any cache-optimised
order. Renumbering never changes which triangles are drawn or their order, so every other
GPU model's cost is unchanged except where it depends on numbers too (NVIDIA's 16-bit
boundary: renumbering keeps the vertex count, so a mesh under 2^16 vertices stays under).

>>> import numpy as np
>>> tris = np.array([[0, 256, 512], [256, 512, 0]])
>>> new, remap = renumber_for_direct_cache(tris, 513)
>>> sorted(set((new % 256).ravel().tolist())) != [0]      # no longer one slot
True
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..errors import MeshoptBatchError

SLOTS = 256
SEGMENT_SIZE = 1023


def _check(triangles, vertex_count, slots, segment_size):
    tri = np.asarray(triangles)
    if tri.ndim != 2 or tri.shape[1] != 3:
        raise MeshoptBatchError(f"triangles must have shape (T, 3), got {tri.shape}")
    if tri.size and not np.issubdtype(tri.dtype, np.integer):
        raise MeshoptBatchError("triangle indices must be integers")
    tri = np.ascontiguousarray(tri, dtype=np.int64)
    vmax = int(tri.max()) if tri.size else -1
    if tri.size and int(tri.min()) < 0:
        raise MeshoptBatchError("negative vertex index")
    V = vmax + 1 if vertex_count is None else int(vertex_count)
    if vmax >= V:
        raise MeshoptBatchError(f"vertex index {vmax} out of range for {V} vertices")
    if slots < 1 or segment_size < 3:
        raise MeshoptBatchError("slots must be >= 1 and segment_size >= 3")
    return tri, V


@njit(cache=True)
def _intervals(flat, V, seg):
    """Live intervals: one record (vertex, first, last) per (vertex, segment) occurrence,
    in order of first position."""
    n = flat.shape[0]
    rec_v = np.empty(n, np.int64)
    rec_a = np.empty(n, np.int64)
    rec_b = np.empty(n, np.int64)
    cur = np.full(V, -1, np.int64)          # record index of v in the current segment
    cur_seg = np.full(V, -1, np.int64)
    m = 0
    for p in range(n):
        v = flat[p]
        s = p // seg
        if cur_seg[v] != s:
            cur_seg[v] = s
            cur[v] = m
            rec_v[m] = v
            rec_a[m] = p
            rec_b[m] = p
            m += 1
        else:
            rec_b[cur[v]] = p
    return rec_v[:m], rec_a[:m], rec_b[:m]


@njit(cache=True)
def _colour(flat, V, slots, seg, rec_v, rec_a, rec_b):
    m = rec_v.shape[0]
    nseg = (flat.shape[0] + seg - 1) // seg
    # records of each vertex (CSR, in order of position)
    cnt = np.zeros(V + 1, np.int64)
    for r in range(m):
        cnt[rec_v[r] + 1] += 1
    for v in range(V):
        cnt[v + 1] += cnt[v]
    fill = cnt[:-1].copy()
    vrec = np.empty(m, np.int64)
    for r in range(m):
        vrec[fill[rec_v[r]]] = r
        fill[rec_v[r]] += 1
    # per (segment, slot): linked list of assigned intervals
    head = np.full(nseg * slots, -1, np.int64)
    nxt = np.full(m, -1, np.int64)
    cap = np.empty(slots, np.int64)
    for s in range(slots):
        cap[s] = (V - s + slots - 1) // slots if V > s else 0
    taken = np.zeros(slots, np.int64)
    new_id = np.full(V, -1, np.int64)
    rr = 0
    conflicts_left = 0
    for r0 in range(m):
        v = rec_v[r0]
        if new_id[v] >= 0:
            continue
        best = -1
        best_conf = 1 << 60
        for k in range(slots):
            s = (rr + k) % slots
            if taken[s] >= cap[s]:
                continue
            conf = 0
            for q in range(cnt[v], cnt[v + 1]):
                r = vrec[q]
                g = (rec_a[r] // seg) * slots + s
                e = head[g]
                while e >= 0:
                    if rec_a[e] <= rec_b[r] and rec_a[r] <= rec_b[e]:
                        conf += 1
                    e = nxt[e]
            if conf < best_conf:
                best_conf = conf
                best = s
                if conf == 0:
                    break
        s = best
        conflicts_left += best_conf
        new_id[v] = s + slots * taken[s]
        taken[s] += 1
        rr = (s + 1) % slots
        for q in range(cnt[v], cnt[v + 1]):
            r = vrec[q]
            g = (rec_a[r] // seg) * slots + s
            nxt[r] = head[g]
            head[g] = r
    # unreferenced vertices: the numbers left, in order
    k = 0
    for s in range(slots):
        pass
    free_mark = np.zeros(V, np.bool_)
    for v in range(V):
        if new_id[v] >= 0:
            free_mark[new_id[v]] = True
    for v in range(V):
        if new_id[v] < 0:
            while free_mark[k]:
                k += 1
            new_id[v] = k
            free_mark[k] = True
    return new_id, conflicts_left


def renumber_for_direct_cache(triangles, vertex_count: int | None = None, slots: int = SLOTS,
                              segment_size: int = SEGMENT_SIZE):
    """Renumber vertices so that vertices live together in a segment use distinct slots.

    Parameters
    ----------
    triangles : (T, 3) integer array
        Index buffer in its final triangle order (optimize the order first).
    vertex_count : int, optional
        Vertex buffer size (default: largest index + 1). The renumbering is a permutation
        of ``0..vertex_count-1``; unreferenced vertices get the numbers left over.
    slots : int
        Direct-mapped table size (llvmpipe: 256).
    segment_size : int
        Indices per segment (llvmpipe: 1023).

    Returns
    -------
    triangles : (T, 3) ndarray
        The same triangles, same order, with new vertex numbers (dtype of the input when
        it is unsigned, else uint32).
    vertex_remap : (V,) int64 ndarray
        ``new vertex -> original vertex`` (gather the vertex buffer with it, e.g.
        ``mesh.with_vertices(vertex_remap, triangles)``).

    Notes
    -----
    Vertices are visited in order of first use; each takes, round-robin from the slot
    after the previous vertex's, the first slot whose already-assigned live intervals do
    not overlap any of its own (one interval per segment it appears in) and that still has
    a free number ``slot + slots * k``. When every slot conflicts, the slot with the fewest
    overlaps is taken.
    """
    tri, V = _check(triangles, vertex_count, slots, segment_size)
    if tri.size == 0:
        return np.asarray(triangles).reshape(0, 3).astype(np.uint32), np.arange(V, dtype=np.int64)
    flat = tri.reshape(-1)
    rv, ra, rb = _intervals(flat, V, int(segment_size))
    new_id, _ = _colour(flat, V, int(slots), int(segment_size), rv, ra, rb)
    remap = np.empty(V, np.int64)
    remap[new_id] = np.arange(V, dtype=np.int64)
    in_dtype = np.asarray(triangles).dtype
    out_dtype = in_dtype if in_dtype.kind == "u" else np.dtype(np.uint32)
    return new_id[tri].astype(out_dtype), remap


def renumber_first_use(triangles, vertex_count: int | None = None):
    """Number vertices in order of first use (meshoptimizer's ``optimize_vertex_fetch``).

    The simple baseline: consecutive first uses get consecutive numbers, hence distinct
    slots among any 256 of them. Returns ``(triangles, vertex_remap)`` like
    :func:`renumber_for_direct_cache`.
    """
    tri, V = _check(triangles, vertex_count, SLOTS, SEGMENT_SIZE)
    flat = tri.reshape(-1)
    uniq, first = np.unique(flat, return_index=True)
    used = uniq[np.argsort(first, kind="stable")]
    unused = np.setdiff1d(np.arange(V, dtype=np.int64), used, assume_unique=True)
    remap = np.concatenate([used, unused]).astype(np.int64)
    new_id = np.empty(V, np.int64)
    new_id[remap] = np.arange(V, dtype=np.int64)
    in_dtype = np.asarray(triangles).dtype
    out_dtype = in_dtype if in_dtype.kind == "u" else np.dtype(np.uint32)
    return new_id[tri].astype(out_dtype), remap


def segment_lower_bound(triangles, segment_size: int = SEGMENT_SIZE) -> int:
    """Least invocations any vertex numbering can reach for this triangle order:
    the sum over segments of their distinct vertices."""
    flat = np.asarray(triangles).reshape(-1)
    return int(sum(np.unique(flat[s:s + segment_size]).size
                   for s in range(0, flat.size, segment_size)))
