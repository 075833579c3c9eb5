"""Integer layouts shared by the compiled parts of the batch optimizer (paper 001, Algorithm 2).

The step functions (:mod:`.batch_fit`, :mod:`.batch_steps`, :mod:`.batch_select`) and the
queue drivers (:mod:`.batch_queue`, :mod:`.fibheap_reference`) pass their state around as a
few flat int64 arrays instead of objects, so numba compiles them once and caches them on disk.
This module names the slots of those arrays; :class:`~.batch_state.BatchState` allocates and
fills them.

``P`` (parameter vector, set once per run)
    ``P_KR, P_KV, P_KD, P_KN``: the coefficients of eq. 1; ``P_MAXSIZE`` / ``P_MAXUNIQ``: the
    profile's batch limits (0 = none); ``P_MEMSIZE``: memory-module size; ``P_BOUND16``: the
    ``+16bit`` block rule is modelled; ``P_NMODE``: :data:`N_FLAG` or :data:`N_COUNT`;
    ``P_ROTATE``: triangles may be rotated cyclically; ``P_PVW``: ints per vertex in the
    memory module's per-vertex array; ``P_BATCHED``: the profile forms batches;
    ``P_NEDGE``: the ``N`` term spreads over edges instead of vertices; ``P_KIND``: memory
    kind code (:func:`meshopt_batch.reuse.memory_code`); ``P_DCAP``: ``d_cap``;
    ``P_DBALL``: ``d_region="ball"``; ``P_LOOKAHEAD`` / ``P_FILL``: the two options beyond
    the paper.

``ST`` (scalar state of the run)
    ``ST_EMITTED``: triangles emitted; ``ST_SIZE`` / ``ST_UNIQ``: indices and shaded vertices
    of the current batch; ``ST_STEP``: step counter (marks the faces a step touched);
    ``ST_RS``: length of the reusable-vertex list; ``ST_BF``: faces of the current batch;
    ``ST_DL``: faces carrying a ``D`` term; ``ST_FSTAMP``: breadth-first-search stamp;
    ``ST_BATCHES``: batches started; ``ST_INVOC``: vertex-shader invocations;
    ``ST_NTOUCH``: faces touched in this step; ``ST_CLOSES``: batches closed;
    ``ST_NCAND``: lookahead candidates (faces with exactly two reusable vertices);
    ``ST_REOPEN``: the batch was just closed and may be reopened; ``ST_PREV_SIZE`` /
    ``ST_PREV_UNIQ`` and the memory scalars from ``ST_PREV_SC`` on: the closed batch's state
    (see :func:`~.batch_select.select_triangle`).

``W[face, row]`` (per-face work rows; some rows are lists indexed by position, not face)
    ``W_EMITTED``: emitted flag; ``W_DIST``: the face's current ``D`` term; ``W_DLIN``: it is
    in the ``D`` list; ``W_NFLAG``: its ``N`` flag is set; ``W_ACC`` / ``W_ACCMARK``: the
    step's accumulated priority change and the step that started it; ``W_TOUCHED``: list of
    faces touched in the step; ``W_OUTF`` / ``W_OUTD``: the step's output list ``(face,
    delta)``; ``W_FMARK`` / ``W_FDIST``: breadth-first-search stamp and distance;
    ``W_ORDER`` / ``W_ROT``: output order and rotation (by output position); ``W_DL``: list of
    faces with a ``D`` term; ``W_RCOUNT``: reusable vertices of the face; ``W_CAND`` /
    ``W_CPOS``: lookahead candidate list and each face's position in it (-1: absent).
"""

from __future__ import annotations

from ..reuse import S_LEN

__all__ = ["N_FLAG", "N_COUNT"]  # and the P_*, ST_*, W_* slot names below

(P_KR, P_KV, P_KD, P_KN, P_MAXSIZE, P_MAXUNIQ, P_MEMSIZE, P_BOUND16, P_NMODE, P_ROTATE,
 P_PVW, P_BATCHED, P_NEDGE, P_KIND, P_DCAP, P_DBALL, P_LOOKAHEAD, P_FILL, P_LEN) = range(19)

(ST_EMITTED, ST_SIZE, ST_UNIQ, ST_STEP, ST_RS, ST_BF, ST_DL, ST_FSTAMP, ST_BATCHES, ST_INVOC,
 ST_NTOUCH, ST_CLOSES, ST_NCAND, ST_REOPEN, ST_PREV_SIZE, ST_PREV_UNIQ, ST_PREV_SC) = range(17)
ST_LEN = ST_PREV_SC + S_LEN

(W_EMITTED, W_DIST, W_DLIN, W_NFLAG, W_ACC, W_ACCMARK, W_TOUCHED, W_OUTF, W_OUTD, W_FMARK,
 W_FDIST, W_ORDER, W_DL, W_ROT, W_RCOUNT, W_CAND, W_CPOS, W_ROWS) = range(18)

#: ``n_mode``: the paper's 0/1 flag for faces next to a completed batch, or a count.
N_FLAG, N_COUNT = 0, 1
