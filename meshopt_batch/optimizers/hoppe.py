"""Hoppe 1999, "Optimization of mesh locality for transparent vertex caching"
(ACM SIGGRAPH 99, 269-276), section 4's greedy strip-growing face reordering.

The paper reorders faces by growing triangle strips over the mesh and emitting them as one
indexed triangle list.  What makes it cache-aware is *when a strip is cut*: a strip that
runs on for long pushes the vertices of its first faces out of a FIFO cache of ``k``
entries, and the next strip -- which is laid right beside it, going back the other way, and
needs exactly those vertices -- misses them.  So before each step of the strip the algorithm
runs a look-ahead simulation of the cache and restarts the strip alongside the previous one
as soon as continuing would overrun the cache.

Strip growing, as implemented here (corners ``(face, pivot)`` walk the edge-adjacency):

* A strip starts at the unprocessed face with the fewest unprocessed neighbours (a face on a
  boundary of the unprocessed region; most recently updated first, so a new strip starts
  next to the last one).
* The strip sweeps the fan of unprocessed faces around its current *pivot* vertex, then
  crosses the edge opposite the pivot to the next pivot -- a sequential strip that turns
  around its two rails.  The first face that has an unprocessed face on the far side of its
  outer edge marks where the returning strip will start (``restart corner``).
* Before a new fan is added, the look-ahead counts the faces it would add; if the cache
  misses since the restart corner plus that count exceed ``cache_size - restart_margin``,
  the vertices the returning strip needs would be evicted: the strip is cut and continues
  from the restart corner instead.
* When a strip can go nowhere it ends, and a new one starts as above.

Each face is emitted once with its own vertex order.  Degenerate faces and faces on
non-manifold or inconsistently oriented edges simply have fewer strip neighbours.  The
second algorithm of the paper (local optimization by perturbing the order, minutes of run
time in 1999) is not part of this module.  ``cache_size=12, restart_margin=7`` are the
defaults of Microsoft's D3DX/DirectXMesh ``OptimizeFaces``, the implementation of this
algorithm paper 001 measured.

References
----------
.. [1] H. Hoppe, "Optimization of Mesh Locality for Transparent Vertex Caching",
   ACM SIGGRAPH 99, 269-276, sec. 4.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..geometry.mesh_topology import face_index_type, vertex_faces
from ..support.errors import MeshoptBatchError
from ._output import NO_ORDER, in_caller_type, no_rows
from ._util import check_cache_size, prepare

__all__ = ["optimize_hoppe", "hoppe_order", "DEFAULT_CACHE_SIZE", "DEFAULT_RESTART_MARGIN"]

DEFAULT_CACHE_SIZE = 12
DEFAULT_RESTART_MARGIN = 7


@njit(cache=True, inline="always")
def _is_degenerate(tris, t):
    return tris[t, 0] == tris[t, 1] or tris[t, 1] == tris[t, 2] or tris[t, 0] == tris[t, 2]


@njit(cache=True, inline="always")
def _holds(tris, g, v, a, b):
    """Face ``g``, one of the faces around ``v`` (``a`` or ``b``), has the directed edge ``a -> b``."""
    if tris[g, 0] == v:
        after = tris[g, 1]
        before = tris[g, 2]
    elif tris[g, 1] == v:
        after = tris[g, 2]
        before = tris[g, 0]
    else:
        after = tris[g, 0]
        before = tris[g, 1]
    if v == a:
        return after == b
    return before == a


@njit(cache=True)
def _edge_adjacency(tris, offsets, faces):
    """Neighbour across each directed edge ``e = (t[e], t[e+1])`` and the matching edge index.

    A face is linked to a face holding the same edge in the opposite direction.  On a
    non-manifold edge (more than two faces) the faces holding ``a -> b`` and those holding
    ``b -> a`` are paired in face-index order (the i-th with the i-th), which keeps the
    relation symmetric; faces left over, edges used twice in the same direction and
    degenerate faces get no neighbour (``-1``).  Each pair is found once, from its lower
    face, among the faces of the edge's lower-valence end: a vertex of any valence costs
    its edges no more than their other ends' valences.
    """
    t_count = tris.shape[0]
    unknown = -2
    nbr = np.full((t_count, 3), unknown, np.int32)
    nbr_edge = np.full((t_count, 3), -1, np.int8)
    for t in range(t_count):
        if _is_degenerate(tris, t):
            nbr[t, 0] = -1
            nbr[t, 1] = -1
            nbr[t, 2] = -1
            continue
        for e in range(3):
            if nbr[t, e] != unknown:
                continue  # paired from the partner's side
            nbr[t, e] = -1
            a = tris[t, e]
            b = tris[t, (e + 1) % 3]
            v = a if offsets[a + 1] - offsets[a] <= offsets[b + 1] - offsets[b] else b
            rank = 0  # faces before t holding a -> b too
            for j in range(offsets[v], offsets[v + 1]):
                g = faces[j]
                if g >= t:
                    break
                if not _is_degenerate(tris, g) and _holds(tris, g, v, a, b):
                    rank += 1
            opposite = 0  # the rank-th face holding b -> a is the partner
            for j in range(offsets[v], offsets[v + 1]):
                g = faces[j]
                if not _is_degenerate(tris, g) and _holds(tris, g, v, b, a):
                    if opposite == rank:
                        e2 = 0
                        while tris[g, e2] != b:
                            e2 += 1
                        nbr[t, e] = g
                        nbr_edge[t, e] = e2
                        nbr[g, e2] = t
                        nbr_edge[g, e2] = e
                        break
                    opposite += 1
    return nbr, nbr_edge


@njit(cache=True)
def _hoppe(tris, nbr, nbr_edge, vertex_count, cache_size, margin, order, out):
    """Write the strip order into ``order`` (``(T,)``) and/or the reordered triangles into
    ``out`` (``(T, 3)``); an output given with zero rows is skipped."""
    t_count = tris.shape[0]
    want_order = order.shape[0] > 0
    want_out = out.shape[0] > 0
    written = 0
    done = np.zeros(t_count, np.bool_)

    # faces by their number of unprocessed neighbours (0..3), last in first out: one
    # append-only stack per count; a count only falls, so a face is pushed on each stack at
    # most once, and an entry whose face has moved on (or is done) is dropped when it
    # surfaces.  Initially the lowest face is on top.
    free_nbrs = np.zeros(t_count, np.int8)
    reach = np.zeros(5, np.int64)  # faces that start at count c or above
    for t in range(t_count):
        n = 0
        for e in range(3):
            if nbr[t, e] >= 0:
                n += 1
        free_nbrs[t] = n
        reach[n] += 1
    for c in range(2, -1, -1):
        reach[c] += reach[c + 1]
    stack_base = np.zeros(4, np.int64)
    for c in range(1, 4):
        stack_base[c] = stack_base[c - 1] + reach[c - 1]
    stacks = np.empty(stack_base[3] + reach[3], np.int32)
    stack_top = stack_base.copy()
    for t in range(t_count - 1, -1, -1):
        c = free_nbrs[t]
        stacks[stack_top[c]] = t
        stack_top[c] += 1

    # FIFO cache simulation: v is cached iff seq[v] >= misses - cache_size
    seq = np.full(vertex_count, -(2**31) + 1, np.int32)
    misses = 0

    budget = cache_size - margin
    while written < t_count:
        # a new strip: a face with the fewest unprocessed neighbours
        start = -1
        for c in range(4):
            while stack_top[c] > stack_base[c]:
                g = stacks[stack_top[c] - 1]
                if not done[g] and free_nbrs[g] == c:
                    start = g
                    break
                stack_top[c] -= 1
            if start >= 0:
                break
        # pivot: rotating around it must reach an unprocessed face if there is one
        f = start
        if nbr[f, 0] >= 0 and not done[nbr[f, 0]]:
            p = 1
        elif nbr[f, 1] >= 0 and not done[nbr[f, 1]]:
            p = 2
        else:
            p = 0
        back_f = -1  # restart corner (where the returning strip begins)
        back_p = -1
        since_back = 0  # cache misses since the restart corner was set
        strip_over = False
        while not strip_over:
            if back_f >= 0:
                # look-ahead: faces of the fan around the pivot that the strip is about to add
                fan = 1
                g = f
                q = p
                while fan <= t_count:
                    e = (q + 2) % 3
                    h = nbr[g, e]
                    if h < 0 or done[h]:
                        break
                    q = nbr_edge[g, e]
                    g = h
                    fan += 1
                if since_back + fan > budget:
                    if not done[back_f]:
                        f = back_f
                        p = back_p
                    back_f = -1
            # sweep the fan around the pivot
            while True:
                done[f] = True
                if want_order:
                    order[written] = f
                if want_out:
                    out[written, 0] = tris[f, 0]
                    out[written, 1] = tris[f, 1]
                    out[written, 2] = tris[f, 2]
                written += 1
                for e in range(3):
                    h = nbr[f, e]
                    if h >= 0 and not done[h]:
                        c = free_nbrs[h] - 1
                        free_nbrs[h] = c
                        stacks[stack_top[c]] = h
                        stack_top[c] += 1
                for i in range(3):
                    v = tris[f, i]
                    if seq[v] < misses - cache_size:
                        seq[v] = misses
                        misses += 1
                        since_back += 1
                # inner: keep turning around the pivot; outer: cross the edge facing it
                e_in = (p + 2) % 3
                h_in = nbr[f, e_in]
                inner_ok = h_in >= 0 and not done[h_in]
                e_out = (p + 1) % 3
                h_out = nbr[f, e_out]
                outer_ok = h_out >= 0 and not done[h_out]
                if inner_ok:
                    if outer_ok and back_f < 0:
                        back_f = h_out
                        back_p = nbr_edge[f, e_out]
                        since_back = 0
                    p = nbr_edge[f, e_in]
                    f = h_in
                elif outer_ok:
                    p = nbr_edge[f, e_out]
                    f = h_out
                    break  # a new fan: look ahead first
                else:
                    if back_f >= 0 and not done[back_f]:
                        f = back_f
                        p = back_p
                        back_f = -1
                        break
                    strip_over = True
                    break


def hoppe_order(triangles, vertex_count: int | None = None, cache_size: int = DEFAULT_CACHE_SIZE,
                restart_margin: int = DEFAULT_RESTART_MARGIN) -> np.ndarray:
    """The Hoppe 1999 strip order: ``(T,)`` int64 indices into ``triangles``."""
    tris, vcount = prepare(triangles, vertex_count)
    order = np.empty(tris.shape[0], np.int64)
    _run(tris, vcount, cache_size, restart_margin, order, no_rows(tris))
    return order


def _run(tris, vcount, cache_size, restart_margin, order, out):
    k = check_cache_size("hoppe", cache_size)
    margin = int(restart_margin)
    if margin != restart_margin or not 0 <= margin < k:
        raise MeshoptBatchError(f"hoppe: restart margin must be an integer in [0, {k}), got {restart_margin!r}")
    if tris.shape[0]:
        offsets, faces = vertex_faces(tris, vcount, face_index_type(tris.shape[0]))
        nbr, nbr_edge = _edge_adjacency(tris, offsets, faces)
        _hoppe(tris, nbr, nbr_edge, vcount, k, margin, order, out)


def optimize_hoppe(triangles, vertex_count: int | None = None, *, cache_size: int = DEFAULT_CACHE_SIZE,
                   restart_margin: int = DEFAULT_RESTART_MARGIN) -> np.ndarray:
    """Reorder triangles with Hoppe's greedy strip growing (SIGGRAPH 1999, sec. 4).

    Parameters
    ----------
    triangles : (T, 3) or (3T,) integer array
        Index buffer.
    vertex_count : int, optional
        Size of the vertex buffer (default: largest index + 1).
    cache_size : int
        FIFO size ``k`` of the look-ahead simulation.
    restart_margin : int
        Strips are cut once the misses since the restart corner plus the next fan exceed
        ``cache_size - restart_margin``.

    Returns
    -------
    (T, 3) array of the input's integer type
        The same triangles, each with its vertex order kept, as consecutive strips.
    """
    tris, vcount = prepare(triangles, vertex_count)
    out = np.empty_like(tris)
    _run(tris, vcount, cache_size, restart_margin, NO_ORDER, out)
    return in_caller_type(triangles, out)
