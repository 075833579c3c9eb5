"""The window search, compiled: reorder one run of consecutive triangles at a time, keep what
lowers the objective without passing any GPU's cap.

An order is judged by its predicted invocations on every profile of a target (paper 001,
Algorithm 1, on the whole buffer, so that batch boundaries moved by a change and the caches'
state after it are counted; :mod:`.window_judge` answers it near the window).  :func:`search_windows`
slides windows of several lengths over the order, each length twice (the second pass offset by
half a window, so a change may straddle a boundary of the first), replaces a window's triangles
by a local move's order of them (:mod:`.moves`), and keeps the change when the objective
(:mod:`.objective`) is lower and no profile passes its cap.  Each move's schedule runs in rounds
while it keeps changes, the moves take turns, and the turns go on until none keeps a change
(or the work bound is spent): the search ends in an order that no window of any move improves.

A window is tried again only where a change was kept near it (within ``margin`` triangles)
since that move last tried it, as "don't look" bits do in local search: a window whose
triangles and surroundings are as they were gives the move the same order and the judge the
same answer, so the later rounds and turns cost only the windows near what changed.  Every
trial -- the move, the judgement on every profile and the acceptance -- runs in one compiled
loop; Python runs once per move's rounds.

This reaches orders a greedy constructive optimizer does not: where the start follows rows of
a regular surface (which a long FIFO such as Intel's serves almost perfectly), the windows fold
a few rows' triangles into compact patches that the batch rules of NVIDIA and AMD reuse better,
while the FIFO still finds the rows it needs.

References
----------
Bentley, J. L. (1992).  Fast algorithms for geometric traveling salesman problems.  ORSA J.
Computing 4(4) ("don't look" bits).
Kerbl, B. et al. (2018).  Revisiting the Vertex Cache.  Proc. ACM Comput. Graph. Interact.
Tech. 1(2) (paper 001: Algorithm 1, the predictor every window is judged with).
Hoppe, H. (1999).  Optimization of mesh locality for transparent vertex caching.  SIGGRAPH
(local reordering judged by a cache simulation).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numba import njit

from .moves import MOVE_NAMES, local_order, move_buffers
from .objective import score
from .window_judge import accept, new_state, reject, trial, trial_order

__all__ = ["WindowSearch"]


_BLOCK = 32


@njit(cache=True, nogil=True)
def _rounds(state, move, windows, used, rounds, work, spent, reference, caps, worst_weight, buffers, kcache_size, out,
            margin, tried, changed, version, rank, scale, threshold, log_spans, log_rows):
    """One move's rounds (see the module docstring) from ``spent`` work done: ``(changes kept,
    work done in all, trials, changes logged)``.  ``tried[slot]`` is the ``version`` (changes kept
    in the whole search) when the move last tried the window ``slot``, ``changed[block]`` the
    version when a change last reached a block of triangles; ``margin`` < 0 tries every window
    every round.  Each change kept is logged, while there is room, as ``(start, stop, first row)``
    in ``log_spans`` and the window's new triangles from that row of ``log_rows``."""
    order, totals, pending = state.order, state.totals, state.pending
    n = order.shape[0]
    p_count = totals.shape[0]
    kept = 0
    trials = 0
    logged = 0
    rows = 0
    current = score(totals, reference, worst_weight)
    for _ in range(rounds):
        kept_before = kept
        for k in range(windows.shape[0]):
            if not used[k]:
                continue
            width = windows[k]
            for o in range(2):
                slot = tried[2 * k + o]
                for j, start in enumerate(range(o * (width // 2), n, width)):
                    stop = min(start + width, n)
                    if stop - start < 2:
                        continue
                    if spent >= work:
                        return kept, spent, trials, logged
                    if margin >= 0 and slot[j] >= 0:
                        near = 0
                        for b in range(max(0, start - margin) // _BLOCK, min(n, stop + margin - 1) // _BLOCK + 1):
                            near = max(near, changed[b])
                        if near <= slot[j]:
                            continue
                    w = stop - start
                    window = out[:w]
                    local_order(move, order[start:stop], window, buffers, kcache_size)
                    spent += w
                    same = True
                    for t in range(w):
                        for i in range(3):
                            same &= window[t, i] == order[start + t, i]
                    if not same:
                        cost, complete = trial(state, window, start, stop, rank, scale, caps, threshold)
                        spent += cost
                        trials += 1
                        fits = complete
                        for p in range(p_count):
                            fits &= pending[p] <= caps[p]
                        got = score(pending, reference, worst_weight) if fits else current
                        if got < current:
                            accept(state, window, start, stop)
                            current = got
                            if logged == kept and logged < log_spans.shape[0] and rows + w <= log_rows.shape[0]:
                                log_spans[logged, 0], log_spans[logged, 1], log_spans[logged, 2] = start, stop, rows
                                log_rows[rows:rows + w] = window
                                rows += w
                                logged += 1
                            kept += 1
                            version[0] += 1
                            for b in range(start // _BLOCK, (stop - 1) // _BLOCK + 1):
                                changed[b] = version[0]
                        else:
                            reject(state)
                    slot[j] = version[0]
        if kept == kept_before:
            break
    return kept, spent, trials, logged


class WindowSearch:
    """A window search from one order, which can be run in steps (see the module docstring).

    Parameters
    ----------
    triangles : (T, 3) int array
        The start order.
    vertex_count : int
    profiles : sequence of Profile
        The profiles to judge on, as the hardware sees this buffer.
    reference : (P,) float array, keyword-only
        Each profile's invocations the objective's ratios are taken to (:mod:`.objective`).
    caps : (P,) array, keyword-only
        The most each profile may predict (the start must be within them).
    windows : sequence of int, keyword-only
        Window lengths in triangles, in the order they are tried.
    worst_weight : float, keyword-only
        The objective's weight of the worst ratio.
    kcache_size : int, keyword-only
        The cache size of the K-Cache move.
    margin : int, keyword-only
        The "don't look" distance in triangles (< 0: every window is tried in every round).
    threshold : float, keyword-only
        A trial is refused without judging the remaining profiles once the changes judged so far
        (cheapest profiles first, each as a share of its reference figure, in invocations of
        the mean profile) add up to more than this (``np.inf``: every profile is judged).
    refuse : callable, keyword-only
        Order -> True where an order may not be kept (e.g. its index-codec size): of a move
        whose result it refuses, the longest run of its first changes it takes is kept (a
        bisection over the changes in the order they were kept), and the next move goes on.

    Attributes
    ----------
    order : (T, 3) int64 ndarray
        The current order (the start's vertex numbers).
    invocations : (P,) int64 ndarray
        Its predicted invocations per profile.
    kept : int
        Window changes kept so far.
    work : int
        Work done so far: triangles the judge simulated (the mean over the profiles) plus the
        triangles the moves reordered (what a work bound counts).
    trials : int
        Window changes judged so far.
    """

    def __init__(self, triangles: np.ndarray, vertex_count: int, profiles, *, reference, caps, windows,
                 worst_weight: float, kcache_size: int, margin: int = -1, threshold: float = np.inf,
                 refuse: Callable[[np.ndarray], bool] | None = None):
        self._state = new_state(triangles, vertex_count, profiles)
        self._vertex_count, self._profiles = vertex_count, profiles
        n = self._state.order.shape[0]
        self._widths = np.asarray(windows, np.int64)
        rows = int(max(1, min(n, self._widths.max(initial=1))))
        self._buffers = move_buffers(vertex_count, rows)
        self._out = np.zeros((rows, 3), np.int64)
        self._reference = np.asarray(reference, np.float64)
        self._caps = np.asarray(caps, np.float64)
        self._scale = self._reference.mean() / np.maximum(self._reference, 1.0)
        self._rank = trial_order(self._state)
        self._worst_weight, self._kcache_size = float(worst_weight), int(kcache_size)
        self._margin, self._threshold, self._refuse = int(margin), float(threshold), refuse
        self._tried = np.full((len(MOVE_NAMES), 2 * self._widths.shape[0],
                               n // max(int(self._widths.min(initial=1)), 1) + 2), -1, np.int64)
        self._changed = np.zeros(n // _BLOCK + 2, np.int64)
        self._version = np.ones(1, np.int64)
        self._log_spans = np.zeros((max(n, 1), 3), np.int64)
        self._log_rows = np.zeros((max(4 * n, 1), 3), np.int64)
        self.kept = self.work = self.trials = 0

    @property
    def order(self) -> np.ndarray:
        return self._state.order

    @property
    def invocations(self) -> np.ndarray:
        return self._state.totals

    def _undo(self, before: np.ndarray, logged: int) -> int:
        """Keep the longest run of the last move's first changes (of the ``logged`` ones) whose
        order ``refuse`` takes (a bisection: the first changes gained most), the move's start
        where none is; returns how many are kept."""

        def replayed(count):
            order = before.copy()
            for start, stop, row in self._log_spans[:count]:
                order[start:stop] = self._log_rows[row:row + stop - start]
            return order

        low, high = 0, logged          # low's order is taken; above high none is known to be
        while low < high:
            middle = (low + high + 1) // 2
            if self._refuse(replayed(middle)):
                high = middle - 1
            else:
                low = middle
        self._state = new_state(replayed(low), self._vertex_count, self._profiles)
        self._rank = trial_order(self._state)
        return low

    def run(self, moves, *, rounds: int, turns: int, work: int, lengths: dict | None = None) -> int:
        """Let ``moves`` take turns (at most ``turns``; a turn that keeps nothing ends it), each
        in at most ``rounds`` rounds, until the search's work reaches ``work`` in all; windows
        a move tried before are tried again only near what changed since.  ``lengths`` maps a
        move to the window lengths it uses (default: all of the search's).  Returns the changes
        kept."""
        kept = 0
        for _ in range(turns):
            kept_in_turn = 0
            for move in moves:
                if self.work >= work:
                    return kept
                before = self._state.order.copy() if self._refuse is not None else None
                used = np.ones(self._widths.shape[0], np.bool_)
                if lengths is not None and move in lengths:
                    used = np.isin(self._widths, np.asarray(lengths[move], np.int64))
                changes, self.work, tried, logged = _rounds(
                    self._state, move, self._widths, used, rounds, work, self.work, self._reference, self._caps,
                    self._worst_weight, self._buffers, self._kcache_size, self._out, self._margin, self._tried[move],
                    self._changed, self._version, self._rank, self._scale, self._threshold, self._log_spans,
                    self._log_rows)
                self.trials += tried
                if changes and self._refuse is not None and self._refuse(self._state.order):
                    changes = self._undo(before, logged if logged == changes else 0)
                self.kept += changes
                kept += changes
                kept_in_turn += changes
            if not kept_in_turn:
                break
        return kept
