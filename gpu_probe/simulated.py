"""Simulated GPUs: invocation counters that follow published vertex-reuse rules.

Every public function here is a *counter* for ``meshopt-batch probe --counter``::

    counts = nvidia_gl(indices, vertex_count)

``indices`` is the 1-D ``uint32`` index buffer of one triangle-list draw and ``counts`` the
vertex-shader invocations of every vertex (``int64``, length ``vertex_count``).  Each counter
follows one rule as it is published, written plainly from the rule (one compiled loop per rule,
independent of :mod:`meshopt_batch.model.prediction`), so that the probe's experiments and fit can be
checked against GPUs nobody here can reach:

====================  ============================================================================
``nvidia_gl``         batches of at most 96 indices and 32 shaded vertices; a vertex is reused when
                      it occurs among the batch's last 42 index positions (OpenGL) [1]_
``nvidia_gl_16bit``   ``nvidia_gl`` where two consecutive indices in different 2^16 blocks empty
                      the look-back (measured on an H100; paper 001 sec. 3.3 reports the effect)
``nvidia_dx``         the same batches; reuse at distance ``d`` from an earlier position ``i`` iff
                      ``d <= 44`` (``i % 3 == 0``), ``d <= 40 or d == 42`` (1), ``d <= 42 and
                      d != 40`` (2) (Direct3D) [1]_
``amd``               batches of 384 indices, an LRU of 15 vertices per batch [1]_
``intel``             one FIFO of 128 vertices for the whole draw (the paper's approximation) [1]_
``llvmpipe``          segments of 1023 indices, each with a 256-slot table keyed by ``index % 256``
                      (Mesa's draw module, ``draw_pt_vsplit.c``)
``mali_valhall``      every referenced index shades its aligned group of 4 vertex ids, each group
                      once per draw: indices 0, 7, 15 shade vertices 0-7 and 12-15 (issue 18)
``mali_400``          the draw shades every vertex from its smallest to its largest index: indices
                      0, 1000, 2 shade 1001 vertices (issue 18)
====================  ============================================================================

and variants with other sizes: ``batch_64_16`` (64 indices / 16 shaded, look-back 42),
``lookback_20``, ``lru_7``, ``fifo_32``, ``direct_128`` and ``groups_8``.  :data:`SIMULATED`
maps every name to its function.

A batch ends before a triangle that does not fit (its indices or its newly shaded vertices
would exceed the bounds); that triangle starts the next batch with an empty memory.

References
----------
.. [1] B. Kerbl, M. Kenzel, E. Ivanchenko, D. Schmalstieg, M. Steinberger, "Revisiting the
   Vertex Cache: Understanding and Optimizing Vertex Processing on the modern GPU", Proc. ACM
   Comput. Graph. Interact. Tech. 1(2), 2018 (paper 001), sec. 3.3-3.4.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _direct3d_rule(distance, earlier_position):
    """Paper 001 sec. 3.3: NVIDIA's look-back under Direct3D."""
    residue = earlier_position % 3
    if residue == 0:
        return distance <= 44
    if residue == 1:
        return distance <= 40 or distance == 42
    return distance <= 42 and distance != 40


@njit(cache=True)
def _reused_in_window(batch, filled, vertex, window, direct3d, blocks):
    """Is ``vertex`` reused at batch position ``filled``, given the batch's earlier indices?
    With ``blocks`` the search stops where two consecutive indices lie in different 2^16
    blocks."""
    later = vertex
    for i in range(filled - 1, -1, -1):
        if blocks and batch[i] >> 16 != later >> 16:
            return False
        later = batch[i]
        distance = filled - i
        if not direct3d and distance > window:
            return False
        if direct3d and distance > 44:
            return False
        if batch[i] == vertex and (not direct3d or _direct3d_rule(distance, i)):
            return True
    return False


@njit(cache=True)
def look_back_batches(indices, vertex_count, batch_indices, batch_shaded, window, direct3d,
                      blocks=False):
    """NVIDIA: batches of ``batch_indices`` indices and ``batch_shaded`` shaded vertices; every
    index is appended to the batch and reuses an equal index within ``window`` positions back
    (or under the Direct3D rule), and with ``blocks`` only back to the last 2^16 block switch."""
    counts = np.zeros(vertex_count, np.int64)
    batch = np.empty(batch_indices, np.int64)
    fresh = np.zeros(3, np.bool_)
    filled = 0
    shaded = 0
    for t in range(indices.shape[0] // 3):
        for attempt in range(2):
            if filled + 3 > batch_indices:
                filled, shaded = 0, 0
            for k in range(3):
                v = np.int64(indices[3 * t + k])
                fresh[k] = not _reused_in_window(batch, filled + k, v, window, direct3d, blocks)
                batch[filled + k] = v
            if shaded + fresh.sum() > batch_shaded and attempt == 0:
                filled, shaded = 0, 0      # the triangle does not fit: it starts the next batch
                continue
            break
        for k in range(3):
            if fresh[k]:
                counts[batch[filled + k]] += 1
                shaded += 1
        filled += 3
    return counts


@njit(cache=True)
def lru_batches(indices, vertex_count, batch_indices, capacity):
    """AMD: batches of ``batch_indices`` indices; inside a batch an LRU list of ``capacity``
    vertices (a hit moves the vertex to the front, a miss shades it and pushes it in front,
    dropping the least recently used)."""
    counts = np.zeros(vertex_count, np.int64)
    recent = np.empty(capacity, np.int64)       # most recent first
    held = 0
    filled = 0
    for t in range(indices.shape[0] // 3):
        if filled + 3 > batch_indices:
            held, filled = 0, 0
        for k in range(3):
            v = np.int64(indices[3 * t + k])
            at = -1
            for j in range(held):
                if recent[j] == v:
                    at = j
                    break
            if at < 0:
                counts[v] += 1
                if held < capacity:
                    held += 1
                at = held - 1
            for j in range(at, 0, -1):
                recent[j] = recent[j - 1]
            recent[0] = v
        filled += 3
    return counts


@njit(cache=True)
def fifo_draw(indices, vertex_count, capacity):
    """Intel (approximation): one FIFO of ``capacity`` vertices for the whole draw; a miss
    shades the vertex and pushes it, evicting the oldest; a hit changes nothing."""
    counts = np.zeros(vertex_count, np.int64)
    ring = np.full(capacity, -1, np.int64)
    oldest = 0
    for index in indices:
        v = np.int64(index)
        found = False
        for j in range(capacity):
            if ring[j] == v:
                found = True
                break
        if not found:
            counts[v] += 1
            ring[oldest] = v
            oldest = (oldest + 1) % capacity
    return counts


@njit(cache=True)
def direct_mapped_segments(indices, vertex_count, segment, slots):
    """llvmpipe: segments of ``segment`` consecutive indices share nothing; in a segment a
    table of ``slots`` entries keyed by ``index % slots`` holds the last vertex of each slot."""
    counts = np.zeros(vertex_count, np.int64)
    table = np.full(slots, -1, np.int64)
    for start in range(0, indices.shape[0], segment):
        table[:] = -1
        for p in range(start, min(start + segment, indices.shape[0])):
            v = np.int64(indices[p])
            if table[v % slots] != v:
                counts[v] += 1
                table[v % slots] = v
    return counts


@njit(cache=True)
def aligned_groups(indices, vertex_count, group):
    """Mali Valhall and later: an index shades its whole aligned group of ``group`` vertex ids
    (those that exist), each group once per draw."""
    counts = np.zeros(vertex_count, np.int64)
    done = np.zeros(vertex_count // group + 1, np.bool_)
    for index in indices:
        g = np.int64(index) // group
        if not done[g]:
            done[g] = True
            for w in range(g * group, min(g * group + group, vertex_count)):
                counts[w] += 1
    return counts


@njit(cache=True)
def whole_range(indices, vertex_count):
    """Mali-400: the draw shades every vertex from its smallest to its largest index, once."""
    counts = np.zeros(vertex_count, np.int64)
    if indices.shape[0]:
        counts[indices.min():indices.max() + 1] = 1
    return counts


def nvidia_gl(indices, vertex_count):
    """NVIDIA (Kepler-Pascal), OpenGL: 96 indices / 32 shaded per batch, look-back 42."""
    return look_back_batches(indices, vertex_count, 96, 32, 42, False)


def nvidia_gl_16bit(indices, vertex_count):
    """NVIDIA, OpenGL, with the 2^16 block rule measured on an H100: reuse reaches back only
    to the last pair of consecutive indices in different 2^16 blocks."""
    return look_back_batches(indices, vertex_count, 96, 32, 42, False, True)


def nvidia_dx(indices, vertex_count):
    """NVIDIA, Direct3D: 96 / 32 per batch, the position-mod-3 look-back rule."""
    return look_back_batches(indices, vertex_count, 96, 32, 0, True)


def amd(indices, vertex_count):
    """AMD GCN: batches of 384 indices, LRU of 15 vertices."""
    return lru_batches(indices, vertex_count, 384, 15)


def intel(indices, vertex_count):
    """Intel Gen9 as the paper approximates it: one FIFO of 128 vertices."""
    return fifo_draw(indices, vertex_count, 128)


def llvmpipe(indices, vertex_count):
    """Mesa llvmpipe: segments of 1023 indices, a 256-slot table keyed by index mod 256."""
    return direct_mapped_segments(indices, vertex_count, 1023, 256)


def mali_valhall(indices, vertex_count):
    """Arm Mali Valhall and later: aligned groups of 4 vertex ids."""
    return aligned_groups(indices, vertex_count, 4)


def mali_400(indices, vertex_count):
    """Arm Mali-400: the whole index range of the draw."""
    return whole_range(indices, vertex_count)


def batch_64_16(indices, vertex_count):
    """NVIDIA-like with smaller batches: 64 indices / 16 shaded, look-back 42."""
    return look_back_batches(indices, vertex_count, 64, 16, 42, False)


def lookback_20(indices, vertex_count):
    """NVIDIA-like with a look-back of 20 positions (96 / 32 per batch)."""
    return look_back_batches(indices, vertex_count, 96, 32, 20, False)


def lru_7(indices, vertex_count):
    """AMD-like with an LRU of 7 (batches of 384 indices)."""
    return lru_batches(indices, vertex_count, 384, 7)


def fifo_32(indices, vertex_count):
    """One FIFO of 32 vertices for the whole draw."""
    return fifo_draw(indices, vertex_count, 32)


def direct_128(indices, vertex_count):
    """llvmpipe-like with a 128-slot table (segments of 1023 indices)."""
    return direct_mapped_segments(indices, vertex_count, 1023, 128)


def groups_8(indices, vertex_count):
    """Mali-like with aligned groups of 8 vertex ids."""
    return aligned_groups(indices, vertex_count, 8)


#: Every simulated GPU by name (``--counter gpu_probe.simulated:NAME``).
SIMULATED = {f.__name__: f for f in (nvidia_gl, nvidia_gl_16bit, nvidia_dx, amd, intel, llvmpipe, mali_valhall,
                                     mali_400, batch_64_16, lookback_20, lru_7, fifo_32,
                                     direct_128, groups_8)}
