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
    tile rows on all threads.

    Adjacent marked tiles of a tile row are copied as one run of pixels per screen row (most
    of a row when a render takes nearly all its tiles). List entries are positions in each
    render's own lists, so the writer and visibility records of a tile move by the
    difference of the two tiles' list offsets."""
    tiles_y = reuse.shape[0] // tiles_x
    colour_rows = colour.reshape(H, 3 * W)
    ref_colour_rows = ref_colour.reshape(H, 3 * W)
    for ty in numba.prange(tiles_y):
        y0 = ty * T
        y1 = min(H, y0 + T)
        row = ty * tiles_x
        tx = 0
        while tx < tiles_x:
            if not reuse[row + tx]:
                tx += 1
                continue
            first = tx
            while tx < tiles_x and reuse[row + tx]:
                tx += 1
            # unsigned indices: no negative-index wrap, so the copies compile to vector loops
            x0 = np.uint64(first * T)
            x1 = np.uint64(min(W, tx * T))
            for y_ in range(y0, y1):
                y = np.uint64(y_)
                for k in range(np.uint64(3) * x0, np.uint64(3) * x1):
                    colour_rows[y, k] = ref_colour_rows[y, k]
                for x in range(x0, x1):
                    depth[y, x] = ref_depth[y, x]
                for x in range(x0, x1):
                    shaded[y, x] = ref_shaded[y, x]
                for x in range(x0, x1):
                    covered[y, x] = ref_covered[y, x]
            for ti in range(row + first, row + tx):
                counters[ti, :] = ref_counters[ti, :]
                cycles[ti] = ref_cycles[ti]
                shift = offsets[ti] - ref_offsets[ti]
                if rec_writer:
                    xa = (ti - row) * T
                    xb = min(W, xa + T)
                    for y in range(y0, y1):
                        for x in range(xa, xb):
                            w = ref_writer[y, x]
                            writer[y, x] = w + shift if w >= 0 else -1
                if rec_vis:
                    r0 = ref_offsets[ti]
                    s0 = offsets[ti]
                    m = offsets[ti + 1] - s0
                    vis[s0:s0 + m] = ref_vis[r0:r0 + m]
                    zmin[s0:s0 + m] = ref_zmin[r0:r0 + m]
                    zmax[s0:s0 + m] = ref_zmax[r0:r0 + m]
