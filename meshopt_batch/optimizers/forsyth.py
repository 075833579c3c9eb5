"""Forsyth ("TomF"), "Linear-Speed Vertex Cache Optimisation", 2006.

https://tomforsyth1000.github.io/papers/fast_vert_cache_opt.html

Each vertex has a score made of two parts:

* **cache position** in a simulated LRU cache of ``cache_size`` (32) entries: the three
  vertices of the triangle just added get ``last_tri_score`` (0.75) -- low on purpose, so
  the next triangle does not simply re-use the same edge and strips form less; the others get
  ``(1 - (p - 3) / (cache_size - 3)) ** cache_decay_power`` for cache position ``p``, the
  article's exponential-like fall-off with power 1.5; out of the cache: 0.
* **valence boost** ``valence_boost_scale * remaining ** -valence_boost_power`` (2.0, 0.5),
  where ``remaining`` counts the vertex's triangles not yet added: vertices with few
  triangles left are finished first, so they do not end up as lonely triangles later.

A triangle's score is the sum of its vertices' scores.  The algorithm repeatedly adds the
highest-scoring triangle, moves its vertices to the front of the LRU cache (up to
``cache_size + 3`` entries for a moment, the last ones fall out), re-scores the vertices in
the cache and the triangles that use them, and looks for the next best triangle **only among
triangles that use a cached vertex** -- this is what makes it linear.  When none remains the
article falls back to the best triangle overall; here that search uses a max-heap that
receives a triangle whenever one of its vertices leaves the cache (the only moments an
out-of-cache triangle's score can have changed), so meshes with thousands of separate pieces
stay fast while the pick is the same as a full scan.

**High-valence vertices.**  Re-scoring every triangle of every cached vertex costs a vertex
shared by ``n`` triangles ``O(n)`` per step, ``O(n^2)`` in all (a 100k-triangle fan: 30 s,
and meshoptimizer's ``optimize_vertex_cache`` 5 s).  A vertex with more than
``HEAVY_VALENCE`` (256) triangles therefore keeps its own score out of its triangles'
running sums: each such triangle belongs to its first heavy corner, whose indexed heap ranks
its triangles by the sum of the other corners' scores, and the heavy score is added when
triangles are compared.  A cached heavy vertex offers its heap's top as its one candidate, so
a step costs ``O(log n)`` for it.  The pick is the article's except where float rounding of
the two sums differs, or where a triangle has two heavy corners (it is offered by its first
one only); no vertex of an ordinary mesh reaches the threshold.

References
----------
.. [1] T. Forsyth, "Linear-Speed Vertex Cache Optimisation", 2006,
   https://tomforsyth1000.github.io/papers/fast_vert_cache_opt.html
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..geometry.mesh_topology import vertex_corners
from ._heaps import indexed_heapify, indexed_remove, indexed_update, keyed_heapify, keyed_pop, keyed_push
from ._output import NO_ORDER, in_caller_type, no_rows
from ._util import check_cache_size, prepare

__all__ = ["optimize_forsyth", "forsyth_order", "DEFAULT_CACHE_SIZE", "HEAVY_VALENCE"]

#: Cache size of the article.
DEFAULT_CACHE_SIZE = 32
CACHE_DECAY_POWER = 1.5
LAST_TRI_SCORE = 0.75
VALENCE_BOOST_SCALE = 2.0
VALENCE_BOOST_POWER = 0.5
#: Vertices with more triangles than this take the lazy high-valence path (see the module
#: notes); every vertex of an ordinary mesh stays below it.
HEAVY_VALENCE = 256
_BOOST_TABLE_SIZE = 256


@njit(cache=True)
def _score_table(cache_size, decay_power, last_tri_score, boost_scale, boost_power):
    """Row ``p + 1`` for cache position ``p`` (row 0: out of cache), column = remaining
    triangles; a vertex with nothing left scores -1 (never chosen)."""
    table = np.zeros((cache_size + 1, _BOOST_TABLE_SIZE), np.float32)
    for p in range(-1, cache_size):
        if p < 0:
            base_score = 0.0
        elif p < 3:
            base_score = last_tri_score
        else:
            base_score = (1.0 - (p - 3) / (cache_size - 3)) ** decay_power
        table[p + 1, 0] = -1.0
        for n in range(1, _BOOST_TABLE_SIZE):
            table[p + 1, n] = base_score + boost_scale * n ** (-boost_power)
    return table


@njit(cache=True, inline="always")
def _score(table, position, remaining, boost_scale, boost_power):
    """Vertex score (float64) for a cache position (-1: not cached) and remaining triangles."""
    if remaining < _BOOST_TABLE_SIZE:
        return np.float64(table[np.uintp(position + 1), np.uintp(remaining)])
    return table[position + 1, 1] - boost_scale + boost_scale * remaining ** (-boost_power)


@njit(cache=True, inline="always")
def _true_score(tris, tscore, vscore, heavy_id, t):
    """Score of a triangle with a high-valence corner: its light sum plus those corners."""
    a = tris[t, 0]
    b = tris[t, 1]
    c = tris[t, 2]
    s = tscore[t]
    if heavy_id[a] >= 0:
        s += vscore[a]
    if b != a and heavy_id[b] >= 0:
        s += vscore[b]
    if c != a and c != b and heavy_id[c] >= 0:
        s += vscore[c]
    return s


@njit(cache=True)
def _rebuild_heap(tscore, owner, any_heavy, keys, ids):
    """The fallback heap afresh: every triangle not yet added and not owned by a
    high-valence vertex, with its current score."""
    n = 0
    for t in range(tscore.shape[0]):
        if tscore[t] >= 0 and (not any_heavy or owner[t] < 0):
            keys[n] = tscore[t]
            ids[n] = t
            n += 1
    keyed_heapify(keys, ids, n)
    return n


@njit(cache=True)
def _forsyth(tris, offsets, adj, pos, table, boost_scale, boost_power, heavy_valence, order, out):
    """Write the Forsyth order into ``order`` (``(T,)``) and/or the reordered triangles into
    ``out`` (``(T, 3)``); an output given with zero rows is skipped.  ``adj`` and ``pos``
    (entries and places of :func:`vertex_corners`) are reordered in place: a triangle leaves
    a vertex's live list by swapping with the list's last live entry, found through ``pos``.

    Subscripts in the per-triangle loop are cast to ``np.uintp``: numba then leaves out the
    negative-index wraparound it adds to signed subscripts (a fifth of the run time).
    """
    t_count = tris.shape[0]
    vertex_count = offsets.shape[0] - 1
    cache_size = table.shape[0] - 1
    want_order = order.shape[0] > 0
    want_out = out.shape[0] > 0

    # live adjacency: the first live[v] entries of adj[offsets[v]:] are v's remaining
    # triangles (entry >> 2; entry & 3 is the corner that holds v)
    live = np.empty(vertex_count, np.int32)
    vscore = np.empty(vertex_count, np.float32)
    n_heavy = 0
    max_light = 1
    for v in range(vertex_count):
        n = offsets[v + 1] - offsets[v]
        live[v] = n
        vscore[v] = _score(table, -1, n, boost_scale, boost_power)
        if n > heavy_valence:
            n_heavy += 1
        elif n > max_light:
            max_light = n
    any_heavy = n_heavy > 0

    # high-valence vertices: their score is left out of their triangles' tscore and added
    # when a triangle is compared; each such triangle belongs to its first heavy corner,
    # whose indexed heap (ranked by tscore) yields its best triangle in O(1)
    heavy_id = np.full(vertex_count if any_heavy else 0, -1, np.int32)
    owner = np.full(t_count if any_heavy else 0, -1, np.int32)
    heavy_start = np.zeros(n_heavy + 1, np.int64)
    heavy_len = np.zeros(n_heavy, np.int64)
    if any_heavy:
        h = 0
        for v in range(vertex_count):
            if offsets[v + 1] - offsets[v] > heavy_valence:
                heavy_id[v] = h
                h += 1

    # triangle scores, kept up to date by adding each (light) vertex's score change
    tscore = np.empty(t_count, np.float32)
    tbits = tscore.view(np.int32)
    for t in range(t_count):
        a = tris[t, 0]
        b = tris[t, 1]
        c = tris[t, 2]
        s = np.float32(0.0)
        if any_heavy and heavy_id[a] >= 0:
            owner[t] = heavy_id[a]
        else:
            s += vscore[a]
        if b != a:
            if any_heavy and heavy_id[b] >= 0:
                if owner[t] < 0:
                    owner[t] = heavy_id[b]
            else:
                s += vscore[b]
        if c != a and c != b:
            if any_heavy and heavy_id[c] >= 0:
                if owner[t] < 0:
                    owner[t] = heavy_id[c]
            else:
                s += vscore[c]
        tscore[t] = s
    pool = np.empty(t_count if any_heavy else 0, np.int32)
    pool_pos = np.full(t_count if any_heavy else 0, -1, np.int64)
    n_light = t_count
    if any_heavy:
        for t in range(t_count):
            if owner[t] >= 0:
                heavy_len[owner[t]] += 1
                n_light -= 1
        for h in range(n_heavy):
            heavy_start[h + 1] = heavy_start[h] + heavy_len[h]
        fill = heavy_start[:n_heavy].copy()
        for t in range(t_count):
            h = owner[t]
            if h >= 0:
                pool[fill[h]] = t
                fill[h] += 1
        for h in range(n_heavy):
            indexed_heapify(tscore, pool, pool_pos, heavy_start[h], heavy_len[h])

    # fallback max-heap over (score, triangle) of the other triangles; rebuilt from the
    # current scores when the stale entries fill it
    cap = 2 * n_light + 16
    hkeys = np.empty(cap, np.float32)
    hids = np.empty(cap, np.int32)
    hn = _rebuild_heap(tscore, owner, any_heavy, hkeys, hids)

    lru = np.full((2, cache_size + 3), -1, np.int32)  # the cache and its next state
    lru_pos = np.zeros((2, cache_size + 3), np.int32)
    cur = np.uintp(0)
    cache_n = 0
    candidates = np.empty(cache_size * (max_light + 1) + 3, np.int32)
    dirty = np.zeros(vertex_count, np.bool_)
    dirty_list = np.empty(vertex_count, np.int32)
    n_dirty = 0

    best = -1
    for step in range(t_count):
        if best < 0:
            # nothing in the cache has live triangles: the best triangle overall.  Re-key the
            # triangles of vertices that left the cache since the last time (the only
            # out-of-cache triangles whose score changed), then drop stale entries.
            rebuilt = False
            for k in range(n_dirty):
                v = dirty_list[k]
                dirty[v] = False
                if rebuilt:
                    continue
                base = offsets[v]
                for j in range(base, base + live[v]):
                    tri = adj[j] >> 2
                    if any_heavy and owner[tri] >= 0:
                        continue
                    if hn == cap:
                        hn = _rebuild_heap(tscore, owner, any_heavy, hkeys, hids)
                        rebuilt = True
                        break
                    hn = keyed_push(hkeys, hids, hn, tscore[tri], tri)
            n_dirty = 0
            while hn > 0 and hkeys[0] != tscore[hids[0]]:
                hn = keyed_pop(hkeys, hids, hn)
            best_score = np.float32(0.0)
            if hn > 0:
                best = hids[0]
                best_score = hkeys[0]
            for h in range(n_heavy):
                if heavy_len[h] > 0:
                    tri = pool[heavy_start[h]]
                    sc = _true_score(tris, tscore, vscore, heavy_id, tri)
                    if best < 0 or sc > best_score or (sc == best_score and tri < best):
                        best_score = sc
                        best = tri
        t = best
        ut = np.uintp(t)
        a = tris[ut, 0]
        b = tris[ut, 1]
        c = tris[ut, 2]
        if want_order:
            order[step] = t
        if want_out:
            out[step, 0] = a
            out[step, 1] = b
            out[step, 2] = c
        if any_heavy and owner[t] >= 0:
            h = owner[t]
            heavy_len[h] = indexed_remove(tscore, pool, pool_pos, heavy_start[h], heavy_len[h], t)
        tscore[ut] = -1.0  # added: below every live score, so stale wherever it is keyed

        # distinct vertices of t in triangle order (x2, x1 repeat x0 when missing); drop t
        # from their live lists (a heavy vertex's list is not kept, only its count)
        nv = 1
        x1 = a
        x2 = a
        if b != a:
            x1 = b
            nv = 2
            if c != a and c != b:
                x2 = c
                nv = 3
        elif c != a:
            x1 = c
            nv = 2
        for q in range(nv):
            v = a if q == 0 else (x1 if q == 1 else x2)
            corner = q if q == 0 or (q == 1 and b != a) else 2
            uv = np.uintp(v)
            n = live[uv] - 1
            live[uv] = n
            if n == 0:
                vscore[uv] = -1.0  # finished: no triangle left to score
            if not (any_heavy and heavy_id[v] >= 0):
                j = pos[ut, corner]
                last = offsets[uv] + n
                moved = adj[np.uintp(last)]
                adj[np.uintp(j)] = moved
                pos[np.uintp(moved >> 2), np.uintp(moved & 3)] = j
                adj[np.uintp(last)] = 4 * t + corner
                pos[ut, corner] = last

        # LRU update: t's vertices to the front, then the old order.  Only vertices with
        # live triangles are listed, each with its place in the whole LRU (finished vertices
        # still hold places: a listed vertex moves back by the vertices put in front of it).
        # In the same pass, in the new order, re-score each listed vertex and the triangles
        # that use it, and collect the triangles of cached vertices (candidates).
        nxt = np.uintp(1) - cur
        m = 0
        n_cand = 0
        first_out = -1
        in_front = 0  # vertices of t met so far in the old order
        for k in range(nv + cache_n):
            if k < nv:
                v = a if k == 0 else (x1 if k == 1 else x2)
                if live[np.uintp(v)] == 0:
                    continue
                p = k
            else:
                i = np.uintp(k - nv)
                v = lru[cur, i]
                if v == a or v == x1 or v == x2:
                    in_front += 1
                    continue
                p = nv + lru_pos[cur, i] - in_front
            lru[nxt, np.uintp(m)] = v
            lru_pos[nxt, np.uintp(m)] = p
            uv = np.uintp(v)
            n = live[uv]
            cached = p < cache_size
            if not cached and first_out < 0:
                first_out = m
            m += 1
            s = _score(table, p if cached else -1, n, boost_scale, boost_power)
            diff = s - vscore[uv]
            vscore[uv] = s
            if any_heavy and heavy_id[v] >= 0:
                h = heavy_id[v]
                if cached and heavy_len[h] > 0:
                    candidates[n_cand] = pool[heavy_start[h]]
                    n_cand += 1
                continue
            base = offsets[uv]
            for j in range(base, base + n):
                tri = adj[np.uintp(j)] >> 2
                tscore[np.uintp(tri)] += diff
                if cached:
                    candidates[np.uintp(n_cand)] = tri
                    n_cand += 1
                if any_heavy and owner[tri] >= 0:
                    h = owner[tri]
                    indexed_update(tscore, pool, pool_pos, heavy_start[h], heavy_len[h], tri)
            if not cached and not dirty[v]:
                # fell out of the cache: the fallback heap hears about it when next needed
                dirty[v] = True
                dirty_list[n_dirty] = v
                n_dirty += 1
        cur = nxt
        cache_n = m if first_out < 0 else first_out

        # next: the best triangle that uses a cached vertex (ties: lowest index)
        best = -1
        if any_heavy:
            best_score = np.float32(-1e30)
            for k in range(n_cand):
                tri = candidates[k]
                sc = tscore[tri]
                if owner[tri] >= 0:
                    sc = _true_score(tris, tscore, vscore, heavy_id, tri)
                if sc > best_score or (sc == best_score and tri < best):
                    best_score = sc
                    best = tri
        elif n_cand > 0:
            # live triangles score above 0, so a float's bits order like its value: one
            # integer key (score bits, then the complement of the index) compares both
            best_key = np.int64(-1)
            for k in range(n_cand):
                tri = candidates[np.uintp(k)]
                best_key = max(best_key, (np.int64(tbits[np.uintp(tri)]) << 32) | (0xFFFFFFFF - np.int64(tri)))
            best = 0xFFFFFFFF - (best_key & 0xFFFFFFFF)


def forsyth_order(triangles, vertex_count: int | None = None, cache_size: int = DEFAULT_CACHE_SIZE, *,
                  cache_decay_power: float = CACHE_DECAY_POWER, last_tri_score: float = LAST_TRI_SCORE,
                  valence_boost_scale: float = VALENCE_BOOST_SCALE,
                  valence_boost_power: float = VALENCE_BOOST_POWER) -> np.ndarray:
    """The Forsyth triangle order: ``(T,)`` int64 indices into ``triangles``."""
    tris, vcount = prepare(triangles, vertex_count)
    order = np.empty(tris.shape[0], np.int64)
    _run(tris, vcount, cache_size, cache_decay_power, last_tri_score, valence_boost_scale,
         valence_boost_power, order, no_rows(tris))
    return order


def _run(tris, vcount, cache_size, decay, last, scale, power, order, out):
    size = check_cache_size("forsyth", cache_size, minimum=4)
    if tris.shape[0]:
        offsets, entries, pos = vertex_corners(tris, vcount)
        table = _score_table(size, float(decay), float(last), float(scale), float(power))
        _forsyth(tris, offsets, entries, pos, table, float(scale), float(power), HEAVY_VALENCE, order, out)


def optimize_forsyth(triangles, vertex_count: int | None = None, *, cache_size: int = DEFAULT_CACHE_SIZE,
                     cache_decay_power: float = CACHE_DECAY_POWER, last_tri_score: float = LAST_TRI_SCORE,
                     valence_boost_scale: float = VALENCE_BOOST_SCALE,
                     valence_boost_power: float = VALENCE_BOOST_POWER) -> np.ndarray:
    """Reorder triangles with Forsyth's linear-speed vertex cache optimisation (2006).

    Parameters
    ----------
    triangles : (T, 3) or (3T,) integer array
        Index buffer.
    vertex_count : int, optional
        Size of the vertex buffer (default: largest index + 1).
    cache_size : int
        Simulated LRU cache size; the article uses 32 ("universally good for a wide range of
        cache sizes").
    cache_decay_power, last_tri_score, valence_boost_scale, valence_boost_power : float
        The article's constants (1.5, 0.75, 2.0, 0.5).

    Returns
    -------
    (T, 3) array of the input's integer type
        The same triangles, each with its vertex order kept, in the new order.
    """
    tris, vcount = prepare(triangles, vertex_count)
    out = np.empty_like(tris)
    _run(tris, vcount, cache_size, cache_decay_power, last_tri_score, valence_boost_scale,
         valence_boost_power, NO_ORDER, out)
    return in_caller_type(triangles, out)
