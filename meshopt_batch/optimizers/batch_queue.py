"""The compiled driver of the batch optimizer: Algorithm 2's loop on an exact bucket queue.

Every priority of eq. 1 (paper 001) is an integer and every change a signed integer delta, so
the queue is one doubly linked list per integer priority (newest at the head) plus a bitmap of
the non-empty buckets, 64 per word.  Increase-key, decrease-key and delete are O(1); finding
the top scans the bitmap down from the last top (:func:`_bq_top`).  Its pop order is the key
order of :mod:`.batch` (priority, then most recent change), i.e. identical to the Fibonacci
heap of :mod:`.fibheap_reference`, so both drivers give the same triangle order.

:func:`run_fast` is the loop: take the top, ask :func:`~.batch_select.select_triangle` what to
emit, then either :func:`~.batch_steps.emit_triangle` or :func:`~.batch_steps.close_batch`,
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

from .batch_layout import P_KR, W_OUTD, W_OUTF
from .batch_select import select_triangle
from .batch_steps import close_batch, emit_triangle

__all__ = ["run_fast"]

_ONE = np.uint64(1)


@njit(cache=True, inline="always")
def _bit_set(bits, b):
    bits[b >> 6] |= _ONE << np.uint64(b & 63)


@njit(cache=True, inline="always")
def _bit_clear(bits, b):
    bits[b >> 6] &= ~(_ONE << np.uint64(b & 63))


@njit(cache=True)
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


@njit(cache=True)
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


@njit(cache=True)
def _bq_unlink(head, bits, nxt, prv, prio, base, f):
    n = nxt[f]
    p = prv[f]
    if p >= 0:
        nxt[p] = n
    else:
        b = prio[f] - base
        head[b] = n
        if n < 0:
            _bit_clear(bits, b)
    if n >= 0:
        prv[n] = p


@njit(cache=True)
def _bq_push_front(head, bits, nxt, prv, prio, base, f):
    b = prio[f] - base
    h = head[b]
    nxt[f] = h
    prv[f] = -1
    if h >= 0:
        prv[h] = f
    else:
        _bit_set(bits, b)
    head[b] = f
    return b


@njit(cache=True)
def _bq_regrow(head, base, lo, hi):
    """A bigger bucket array covering priorities ``lo..hi`` and the current range."""
    old_lo = base
    old_hi = base + head.shape[0] - 1
    new_lo = min(lo, old_lo)
    new_hi = max(hi, old_hi)
    span = new_hi - new_lo + 1
    new_lo -= span // 2
    new_hi += span // 2
    out = np.full(new_hi - new_lo + 1, -1, np.int64)
    shift = old_lo - new_lo
    for b in range(head.shape[0]):
        out[b + shift] = head[b]
    bits = np.zeros((out.shape[0] >> 6) + 1, np.uint64)
    for b in range(out.shape[0]):
        if out[b] >= 0:
            _bit_set(bits, b)
    return out, bits, new_lo


@njit(cache=True)
def run_fast(tris, prio, P, ST, W, scalars, pv, table, snap_sc, snap_pv, snap_tab,
              voff, vfaces, aoff, adj, rs, inrs, bf, flist, bfsq, bstarts, gmark, gval, rspos,
              comp, cinfo, cls_off, cls_comps, cls_ptr):
    t_count = tris.shape[0]
    nxt = np.empty(t_count, np.int64)
    prv = np.empty(t_count, np.int64)
    lo = prio.min()
    hi = prio.max()
    margin = 3 * abs(P[P_KR]) + 64
    base = lo - margin
    head = np.full(hi - lo + 2 * margin + 1, -1, np.int64)
    bits = np.zeros((head.shape[0] >> 6) + 1, np.uint64)
    top = -1
    # insertion from the last triangle to the first: stamps grow, so triangle 0 is newest
    for t in range(t_count - 1, -1, -1):
        b = _bq_push_front(head, bits, nxt, prv, prio, base, t)
        if b > top:
            top = b
    remaining = t_count
    while remaining > 0:
        top = _bq_top(bits, top)
        t, rot = select_triangle(tris, head[top], prio, P, ST, W, scalars, pv, table, snap_sc,
                                 snap_pv, snap_tab, voff, vfaces, rs, inrs, gmark, gval, rspos,
                                 cinfo, cls_off, cls_comps, cls_ptr)
        if t >= 0:
            _bq_unlink(head, bits, nxt, prv, prio, base, t)
            remaining -= 1
            n = emit_triangle(tris, t, rot, P, ST, W, scalars, pv, table, voff, vfaces, aoff,
                              adj, rs, inrs, bf, flist, bfsq, rspos, comp, cinfo)
        else:
            n = close_batch(tris, P, ST, W, scalars, voff, vfaces, aoff, adj, rs, inrs, bf,
                            bstarts, rspos)
        for j in range(n):
            f = W[j, W_OUTF]
            _bq_unlink(head, bits, nxt, prv, prio, base, f)
            prio[f] += W[j, W_OUTD]
            pb = prio[f] - base
            if pb < 0 or pb >= head.shape[0]:
                new_head, new_bits, new_base = _bq_regrow(head, base, prio[f], prio[f])
                top += base - new_base
                head = new_head
                bits = new_bits
                base = new_base
            b = _bq_push_front(head, bits, nxt, prv, prio, base, f)
            if b > top:
                top = b
