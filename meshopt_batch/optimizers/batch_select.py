"""Which triangle to emit next: the queue's top, a lookahead pick, or a small component.

Plain Algorithm 2 (paper 001) emits the queue's top when it fits in the current batch and
closes the batch otherwise.  Two refinements beyond the paper are chosen here, in
:func:`select_triangle` (both on by default; see :mod:`.batch`):

* ``lookahead``: when the top reuses exactly two vertices, every remaining triangle that reuses
  two is compared by how many further triangles its missing vertex would complete;
* ``fill_small``: when the batch has started and the top reuses nothing, the largest untouched
  small component (faces connected through vertices, small enough for one batch) that still
  fits is started instead.  :func:`find_components` finds those components once per run.

The lookahead scan over the candidate list is one of the seams of the optimizer's cost.

References
----------
Kerbl, B., Kenzel, M., Ivanchenko, E., Schmalstieg, D., Steinberger, M. (2018).  Revisiting
the Vertex Cache: Understanding and Optimizing Vertex Processing on the modern GPU.  Proc. ACM
Comput. Graph. Interact. Tech. 1(2).  (Paper 001: Algorithm 2, sec. 4.)
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .batch_fit import choose_rotation
from .batch_layout import (P_FILL, P_LOOKAHEAD, P_MAXSIZE, P_MAXUNIQ, ST_BATCHES, ST_CLOSES,
                           ST_FSTAMP, ST_NCAND, ST_PREV_SC, ST_PREV_SIZE, ST_PREV_UNIQ, ST_REOPEN,
                           ST_SIZE, ST_UNIQ, W_CAND, W_EMITTED, W_RCOUNT)

__all__ = ["select_triangle", "find_components"]


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
def _swap_with_closed_batch(ST, scalars):
    """Exchange the current batch's counters and memory scalars with the closed batch's."""
    for a, b in ((ST_SIZE, ST_PREV_SIZE), (ST_UNIQ, ST_PREV_UNIQ)):
        tmp = ST[a]
        ST[a] = ST[b]
        ST[b] = tmp
    for k in range(scalars.shape[0]):
        tmp = scalars[k]
        scalars[k] = ST[ST_PREV_SC + k]
        ST[ST_PREV_SC + k] = tmp


@njit(cache=True)
def _reopen_if_it_fits(tris, face, P, ST, scalars, pv, table, snap_sc, snap_pv, snap_tab):
    """Right after a batch was closed: does ``face`` still fit the closed batch?

    The GPU closes a batch only at a triangle that does not fit (Algorithm 1), so when the
    first triangle chosen after a close fits the old batch, the GPU puts it there.  The old
    batch is then reopened (nothing was emitted since, so its memory state is intact) and the
    rotation it fits in is returned; otherwise the new batch stays and -1 is returned.
    """
    _swap_with_closed_batch(ST, scalars)
    rot = choose_rotation(tris, face, P, ST, scalars, pv, table, snap_sc, snap_pv, snap_tab)
    if rot >= 0:
        ST[ST_BATCHES] -= 1
        ST[ST_CLOSES] -= 1
    else:
        _swap_with_closed_batch(ST, scalars)
    return rot


@njit(cache=True)
def select_triangle(tris, t, prio, P, ST, W, scalars, pv, table, snap_sc, snap_pv, snap_tab,
                    voff, vfaces, rs, inrs, gmark, gval, rspos, cinfo, cls_off, cls_comps, cls_ptr):
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

    Right after a close, a chosen triangle that still fits the closed batch goes there, as it
    does on the GPU (:func:`_reopen_if_it_fits`): the optimizer's batches stay the predictor's.
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
    rot = choose_rotation(tris, face, P, ST, scalars, pv, table, snap_sc, snap_pv, snap_tab)
    if rot < 0 and face != t:
        face = t
        rot = choose_rotation(tris, face, P, ST, scalars, pv, table, snap_sc, snap_pv, snap_tab)
    if rot < 0 and ST[ST_SIZE] == 0:
        rot = 0  # cannot happen for valid profiles: an empty batch takes any triangle
    if rot < 0:
        return -1, -1
    if ST[ST_REOPEN] != 0:
        ST[ST_REOPEN] = 0
        old_rot = _reopen_if_it_fits(tris, face, P, ST, scalars, pv, table, snap_sc, snap_pv, snap_tab)
        if old_rot >= 0:
            rot = old_rot
    return face, rot


@njit(cache=True)
def find_components(tris, vertex_count, voff, vfaces, cap_u, cap_s):
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
