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
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..topology import vertex_faces
from ._util import check_cache_size, gather, prepare

__all__ = ["optimize_forsyth", "forsyth_order", "DEFAULT_CACHE_SIZE"]

#: Cache size of the article.
DEFAULT_CACHE_SIZE = 32
CACHE_DECAY_POWER = 1.5
LAST_TRI_SCORE = 0.75
VALENCE_BOOST_SCALE = 2.0
VALENCE_BOOST_POWER = 0.5
_BOOST_TABLE_SIZE = 256


@njit(cache=True, inline="always")
def _heap_less(key_a, id_a, key_b, id_b):
    """Max-heap order: higher score first, lower triangle index on ties."""
    return key_a > key_b or (key_a == key_b and id_a < id_b)


@njit(cache=True)
def _heap_push(keys, ids, n, key, tid):
    i = n
    while i > 0:
        parent = (i - 1) >> 1
        if _heap_less(key, tid, keys[parent], ids[parent]):
            keys[i] = keys[parent]
            ids[i] = ids[parent]
            i = parent
        else:
            break
    keys[i] = key
    ids[i] = tid
    return n + 1


@njit(cache=True)
def _heap_sift_down(keys, ids, n, i):
    key = keys[i]
    tid = ids[i]
    while True:
        child = 2 * i + 1
        if child >= n:
            break
        if child + 1 < n and _heap_less(keys[child + 1], ids[child + 1], keys[child], ids[child]):
            child += 1
        if _heap_less(keys[child], ids[child], key, tid):
            keys[i] = keys[child]
            ids[i] = ids[child]
            i = child
        else:
            break
    keys[i] = key
    ids[i] = tid


@njit(cache=True)
def _heap_pop(keys, ids, n):
    n -= 1
    if n > 0:
        keys[0] = keys[n]
        ids[0] = ids[n]
        _heap_sift_down(keys, ids, n, 0)
    return n


@njit(cache=True, inline="always")
def _tri_score(tris, vscore, t):
    """Sum of the scores of the triangle's distinct vertices (fixed summation order)."""
    a = tris[t, 0]
    b = tris[t, 1]
    c = tris[t, 2]
    s = vscore[a]
    if b != a:
        s += vscore[b]
    if c != a and c != b:
        s += vscore[c]
    return s


@njit(cache=True)
def _forsyth(tris, offsets, faces, vertex_count, cache_size, decay_power, last_tri_score,
             boost_scale, boost_power):
    t_count = tris.shape[0]
    order = np.empty(t_count, np.int64)

    # score table: row p + 1 for cache position p (row 0: out of cache), column = remaining
    # triangles; a vertex with nothing left scores -1 (never chosen)
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

    # live adjacency: the first live[v] entries of adj[offsets[v]:] are v's remaining triangles
    adj = faces.astype(np.int32)
    live = np.empty(vertex_count, np.int32)
    vscore = np.empty(vertex_count, np.float32)
    max_valence = 0
    for v in range(vertex_count):
        n = offsets[v + 1] - offsets[v]
        live[v] = n
        vscore[v] = _score(table, -1, n, boost_scale, boost_power)
        if n > max_valence:
            max_valence = n
    # triangle scores, kept up to date by adding each vertex's score change
    tscore = np.empty(t_count, np.float32)
    for t in range(t_count):
        tscore[t] = _tri_score(tris, vscore, t)
    emitted = np.zeros(t_count, np.bool_)

    # fallback max-heap over (score, triangle): starts with every triangle (heapify)
    cap = t_count + 16
    hkeys = np.empty(cap, np.float32)
    hids = np.empty(cap, np.int64)
    for t in range(t_count):
        hkeys[t] = tscore[t]
        hids[t] = t
    hn = t_count
    for i in range(hn // 2 - 1, -1, -1):
        _heap_sift_down(hkeys, hids, hn, i)

    cache = np.full(cache_size + 3, -1, np.int64)
    new_cache = np.full(cache_size + 3, -1, np.int64)
    cache_n = 0
    tv = np.empty(3, np.int64)
    candidates = np.empty(min(3 * t_count, cache_size * max_valence) + 3, np.int32)
    dirty = np.zeros(vertex_count, np.bool_)
    dirty_list = np.empty(vertex_count, np.int64)
    n_dirty = 0

    best = -1
    for step in range(t_count):
        if best < 0:
            # nothing in the cache has live triangles: the best triangle overall.  Re-key the
            # triangles of vertices that left the cache since the last time (the only
            # out-of-cache triangles whose score changed), then drop stale entries.
            for k in range(n_dirty):
                v = dirty_list[k]
                dirty[v] = False
                base = offsets[v]
                for j in range(base, base + live[v]):
                    tri = adj[j]
                    if hn == hkeys.shape[0]:
                        grown_k = np.empty(2 * hn, np.float32)
                        grown_i = np.empty(2 * hn, np.int64)
                        grown_k[:hn] = hkeys[:hn]
                        grown_i[:hn] = hids[:hn]
                        hkeys = grown_k
                        hids = grown_i
                    hn = _heap_push(hkeys, hids, hn, tscore[tri], tri)
            n_dirty = 0
            while hn > 0:
                t = hids[0]
                key = hkeys[0]
                hn = _heap_pop(hkeys, hids, hn)
                if not emitted[t] and key == tscore[t]:
                    best = t
                    break
        t = best
        emitted[t] = True
        order[step] = t

        # distinct vertices of t, in triangle order; drop t from their live lists
        nv = 0
        a = tris[t, 0]
        b = tris[t, 1]
        for i in range(3):
            v = tris[t, i]
            if (i == 1 and v == a) or (i == 2 and (v == a or v == b)):
                continue
            tv[nv] = v
            nv += 1
            base = offsets[v]
            last = base + live[v] - 1
            for j in range(base, last + 1):
                if adj[j] == t:
                    adj[j] = adj[last]
                    adj[last] = t
                    break
            live[v] -= 1
        if nv < 3:
            tv[2] = tv[0]
            if nv < 2:
                tv[1] = tv[0]

        # LRU update: t's vertices to the front, then the old order
        m = 0
        for q in range(nv):
            new_cache[m] = tv[q]
            m += 1
        t0 = tv[0]
        t1 = tv[1]
        t2 = tv[2]
        for i in range(cache_n):
            u = cache[i]
            if u != t0 and u != t1 and u != t2:
                new_cache[m] = u
                m += 1

        # re-score the vertices whose cache position or valence may have changed and the
        # triangles that use them; collect the triangles of cached vertices (candidates)
        n_cand = 0
        for i in range(m):
            v = new_cache[i]
            n = live[v]
            if n == 0:
                vscore[v] = -1.0  # finished: no triangle left to score
                continue
            if i < cache_size:
                if n < _BOOST_TABLE_SIZE:
                    s = table[i + 1, n]
                else:
                    s = _score(table, i, n, boost_scale, boost_power)
            else:
                s = _score(table, -1, n, boost_scale, boost_power)
            diff = s - vscore[v]
            vscore[v] = s
            base = offsets[v]
            if i < cache_size:
                for j in range(base, base + n):
                    tri = adj[j]
                    tscore[tri] += diff
                    candidates[n_cand] = tri
                    n_cand += 1
            else:
                # fell out of the cache: the fallback heap hears about it when next needed
                for j in range(base, base + n):
                    tscore[adj[j]] += diff
                if not dirty[v]:
                    dirty[v] = True
                    dirty_list[n_dirty] = v
                    n_dirty += 1
        cache_n = min(m, cache_size)
        cache, new_cache = new_cache, cache

        # next: the best triangle that uses a cached vertex (ties: lowest index)
        best = -1
        best_score = np.float32(-1e30)
        for k in range(n_cand):
            tri = candidates[k]
            sc = tscore[tri]
            if sc > best_score or (sc == best_score and tri < best):
                best_score = sc
                best = tri
    return order


@njit(cache=True, inline="always")
def _score(table, position, remaining, boost_scale, boost_power):
    """Vertex score for a cache position (-1: not cached) and remaining triangle count."""
    if remaining < _BOOST_TABLE_SIZE:
        return table[position + 1, remaining]
    return table[position + 1, 1] - boost_scale + boost_scale * remaining ** (-boost_power)


def forsyth_order(triangles, vertex_count: int | None = None, cache_size: int = DEFAULT_CACHE_SIZE, *,
                  cache_decay_power: float = CACHE_DECAY_POWER, last_tri_score: float = LAST_TRI_SCORE,
                  valence_boost_scale: float = VALENCE_BOOST_SCALE,
                  valence_boost_power: float = VALENCE_BOOST_POWER) -> np.ndarray:
    """The Forsyth triangle order: ``(T,)`` int64 indices into ``triangles``."""
    tris, vcount = prepare(triangles, vertex_count)
    return _order(tris, vcount, cache_size, cache_decay_power, last_tri_score, valence_boost_scale,
                  valence_boost_power)


def _order(tris, vcount, cache_size, decay, last, scale, power):
    size = check_cache_size("forsyth", cache_size, minimum=4)
    if tris.shape[0] == 0:
        return np.zeros(0, np.int64)
    offsets, faces = vertex_faces(tris, vcount)
    return _forsyth(tris, offsets, faces, vcount, size, float(decay), float(last), float(scale), float(power))


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
    order = _order(tris, vcount, cache_size, cache_decay_power, last_tri_score, valence_boost_scale,
                   valence_boost_power)
    return gather(triangles, tris, order)
