"""Which triangle to emit next: the queue's top, a lookahead pick, or a small component.

Plain Algorithm 2 (paper 001) emits the queue's top when it fits in the current batch and
closes the batch otherwise.  Two refinements beyond the paper are chosen here, in
:func:`select_triangle` (both on by default; see :mod:`.batch_optimizer`):

* ``lookahead``: when the top reuses exactly two vertices, every remaining triangle that reuses
  two is compared by how many further triangles its missing vertex would complete;
* ``fill_small``: when the batch has started and the top reuses nothing, the largest untouched
  small component (faces connected through vertices, small enough for one batch) that still
  fits is started instead (:func:`~.dual_graph.find_components` finds them once per run).

The lookahead scans the list of faces that reuse exactly two vertices; the steps of
:mod:`.steps` append a face when its count reaches two and the scan drops the entries
that no longer qualify, so the list stays short without being kept exact at every change.
A vertex with more than ``P_HEAVY`` faces completes nothing here (it takes no part in eq. 1,
see :mod:`.batch_optimizer`).  Compiled without reference counting, like the steps.

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
from .layout import (
    B_CAND,
    B_EMITTED,
    F_BITS,
    F_PRIO,
    P_FILL,
    P_HEAVY,
    P_LOOKAHEAD,
    P_MAXSIZE,
    P_MAXUNIQ,
    R_SHIFT,
    ST_BATCHES,
    ST_CLOSES,
    ST_GSTAMP,
    ST_NCAND,
    ST_PREV_SC,
    ST_PREV_SIZE,
    ST_PREV_UNIQ,
    ST_REOPEN,
    ST_SIZE,
    ST_UNIQ,
    V_REUSABLE,
)
from .steps import is_heavy

__all__ = ["select_triangle"]


@njit(cache=True, _nrt=False)
def _missing_vertex(tris, f, vstate):
    """The vertex of ``f`` outside the reusable set (the last one, for a unique answer)."""
    out = -1
    for i in range(3):
        v = tris[f, i]
        if vstate[v] & V_REUSABLE == 0:
            out = v
    return out


@njit(cache=True, _nrt=False)
def _gain(w, voff, heavy, gmark, gval, s):
    """Faces completed by shading ``w``: the candidates whose missing vertex is ``w``, counted
    by :func:`_count_candidates` under stamp ``s`` (none around a heavy vertex)."""
    if w < 0:  # a degenerate triangle with both its vertices reusable: free
        return 1 << 40
    if gmark[w] != s or is_heavy(voff, heavy, w):
        return 0
    return np.int64(gval[w])


@njit(cache=True, _nrt=False)
def _count_candidates(tris, ST, F, vstate, gmark, gval, cand, s):
    """Drop the candidate entries that no longer reuse exactly two vertices and count the rest
    by missing vertex (``gval`` under stamp ``s``).

    A remaining face with two reusable vertices around a non-reusable vertex ``w`` has ``w``
    as its missing vertex, so the count of ``w`` is the number of triangles that shading ``w``
    completes."""
    keep = 0
    for k in range(ST[ST_NCAND]):
        f = cand[k]
        bits = F[f, F_BITS]
        if bits & B_EMITTED != 0 or (bits >> R_SHIFT) & 3 != 2:
            F[f, F_BITS] = bits & ~B_CAND
            continue
        cand[keep] = f
        keep += 1
        w = _missing_vertex(tris, f, vstate)
        if w >= 0:
            if gmark[w] != s:
                gmark[w] = s
                gval[w] = 0
            gval[w] += 1
    ST[ST_NCAND] = keep


@njit(cache=True, _nrt=False)
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


@njit(cache=True, _nrt=False)
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


@njit(cache=True, _nrt=False)
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


@njit(cache=True, _nrt=False)
def select_triangle(tris, t, P, ST, F, scalars, pv, table, snap_sc, snap_pv, snap_tab,
                    voff, vfaces, vstate, gmark, gval, cinfo, cls_off, cls_comps, cls_ptr, cand):
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
    heavy = P[P_HEAVY]
    rc_top = (F[t, F_BITS] >> R_SHIFT) & 3
    if P[P_FILL] != 0 and ST[ST_SIZE] > 0 and rc_top == 0:
        c = _find_filler(P, ST, cinfo, cls_off, cls_comps, cls_ptr)
        if c >= 0:
            face = cinfo[c, 2]
    elif P[P_LOOKAHEAD] != 0 and rc_top == 2:
        ST[ST_GSTAMP] += 1
        s = ST[ST_GSTAMP]
        _count_candidates(tris, ST, F, vstate, gmark, gval, cand, s)
        best_g = _gain(_missing_vertex(tris, t, vstate), voff, heavy, gmark, gval, s)
        best_p = F[t, F_PRIO]
        # the result does not depend on the candidates' order (ties go to the top, then the
        # lowest index)
        for k in range(ST[ST_NCAND]):
            f = cand[k]
            if f == t:
                continue
            g = _gain(_missing_vertex(tris, f, vstate), voff, heavy, gmark, gval, s)
            pf = F[f, F_PRIO]
            if g > best_g or (g == best_g and (pf > best_p or (pf == best_p and face != t
                                                               and f < face))):
                best_g = g
                best_p = pf
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
