"""DR's shading pass read from the baseline's writer record, where every draw is WOZ opaque.

In a frame whose every draw tests and writes depth without blending, under a strict depth test
(less or greater) and with no tie-break, the baseline (program order, full rate) and DR's
shading pass agree pixel by pixel on which fragment is shaded last:

* the baseline's last writer of a pixel is the first fragment, in list order, at the pixel's
  final depth (an earlier one is farther, a later one at that depth fails the strict test), and
  no fragment writes it after that one;
* DR's shading pass, given the final depth (``hsr_depth``), shades exactly that fragment (the
  first at the final depth claims the pixel) and no other.

So DR's picture and depth are the baseline's, every fragment is rasterized as in the baseline
(its coverage and rasterized counts too, each one counted by the depth-only pass as well), and
DR shades one fragment per written pixel, the writer's. :func:`shading_pass_counts` counts
those per tile from the writer record, in the renderer's order of accumulation, so the
counters and shader cycles have the renderer's bits; :func:`pipeline_model.raster.hsr_from_baseline`
checks the conditions and builds the result.

References
----------
Paper 003 (EVR) sec. II: deferred rendering's hidden-surface removal (the depth-only pass before
shading) on tile-based GPUs.
"""

from __future__ import annotations

import numba
import numpy as np

from .raster_kernel import COUNTER_NAMES, N_COUNTERS

__all__ = ["shading_pass_counts"]

_RASTERIZED = COUNTER_NAMES.index("fragments_rasterized")
_KILLED = COUNTER_NAMES.index("early_z_killed")
_SHADED = COUNTER_NAMES.index("fragments_shaded")
_SAMPLES = COUNTER_NAMES.index("samples")
_RENDERED = COUNTER_NAMES.index("tiles_rendered")
_TRIANGLES = COUNTER_NAMES.index("tile_triangles")
_HSR = COUNTER_NAMES.index("hsr_fragments")
_TEXTURED = COUNTER_NAMES.index("textured_fragments")


@numba.njit(cache=True, nogil=True)
def _counts(writer, offsets, tri, draw, kind, cost, baseline_counters):
    h, w = writer.shape
    shaded = np.zeros((h, w), np.int32)
    per_entry = np.zeros(tri.shape[0], np.int64)
    for y_ in range(h):
        y = np.uint64(y_)
        for x in range(np.uint64(w)):
            e = writer[y, x]
            if e >= 0:
                shaded[y, x] = 1
                per_entry[e] += 1
    n_tiles = offsets.shape[0] - 1
    counters = np.zeros((n_tiles, N_COUNTERS), np.int64)
    cycles = np.zeros(n_tiles, np.float64)
    for ti in range(n_tiles):
        n_shade = 0
        n_tex = 0
        cyc = 0.0
        for en in range(offsets[ti], offsets[ti + 1]):
            n = per_entry[en]
            d = draw[tri[en]]
            n_shade += n
            k = kind[d]
            if k >= 1 and k <= 3:
                n_tex += n
            cyc += np.float64(cost[d]) * n
        rasterized = baseline_counters[ti, _RASTERIZED]
        counters[ti, _RASTERIZED] = rasterized
        counters[ti, _KILLED] = rasterized - n_shade
        counters[ti, _SHADED] = n_shade
        counters[ti, _SAMPLES] = baseline_counters[ti, _SAMPLES]
        counters[ti, _RENDERED] = baseline_counters[ti, _RENDERED]
        counters[ti, _TRIANGLES] = baseline_counters[ti, _TRIANGLES]
        counters[ti, _HSR] = rasterized
        counters[ti, _TEXTURED] = n_tex
        cycles[ti] = cyc
    return shaded, counters, cycles


def shading_pass_counts(writer: np.ndarray, offsets: np.ndarray, tri: np.ndarray, draw: np.ndarray,
                        colour_kind: np.ndarray, shader_cost: np.ndarray,
                        baseline_counters: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """DR's per-pixel shaded counts, per-tile counters and shader cycles, from the baseline.

    Parameters
    ----------
    writer : ndarray
        The baseline's ``writer_entry`` (int32 (H, W): list entry of each pixel's last writer,
        -1 where none).
    offsets, tri : ndarray
        The tile lists the baseline drew (program order).
    draw : ndarray
        Each triangle's draw.
    colour_kind, shader_cost : ndarray
        Per draw: colour kind (1-3 are textured) and shader cost.
    baseline_counters : ndarray
        The baseline's ``tile_counters`` (rasterized fragments, samples, tiles and entries are
        DR's too).

    Returns
    -------
    shaded : ndarray
        int32 (H, W): 1 where a fragment is shaded, else 0.
    counters : ndarray
        int64 (n_tiles, len(COUNTER_NAMES)).
    cycles : ndarray
        float64 (n_tiles,): shader cost summed entry by entry, as the renderer sums it.

    References
    ----------
    Paper 003 (EVR) sec. II: DR's depth-only pass and shading pass.
    """
    return _counts(np.ascontiguousarray(writer, np.int32), np.ascontiguousarray(offsets, np.int64),
                   np.ascontiguousarray(tri, np.int32), np.ascontiguousarray(draw, np.int32),
                   np.ascontiguousarray(colour_kind, np.int8), np.ascontiguousarray(shader_cost, np.float32),
                   np.ascontiguousarray(baseline_counters, np.int64))
