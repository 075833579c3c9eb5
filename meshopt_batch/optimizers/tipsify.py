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
sec. 5) used ``k = 11`` for NVIDIA and ``k = 14`` for AMD.  The kernel writes each emitted
triangle straight into the output and reads the next-vertex candidates back from the
dead-end stack it has just pushed them on.

References
----------
.. [1] P. V. Sander, D. Nehab, J. Barczak, "Fast Triangle Reordering for Vertex Locality and
   Reduced Overdraw", ACM Trans. Graph. 26(3) (SIGGRAPH 2007), sec. 3.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..geometry.mesh_topology import face_index_type, vertex_faces
from ._output import NO_ORDER, in_caller_type, no_rows
from ._util import check_cache_size, prepare

__all__ = ["optimize_tipsify", "tipsify_order", "DEFAULT_CACHE_SIZE"]

#: Cache size of paper 001 for NVIDIA (AMD: 14).
DEFAULT_CACHE_SIZE = 11


@njit(cache=True, inline="always")
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
def _tipsify(tris, offsets, faces, k, order, out):
    """Write the Tipsify order into ``order`` (``(T,)``) and/or the reordered triangles into
    ``out`` (``(T, 3)``); an output given with zero rows is skipped."""
    t_count = tris.shape[0]
    vertex_count = offsets.shape[0] - 1
    # L: live triangle count per vertex (each distinct vertex of a triangle counts it once)
    live = np.empty(vertex_count, np.int32)
    for v in range(vertex_count):
        live[v] = offsets[v + 1] - offsets[v]
    cache_time = np.zeros(vertex_count, np.int32)  # C
    emitted = np.zeros(t_count, np.bool_)
    dead_end = np.empty(3 * t_count + 1, np.int32)  # D (every emitted corner is pushed once)
    dead_top = 0
    want_order = order.shape[0] > 0
    want_out = out.shape[0] > 0
    s = k + 1  # time stamp
    cursor = 0
    written = 0
    f, dead_top, cursor = _skip_dead_end(live, dead_end, dead_top, cursor, vertex_count)
    while f >= 0:
        # N: the corners this fan pushes on the dead-end stack
        first_candidate = dead_top
        for j in range(offsets[f], offsets[f + 1]):
            t = faces[j]
            if emitted[t]:
                continue
            emitted[t] = True
            a = tris[t, 0]
            b = tris[t, 1]
            c = tris[t, 2]
            if want_order:
                order[written] = t
            if want_out:
                out[written, 0] = a
                out[written, 1] = b
                out[written, 2] = c
            written += 1
            dead_end[dead_top] = a
            dead_end[dead_top + 1] = b
            dead_end[dead_top + 2] = c
            dead_top += 3
            # a repeated index is one vertex: its live count drops once
            live[a] -= 1
            if s - cache_time[a] > k:
                cache_time[a] = s
                s += 1
            if b != a:
                live[b] -= 1
                if s - cache_time[b] > k:
                    cache_time[b] = s
                    s += 1
            if c != a and c != b:
                live[c] -= 1
                if s - cache_time[c] > k:
                    cache_time[c] = s
                    s += 1
        # Next(): the candidate that stays in the cache while fanning, oldest first
        best = -1
        best_p = -1
        for j in range(first_candidate, dead_top):
            v = dead_end[j]
            n = live[v]
            if n > 0:
                age = s - cache_time[v]
                p = age if age + 2 * n <= k else 0
                if p > best_p:
                    best_p = p
                    best = v
        if best < 0:
            best, dead_top, cursor = _skip_dead_end(live, dead_end, dead_top, cursor, vertex_count)
        f = best


def tipsify_order(triangles, vertex_count: int | None = None, cache_size: int = DEFAULT_CACHE_SIZE) -> np.ndarray:
    """The Tipsify triangle order: ``(T,)`` int64 indices into ``triangles``."""
    tris, vcount = prepare(triangles, vertex_count)
    order = np.empty(tris.shape[0], np.int64)
    _run(tris, vcount, cache_size, order, no_rows(tris))
    return order


def _run(tris, vcount, cache_size, order, out):
    k = check_cache_size("tipsify", cache_size)
    if tris.shape[0]:
        offsets, faces = vertex_faces(tris, vcount, face_index_type(tris.shape[0]))
        _tipsify(tris, offsets, faces, k, order, out)


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
    out = np.empty_like(tris)
    _run(tris, vcount, cache_size, NO_ORDER, out)
    return in_caller_type(triangles, out)
