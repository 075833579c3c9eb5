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
  Past the window each batch is the current order's batch at the same triangle, so where a
  batch's length and misses depend on its own triangles only (the batch rules that do not see
  vertex numbers) they are looked up, each computed once and kept until a change reaches it,
  instead of simulated again (NVIDIA's batches agree again about 1,000 triangles after a
  window: a sweep of every window length over meshoptimizer's order, judged on the five
  profiles of ``portable``, took 133 -> 106 us per trial on bunny, 132 -> 91 on FlightHelmet's
  primitive 4; the torus's, whose batches agree sooner, 88 -> 85).  The work a trial reports
  is still the stretch the simulation would take, so a search's work bound means the same
  search either way.
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
Each profile's answer is one compiled call (:func:`_batched_lookup_trial`, :func:`_fifo_trial`,
:func:`_segments_trial` over :func:`~meshopt_batch.reuse_kernels.run_short`) into buffers the
run keeps, read back only when the change is accepted: the Python between the kernels, not
the kernels, was most of a trial's time (bunny: 590 -> 200 us per trial of five profiles).

References
----------
Kerbl, B. et al. (2018).  Revisiting the Vertex Cache.  Proc. ACM Comput. Graph. Interact.
Tech. 1(2) (paper 001: Algorithm 1; sec. 3.3, the batch and block rules).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ...profiles import Profile
from ...reuse_kernels import MEMORY_KERNEL_KINDS, run_kernel, run_short, short_run_kernel, short_run_memory
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


@njit(cache=True)
def _fill_changed(order, window, start, stop, label, lo, hi, out):
    """Triangles ``[lo, hi)`` of the order with ``[start, stop)`` replaced by ``window``, in
    the numbers ``label``, into ``out``."""
    for t in range(lo, hi):
        source = window[t - start] if start <= t < stop else order[t]
        for i in range(3):
            out[t - lo, i] = label[source[i]]


@njit(cache=True)
def _misses(marks, lo, hi):
    """Vertices shaded by triangles ``[lo, hi)`` of a run's miss masks."""
    count = 0
    for t in range(lo, hi):
        m = marks[t]
        count += (m & 1) + ((m >> 1) & 1) + ((m >> 2) & 1)
    return count


@njit(cache=True)
def _batched_trial(kernel, memory, order, window, start, stop, label, need, span, batch_starts, is_start, before,
                   tris, marks, starts):
    """The changed order simulated from the last batch start before ``start``, doubling the
    stretch until it starts a batch at or after ``need`` where the current run starts one too:
    ``(change in invocations, first triangle simulated, that shared batch start, batches
    before it, triangles simulated)``; the stretch's masks and batch starts (relative) are
    left in ``marks`` and ``starts``."""
    n = order.shape[0]
    k = np.searchsorted(batch_starts, start) - 1
    lo = batch_starts[max(k, 0)]
    hi = min(n, need + span)
    filled = lo
    cost = 0
    while True:
        _fill_changed(order, window, start, stop, label, filled, hi, tris[filled - lo:])
        filled = hi
        batches = run_short(kernel, memory, tris[:hi - lo], starts, marks)[1]
        cost += hi - lo
        sync = -1
        kept = batches
        for b in range(1, batches):
            s = starts[b] + lo
            if s >= need and is_start[s]:
                sync, kept = s, b
                break
        if sync < 0 and hi < n:
            hi = min(n, lo + 2 * (hi - lo))
            continue
        if sync < 0:
            sync = n
        delta = _misses(marks, 0, sync - lo) - (before[sync] - before[lo])
        return delta, lo, sync, kept, cost


@njit(cache=True)
def _batch_from(kernel, memory, order, label, at, length, tris, marks, starts):
    """The batch that starts at triangle ``at`` of the order (at most ``length`` triangles):
    ``(where the next one starts, vertices it shades)``.  A batch begins with an empty memory,
    so both depend on its own triangles only."""
    n = order.shape[0]
    count = min(n - at, length)
    for t in range(count):
        for i in range(3):
            tris[t, i] = label[order[at + t, i]]
    batches = run_short(kernel, memory, tris[:count], starts, marks)[1]
    end = starts[1] if batches > 1 else count
    return at + end, _misses(marks, 0, end)


@njit(cache=True)
def _batched_lookup_trial(kernel, memory, order, window, start, stop, label, need, span, length, batch_starts,
                          is_start, before, ends, shaded, tris, marks, starts, one_tris, one_marks, one_starts):
    """:func:`_batched_trial`'s answer with the batches after the window looked up: the changed
    order is simulated from the last batch start before ``start`` to its first batch start at or
    after ``need``; from there the triangles are the current order's, so each next batch is the
    one the current order has at that triangle (``ends`` and ``shaded``, filled on first use, -1
    where unknown) until a batch starts where the current run starts one.  ``(change in
    invocations, triangles simulated)``, the second counted as :func:`_batched_trial` counts
    them (its doubling stretches up to that shared start), so a search's work bound means the
    same search whichever way it is answered."""
    n = order.shape[0]
    k = np.searchsorted(batch_starts, start) - 1
    lo = batch_starts[max(k, 0)]
    hi = min(n, need + length)
    _fill_changed(order, window, start, stop, label, lo, hi, tris)
    batches = run_short(kernel, memory, tris[:hi - lo], starts, marks)[1]
    at = n
    for b in range(1, batches):
        if starts[b] + lo >= need:
            at = starts[b] + lo
            break
    misses = _misses(marks, 0, at - lo)
    while not is_start[at]:
        if ends[at] < 0:
            ends[at], shaded[at] = _batch_from(kernel, memory, order, label, at, length, one_tris, one_marks,
                                               one_starts)
        misses += shaded[at]
        at = ends[at]
    hi = min(n, need + span)
    cost = hi - lo
    while at >= hi and hi < n:
        hi = min(n, lo + 2 * (hi - lo))
        cost += hi - lo
    return misses - (before[at] - before[lo]), cost


@njit(cache=True)
def _fifo_trial(kernel, memory, order, window, start, stop, label, run_marks, before, capacity, tris, marks, starts):
    """A global FIFO from its content at ``start`` (replayed first), doubling the stretch until
    both runs have shaded the same vertices at the same triangles ``capacity`` times in a row:
    ``(change in invocations, triangles replayed, where the runs agree again, triangles
    simulated)``; the masks are left in ``marks`` after the replayed ones."""
    n = order.shape[0]
    lead = _fifo_content(order, run_marks, start, capacity)
    replayed = lead.shape[0]
    for t in range(replayed):
        for i in range(3):
            tris[t, i] = label[lead[t, i]]
    hi = min(n, stop + 3 * capacity)
    filled = start
    cost = 0
    while True:
        _fill_changed(order, window, start, stop, label, filled, hi, tris[replayed + filled - start:])
        filled = hi
        run_short(kernel, memory, tris[:replayed + hi - start], starts, marks)
        cost += hi - start
        sync = _fifo_agreement(marks[replayed:replayed + hi - start], run_marks, start, stop - start, capacity)
        if sync < 0 and hi < n:
            hi = min(n, start + 2 * (hi - start))
            continue
        sync = n if sync < 0 else start + sync
        delta = _misses(marks, replayed, replayed + sync - start) - (before[sync] - before[start])
        return delta, replayed, sync, cost


@njit(cache=True)
def _segments_trial(kernel, memory, order, window, start, stop, label, fresh, indptr, positions, length, before,
                    tris, marks, starts, spans):
    """Fixed batches of ``length`` triangles that see vertex numbers: the segments the window
    overlaps and the later ones that use a renumbered vertex (``fresh``), simulated one after
    another: ``(change in invocations, segments, triangles simulated)``; the segments are left
    in ``spans`` and their masks, one after another, in ``marks``."""
    n = order.shape[0]
    first, last = start // length, (stop - 1) // length
    later = _segments_using(fresh, (last + 1) * length, indptr, positions, length)
    spans[0, 0], spans[0, 1] = first * length, min(n, (last + 1) * length)
    for j in range(later.shape[0]):
        spans[j + 1, 0], spans[j + 1, 1] = later[j] * length, min(n, (later[j] + 1) * length)
    count = later.shape[0] + 1
    offset = 0
    before_total = 0
    for j in range(count):
        a, b = spans[j, 0], spans[j, 1]
        _fill_changed(order, window, start, stop, label, a, b, tris[offset:])
        offset += b - a
        before_total += before[b] - before[a]
    run_short(kernel, memory, tris[:offset], starts, marks)
    return _misses(marks, 0, offset) - before_total, count, offset


class _Run:
    """One profile's run of the current order: every triangle's miss mask, where batches
    start, invocations before every triangle, and how a change is simulated (``way``: see
    :meth:`WindowJudge._way`) with the buffers a trial leaves its masks and batch starts in."""

    def __init__(self, profile: Profile, labelled: np.ndarray, vertex_count: int, way: str):
        self.profile = profile
        self.way = way
        n = labelled.shape[0]
        self.marks = np.zeros(n, np.uint8)
        starts = np.zeros(n + 1, np.int64)
        self.total, batches, _ = run_kernel(profile, labelled, vertex_count, starts, _NONE, self.marks)
        self.is_start = np.zeros(n + 1, bool)
        self.is_start[starts[:batches]] = True
        self.is_start[-1] = True
        self.before = np.concatenate(([0], np.cumsum(_POPCOUNT[self.marks])))
        self.batch_starts = np.flatnonzero(self.is_start)
        self.change = None
        # a batched trial's first stretch past the window (two of the longest batches), and the
        # most triangles a batch (a fixed segment) holds
        self.span = 2 * max(profile.max_size // 3, profile.max_uniques // 3, 1)
        self.length = (profile.max_size + 1) // 3
        if profile.memory in MEMORY_KERNEL_KINDS and way != "whole":
            # a trial's stretch is at most the whole order and a FIFO's replayed content
            rows = n + profile.memory_size // 3 + 2
            self.kernel = short_run_kernel(profile)
            self.memory = short_run_memory(profile, vertex_count, rows)
            self.trial_marks = np.zeros(rows, np.uint8)
            self.trial_starts = np.zeros(rows + 1, np.int64)
            self.spans = np.zeros((n // max(self.length, 1) + 2, 2), np.int64)
        if way == "batched" and self.length > 0 and profile.memory in MEMORY_KERNEL_KINDS:
            # the current order's batch at each triangle, where a trial looks one up (-1: not yet)
            self.ends = np.full(n + 1, -1, np.int64)
            self.shaded = np.zeros(n + 1, np.int64)
            self.one_tris = np.zeros((self.length, 3), labelled.dtype)
            self.one_marks = np.zeros(self.length, np.uint8)
            self.one_starts = np.zeros(self.length + 1, np.int64)
        else:
            self.ends = None

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

    def take_change(self) -> None:
        """Make the last trial's change (:attr:`change`) this run's."""
        if self.change is None:
            return
        way, *where = self.change
        if way == "batched":
            lo, sync, kept = where
            self.replace([(lo, self.trial_marks[:sync - lo].copy())], self.trial_starts[:kept] + lo)
        elif way == "fifo":
            replayed, start, sync = where
            self.replace([(start, self.trial_marks[replayed:replayed + sync - start].copy())], None)
        elif way == "segments":
            pieces, offset = [], 0
            for lo, hi in self.spans[:where[0]]:
                pieces.append((int(lo), self.trial_marks[offset:offset + hi - lo].copy()))
                offset += hi - lo
            self.replace(pieces, None)
        else:
            self.replace(*where)


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
        Triangles simulated by all trials so far, the batches looked up counted as simulated
        (what a search's work bound counts).
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
        self._runs = [_Run(p, labelled, self.vertex_count, self._way(p)) for p in self.profiles]
        # the changed stretch in first-use numbers, one profile at a time
        self._tris = np.zeros((labelled.shape[0] + max((p.memory_size for p in self.profiles), default=0) // 3 + 2, 3),
                              labelled.dtype)
        self.invocations = np.array([r.total for r in self._runs], np.int64)
        self._pending = None
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
        window = np.array(window, np.int64)  # a copy: the caller may pass a view of the order
        fresh, reach = _renumber_window(window, start, self._indptr, self._positions, self._label,
                                        self._trial_label)
        self._pending = (start, stop, window, fresh)
        out = np.empty(len(self._runs), np.int64)
        simulated = 0
        label, order = self._trial_label, self.order
        for k, run in enumerate(self._runs):
            way = run.way
            run.change = None
            if way == "constant":
                out[k] = run.total
                continue
            if way == "segments":
                delta, count, cost = _segments_trial(
                    run.kernel, run.memory, order, window, start, stop, label, fresh, self._indptr, self._positions,
                    run.length, run.before, self._tris, run.trial_marks, run.trial_starts, run.spans)
                run.change = ("segments", count)
            elif run.ends is not None:
                delta, cost = _batched_lookup_trial(
                    run.kernel, run.memory, order, window, start, stop, label, stop, run.span, run.length,
                    run.batch_starts, run.is_start, run.before, run.ends, run.shaded, self._tris, run.trial_marks,
                    run.trial_starts, run.one_tris, run.one_marks, run.one_starts)
                run.change = ("lookup",)
            elif way in ("batched", "batched_numbers"):
                need = max(stop, reach + 1) if way == "batched_numbers" else stop
                delta, lo, sync, kept, cost = _batched_trial(
                    run.kernel, run.memory, order, window, start, stop, label, need, run.span,
                    run.batch_starts, run.is_start, run.before, self._tris, run.trial_marks, run.trial_starts)
                run.change = ("batched", lo, sync, kept)
            elif way == "fifo":
                delta, replayed, sync, cost = _fifo_trial(
                    run.kernel, run.memory, order, window, start, stop, label, run.marks, run.before,
                    run.profile.memory_size, self._tris, run.trial_marks, run.trial_starts)
                run.change = ("fifo", replayed, start, sync)
            else:
                delta, change, cost = self._whole(run, start, stop, window)
                run.change = ("whole", *change)
            out[k] = run.total + delta
            simulated += cost
        simulated //= max(len(self._runs), 1)
        self.simulated += simulated
        self._pending += (out,)
        return out, simulated

    def accept(self) -> None:
        """Make the last trial's order the current one."""
        start, stop, window, fresh, out = self._pending
        for run in self._runs:
            if run.change is not None and run.change[0] == "lookup":
                # the looked-up batches' masks: the changed stretch simulated up to the shared start
                _, lo, sync, kept, _ = _batched_trial(
                    run.kernel, run.memory, self.order, window, start, stop, self._trial_label, stop,
                    run.span, run.batch_starts, run.is_start, run.before, self._tris, run.trial_marks,
                    run.trial_starts)
                run.change = ("batched", lo, sync, kept)
                run.ends[max(0, start - run.length + 1):stop] = -1
        self.order[start:stop] = window
        self._label[fresh] = self._trial_label[fresh]
        _move_positions(window, start, self._indptr, self._positions, self._cursor)
        for run, total in zip(self._runs, out, strict=True):
            run.take_change()
            run.total = int(total)
        self.invocations = out.copy()
        self._pending = None

    def _forget(self) -> None:
        if self._pending is not None:
            fresh = self._pending[3]
            self._trial_label[fresh] = self._label[fresh]
            self._pending = None

    def _whole(self, run: _Run, start, stop, window):
        """Any other rule: the whole changed order, simulated from the start."""
        n = self.order.shape[0]
        tris = np.empty((n, 3), self._label.dtype)
        _fill_changed(self.order, window, start, stop, self._trial_label, 0, n, tris)
        marks = np.zeros(n, np.uint8)
        starts = np.zeros(n + 1, np.int64)
        invocations, batches, _ = run_kernel(run.profile, tris, self.vertex_count, starts, _NONE, marks)
        return int(invocations) - run.total, ([(0, marks)], starts[:batches]), n
