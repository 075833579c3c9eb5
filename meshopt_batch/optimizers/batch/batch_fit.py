"""Can a triangle join the current batch?  Algorithm 1 of paper 001 asked about one triangle.

The batch optimizer (:mod:`.batch_optimizer`) emits a triangle only when the batch predictor says it
fits in the current batch.  :func:`choose_rotation` answers that question for every cyclic
rotation of the triangle (winding preserved) and returns the one that shades the fewest new
vertices, or -1 when the triangle would start a new batch.

The answer comes from the very memory modules of :mod:`meshopt_batch.model.prediction`: the triangle is
pushed through the live memory state and the state is rolled back (:func:`_trial_added`).  For
look-back retention without the 16-bit block rule the lookups are pure, so the count is read
off the per-vertex positions without touching anything (:func:`_lookback_added`, same answer).

This module is one of the seams of the optimizer's cost: every emitted triangle and every
lookahead candidate asks it once per rotation.

References
----------
Kerbl, B., Kenzel, M., Ivanchenko, E., Schmalstieg, D., Steinberger, M. (2018).  Revisiting
the Vertex Cache: Understanding and Optimizing Vertex Processing on the modern GPU.  Proc. ACM
Comput. Graph. Interact. Tech. 1(2).  (Paper 001: Algorithm 1, sec. 3.)
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ...model.prediction import (
    KIND_FIFO,
    KIND_LOOKBACK,
    KIND_LOOKBACK_DX,
    KIND_LRU,
    S_MEMORY_START,
    direct_lookup,
    direct_touch,
    dx_lookup,
    dx_touch,
    fifo_lookup,
    fifo_touch,
    lookback_lookup,
    lookback_touch,
    lru_lookup,
    lru_touch,
    note_block,
)
from .layout import (
    P_BOUND16,
    P_KIND,
    P_MAXSIZE,
    P_MAXUNIQ,
    P_MEMSIZE,
    P_PVW,
    P_ROTATE,
    ST_EMITTED,
    ST_SIZE,
    ST_UNIQ,
)

__all__ = ["mem_lookup", "mem_touch", "choose_rotation", "still_reusable"]

# The memory module of :mod:`meshopt_batch.model.prediction`, selected by kind code.  (Dispatching on an
# integer instead of passing the compiled functions as arguments keeps these functions in
# numba's on-disk cache.)


@njit(cache=True, inline="always")
def mem_lookup(kind, size, scalars, pv, table, v, p):
    """The memory module's lookup of vertex ``v`` at index position ``p``."""
    if kind == KIND_LOOKBACK:
        return lookback_lookup(size, scalars, pv, table, v, p)
    if kind == KIND_LOOKBACK_DX:
        return dx_lookup(size, scalars, pv, table, v, p)
    if kind == KIND_FIFO:
        return fifo_lookup(size, scalars, pv, table, v, p)
    if kind == KIND_LRU:
        return lru_lookup(size, scalars, pv, table, v, p)
    return direct_lookup(size, scalars, pv, table, v, p)


@njit(cache=True, inline="always")
def mem_touch(kind, size, scalars, pv, table, v, p, hit):
    """The memory module's update after vertex ``v`` at position ``p`` (``hit``: reused)."""
    if kind == KIND_LOOKBACK:
        lookback_touch(size, scalars, pv, table, v, p, hit)
    elif kind == KIND_LOOKBACK_DX:
        dx_touch(size, scalars, pv, table, v, p, hit)
    elif kind == KIND_FIFO:
        fifo_touch(size, scalars, pv, table, v, p, hit)
    elif kind == KIND_LRU:
        lru_touch(size, scalars, pv, table, v, p, hit)
    else:
        direct_touch(size, scalars, pv, table, v, p, hit)


@njit(cache=True, _nrt=False)
def _trial_added(tris, t, rot, P, ST, scalars, pv, table, snap_sc, snap_pv, snap_tab):
    """Algorithm 1 on triangle ``t`` (rotated by ``rot``) against the live batch, rolled back.

    Returns the number of vertices it would shade, or -1 when it starts a new batch.
    """
    msize = P[P_MEMSIZE]
    bound16 = P[P_BOUND16] != 0
    maxs = P[P_MAXSIZE]
    maxu = P[P_MAXUNIQ]
    pvw = P[P_PVW]
    for k in range(scalars.shape[0]):
        snap_sc[k] = scalars[k]
    for k in range(table.shape[0]):
        snap_tab[k] = table[k]
    for i in range(3):
        v = np.int64(tris[t, i])
        for r in range(pvw):
            snap_pv[i * 3 + r] = pv[v * pvw + r]
    pos = 3 * ST[ST_EMITTED]
    size = ST[ST_SIZE]
    uniq = ST[ST_UNIQ]
    added = 0
    ok = True
    for i in range(3):
        v = np.int64(tris[t, (i + rot) % 3])
        note_block(bound16, scalars, v, pos + i)
        hit = mem_lookup(P[P_KIND], msize, scalars, pv, table, v, pos + i)
        if not hit:
            added += 1
        if (maxu > 0 and uniq + added > maxu) or (maxs > 0 and size + i > maxs):
            ok = False
            break
        mem_touch(P[P_KIND], msize, scalars, pv, table, v, pos + i, hit)
    # roll back (reverse order so a repeated vertex gets its first saved value)
    for i in range(2, -1, -1):
        v = np.int64(tris[t, i])
        for r in range(pvw):
            pv[v * pvw + r] = snap_pv[i * 3 + r]
    for k in range(table.shape[0]):
        table[k] = snap_tab[k]
    for k in range(scalars.shape[0]):
        scalars[k] = snap_sc[k]
    return added if ok else -1


@njit(cache=True, _nrt=False)
def _lookback_added(tris, t, r, pos, batch_start, window, pv):
    """Vertices triangle ``t`` (rotated by ``r``) would shade under look-back retention.

    Look-back lookups do not depend on each other except for a vertex repeated inside the
    triangle, so no state has to be touched and rolled back (same answer as :func:`_trial_added`).
    """
    added = 0
    for i in range(3):
        v = tris[t, (i + r) % 3]
        dup = False
        for j in range(i):
            if tris[t, (j + r) % 3] == v and i - j <= window:
                dup = True
        if dup:
            continue
        last = pv[v]
        if not (last >= batch_start and pos + i - last <= window):
            added += 1
    return added


@njit(cache=True, _nrt=False)
def choose_rotation(tris, t, P, ST, scalars, pv, table, snap_sc, snap_pv, snap_tab):
    """Rotation (0, 1, 2) of ``t`` that fits the batch with the fewest new vertices, or -1."""
    best = -1
    best_added = 4
    nrot = 3 if P[P_ROTATE] != 0 else 1
    if P[P_KIND] == KIND_LOOKBACK and P[P_BOUND16] == 0:
        maxs = P[P_MAXSIZE]
        maxu = P[P_MAXUNIQ]
        if maxs > 0 and ST[ST_SIZE] + 2 > maxs:
            return -1
        pos = 3 * ST[ST_EMITTED]
        bs = scalars[S_MEMORY_START]
        for r in range(nrot):
            a = _lookback_added(tris, t, r, pos, bs, P[P_MEMSIZE], pv)
            if (maxu == 0 or ST[ST_UNIQ] + a <= maxu) and a < best_added:
                best = r
                best_added = a
                if a == 0:
                    break
        return best
    for r in range(nrot):
        a = _trial_added(tris, t, r, P, ST, scalars, pv, table, snap_sc, snap_pv, snap_tab)
        if a >= 0 and a < best_added:
            best = r
            best_added = a
            if a == 0:
                break
    return best


@njit(cache=True, _nrt=False)
def still_reusable(P, scalars, pv, table, v, p):
    """Would the memory module reuse vertex ``v`` at index position ``p``?  The ``R`` term's
    test (lines 26-31); under the 16-bit rule the block switches so far have emptied the memory
    already (:func:`meshopt_batch.model.prediction.note_block`)."""
    return mem_lookup(P[P_KIND], P[P_MEMSIZE], scalars, pv, table, v, p)
