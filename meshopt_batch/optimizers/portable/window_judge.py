"""Exact predicted invocations of an order with one window changed, simulating only near it.

The window search (:mod:`.window_search`) asks, many thousands of times, what an order would predict
on every profile of a target (paper 001, Algorithm 1, vertices numbered in first-use order, as
the result is written) if the triangles of one window ``[start, stop)`` were put in another
order.  Simulating the whole buffer for each question costs ``T`` triangles per profile; the
functions here answer it exactly from the stored run of the current order and a simulation of
the changed part only, one *way* per profile:

``SEGMENTS``
    Fixed batches that see vertex numbers (llvmpipe's segments of 341 triangles and its
    ``vertex % 256`` table): the segments the window overlaps and every later segment that uses
    a vertex the window renumbers (the vertices first used in the window keep their set of
    numbers, permuted; every other vertex keeps its number).
``LOOKUP``
    Batches that do not see vertex numbers (NVIDIA, AMD): the changed run is simulated from the
    last batch start before the window until it starts a batch past the window; from there the
    triangles are the current order's, so each next batch is looked up (computed once per
    triangle it starts at, kept until a change reaches it) until a batch starts where the
    current run starts one: from there both runs are in the same empty state on the same
    triangles (Algorithm 1, lines 16-27: a new batch forgets everything).
``BATCHED``, ``BATCHED_NUMBERS``
    The same without lookups (a rule bounded by unique vertices only; a rule that sees numbers,
    NVIDIA's 2^16 block rule past 2^16 vertices, simulated past the last use of a renumbered
    vertex).
``FIFO``
    A global FIFO without batches (Intel's 128 entries) starts from its content at ``start``
    (the last ``capacity`` vertices the current run shaded) and the runs agree again once both
    have shaded the same vertices at the same triangles ``capacity`` times in a row.
``WHOLE``
    Any other rule (a global LRU or look-back): the whole changed order.
``CONSTANT``
    An order-free rule (aligned groups, whole range).

So each answer equals :func:`~meshopt_batch.model.prediction.predict` of the whole changed, renumbered
buffer (the tests compare them on random windows).  The *work* a trial reports is the
triangles it simulated, the batches it computed to look up included (the mean over the
profiles).

The judge's state is one :class:`JudgeState` of arrays (every profile's row in each), built by
:func:`new_state` and changed only by the compiled :func:`trial` and :func:`accept`.

References
----------
Kerbl, B., Kenzel, M., Ivanchenko, E., Schmalstieg, D., Steinberger, M. (2018).  Revisiting the
Vertex Cache: Understanding and Optimizing Vertex Processing on the modern GPU.  Proc. ACM
Comput. Graph. Interact. Tech. 1(2) (paper 001: Algorithm 1; sec. 3.3, the batch and block
rules).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ...model.profiles import Profile
from ...model.reuse_kernels import MEMORY_KERNEL_KINDS, run_kernel, run_short
from ...vertices.vertex_fetch import first_use_labels

__all__ = ["JudgeState", "accept", "new_state", "reject", "trial", "trial_order"]

CONSTANT, SEGMENTS, LOOKUP, BATCHED, BATCHED_NUMBERS, FIFO, WHOLE = range(7)
_BLOCK = 1 << 16
_NONE = np.zeros(0, np.int64)
_POPCOUNT = np.array([bin(k).count("1") for k in range(8)], np.int64)
# columns of JudgeState.params
_WAY, _KIND, _MAX_SIZE, _MAX_UNIQUES, _BOUND16, _SIZE, _SPAN, _LENGTH = range(8)


class JudgeState(NamedTuple):
    """An order, its run on every profile, and the buffers a trial works in (``P`` profiles,
    ``T`` triangles, ``V`` vertices; ``R`` rows of a trial's stretch)."""

    order: np.ndarray         # (T, 3) int64, the current order
    label: np.ndarray         # (V,) its first-use numbers
    trial_label: np.ndarray   # (V,) the numbers with the pending window renumbered
    indptr: np.ndarray        # (V + 1,) triangles using vertex v: positions[indptr[v]:indptr[v + 1]]
    positions: np.ndarray     # (3 T,)
    cursor: np.ndarray        # (V,) scratch
    fresh: np.ndarray         # (3 T + 1,) the pending window's renumbered vertices, their count last
    params: np.ndarray        # (P, 8) way, kernel (kind, MAX_SIZE, MAX_UNIQUES, 2^16 rule, size), span, length
    totals: np.ndarray        # (P,) invocations of the current order
    pending: np.ndarray       # (P,) the pending trial's invocations
    change: np.ndarray        # (P, 4) what each profile's pending trial changes
    marks: np.ndarray         # (P, T) uint8, miss mask of every triangle (bit i: corner i shaded)
    before: np.ndarray        # (P, T + 1) invocations before every triangle
    is_start: np.ndarray      # (P, T + 1) uint8, 1 where a batch starts (and at T)
    ends: np.ndarray          # (P, T + 1) where the batch starting at t ends (-1: not known yet)
    shaded: np.ndarray        # (P, T + 1) and how many vertices it shades
    per_vertex: np.ndarray    # (P, 4 V) kernel memory (run_short's, every kind in one shape)
    slot_vertex: np.ndarray   # (P, S)
    slot_b: np.ndarray        # (P, S)
    slot_c: np.ndarray        # (P, S)
    seen: np.ndarray          # (P, V) uint8
    tris: np.ndarray          # (R, 3) a trial's stretch in first-use numbers
    trial_marks: np.ndarray   # (P, R) uint8
    trial_starts: np.ndarray  # (P, R + 1)
    spans: np.ndarray         # (P, NS, 2) the segments a SEGMENTS trial simulated
    one_tris: np.ndarray      # (L, 3) one looked-up batch
    one_marks: np.ndarray     # (L,)
    one_starts: np.ndarray    # (L + 1,)
    found: np.ndarray         # (3 T,) scratch: segments a SEGMENTS trial simulates
    content: np.ndarray       # (C,) scratch: a FIFO's content


def way_of(profile: Profile, vertex_count: int) -> int:
    """How a change is simulated for ``profile`` on a buffer of ``vertex_count`` vertices."""
    numbers = profile.memory in ("direct", "groups") or (profile.boundary_16bit and vertex_count > _BLOCK)
    if profile.order_free:
        return CONSTANT
    if profile.batched:
        fixed = profile.max_size > 0 and (profile.max_uniques == 0 or profile.max_uniques >= profile.max_size)
        if numbers:
            return SEGMENTS if fixed else BATCHED_NUMBERS
        return LOOKUP if (profile.max_size + 1) // 3 > 0 else BATCHED
    if profile.memory == "fifo" and not numbers:
        return FIFO
    return WHOLE


def new_state(triangles: np.ndarray, vertex_count: int, profiles) -> JudgeState:
    """The judge's state for the order ``triangles`` (any vertex numbers; judged numbered by
    first use) on ``profiles`` (as the hardware sees this buffer, e.g.
    :meth:`~meshopt_batch.model.targets.Target.evaluation_profiles`)."""
    order = np.array(triangles, np.int64, copy=True).reshape(-1, 3)
    n, count, p_count = order.shape[0], max(int(vertex_count), 1), len(profiles)
    label = first_use_labels(order, count)
    flat = order.reshape(-1)
    indptr = np.concatenate(([0], np.cumsum(np.bincount(flat, minlength=count)))).astype(np.int64)
    positions = (np.argsort(flat, kind="stable") // 3).astype(np.int64)
    labelled = label[order]
    params = np.zeros((p_count, 8), np.int64)
    totals = np.zeros(p_count, np.int64)
    marks = np.zeros((p_count, n), np.uint8)
    before = np.zeros((p_count, n + 1), np.int64)
    is_start = np.zeros((p_count, n + 1), np.uint8)
    starts = np.zeros(n + 1, np.int64)
    for k, profile in enumerate(profiles):
        way = way_of(profile, count)
        kind = MEMORY_KERNEL_KINDS.index(profile.memory) if profile.memory in MEMORY_KERNEL_KINDS else -1
        if kind < 0:
            way = CONSTANT
        span = 2 * max(profile.max_size // 3, profile.max_uniques // 3, 1)
        params[k] = (way, kind, profile.max_size, profile.max_uniques, int(profile.boundary_16bit),
                     profile.memory_size, span, (profile.max_size + 1) // 3)
        totals[k], batches, _ = run_kernel(profile, labelled, count, starts, _NONE,
                                           marks[k] if kind >= 0 else None)
        is_start[k, starts[:batches]] = 1
        is_start[k, n] = 1
        before[k, 1:] = np.cumsum(_POPCOUNT[marks[k]])
    sizes = [p.memory_size for p in profiles] or [1]
    rows = n + max(sizes) // 3 + 2
    length = max(1, int(params[:, _LENGTH].max(initial=1)))
    segments = n // max(1, int(params[:, _LENGTH][params[:, _LENGTH] > 0].min(initial=1))) + 2
    slots = max(1, max(sizes))
    return JudgeState(
        order, label, label.copy(), indptr, positions, np.zeros(count, np.int64), np.zeros(3 * n + 1, np.int64),
        params, totals, np.zeros(p_count, np.int64), np.zeros((p_count, 4), np.int64), marks, before, is_start,
        np.full((p_count, n + 1), -1, np.int64), np.zeros((p_count, n + 1), np.int64),
        np.full((p_count, 4 * count), -1, np.int64), np.full((p_count, slots), -1, np.int64),
        np.full((p_count, slots), -1, np.int64), np.full((p_count, slots), -1, np.int64),
        np.zeros((p_count, count), np.uint8), np.zeros((rows, 3), np.int64), np.zeros((p_count, rows), np.uint8),
        np.zeros((p_count, rows + 1), np.int64), np.zeros((p_count, segments, 2), np.int64),
        np.zeros((length, 3), np.int64), np.zeros(length, np.uint8), np.zeros(length + 1, np.int64),
        np.zeros(3 * n + 1, np.int64), np.zeros(max(sizes) + 3, np.int64))


def trial_order(state: JudgeState) -> np.ndarray:
    """The order :func:`trial` judges the profiles in: the cheapest ways first (looked-up
    batches, then batched, FIFO, segments, the whole buffer), so that a trial refused early
    costs least; of profiles with the same batch rule and memory kind after the first (NVIDIA
    under Direct3D beside OpenGL), the later ones last, as they rarely decide."""
    cost = {CONSTANT: 0, LOOKUP: 1, BATCHED: 2, FIFO: 3, BATCHED_NUMBERS: 4, SEGMENTS: 5, WHOLE: 6}
    params = state.params
    rule = [(int(q[_MAX_SIZE]), int(q[_MAX_UNIQUES]), int(q[_KIND] in (0, 1))) for q in params]
    twin = [any(rule[p] == rule[q] for q in range(p)) for p in range(params.shape[0])]
    return np.array(sorted(range(params.shape[0]), key=lambda p: (twin[p], cost[int(params[p, _WAY])], p)), np.int64)


@njit(cache=True, nogil=True, inline="always")
def _kernel(state, p):
    q = state.params[p]
    return (q[_KIND], q[_MAX_SIZE], q[_MAX_UNIQUES], q[_BOUND16], q[_SIZE])


@njit(cache=True, nogil=True, inline="always")
def _memory(state, p):
    return (state.per_vertex[p], state.slot_vertex[p], state.slot_b[p], state.slot_c[p], state.seen[p])


@njit(cache=True, nogil=True)
def _misses(marks, lo, hi):
    """Vertices shaded by triangles ``[lo, hi)`` of a run's miss masks."""
    count = 0
    for t in range(lo, hi):
        m = marks[t]
        count += (m & 1) + ((m >> 1) & 1) + ((m >> 2) & 1)
    return count


@njit(cache=True, nogil=True)
def _renumber_window(state, window, start):
    """Number the vertices first used in the window in the window's new order, in
    ``trial_label`` (they keep their set of numbers); they go into ``fresh``.  Returns the last
    triangle of the order that uses one of them."""
    indptr, positions, label, trial_label, fresh = (state.indptr, state.positions, state.label,
                                                    state.trial_label, state.fresh)
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
    count = 0
    for t in range(window.shape[0]):
        for i in range(3):
            v = window[t, i]
            if trial_label[v] == -1:
                trial_label[v] = base + count
                fresh[count] = v
                count += 1
    fresh[fresh.shape[0] - 1] = count
    return reach


@njit(cache=True, nogil=True)
def _fill_changed(order, window, start, stop, label, lo, hi, out):
    """Triangles ``[lo, hi)`` of the order with ``[start, stop)`` replaced by ``window``, in
    the numbers ``label``, into ``out``."""
    for t in range(lo, hi):
        for i in range(3):
            v = window[t - start, i] if start <= t < stop else order[t, i]
            out[t - lo, i] = label[v]


@njit(cache=True, nogil=True)
def _last_start_before(is_start, start):
    """The last batch start before triangle ``start`` (0 at the first)."""
    t = start - 1
    while t > 0 and not is_start[t]:
        t -= 1
    return max(t, 0)


@njit(cache=True, nogil=True)
def _batched_trial(state, p, window, start, stop, label, need):
    """The changed order simulated from the last batch start before ``start``, doubling the
    stretch until it starts a batch at or after ``need`` where the current run starts one:
    ``(change in invocations, first triangle simulated, that shared batch start, batches
    before it, triangles simulated)``; the stretch's masks and batch starts (relative) are
    left in the profile's trial rows."""
    order, is_start, tris = state.order, state.is_start[p], state.tris
    marks, starts = state.trial_marks[p], state.trial_starts[p]
    kernel, memory = _kernel(state, p), _memory(state, p)
    n = order.shape[0]
    lo = _last_start_before(is_start, start)
    hi = min(n, need + state.params[p, _SPAN])
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
        before = state.before[p]
        return _misses(marks, 0, sync - lo) - (before[sync] - before[lo]), lo, sync, kept, cost


@njit(cache=True, nogil=True)
def _batch_from(state, p, at):
    """The batch that starts at triangle ``at`` of the current order: ``(where the next one
    starts, vertices it shades)``.  A batch begins with an empty memory, so both depend on its
    own triangles only."""
    order, label, tris = state.order, state.label, state.one_tris
    n = order.shape[0]
    count = min(n - at, state.params[p, _LENGTH])
    for t in range(count):
        for i in range(3):
            tris[t, i] = label[order[at + t, i]]
    batches = run_short(_kernel(state, p), _memory(state, p), tris[:count], state.one_starts, state.one_marks)[1]
    end = state.one_starts[1] if batches > 1 else count
    return at + end, _misses(state.one_marks, 0, end)


@njit(cache=True, nogil=True)
def _lookup_trial(state, p, window, start, stop):
    """:func:`_batched_trial`'s answer with the batches after the window looked up (see the
    module docstring): ``(change in invocations, triangles simulated)``, the second counted as
    :func:`_batched_trial` counts them."""
    order, is_start, tris, label = state.order, state.is_start[p], state.tris, state.trial_label
    marks, starts = state.trial_marks[p], state.trial_starts[p]
    ends, shaded = state.ends[p], state.shaded[p]
    length = state.params[p, _LENGTH]
    n = order.shape[0]
    lo = _last_start_before(is_start, start)
    hi = min(n, stop + length)
    _fill_changed(order, window, start, stop, label, lo, hi, tris)
    batches = run_short(_kernel(state, p), _memory(state, p), tris[:hi - lo], starts, marks)[1]
    at = n
    for b in range(1, batches):
        if starts[b] + lo >= stop:
            at = starts[b] + lo
            break
    misses = _misses(marks, 0, at - lo)
    cost = hi - lo
    while not is_start[at]:
        if ends[at] < 0:
            ends[at], shaded[at] = _batch_from(state, p, at)
            cost += ends[at] - at
        misses += shaded[at]
        at = ends[at]
    return misses - (state.before[p, at] - state.before[p, lo]), cost


@njit(cache=True, nogil=True)
def _fifo_content(order, marks, start, capacity, out, content):
    """The last ``capacity`` vertices shaded before triangle ``start`` (oldest first), as
    triangles that an empty FIFO shades in that order, into ``out``: a global FIFO's state at
    ``start``.  The first vertex is repeated to fill the first triangle (a repeat hits: nothing
    more is shaded).  Returns the rows written."""
    k = capacity
    t = start - 1
    while t >= 0 and k > 0:
        for i in range(2, -1, -1):
            if k > 0 and marks[t] & (1 << i):
                k -= 1
                content[k] = order[t, i]
        t -= 1
    got = capacity - k
    lead = (3 - got % 3) % 3
    flat = out.reshape(-1)
    for j in range(lead):
        flat[j] = content[k] if got else 0
    for j in range(got):
        flat[lead + j] = content[k + j]
    return (got + lead) // 3


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True)
def _fifo_trial(state, p, window, start, stop):
    """A global FIFO from its content at ``start`` (replayed first), doubling the stretch until
    both runs have shaded the same vertices at the same triangles ``capacity`` times in a row:
    ``(change in invocations, triangles replayed, where the runs agree again, triangles
    simulated)``; the masks are left in the profile's trial row after the replayed ones."""
    order, tris, label, run_marks = state.order, state.tris, state.trial_label, state.marks[p]
    marks, starts = state.trial_marks[p], state.trial_starts[p]
    kernel, memory = _kernel(state, p), _memory(state, p)
    capacity = state.params[p, _SIZE]
    n = order.shape[0]
    replayed = _fifo_content(order, run_marks, start, capacity, tris, state.content)
    for t in range(replayed):
        for i in range(3):
            tris[t, i] = label[tris[t, i]]
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
        before = state.before[p]
        delta = _misses(marks, replayed, replayed + sync - start) - (before[sync] - before[start])
        return delta, replayed, sync, cost


@njit(cache=True, nogil=True)
def _segments_trial(state, p, window, start, stop):
    """Fixed batches of ``length`` triangles that see vertex numbers: the segments the window
    overlaps and the later ones that use a renumbered vertex, simulated one after another:
    ``(change in invocations, segments, triangles simulated)``; the segments are left in the
    profile's ``spans`` and their masks, one after another, in its trial row."""
    order, tris, label = state.order, state.tris, state.trial_label
    indptr, positions, fresh = state.indptr, state.positions, state.fresh
    marks, starts, spans = state.trial_marks[p], state.trial_starts[p], state.spans[p]
    length = state.params[p, _LENGTH]
    n = order.shape[0]
    first, last = start // length, (stop - 1) // length
    after = (last + 1) * length
    found = state.found
    total = 0
    count = fresh[fresh.shape[0] - 1]
    for j in range(count):
        v = fresh[j]
        for k in range(indptr[v], indptr[v + 1]):
            if positions[k] >= after:
                found[total] = positions[k] // length
                total += 1
    found[:total].sort()
    spans[0, 0], spans[0, 1] = first * length, min(n, (last + 1) * length)
    segments = 1
    for j in range(total):
        if j == 0 or found[j] != found[j - 1]:
            spans[segments, 0], spans[segments, 1] = found[j] * length, min(n, (found[j] + 1) * length)
            segments += 1
    offset = 0
    before = 0
    for j in range(segments):
        a, b = spans[j, 0], spans[j, 1]
        _fill_changed(order, window, start, stop, label, a, b, tris[offset:])
        offset += b - a
        before += state.before[p, b] - state.before[p, a]
    run_short(_kernel(state, p), _memory(state, p), tris[:offset], starts, marks)
    return _misses(marks, 0, offset) - before, segments, offset


@njit(cache=True, nogil=True)
def _whole_trial(state, p, window, start, stop):
    """Any other rule: the whole changed order, simulated from the start:
    ``(change in invocations, batches, triangles simulated)``."""
    order, tris = state.order, state.tris
    n = order.shape[0]
    _fill_changed(order, window, start, stop, state.trial_label, 0, n, tris)
    invocations, batches = run_short(_kernel(state, p), _memory(state, p), tris[:n], state.trial_starts[p],
                                     state.trial_marks[p])
    return invocations - state.totals[p], batches, n


@njit(cache=True, nogil=True)
def trial(state, window, start, stop, rank, scale, caps, threshold):
    """Predicted invocations on every profile if ``order[start:stop]`` were ``window`` (the
    same triangles in another order; corners may rotate), into ``state.pending``.

    The profiles are judged in the order ``rank``; the trial stops early (refused) as soon as a
    profile passes its cap, or the changes judged so far, each weighted by ``scale``, add up to
    more than ``threshold`` invocations (``np.inf``: never).  Returns ``(triangles simulated,
    the mean over the profiles; whether every profile was judged)``.  :func:`accept` then makes
    a complete trial the order, :func:`reject` forgets any trial."""
    reach = _renumber_window(state, window, start)
    params, change, pending = state.params, state.change, state.pending
    p_count = params.shape[0]
    simulated = 0
    partial = 0.0
    for q in range(p_count):
        p = rank[q]
        way = params[p, _WAY]
        delta = 0
        cost = 0
        if way == SEGMENTS:
            delta, segments, cost = _segments_trial(state, p, window, start, stop)
            change[p, 0] = segments
        elif way == LOOKUP:
            delta, cost = _lookup_trial(state, p, window, start, stop)
        elif way == BATCHED or way == BATCHED_NUMBERS:
            need = max(stop, reach + 1) if way == BATCHED_NUMBERS else stop
            delta, lo, sync, kept, cost = _batched_trial(state, p, window, start, stop, state.trial_label, need)
            change[p, 0], change[p, 1], change[p, 2] = lo, sync, kept
        elif way == FIFO:
            delta, replayed, sync, cost = _fifo_trial(state, p, window, start, stop)
            change[p, 0], change[p, 1] = replayed, sync
        elif way == WHOLE:
            delta, batches, cost = _whole_trial(state, p, window, start, stop)
            change[p, 0] = batches
        pending[p] = state.totals[p] + delta
        simulated += cost
        partial += scale[p] * delta
        if q + 1 < p_count and (pending[p] > caps[p] or partial > threshold):
            return simulated // p_count, False
    return simulated // max(p_count, 1), True


@njit(cache=True, nogil=True)
def reject(state):
    """Forget the pending trial's numbering."""
    fresh = state.fresh
    for j in range(fresh[fresh.shape[0] - 1]):
        v = fresh[j]
        state.trial_label[v] = state.label[v]


@njit(cache=True, nogil=True)
def _take(state, p, lo, marks, count, starts, batches):
    """Triangles ``[lo, lo + count)`` of profile ``p``'s run take the masks ``marks[:count]``
    and, where ``batches`` >= 0, the batch starts ``starts[:batches]`` (relative to ``lo``)."""
    run_marks, is_start, before = state.marks[p], state.is_start[p], state.before[p]
    old = before[lo + count] - before[lo]
    for t in range(count):
        m = marks[t]
        run_marks[lo + t] = m
        before[lo + t + 1] = before[lo + t] + (m & 1) + ((m >> 1) & 1) + ((m >> 2) & 1)
    delta = before[lo + count] - before[lo] - old
    if delta != 0:
        for t in range(lo + count + 1, before.shape[0]):
            before[t] += delta
    if batches >= 0:
        for t in range(count):
            is_start[lo + t] = 0
        for b in range(batches):
            is_start[lo + starts[b]] = 1


@njit(cache=True, nogil=True)
def accept(state, window, start, stop):
    """Make the pending trial's order the current one."""
    params, change = state.params, state.change
    order, label, trial_label = state.order, state.label, state.trial_label
    last = state.ends.shape[1]
    for p in range(params.shape[0]):
        way = params[p, _WAY]
        marks, starts = state.trial_marks[p], state.trial_starts[p]
        if way == LOOKUP:
            # the looked-up batches' masks: the changed stretch simulated up to the shared start
            _, lo, sync, kept, _ = _batched_trial(state, p, window, start, stop, trial_label, stop)
            _take(state, p, lo, marks, sync - lo, starts, kept)
            ends = state.ends[p]
            for t in range(max(0, start - params[p, _LENGTH] + 1), min(stop, last)):
                ends[t] = -1
        elif way == BATCHED or way == BATCHED_NUMBERS:
            lo, sync, kept = change[p, 0], change[p, 1], change[p, 2]
            _take(state, p, lo, marks, sync - lo, starts, kept)
        elif way == FIFO:
            replayed, sync = change[p, 0], change[p, 1]
            _take(state, p, start, marks[replayed:], sync - start, starts, -1)
        elif way == SEGMENTS:
            offset = 0
            for j in range(change[p, 0]):
                a, b = state.spans[p, j, 0], state.spans[p, j, 1]
                _take(state, p, a, marks[offset:], b - a, starts, -1)
                offset += b - a
        elif way == WHOLE:
            _take(state, p, 0, marks, order.shape[0], starts, change[p, 0])
        state.totals[p] = state.pending[p]
    # the vertices' positions: each vertex's entries inside the window are rewritten in place
    indptr, positions, cursor = state.indptr, state.positions, state.cursor
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
            order[start + t, i] = v
    fresh = state.fresh
    for j in range(fresh[fresh.shape[0] - 1]):
        v = fresh[j]
        label[v] = trial_label[v]
