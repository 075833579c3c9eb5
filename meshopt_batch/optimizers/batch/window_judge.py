"""Exact predicted invocations of an order with one window changed, simulating only near it.

The window search (:mod:`.window_search`) asks, thousands of times, what an order would
predict on every profile of a target (paper 001, Algorithm 1, with the vertices numbered in
first-use order, as the result is written) if the triangles of one window ``[start, stop)``
were put in another order.  Simulating the whole buffer for each question costs ``T``
triangles per profile; this module answers the same question exactly from the stored run of
the current order and a simulation of the changed part only:

* Before the window nothing changes.  A profile with batches starts the simulation at the
  last batch start of the current run before ``start``, where its memory is empty
  (Algorithm 1, lines 16-27: a new batch forgets everything; a batch start at ``start``
  itself may move, since a batch ends where the next triangle would overflow it).
* After the window the triangles are the current order's again.  The changed run is
  simulated until it starts a batch where the current run also starts one: from there both
  are in the same (empty) state on the same triangles, so the rest is the current run's.
* A global FIFO without batches (Intel's 128 entries) starts from its content at ``start``
  (the last ``capacity`` vertices the current run shaded), and the runs agree again once both
  have shaded the same vertices at the same triangles ``capacity`` times in a row: both FIFOs
  then hold the same entries.
* First-use numbering: the vertices first used in the window keep their set of numbers,
  permuted; every other vertex keeps its number.  Rules that see vertex numbers are simulated
  again where those vertices are used: with fixed batches (llvmpipe's segments of 341
  triangles and its ``vertex % 256`` table) the segments the window overlaps and every later
  segment that uses one of them; otherwise (NVIDIA's 2^16 block rule past 2^16 vertices) up to
  a shared batch start past the last triangle that uses one of them.
* Any other profile (a global LRU or look-back, the aligned groups of a fitted profile) is
  simulated whole; a whole-range profile does not depend on the order.

So each answer equals :func:`~meshopt_batch.reuse.predict` of the whole changed, renumbered
buffer (the tests compare them on random windows), at the cost of a few batches per profile.

References
----------
Kerbl, B. et al. (2018).  Revisiting the Vertex Cache.  Proc. ACM Comput. Graph. Interact.
Tech. 1(2) (paper 001: Algorithm 1; sec. 3.3, the batch and block rules).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ...profiles import Profile
from ...reuse_kernels import MEMORY_KERNEL_KINDS, kernel_memory, run_kernel
from ...vertex_fetch import first_use_labels

__all__ = ["WindowJudge"]

_POPCOUNT = np.array([bin(k).count("1") for k in range(8)], np.int64)
_BLOCK = 1 << 16
_NONE = np.zeros(0, np.int64)


def _occurrences(order: np.ndarray, vertex_count: int) -> tuple[np.ndarray, np.ndarray]:
    """``(indptr, positions)``: the triangles using vertex ``v``, in order, are
    ``positions[indptr[v]:indptr[v + 1]]`` (once per corner)."""
    flat = order.reshape(-1)
    indptr = np.concatenate(([0], np.cumsum(np.bincount(flat, minlength=vertex_count))))
    return indptr, np.argsort(flat, kind="stable") // 3


@njit(cache=True)
def _renumber_window(window, start, indptr, positions, label, trial_label):
    """Number the vertices first used in the window in the window's new order, in
    ``trial_label`` (they keep their set of numbers); returns ``(those vertices, the last
    triangle of the order that uses one of them)``."""
    base = -1
    reach = -1
    for t in range(window.shape[0]):
        for i in range(3):
            v = window[t, i]
            if positions[indptr[v]] >= start:
                if base < 0 or label[v] < base:
                    base = label[v]
                reach = max(reach, positions[indptr[v + 1] - 1])
                trial_label[v] = -1
    fresh = np.empty(3 * window.shape[0], np.int64)
    count = 0
    for t in range(window.shape[0]):
        for i in range(3):
            v = window[t, i]
            if trial_label[v] == -1:
                trial_label[v] = base + count
                fresh[count] = v
                count += 1
    return fresh[:count], reach


@njit(cache=True)
def _move_positions(window, start, indptr, positions, cursor):
    """``positions`` after the window ``[start, start + len)`` took this order: each vertex's
    entries inside the window are rewritten in place (their number does not change)."""
    for t in range(window.shape[0]):
        for i in range(3):
            v = window[t, i]
            k = indptr[v]
            while positions[k] < start:
                k += 1
            cursor[v] = k
    for t in range(window.shape[0]):
        for i in range(3):
            v = window[t, i]
            positions[cursor[v]] = start + t
            cursor[v] += 1


@njit(cache=True)
def _segments_using(fresh, stop, indptr, positions, length):
    """The fixed-length segments (``length`` triangles) at or after triangle ``stop`` that
    use one of the vertices ``fresh``, sorted and distinct."""
    count = 0
    for v in fresh:
        count += indptr[v + 1] - indptr[v]
    found = np.empty(count, np.int64)
    count = 0
    for v in fresh:
        for k in range(indptr[v], indptr[v + 1]):
            if positions[k] >= stop:
                found[count] = positions[k] // length
                count += 1
    return np.unique(found[:count])


@njit(cache=True)
def _fifo_content(order, marks, start, capacity):
    """The last ``capacity`` vertices shaded before triangle ``start`` (oldest first), as
    triangles that an empty FIFO shades in that order: a global FIFO's state at ``start``.
    The first vertex is repeated to fill the first triangle (a repeat hits: nothing more is
    shaded)."""
    content = np.empty(capacity, np.int64)
    k = capacity
    t = start - 1
    while t >= 0 and k > 0:
        for i in range(2, -1, -1):
            if k > 0 and marks[t] & (1 << i):
                k -= 1
                content[k] = order[t, i]
        t -= 1
    got = content[k:]
    lead = (3 - got.shape[0] % 3) % 3
    padded = np.empty(got.shape[0] + lead, np.int64)
    padded[:lead] = got[0] if got.shape[0] else 0
    padded[lead:] = got
    return padded.reshape(-1, 3)


@njit(cache=True)
def _fifo_agreement(new_marks, old_marks, offset, since, capacity):
    """First triangle ``t`` (relative to the changed run) after which both runs have shaded
    the same vertices at the same triangles ``capacity`` times in a row, looking from
    ``since`` on; -1 when they do not within the run.  ``old_marks[offset + t]`` is the
    current run's mask at the changed run's triangle ``t``."""
    agreeing = 0
    for t in range(since, new_marks.shape[0]):
        if new_marks[t] == old_marks[offset + t]:
            agreeing += new_marks[t] & 1
            agreeing += (new_marks[t] >> 1) & 1
            agreeing += (new_marks[t] >> 2) & 1
            if agreeing >= capacity:
                return t + 1
        else:
            agreeing = 0
    return -1


class _Run:
    """One profile's run of the current order: every triangle's miss mask, where batches
    start, and invocations before every triangle."""

    def __init__(self, profile: Profile, labelled: np.ndarray, vertex_count: int):
        self.profile = profile
        self.marks = np.zeros(labelled.shape[0], np.uint8)
        starts = np.zeros(labelled.shape[0] + 1, np.int64)
        self.total, batches, _ = run_kernel(profile, labelled, vertex_count, starts, _NONE, self.marks)
        self.is_start = np.zeros(labelled.shape[0] + 1, bool)
        self.is_start[starts[:batches]] = True
        self.is_start[-1] = True
        self.before = np.concatenate(([0], np.cumsum(_POPCOUNT[self.marks])))
        self.batch_starts = np.flatnonzero(self.is_start)
        # a run is at most the whole order and a FIFO's replayed content
        self.memory = (kernel_memory(profile, vertex_count, labelled.shape[0] + profile.memory_size)
                       if profile.memory in MEMORY_KERNEL_KINDS else None)

    def between(self, lo: int, hi: int) -> int:
        """Invocations of triangles ``[lo, hi)``."""
        return int(self.before[hi] - self.before[lo])

    def replace(self, pieces, starts) -> None:
        """Take the changed run's miss masks, ``(lo, marks)`` for triangles ``[lo, lo +
        len(marks))`` each, and its batch starts in the first piece (None: unchanged)."""
        for lo, marks in pieces:
            hi = lo + marks.shape[0]
            if starts is not None:
                self.is_start[lo:hi] = False
                self.is_start[starts] = True
                kept = self.batch_starts
                self.batch_starts = np.concatenate((kept[kept < lo], starts, kept[kept >= hi]))
                starts = None
            delta = int(_POPCOUNT[marks].sum()) - self.between(lo, hi)
            self.marks[lo:hi] = marks
            self.before[lo + 1:hi + 1] = self.before[lo] + np.cumsum(_POPCOUNT[marks])
            self.before[hi + 1:] += delta


class WindowJudge:
    """An order, its predicted invocations on every profile, and exact answers to "what if
    the triangles ``[start, stop)`` took this order" (see the module docstring).

    Parameters
    ----------
    triangles : (T, 3) int array
        The order (any vertex numbers; it is judged numbered in first-use order).
    vertex_count : int
        Vertex buffer size.
    profiles : sequence of Profile
        The profiles to judge on, as the hardware sees this buffer (for instance
        :meth:`~meshopt_batch.targets.Target.evaluation_profiles`).

    Attributes
    ----------
    order : (T, 3) int64 array
        The current order (read-only to callers).
    invocations : (P,) int64 array
        Its predicted invocations, one per profile.
    simulated : int
        Triangles simulated by all trials so far (what a search's work bound counts).
    """

    def __init__(self, triangles: np.ndarray, vertex_count: int, profiles):
        self.order = np.array(triangles, np.int64, copy=True)
        self.vertex_count = int(vertex_count)
        self.profiles = tuple(profiles)
        self._label = first_use_labels(self.order, self.vertex_count)
        self._trial_label = self._label.copy()
        self._indptr, self._positions = _occurrences(self.order, self.vertex_count)
        self._cursor = np.zeros(self.vertex_count, np.int64)
        labelled = self._label[self.order]
        self._runs = [_Run(p, labelled, self.vertex_count) for p in self.profiles]
        self.invocations = np.array([r.total for r in self._runs], np.int64)
        self._pending = None
        self._region = None
        self.simulated = 0

    def _way(self, profile: Profile) -> str:
        """How a change is simulated for this profile: ``segments`` (fixed batches that see
        vertex numbers), ``batched``, ``fifo``, ``constant`` or ``whole``."""
        numbers = profile.memory in ("direct", "groups") or (profile.boundary_16bit and self.vertex_count > _BLOCK)
        if profile.memory == "range":
            return "constant"
        if profile.batched and profile.memory != "groups":
            fixed = profile.max_size > 0 and (profile.max_uniques == 0 or profile.max_uniques >= profile.max_size)
            return "segments" if numbers and fixed else "batched_numbers" if numbers else "batched"
        if profile.memory == "fifo" and not numbers:
            return "fifo"
        return "whole"

    def trial(self, start: int, stop: int, window: np.ndarray) -> tuple[np.ndarray, int]:
        """Predicted invocations on every profile if ``order[start:stop]`` were ``window``
        (the same triangles in another order; corners may rotate), and the triangles
        simulated (the mean over profiles).  :meth:`accept` then makes it the order."""
        self._forget()
        self._region = None
        window = np.array(window, np.int64)  # a copy: the caller may pass a view of the order
        fresh, reach = _renumber_window(window, start, self._indptr, self._positions, self._label,
                                        self._trial_label)
        changes = []
        self._pending = (start, stop, window, fresh, changes)
        out = np.empty(len(self._runs), np.int64)
        simulated = 0
        for k, run in enumerate(self._runs):
            way = self._way(run.profile)
            if way == "constant":
                out[k], change, cost = run.total, None, 0
            elif way == "segments":
                out[k], change, cost = self._segments(run, start, stop, window, fresh)
            elif way in ("batched", "batched_numbers"):
                need = max(stop, reach + 1) if way == "batched_numbers" else stop
                out[k], change, cost = self._batched(run, start, stop, window, need)
            elif way == "fifo":
                out[k], change, cost = self._fifo(run, start, stop, window)
            else:
                out[k], change, cost = self._whole(run, start, stop, window)
            changes.append((change, int(out[k])))
            simulated += cost
        simulated //= max(len(self._runs), 1)
        self.simulated += simulated
        return out, simulated

    def accept(self) -> None:
        """Make the last trial's order the current one."""
        start, stop, window, fresh, changes = self._pending
        self.order[start:stop] = window
        self._label[fresh] = self._trial_label[fresh]
        _move_positions(window, start, self._indptr, self._positions, self._cursor)
        for run, (change, total) in zip(self._runs, changes, strict=True):
            if change is not None:
                run.replace(*change)
            run.total = total
        self.invocations = np.array([r.total for r in self._runs], np.int64)
        self._pending = None

    def _forget(self) -> None:
        if self._pending is not None:
            fresh = self._pending[3]
            self._trial_label[fresh] = self._label[fresh]
            self._pending = None

    def _changed(self, lo: int, hi: int, start: int, stop: int, window: np.ndarray) -> np.ndarray:
        """Triangles ``[lo, hi)`` of the changed order (``lo <= start``, ``hi >= stop``), in its
        first-use numbers (kept for the trial, so the profiles share one copy)."""
        have = self._region
        if have is None or lo < have[0] or hi > have[1]:
            a, b = (lo, hi) if have is None else (min(lo, have[0]), max(hi, have[1]))
            have = self._region = (a, b, self._trial_label[np.concatenate((self.order[a:start], window,
                                                                            self.order[stop:b]))])
        return have[2][lo - have[0]:hi - have[0]]

    def _simulate(self, run: _Run, tris: np.ndarray):
        marks = np.zeros(tris.shape[0], np.uint8)
        starts = np.zeros(tris.shape[0] + 1, np.int64)
        invocations, batches, _ = run_kernel(run.profile, tris, self.vertex_count, starts, _NONE, marks, run.memory)
        return marks, starts[:batches], invocations

    def _until_runs_agree(self, run: _Run, lo: int, hi: int, simulate, agree):
        """Simulate the changed order from triangle ``lo`` (``simulate(hi)`` -> the miss masks
        and batch starts of ``[lo, hi)``), doubling ``hi`` until ``agree(marks, starts)`` names
        the triangle from which both runs are alike (or the end): ``(invocations, change,
        triangles simulated)``."""
        n = self.order.shape[0]
        cost = 0
        while True:
            marks, starts = simulate(hi)
            cost += hi - lo
            sync = agree(marks, starts)
            if sync is None and hi < n:
                hi = min(n, lo + 2 * (hi - lo))
                continue
            sync = n if sync is None else sync
            kept = marks[:sync - lo]
            inv = run.total - run.between(lo, sync) + int(_POPCOUNT[kept].sum())
            return inv, ([(lo, kept)], None if starts is None else starts[starts < sync]), cost

    def _batched(self, run: _Run, start, stop, window, need):
        """From the last batch start before the window to the first batch start at or after
        ``need`` that both runs share."""
        lo = int(run.batch_starts[max(np.searchsorted(run.batch_starts, start) - 1, 0)])
        span = 2 * max(run.profile.max_size // 3, run.profile.max_uniques // 3, 1)

        def simulate(hi):
            marks, starts, _ = self._simulate(run, self._changed(lo, hi, start, stop, window))
            return marks, starts + lo

        def agree(marks, starts):
            common = starts[(starts >= need) & run.is_start[starts]]
            return int(common[0]) if common.shape[0] and common[0] > lo else None

        return self._until_runs_agree(run, lo, min(self.order.shape[0], need + span), simulate, agree)

    def _segments(self, run: _Run, start, stop, window, fresh):
        """Fixed batches (llvmpipe's segments) that see vertex numbers: the segments the window
        overlaps, and the later ones that use a vertex the change renumbered."""
        n = self.order.shape[0]
        length = (run.profile.max_size + 1) // 3
        first, last = start // length, (stop - 1) // length
        later = _segments_using(fresh, (last + 1) * length, self._indptr, self._positions, length)
        spans = [(first * length, min(n, (last + 1) * length))] + [(k * length, min(n, (k + 1) * length))
                                                                 for k in later]
        parts = [self._changed(*spans[0], start, stop, window)] + [self._trial_label[self.order[a:b]]
                                                                   for a, b in spans[1:]]
        marks = self._simulate(run, np.concatenate(parts))[0]
        inv = run.total
        pieces = []
        offset = 0
        for a, b in spans:
            piece = marks[offset:offset + b - a]
            inv += int(_POPCOUNT[piece].sum()) - run.between(a, b)
            pieces.append((a, piece))
            offset += b - a
        return inv, (pieces, None), offset

    def _fifo(self, run: _Run, start, stop, window):
        """A global FIFO: from its content at the window to the triangle after which both runs
        have shaded the same vertices ``capacity`` times in a row."""
        capacity = run.profile.memory_size
        lead = self._label[_fifo_content(self.order, run.marks, start, capacity)]

        def simulate(hi):
            tris = np.concatenate((lead, self._changed(start, hi, start, stop, window)))
            return self._simulate(run, tris)[0][lead.shape[0]:], None

        def agree(marks, _):
            sync = _fifo_agreement(marks, run.marks, start, stop - start, capacity)
            return start + sync if sync >= 0 else None

        return self._until_runs_agree(run, start, min(self.order.shape[0], stop + 3 * capacity), simulate, agree)

    def _whole(self, run: _Run, start, stop, window):
        n = self.order.shape[0]
        marks, starts, invocations = self._simulate(run, self._changed(0, n, start, stop, window))
        return int(invocations), ([(0, marks)], starts), n
