"""VRO's occlusion record across chunks of tile rows: how many chunks, and the merge.

Under ``record_occlusion`` the tile renderer (:mod:`pipeline_model.raster_kernel`) records every
early-depth comparison between fragments of two different objects in per-chunk
(objects x objects) tables: ``first[c, a, b]`` numbers the first relation ``a`` in front of
``b`` seen in chunk ``c`` (in the chunk's own tile order), ``count[c, a, b]`` counts them.
:func:`merge_chunks` merges the chunks in row order and :func:`first_seen_pairs` keeps, for every
unordered pair, the direction seen first: the same record as one serial pass over all tiles.

Each chunk also logs, tile by tile, the pairs in the order of their first sighting in the tile
with their counts in the tile (:func:`read_log`).  Replaying a log in tile order numbers first
relations as the serial pass does (:func:`tables_from_log`), over any subset of the tiles, so a
render that takes some tiles from another render of the frame (``render_frame(reuse=)``, VRO
with RE) joins its own log with the other's (:func:`join_logs`).

References
----------
de Lucas, E., Marcuello, P., Parcerisa, J.-M., Gonzalez, A. (2019).  Visibility Rendering Order:
Improving Energy Efficiency on Mobile GPUs through Frame Coherence.  IEEE TPDS 30(2) (paper 000), sec. 3.1-3.2: the
object visibility graph and its first-relation rule.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["OCC_TABLE_BYTES", "LOG_ENTRIES_PER_TILE", "occlusion_chunks", "merge_chunks", "first_seen_pairs",
           "log_capacity", "read_log", "tables_from_log", "join_logs"]

#: Room in a chunk's log of first sightings per tile (:func:`log_capacity`): a log that fills
#: up is not read (the render keeps its tables; another render cannot take its tiles).
LOG_ENTRIES_PER_TILE = 64

#: Upper bound on the per-chunk occlusion tables of a parallel ``record_occlusion`` render
#: (3 int64 tables of objects x objects per chunk of tile rows: the record and the log's slots).
OCC_TABLE_BYTES = 64 << 20


def occlusion_chunks(tiles_y, n_obj):
    """Chunks of tile rows for a parallel ``record_occlusion`` render: one per numba thread,
    fewer when their tables would exceed ``OCC_TABLE_BYTES``."""
    return max(1, min(tiles_y, numba.get_num_threads(),
                      OCC_TABLE_BYTES // max(1, 24 * n_obj * n_obj)))


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


def log_capacity(tiles_x: int, tiles_y: int, n_chunks: int) -> int:
    """Entries of each chunk's log: :data:`LOG_ENTRIES_PER_TILE` per tile of its largest share of rows."""
    return LOG_ENTRIES_PER_TILE * tiles_x * (-(-tiles_y // max(n_chunks, 1)))


def read_log(log, log_count, log_n):
    """The chunks' logs as one, in chunk (= tile) order: ``(tiles, pairs, counts)`` (int32 (K,),
    int32 (K, 2) dense object indices, int64 (K,)), or None when a chunk's log filled up."""
    cap = log.shape[1]
    if np.any(log_n > cap):
        return None
    parts = [slice(0, int(n)) for n in log_n]
    tiles = np.concatenate([log[c, p, 0] for c, p in enumerate(parts)]).astype(np.int32)
    pairs = np.concatenate([log[c, p, 1:3] for c, p in enumerate(parts)]).astype(np.int32).reshape(-1, 2)
    counts = np.concatenate([log_count[c, p] for c, p in enumerate(parts)]).astype(np.int64)
    return tiles, pairs, counts


def join_logs(own, other, taken):
    """The log of a render that drew some tiles itself (``own``) and took the tiles marked in
    ``taken`` (bool per tile) from another render (``other``), in tile order."""
    keep = taken[other[0]]
    tiles = np.concatenate([own[0], other[0][keep]])
    order = np.argsort(tiles, kind="stable")
    return (tiles[order], np.concatenate([own[1], other[1][keep]])[order],
            np.concatenate([own[2], other[2][keep]])[order])


@numba.njit(cache=True, nogil=True)
def _replay(pairs, counts, first, count):
    seq = 0
    for i in range(pairs.shape[0]):
        a = pairs[i, 0]
        b = pairs[i, 1]
        if first[a, b] == 0:
            seq += 1
            first[a, b] = seq
        count[a, b] += counts[i]


def tables_from_log(log, n_obj: int):
    """``(first, count)`` (objects x objects) of a log in tile order: what one serial pass over
    the log's tiles records."""
    first = np.zeros((n_obj, n_obj), np.int64)
    count = np.zeros((n_obj, n_obj), np.int64)
    _replay(np.ascontiguousarray(log[1], np.int32), np.ascontiguousarray(log[2], np.int64), first, count)
    return first, count
