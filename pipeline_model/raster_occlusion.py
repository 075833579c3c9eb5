"""VRO's occlusion record across chunks of tile rows: how many chunks, and the merge.

Under ``record_occlusion`` the tile renderer (:mod:`pipeline_model.raster_kernel`) records every
early-depth comparison between fragments of two different objects in per-chunk
(objects x objects) tables: ``first[c, a, b]`` numbers the first relation ``a`` in front of
``b`` seen in chunk ``c`` (in the chunk's own tile order), ``count[c, a, b]`` counts them.
:func:`merge_chunks` merges the chunks in row order and :func:`first_seen_pairs` keeps, for every
unordered pair, the direction seen first: the same record as one serial pass over all tiles.

References
----------
de Lucas, E., Marcuello, P., Parcerisa, J.-M., Gonzalez, A. (2019).  Visibility Rendering Order:
Improving Energy Efficiency on Mobile GPUs through Frame Coherence.  IEEE TPDS 30(2) (paper 000), sec. 3.1-3.2: the
object visibility graph and its first-relation rule.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["OCC_TABLE_BYTES", "occlusion_chunks", "merge_chunks", "first_seen_pairs"]

#: Upper bound on the per-chunk occlusion tables of a parallel ``record_occlusion`` render
#: (2 int64 tables of objects x objects per chunk of tile rows).
OCC_TABLE_BYTES = 64 << 20


def occlusion_chunks(tiles_y, n_obj):
    """Chunks of tile rows for a parallel ``record_occlusion`` render: one per numba thread,
    fewer when their tables would exceed ``OCC_TABLE_BYTES``."""
    return max(1, min(tiles_y, numba.get_num_threads(),
                      OCC_TABLE_BYTES // max(1, 16 * n_obj * n_obj)))


def merge_chunks(first, count, seq):
    """Merge per-chunk occlusion tables in chunk (= serial tile) order.

    ``first[c]`` numbers each directed pair's first relation 1..seq[c] in chunk c's own tile
    order. Offsetting chunk c by the relations numbered in the chunks before it and keeping the
    earliest chunk's number per pair orders first relations exactly as one serial pass over all
    tiles would (only that order matters to :func:`first_seen_pairs`); counts add up.
    """
    if first.shape[0] == 1:
        return first[0], count[0]
    base = np.concatenate(([0], np.cumsum(seq)[:-1]))
    merged = first[0].copy()
    for c in range(1, first.shape[0]):
        new = (merged == 0) & (first[c] != 0)
        merged[new] = first[c][new] + base[c]
    return merged, count.sum(axis=0)


def first_seen_pairs(first, count, obj_ids):
    """``(pairs, counts, conflicts)``: per unordered object pair the direction seen first, as
    ``(occluder, occluded)`` object ids in first-seen order, the comparisons supporting it and
    those against it."""
    a, b = np.nonzero(first)
    if a.size == 0:
        e = np.zeros(0, np.int64)
        return np.zeros((0, 2), np.int32), e, e.copy()
    f = first[a, b]
    rev = first[b, a]
    keep = (rev == 0) | (f < rev)
    a, b, f = a[keep], b[keep], f[keep]
    o = np.argsort(f, kind="stable")
    a, b = a[o], b[o]
    pairs = np.stack([obj_ids[a], obj_ids[b]], axis=1).astype(np.int32)
    return pairs, count[a, b].astype(np.int64), count[b, a].astype(np.int64)
