"""Auxiliary memories: the other profiles of a target, whose reuse adds to eq. 1's ``R`` term.

For a target of several profiles (:mod:`meshopt_batch.model.targets`) the batch optimizer forms its
batches for one *primary* profile (the strictest batch rule, see :mod:`..portable.portable_optimizer`) and tracks
every other profile of the target as an *auxiliary memory*: that profile's own Algorithm 1
(paper 001) run on the same index stream, with its own batches and its own memory module,
advanced after every emitted triangle.  A vertex that auxiliary memory ``m`` would reuse at the
next index position adds ``AX[m, AX_WEIGHT]`` to the priority of each of its remaining faces;
when ``m`` forgets it (an LRU or FIFO eviction, the look-back window passing it, a batch of
``m`` ending) the weight is taken back.  So eq. 1 becomes

    p = k_r R_primary + sum_m w_m R_m + k_v V + k_d D + k_n N,

and every change is, as before, an integer delta accumulated in the face's row
(:func:`~.steps.touch`); the queue driver applies it with the primary's changes.

An auxiliary batch ends where Algorithm 1 ends it: before a triangle that would exceed its
``MAX_SIZE`` or ``MAX_UNIQUES``, tried on a copy of its state (:func:`_fits`), or at once when
the batch is full by size (AMD's 384 indices, llvmpipe's 1023: the next triangle cannot
fit, so the next choice already sees no reuse there).

Layout (int64 unless said): ``AX[m]`` the parameters (kind code, memory size, batch bounds,
weight, ints per vertex); ``AS[m]`` the memory scalars of :mod:`meshopt_batch.model.prediction` followed
by the batch counters; ``apv[m]`` the per-vertex array (int32), ``atab[m]`` the LRU table or
the FIFO's ring of inserted vertices; ``alist[m]`` the vertices listed as reusable since the
batch began (int32); ``avs[m, v]`` (uint8) bit 1: reusable, bit 2: listed.

References
----------
Kerbl, B., Kenzel, M., Ivanchenko, E., Schmalstieg, D., Steinberger, M. (2018).  Revisiting
the Vertex Cache: Understanding and Optimizing Vertex Processing on the modern GPU.  Proc. ACM
Comput. Graph. Interact. Tech. 1(2).  (Paper 001: Algorithm 1, Algorithm 2, eq. 1.)
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ...model.prediction import (
    _KIND_CODES,
    KIND_FIFO,
    KIND_LOOKBACK,
    KIND_LOOKBACK_DX,
    KIND_LRU,
    S_BLOCK,
    S_LEN,
    S_LRU_COUNT,
    S_MEMORY_START,
    S_MISSES,
    mem_new_batch,
)
from .batch_fit import mem_lookup, mem_touch
from .layout import B_EMITTED, F_BITS, ST_EMITTED, ST_NTOUCH, ST_STEP
from .steps import is_heavy, touch

__all__ = ["AX_LEN", "AS_LEN", "aux_after_emit", "new_aux", "no_aux"]

AX_KIND, AX_MEMSIZE, AX_MAXSIZE, AX_MAXUNIQ, AX_WEIGHT, AX_PVW, AX_LEN = range(7)
AS_SIZE, AS_UNIQ, AS_LISTED = S_LEN, S_LEN + 1, S_LEN + 2
AS_LEN = S_LEN + 3
_REUSABLE, _LISTED = 1, 2
#: The Direct3D look-back reaches 44 index positions back (:func:`meshopt_batch.model.prediction.dx_reuse`).
_DX_REACH = 44


def no_aux():
    """Empty auxiliary arrays: a single-profile run (every loop over them does nothing)."""
    return (np.zeros((0, AX_LEN), np.int64), np.zeros((0, AS_LEN), np.int64), np.zeros((0, 1), np.int32),
            np.zeros((0, 1), np.int64), np.zeros((0, 1), np.int32), np.zeros((0, 1), np.uint8),
            np.zeros(S_LEN + 16, np.int64))


def new_aux(profiles, weights, vertex_count: int):
    """The auxiliary arrays for ``profiles`` (each a :class:`~meshopt_batch.model.profiles.Profile`
    whose triangle order matters) with integer ``weights`` (the ``w_m`` of eq. 1 above).

    A direct-mapped memory (llvmpipe) is tracked as a look-back over its whole batch: the
    reuse it offers once vertices are numbered so that a batch's vertices do not share slots
    (first-use numbering comes close).  The 2^16 block rule of a ``+16bit`` profile is not
    tracked (the primary's boundary fix handles NVIDIA's).
    """
    nv = max(vertex_count, 1)
    rows = []
    for prof, weight in zip(profiles, weights, strict=True):
        kind, size = prof.memory, prof.memory_size
        if kind == "direct":
            kind, size = "lookback", prof.max_size or prof.max_uniques or (1 << 30)
        code = _KIND_CODES[kind]
        rows.append((code, size, prof.max_size, prof.max_uniques, int(weight), 3 if code == KIND_LOOKBACK_DX else 1))
    m = len(rows)
    ax = np.array(rows, np.int64).reshape(m, AX_LEN)
    pvw = int(ax[:, AX_PVW].max()) if m else 1
    tab = max([r[1] for r in rows if r[0] in (KIND_FIFO, KIND_LRU)], default=1)
    as_ = np.zeros((m, AS_LEN), np.int64)
    as_[:, S_BLOCK] = -1
    atab = np.full((m, tab), -1, np.int64)
    return (ax, as_, np.full((m, nv * pvw), -1, np.int32), atab, np.zeros((m, nv), np.int32),
            np.zeros((m, nv), np.uint8), np.zeros(S_LEN + tab + 16, np.int64))


@njit(cache=True, _nrt=False)
def _forget(m, v, w, avs, voff, vfaces, F, touched, step, nt):
    avs[m, v] &= ~_REUSABLE
    for q in range(voff[v], voff[v + 1]):
        f = vfaces[q]
        if F[f, F_BITS] & B_EMITTED == 0:
            nt = touch(F, touched, f, -w, step, nt)
    return nt


@njit(cache=True, _nrt=False)
def _enter(m, v, w, listing, sc, alist, avs, voff, vfaces, F, touched, step, nt):
    avs[m, v] |= _REUSABLE
    if listing and avs[m, v] & _LISTED == 0:
        avs[m, v] |= _LISTED
        alist[m, sc[AS_LISTED]] = v
        sc[AS_LISTED] += 1
    for q in range(voff[v], voff[v + 1]):
        f = vfaces[q]
        if F[f, F_BITS] & B_EMITTED == 0:
            nt = touch(F, touched, f, w, step, nt)
    return nt


@njit(cache=True, _nrt=False)
def _new_batch(m, p, w, sc, alist, avs, voff, vfaces, heavy, F, touched, step, nt):
    """Algorithm 1's batch boundary for memory ``m`` at index position ``p``."""
    for j in range(sc[AS_LISTED]):
        v = alist[m, j]
        if avs[m, v] & _REUSABLE != 0 and not is_heavy(voff, heavy, v):
            nt = _forget(m, v, w, avs, voff, vfaces, F, touched, step, nt)
        avs[m, v] = 0
    sc[AS_LISTED] = 0
    mem_new_batch(sc, p)
    sc[AS_SIZE] = 0
    sc[AS_UNIQ] = 0
    return nt


@njit(cache=True, _nrt=False)
def _fits(tris, t, rot, pos, kind, size, maxs, maxu, pvw, sc, pv, tab, snap):
    """Algorithm 1's test of triangle ``t`` against memory ``m``'s batch, on a copy of its state."""
    if maxu == 0 or maxu >= maxs > 0:
        return maxs == 0 or sc[AS_SIZE] + 2 <= maxs  # the size bound decides (see module doc)
    for k in range(S_LEN):
        snap[k] = sc[k]
    for k in range(tab.shape[0]):
        snap[S_LEN + k] = tab[k]
    base = S_LEN + tab.shape[0]
    for i in range(3):
        v = np.int64(tris[t, i])
        for r in range(pvw):
            snap[base + 3 * i + r] = pv[v * pvw + r]
    added = 0
    ok = True
    for i in range(3):
        v = np.int64(tris[t, (i + rot) % 3])
        hit = mem_lookup(kind, size, sc, pv, tab, v, pos + i)
        if not hit:
            added += 1
        if (maxu > 0 and sc[AS_UNIQ] + added > maxu) or (maxs > 0 and sc[AS_SIZE] + i > maxs):
            ok = False
            break
        mem_touch(kind, size, sc, pv, tab, v, pos + i, hit)
    for i in range(2, -1, -1):
        v = np.int64(tris[t, i])
        for r in range(pvw):
            pv[v * pvw + r] = snap[base + 3 * i + r]
    for k in range(tab.shape[0]):
        tab[k] = snap[S_LEN + k]
    for k in range(S_LEN):
        sc[k] = snap[k]
    return ok


@njit(cache=True, _nrt=False)
def _advance(m, tris, t, rot, pos, AX, AS, apv, atab, alist, avs, snap, voff, vfaces, heavy, F, touched,
             order, rots, step, nt):
    """Memory ``m`` after triangle ``t`` (rotated by ``rot``) at index position ``pos``."""
    kind = AX[m, AX_KIND]
    size = AX[m, AX_MEMSIZE]
    maxs = AX[m, AX_MAXSIZE]
    maxu = AX[m, AX_MAXUNIQ]
    w = AX[m, AX_WEIGHT]
    pvw = AX[m, AX_PVW]
    batched = maxs > 0 or maxu > 0
    sc = AS[m]
    pv = apv[m]
    tab = atab[m]
    if batched and sc[AS_SIZE] > 0 and not _fits(tris, t, rot, pos, kind, size, maxs, maxu, pvw, sc, pv,
                                                  tab, snap):
        nt = _new_batch(m, pos, w, sc, alist, avs, voff, vfaces, heavy, F, touched, step, nt)
    pushed0 = -1
    pushed1 = -1
    pushed2 = -1
    added = 0
    for i in range(3):
        v = np.int64(tris[t, (i + rot) % 3])
        hit = mem_lookup(kind, size, sc, pv, tab, v, pos + i)
        out = -1
        if not hit:
            added += 1
            if kind == KIND_FIFO:
                slot = sc[S_MISSES] % size
                out = tab[slot]
                tab[slot] = v
            elif kind == KIND_LRU and sc[S_LRU_COUNT] == size:
                out = tab[size - 1]
        if i == 0:
            pushed0 = out
        elif i == 1:
            pushed1 = out
        else:
            pushed2 = out
        mem_touch(kind, size, sc, pv, tab, v, pos + i, hit)
    sc[AS_SIZE] += 3
    sc[AS_UNIQ] += added
    a = tris[t, 0]
    b = tris[t, 1]
    for i in range(3):
        v = tris[t, i]
        if (i == 1 and v == a) or (i == 2 and (v == a or v == b)) or is_heavy(voff, heavy, v):
            continue
        if avs[m, v] & _REUSABLE == 0:
            nt = _enter(m, v, w, batched, sc, alist, avs, voff, vfaces, F, touched, step, nt)
    nxt = pos + 3
    if kind == KIND_LOOKBACK or kind == KIND_LOOKBACK_DX:
        # plain look-back forgets the positions that left the window; the Direct3D rule is not
        # monotone in the distance, so its whole reach is asked again
        lo = nxt - _DX_REACH - 1 if kind == KIND_LOOKBACK_DX else pos - size
        hi = nxt if kind == KIND_LOOKBACK_DX else pos + 3 - size
        for p in range(max(lo, sc[S_MEMORY_START]), max(hi, 0)):
            q = p // 3
            v = np.int64(tris[order[q], (p % 3 + rots[q]) % 3])
            if is_heavy(voff, heavy, v):
                continue
            now = mem_lookup(kind, size, sc, pv, tab, v, nxt)
            if avs[m, v] & _REUSABLE != 0 and not now:
                nt = _forget(m, v, w, avs, voff, vfaces, F, touched, step, nt)
            elif avs[m, v] & _REUSABLE == 0 and now:
                nt = _enter(m, v, w, batched, sc, alist, avs, voff, vfaces, F, touched, step, nt)
    else:
        for k in range(3):
            v = pushed0 if k == 0 else (pushed1 if k == 1 else pushed2)
            if (v >= 0 and avs[m, v] & _REUSABLE != 0 and not is_heavy(voff, heavy, v)
                    and not mem_lookup(kind, size, sc, pv, tab, v, nxt)):
                nt = _forget(m, v, w, avs, voff, vfaces, F, touched, step, nt)
    if maxs > 0 and sc[AS_SIZE] + 2 > maxs:
        nt = _new_batch(m, nxt, w, sc, alist, avs, voff, vfaces, heavy, F, touched, step, nt)
    return nt


@njit(cache=True, _nrt=False)
def aux_after_emit(tris, ST, F, AX, AS, apv, atab, alist, avs, snap, voff, vfaces, heavy, touched, order, rots):
    """Advance every auxiliary memory past the triangle just emitted (the last one in
    ``order``); the priority changes join the step's list in ``touched``."""
    if AX.shape[0] == 0:
        return
    k = ST[ST_EMITTED] - 1
    t = order[k]
    rot = rots[k]
    step = ST[ST_STEP]
    nt = ST[ST_NTOUCH]
    for m in range(AX.shape[0]):
        nt = _advance(m, tris, t, rot, 3 * k, AX, AS, apv, atab, alist, avs, snap, voff, vfaces, heavy, F,
                      touched, order, rots, step, nt)
    ST[ST_NTOUCH] = nt
