"""Tiles one render can take from another render of the same frame instead of drawing them.

A tile's outputs (colours, depth, per-pixel counts, counters, shader cycles, the writer and
visibility records) depend only on the frame, the render's options, the tile's triangle list
and the tile's rate.  Renders of one frame that differ only in ``skip``, ``rate``, ``order`` and
the previous frame's buffers (RE, DSR and their combinations against the baseline or EVR) draw
most tiles identically: :func:`reusable_tiles` finds those tiles, :func:`copy_tiles` copies
them from the earlier render, bit for bit.  The renderer then skips them
(:func:`pipeline_model.raster.render_frame`, ``reuse=``).

References
----------
Paper 000 (RE, sec. 3) and paper 004 (DSR, sec. 3): the techniques whose renders share tiles.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["reusable_tiles", "copy_tiles"]


@numba.njit(cache=True, nogil=True)
def reusable_tiles(skip, rate, offsets, tri, ref_skip, ref_rate, ref_offsets, ref_tri):
    """Bool per tile: drawn in both renders (not skipped), at the same rate, from the same
    triangle list (entry for entry)."""
    n = skip.shape[0]
    out = np.zeros(n, np.bool_)
    for ti in range(n):
        if skip[ti] or ref_skip[ti] or rate[ti] != ref_rate[ti]:
            continue
        s0 = offsets[ti]
        r0 = ref_offsets[ti]
        m = offsets[ti + 1] - s0
        if ref_offsets[ti + 1] - r0 != m:
            continue
        same = True
        for q in range(m):
            if tri[s0 + q] != ref_tri[r0 + q]:
                same = False
                break
        out[ti] = same
    return out


@numba.njit(cache=True, nogil=True, parallel=True)
def copy_tiles(reuse, W, H, T, tiles_x, offsets, ref_offsets,
               colour, depth, shaded, covered, counters, cycles,
               ref_colour, ref_depth, ref_shaded, ref_covered, ref_counters, ref_cycles,
               rec_writer, writer, ref_writer, rec_vis, vis, zmin, zmax,
               ref_vis, ref_zmin, ref_zmax):
    """Copy every tile marked in ``reuse`` from the reference render's outputs (``ref_*``),
    row by row, tiles on all threads.

    List entries are positions in each render's own lists, so the writer and visibility
    records of a tile move by the difference of the two tiles' list offsets."""
    for ti in numba.prange(reuse.shape[0]):
        if not reuse[ti]:
            continue
        ty = ti // tiles_x
        tx = ti - ty * tiles_x
        x0 = tx * T
        y0 = ty * T
        x1 = min(W, x0 + T)
        y1 = min(H, y0 + T)
        shift = offsets[ti] - ref_offsets[ti]
        for y in range(y0, y1):
            colour[y, x0:x1, :] = ref_colour[y, x0:x1, :]
            depth[y, x0:x1] = ref_depth[y, x0:x1]
            shaded[y, x0:x1] = ref_shaded[y, x0:x1]
            covered[y, x0:x1] = ref_covered[y, x0:x1]
            if rec_writer:
                for x in range(x0, x1):
                    w = ref_writer[y, x]
                    writer[y, x] = w + shift if w >= 0 else -1
        counters[ti, :] = ref_counters[ti, :]
        cycles[ti] = ref_cycles[ti]
        if rec_vis:
            r0 = ref_offsets[ti]
            s0 = offsets[ti]
            m = offsets[ti + 1] - s0
            vis[s0:s0 + m] = ref_vis[r0:r0 + m]
            zmin[s0:s0 + m] = ref_zmin[r0:r0 + m]
            zmax[s0:s0 + m] = ref_zmax[r0:r0 + m]
