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
sec. 2): each focus choice costs ``O(K * valence)``.  It writes its pushes into the real
cache stamps and undoes them afterwards.  Ties among white vertices with the same number of
remaining triangles go to the most recently updated one (last in, first out), which keeps
restarts next to the region just finished; they are kept as one append-only stack per
count (a count only falls, so a vertex reaches each count once and an entry whose vertex
has moved on is simply dropped when it surfaces), which costs a step one write where a
doubly linked bucket list cost four scattered ones.

A vertex of high valence that keeps re-entering the cache (the centre of a fan) would cost
its whole face list at every fill-in scan, ``O(n^2)`` over a fan of ``n`` triangles; when its
list is longer than those of the other cached vertices together, the fill-in faces are
found through them instead (every such face has another cached corner) and put in the
order of its list, so the result is the same.

References
----------
.. [1] G. Lin, T. P.-Y. Yu, "An Improved Vertex Caching Scheme for 3D Mesh Rendering",
   IEEE Trans. Vis. Comput. Graph. 12(4), 640-648, 2006.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..geometry.mesh_topology import face_index_type, vertex_faces
from ._output import NO_ORDER, in_caller_type, no_rows
from ._util import check_cache_size, prepare

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


@njit(cache=True, nogil=True)
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


@njit(cache=True, inline="always")
def _cached(seq, w, oldest):
    return seq[np.uintp(w)] >= oldest


@njit(cache=True, nogil=True)
def _kcache(tris, offsets, adj, k, w2, w3, sim_cap, indirect_min, order, out):
    """Write the K-Cache order into ``order`` (``(T,)``) and/or the reordered triangles into
    ``out`` (``(T, 3)``); an output given with zero rows is skipped.  ``adj`` holds the
    rotationally sorted face lists and is reordered in place.  A vertex whose live list is
    longer than ``indirect_min`` (at least ``_MAX_FAN_SORT``) may have its fill-in faces
    found through the other cached vertices.

    Subscripts in the hot loops are cast to ``np.uintp``, which spares them numba's
    negative-index wraparound.
    """
    t_count = tris.shape[0]
    vertex_count = offsets.shape[0] - 1
    want_order = order.shape[0] > 0
    want_out = out.shape[0] > 0
    written = 0

    # live adjacency: adj[offsets[v] : offsets[v] + live[v]] are v's remaining faces, in fan
    # order; for a vertex with a longer list than a sorted fan, pos[g, c] is where face g sits
    # in the list of its corner-c vertex (shorter lists are searched)
    live = np.empty(vertex_count, np.int32)
    max_valence = 0
    for v in range(vertex_count):
        live[v] = offsets[v + 1] - offsets[v]
        if live[v] > max_valence:
            max_valence = live[v]
    pos = np.zeros((t_count if max_valence > _MAX_FAN_SORT else 0, 3), np.int32)
    for v in range(vertex_count):
        if live[v] > _MAX_FAN_SORT:
            for j in range(offsets[v], offsets[v + 1]):
                g = adj[j]
                pos[g, _corner_of(tris, g, v)] = j
    # a face (w, w, w) is only found through w's own list (see the fill-in below)
    point_face = np.zeros(vertex_count, np.bool_)
    for g in range(t_count):
        if tris[g, 0] == tris[g, 1] and tris[g, 1] == tris[g, 2]:
            point_face[tris[g, 0]] = True

    # vertices by remaining triangle count: one stack per count, a vertex pushed on it when
    # its count reaches it (at most once: counts only fall), so the top entry whose vertex
    # still has that count is the one that got there last; initially the lowest index
    # is on top.  Entries whose vertex moved on are dropped when they surface.
    reach = np.zeros(max_valence + 2, np.int64)  # vertices whose count starts at c or above
    for v in range(vertex_count):
        reach[live[v]] += 1
    for c in range(max_valence - 1, -1, -1):
        reach[c] += reach[c + 1]
    stack_top = np.zeros(max_valence + 2, np.int64)
    acc = 0
    for c in range(1, max_valence + 1):
        stack_top[c] = acc
        acc += reach[c]
    stack_top[max_valence + 1] = acc
    stacks = np.empty(acc, np.int32)
    stack_base = stack_top.copy()
    for v in range(vertex_count - 1, -1, -1):
        if live[v] > 0:
            c = live[v]
            stacks[stack_top[c]] = v
            stack_top[c] += 1
    min_bucket = 1

    # FIFO cache: vertex v is cached iff seq[v] >= pushes - k (pushes only happen on misses)
    seq = np.full(vertex_count, -(2**31) + 1, np.int32)
    ring = np.full(k, -1, np.int32)
    pushes = 0
    ring_next = 0  # pushes % k

    # the predictive simulation writes its pushes into seq and undoes them afterwards
    sim_pushed = np.empty(3 * sim_cap, np.int32)
    sim_was = np.empty(3 * sim_cap, np.int32)
    fill = np.empty(max_valence + 1, np.int32)
    fill_key = np.empty(max_valence + 1, np.int32)

    while written < t_count:
        # ---- 1. focus vertex: the cached vertex whose predicted cost is lowest
        focus = -1
        best_cost = 1e300
        best_c1 = 0
        n_grey = pushes if pushes < k else k
        slot = ring_next - n_grey
        if slot < 0:
            slot += k
        for _ in range(n_grey):
            u = ring[np.uintp(slot)]
            slot += 1
            if slot == k:
                slot = 0
            uu = np.uintp(u)
            n_u = live[uu]
            if n_u <= 0:
                continue
            m = 0
            base = offsets[uu]
            n_sim = n_u if n_u < sim_cap else sim_cap
            for j in range(base, base + n_sim):
                f = np.uintp(adj[np.uintp(j)])
                for i in range(3):
                    w = np.uintp(tris[f, i])
                    if seq[w] < pushes + m - k:
                        sim_pushed[m] = w
                        sim_was[m] = seq[w]
                        seq[w] = pushes + m
                        m += 1
            su = seq[uu]
            for q in range(m - 1, -1, -1):
                seq[np.uintp(sim_pushed[q])] = sim_was[q]
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
            while True:
                while stack_top[c] > stack_base[c] and live[stacks[stack_top[c] - 1]] != c:
                    stack_top[c] -= 1
                if stack_top[c] > stack_base[c]:
                    break
                c += 1
            min_bucket = c
            focus = stacks[stack_top[c] - 1]

        # ---- 2. render the focus's remaining triangles in fan order
        while live[focus] > 0:
            f = adj[offsets[focus]]
            for i in range(3):
                w = tris[f, i]
                if _cached(seq, w, pushes - k):
                    continue  # cached (also covers a repeated index)
                ring[np.uintp(ring_next)] = w
                ring_next += 1
                if ring_next == k:
                    ring_next = 0
                seq[np.uintp(w)] = pushes
                pushes += 1
                oldest = pushes - k
                # fill-in: triangles around w that are now fully cached cost nothing, in the
                # order of w's face list
                n_fill = 0
                n_w = live[w]
                others = 0  # faces around the other cached vertices
                if n_w > indirect_min and not point_face[w]:
                    for p in range(max(oldest, 0), pushes - 1):
                        others += live[ring[p % k]]  # rare: no need for the running slot
                if n_w <= indirect_min or point_face[w] or others >= n_w:
                    for jj in range(offsets[w], offsets[w] + n_w):
                        g = adj[np.uintp(jj)]
                        ug = np.uintp(g)
                        if g != f and (_cached(seq, tris[ug, 0], oldest) and _cached(seq, tris[ug, 1], oldest)
                                       and _cached(seq, tris[ug, 2], oldest)):
                            fill[n_fill] = g
                            n_fill += 1
                else:
                    # a vertex of high valence: every such face has another (cached) corner,
                    # so the shorter lists of the other cached vertices find them all
                    for p in range(max(oldest, 0), pushes - 1):
                        u = ring[p % k]
                        for jj in range(offsets[u], offsets[u] + live[u]):
                            g = adj[jj]
                            if g == f or not (tris[g, 0] == w or tris[g, 1] == w or tris[g, 2] == w):
                                continue
                            if not (_cached(seq, tris[g, 0], oldest) and _cached(seq, tris[g, 1], oldest)
                                    and _cached(seq, tris[g, 2], oldest)):
                                continue
                            key = pos[g, _corner_of(tris, g, w)]
                            q = n_fill  # insertion by place in w's list (drops repeats)
                            while q > 0 and fill_key[q - 1] > key:
                                q -= 1
                            if q > 0 and fill_key[q - 1] == key:
                                continue
                            for r in range(n_fill, q, -1):
                                fill[r] = fill[r - 1]
                                fill_key[r] = fill_key[r - 1]
                            fill[q] = g
                            fill_key[q] = key
                            n_fill += 1
                for q in range(n_fill):
                    g = fill[q]
                    if want_order:
                        order[written] = g
                    if want_out:
                        out[written, 0] = tris[g, 0]
                        out[written, 1] = tris[g, 1]
                        out[written, 2] = tris[g, 2]
                    written += 1
                    min_bucket = _retire(tris, g, adj, offsets, live, pos, stacks, stack_top, min_bucket)
            if want_order:
                order[written] = f
            if want_out:
                out[written, 0] = tris[f, 0]
                out[written, 1] = tris[f, 1]
                out[written, 2] = tris[f, 2]
            written += 1
            min_bucket = _retire(tris, f, adj, offsets, live, pos, stacks, stack_top, min_bucket)
        # ---- 3. the focus is black now (live[focus] == 0)


@njit(cache=True, nogil=True)
def _retire(tris, f, adj, offsets, live, pos, stacks, stack_top, min_bucket):
    """Face ``f`` was emitted: drop it from the live list of each of its distinct vertices
    (order kept for fans that were sorted, swap-removal through ``pos`` for longer ones) and
    push them on the stack of their new count."""
    a = tris[f, 0]
    b = tris[f, 1]
    for i in range(3):
        v = tris[f, i]
        if (i == 1 and v == a) or (i == 2 and (v == a or v == b)):
            continue
        base = offsets[v]
        n = live[v]
        last = base + n - 1
        if offsets[v + 1] - base <= _MAX_FAN_SORT:
            j = base
            while adj[np.uintp(j)] != f:
                j += 1
            for q in range(j, last):
                adj[np.uintp(q)] = adj[np.uintp(q + 1)]
        else:
            j = pos[f, i]
            g = adj[last]
            adj[j] = g
            pos[g, _corner_of(tris, g, v)] = j
            pos[f, i] = last
        adj[last] = f
        live[v] = n - 1
        if n > 1:
            stacks[stack_top[n - 1]] = v
            stack_top[n - 1] += 1
            if n - 1 < min_bucket:
                min_bucket = n - 1
    return min_bucket


def kcache_order(triangles, vertex_count: int | None = None, cache_size: int = DEFAULT_CACHE_SIZE) -> np.ndarray:
    """The K-Cache triangle order: ``(T,)`` int64 indices into ``triangles``."""
    tris, vcount = prepare(triangles, vertex_count)
    order = np.empty(tris.shape[0], np.int64)
    _run(tris, vcount, cache_size, order, no_rows(tris))
    return order


def _run(tris, vcount, cache_size, order, out):
    k = check_cache_size("kcache", cache_size)
    if tris.shape[0]:
        offsets, faces = vertex_faces(tris, vcount, face_index_type(tris.shape[0]))
        _sort_fans(tris, offsets, faces)
        _kcache(tris, offsets, faces, k, WEIGHT_C2, WEIGHT_C3, _MAX_SIMULATED_FACES, _MAX_FAN_SORT, order, out)


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
    out = np.empty_like(tris)
    _run(tris, vcount, cache_size, NO_ORDER, out)
    return in_caller_type(triangles, out)
