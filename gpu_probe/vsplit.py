"""Reference simulator of llvmpipe's vertex reuse (Mesa's draw module, "vsplit" front end).

The rule, as measured by :mod:`gpu_probe.experiments` on llvmpipe (Mesa 22.3.6) and as
written in Mesa's ``src/gallium/auxiliary/draw/draw_pt_vsplit.c``:

1. The index buffer of one ``GL_TRIANGLES`` draw is cut into *segments* of
   ``segment_size`` consecutive indices (1024 trimmed to whole triangles = 1023), starting
   at the draw's first index; segments share nothing.
2. Inside a segment, a direct-mapped table of ``slots`` (256) entries, keyed by
   ``vertex index % slots``, remembers the last vertex fetched into each slot. An index
   whose slot holds that same vertex reuses it; otherwise the vertex is shaded (one
   invocation) and replaces the slot's content. Hits change nothing.

This module is deliberately a plain Python loop (obviously correct, not fast): it is the
yardstick that the batch model (:func:`meshopt_batch.model.prediction.predict` with the ``llvmpipe``
profile: Algorithm 1, ``MAX_SIZE`` 1023, ``direct`` memory of 256 slots) is checked against.
"""

from __future__ import annotations

import numpy as np

SEGMENT_SIZE = 1023
SLOTS = 256


def simulate_vsplit(indices, segment_size: int = SEGMENT_SIZE, slots: int = SLOTS,
                    per_vertex: bool = False):
    """Vertex-shader invocations of one draw under llvmpipe's rule.

    Parameters
    ----------
    indices : array-like
        The index buffer, flat or ``(T, 3)``.
    segment_size : int
        Indices per segment (1023 for triangles on Mesa's draw module).
    slots : int
        Direct-mapped table size (256).
    per_vertex : bool
        Also return how often each vertex is shaded.

    Returns
    -------
    int, or (int, dict) with ``per_vertex``
        The invocations, and with ``per_vertex`` also each shaded vertex's count.
    """
    flat = [int(v) for v in np.asarray(indices).reshape(-1)]
    invocations = 0
    counts: dict[int, int] = {}
    for start in range(0, len(flat), segment_size):
        table = [-1] * slots                       # the table is cleared per segment
        for v in flat[start:start + segment_size]:
            s = v % slots
            if table[s] != v:                      # miss: shade, take the slot
                table[s] = v
                invocations += 1
                if per_vertex:
                    counts[v] = counts.get(v, 0) + 1
    return (invocations, counts) if per_vertex else invocations


def segment_vertices(indices, segment_size: int = SEGMENT_SIZE) -> list[np.ndarray]:
    """Distinct vertices of each segment (the lower bound of its invocations)."""
    flat = np.asarray(indices).reshape(-1)
    return [np.unique(flat[s:s + segment_size]) for s in range(0, flat.size, segment_size)]


def fetch_sequence(indices, segment_size: int = SEGMENT_SIZE, slots: int = SLOTS):
    """The vertices shaded by each segment, in shading order (the misses).

    llvmpipe shades a segment's fetched vertices in this order, ``subgroup_size`` lanes at
    a time, so the waves captured by :func:`gpu_probe.waves.capture_waves` are exactly
    these lists cut into pieces of 8.
    """
    flat = [int(v) for v in np.asarray(indices).reshape(-1)]
    out = []
    for start in range(0, len(flat), segment_size):
        table = [-1] * slots
        seq = []
        for v in flat[start:start + segment_size]:
            s = v % slots
            if table[s] != v:
                table[s] = v
                seq.append(v)
        out.append(seq)
    return out
