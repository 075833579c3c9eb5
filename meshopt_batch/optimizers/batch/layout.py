"""Integer layouts shared by the compiled parts of the batch optimizer (paper 001, Algorithm 2).

The step functions (:mod:`.batch_fit`, :mod:`.steps`, :mod:`.select`) and the
queue drivers (:mod:`.queue`, :mod:`.fibheap_reference`) pass their state around as a
few flat integer arrays instead of objects, so numba compiles them once and caches them on
disk.  This module names the slots of those arrays; :class:`~.state.BatchState`
allocates and fills them.

``P`` (int64 parameter vector, set once per run)
    ``P_KR, P_KV, P_KD, P_KN``: the coefficients of eq. 1; ``P_MAXSIZE`` / ``P_MAXUNIQ``: the
    profile's batch limits (0 = none); ``P_MEMSIZE``: memory-module size; ``P_BOUND16``: the
    ``+16bit`` block rule is modelled; ``P_NMODE``: :data:`N_FLAG` or :data:`N_COUNT`;
    ``P_ROTATE``: triangles may be rotated cyclically; ``P_PVW``: ints per vertex in the
    memory module's per-vertex array; ``P_BATCHED``: the profile forms batches;
    ``P_NEDGE``: the ``N`` term spreads over edges instead of vertices; ``P_KIND``: memory
    kind code (:func:`meshopt_batch.model.prediction.memory_code`); ``P_DCAP``: ``d_cap``;
    ``P_DBALL``: ``d_region="ball"``; ``P_LOOKAHEAD`` / ``P_FILL``: the two options beyond
    the paper; ``P_HEAVY``: the valence above which a vertex takes no part in eq. 1 (see
    :mod:`.batch_optimizer`).

``ST`` (int64 scalar state of the run)
    ``ST_EMITTED``: triangles emitted; ``ST_SIZE`` / ``ST_UNIQ``: indices and shaded vertices
    of the current batch; ``ST_STEP``: step counter (marks the faces a step touched);
    ``ST_RS``: length of the reusable-vertex list; ``ST_BF``: faces of the current batch;
    ``ST_DL``: faces carrying a ``D`` term; ``ST_FSTAMP``: breadth-first-search stamp;
    ``ST_BATCHES``: batches started; ``ST_INVOC``: vertex-shader invocations;
    ``ST_NTOUCH``: faces touched in this step; ``ST_CLOSES``: batches closed;
    ``ST_NCAND``: length of the lookahead's candidate list; ``ST_GSTAMP``: the lookahead's
    stamp; ``ST_REOPEN``: the batch was just closed and may be reopened; ``ST_PREV_SIZE`` /
    ``ST_PREV_UNIQ`` and the memory scalars from ``ST_PREV_SC`` on: the closed batch's state
    (see :func:`~.select.select_triangle`).

``F[face, field]`` (int32, one 32-byte row per face: what a step reads and writes of a face)
    ``F_PRIO``: priority of eq. 1; ``F_NEXT`` / ``F_PREV``: links of the bucket queue;
    ``F_ACC`` / ``F_STEP``: the step's accumulated priority change and the step that started
    it; ``F_BITS``: the flags :data:`B_EMITTED`, :data:`B_DLIST` (in the ``D`` list),
    :data:`B_NFLAG` (``N`` flag set), :data:`B_CAND` (in the lookahead's list), the count of
    reusable vertices (``(bits >> R_SHIFT) & 3``) and, in the upper 16 bits, the signed
    breadth-first distance of the current ``D`` search; ``F_DIST``: the face's ``D`` term;
    ``F_MARK``: stamp of the ``D`` search that visited it.

``vstate[vertex]`` (uint8)
    :data:`V_REUSABLE`: the vertex is in the reusable set (line 25 of Algorithm 2);
    :data:`V_NSPREAD`: a closed batch has flagged its faces for ``N`` (nothing left to flag).
"""

from __future__ import annotations

from ...model.prediction import S_LEN

__all__ = ["N_FLAG", "N_COUNT"]  # and the P_*, ST_*, F_*, B_* slot names below

(P_KR, P_KV, P_KD, P_KN, P_MAXSIZE, P_MAXUNIQ, P_MEMSIZE, P_BOUND16, P_NMODE, P_ROTATE,
 P_PVW, P_BATCHED, P_NEDGE, P_KIND, P_DCAP, P_DBALL, P_LOOKAHEAD, P_FILL, P_HEAVY,
 P_LEN) = range(20)

(ST_EMITTED, ST_SIZE, ST_UNIQ, ST_STEP, ST_RS, ST_BF, ST_DL, ST_FSTAMP, ST_BATCHES, ST_INVOC,
 ST_NTOUCH, ST_CLOSES, ST_NCAND, ST_GSTAMP, ST_REOPEN, ST_PREV_SIZE, ST_PREV_UNIQ,
 ST_PREV_SC) = range(18)
ST_LEN = ST_PREV_SC + S_LEN

(F_PRIO, F_NEXT, F_PREV, F_ACC, F_STEP, F_BITS, F_DIST, F_MARK, F_ROWS) = range(9)

#: Flags in ``F[:, F_BITS]``.
B_EMITTED, B_DLIST, B_NFLAG, B_CAND = 1, 2, 4, 8
#: The reusable-vertex count sits at bits 4-5 of ``F_BITS``; the search distance from bit 16.
R_SHIFT, R_ONE, D_SHIFT = 4, 16, 16

#: Flags of ``vstate[vertex]``: in the reusable set; its faces already carry the ``N`` flag.
V_REUSABLE, V_NSPREAD = 1, 2

#: ``n_mode``: the paper's 0/1 flag for faces next to a completed batch, or a count.
N_FLAG, N_COUNT = 0, 1
