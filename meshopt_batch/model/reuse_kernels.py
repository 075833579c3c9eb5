"""Algorithm 1 of paper 001, compiled once per memory kind (the predictor's inner loops).

Every kernel walks the index buffer one triangle at a time with the batch bounds of the
profile (``MAX_SIZE``, ``MAX_UNIQUES``) and one memory module written out for its kind, its
state held in local variables and per-vertex arrays (memory O(vertices)):

==================  ===========================================================================
``lookback``        last index position per vertex; reuse iff within the window of the batch
``lookback_dx``     last position per vertex, and per vertex and residue mod 3; the Direct3D
                    distance rule as one threshold per residue class
``fifo``            miss stamp per vertex: reuse iff among the last ``size`` misses of the batch
                    (a timestamp test, no queue)
``lru``             slots in a doubly linked recency list plus each vertex's slot: O(1) hits
                    and misses
``direct``          (vertex, batch epoch) per slot keyed by ``vertex % slots``
``groups``          each referenced index shades its aligned group of vertex ids once per draw
``range``           the draw shades every vertex id from its smallest to its largest index
==================  ===========================================================================

A triangle is first pushed through the live memory (a *trial*).  When it overflows
``MAX_UNIQUES`` the trial's changes are discarded by opening a new batch (fresh memory: an epoch,
a stamp or a batch start, plus clearing the three look-back entries the trial wrote) and the
triangle is pushed again: the whole triangle moves to the next batch, as Algorithm 1's lines
16-27 do.  ``MAX_SIZE`` is checked before the trial (``size + 2 > MAX_SIZE`` is the printed test
``size + i > MAX_SIZE`` at the triangle's last index).  With the ``+16bit`` rule the memory
forgets everything whenever an index lies in another 2^16 block than the index before it
(:func:`_block_switch`).

The kernels take no compiled functions as arguments, so numba caches all of them on disk;
:func:`run_short` picks one by an integer for the same reason.

References
----------
.. [1] B. Kerbl, M. Kenzel, E. Ivanchenko, D. Schmalstieg, M. Steinberger, "Revisiting the
   Vertex Cache: Understanding and Optimizing Vertex Processing on the modern GPU", Proc. ACM
   Comput. Graph. Interact. Tech. 1(2), 2018 (paper 001), Algorithm 1, sec. 3.3-3.4.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, inline="always")
def dx_reuse(d, residue):
    """NVIDIA Direct3D look-back (paper 001 sec. 3.3): reuse at distance ``d`` from an earlier
    position whose index is ``residue`` mod 3."""
    if residue == 0:
        return d <= 44
    if residue == 1:
        return d <= 40 or d == 42
    return d <= 42 and d != 40


@njit(cache=True, inline="always")
def _block_switch(v, block):
    """The 2^16 block rule: ``(v's block, whether it differs from the previous index's block)``.

    Paper 001 sec. 3.3 reports that NVIDIA's look-back reuse may fail in batches whose indices
    cross a multiple of 2^16.  Measured on an NVIDIA H100 (OpenGL, driver 580.159.04,
    ``results/nvidia_*_2026-11-25``): a vertex is reused only if no two consecutive indices
    between its last reference and the current one lie in different 2^16 blocks, i.e. each
    block switch empties the memory; exact on every recorded draw.
    """
    b = v >> 16
    return b, block >= 0 and b != block


@njit(cache=True, inline="always")
def _record_batch(starts, batches, t):
    if starts.shape[0] > 0:
        starts[batches] = t
    return batches + 1


@njit(cache=True, inline="always")
def _record_misses(tris, t, missed, shaded, marks):
    """Keep triangle ``t``'s miss mask (bit ``i``: corner ``i`` was shaded) and count each
    shaded vertex, where the caller asked for them (None otherwise).  A None compiles a kernel
    without the store: a run-time test here made the kernels up to five times slower."""
    if marks is not None:
        marks[t] = missed
    if shaded is not None:
        for i in range(3):
            if missed & (1 << i):
                shaded[tris[t, i]] += 1


@njit(cache=True, nogil=True)
def predict_lookback(tris, max_size, max_uniques, bound16, window, last, starts, shaded, marks):
    """Look-back retention (NVIDIA OpenGL): ``last[v]`` is ``v``'s last index position."""
    n = tris.shape[0]
    invocations = 0
    batches = 1 if n > 0 else 0
    memory_start = 0
    size = 0
    uniques = 0
    block = -1
    for t in range(n):
        pos = 3 * t
        if max_size > 0 and size + 2 > max_size:
            memory_start, size, uniques, block = pos, 0, 0, -1
            batches = _record_batch(starts, batches, t)
        for attempt in range(2):
            added = 0
            missed = 0
            for i in range(3):
                v = np.int64(tris[t, i])
                if bound16:
                    block, switched = _block_switch(v, block)
                    if switched:
                        memory_start = pos + i
                p = last[v]
                if p < memory_start or pos + i - p > window:
                    added += 1
                    missed |= 1 << i
                last[v] = pos + i
            if attempt == 0 and max_uniques > 0 and uniques + added > max_uniques:
                for i in range(3):
                    last[tris[t, i]] = -1
                memory_start, size, uniques, block = pos, 0, 0, -1
                batches = _record_batch(starts, batches, t)
                continue
            break
        _record_misses(tris, t, missed, shaded, marks)
        size += 3
        uniques += added
        invocations += added
    return invocations, batches


@njit(cache=True, nogil=True)
def dx_reach():
    """``reach[3 i + r]``: the longest distance over which index ``i`` of a triangle reuses an
    earlier position with residue ``r`` under :func:`dx_reuse`.

    Triangles start at multiples of 3, so ``d = i - r (mod 3)`` and within that residue class
    the rule holds for every ``d`` up to a largest one and never beyond (checked up to 99):
    the rule becomes one comparison per residue.
    """
    reach = np.zeros(9, np.int64)
    for i in range(3):
        for r in range(3):
            d = (i - r) % 3 or 3
            while dx_reuse(d, r):
                d += 3
            reach[3 * i + r] = d - 3
            for e in range(d, 100, 3):
                if dx_reuse(e, r):
                    raise ValueError("the Direct3D rule is not a threshold per residue class")
    return reach


@njit(cache=True, nogil=True)
def predict_lookback_dx(tris, max_size, max_uniques, bound16, last4, starts, shaded, marks):
    """NVIDIA Direct3D rule: ``last4[4 v]`` is ``v``'s last position, ``last4[4 v + 1 + r]`` its
    last position with residue ``r``.  A last position within the shortest reach of
    :func:`dx_reach` reuses whatever its residue; only farther ones need the per-residue test."""
    reach = dx_reach()
    near = reach.min()
    n = tris.shape[0]
    invocations = 0
    batches = 1 if n > 0 else 0
    memory_start = 0
    size = 0
    uniques = 0
    block = -1
    for t in range(n):
        pos = 3 * t
        if max_size > 0 and size + 2 > max_size:
            memory_start, size, uniques, block = pos, 0, 0, -1
            batches = _record_batch(starts, batches, t)
        for attempt in range(2):
            added = 0
            missed = 0
            for i in range(3):
                v = np.int64(tris[t, i])
                q = pos + i
                if bound16:
                    block, switched = _block_switch(v, block)
                    if switched:
                        memory_start = q
                base = 4 * v
                p = last4[base]
                hit = False
                if p >= memory_start:
                    hit = q - p <= near
                    if not hit:
                        for r in range(3):
                            p = last4[base + 1 + r]
                            hit |= p >= memory_start and q - p <= reach[3 * i + r]
                if not hit:
                    added += 1
                    missed |= 1 << i
                last4[base] = q
                last4[base + 1 + i] = q
            if attempt == 0 and max_uniques > 0 and uniques + added > max_uniques:
                for i in range(3):
                    base = 4 * np.int64(tris[t, i])
                    for r in range(4):
                        last4[base + r] = -1
                memory_start, size, uniques, block = pos, 0, 0, -1
                batches = _record_batch(starts, batches, t)
                continue
            break
        _record_misses(tris, t, missed, shaded, marks)
        size += 3
        uniques += added
        invocations += added
    return invocations, batches


@njit(cache=True, nogil=True)
def predict_fifo(tris, max_size, max_uniques, bound16, capacity, stamp, starts, shaded, marks):
    """FIFO of ``capacity`` entries pushed on misses: ``stamp[v]`` is ``v``'s miss number, and
    ``v`` is cached iff it is among the last ``capacity`` misses of the current batch."""
    n = tris.shape[0]
    invocations = 0
    batches = 1 if n > 0 else 0
    misses = 0
    batch_misses = 0
    size = 0
    uniques = 0
    block = -1
    for t in range(n):
        if max_size > 0 and size + 2 > max_size:
            batch_misses, size, uniques, block = misses, 0, 0, -1
            batches = _record_batch(starts, batches, t)
        for attempt in range(2):
            added = 0
            missed = 0
            for i in range(3):
                v = np.int64(tris[t, i])
                if bound16:
                    block, switched = _block_switch(v, block)
                    if switched:
                        batch_misses = misses
                s = stamp[v]
                if s < batch_misses or s < misses - capacity:
                    stamp[v] = misses
                    misses += 1
                    added += 1
                    missed |= 1 << i
            if attempt == 0 and max_uniques > 0 and uniques + added > max_uniques:
                batch_misses, size, uniques, block = misses, 0, 0, -1
                batches = _record_batch(starts, batches, t)
                continue
            break
        _record_misses(tris, t, missed, shaded, marks)
        size += 3
        uniques += added
        invocations += added
    return invocations, batches


@njit(cache=True, inline="always")
def _lru_make_newest(s, head, tail, older, newer):
    """Move slot ``s`` (in the list, not the newest) to the front; returns ``(head, tail)``."""
    nw = newer[s]
    od = older[s]
    older[nw] = od
    if od >= 0:
        newer[od] = nw
    else:
        tail = nw
    newer[s] = -1
    older[s] = head
    newer[head] = s
    return s, tail


@njit(cache=True, nogil=True)
def predict_lru(tris, max_size, max_uniques, bound16, capacity, slot_of, slot_vertex, older,
                newer, starts, shaded, marks):
    """LRU of ``capacity`` vertices: the batch's slots ``0..used-1`` form a recency list
    (``head`` the most recent, ``older`` / ``newer`` links); ``slot_of[v]`` is ``v``'s slot."""
    n = tris.shape[0]
    invocations = 0
    batches = 1 if n > 0 else 0
    used = 0
    head = -1
    tail = -1
    size = 0
    uniques = 0
    block = -1
    for t in range(n):
        if max_size > 0 and size + 2 > max_size:
            used, head, tail, size, uniques, block = 0, -1, -1, 0, 0, -1
            batches = _record_batch(starts, batches, t)
        for attempt in range(2):
            added = 0
            missed = 0
            for i in range(3):
                v = np.int64(tris[t, i])
                if bound16:
                    block, switched = _block_switch(v, block)
                    if switched:
                        used, head, tail = 0, -1, -1
                s = slot_of[v]
                if 0 <= s < used and slot_vertex[s] == v:
                    if s != head:
                        head, tail = _lru_make_newest(s, head, tail, older, newer)
                    continue
                added += 1
                missed |= 1 << i
                if used < capacity:
                    s = used
                    used += 1
                    newer[s] = -1
                    older[s] = head
                    if head >= 0:
                        newer[head] = s
                    else:
                        tail = s
                    head = s
                else:
                    s = tail  # evict the least recent
                    if s != head:
                        head, tail = _lru_make_newest(s, head, tail, older, newer)
                slot_vertex[s] = v
                slot_of[v] = s
            if attempt == 0 and max_uniques > 0 and uniques + added > max_uniques:
                used, head, tail, size, uniques, block = 0, -1, -1, 0, 0, -1
                batches = _record_batch(starts, batches, t)
                continue
            break
        _record_misses(tris, t, missed, shaded, marks)
        size += 3
        uniques += added
        invocations += added
    return invocations, batches


@njit(cache=True, nogil=True)
def predict_direct(tris, max_size, max_uniques, bound16, slots, slot_vertex, slot_epoch, seen,
                   starts, shaded, marks):
    """Direct-mapped table of ``slots`` entries keyed by ``vertex % slots``; a slot is valid
    in the batch whose epoch it carries.  ``seen`` marks the vertices ever shaded."""
    n = tris.shape[0]
    invocations = 0
    batches = 1 if n > 0 else 0
    mask = slots - 1 if (slots & (slots - 1)) == 0 else -1
    epoch = 0
    size = 0
    uniques = 0
    block = -1
    for t in range(n):
        if max_size > 0 and size + 2 > max_size:
            epoch, size, uniques, block = epoch + 1, 0, 0, -1
            batches = _record_batch(starts, batches, t)
        for attempt in range(2):
            added = 0
            missed = 0
            for i in range(3):
                v = np.int64(tris[t, i])
                if bound16:
                    block, switched = _block_switch(v, block)
                    if switched:
                        epoch += 1
                s = v & mask if mask >= 0 else v % slots
                if slot_vertex[s] != v or slot_epoch[s] != epoch:
                    slot_vertex[s] = v
                    slot_epoch[s] = epoch
                    seen[v] = 1
                    added += 1
                    missed |= 1 << i
            if attempt == 0 and max_uniques > 0 and uniques + added > max_uniques:
                epoch, size, uniques, block = epoch + 1, 0, 0, -1
                batches = _record_batch(starts, batches, t)
                continue
            break
        _record_misses(tris, t, missed, shaded, marks)
        size += 3
        uniques += added
        invocations += added
    return invocations, batches


@njit(cache=True, nogil=True)
def predict_groups(tris, vertex_count, group, group_seen, seen, shaded):
    """Aligned groups: index ``v`` shades vertices ``group * (v // group)`` up to the next
    multiple of ``group`` (clipped to the vertex buffer), each group once per draw."""
    invocations = 0
    count = shaded.shape[0] > 0
    for t in range(tris.shape[0]):
        for i in range(3):
            v = np.int64(tris[t, i])
            seen[v] = 1
            g = v // group
            if group_seen[g] == 0:
                group_seen[g] = 1
                lo = g * group
                hi = min(lo + group, vertex_count)
                invocations += hi - lo
                if count:
                    for w in range(lo, hi):
                        shaded[w] += 1
    return invocations, 1 if tris.shape[0] > 0 else 0


@njit(cache=True, nogil=True)
def predict_range(tris, seen, shaded):
    """Whole index range: the draw shades every vertex from its smallest to its largest index."""
    n = tris.shape[0]
    if n == 0:
        return 0, 0
    lo = np.int64(tris[0, 0])
    hi = lo
    for t in range(n):
        for i in range(3):
            v = np.int64(tris[t, i])
            seen[v] = 1
            lo = min(lo, v)
            hi = max(hi, v)
    if shaded.shape[0] > 0:
        for w in range(lo, hi + 1):
            shaded[w] += 1
    return hi - lo + 1, 1


#: The memory kinds whose kernels keep per-vertex state (:func:`kernel_memory`).
MEMORY_KERNEL_KINDS = ("lookback", "lookback_dx", "fifo", "lru", "direct")


def kernel_memory(profile, vertex_count: int, triangle_count: int) -> tuple:
    """The per-vertex arrays of ``profile``'s kernel, empty, for buffers of ``vertex_count``
    vertices and at most ``triangle_count`` triangles."""
    kind = profile.memory
    V = max(vertex_count, 1)
    size = profile.memory_size
    # positions and miss stamps stay below 3 T: 32-bit entries halve the per-vertex memory
    pos = np.int32 if 3 * triangle_count < 2**31 - 8 else np.int64
    if kind == "lookback":
        return (np.full(V, -1, pos),)
    if kind == "lookback_dx":
        return (np.full(4 * V, -1, pos),)
    if kind == "fifo":
        return (np.full(V, -1, pos),)
    if kind == "lru":
        return (np.full(V, -1, np.int32), np.full(size, -1, np.int64), np.full(size, -1, np.int64),
                np.full(size, -1, np.int64))
    if kind == "direct":
        return (np.full(size, -1, np.int64), np.full(size, -1, np.int64), np.zeros(V, np.uint8))
    raise ValueError(f"no reusable memory for memory kind {kind!r}")


@njit(cache=True, nogil=True)
def _clear_entries(per_vertex, tris, width, value):
    for t in range(tris.shape[0]):
        for i in range(3):
            base = width * np.int64(tris[t, i])
            for r in range(width):
                per_vertex[base + r] = value


def _referenced(kind: str, memory: tuple) -> int:
    """Distinct vertices a run from empty memory referenced, read off its per-vertex state."""
    if kind == "lookback_dx":
        return int(np.count_nonzero(memory[0][::4] >= 0))
    if kind == "direct":
        return int(np.count_nonzero(memory[2]))
    return int(np.count_nonzero(memory[0] >= 0))


def _run_memory_kernel(profile, tris, memory, starts, shaded, marks):
    ms, mu, b16, size = profile.max_size, profile.max_uniques, profile.boundary_16bit, profile.memory_size
    kind = profile.memory
    if kind == "lookback":
        return predict_lookback(tris, ms, mu, b16, size, *memory, starts, shaded, marks)
    if kind == "lookback_dx":
        return predict_lookback_dx(tris, ms, mu, b16, *memory, starts, shaded, marks)
    if kind == "fifo":
        return predict_fifo(tris, ms, mu, b16, size, *memory, starts, shaded, marks)
    if kind == "lru":
        return predict_lru(tris, ms, mu, b16, size, *memory, starts, shaded, marks)
    return predict_direct(tris, ms, mu, b16, size, *memory, starts, shaded, marks)


@njit(cache=True, nogil=True)
def run_short(kernel, memory, tris, starts, marks):
    """Run one kernel over ``tris`` in ``memory`` and leave its per-vertex state and table as it
    found them (an LRU's slot lists are rebuilt by every run): ``(invocations, batches)``.

    ``kernel`` is ``(kind, MAX_SIZE, MAX_UNIQUES, 2^16 rule, memory size)``, the kind an index in
    :data:`MEMORY_KERNEL_KINDS`; ``memory`` is ``(per_vertex, slot_vertex, slot_epoch_or_older,
    newer, seen)``, every kind's state in one shape, as the window judge keeps it;
    ``starts`` (at least ``T + 1`` long) and ``marks`` (``T``) as :func:`run_kernel`'s.  For many
    short runs over a large vertex buffer (the window judge), with no Python between them."""
    kind, max_size, max_uniques, bound16, size = kernel
    per_vertex, slot_vertex, slot_b, slot_c, seen = memory
    starts[0] = 0
    if kind == 0:
        out = predict_lookback(tris, max_size, max_uniques, bound16, size, per_vertex, starts, None, marks)
        _clear_entries(per_vertex, tris, 1, -1)
    elif kind == 1:
        out = predict_lookback_dx(tris, max_size, max_uniques, bound16, per_vertex, starts, None, marks)
        _clear_entries(per_vertex, tris, 4, -1)
    elif kind == 2:
        out = predict_fifo(tris, max_size, max_uniques, bound16, size, per_vertex, starts, None, marks)
        _clear_entries(per_vertex, tris, 1, -1)
    elif kind == 3:
        out = predict_lru(tris, max_size, max_uniques, bound16, size, per_vertex, slot_vertex, slot_b, slot_c,
                          starts, None, marks)
        _clear_entries(per_vertex, tris, 1, -1)
    else:
        out = predict_direct(tris, max_size, max_uniques, bound16, size, slot_vertex, slot_b, seen, starts, None,
                             marks)
        slot_vertex[:] = -1
        slot_b[:] = -1
        _clear_entries(seen, tris, 1, 0)
    return out


def run_kernel(profile, tris, vertex_count: int, starts: np.ndarray, shaded: np.ndarray,
               marks: np.ndarray | None = None):
    """Run the kernel of ``profile``'s memory kind: ``(invocations, batches, referenced)``.

    ``starts`` (length ``T + 1`` or 0) receives the first triangle of every batch, ``shaded``
    (length ``vertex_count`` or 0) the invocations of every vertex, ``marks`` (uint8, length
    ``T``; the order-dependent kinds only) every triangle's miss mask, bit ``i`` set when its
    corner ``i`` was shaded.  ``referenced`` is the number of distinct vertices the buffer
    references (read off the per-vertex state).
    """
    kind = profile.memory
    if kind in MEMORY_KERNEL_KINDS:
        counts = shaded if shaded.shape[0] else None
        memory = kernel_memory(profile, vertex_count, tris.shape[0])
        inv, batches = _run_memory_kernel(profile, tris, memory, starts, counts, marks)
        return inv, batches, _referenced(kind, memory)
    seen = np.zeros(max(vertex_count, 1), np.uint8)
    if kind == "groups":
        group_seen = np.zeros(max(vertex_count, 1) // profile.memory_size + 1, np.uint8)
        inv, batches = predict_groups(tris, vertex_count, profile.memory_size, group_seen, seen, shaded)
    elif kind == "range":
        inv, batches = predict_range(tris, seen, shaded)
    else:
        raise ValueError(f"no kernel for memory kind {kind!r}")
    return inv, batches, int(np.count_nonzero(seen))
