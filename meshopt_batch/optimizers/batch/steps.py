"""Algorithm 2's priority updates: emitting a triangle and closing a batch (paper 001).

:func:`emit_triangle` (Algorithm 2, lines 14-31) appends a triangle to the current batch and
updates the priorities of eq. 1 around it: ``R`` for the vertices that enter the reusable set,
``V`` for the valence it consumes, ``D`` for the dual-graph distances to it, and the ``R``
(and, with ``n_mode="count"``, ``N``) terms of the vertices the memory module forgets.
:func:`close_batch` (lines 33-41) ends the batch: ``R`` and ``D`` terms are removed and ``N``
is added to the faces next to the batch.

A step does not touch the queue.  It accumulates one merged change per face
(:func:`add_change`) in the face's row and lists the faces in order of first touch; the queue
driver applies the list in that order and clears it (:mod:`.queue`; the Python reference
driver of :mod:`.fibheap_reference` reads it through :func:`take_changes`).  The step also
keeps the lookahead's candidates listed (faces with exactly two reusable vertices,
:func:`count_reusable`).

Vertices with more than ``P_HEAVY`` faces take no part in eq. 1 (see :mod:`.batch_optimizer`): their
faces are skipped by every loop here, so each step costs O(1) around them.

The ``D`` term's region and cap are documented choices of :mod:`.batch_optimizer` (``d_cap``,
``d_region``): :func:`_distance_terms_ring` (the one-ring, default) and
:func:`_distance_terms_ball` (dual-graph ball).

The step functions are compiled without numba's reference counting (``_nrt=False``: they
allocate nothing), so calling them with some thirty arrays per step costs no atomic
increments; the driver loop of :mod:`.queue` is compiled the same way.

References
----------
Kerbl, B., Kenzel, M., Ivanchenko, E., Schmalstieg, D., Steinberger, M. (2018).  Revisiting
the Vertex Cache: Understanding and Optimizing Vertex Processing on the modern GPU.  Proc. ACM
Comput. Graph. Interact. Tech. 1(2).  (Paper 001: Algorithm 2, eq. 1-2, sec. 4.)
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ...model.prediction import (
    KIND_FIFO,
    KIND_LOOKBACK,
    KIND_LRU,
    S_LRU_COUNT,
    S_MEMORY_START,
    S_MISSES,
    mem_new_batch,
    note_block,
)
from .batch_fit import mem_lookup, mem_touch, still_reusable
from .layout import (
    B_CAND,
    B_DLIST,
    B_EMITTED,
    B_NFLAG,
    D_SHIFT,
    F_ACC,
    F_BITS,
    F_DIST,
    F_MARK,
    F_STEP,
    N_COUNT,
    P_BATCHED,
    P_BOUND16,
    P_DBALL,
    P_DCAP,
    P_HEAVY,
    P_KD,
    P_KIND,
    P_KN,
    P_KR,
    P_KV,
    P_MEMSIZE,
    P_NEDGE,
    P_NMODE,
    R_ONE,
    R_SHIFT,
    ST_BATCHES,
    ST_BF,
    ST_CLOSES,
    ST_DL,
    ST_EMITTED,
    ST_FSTAMP,
    ST_INVOC,
    ST_NCAND,
    ST_NTOUCH,
    ST_PREV_SC,
    ST_PREV_SIZE,
    ST_PREV_UNIQ,
    ST_REOPEN,
    ST_RS,
    ST_SIZE,
    ST_STEP,
    ST_UNIQ,
    V_NSPREAD,
    V_REUSABLE,
)

__all__ = ["touch", "add_change", "count_reusable", "take_changes", "emit_triangle", "close_batch",
           "is_heavy"]


@njit(cache=True, _nrt=False)
def is_heavy(voff, heavy, v):
    """Does vertex ``v`` have more than ``heavy`` faces (no part in eq. 1)?"""
    return voff[v + 1] - voff[v] > heavy


@njit(cache=True, _nrt=False)
def touch(F, touched, f, d, step, n):
    """Accumulate a priority change for face ``f`` in step ``step``; ``n`` faces are listed in
    ``touched`` so far.  Returns the new count (hot loops keep it in a local variable)."""
    if F[f, F_STEP] != step:
        F[f, F_STEP] = step
        F[f, F_ACC] = d
        touched[n] = f
        return n + 1
    F[f, F_ACC] += d
    return n


@njit(cache=True, _nrt=False)
def add_change(F, ST, touched, f, d):
    """Accumulate a priority change for face ``f`` in the current step."""
    ST[ST_NTOUCH] = touch(F, touched, f, d, ST[ST_STEP], ST[ST_NTOUCH])


@njit(cache=True, _nrt=False)
def count_reusable(F, cand, f, delta, n):
    """Change the count of reusable vertices of face ``f``; a face reaching two is listed as a
    lookahead candidate (once: stale entries are dropped when the list is scanned).  ``n``
    candidates are listed so far; returns the new count."""
    bits = F[f, F_BITS] + delta * R_ONE
    if (bits >> R_SHIFT) & 3 == 2 and bits & B_CAND == 0:
        bits |= B_CAND
        cand[n] = f
        n += 1
    F[f, F_BITS] = bits
    return n


@njit(cache=True, _nrt=False)
def take_changes(F, ST, touched, out_faces, out_deltas):
    """The step's accumulated changes as ``(face, delta)`` lists (for the Python reference
    driver, which applies them itself); clears the step.  Returns the number of changes."""
    n = 0
    for k in range(ST[ST_NTOUCH]):
        f = touched[k]
        d = F[f, F_ACC]
        if d != 0 and F[f, F_BITS] & B_EMITTED == 0:
            out_faces[n] = f
            out_deltas[n] = d
            n += 1
    ST[ST_NTOUCH] = 0
    ST[ST_STEP] += 1
    return n


@njit(cache=True, _nrt=False)
def _add_distance(F, ST, touched, dlist, f, d):
    add_change(F, ST, touched, f, d)
    F[f, F_DIST] += d
    if F[f, F_BITS] & B_DLIST == 0:
        F[f, F_BITS] |= B_DLIST
        dlist[ST[ST_DL]] = f
        ST[ST_DL] += 1


@njit(cache=True, _nrt=False)
def _holds(tris, h, la, lb, lc):
    """Does face ``h`` hold one of the vertices ``la, lb, lc`` (-1: none)?"""
    for i in range(3):
        v = tris[h, i]
        if v == la or v == lb or v == lc:
            return True
    return False


@njit(cache=True, _nrt=False)
def _visit(F, bfsq, tail, h, s, dist):
    F[h, F_MARK] = s
    F[h, F_BITS] = (F[h, F_BITS] & 0xFFFF) | (min(dist, 32767) << D_SHIFT)
    bfsq[tail] = h
    return tail + 1


@njit(cache=True, _nrt=False)
def _distance_terms_ring(tris, t, P, ST, F, voff, nbr, opp, xoff, xadj, bfsq, touched, dlist):
    """Lines 21-24: dual-graph distance from ``t`` to the faces sharing one of its (light)
    vertices (the one-ring), by a breadth-first search that stays in the ring.

    A neighbour across edge ``(p, q)`` of a ring face is in the ring when ``p``, ``q`` or its
    third vertex (``opp``) is one of ``t``'s light vertices, so faces outside are never read.
    The remaining ring faces are exactly those the ``R``/``V`` update of this step touched,
    and they get their ``D`` change in that order."""
    kd = P[P_KD]
    cap = P[P_DCAP]
    heavy = P[P_HEAVY]
    ST[ST_FSTAMP] += 1
    s = ST[ST_FSTAMP]
    a = tris[t, 0]
    b = tris[t, 1]
    c = tris[t, 2]
    la = -1 if is_heavy(voff, heavy, a) else a
    lb = -1 if b == a or is_heavy(voff, heavy, b) else b
    lc = -1 if c == a or c == b or is_heavy(voff, heavy, c) else c
    F[t, F_MARK] = s
    F[t, F_BITS] = F[t, F_BITS] & 0xFFFF
    bfsq[0] = t
    head = 0
    tail = 1
    while head < tail:
        g = bfsq[head]
        head += 1
        dg = (F[g, F_BITS] >> D_SHIFT) + 1
        x0 = nbr[g, 0]
        if x0 <= -2:
            for k in range(xoff[-2 - x0], xoff[-1 - x0]):
                h = xadj[k]
                if F[h, F_MARK] != s and _holds(tris, h, la, lb, lc):
                    tail = _visit(F, bfsq, tail, h, s, dg)
            continue
        for e in range(3):
            h = nbr[g, e]
            if h < 0:
                continue
            p = tris[g, e]
            q = tris[g, (e + 1) % 3]
            o = opp[g, e]
            if ((p == la or p == lb or p == lc or q == la or q == lb or q == lc or o == la
                 or o == lb or o == lc) and F[h, F_MARK] != s):
                tail = _visit(F, bfsq, tail, h, s, dg)
    for i in range(ST[ST_NTOUCH]):
        f = touched[i]
        bits = F[f, F_BITS]
        if F[f, F_MARK] == s and bits > 0xFFFF:
            dist = bits >> D_SHIFT
            if cap > 0:
                # faces beyond the one-ring count as distance ``cap``: D(f) - cap * |batch|
                d = kd * (min(dist, cap) - cap)
            else:
                d = kd * dist
            _add_distance(F, ST, touched, dlist, f, d)


@njit(cache=True, _nrt=False)
def _distance_terms_ball(t, P, ST, F, nbr, xoff, xadj, bfsq, touched, dlist):
    """D over the dual-graph ball of radius ``cap - 1`` around ``t`` (``d_region="ball"``)."""
    kd = P[P_KD]
    cap = P[P_DCAP]
    ST[ST_FSTAMP] += 1
    s = ST[ST_FSTAMP]
    F[t, F_MARK] = s
    F[t, F_BITS] = F[t, F_BITS] & 0xFFFF
    bfsq[0] = t
    head = 0
    tail = 1
    while head < tail:
        g = bfsq[head]
        head += 1
        dg = (F[g, F_BITS] >> D_SHIFT) + 1
        if dg >= cap:
            continue
        x0 = nbr[g, 0]
        n_list = xoff[-1 - x0] - xoff[-2 - x0] if x0 <= -2 else 3
        for k in range(n_list):
            h = xadj[xoff[-2 - x0] + k] if x0 <= -2 else nbr[g, k]
            if h >= 0 and F[h, F_MARK] != s:
                tail = _visit(F, bfsq, tail, h, s, dg)
                if F[h, F_BITS] & B_EMITTED == 0:
                    _add_distance(F, ST, touched, dlist, h, kd * (dg - cap))


@njit(cache=True, _nrt=False)
def _forget(v, d, F, ST, voff, vfaces, heavy, touched, cand):
    """A vertex leaves the reusable set: its faces lose ``R`` (and gain ``N`` in count mode)."""
    if is_heavy(voff, heavy, v):
        return
    step = ST[ST_STEP]
    nt = ST[ST_NTOUCH]
    nc = ST[ST_NCAND]
    for q in range(voff[v], voff[v + 1]):
        f = vfaces[q]
        if F[f, F_BITS] & B_EMITTED == 0:
            nt = touch(F, touched, f, d, step, nt)
            nc = count_reusable(F, cand, f, -1, nc)
    ST[ST_NTOUCH] = nt
    ST[ST_NCAND] = nc


@njit(cache=True, _nrt=False)
def emit_triangle(tris, t, rot, P, ST, F, scalars, pv, table, voff, vfaces, nbr, opp, xoff, xadj,
                  rs, vstate, bf, flist, bfsq, rspos, comp, cinfo, order, rots, touched, cand, dlist,
                  ring):
    """Add ``t`` to the batch (Algorithm 2, lines 14-31); the changes stay listed in
    ``touched`` for the driver.  ``ring`` (FIFO memory only) holds the vertex inserted at each
    FIFO slot, so that the vertices pushed out by this triangle are known without a scan."""
    kr = P[P_KR]
    kv = P[P_KV]
    kn = P[P_KN]
    heavy = P[P_HEAVY]
    msize = P[P_MEMSIZE]
    bound16 = P[P_BOUND16] != 0
    k = ST[ST_EMITTED]
    pos = 3 * k
    order[k] = t
    rots[k] = rot
    F[t, F_BITS] |= B_EMITTED
    cinfo[comp[t], 3] = 1
    added = 0
    # FIFO and LRU memories forget only what a miss pushes out: those vertices are listed here
    fifo = P[P_KIND] == KIND_FIFO and not bound16
    lru = P[P_KIND] == KIND_LRU and not bound16
    n_out = 0
    for i in range(3):
        v = np.int64(tris[t, (i + rot) % 3])
        note_block(bound16, scalars, v, pos + i)
        hit = mem_lookup(P[P_KIND], msize, scalars, pv, table, v, pos + i)
        if not hit:
            added += 1
            if fifo:
                # the vertex inserted ``msize`` misses ago leaves the FIFO
                slot = scalars[S_MISSES] % msize
                if ring[slot] >= 0:
                    flist[n_out] = ring[slot]
                    n_out += 1
                ring[slot] = v
            elif lru and scalars[S_LRU_COUNT] == msize:
                # a full LRU drops its least recently used entry
                flist[n_out] = table[msize - 1]
                n_out += 1
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
    step = ST[ST_STEP]
    nt = ST[ST_NTOUCH]
    nc = ST[ST_NCAND]
    for i in range(3):
        v = tris[t, i]
        if (i == 1 and v == a) or (i == 2 and (v == a or v == b)) or is_heavy(voff, heavy, v):
            continue
        entering = vstate[v] & V_REUSABLE == 0
        d = kr - kv if entering else -kv
        for q in range(voff[v], voff[v + 1]):
            f = vfaces[q]
            if F[f, F_BITS] & B_EMITTED == 0:
                nt = touch(F, touched, f, d, step, nt)
                if entering:
                    nc = count_reusable(F, cand, f, 1, nc)
    ST[ST_NTOUCH] = nt
    ST[ST_NCAND] = nc
    # lines 21-24: D
    if P[P_KD] != 0:
        if P[P_DBALL] != 0:
            _distance_terms_ball(t, P, ST, F, nbr, xoff, xadj, bfsq, touched, dlist)
        else:
            _distance_terms_ring(tris, t, P, ST, F, voff, nbr, opp, xoff, xadj, bfsq, touched, dlist)
    # line 25
    for i in range(3):
        v = tris[t, i]
        if vstate[v] & V_REUSABLE == 0:
            vstate[v] |= V_REUSABLE
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
        for p in range(max(pos - window, scalars[S_MEMORY_START]), max(pos + 3 - window, 0)):
            q = p // 3
            v = tris[order[q], (p % 3 + rots[q]) % 3]
            if vstate[v] & V_REUSABLE != 0 and not still_reusable(P, scalars, pv, table, v, nxt):
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
            vstate[v] &= ~V_REUSABLE
            _forget(v, d, F, ST, voff, vfaces, heavy, touched, cand)
        if ST[ST_RS] > 4 * window + 16:
            _compact_reusable_list(rs, rspos, vstate, ST)
    elif fifo or lru:
        # only the vertices this triangle's misses pushed out can leave the set
        _forget_listed(flist, n_out, d, P, ST, F, scalars, pv, table, voff, vfaces, heavy, touched,
                       cand, vstate, rspos, nxt)
        if ST[ST_RS] > 4 * msize + 16:
            _compact_reusable_list(rs, rspos, vstate, ST)
    else:
        keep = 0
        for j in range(ST[ST_RS]):
            v = rs[j]
            if vstate[v] & V_REUSABLE == 0 or rspos[v] != j:
                continue
            if still_reusable(P, scalars, pv, table, v, nxt):
                rs[keep] = v
                rspos[v] = keep
                keep += 1
            else:
                vstate[v] &= ~V_REUSABLE
                _forget(v, d, F, ST, voff, vfaces, heavy, touched, cand)
        ST[ST_RS] = keep


@njit(cache=True, _nrt=False)
def _forget_listed(flist, n, d, P, ST, F, scalars, pv, table, voff, vfaces, heavy, touched, cand,
                   vstate, rspos, nxt):
    """Forget the listed vertices (``flist[:n]``, repeats allowed) that are reusable now and will
    not be at index position ``nxt``, in the order of the reusable list."""
    m = 0
    for j in range(n):
        v = flist[j]
        if vstate[v] & V_REUSABLE == 0 or still_reusable(P, scalars, pv, table, v, nxt):
            continue
        dup = False
        for i in range(m):
            if flist[i] == v:
                dup = True
        if not dup:
            flist[m] = v
            m += 1
    for a_ in range(m):
        for b_ in range(a_ + 1, m):
            if rspos[flist[b_]] < rspos[flist[a_]]:
                tmp = flist[a_]
                flist[a_] = flist[b_]
                flist[b_] = tmp
    for j in range(m):
        v = flist[j]
        vstate[v] &= ~V_REUSABLE
        _forget(v, d, F, ST, voff, vfaces, heavy, touched, cand)


@njit(cache=True, _nrt=False)
def _compact_reusable_list(rs, rspos, vstate, ST):
    """Drop the entries of forgotten vertices from the reusable list, keeping its order."""
    keep = 0
    for j in range(ST[ST_RS]):
        v = rs[j]
        if vstate[v] & V_REUSABLE != 0 and rspos[v] == j:
            rs[keep] = v
            rspos[v] = keep
            keep += 1
    ST[ST_RS] = keep


@njit(cache=True, _nrt=False)
def clear_distances(F, ST, touched, dlist):
    """Remove every face's ``D`` term (the region it measures to starts again)."""
    for j in range(ST[ST_DL]):
        f = dlist[j]
        if F[f, F_BITS] & B_EMITTED == 0:
            add_change(F, ST, touched, f, -F[f, F_DIST])
        F[f, F_DIST] = 0
        F[f, F_BITS] &= ~B_DLIST
    ST[ST_DL] = 0


@njit(cache=True, _nrt=False)
def close_batch(tris, P, ST, F, scalars, voff, vfaces, nbr, xoff, xadj, rs, vstate, bf, bstarts, rspos,
                touched, cand, dlist):
    """Batch boundary (Algorithm 2, lines 33-41); the changes stay listed in ``touched``."""
    kr = P[P_KR]
    kn = P[P_KN]
    heavy = P[P_HEAVY]
    count_mode = P[P_NMODE] == N_COUNT
    d = -kr + (kn if count_mode else 0)
    for j in range(ST[ST_RS]):
        v = rs[j]
        if vstate[v] & V_REUSABLE == 0 or rspos[v] != j:
            continue
        vstate[v] &= ~V_REUSABLE
        _forget(v, d, F, ST, voff, vfaces, heavy, touched, cand)
    ST[ST_RS] = 0
    clear_distances(F, ST, touched, dlist)
    if not count_mode and kn != 0:
        for j in range(ST[ST_BF]):
            g = bf[j]
            if P[P_NEDGE] != 0:
                x0 = nbr[g, 0]
                n_list = xoff[-1 - x0] - xoff[-2 - x0] if x0 <= -2 else 3
                for k in range(n_list):
                    f = xadj[xoff[-2 - x0] + k] if x0 <= -2 else nbr[g, k]
                    if f >= 0 and F[f, F_BITS] & (B_EMITTED | B_NFLAG) == 0:
                        F[f, F_BITS] |= B_NFLAG
                        add_change(F, ST, touched, f, kn)
            else:
                for i in range(3):
                    v = tris[g, i]
                    # a vertex spread once has every remaining face flagged already
                    if vstate[v] & V_NSPREAD != 0 or is_heavy(voff, heavy, v):
                        continue
                    vstate[v] |= V_NSPREAD
                    step = ST[ST_STEP]
                    nt = ST[ST_NTOUCH]
                    for q in range(voff[v], voff[v + 1]):
                        f = vfaces[q]
                        if F[f, F_BITS] & (B_EMITTED | B_NFLAG) == 0:
                            F[f, F_BITS] |= B_NFLAG
                            nt = touch(F, touched, f, kn, step, nt)
                    ST[ST_NTOUCH] = nt
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
