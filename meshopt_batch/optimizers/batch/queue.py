"""The compiled driver of the batch optimizer: Algorithm 2's loop on an exact bucket queue.

Every priority of eq. 1 (paper 001) is an integer and every change a signed integer delta, so
the queue is one doubly linked list per integer priority (newest at the head) plus a bitmap of
the non-empty buckets, 64 per word.  Increase-key, decrease-key and delete are O(1); finding
the top scans the bitmap down from the last top (:func:`_bq_top`).  Its pop order is the key
order of :mod:`.batch_optimizer` (priority, then most recent change), i.e. identical to the Fibonacci
heap of :mod:`.fibheap_reference`, so both drivers give the same triangle order.

:func:`run_fast` is the loop: take the top, ask :func:`~.select.select_triangle` what to
emit, then either :func:`~.steps.emit_triangle` or :func:`~.steps.close_batch`,
and apply the step's list of priority changes to the queue.  The bucket array grows when a
priority leaves its range (:func:`_bq_regrow`).

References
----------
Kerbl, B., Kenzel, M., Ivanchenko, E., Schmalstieg, D., Steinberger, M. (2018).  Revisiting
the Vertex Cache: Understanding and Optimizing Vertex Processing on the modern GPU.  Proc. ACM
Comput. Graph. Interact. Tech. 1(2).  (Paper 001: Algorithm 2, sec. 4.)
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .aux import aux_after_emit
from .layout import (
    B_EMITTED,
    F_ACC,
    F_BITS,
    F_NEXT,
    F_PREV,
    F_PRIO,
    P_HEAVY,
    P_KR,
    ST_NTOUCH,
    ST_STEP,
)
from .select import select_triangle
from .steps import close_batch, emit_triangle

__all__ = ["run_fast"]

_ONE = np.uint64(1)


@njit(cache=True, inline="always")
def _bit_set(bits, b):
    bits[b >> 6] |= _ONE << np.uint64(b & 63)


@njit(cache=True, inline="always")
def _bit_clear(bits, b):
    bits[b >> 6] &= ~(_ONE << np.uint64(b & 63))


@njit(cache=True, _nrt=False)
def _highest_bit(word):
    """Index of the highest set bit of a non-zero uint64 (binary search: 32, 16, ..., 1)."""
    r = 0
    s = 32
    while s > 0:
        if word >> np.uint64(s):
            word >>= np.uint64(s)
            r += s
        s >>= 1
    return r


@njit(cache=True, _nrt=False)
def _bq_top(bits, top):
    """Highest non-empty bucket at or below ``top`` (one bit per bucket, 64 per word)."""
    w = top >> 6
    k = top & 63
    word = bits[w]
    if k < 63:
        word &= (_ONE << np.uint64(k + 1)) - _ONE
    while word == 0:
        w -= 1
        word = bits[w]
    return (w << 6) + _highest_bit(word)


@njit(cache=True, _nrt=False)
def _bq_unlink(head, bits, F, base, f):
    n = F[f, F_NEXT]
    p = F[f, F_PREV]
    if p >= 0:
        F[p, F_NEXT] = n
    else:
        b = F[f, F_PRIO] - base
        head[b] = n
        if n < 0:
            _bit_clear(bits, b)
    if n >= 0:
        F[n, F_PREV] = p


@njit(cache=True, _nrt=False)
def _bq_push_front(head, bits, F, base, f):
    b = F[f, F_PRIO] - base
    h = head[b]
    F[f, F_NEXT] = h
    F[f, F_PREV] = -1
    if h >= 0:
        F[h, F_PREV] = f
    else:
        _bit_set(bits, b)
    head[b] = f
    return b


@njit(cache=True, nogil=True)
def _bq_regrow(head, base, lo, hi):
    """A bigger bucket array covering priorities ``lo..hi`` and the current range."""
    old_lo = base
    old_hi = base + head.shape[0] - 1
    new_lo = min(lo, old_lo)
    new_hi = max(hi, old_hi)
    span = new_hi - new_lo + 1
    new_lo -= span // 2
    new_hi += span // 2
    out = np.full(new_hi - new_lo + 1, -1, np.int32)
    shift = old_lo - new_lo
    for b in range(head.shape[0]):
        out[b + shift] = head[b]
    bits = np.zeros((out.shape[0] >> 6) + 1, np.uint64)
    for b in range(out.shape[0]):
        if out[b] >= 0:
            _bit_set(bits, b)
    return out, bits, new_lo


#: Slots of the driver's loop state ``Q`` (int64): bucket base priority, last top bucket,
#: faces left, next change to apply (-1: none pending), the priority a regrow must cover.
Q_BASE, Q_TOP, Q_LEFT, Q_NEXT, Q_NEED, Q_LEN = range(6)


@njit(cache=True, _nrt=False)
def _drive(tris, P, ST, F, scalars, pv, table, snap_sc, snap_pv, snap_tab, voff, vfaces, nbr,
           opp, xoff, xadj, rs, vstate, bf, flist, bfsq, bstarts, gmark, gval, rspos, comp, cinfo, cls_off,
           cls_comps, cls_ptr, order, rots, touched, cand, dlist, ring, aux, head, bits, Q):
    """The loop proper, free of reference counting (no allocation: ``_nrt=False``).  Returns 0
    when every face is emitted, 1 when a priority left the bucket range (``Q[Q_NEED]``): the
    caller grows the buckets and calls again, and the pending changes resume at ``Q[Q_NEXT]``."""
    base = Q[Q_BASE]
    top = Q[Q_TOP]
    remaining = Q[Q_LEFT]
    j0 = Q[Q_NEXT]
    while remaining > 0 or j0 >= 0:
        if j0 < 0:
            top = _bq_top(bits, top)
            t, rot = select_triangle(tris, np.int64(head[top]), P, ST, F, scalars, pv, table,
                                     snap_sc, snap_pv, snap_tab, voff, vfaces, vstate, gmark, gval,
                                     cinfo, cls_off, cls_comps, cls_ptr, cand)
            if t >= 0:
                _bq_unlink(head, bits, F, base, t)
                remaining -= 1
                emit_triangle(tris, t, rot, P, ST, F, scalars, pv, table, voff, vfaces, nbr,
                              opp, xoff, xadj, rs, vstate, bf, flist, bfsq, rspos, comp, cinfo, order, rots,
                              touched, cand, dlist, ring)
                aux_after_emit(tris, ST, F, aux[0], aux[1], aux[2], aux[3], aux[4], aux[5], aux[6], voff,
                               vfaces, P[P_HEAVY], touched, order, rots)
            else:
                close_batch(tris, P, ST, F, scalars, voff, vfaces, nbr, xoff, xadj, rs, vstate, bf,
                            bstarts, rspos, touched, cand, dlist)
            j0 = 0
        for j in range(j0, ST[ST_NTOUCH]):
            f = touched[j]
            d = F[f, F_ACC]
            if d == 0 or F[f, F_BITS] & B_EMITTED != 0:
                continue
            p = np.int64(F[f, F_PRIO]) + d
            if p - base < 0 or p - base >= head.shape[0]:
                Q[Q_BASE] = base
                Q[Q_TOP] = top
                Q[Q_LEFT] = remaining
                Q[Q_NEXT] = j
                Q[Q_NEED] = p
                return 1
            _bq_unlink(head, bits, F, base, f)
            F[f, F_PRIO] = p
            b = _bq_push_front(head, bits, F, base, f)
            if b > top:
                top = b
        ST[ST_NTOUCH] = 0
        ST[ST_STEP] += 1
        j0 = -1
    Q[Q_LEFT] = 0
    Q[Q_NEXT] = -1
    return 0


@njit(cache=True, nogil=True)
def run_fast(tris, P, ST, F, scalars, pv, table, snap_sc, snap_pv, snap_tab, voff, vfaces, nbr,
             opp, xoff, xadj, rs, vstate, bf, flist, bfsq, bstarts, gmark, gval, rspos, comp, cinfo, cls_off,
             cls_comps, cls_ptr, order, rots, touched, cand, dlist, ring, aux):
    """Algorithm 2's loop: every step's changes are applied in one pass over the touched list
    (unlink, change, push front), in the order the step first touched the faces."""
    t_count = tris.shape[0]
    lo = F[0, F_PRIO]
    hi = lo
    for t in range(t_count):
        lo = min(lo, F[t, F_PRIO])
        hi = max(hi, F[t, F_PRIO])
    margin = 3 * abs(P[P_KR]) + 64
    base = np.int64(lo) - margin
    head = np.full(hi - lo + 2 * margin + 1, -1, np.int32)
    bits = np.zeros((head.shape[0] >> 6) + 1, np.uint64)
    top = -1
    # insertion from the last triangle to the first: stamps grow, so triangle 0 is newest
    for t in range(t_count - 1, -1, -1):
        b = _bq_push_front(head, bits, F, base, t)
        if b > top:
            top = b
    Q = np.empty(Q_LEN, np.int64)
    Q[Q_BASE] = base
    Q[Q_TOP] = top
    Q[Q_LEFT] = t_count
    Q[Q_NEXT] = -1
    while _drive(tris, P, ST, F, scalars, pv, table, snap_sc, snap_pv, snap_tab, voff, vfaces,
                 nbr, opp, xoff, xadj, rs, vstate, bf, flist, bfsq, bstarts, gmark, gval, rspos, comp, cinfo,
                 cls_off, cls_comps, cls_ptr, order, rots, touched, cand, dlist, ring, aux, head, bits, Q):
        head, bits, new_base = _bq_regrow(head, Q[Q_BASE], Q[Q_NEED], Q[Q_NEED])
        Q[Q_TOP] += Q[Q_BASE] - new_base
        Q[Q_BASE] = new_base
