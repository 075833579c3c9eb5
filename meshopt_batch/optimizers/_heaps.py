"""Compiled binary max-heaps over triangles ranked by score, shared by the greedy optimizers.

Both order items by *higher score first, lower triangle index on ties*, so the top is the
same triangle a full scan for the best score (first index among equals) would find.

* **Keyed heap** (``keyed_*``): ``keys[i]`` / ``ids[i]`` pairs with the score stored at push
  time.  Entries are never updated in place: a caller pushes a triangle again when its
  score changed and skips, when popping, entries whose key no longer matches (lazy
  deletion).
* **Indexed heap** (``indexed_*``): a slice ``pool[start:start + n]`` of triangle ids ranked
  by an external ``score`` array, with ``pos[id]`` the id's place in ``pool``.  After
  ``score[id]`` changes, :func:`indexed_update` restores the order in O(log n); an id is
  removed in O(log n) by :func:`indexed_remove`.  Several heaps can share one pool.
"""

from __future__ import annotations

from numba import njit

__all__ = [
    "keyed_push",
    "keyed_pop",
    "keyed_heapify",
    "indexed_heapify",
    "indexed_update",
    "indexed_remove",
]


@njit(cache=True, inline="always")
def _ranks_above(key_a, id_a, key_b, id_b):
    return key_a > key_b or (key_a == key_b and id_a < id_b)


@njit(cache=True, nogil=True)
def _keyed_sift_down(keys, ids, n, i):
    key = keys[i]
    tid = ids[i]
    while True:
        child = 2 * i + 1
        if child >= n:
            break
        if child + 1 < n and _ranks_above(keys[child + 1], ids[child + 1], keys[child], ids[child]):
            child += 1
        if _ranks_above(keys[child], ids[child], key, tid):
            keys[i] = keys[child]
            ids[i] = ids[child]
            i = child
        else:
            break
    keys[i] = key
    ids[i] = tid


@njit(cache=True, nogil=True)
def keyed_push(keys, ids, n, key, tid):
    """Push ``(key, tid)`` on a keyed heap of ``n`` entries; returns the new size."""
    i = n
    while i > 0:
        parent = (i - 1) >> 1
        if _ranks_above(key, tid, keys[parent], ids[parent]):
            keys[i] = keys[parent]
            ids[i] = ids[parent]
            i = parent
        else:
            break
    keys[i] = key
    ids[i] = tid
    return n + 1


@njit(cache=True, nogil=True)
def keyed_pop(keys, ids, n):
    """Drop the top of a keyed heap of ``n`` entries; returns the new size."""
    n -= 1
    if n > 0:
        keys[0] = keys[n]
        ids[0] = ids[n]
        _keyed_sift_down(keys, ids, n, 0)
    return n


@njit(cache=True, nogil=True)
def keyed_heapify(keys, ids, n):
    """Order the first ``n`` entries into a keyed heap (Floyd, O(n))."""
    for i in range(n // 2 - 1, -1, -1):
        _keyed_sift_down(keys, ids, n, i)


@njit(cache=True, inline="always")
def _id_above(score, a, b):
    return score[a] > score[b] or (score[a] == score[b] and a < b)


@njit(cache=True, nogil=True)
def _indexed_sift_up(score, pool, pos, start, i):
    x = pool[start + i]
    while i > 0:
        parent = (i - 1) >> 1
        y = pool[start + parent]
        if not _id_above(score, x, y):
            break
        pool[start + i] = y
        pos[y] = start + i
        i = parent
    pool[start + i] = x
    pos[x] = start + i


@njit(cache=True, nogil=True)
def _indexed_sift_down(score, pool, pos, start, n, i):
    x = pool[start + i]
    while True:
        child = 2 * i + 1
        if child >= n:
            break
        c = pool[start + child]
        if child + 1 < n:
            d = pool[start + child + 1]
            if _id_above(score, d, c):
                child += 1
                c = d
        if not _id_above(score, c, x):
            break
        pool[start + i] = c
        pos[c] = start + i
        i = child
    pool[start + i] = x
    pos[x] = start + i


@njit(cache=True, nogil=True)
def indexed_heapify(score, pool, pos, start, n):
    """Order ``pool[start:start + n]`` into an indexed heap and fill ``pos`` for its ids."""
    for i in range(n):
        pos[pool[start + i]] = start + i
    for i in range(n // 2 - 1, -1, -1):
        _indexed_sift_down(score, pool, pos, start, n, i)


@njit(cache=True, nogil=True)
def indexed_update(score, pool, pos, start, n, tid):
    """Restore the heap after ``score[tid]`` changed (``tid`` is in it)."""
    i = pos[tid] - start
    _indexed_sift_up(score, pool, pos, start, i)
    _indexed_sift_down(score, pool, pos, start, n, pos[tid] - start)


@njit(cache=True, nogil=True)
def indexed_remove(score, pool, pos, start, n, tid):
    """Take ``tid`` out of the heap of ``n`` ids; returns the new size."""
    i = pos[tid] - start
    n -= 1
    pos[tid] = -1
    if i < n:
        last = pool[start + n]
        pool[start + i] = last
        pos[last] = start + i
        _indexed_sift_up(score, pool, pos, start, i)
        _indexed_sift_down(score, pool, pos, start, n, pos[last] - start)
    return n
