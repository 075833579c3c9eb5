"""Algorithm 2's priority updates: emitting a triangle and closing a batch (paper 001).

:func:`emit_triangle` (Algorithm 2, lines 14-31) appends a triangle to the current batch and
updates the priorities of eq. 1 around it: ``R`` for the vertices that enter the reusable set,
``V`` for the valence it consumes, ``D`` for the dual-graph distances to it, and the ``R``
(and, with ``n_mode="count"``, ``N``) terms of the vertices the memory module forgets.
:func:`close_batch` (lines 33-41) ends the batch: ``R`` and ``D`` terms are removed and ``N``
is added to the faces next to the batch.

A step does not touch the queue.  It accumulates one merged change per face
(:func:`add_change`) and :func:`flush_changes` writes them, in order of first touch, as the
list ``(W[:n, W_OUTF], W[:n, W_OUTD])`` the queue driver applies (:mod:`.batch_queue`,
:mod:`.fibheap_reference`).  The step also keeps the lookahead's candidate list current (faces
with exactly two reusable vertices, :func:`change_reusable_count`).

The ``D`` term's region and cap are documented choices of :mod:`.batch` (``d_cap``,
``d_region``): :func:`_distance_terms_ring` (the one-ring, default) and
:func:`_distance_terms_ball` (dual-graph ball).

References
----------
Kerbl, B., Kenzel, M., Ivanchenko, E., Schmalstieg, D., Steinberger, M. (2018).  Revisiting
the Vertex Cache: Understanding and Optimizing Vertex Processing on the modern GPU.  Proc. ACM
Comput. Graph. Interact. Tech. 1(2).  (Paper 001: Algorithm 2, eq. 1-2, sec. 4.)
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..reuse import KIND_LOOKBACK, S_BATCH_START, mem_new_batch, note_block
from .batch_fit import mem_lookup, mem_touch, still_reusable
from .batch_layout import (N_COUNT, P_BATCHED, P_BOUND16, P_DBALL, P_DCAP, P_KD, P_KIND, P_KN, P_KR,
                           P_KV, P_MEMSIZE, P_NEDGE, P_NMODE, ST_BATCHES, ST_BF, ST_CLOSES, ST_DL,
                           ST_EMITTED, ST_FSTAMP, ST_INVOC, ST_NCAND, ST_NTOUCH, ST_PREV_SC,
                           ST_PREV_SIZE, ST_PREV_UNIQ, ST_REOPEN, ST_RS, ST_SIZE, ST_STEP, ST_UNIQ,
                           W_ACC, W_ACCMARK, W_CAND, W_CPOS, W_DIST, W_DL, W_DLIN, W_EMITTED,
                           W_FDIST, W_FMARK, W_NFLAG, W_ORDER, W_OUTD, W_OUTF, W_RCOUNT, W_ROT,
                           W_TOUCHED)

__all__ = ["add_change", "change_reusable_count", "flush_changes", "emit_triangle", "close_batch"]


@njit(cache=True)
def add_change(W, ST, f, d):
    """Accumulate a priority change for face ``f`` in the current step."""
    if W[f, W_ACCMARK] != ST[ST_STEP]:
        W[f, W_ACCMARK] = ST[ST_STEP]
        W[f, W_ACC] = 0
        W[ST[ST_NTOUCH], W_TOUCHED] = f
        ST[ST_NTOUCH] += 1
    W[f, W_ACC] += d


@njit(cache=True)
def _drop_candidate(W, ST, f):
    """Take face ``f`` off the lookahead's candidate list (swap with the last entry)."""
    k = W[f, W_CPOS]
    last = W[ST[ST_NCAND] - 1, W_CAND]
    W[k, W_CAND] = last
    W[last, W_CPOS] = k
    W[f, W_CPOS] = -1
    ST[ST_NCAND] -= 1


@njit(cache=True)
def change_reusable_count(W, ST, f, delta):
    """Change the count of reusable vertices of face ``f``; keep the list of faces that
    reuse exactly two (the lookahead's candidates) current."""
    old = W[f, W_RCOUNT]
    new = old + delta
    W[f, W_RCOUNT] = new
    if new == 2:
        W[ST[ST_NCAND], W_CAND] = f
        W[f, W_CPOS] = ST[ST_NCAND]
        ST[ST_NCAND] += 1
    elif old == 2:
        _drop_candidate(W, ST, f)


@njit(cache=True)
def flush_changes(W, ST):
    """Turn the step's accumulated changes into the output list; returns its length."""
    n = 0
    for k in range(ST[ST_NTOUCH]):
        f = W[k, W_TOUCHED]
        d = W[f, W_ACC]
        if d != 0 and W[f, W_EMITTED] == 0:
            W[n, W_OUTF] = f
            W[n, W_OUTD] = d
            n += 1
    ST[ST_NTOUCH] = 0
    ST[ST_STEP] += 1
    return n


@njit(cache=True)
def _distance_terms_ring(tris, t, P, ST, W, voff, vfaces, aoff, adj, flist, bfsq):
    """Lines 21-24: dual-graph distance from ``t`` to the faces sharing one of its vertices."""
    kd = P[P_KD]
    cap = P[P_DCAP]
    ST[ST_FSTAMP] += 1
    s = ST[ST_FSTAMP]
    a = tris[t, 0]
    b = tris[t, 1]
    n = 0
    for i in range(3):
        v = tris[t, i]
        if (i == 1 and v == a) or (i == 2 and (v == a or v == b)):
            continue
        for k in range(voff[v], voff[v + 1]):
            f = vfaces[k]
            if W[f, W_FMARK] != s:
                W[f, W_FMARK] = s
                W[f, W_FDIST] = -1
                flist[n] = f
                n += 1
    W[t, W_FDIST] = 0
    bfsq[0] = t
    head = 0
    tail = 1
    while head < tail:
        g = bfsq[head]
        head += 1
        dg = W[g, W_FDIST] + 1
        for k in range(aoff[g], aoff[g + 1]):
            h = adj[k]
            if W[h, W_FMARK] == s and W[h, W_FDIST] < 0:
                W[h, W_FDIST] = dg
                bfsq[tail] = h
                tail += 1
    for i in range(n):
        f = flist[i]
        if f != t and W[f, W_EMITTED] == 0 and W[f, W_FDIST] > 0:
            dist = W[f, W_FDIST]
            if cap > 0:
                # faces beyond the one-ring count as distance ``cap``: D(f) - cap * |batch|
                d = kd * (min(dist, cap) - cap)
            else:
                d = kd * dist
            add_change(W, ST, f, d)
            W[f, W_DIST] += d
            if W[f, W_DLIN] == 0:
                W[f, W_DLIN] = 1
                W[ST[ST_DL], W_DL] = f
                ST[ST_DL] += 1


@njit(cache=True)
def _distance_terms_ball(t, P, ST, W, aoff, adj, bfsq):
    """D over the dual-graph ball of radius ``cap - 1`` around ``t`` (``d_region="ball"``)."""
    kd = P[P_KD]
    cap = P[P_DCAP]
    ST[ST_FSTAMP] += 1
    s = ST[ST_FSTAMP]
    W[t, W_FMARK] = s
    W[t, W_FDIST] = 0
    bfsq[0] = t
    head = 0
    tail = 1
    while head < tail:
        g = bfsq[head]
        head += 1
        dg = W[g, W_FDIST] + 1
        if dg >= cap:
            continue
        for k in range(aoff[g], aoff[g + 1]):
            h = adj[k]
            if W[h, W_FMARK] != s:
                W[h, W_FMARK] = s
                W[h, W_FDIST] = dg
                bfsq[tail] = h
                tail += 1
                if W[h, W_EMITTED] == 0:
                    d = kd * (dg - cap)
                    add_change(W, ST, h, d)
                    W[h, W_DIST] += d
                    if W[h, W_DLIN] == 0:
                        W[h, W_DLIN] = 1
                        W[ST[ST_DL], W_DL] = h
                        ST[ST_DL] += 1


@njit(cache=True)
def emit_triangle(tris, t, rot, P, ST, W, scalars, pv, table, voff, vfaces, aoff, adj,
                  rs, inrs, bf, flist, bfsq, rspos, comp, cinfo):
    """Add ``t`` to the batch (Algorithm 2, lines 14-31); returns the number of changes."""
    kr = P[P_KR]
    kv = P[P_KV]
    kn = P[P_KN]
    msize = P[P_MEMSIZE]
    bound16 = P[P_BOUND16] != 0
    k = ST[ST_EMITTED]
    pos = 3 * k
    W[k, W_ORDER] = t
    W[k, W_ROT] = rot
    W[t, W_EMITTED] = 1
    cinfo[comp[t], 3] = 1
    if W[t, W_CPOS] >= 0:
        _drop_candidate(W, ST, t)
    added = 0
    for i in range(3):
        v = np.int64(tris[t, (i + rot) % 3])
        hit = note_block(bound16, scalars, v) and mem_lookup(P[P_KIND], msize, scalars, pv, table, v, pos + i)
        if not hit:
            added += 1
        mem_touch(P[P_KIND], msize, scalars, pv, table, v, pos + i, hit)
    ST[ST_SIZE] += 3
    ST[ST_UNIQ] += added
    ST[ST_INVOC] += added
    ST[ST_EMITTED] = k + 1
    if P[P_BATCHED] != 0:
        bf[ST[ST_BF]] = t
        ST[ST_BF] += 1
    a = tris[t, 0]
    b = tris[t, 1]
    # lines 17-20: R for vertices entering the reusable set, V for the removed face
    for i in range(3):
        v = tris[t, i]
        if (i == 1 and v == a) or (i == 2 and (v == a or v == b)):
            continue
        entering = inrs[v] == 0
        d = kr - kv if entering else -kv
        for q in range(voff[v], voff[v + 1]):
            f = vfaces[q]
            if W[f, W_EMITTED] == 0:
                add_change(W, ST, f, d)
                if entering:
                    change_reusable_count(W, ST, f, 1)
    # lines 21-24: D
    if P[P_KD] != 0:
        if P[P_DBALL] != 0:
            _distance_terms_ball(t, P, ST, W, aoff, adj, bfsq)
        else:
            _distance_terms_ring(tris, t, P, ST, W, voff, vfaces, aoff, adj, flist, bfsq)
    # line 25
    for i in range(3):
        v = tris[t, i]
        if inrs[v] == 0:
            inrs[v] = 1
            rspos[v] = ST[ST_RS]
            rs[ST[ST_RS]] = v
            ST[ST_RS] += 1
    # lines 26-31: forgotten vertices (in the order of the reusable list)
    nxt = pos + 3
    count_mode = P[P_NMODE] == N_COUNT
    d = -kr + (kn if count_mode else 0)
    if P[P_KIND] == KIND_LOOKBACK and P[P_BOUND16] == 0:
        # look-back: only the vertices at the three positions that just left the window
        window = P[P_MEMSIZE]
        n_out = 0
        for p in range(max(pos - window, scalars[S_BATCH_START]), max(pos + 3 - window, 0)):
            k = p // 3
            v = tris[W[k, W_ORDER], (p % 3 + W[k, W_ROT]) % 3]
            if inrs[v] != 0 and not still_reusable(P, scalars, pv, table, v, nxt):
                dup = False
                for j in range(n_out):
                    if flist[j] == v:
                        dup = True
                if not dup:
                    flist[n_out] = v
                    n_out += 1
        # sort by list position (at most three)
        for a_ in range(n_out):
            for b_ in range(a_ + 1, n_out):
                if rspos[flist[b_]] < rspos[flist[a_]]:
                    tmp = flist[a_]
                    flist[a_] = flist[b_]
                    flist[b_] = tmp
        for j in range(n_out):
            v = flist[j]
            inrs[v] = 0
            for q in range(voff[v], voff[v + 1]):
                f = vfaces[q]
                if W[f, W_EMITTED] == 0:
                    add_change(W, ST, f, d)
                    change_reusable_count(W, ST, f, -1)
        if ST[ST_RS] > 4 * window + 16:
            _compact_reusable_list(rs, rspos, inrs, ST)
    else:
        keep = 0
        for j in range(ST[ST_RS]):
            v = rs[j]
            if inrs[v] == 0 or rspos[v] != j:
                continue
            if still_reusable(P, scalars, pv, table, v, nxt):
                rs[keep] = v
                rspos[v] = keep
                keep += 1
            else:
                inrs[v] = 0
                for q in range(voff[v], voff[v + 1]):
                    f = vfaces[q]
                    if W[f, W_EMITTED] == 0:
                        add_change(W, ST, f, d)
                        change_reusable_count(W, ST, f, -1)
        ST[ST_RS] = keep
    return flush_changes(W, ST)


@njit(cache=True)
def _compact_reusable_list(rs, rspos, inrs, ST):
    """Drop the entries of forgotten vertices from the reusable list, keeping its order."""
    keep = 0
    for j in range(ST[ST_RS]):
        v = rs[j]
        if inrs[v] != 0 and rspos[v] == j:
            rs[keep] = v
            rspos[v] = keep
            keep += 1
    ST[ST_RS] = keep


@njit(cache=True)
def close_batch(tris, P, ST, W, scalars, voff, vfaces, aoff, adj, rs, inrs, bf, bstarts, rspos):
    """Batch boundary (Algorithm 2, lines 33-41); returns the number of changes."""
    kr = P[P_KR]
    kn = P[P_KN]
    count_mode = P[P_NMODE] == N_COUNT
    d = -kr + (kn if count_mode else 0)
    for j in range(ST[ST_RS]):
        v = rs[j]
        if inrs[v] == 0 or rspos[v] != j:
            continue
        inrs[v] = 0
        for q in range(voff[v], voff[v + 1]):
            f = vfaces[q]
            if W[f, W_EMITTED] == 0:
                add_change(W, ST, f, d)
                change_reusable_count(W, ST, f, -1)
    ST[ST_RS] = 0
    for j in range(ST[ST_DL]):
        f = W[j, W_DL]
        if W[f, W_EMITTED] == 0:
            add_change(W, ST, f, -W[f, W_DIST])
        W[f, W_DIST] = 0
        W[f, W_DLIN] = 0
    ST[ST_DL] = 0
    if not count_mode and kn != 0:
        for j in range(ST[ST_BF]):
            g = bf[j]
            if P[P_NEDGE] != 0:
                for q in range(aoff[g], aoff[g + 1]):
                    f = adj[q]
                    if W[f, W_EMITTED] == 0 and W[f, W_NFLAG] == 0:
                        W[f, W_NFLAG] = 1
                        add_change(W, ST, f, kn)
            else:
                for i in range(3):
                    v = tris[g, i]
                    for q in range(voff[v], voff[v + 1]):
                        f = vfaces[q]
                        if W[f, W_EMITTED] == 0 and W[f, W_NFLAG] == 0:
                            W[f, W_NFLAG] = 1
                            add_change(W, ST, f, kn)
    ST[ST_BF] = 0
    # the closed batch's state, in case the next triangle still fits it (see select_triangle)
    ST[ST_REOPEN] = 1
    ST[ST_PREV_SIZE] = ST[ST_SIZE]
    ST[ST_PREV_UNIQ] = ST[ST_UNIQ]
    for k in range(scalars.shape[0]):
        ST[ST_PREV_SC + k] = scalars[k]
    mem_new_batch(scalars, 3 * ST[ST_EMITTED])
    ST[ST_SIZE] = 0
    ST[ST_UNIQ] = 0
    ST[ST_CLOSES] += 1
    bstarts[ST[ST_BATCHES]] = ST[ST_EMITTED]
    ST[ST_BATCHES] += 1
    return flush_changes(W, ST)
