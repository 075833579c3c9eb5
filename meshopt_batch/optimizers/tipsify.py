"""Tipsify: Sander, Nehab & Barczak 2007, "Fast triangle reordering for vertex locality and
reduced overdraw" (ACM SIGGRAPH 2007), section 3 ("Vertex cache optimization").

The algorithm *fans* around one vertex at a time: it emits every not-yet-emitted triangle
around the current fanning vertex, then picks the next fanning vertex among the vertices of
the triangles it just emitted (the 1-ring candidates).  A candidate is ranked by its
*cache time*: ``s - C[v]``, how many cache insertions happened since ``v`` last entered a
simulated FIFO cache of ``k`` entries.  A candidate wins when it will still be in the cache
after its own remaining triangles are emitted (``s - C[v] + 2 L[v] <= k``, each live triangle
``L[v]`` adds at most two vertices); among those the oldest is chosen, since it is the one
about to be evicted.  When no candidate qualifies the algorithm *skips a dead end*: it pops
recently referenced vertices from the dead-end stack until one with live triangles appears,
and if the stack is empty it scans the vertices in index order from a cursor.

Every triangle is emitted once, in the vertex order it had on input, and each step touches
only the triangles around one vertex, so the whole run is linear in the triangle count
(the paper's central claim).  The paper chose ``k`` per GPU; paper 001 (Kerbl et al. 2018,
sec. 5) used ``k = 11`` for NVIDIA and ``k = 14`` for AMD.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..topology import vertex_faces
from ._util import check_cache_size, gather, prepare

__all__ = ["optimize_tipsify", "tipsify_order", "DEFAULT_CACHE_SIZE"]

#: Cache size of paper 001 for NVIDIA (AMD: 14).
DEFAULT_CACHE_SIZE = 11


@njit(cache=True)
def _skip_dead_end(live, dead_end, dead_top, cursor, vertex_count):
    """Pop the dead-end stack for a vertex with live triangles, else scan from the cursor.

    Returns ``(vertex or -1, new stack top, new cursor)``.
    """
    while dead_top > 0:
        dead_top -= 1
        d = dead_end[dead_top]
        if live[d] > 0:
            return d, dead_top, cursor
    while cursor < vertex_count:
        if live[cursor] > 0:
            return cursor, dead_top, cursor
        cursor += 1
    return -1, dead_top, cursor


@njit(cache=True)
def _tipsify(tris, offsets, faces, vertex_count, k):
    t_count = tris.shape[0]
    order = np.empty(t_count, np.int64)
    # L: live triangle count per vertex (each distinct vertex of a triangle counts it once)
    live = np.empty(vertex_count, np.int64)
    max_valence = 0
    for v in range(vertex_count):
        live[v] = offsets[v + 1] - offsets[v]
        if live[v] > max_valence:
            max_valence = live[v]
    cache_time = np.zeros(vertex_count, np.int64)  # C
    emitted = np.zeros(t_count, np.bool_)
    dead_end = np.empty(3 * t_count + 1, np.int64)  # D (every emitted corner is pushed once)
    dead_top = 0
    candidates = np.empty(3 * max_valence + 1, np.int64)  # N
    s = k + 1  # time stamp
    cursor = 0
    written = 0
    f, dead_top, cursor = _skip_dead_end(live, dead_end, dead_top, cursor, vertex_count)
    while f >= 0:
        n_cand = 0
        for j in range(offsets[f], offsets[f + 1]):
            t = faces[j]
            if emitted[t]:
                continue
            emitted[t] = True
            order[written] = t
            written += 1
            a = tris[t, 0]
            b = tris[t, 1]
            c = tris[t, 2]
            for i in range(3):
                v = tris[t, i]
                dead_end[dead_top] = v
                dead_top += 1
                candidates[n_cand] = v
                n_cand += 1
                # a repeated index is one vertex: its live count dropped once
                if (i == 1 and v == a) or (i == 2 and (v == a or v == b)):
                    continue
                live[v] -= 1
                if s - cache_time[v] > k:
                    cache_time[v] = s
                    s += 1
        # Next(): the candidate that stays in the cache while fanning, oldest first
        best = -1
        best_p = -1
        for j in range(n_cand):
            v = candidates[j]
            if live[v] > 0:
                p = 0
                if s - cache_time[v] + 2 * live[v] <= k:
                    p = s - cache_time[v]
                if p > best_p:
                    best_p = p
                    best = v
        if best < 0:
            best, dead_top, cursor = _skip_dead_end(live, dead_end, dead_top, cursor, vertex_count)
        f = best
    return order


def tipsify_order(triangles, vertex_count: int | None = None, cache_size: int = DEFAULT_CACHE_SIZE) -> np.ndarray:
    """The Tipsify triangle order: ``(T,)`` int64 indices into ``triangles``."""
    tris, vcount = prepare(triangles, vertex_count)
    return _order(tris, vcount, check_cache_size("tipsify", cache_size))


def _order(tris, vcount, cache_size):
    if tris.shape[0] == 0:
        return np.zeros(0, np.int64)
    offsets, faces = vertex_faces(tris, vcount)
    return _tipsify(tris, offsets, faces, vcount, cache_size)


def optimize_tipsify(triangles, vertex_count: int | None = None, *, cache_size: int = DEFAULT_CACHE_SIZE) -> np.ndarray:
    """Reorder triangles with Tipsify (Sander, Nehab & Barczak 2007, section 3).

    Parameters
    ----------
    triangles : (T, 3) or (3T,) integer array
        Index buffer.
    vertex_count : int, optional
        Size of the vertex buffer (default: largest index + 1).
    cache_size : int
        Size ``k`` of the FIFO cache the cache-time test assumes: 11 for NVIDIA and 14 for
        AMD in paper 001's evaluation (the best values found there).

    Returns
    -------
    (T, 3) array of the input's integer type
        The same triangles, each with its vertex order kept, in Tipsify order.
    """
    tris, vcount = prepare(triangles, vertex_count)
    order = _order(tris, vcount, check_cache_size("tipsify", cache_size))
    return gather(triangles, tris, order)
