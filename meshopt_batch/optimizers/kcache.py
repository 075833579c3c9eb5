"""K-Cache: Lin & Yu 2006, "An improved vertex caching scheme for 3D mesh rendering"
(IEEE TVCG 12(4), 640-648).

The algorithm simulates a FIFO vertex cache of ``K`` entries while it builds the order and
colours the vertices: *white* (not in the cache, triangles left), *grey* (in the cache) and
*black* (every triangle around it has been emitted).  It repeats:

1. **Choose a focus vertex.**  If the cache holds grey vertices with triangles left, each of
   them is tried by a *predictive simulation* of the cache: emit its remaining triangles
   (in fan order) on a copy of the cache and measure

   * ``C1``: cache misses (vertices pushed) the simulation causes,
   * ``C2``: triangles it emits,
   * ``C3``: where the focus ends up: 1 when the simulation pushes it out of the cache,
     otherwise ``(K - p) / K`` for its distance ``p`` from the newest entry -- a focus that
     is about to leave the cache is used before it is lost;

   and the one with the lowest cost ``C1 - 0.5 C2 + 1.3 C3`` wins (weights of the
   implementation paper 001 used for its Tables 1-2).  With no grey candidate (start, or the
   cache holds only finished vertices) the focus is the white vertex with the fewest
   remaining triangles, so runs start at boundaries and leftovers are finished first.
2. **Render the focus.**  Its remaining triangles are emitted in fan order; every vertex
   that misses is pushed into the FIFO (the oldest entry leaves; it turns white again if it
   still has triangles) and, right after each push, any triangle around the pushed vertex
   whose three vertices are now all cached is emitted too ("fill-in": it costs no miss).
3. The focus turns black.

The predictive simulation is what makes K-Cache slower than Tipsify or Forsyth (paper 001,
sec. 2): each focus choice costs ``O(K * valence)``.  Ties among white vertices with the
same number of remaining triangles go to the most recently updated one (a LIFO bucket),
which keeps restarts next to the region just finished.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..topology import vertex_faces
from ._buckets import bucket_link, bucket_unlink
from ._util import check_cache_size, gather, prepare

__all__ = ["optimize_kcache", "kcache_order", "DEFAULT_CACHE_SIZE", "WEIGHT_C2", "WEIGHT_C3"]

#: The cache size paper 001 found best for K-Cache on NVIDIA and AMD.
DEFAULT_CACHE_SIZE = 10
WEIGHT_C2 = 0.5
WEIGHT_C3 = 1.3
#: Fans longer than this are left in index order (ordering them is quadratic in valence).
_MAX_FAN_SORT = 64
#: The predictive simulation of a candidate covers at most this many of its remaining
#: triangles (``C1`` and ``C2`` over the same ones), so a vertex of huge valence that stays
#: cached does not make every focus choice cost O(valence); ordinary meshes never reach it.
_MAX_SIMULATED_FACES = 64


@njit(cache=True)
def _sort_fans(tris, offsets, faces):
    """Reorder each vertex's face list into rotational (fan) order, in place.

    For face ``(u, a, b)`` seen from ``u`` the next face around ``u`` is the one that
    continues from edge ``u -> b``; chains start at a face whose incoming edge has no face
    (a boundary), otherwise at the lowest listed face.
    """
    vertex_count = offsets.shape[0] - 1
    buf = np.empty(_MAX_FAN_SORT, np.int64)
    fa = np.empty(_MAX_FAN_SORT, np.int64)
    fb = np.empty(_MAX_FAN_SORT, np.int64)
    used = np.zeros(_MAX_FAN_SORT, np.bool_)
    for u in range(vertex_count):
        lo = offsets[u]
        n = offsets[u + 1] - lo
        if n < 3 or n > _MAX_FAN_SORT:
            continue
        for k in range(n):
            f = faces[lo + k]
            corner = 0
            if tris[f, 1] == u:
                corner = 1
            elif tris[f, 2] == u:
                corner = 2
            fa[k] = tris[f, (corner + 1) % 3]
            fb[k] = tris[f, (corner + 2) % 3]
            used[k] = False
        out = 0
        while out < n:
            # start: an unused face no unused face leads into, else the first unused
            start = -1
            for k in range(n):
                if used[k]:
                    continue
                has_pred = False
                for q in range(n):
                    if q != k and not used[q] and fb[q] == fa[k]:
                        has_pred = True
                        break
                if not has_pred:
                    start = k
                    break
            if start < 0:
                for k in range(n):
                    if not used[k]:
                        start = k
                        break
            cur = start
            while cur >= 0:
                used[cur] = True
                buf[out] = faces[lo + cur]
                out += 1
                nxt = -1
                for q in range(n):
                    if not used[q] and fa[q] == fb[cur]:
                        nxt = q
                        break
                cur = nxt
        for k in range(n):
            faces[lo + k] = buf[k]


@njit(cache=True, inline="always")
def _corner_of(tris, g, v):
    """First corner of face ``g`` that holds vertex ``v``."""
    if tris[g, 0] == v:
        return 0
    if tris[g, 1] == v:
        return 1
    return 2


@njit(cache=True)
def _kcache(tris, offsets, faces, vertex_count, k, w2, w3, sim_cap):
    t_count = tris.shape[0]
    order = np.empty(t_count, np.int64)
    written = 0

    # live adjacency: adj[offsets[v] : offsets[v] + live[v]] are v's remaining faces, in fan
    # order; pos[g, c] is where face g sits in the list of its corner-c vertex
    adj = faces.copy()
    live = np.empty(vertex_count, np.int64)
    pos = np.zeros((t_count, 3), np.int64)
    max_valence = 0
    for v in range(vertex_count):
        live[v] = offsets[v + 1] - offsets[v]
        if live[v] > max_valence:
            max_valence = live[v]
        for j in range(offsets[v], offsets[v + 1]):
            g = adj[j]
            pos[g, _corner_of(tris, g, v)] = j

    # white-vertex buckets by remaining triangle count (doubly linked, LIFO)
    head = np.full(max_valence + 1, -1, np.int64)
    nxt = np.full(vertex_count, -1, np.int64)
    prv = np.full(vertex_count, -1, np.int64)
    for v in range(vertex_count - 1, -1, -1):
        if live[v] > 0:
            bucket_link(v, live[v], head, nxt, prv)
    min_bucket = 1

    # FIFO cache: vertex v is cached iff seq[v] >= pushes - k (pushes only happen on misses)
    seq = np.full(vertex_count, -(1 << 62), np.int64)
    ring = np.full(k, -1, np.int64)
    pushes = 0

    # predictive simulation scratch: simulated push number of a vertex in simulation `gen`
    sim_seq = np.zeros(vertex_count, np.int64)
    sim_gen = np.zeros(vertex_count, np.int64)
    gen = 0
    fill = np.empty(max_valence + 1, np.int64)

    while written < t_count:
        # ---- 1. focus vertex: the cached vertex whose predicted cost is lowest
        focus = -1
        best_cost = 1e300
        best_c1 = 0
        first = pushes - k if pushes > k else 0
        for p in range(first, pushes):
            u = ring[p % k]
            n_u = live[u]
            if n_u <= 0:
                continue
            gen += 1
            m = 0
            base = offsets[u]
            n_sim = n_u if n_u < sim_cap else sim_cap
            for j in range(base, base + n_sim):
                f = adj[j]
                for i in range(3):
                    w = tris[f, i]
                    s = sim_seq[w] if sim_gen[w] == gen else seq[w]
                    if s < pushes + m - k:
                        sim_seq[w] = pushes + m
                        sim_gen[w] = gen
                        m += 1
            su = sim_seq[u] if sim_gen[u] == gen else seq[u]
            if su < pushes + m - k:
                c3 = 1.0
            else:
                c3 = (k - ((pushes + m - 1) - su)) / k
            cost = m - w2 * n_sim + w3 * c3
            if cost < best_cost or (cost == best_cost and m < best_c1):
                best_cost = cost
                best_c1 = m
                focus = u
        if focus < 0:
            # no grey candidate: the white vertex with the fewest remaining triangles
            c = min_bucket
            while c <= max_valence and head[c] < 0:
                c += 1
            min_bucket = c
            focus = head[c]

        # ---- 2. render the focus's remaining triangles in fan order
        while live[focus] > 0:
            f = adj[offsets[focus]]
            for i in range(3):
                w = tris[f, i]
                if seq[w] >= pushes - k:
                    continue  # cached (also covers a repeated index)
                ring[pushes % k] = w
                seq[w] = pushes
                pushes += 1
                # fill-in: triangles around w that are now fully cached cost nothing
                n_fill = 0
                for jj in range(offsets[w], offsets[w] + live[w]):
                    g = adj[jj]
                    if g != f and (seq[tris[g, 0]] >= pushes - k and seq[tris[g, 1]] >= pushes - k
                                   and seq[tris[g, 2]] >= pushes - k):
                        fill[n_fill] = g
                        n_fill += 1
                for q in range(n_fill):
                    g = fill[q]
                    order[written] = g
                    written += 1
                    min_bucket = _retire(tris, g, adj, offsets, live, pos, head, nxt, prv, min_bucket)
            order[written] = f
            written += 1
            min_bucket = _retire(tris, f, adj, offsets, live, pos, head, nxt, prv, min_bucket)
        # ---- 3. the focus is black now (live[focus] == 0)
    return order


@njit(cache=True)
def _retire(tris, f, adj, offsets, live, pos, head, nxt, prv, min_bucket):
    """Face ``f`` was emitted: drop it from the live list of each of its distinct vertices
    (order kept for fans that were sorted, swap-removal for longer ones) and re-bucket them."""
    a = tris[f, 0]
    b = tris[f, 1]
    for i in range(3):
        v = tris[f, i]
        if (i == 1 and v == a) or (i == 2 and (v == a or v == b)):
            continue
        base = offsets[v]
        n = live[v]
        last = base + n - 1
        j = pos[f, i]
        if offsets[v + 1] - base <= _MAX_FAN_SORT:
            for q in range(j, last):
                g = adj[q + 1]
                adj[q] = g
                pos[g, _corner_of(tris, g, v)] = q
        else:
            g = adj[last]
            adj[j] = g
            pos[g, _corner_of(tris, g, v)] = j
        adj[last] = f
        pos[f, i] = last
        bucket_unlink(v, n, head, nxt, prv)
        live[v] = n - 1
        if n > 1:
            bucket_link(v, n - 1, head, nxt, prv)
            if n - 1 < min_bucket:
                min_bucket = n - 1
    return min_bucket


def kcache_order(triangles, vertex_count: int | None = None, cache_size: int = DEFAULT_CACHE_SIZE) -> np.ndarray:
    """The K-Cache triangle order: ``(T,)`` int64 indices into ``triangles``."""
    tris, vcount = prepare(triangles, vertex_count)
    return _order(tris, vcount, cache_size)


def _order(tris, vcount, cache_size):
    k = check_cache_size("kcache", cache_size)
    if tris.shape[0] == 0:
        return np.zeros(0, np.int64)
    offsets, faces = vertex_faces(tris, vcount)
    _sort_fans(tris, offsets, faces)
    return _kcache(tris, offsets, faces, vcount, k, WEIGHT_C2, WEIGHT_C3, _MAX_SIMULATED_FACES)


def optimize_kcache(triangles, vertex_count: int | None = None, *, cache_size: int = DEFAULT_CACHE_SIZE) -> np.ndarray:
    """Reorder triangles with K-Cache (Lin & Yu 2006).

    Parameters
    ----------
    triangles : (T, 3) or (3T,) integer array
        Index buffer.
    vertex_count : int, optional
        Size of the vertex buffer (default: largest index + 1).
    cache_size : int
        ``K``, the FIFO size of the predictive simulation; 10 was best on NVIDIA and AMD in
        paper 001 (sec. 5).

    Returns
    -------
    (T, 3) array of the input's integer type
        The same triangles, each with its vertex order kept, in K-Cache order.
    """
    tris, vcount = prepare(triangles, vertex_count)
    order = _order(tris, vcount, cache_size)
    return gather(triangles, tris, order)
