"""Set-up of one batch-optimizer run: every array the compiled steps work on.

:class:`BatchState` turns a profile, the coefficients of eq. 2 and the options of
:func:`~.batch.optimize_batch` into the flat arrays of :mod:`.batch_layout` (parameter vector
``P``, scalar state ``ST``, per-face work rows ``W``), the memory-module state of
:mod:`meshopt_batch.reuse`, the vertex -> face and face adjacency tables, the initial
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

from ..profiles import Profile
from ..reuse import memory_code, new_memory
from ..topology import face_adjacency, vertex_faces
from .batch_layout import (N_COUNT, N_FLAG, P_BATCHED, P_BOUND16, P_DBALL, P_DCAP, P_FILL, P_KD,
                           P_KIND, P_KN, P_KR, P_KV, P_LEN, P_LOOKAHEAD, P_MAXSIZE, P_MAXUNIQ,
                           P_MEMSIZE, P_NEDGE, P_NMODE, P_PVW, P_ROTATE, ST_BATCHES, ST_INVOC,
                           ST_LEN, ST_STEP, W_CPOS, W_ORDER, W_OUTD, W_OUTF, W_ROT, W_ROWS)
from .batch_queue import run_fast
from .batch_select import find_components, select_triangle
from .batch_steps import close_batch, emit_triangle

__all__ = ["BatchState"]


@njit(cache=True)
def _initial_priorities(tris, voff, kv):
    """Eq. 1 before the first triangle: ``k_v`` times the sum of each face's vertex valences
    (a vertex repeated in a degenerate face counted once)."""
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


class BatchState:
    """Every array the step functions work on (one optimizer run).

    Parameters
    ----------
    tris : (T, 3) int64 ndarray
        The index buffer (C-contiguous).
    vertex_count : int
        Vertex buffer size.
    prof : Profile
        The model the order is optimized for (already the plain model of a ``+16bit`` profile
        or the look-back stand-in of a direct-mapped one, see :func:`~.batch.optimize_batch`).
    coeffs : dict
        Integer ``k_r, k_v, k_d, k_n`` (eq. 1-2).
    options : dict
        The full option set of :data:`~.batch.DEFAULT_OPTIONS`.
    """

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
        self.comp, self.cinfo, self.cls_off, self.cls_comps = find_components(
            tris, vertex_count, self.voff, self.vfaces, cap_u if P[P_FILL] else 0, cap_s)
        self.cls_ptr = self.cls_off[:-1].copy()
        if P[P_FILL]:
            small = np.zeros(self.cinfo.shape[0], np.bool_)
            small[self.cls_comps] = True
            self.prio[small[self.comp]] -= P[P_KR] // 2

    # steps one at a time, for the Python reference driver (:mod:`.fibheap_reference`) ------
    def select(self, t):
        """:func:`~.batch_select.select_triangle` for the queue's top ``t``: ``(face, rotation)``,
        or ``(-1, -1)`` when the batch must close."""
        return select_triangle(self.tris, t, self.prio, self.P, self.ST, self.W, self.scalars,
                               self.pv, self.table, self.snap_sc, self.snap_pv, self.snap_tab,
                               self.voff, self.vfaces, self.rs, self.inrs, self.gmark, self.gval,
                               self.rspos, self.cinfo, self.cls_off, self.cls_comps, self.cls_ptr)

    def emit(self, t, rot):
        """Emit face ``t`` rotated by ``rot``; returns the priority changes ``(faces, deltas)``."""
        n = emit_triangle(self.tris, t, rot, self.P, self.ST, self.W, self.scalars, self.pv,
                          self.table, self.voff, self.vfaces, self.aoff, self.adj, self.rs,
                          self.inrs, self.bf, self.flist, self.bfsq, self.rspos, self.comp,
                          self.cinfo)
        return self.W[:n, W_OUTF], self.W[:n, W_OUTD]

    def close_batch(self):
        """Close the current batch; returns the priority changes ``(faces, deltas)``."""
        n = close_batch(self.tris, self.P, self.ST, self.W, self.scalars, self.voff, self.vfaces,
                        self.aoff, self.adj, self.rs, self.inrs, self.bf, self.bstarts, self.rspos)
        return self.W[:n, W_OUTF], self.W[:n, W_OUTD]

    # the whole loop, compiled ----------------------------------------------------------------
    def run_fast(self):
        """Algorithm 2's loop on the compiled bucket queue (:func:`~.batch_queue.run_fast`)."""
        run_fast(self.tris, self.prio, self.P, self.ST, self.W, self.scalars, self.pv, self.table,
                 self.snap_sc, self.snap_pv, self.snap_tab, self.voff, self.vfaces, self.aoff,
                 self.adj, self.rs, self.inrs, self.bf, self.flist, self.bfsq, self.bstarts,
                 self.gmark, self.gval, self.rspos, self.comp, self.cinfo, self.cls_off,
                 self.cls_comps, self.cls_ptr)

    # results ---------------------------------------------------------------------------------
    def ordered_triangles(self) -> np.ndarray:
        """The input triangles in emission order, each with its chosen rotation."""
        t_count = self.tris.shape[0]
        order = self.W[:t_count, W_ORDER]
        rot = self.W[:t_count, W_ROT]
        cols = (np.arange(3)[None, :] + rot[:, None]) % 3
        return self.tris[order[:, None], cols]

    def model_batches(self) -> int:
        """Batches the optimizer formed (its own model, before any post-process)."""
        return int(self.ST[ST_BATCHES])

    def model_invocations(self) -> int:
        """Vertex-shader invocations the optimizer counted while emitting."""
        return int(self.ST[ST_INVOC])
