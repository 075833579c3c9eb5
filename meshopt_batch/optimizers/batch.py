"""Batch-based mesh optimization: paper 001 (Kerbl et al. 2018), Algorithm 2.

The optimizer grows one GPU batch at a time.  Every remaining triangle has the priority of
eq. 1,

    p = k_r R + k_v V + k_d D + k_n N,

with ``R`` the number of its vertices the target profile's memory module can still reuse in
the current batch, ``V`` the sum of its vertices' remaining valences, ``D`` the sum of its
dual-graph distances to the faces of the current batch, and ``N`` the batch-neighbourhood
term.  The highest-priority triangle is emitted when the batch predictor (Algorithm 1, the
very functions of :mod:`meshopt_batch.reuse`) says it fits in the current batch; otherwise
the batch is closed, the ``R`` and ``D`` terms are removed, ``N`` is added, and the next batch
starts wherever the queue's top then is (the "jump" of paper sec. 4).

Coefficients (eq. 2; the paper prints ``k_c = 1024``, which is ``k_r``):
``k_r = 1024, k_v = -4, k_d = -1, k_n = -1``; the faster variant without ``D`` uses
``k_v = k_n = -3``.

Priority queue
--------------
The paper uses a Fibonacci heap with increase- and decrease-key.  Every priority change here
is a signed integer delta, and the queue order is the total order

    key(t) = (p(t), stamp(t))   -- larger first,

where ``stamp`` is a global counter incremented at every insertion and every priority change
(initial insertion runs from the last triangle to the first, so among equal initial
priorities the lowest triangle index comes first; later, among equal priorities, the most
recently changed triangle comes first, which keeps batches local).  Because keys are unique,
*any* correct priority queue returns the same top and the optimizer is deterministic:

* ``queue="fibheap"`` (:mod:`.fibheap_reference`) runs the driver loop in plain Python on the
  ``fibheap`` package's Fibonacci heap (decrease-key native, increase-key as delete +
  re-insert) -- the reference for small meshes;
* ``queue="fast"`` (default) runs the same loop compiled with numba on an exact *bucket
  queue*: one doubly linked list per integer priority, newest at the head, and a bitmap of
  the non-empty buckets (64 per word) to find the highest one.  Increase-key, decrease-key
  and delete are O(1); finding the top scans the bitmap down from the last top.  Its pop
  order is the key order above, i.e. identical to the Fibonacci heap's (this replaces a
  numba Fibonacci heap: same order, less work per update).  Priorities must therefore be
  integers (eq. 2's are).

Both drivers call the same compiled step functions (:func:`_select`, :func:`_emit`,
:func:`_close_batch`); a step produces the list of priority changes ``(face, delta)`` (one
merged change per face, in order of first touch) which the driver applies to its queue.

Details the paper leaves open (documented choices; see ``options``)
--------------------------------------------------------------------
* "Can add this triangle?" runs Algorithm 1's boundary test for the triangle on the live
  memory state and rolls the state back (for look-back retention the lookups are pure and
  nothing needs rolling back).  The triangle is written with the cyclic rotation (winding
  preserved) that adds the fewest new vertices (``rotate=True``; ``rotate=False`` keeps every
  triangle's vertex order, hence its provoking vertex).  The optimizer's batches are exactly
  the predictor's: its invocation count equals :func:`~meshopt_batch.reuse.predict` on the
  output, for every profile kind.
* ``R`` counts a vertex as reusable when the memory module would reuse it at the first index
  of the next triangle ("which vertices are forgotten" is asked of the same module after
  every triangle).
* ``D``: the paper sums the dual-graph distances from every face of the batch to a
  candidate.  Each emitted face updates the faces sharing one of its vertices (its one-ring;
  the distance is the breadth-first distance inside that ring), and every face outside the
  ring counts as distance ``d_cap`` (10).  That is the paper's sum minus the constant
  ``d_cap * |batch|``, the same for every candidate, so the order is the paper's ``D`` with
  distances capped at ``d_cap``.  (Uncapped, "0 beyond the ring" inverts the term: the bunny
  ends at 0.95.)  ``d_region="ball"`` uses the dual-graph ball of radius ``d_cap - 1``
  instead of the ring.
* ``N``: ``n_mode="flag"`` (paper: 0/1, set for faces sharing a vertex -- or an edge with
  ``n_neighbourhood="edge"`` -- with a completed batch), or ``"count"`` (``k_n`` added each
  time an incident vertex leaves the reusable set).
* Profiles without batches (``intel``, ``fifo:N``, ``lru:N``) never close a batch, so ``D``
  would grow without bound; ``k_d`` defaults to 0 for them.

Beyond the paper (on by default, off with ``lookahead=False, fill_small=False``)
--------------------------------------------------------------------------------
* ``lookahead``: when the top reuses exactly two vertices, every remaining triangle that
  reuses two is compared by how many further triangles its new vertex would complete (their
  other two vertices already reusable); most wins, then priority, then the top, then the
  lowest index.  This grows rounder batches (bunny 0.8044 -> 0.7997, dragon_res3 0.7888 ->
  0.7580 on nvidia_gl).
* ``fill_small``: components (faces connected through vertices) small enough for one batch
  start below every large one (priority ``- k_r / 2``), and when a started batch has nothing
  left to reuse, the largest untouched small component that still fits in it is started
  instead of the top: leaf cards fill the ends of batches instead of cutting into branches.
* For a direct-mapped memory (``llvmpipe``) the order is optimized as if every vertex of a
  batch stayed reusable, then the vertices are renumbered
  (:func:`~meshopt_batch.optimizers.renumber.renumber_for_direct_cache`) so that it does; the
  vertex remap is then a permutation.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np
from numba import njit

from ..errors import MeshoptBatchError
from ..profiles import Profile, get_profile
from ..reuse import (KIND_DIRECT, KIND_FIFO, KIND_LOOKBACK, KIND_LOOKBACK_DX, KIND_LRU, S_BATCH_START, S_MIXED,
                     as_index_array, direct_lookup, direct_touch, dx_lookup, dx_touch, fifo_lookup,
                     fifo_touch, lookback_lookup, lookback_touch, lru_lookup, lru_touch, mem_new_batch,
                     memory_code, new_memory, note_block, predict)
from ..topology import face_adjacency, vertex_faces

__all__ = ["BatchResult", "optimize_batch", "DEFAULT_COEFFICIENTS", "NO_DISTANCE_COEFFICIENTS"]

#: Eq. 2 of paper 001 (``k_c`` in the paper's print is ``k_r``).
DEFAULT_COEFFICIENTS = {"k_r": 1024, "k_v": -4, "k_d": -1, "k_n": -1}
#: The faster variant without the distance term (paper sec. 4: ``k_v = k_n = -3``).
NO_DISTANCE_COEFFICIENTS = {"k_r": 1024, "k_v": -3, "k_d": 0, "k_n": -3}

DEFAULT_OPTIONS = {"rotate": True, "n_mode": "flag", "n_neighbourhood": "vertex", "d_cap": 10, "d_region": "ring", "lookahead": True,
                   "fill_small": True, "renumber": True}

# --- parameter vector P ----------------------------------------------------------------------
(P_KR, P_KV, P_KD, P_KN, P_MAXSIZE, P_MAXUNIQ, P_MEMSIZE, P_BOUND16, P_NMODE, P_ROTATE,
 P_PVW, P_BATCHED, P_NEDGE, P_KIND, P_DCAP, P_DBALL, P_LOOKAHEAD, P_FILL, P_LEN) = range(19)
# --- scalar state ST ---------------------------------------------------------------------------
(ST_EMITTED, ST_SIZE, ST_UNIQ, ST_STEP, ST_RS, ST_BF, ST_DL, ST_FSTAMP, ST_BATCHES, ST_INVOC,
 ST_NTOUCH, ST_CLOSES, ST_NCAND, ST_LEN) = range(14)
# --- per-face work rows W[row, t] --------------------------------------------------------------
(W_EMITTED, W_DIST, W_DLIN, W_NFLAG, W_ACC, W_ACCMARK, W_TOUCHED, W_OUTF, W_OUTD, W_FMARK,
 W_FDIST, W_ORDER, W_DL, W_ROT, W_RCOUNT, W_CAND, W_CPOS, W_ROWS) = range(18)

N_FLAG, N_COUNT = 0, 1


@dataclass
class BatchResult:
    """Output of :func:`optimize_batch`.

    Attributes
    ----------
    triangles : (T, 3) ndarray
        The optimized index buffer (indices into the grown vertex buffer).
    vertex_remap : (V', ) int64 ndarray
        ``new vertex -> original vertex``: the identity for ``0..vertex_count-1`` followed by
        the copies appended by the 16-bit boundary fix (``V' >= vertex_count``).
    batch_starts : (B, ) int64 ndarray
        First triangle of every batch the predictor forms on the result.
    stats : dict
        Timings, batches, model invocations, vertex copies, options used.
    """

    triangles: np.ndarray
    vertex_remap: np.ndarray
    batch_starts: np.ndarray
    stats: dict = field(default_factory=dict)


# ================================================================================================
# compiled step functions (shared by both queue drivers)
# ================================================================================================

# The memory module of :mod:`meshopt_batch.reuse`, selected by kind code.  (Dispatching on an
# integer instead of passing the compiled functions as arguments keeps these functions in
# numba's on-disk cache.)

@njit(cache=True, inline="always")
def _mem_lookup(kind, size, scalars, pv, table, v, p):
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
def _mem_touch(kind, size, scalars, pv, table, v, p, hit):
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


@njit(cache=True)
def _acc_add(W, ST, f, d):
    """Accumulate a priority change for face ``f`` in the current step."""
    if W[f, W_ACCMARK] != ST[ST_STEP]:
        W[f, W_ACCMARK] = ST[ST_STEP]
        W[f, W_ACC] = 0
        W[ST[ST_NTOUCH], W_TOUCHED] = f
        ST[ST_NTOUCH] += 1
    W[f, W_ACC] += d


@njit(cache=True)
def _cand_remove(W, ST, f):
    k = W[f, W_CPOS]
    last = W[ST[ST_NCAND] - 1, W_CAND]
    W[k, W_CAND] = last
    W[last, W_CPOS] = k
    W[f, W_CPOS] = -1
    ST[ST_NCAND] -= 1


@njit(cache=True)
def _rc_change(W, ST, f, delta):
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
        _cand_remove(W, ST, f)


@njit(cache=True)
def _flush(W, ST):
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
def _trial(tris, t, rot, P, ST, scalars, pv, table, snap_sc, snap_pv, snap_tab):
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
        hit = note_block(bound16, scalars, v) and _mem_lookup(P[P_KIND], msize, scalars, pv, table, v, pos + i)
        if not hit:
            added += 1
        if (maxu > 0 and uniq + added > maxu) or (maxs > 0 and size + i > maxs):
            ok = False
            break
        _mem_touch(P[P_KIND], msize, scalars, pv, table, v, pos + i, hit)
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


@njit(cache=True)
def _lookback_added(tris, t, r, pos, batch_start, window, pv):
    """Vertices triangle ``t`` (rotated by ``r``) would shade under look-back retention.

    Look-back lookups do not depend on each other except for a vertex repeated inside the
    triangle, so no state has to be touched and rolled back (same answer as :func:`_trial`).
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


@njit(cache=True)
def _choose_rotation(tris, t, P, ST, scalars, pv, table, snap_sc, snap_pv, snap_tab):
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
        bs = scalars[S_BATCH_START]
        for r in range(nrot):
            a = _lookback_added(tris, t, r, pos, bs, P[P_MEMSIZE], pv)
            if (maxu == 0 or ST[ST_UNIQ] + a <= maxu) and a < best_added:
                best = r
                best_added = a
                if a == 0:
                    break
        return best
    for r in range(nrot):
        a = _trial(tris, t, r, P, ST, scalars, pv, table, snap_sc, snap_pv, snap_tab)
        if a >= 0 and a < best_added:
            best = r
            best_added = a
            if a == 0:
                break
    return best


@njit(cache=True)
def _missing_vertex(tris, f, inrs):
    """The vertex of ``f`` outside the reusable set (the last one, for a unique answer)."""
    out = -1
    for i in range(3):
        v = tris[f, i]
        if inrs[v] == 0:
            out = v
    return out


@njit(cache=True)
def _completes(w, rcount, emitted_row, voff, vfaces):
    """Remaining faces around ``w`` whose two other vertices are reusable (``w`` is not): the
    triangles that become free once ``w`` is shaded."""
    g = 0
    for q in range(voff[w], voff[w + 1]):
        h = vfaces[q]
        if emitted_row[h] == 0 and rcount[h] == 2:
            g += 1
    return g


@njit(cache=True)
def _find_filler(P, ST, cinfo, cls_off, cls_comps, cls_ptr):
    """The untouched small component with the most vertices that fits in the rest of the
    batch (lowest id among equals), or -1."""
    maxu = P[P_MAXUNIQ]
    maxs = P[P_MAXSIZE]
    ncls = cls_off.shape[0] - 1
    hi = ncls - 1
    if maxu > 0:
        hi = min(hi, maxu - ST[ST_UNIQ])
    for cv in range(hi, 0, -1):
        ptr = cls_ptr[cv]
        end = cls_off[cv + 1]
        while ptr < end and cinfo[cls_comps[ptr], 3] != 0:
            ptr += 1
        cls_ptr[cv] = ptr
        if ptr < end:
            c = cls_comps[ptr]
            if maxs == 0 or ST[ST_SIZE] + 3 * cinfo[c, 1] - 1 <= maxs:
                return c
    return -1


@njit(cache=True)
def _select(tris, t, prio, P, ST, W, scalars, pv, table, snap_sc, snap_pv, snap_tab, voff, vfaces,
            rs, inrs, gmark, gval, rspos, cinfo, cls_off, cls_comps, cls_ptr):
    """Pick the triangle to emit given the queue's top ``t``: ``(face, rotation)`` or ``(-1, -1)``
    when the batch must close.

    Plain Algorithm 2 tries the top only.  With ``lookahead`` and a top that reuses exactly two
    vertices, every triangle around the batch that reuses two vertices is compared by how many
    triangles its new vertex completes (more first), then by priority, then by the queue's order
    (the top wins a full tie, otherwise the lower index).

    With ``fill_small``, when the batch has started and the top reuses nothing, a small
    untouched component (one that fits a batch) that fits in the rest of the batch is started
    instead (its first triangle): disconnected pieces such as leaf cards fill the ends of
    batches instead of cutting a large region.
    """
    face = t
    rcount = W[:, W_RCOUNT]
    if P[P_FILL] != 0 and ST[ST_SIZE] > 0 and rcount[t] == 0:
        c = _find_filler(P, ST, cinfo, cls_off, cls_comps, cls_ptr)
        if c >= 0:
            face = cinfo[c, 2]
    elif P[P_LOOKAHEAD] != 0 and rcount[t] == 2:
        emitted_row = W[:, W_EMITTED]
        ST[ST_FSTAMP] += 1
        s = ST[ST_FSTAMP]
        w = _missing_vertex(tris, t, inrs)
        if w < 0:  # a degenerate triangle with both its vertices reusable: free
            best_g = 1 << 40
        else:
            best_g = _completes(w, rcount, emitted_row, voff, vfaces)
            gmark[w] = s
            gval[w] = best_g
        best_p = prio[t]
        # the candidates: every remaining face with exactly two reusable vertices; the
        # result does not depend on their order (ties go to the top, then the lowest index)
        for k in range(ST[ST_NCAND]):
            f = W[k, W_CAND]
            if f == t:
                continue
            wf = _missing_vertex(tris, f, inrs)
            if wf < 0:
                g = 1 << 40
            elif gmark[wf] == s:
                g = gval[wf]
            else:
                g = _completes(wf, rcount, emitted_row, voff, vfaces)
                gmark[wf] = s
                gval[wf] = g
            if g > best_g or (g == best_g and (prio[f] > best_p or (prio[f] == best_p and face != t
                                                                     and f < face))):
                best_g = g
                best_p = prio[f]
                face = f
    rot = _choose_rotation(tris, face, P, ST, scalars, pv, table, snap_sc, snap_pv, snap_tab)
    if rot < 0 and face != t:
        face = t
        rot = _choose_rotation(tris, face, P, ST, scalars, pv, table, snap_sc, snap_pv, snap_tab)
    if rot < 0 and ST[ST_SIZE] == 0:
        rot = 0  # cannot happen for valid profiles: an empty batch takes any triangle
    if rot < 0:
        return -1, -1
    return face, rot


@njit(cache=True)
def _reusable(P, scalars, pv, table, v, p):
    if P[P_BOUND16] != 0 and scalars[S_MIXED] != 0:
        return False
    return _mem_lookup(P[P_KIND], P[P_MEMSIZE], scalars, pv, table, v, p)


@njit(cache=True)
def _distance_terms(tris, t, P, ST, W, voff, vfaces, aoff, adj, flist, bfsq):
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
            _acc_add(W, ST, f, d)
            W[f, W_DIST] += d
            if W[f, W_DLIN] == 0:
                W[f, W_DLIN] = 1
                W[ST[ST_DL], W_DL] = f
                ST[ST_DL] += 1


@njit(cache=True)
def _distance_terms_radius(t, P, ST, W, aoff, adj, bfsq):
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
                    _acc_add(W, ST, h, d)
                    W[h, W_DIST] += d
                    if W[h, W_DLIN] == 0:
                        W[h, W_DLIN] = 1
                        W[ST[ST_DL], W_DL] = h
                        ST[ST_DL] += 1


@njit(cache=True)
def _emit(tris, t, rot, P, ST, W, scalars, pv, table, voff, vfaces, aoff, adj,
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
        _cand_remove(W, ST, t)
    added = 0
    for i in range(3):
        v = np.int64(tris[t, (i + rot) % 3])
        hit = note_block(bound16, scalars, v) and _mem_lookup(P[P_KIND], msize, scalars, pv, table, v, pos + i)
        if not hit:
            added += 1
        _mem_touch(P[P_KIND], msize, scalars, pv, table, v, pos + i, hit)
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
                _acc_add(W, ST, f, d)
                if entering:
                    _rc_change(W, ST, f, 1)
    # lines 21-24: D
    if P[P_KD] != 0:
        if P[P_DBALL] != 0:
            _distance_terms_radius(t, P, ST, W, aoff, adj, bfsq)
        else:
            _distance_terms(tris, t, P, ST, W, voff, vfaces, aoff, adj, flist, bfsq)
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
            if inrs[v] != 0 and not _reusable(P, scalars, pv, table, v, nxt):
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
                    _acc_add(W, ST, f, d)
                    _rc_change(W, ST, f, -1)
        if ST[ST_RS] > 4 * window + 16:
            _compact_rs(rs, rspos, inrs, ST)
    else:
        keep = 0
        for j in range(ST[ST_RS]):
            v = rs[j]
            if inrs[v] == 0 or rspos[v] != j:
                continue
            if _reusable(P, scalars, pv, table, v, nxt):
                rs[keep] = v
                rspos[v] = keep
                keep += 1
            else:
                inrs[v] = 0
                for q in range(voff[v], voff[v + 1]):
                    f = vfaces[q]
                    if W[f, W_EMITTED] == 0:
                        _acc_add(W, ST, f, d)
                        _rc_change(W, ST, f, -1)
        ST[ST_RS] = keep
    return _flush(W, ST)


@njit(cache=True)
def _compact_rs(rs, rspos, inrs, ST):
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
def _close_batch(tris, P, ST, W, scalars, voff, vfaces, aoff, adj, rs, inrs, bf, bstarts, rspos):
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
                _acc_add(W, ST, f, d)
                _rc_change(W, ST, f, -1)
    ST[ST_RS] = 0
    for j in range(ST[ST_DL]):
        f = W[j, W_DL]
        if W[f, W_EMITTED] == 0:
            _acc_add(W, ST, f, -W[f, W_DIST])
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
                        _acc_add(W, ST, f, kn)
            else:
                for i in range(3):
                    v = tris[g, i]
                    for q in range(voff[v], voff[v + 1]):
                        f = vfaces[q]
                        if W[f, W_EMITTED] == 0 and W[f, W_NFLAG] == 0:
                            W[f, W_NFLAG] = 1
                            _acc_add(W, ST, f, kn)
    ST[ST_BF] = 0
    mem_new_batch(scalars, 3 * ST[ST_EMITTED])
    ST[ST_SIZE] = 0
    ST[ST_UNIQ] = 0
    ST[ST_CLOSES] += 1
    bstarts[ST[ST_BATCHES]] = ST[ST_EMITTED]
    ST[ST_BATCHES] += 1
    return _flush(W, ST)


# ================================================================================================
# fast driver: exact bucket queue, compiled
# ================================================================================================

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
def _run_fast(tris, prio, P, ST, W, scalars, pv, table, snap_sc, snap_pv, snap_tab,
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
        t, rot = _select(tris, head[top], prio, P, ST, W, scalars, pv, table, snap_sc, snap_pv,
                         snap_tab, voff, vfaces, rs, inrs, gmark, gval, rspos, cinfo, cls_off,
                         cls_comps, cls_ptr)
        if t >= 0:
            _bq_unlink(head, bits, nxt, prv, prio, base, t)
            remaining -= 1
            n = _emit(tris, t, rot, P, ST, W, scalars, pv, table, voff, vfaces, aoff,
                      adj, rs, inrs, bf, flist, bfsq, rspos, comp, cinfo)
        else:
            n = _close_batch(tris, P, ST, W, scalars, voff, vfaces, aoff, adj, rs, inrs, bf, bstarts,
                             rspos)
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


# ================================================================================================
# set-up shared by the drivers
# ================================================================================================

@njit(cache=True)
def _initial_priorities(tris, voff, kv):
    t_count = tris.shape[0]
    prio = np.empty(t_count, np.int64)
    for t in range(t_count):
        a = tris[t, 0]
        b = tris[t, 1]
        c = tris[t, 2]
        val = voff[a + 1] - voff[a]
        if b != a:
            val += voff[b + 1] - voff[b]
        if c != a and c != b:
            val += voff[c + 1] - voff[c]
        prio[t] = kv * val
    return prio


@njit(cache=True)
def _components(tris, vertex_count, voff, vfaces, cap_u, cap_s):
    """Connected components over shared vertices: face -> component, per component
    ``(vertices, triangles, first face, touched)``, and the components that fit in one batch
    (``vertices <= cap_u`` and ``3 * triangles <= cap_s``) grouped by vertex count (CSR, by id)."""
    t_count = tris.shape[0]
    comp = np.full(t_count, -1, np.int64)
    queue = np.empty(t_count, np.int64)
    vseen = np.zeros(max(vertex_count, 1), np.uint8)
    info = np.zeros((t_count, 4), np.int64)
    n = 0
    for s in range(t_count):
        if comp[s] >= 0:
            continue
        comp[s] = n
        info[n, 2] = s
        queue[0] = s
        head = 0
        tail = 1
        nv = 0
        while head < tail:
            f = queue[head]
            head += 1
            for i in range(3):
                v = tris[f, i]
                if vseen[v] == 0:
                    vseen[v] = 1
                    nv += 1
                    for q in range(voff[v], voff[v + 1]):
                        g = vfaces[q]
                        if comp[g] < 0:
                            comp[g] = n
                            queue[tail] = g
                            tail += 1
        info[n, 0] = nv
        info[n, 1] = tail
        n += 1
    info = info[:n].copy()
    counts = np.zeros(max(cap_u, 0) + 2, np.int64)
    for c in range(n):
        if info[c, 0] <= cap_u and 3 * info[c, 1] <= cap_s:
            counts[info[c, 0] + 1] += 1
    for k in range(counts.shape[0] - 1):
        counts[k + 1] += counts[k]
    comps = np.empty(counts[-1], np.int64)
    fill = counts[:-1].copy()
    for c in range(n):
        if info[c, 0] <= cap_u and 3 * info[c, 1] <= cap_s:
            comps[fill[info[c, 0]]] = c
            fill[info[c, 0]] += 1
    return comp, info, counts, comps


class _State:
    """Every array the step functions work on (one optimizer run)."""

    def __init__(self, tris, vertex_count, prof: Profile, coeffs: dict, options: dict):
        t_count = tris.shape[0]
        self.tris = tris
        self.scalars, self.pv, self.table = new_memory(prof, vertex_count)
        self.snap_sc = np.zeros_like(self.scalars)
        self.snap_tab = np.zeros_like(self.table)
        self.snap_pv = np.zeros(9, np.int64)
        pvw = self.pv.shape[0] // max(vertex_count, 1) if vertex_count else 0
        self.voff, self.vfaces = vertex_faces(tris, vertex_count)
        if coeffs["k_d"] != 0 or options["n_neighbourhood"] == "edge":
            self.aoff, self.adj = face_adjacency(tris, vertex_count)
        else:
            self.aoff, self.adj = np.zeros(t_count + 1, np.int64), np.zeros(1, np.int64)
        P = np.zeros(P_LEN, np.int64)
        P[P_KR], P[P_KV], P[P_KD], P[P_KN] = (coeffs[k] for k in ("k_r", "k_v", "k_d", "k_n"))
        P[P_MAXSIZE] = prof.max_size
        P[P_MAXUNIQ] = prof.max_uniques
        P[P_MEMSIZE] = prof.memory_size
        P[P_BOUND16] = int(prof.boundary_16bit)
        P[P_NMODE] = N_COUNT if options["n_mode"] == "count" else N_FLAG
        P[P_ROTATE] = int(bool(options["rotate"]))
        P[P_PVW] = pvw if pvw in (1, 3) else 0
        P[P_BATCHED] = int(prof.batched)
        P[P_NEDGE] = int(options["n_neighbourhood"] == "edge")
        P[P_KIND] = memory_code(prof)
        P[P_DCAP] = int(options["d_cap"])
        P[P_DBALL] = int(options["d_region"] == "ball")
        P[P_LOOKAHEAD] = int(bool(options["lookahead"]))
        P[P_FILL] = int(bool(options["fill_small"]) and prof.batched)
        self.P = P
        self.ST = np.zeros(ST_LEN, np.int64)
        self.ST[ST_STEP] = 1
        self.ST[ST_BATCHES] = 1 if t_count else 0
        self.W = np.zeros((max(t_count, 1), W_ROWS), np.int64)
        self.W[:, W_CPOS] = -1
        maxval = int(np.diff(self.voff).max()) if vertex_count else 0
        self.flist = np.zeros(3 * maxval + 3, np.int64)
        self.bfsq = np.zeros(3 * maxval + 3 if options["d_region"] == "ring" else max(t_count, 1), np.int64)
        self.rs = np.zeros(max(vertex_count, 1) + 4 * prof.memory_size + 32, np.int64)
        self.inrs = np.zeros(max(vertex_count, 1), np.uint8)
        self.gmark = np.zeros(max(vertex_count, 1), np.int64)
        self.rspos = np.zeros(max(vertex_count, 1), np.int64)
        self.gval = np.zeros(max(vertex_count, 1), np.int64)
        self.bf = np.zeros(max(t_count, 1) if prof.batched else 1, np.int64)
        self.bstarts = np.zeros(t_count + 1, np.int64)
        self.prio = _initial_priorities(tris, self.voff, P[P_KV])
        # components (faces sharing vertices); small ones fit in one batch
        cap_u = prof.max_uniques or prof.max_size
        cap_s = prof.max_size or 3 * prof.max_uniques
        self.comp, self.cinfo, self.cls_off, self.cls_comps = _components(
            tris, vertex_count, self.voff, self.vfaces, cap_u if P[P_FILL] else 0, cap_s)
        self.cls_ptr = self.cls_off[:-1].copy()
        if P[P_FILL]:
            small = np.zeros(self.cinfo.shape[0], np.bool_)
            small[self.cls_comps] = True
            self.prio[small[self.comp]] -= P[P_KR] // 2

    # step functions, called by the Python reference driver ----------------------------------
    def select(self, t):
        return _select(self.tris, t, self.prio, self.P, self.ST, self.W, self.scalars, self.pv,
                       self.table, self.snap_sc, self.snap_pv, self.snap_tab, self.voff, self.vfaces,
                       self.rs, self.inrs, self.gmark, self.gval, self.rspos, self.cinfo,
                       self.cls_off, self.cls_comps, self.cls_ptr)

    def emit(self, t, rot):
        n = _emit(self.tris, t, rot, self.P, self.ST, self.W, self.scalars,
                  self.pv, self.table, self.voff, self.vfaces, self.aoff, self.adj, self.rs, self.inrs,
                  self.bf, self.flist, self.bfsq, self.rspos, self.comp, self.cinfo)
        return self.W[:n, W_OUTF], self.W[:n, W_OUTD]

    def close_batch(self):
        n = _close_batch(self.tris, self.P, self.ST, self.W, self.scalars, self.voff, self.vfaces,
                         self.aoff, self.adj, self.rs, self.inrs, self.bf, self.bstarts, self.rspos)
        return self.W[:n, W_OUTF], self.W[:n, W_OUTD]

    def batch_empty(self):
        return self.ST[ST_SIZE] == 0

    def run_fast(self):
        _run_fast(self.tris, self.prio, self.P, self.ST, self.W, self.scalars,
                  self.pv, self.table, self.snap_sc, self.snap_pv, self.snap_tab, self.voff,
                  self.vfaces, self.aoff, self.adj, self.rs, self.inrs, self.bf, self.flist,
                  self.bfsq, self.bstarts, self.gmark, self.gval, self.rspos, self.comp, self.cinfo,
                  self.cls_off, self.cls_comps, self.cls_ptr)

    # results ------------------------------------------------------------------------------------
    def ordered_triangles(self):
        t_count = self.tris.shape[0]
        order = self.W[:t_count, W_ORDER]
        rot = self.W[:t_count, W_ROT]
        cols = (np.arange(3)[None, :] + rot[:, None]) % 3
        return self.tris[order[:, None], cols]


# ================================================================================================
# public entry point
# ================================================================================================

def _resolve_coefficients(use_distance: bool, coefficients, prof: Profile) -> dict:
    coeffs = dict(DEFAULT_COEFFICIENTS if use_distance else NO_DISTANCE_COEFFICIENTS)
    if not prof.batched and use_distance:
        coeffs["k_d"] = 0
    if coefficients:
        unknown = set(coefficients) - set(coeffs)
        if unknown:
            raise MeshoptBatchError(f"unknown coefficient(s) {sorted(unknown)} (known: k_r, k_v, k_d, k_n)")
        coeffs.update(coefficients)
    for key, value in coeffs.items():
        if isinstance(value, bool) or int(value) != value:
            raise MeshoptBatchError(f"coefficient {key} must be an integer, got {value!r}")
        coeffs[key] = int(value)
    if not use_distance:
        coeffs["k_d"] = 0
    return coeffs


def _is_nvidia(prof: Profile) -> bool:
    return prof.memory in ("lookback", "lookback_dx")


def optimize_batch(triangles, vertex_count: int | None = None, profile="nvidia_gl",
                   use_distance: bool = True, fix_16bit: bool | None = None, queue: str = "fast",
                   coefficients: dict | None = None, **options) -> BatchResult:
    """Reorder triangles batch by batch for a GPU profile (paper 001, Algorithm 2).

    Parameters
    ----------
    triangles : (T, 3) integer array
        Index buffer.
    vertex_count : int, optional
        Vertex buffer size (default: largest index + 1).
    profile : str or Profile
        Target GPU model (:func:`meshopt_batch.profiles.get_profile`).  A ``+16bit`` profile is
        optimized under its plain model when ``fix_16bit`` is on (the fix makes the two agree).
    use_distance : bool
        Use the face-distance term ``D`` with eq. 2's coefficients; ``False`` is the paper's
        faster variant (``k_d = 0, k_v = k_n = -3``).
    fix_16bit : bool, optional
        Apply the 16-bit boundary post-process (paper sec. 4): default on for NVIDIA profiles.
    queue : {"fast", "fibheap"}
        Compiled exact bucket queue, or the ``fibheap`` package in plain Python (reference;
        slow, for small meshes).  Both give the identical result.
    coefficients : dict, optional
        Overrides of ``k_r, k_v, k_d, k_n`` (integers).
    **options
        ``lookahead`` (default True), ``fill_small`` (default True), ``rotate`` (default True), ``d_cap`` (10),
        ``d_region`` ("ring" | "ball"), ``n_mode`` ("flag" | "count"), ``n_neighbourhood``
        ("vertex" | "edge"), ``renumber`` (default True: renumber vertices for a
        direct-mapped memory); see the module docstring.

    Returns
    -------
    BatchResult
    """
    t0 = time.perf_counter()
    prof = get_profile(profile)
    tris, vcount = as_index_array(triangles, vertex_count)
    tris = np.ascontiguousarray(tris, dtype=np.int64)
    unknown = set(options) - set(DEFAULT_OPTIONS)
    if unknown:
        raise MeshoptBatchError(f"unknown batch optimizer option(s) {sorted(unknown)}")
    opts = {**DEFAULT_OPTIONS, **options}
    if opts["n_mode"] not in ("flag", "count"):
        raise MeshoptBatchError(f"n_mode must be 'flag' or 'count', got {opts['n_mode']!r}")
    if opts["n_neighbourhood"] not in ("vertex", "edge"):
        raise MeshoptBatchError(f"n_neighbourhood must be 'vertex' or 'edge', got {opts['n_neighbourhood']!r}")
    if fix_16bit is None:
        fix_16bit = _is_nvidia(prof)
    opt_prof = prof.with_16bit_boundaries(False) if (fix_16bit and prof.boundary_16bit) else prof
    renumber = prof.memory == "direct" and bool(opts["renumber"])
    if renumber:
        # Reuse on a direct-mapped table depends on vertex numbers, which the renumbering
        # below sets: optimize the order for "every vertex of the batch stays reusable"
        # (a look-back over the whole batch), then number the vertices so that this holds.
        window = prof.max_size or prof.max_uniques or 3 * max(tris.shape[0], 1)
        opt_prof = replace(opt_prof, memory="lookback", memory_size=window)
    coeffs = _resolve_coefficients(use_distance, coefficients, opt_prof)
    t_count = tris.shape[0]
    stats = {"profile": prof.name, "queue": queue, "coefficients": coeffs, "options": opts,
             "triangles": int(t_count), "vertices_in": int(vcount)}
    if t_count == 0:
        return BatchResult(np.zeros((0, 3), np.uint32), np.arange(vcount, dtype=np.int64),
                           np.zeros(0, np.int64), {**stats, "seconds": 0.0, "vertices_out": vcount,
                                                   "vertex_copies": 0, "batches": 0})
    state = _State(tris, vcount, opt_prof, coeffs, opts)
    t1 = time.perf_counter()
    if queue == "fast":
        state.run_fast()
    elif queue == "fibheap":
        from .fibheap_reference import run_reference

        run_reference(state)
    else:
        raise MeshoptBatchError(f"queue must be 'fast' or 'fibheap', got {queue!r}")
    t2 = time.perf_counter()
    out = state.ordered_triangles()
    model_starts = state.bstarts[: state.ST[ST_BATCHES]].copy()
    stats.update(model_invocations=int(state.ST[ST_INVOC]), model_batches=int(state.ST[ST_BATCHES]),
                 seconds_setup=t1 - t0, seconds_queue=t2 - t1)
    del state
    remap = np.arange(vcount, dtype=np.int64)
    copies = 0
    if fix_16bit and vcount > (1 << 16):
        from .boundary16 import fix_16bit_boundaries

        out, remap = fix_16bit_boundaries(out, vcount, opt_prof.with_16bit_boundaries(False))
        copies = int(remap.shape[0] - vcount)
    if renumber:
        from .renumber import renumber_for_direct_cache

        out, remap = renumber_for_direct_cache(out, vcount, slots=prof.memory_size,
                                               segment_size=prof.max_size or 3 * t_count)
        out = np.asarray(out, np.int64)
        opt_prof = prof
    stats["renumbered"] = renumber
    out = out.astype(np.uint32)
    pred = predict(out, opt_prof, remap.shape[0], return_batches=True)
    stats.update(seconds=time.perf_counter() - t0, vertices_out=int(remap.shape[0]),
                 vertex_copies=copies, batches=int(pred.batches), invocations=int(pred.invocations),
                 asr=pred.asr, fix_16bit=bool(fix_16bit))
    if np.asarray(triangles).dtype == np.uint16 and remap.shape[0] <= (1 << 16):
        out = out.astype(np.uint16)
    return BatchResult(out, remap, pred.batch_starts, stats)
