"""Set-up of one batch-optimizer run: every array the compiled steps work on.

:class:`BatchState` turns a profile, the coefficients of eq. 2 and the options of
:func:`~.batch_optimizer.optimize_batch` into the flat arrays of :mod:`.layout` (parameter vector
``P``, scalar state ``ST``, per-face work rows ``W``), the memory-module state of
:mod:`meshopt_batch.model.prediction`, the vertex -> face and face adjacency tables, the initial
priorities (``k_v`` times the vertices' valences) and the small components for
``fill_small``.  It runs the compiled driver (:meth:`BatchState.run_fast`), offers the three
steps one at a time to the Python reference driver (:mod:`.fibheap_reference`), and assembles
the output order (:meth:`BatchState.ordered_triangles`).

References
----------
Kerbl, B., Kenzel, M., Ivanchenko, E., Schmalstieg, D., Steinberger, M. (2018).  Revisiting
the Vertex Cache: Understanding and Optimizing Vertex Processing on the modern GPU.  Proc. ACM
Comput. Graph. Interact. Tech. 1(2).  (Paper 001: Algorithm 2, eq. 1-2.)
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ...geometry.mesh_topology import vertex_faces
from ...model.prediction import memory_code, new_memory
from ...model.profiles import Profile
from ...vertices.vertex_fetch import first_use_labels
from .aux import aux_after_emit, no_aux
from .dual_graph import corner_others, dual_graph, find_components
from .layout import (
    F_PRIO,
    F_ROWS,
    N_COUNT,
    N_FLAG,
    P_BATCHED,
    P_BOUND16,
    P_DBALL,
    P_DCAP,
    P_FILL,
    P_HEAVY,
    P_KD,
    P_KIND,
    P_KN,
    P_KR,
    P_KV,
    P_LEN,
    P_LOOKAHEAD,
    P_MAXSIZE,
    P_MAXUNIQ,
    P_MEMSIZE,
    P_NEDGE,
    P_NMODE,
    P_PVW,
    P_ROTATE,
    ST_BATCHES,
    ST_INVOC,
    ST_LEN,
    ST_STEP,
)
from .queue import run_fast
from .select import select_triangle
from .steps import close_batch, emit_triangle, take_changes

__all__ = ["BatchState", "HEAVY_VALENCE"]

#: A vertex shared by more faces than this takes no part in eq. 1 (see :mod:`.batch_optimizer`).
HEAVY_VALENCE = 1024


@njit(cache=True, nogil=True)
def _initial_priorities(tris, voff, kv, heavy, F, comp, small, small_shift):
    """Eq. 1 before the first triangle: ``k_v`` times the sum of each face's (light) vertex
    valences, a vertex repeated in a degenerate face counted once; ``small_shift`` added to
    the faces of small components (``fill_small``)."""
    for t in range(tris.shape[0]):
        a = tris[t, 0]
        b = tris[t, 1]
        c = tris[t, 2]
        val = 0
        va = voff[a + 1] - voff[a]
        if va <= heavy:
            val += va
        vb = voff[b + 1] - voff[b]
        if b != a and vb <= heavy:
            val += vb
        vc = voff[c + 1] - voff[c]
        if c != a and c != b and vc <= heavy:
            val += vc
        p = kv * val
        if small.shape[0] > 0 and small[comp[t]]:
            p += small_shift
        F[t, F_PRIO] = p


@njit(cache=True, nogil=True)
def _ordered(tris, order, rots, out):
    """The triangles in emission order, each with its chosen rotation."""
    for k in range(order.shape[0]):
        t = order[k]
        r = rots[k]
        for i in range(3):
            out[k, i] = tris[t, (i + r) % 3]


@njit(cache=True, nogil=True)
def _select_step(tris, t, P, ST, F, scalars, pv, table, snap_sc, snap_pv, snap_tab, voff,
                 vfaces, vstate, gmark, gval, cinfo, cls_off, cls_comps, cls_ptr, cand):
    return select_triangle(tris, t, P, ST, F, scalars, pv, table, snap_sc, snap_pv, snap_tab,
                           voff, vfaces, vstate, gmark, gval, cinfo, cls_off, cls_comps, cls_ptr, cand)


@njit(cache=True, nogil=True)
def _emit_step(tris, t, rot, P, ST, F, scalars, pv, table, voff, vfaces, nbr, opp, xoff, xadj, rs, vstate, bf,
               flist, bfsq, rspos, comp, cinfo, order, rots, touched, cand, dlist, ring, aux, out_f, out_d):
    emit_triangle(tris, t, rot, P, ST, F, scalars, pv, table, voff, vfaces, nbr, opp, xoff, xadj, rs, vstate,
                  bf, flist, bfsq, rspos, comp, cinfo, order, rots, touched, cand, dlist, ring)
    aux_after_emit(tris, ST, F, aux[0], aux[1], aux[2], aux[3], aux[4], aux[5], aux[6], voff, vfaces, P[P_HEAVY],
                   touched, order, rots)
    return take_changes(F, ST, touched, out_f, out_d)


@njit(cache=True, nogil=True)
def _close_step(tris, P, ST, F, scalars, voff, vfaces, nbr, xoff, xadj, rs, vstate, bf, bstarts, rspos,
                touched, cand, dlist, out_f, out_d):
    close_batch(tris, P, ST, F, scalars, voff, vfaces, nbr, xoff, xadj, rs, vstate, bf, bstarts, rspos,
                touched, cand, dlist)
    return take_changes(F, ST, touched, out_f, out_d)


class BatchState:
    """Every array the step functions work on (one optimizer run).

    Parameters
    ----------
    tris : (T, 3) int32 ndarray
        The index buffer (C-contiguous).
    vertex_count : int
        Vertex buffer size.
    prof : Profile
        The model the order is optimized for (already the plain model of a ``+16bit`` profile
        or the look-back stand-in of a direct-mapped one, see :func:`~.batch_optimizer.optimize_batch`).
    coeffs : dict
        Integer ``k_r, k_v, k_d, k_n`` (eq. 1-2).
    options : dict
        The full option set of :data:`~.batch_optimizer.DEFAULT_OPTIONS`.
    aux : tuple, optional
        Auxiliary memories (:func:`~.aux.new_aux`: the other profiles of a target); none by
        default.
    """

    def __init__(self, tris, vertex_count, prof: Profile, coeffs: dict, options: dict, aux=None):
        t_count = tris.shape[0]
        nv = max(vertex_count, 1)
        self.input_tris = tris
        if prof.memory != "direct" and not prof.boundary_16bit:
            # vertices numbered in order of first use: every table indexed by vertex is then
            # read in the order the faces are (vertex numbers play no part in the choices
            # except through a direct-mapped memory or the 16-bit block rule)
            tris = first_use_labels(tris, vertex_count)[tris].astype(np.int32)
        self.tris = tris
        self.aux = aux if aux is not None else no_aux()
        self.scalars, pv, self.table = new_memory(prof, vertex_count)
        self.pv = pv.astype(np.int32)
        del pv
        self.snap_sc = np.zeros_like(self.scalars)
        self.snap_tab = np.zeros_like(self.table)
        self.snap_pv = np.zeros(9, np.int64)
        pvw = self.pv.shape[0] // vertex_count if vertex_count else 0
        self.voff, self.vfaces = vertex_faces(tris, vertex_count, dtype=np.int32)
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
        P[P_HEAVY] = HEAVY_VALENCE
        self.P = P
        if coeffs["k_d"] != 0 or options["n_neighbourhood"] == "edge":
            others = corner_others(tris, self.voff)
            self.nbr, self.opp, self.xoff, self.xadj = dual_graph(tris, self.voff, self.vfaces, others,
                                                                  P[P_HEAVY])
            del others
        else:
            self.nbr = self.opp = np.full((1, 3), -1, np.int32)
            self.xoff, self.xadj = np.zeros(1, np.int64), np.zeros(0, np.int32)
        self.ST = np.zeros(ST_LEN, np.int64)
        self.ST[ST_STEP] = 1
        self.ST[ST_BATCHES] = 1 if t_count else 0
        self.F = np.zeros((max(t_count, 1), F_ROWS), np.int32)
        maxval = int(np.diff(self.voff).max()) if vertex_count else 0
        ring = 3 * min(maxval, HEAVY_VALENCE) + 3
        self.flist = np.zeros(4, np.int32)
        self.bfsq = np.zeros(ring if options["d_region"] == "ring" else max(t_count, 1), np.int32)
        self.rs = np.zeros(nv + 4 * prof.memory_size + 32, np.int32)
        self.vstate = np.zeros(nv, np.uint8)
        self.gmark = np.zeros(nv, np.int32)
        self.rspos = np.zeros(nv, np.int32)
        self.gval = np.zeros(nv, np.int32)
        batch_cap = t_count if prof.max_size == 0 else min(t_count, prof.max_size // 3 + 1)
        self.bf = np.zeros(max(batch_cap, 1) if prof.batched else 1, np.int32)
        self.bstarts = np.zeros(t_count + 1, np.int32)
        # FIFO memory: the vertex inserted at each slot (see emit_triangle)
        self.ring = np.full(prof.memory_size if prof.memory == "fifo" else 1, -1, np.int32)
        self.order = np.zeros(t_count, np.int32)
        self.rots = np.zeros(t_count, np.int8)
        self.touched = np.empty(max(t_count, 1), np.int32)
        self.cand = np.empty(max(t_count, 1), np.int32)
        self.dlist = np.empty(max(t_count, 1) if coeffs["k_d"] != 0 else 1, np.int32)
        # components (faces sharing vertices); small ones fit in one batch
        cap_u = prof.max_uniques or prof.max_size
        cap_s = prof.max_size or 3 * prof.max_uniques
        self.comp, self.cinfo, self.cls_off, self.cls_comps = find_components(
            tris, self.voff, cap_u if P[P_FILL] else 0, cap_s)
        self.cls_ptr = self.cls_off[:-1].copy()
        small = np.zeros(self.cinfo.shape[0] if P[P_FILL] else 0, np.bool_)
        small[self.cls_comps] = True
        _initial_priorities(tris, self.voff, P[P_KV], P[P_HEAVY], self.F, self.comp, small,
                            -(P[P_KR] // 2))
        self._out_f = self._out_d = None

    @property
    def prio(self) -> np.ndarray:
        """The faces' priorities (a view of the face rows; the reference driver writes it)."""
        return self.F[:, F_PRIO]

    # steps one at a time, for the Python reference driver (:mod:`.fibheap_reference`) ------
    def _outputs(self):
        if self._out_f is None:
            n = max(self.tris.shape[0], 1)
            self._out_f, self._out_d = np.empty(n, np.int64), np.empty(n, np.int64)
        return self._out_f, self._out_d

    def select(self, t):
        """:func:`~.select.select_triangle` for the queue's top ``t``: ``(face, rotation)``,
        or ``(-1, -1)`` when the batch must close."""
        return _select_step(self.tris, t, self.P, self.ST, self.F, self.scalars, self.pv,
                            self.table, self.snap_sc, self.snap_pv, self.snap_tab, self.voff,
                            self.vfaces, self.vstate, self.gmark, self.gval, self.cinfo,
                            self.cls_off, self.cls_comps, self.cls_ptr, self.cand)

    def emit(self, t, rot):
        """Emit face ``t`` rotated by ``rot``; returns the priority changes ``(faces, deltas)``."""
        out_f, out_d = self._outputs()
        n = _emit_step(self.tris, t, rot, self.P, self.ST, self.F, self.scalars, self.pv,
                       self.table, self.voff, self.vfaces, self.nbr, self.opp, self.xoff, self.xadj, self.rs,
                       self.vstate, self.bf, self.flist, self.bfsq, self.rspos, self.comp,
                       self.cinfo, self.order, self.rots, self.touched, self.cand, self.dlist,
                       self.ring, self.aux, out_f, out_d)
        return out_f[:n], out_d[:n]

    def close_batch(self):
        """Close the current batch; returns the priority changes ``(faces, deltas)``."""
        out_f, out_d = self._outputs()
        n = _close_step(self.tris, self.P, self.ST, self.F, self.scalars, self.voff, self.vfaces,
                        self.nbr, self.xoff, self.xadj, self.rs, self.vstate, self.bf, self.bstarts, self.rspos,
                        self.touched, self.cand, self.dlist, out_f, out_d)
        return out_f[:n], out_d[:n]

    # the whole loop, compiled ----------------------------------------------------------------
    def run_fast(self):
        """Algorithm 2's loop on the compiled bucket queue (:func:`~.queue.run_fast`)."""
        run_fast(self.tris, self.P, self.ST, self.F, self.scalars, self.pv, self.table,
                 self.snap_sc, self.snap_pv, self.snap_tab, self.voff, self.vfaces, self.nbr,
                 self.opp, self.xoff, self.xadj, self.rs, self.vstate, self.bf, self.flist, self.bfsq, self.bstarts,
                 self.gmark, self.gval, self.rspos, self.comp, self.cinfo, self.cls_off,
                 self.cls_comps, self.cls_ptr, self.order, self.rots, self.touched, self.cand,
                 self.dlist, self.ring, self.aux)

    # results ---------------------------------------------------------------------------------
    def ordered_triangles(self, dtype=np.int64) -> np.ndarray:
        """The input triangles in emission order, each with its chosen rotation."""
        out = np.empty((self.tris.shape[0], 3), dtype)
        _ordered(self.input_tris, self.order, self.rots, out)
        return out

    def model_batches(self) -> int:
        """Batches the optimizer formed (its own model, before any post-process)."""
        return int(self.ST[ST_BATCHES])

    def model_invocations(self) -> int:
        """Vertex-shader invocations the optimizer counted while emitting."""
        return int(self.ST[ST_INVOC])
