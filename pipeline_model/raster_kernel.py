"""The compiled tile renderer of the raster stage (numba): one frame, tile by tile.

:func:`render_tiles` runs chunks of tile rows over numba's threads (tiles are independent, so
any number of threads gives the same bits; on one thread the chunks run in order).  Per tile
(row-major) each triangle of the tile's list is rasterized
into tile-sized depth and colour buffers, then the tile is flushed into the frame.
:func:`pipeline_model.raster.render_frame` prepares the arguments and documents every option
(rates, skipped tiles, depth prefill, DR's depth-only pass, the VRO/EVR records, tie-breaks).

Each triangle uses the set-up of :mod:`pipeline_model.raster_setup` (edge functions, depth
plane).  Per fragment:

* Early depth test with ``depth_func`` (GL names: never, less, equal, lequal, greater,
  notequal, gequal, always; default less) for draws with ``depth_test``; depth written only by
  draws with ``depth_write`` (WOZ); NWOZ draws test without writing; draws without depth test
  pass every fragment and write nothing.
* Every fragment that passes is shaded (``pipeline_model.shading``, perspective-correct uv from
  ``inv_w``) and written; ``blend`` draws are composited "alpha over" with the draw's alpha. The
  tile colour buffer is float64 and rounded to 8 bits per channel at flush.
* Owed colours.  Every fragment that passes is counted as shaded, but where overwrites are
  frequent a replacing (non-blended) write at full rate only notes the triangle the pixel now
  owes its colour to.  The colour is computed when something reads it (a blend or any other
  colour write of the tile, or the flush) from the triangle's record at that pixel, with the
  same arithmetic and so the same bits; fragments overwritten before then are never computed.
  A triangle's writes are owed when its box covers :data:`LAZY_MIN_PIXELS` or more of the tile
  and more than one in :data:`LAZY_OVERWRITE_RATIO` of the fragments shaded so far in this tile
  and the previous one replaced a depth write; elsewhere paying a colour later costs more than
  it saves.  City-unordered shades 3.4 fragments per shaded pixel; statues 1.1.

The full-rate, plain-depth-test case has its own specialised loop (the common case), and so
have DR's two passes and the prefill's draws at full rate; the general loop handles
superfragments (DSR's rates) and the passes with records.  Array accesses in these loops use unsigned
indices (``np.uint64``): numba wraps a signed index for Python's negative indexing, a compare
and select on every access that LLVM cannot drop when the index is not a plain ``range``
from zero (about 10 % of a render on one thread).

References
----------
Mesa 3D, llvmpipe rasterizer (``src/gallium/drivers/llvmpipe``): the rules this kernel matches.
Paper 000 (VRO) sec. 3.1 for the occlusion record; paper 003 (EVR) sec. V.B for the writer
record; paper 004 (DSR) sec. 3 for the superfragments.
"""

from __future__ import annotations

import numba
import numpy as np

from .raster_setup import DRAW_SHIFT, R_AB, R_ATTR, R_BOX, R_C64, R_FLAGS, R_PLANE, VALID_BIT, fma32, prefetch
from .shading import shade_scalar

__all__ = ["DEPTH_FUNCS", "COUNTER_NAMES", "N_COUNTERS", "F_TEST", "F_WRITE", "F_BLEND",
           "render_tiles"]

#: GL depth functions and their codes in the kernel.
DEPTH_FUNCS = {"never": 0, "less": 1, "equal": 2, "lequal": 3, "greater": 4, "notequal": 5,
               "gequal": 6, "always": 7}

#: Per-tile integer counters (columns of ``RasterResult.tile_counters``).
COUNTER_NAMES = ("fragments_rasterized", "early_z_killed", "fragments_shaded", "samples",
                 "blended", "tiles_rendered", "tile_triangles", "hsr_fragments",
                 "textured_fragments")
N_COUNTERS = len(COUNTER_NAMES)

#: Bits of a draw's flags: depth test, depth write, blend.
F_TEST, F_WRITE, F_BLEND = 1, 2, 4

#: Entries ahead in a tile's list whose triangle record is prefetched.
PREFETCH_AHEAD = 6

#: Smallest box (pixels of a tile) whose replacing full-rate writes leave colours owed;
#: smaller triangles are shaded at once (paying a colour later reads their record again).
LAZY_MIN_PIXELS = 16

#: Owed colours only where more than one in LAZY_OVERWRITE_RATIO of the fragments shaded in
#: the tile so far and in the previous tile replaced an earlier depth write (where that is
#: rare, paying a colour later costs more than it saves).
LAZY_OVERWRITE_RATIO = 2


@numba.njit(cache=True, nogil=True, inline="always")
def _cmp(func, a, b):
    """GL depth comparison ``func`` (a :data:`DEPTH_FUNCS` code) of incoming ``a`` with stored ``b``."""
    if func == 1:
        return a < b
    if func == 3:
        return a <= b
    if func == 4:
        return a > b
    if func == 6:
        return a >= b
    if func == 2:
        return a == b
    if func == 5:
        return a != b
    if func == 7:
        return True
    return False


@numba.njit(cache=True, nogil=True)
def _tie_pass(func, t, writer, passed):
    """tie_break="program": an equal depth passes as it would in program order (triangle index
    order): with less/greater the earlier triangle wins, with lequal/gequal the later one."""
    if func == 1 or func == 4:
        return writer >= 0 and t < writer
    if func == 3 or func == 6:
        return writer < 0 or t > writer
    return passed


@numba.njit(cache=True, nogil=True, inline="always")
def _ceil_div(a, b):
    return -((-a) // b)


@numba.njit(cache=True, nogil=True, inline="always")
def _floor_div(a, b):
    return a // b


@numba.njit(cache=True, nogil=True, inline="always")
def _plane_depth(dzdx, dzdy, z0, fx, fy):
    """The triangle's depth plane at sample ``(fx, fy)`` in float32 fused multiply-adds
    (:func:`~pipeline_model.raster_setup.fma32`), clamped to [0, 1]."""
    z = fma32(dzdy, fy, fma32(dzdx, fx, z0))
    if z < np.float32(0.0):
        return np.float32(0.0)
    if z > np.float32(1.0):
        return np.float32(1.0)
    return z


@numba.njit(cache=True, nogil=True, inline="always")
def _fragment_colour(const_colour, kind, colp, jj,
                     e0, e1, e2, sa0, sa1, sa2, bi0, bi1, bi2, w0, w1, w2,
                     u0, u1, u2, v0, v1, v2, sh0, sh1, sh2):
    """A fragment's colour: the draw's flat colour, or its shader at the perspective-correct
    attributes from the barycentrics (edge values ``e_k + sa_k * jj - bias_k`` at sample
    ``jj`` of the span, weighted by the vertices' ``1/w``).  ``colp`` holds the draw's
    colour parameters ``(r0, g0, b0, r1, g1, b1, f, flags)`` as float64."""
    cr, cg, cb, cr1, cg1, cb1, cf, cfl = colp
    if const_colour:
        return cr, cg, cb
    l2 = np.float64(e0 + sa0 * jj - bi0) * w2
    l0 = np.float64(e1 + sa1 * jj - bi1) * w0
    l1 = np.float64(e2 + sa2 * jj - bi2) * w1
    inv = 1.0 / (l0 + l1 + l2)
    u = (l0 * u0 + l1 * u1 + l2 * u2) * inv
    v = (l0 * v0 + l1 * v1 + l2 * v2) * inv
    lt = (l0 * sh0 + l1 * sh1 + l2 * sh2) * inv
    return shade_scalar(kind, cr, cg, cb, cr1, cg1, cb1, cf, cfl, u, v, lt)


@numba.njit(cache=True, nogil=True, inline="always")
def _record_occlusion(occ_first, occ_count, seq, oc, obj, other, passed,
                      log_occ, occ_slot, occ_log, occ_log_count, occ_log_n, tile_start, ti):
    """VRO's record of one early-depth comparison between two objects (self-occlusion and the
    cleared background ignored): (occluder, occluded) pair counted, its first sighting numbered.

    With ``log_occ`` the chunk's log also gets the pair: an entry ``(tile, occluder, occluded)``
    at its first sighting in tile ``ti`` (``occ_slot`` holds each pair's latest entry; entries
    from ``tile_start`` on are this tile's), and the entry's count.  A full log is marked
    ``len + 1`` and is not read."""
    if other >= 0 and other != obj:
        if passed:
            oa = obj
            ob = other
        else:
            oa = other
            ob = obj
        if occ_first[oc, oa, ob] == 0:
            seq[oc] += 1
            occ_first[oc, oa, ob] = seq[oc]
        occ_count[oc, oa, ob] += 1
        if log_occ:
            k = occ_slot[oa, ob]
            if k >= tile_start:
                occ_log_count[oc, k] += 1
            else:
                n = occ_log_n[oc]
                if n < occ_log.shape[1]:
                    occ_log[oc, n, 0] = ti
                    occ_log[oc, n, 1] = oa
                    occ_log[oc, n, 2] = ob
                    occ_log_count[oc, n] = 1
                    occ_slot[oa, ob] = n
                    occ_log_n[oc] = n + 1
                else:
                    occ_log_n[oc] = occ_log.shape[1] + 1


@numba.njit(cache=True, nogil=True)
def _draw_colour(dkind, dparams, d):
    """Draw ``d``'s colour kind, whether its colour is flat (kind 0, unlit) and its colour
    parameters ``(r0, g0, b0, r1, g1, b1, f, flags)`` as float64 (from their float32 values)."""
    f32 = np.float32
    kind = dkind[d]
    colp = (np.float64(f32(dparams[d, 0])), np.float64(f32(dparams[d, 1])),
            np.float64(f32(dparams[d, 2])), np.float64(f32(dparams[d, 3])),
            np.float64(f32(dparams[d, 4])), np.float64(f32(dparams[d, 5])),
            np.float64(f32(dparams[d, 6])), np.float64(f32(dparams[d, 7])))
    return kind, kind == 0 and f32(dparams[d, 7]) <= 0, colp


@numba.njit(cache=True, nogil=True)
def _vertex_attributes(recf, tu):
    """Triangle record ``tu``'s interpolated inputs as float64: u, v, light and ``1/w`` of its
    three vertices (each a triple)."""
    u = (np.float64(recf[tu, R_ATTR]), np.float64(recf[tu, R_ATTR + 4]), np.float64(recf[tu, R_ATTR + 8]))
    v = (np.float64(recf[tu, R_ATTR + 1]), np.float64(recf[tu, R_ATTR + 5]), np.float64(recf[tu, R_ATTR + 9]))
    sh = (np.float64(recf[tu, R_ATTR + 2]), np.float64(recf[tu, R_ATTR + 6]), np.float64(recf[tu, R_ATTR + 10]))
    w = (np.float64(recf[tu, R_ATTR + 3]), np.float64(recf[tu, R_ATTR + 7]), np.float64(recf[tu, R_ATTR + 11]))
    return u, v, sh, w


@numba.njit(cache=True, nogil=True)
def _pay_owed(tcol, towed, th, tw, x0u, y0u, H, rec, rec64, recf, dkind, dparams):
    """Compute the colours a tile still owes (``towed``: the triangle record whose full-rate
    fragment last replaced the pixel, or -1) and clear the debts.

    Each pixel's edge values are the int64 sums a span computes (``e_k + sa_k * jj`` at the
    pixel's sample), and the attributes and draw parameters are the record's and the draw's,
    so the bits equal shading the fragment when it passed.  A row is paid in runs of pixels
    owing to one triangle, its record read once per run.
    """
    for yy in range(th):
        sy = 256 * (np.int64(H) - np.int64(y0u) - yy) - 256
        xx = 0
        while xx < tw:
            t = towed[yy, xx]
            if t < 0:
                xx += 1
                continue
            xe = xx + 1
            while xe < tw and towed[yy, xe] == t:
                xe += 1
            tu = np.uint64(t)
            flags_t = rec[tu, R_FLAGS]
            kind, const_colour, colp = _draw_colour(dkind, dparams, np.uint64(flags_t >> DRAW_SHIFT))
            A0 = np.int64(rec[tu, R_AB])
            A1 = np.int64(rec[tu, R_AB + 2])
            A2 = np.int64(rec[tu, R_AB + 4])
            sx = 256 * (np.int64(x0u) + xx)
            e0 = A0 * sx + np.int64(rec[tu, R_AB + 1]) * sy + rec64[tu, R_C64]
            e1 = A1 * sx + np.int64(rec[tu, R_AB + 3]) * sy + rec64[tu, R_C64 + 1]
            e2 = A2 * sx + np.int64(rec[tu, R_AB + 5]) * sy + rec64[tu, R_C64 + 2]
            bi0 = np.int64(flags_t & 1)
            bi1 = np.int64((flags_t >> 1) & 1)
            bi2 = np.int64((flags_t >> 2) & 1)
            (u0, u1, u2), (v0, v1, v2), (sh0, sh1, sh2), (w0, w1, w2) = _vertex_attributes(recf, tu)
            sa0 = 256 * A0
            sa1 = 256 * A1
            sa2 = 256 * A2
            for jj in range(xe - xx):
                r, g, bb = _fragment_colour(const_colour, kind, colp, np.int64(jj),
                                           e0, e1, e2, sa0, sa1, sa2, bi0, bi1, bi2, w0, w1, w2,
                                           u0, u1, u2, v0, v1, v2, sh0, sh1, sh2)
                x = np.uint64(xx + jj)
                tcol[yy, x, 0] = r
                tcol[yy, x, 1] = g
                tcol[yy, x, 2] = bb
                towed[yy, x] = -1
            xx = xe


@numba.njit(cache=True, nogil=True, inline="always")
def _put_colour(tcol, twriter, y, x, r, g, bb, blend, alpha, beta, en):
    """Write a shaded fragment into the tile's colour buffer: blended over what is there, or
    replacing it (and recording tile-list entry ``en`` as the pixel's writer)."""
    if blend:
        tcol[y, x, 0] = r * alpha + tcol[y, x, 0] * beta
        tcol[y, x, 1] = g * alpha + tcol[y, x, 1] * beta
        tcol[y, x, 2] = bb * alpha + tcol[y, x, 2] * beta
    else:
        tcol[y, x, 0] = r
        tcol[y, x, 1] = g
        tcol[y, x, 2] = bb
        twriter[y, x] = en


@numba.njit(cache=True, nogil=True, parallel=True)
def render_tiles(W, H, T, tiles_x, tiles_y,
                 rec, rec64, recf,
                 dflags, dalpha, dcost, dkind, dparams, dobj,
                 offsets, tri, row_order,
                 skip, rate, use_prefill, prefill, hsr, prefill_hsr,
                 rec_occ, occ_first, occ_count, seq, n_chunks,
                 log_occ, occ_log, occ_log_count, occ_log_n,
                 rec_vis, vis, zmin, zmax, rec_writer, writer, tie_prog, owe,
                 use_prev_c, prev_c, use_prev_d, prev_d,
                 depth_func, clear_depth, clear_col,
                 colour, depth, shaded_pp, covered_pp, counters, cycles):
    """Render every tile of the frame, chunks of tile rows on numba's threads.

    Argument groups, in order: screen and tile grid; the triangle set-up
    (:class:`~pipeline_model.raster_setup.TriangleSetup`) and each triangle's draw; per draw
    flags (:data:`F_TEST` | :data:`F_WRITE` | :data:`F_BLEND`), alpha, shader cost, colour kind
    and parameters, dense object index; the per-tile lists (CSR) and the
    sequence in which tile rows are split into chunks; the technique inputs (``skip`` as int8
    per tile: 0 drawn, 1 skipped, 2 left alone for a copy from another render; rate, depth
    prefill, DR pass, and whether the prefill is DR's depth-only pass, whose fragments the
    prefill's draws then count as ``hsr_fragments``); the records (occlusion tables per chunk and,
    with ``log_occ``, each chunk's log of first sightings per tile, per-entry
    visibility and depth range, writer entry, program-order tie-break); whether colours may be
    owed; the previous frame's
    buffers; the depth function code and clear values; the outputs, filled in place.
    """
    colour_rows = colour.reshape(H, 3 * W)
    clear_u8 = np.empty(3, np.uint8)
    for c in range(3):
        v = min(max(clear_col[c], 0.0), 1.0)
        clear_u8[c] = np.uint8(np.int64(v * 255.0 + 0.5))
    # The tile rows, in the sequence ``row_order``, are split into n_chunks contiguous chunks
    # (one prange iteration each; tiles row-major within a row). Occlusion records go to the
    # chunk's own table and counter (``occ_first[ch]``, ``seq[ch]``), merged in chunk order
    # afterwards.
    for ch in numba.prange(n_chunks):
        oc = np.int64(ch)  # chunk index (occlusion tables are indexed only under rec_occ)
        n_slot = occ_first.shape[1] if log_occ else 1
        occ_slot = np.full((n_slot, n_slot), -1, np.int64)
        r0 = oc * tiles_y // n_chunks
        r1 = (oc + 1) * tiles_y // n_chunks
        tdepth = np.empty((T, T), np.float32)
        tcol = np.empty((T, T, 3), np.float64)
        tcol_rows = tcol.reshape(T, 3 * T)
        towner = np.empty((T, T), np.int32)
        tobj = np.empty((T, T), np.int32)
        tclaim = np.zeros((T, T), np.bool_)
        twriter = np.empty((T, T), np.int32)
        twtri = np.empty((T, T), np.int32)
        towed = np.full((T, T), -1, np.int32)  # every tile leaves it so (its debts are paid at flush)
        over_prev = 0  # the chunk's previous tile: fragments that replaced a depth write, shaded
        shade_prev = 0
        for ti_ in range((r1 - r0) * tiles_x):
            ty = np.int64(row_order[r0 + ti_ // tiles_x])
            tx = ti_ % tiles_x
            ti = ty * tiles_x + tx
            x0t = tx * T
            y0t = ty * T
            tw = min(W, x0t + T) - x0t
            th = min(H, y0t + T) - y0t
            if skip[ti] == 2:
                continue  # copied from another render afterwards (raster_reuse.copy_tiles)
            if skip[ti] == 1:
                for yy in range(th):
                    for xx in range(tw):
                        for c in range(3):
                            if use_prev_c:
                                colour[y0t + yy, x0t + xx, c] = prev_c[y0t + yy, x0t + xx, c]
                            else:
                                colour[y0t + yy, x0t + xx, c] = clear_u8[c]
                        if use_prev_d:
                            depth[y0t + yy, x0t + xx] = prev_d[y0t + yy, x0t + xx]
                        else:
                            depth[y0t + yy, x0t + xx] = clear_depth
                        if rec_writer:
                            writer[y0t + yy, x0t + xx] = -1
                continue
            x0u = np.uint64(x0t)
            y0u = np.uint64(y0t)
            tile_start = occ_log_n[oc] if log_occ else 0
            k = rate[ti]
            b = 1 << k
            for yy in range(th):
                for xx in range(tw):
                    tdepth[yy, xx] = (prefill[y0u + np.uint64(yy), x0u + np.uint64(xx)] if use_prefill
                                      else clear_depth)
                    tcol[yy, xx, 0] = clear_col[0]
                    tcol[yy, xx, 1] = clear_col[1]
                    tcol[yy, xx, 2] = clear_col[2]
            # auxiliary tile buffers only when an option reads them
            if hsr:
                for yy in range(th):
                    for xx in range(tw):
                        towner[yy, xx] = -1
            if rec_occ:
                for yy in range(th):
                    for xx in range(tw):
                        tobj[yy, xx] = -1
            if use_prefill:
                for yy in range(th):
                    for xx in range(tw):
                        tclaim[yy, xx] = False
            if rec_writer:
                for yy in range(th):
                    for xx in range(tw):
                        twriter[yy, xx] = -1
            if tie_prog:
                for yy in range(th):
                    for xx in range(tw):
                        twtri[yy, xx] = -1
            s0 = offsets[ti]
            s1 = offsets[ti + 1]
            n_rast_t = 0
            n_hsr_t = 0
            n_tex_t = 0
            n_kill_t = 0
            n_shade_t = 0
            n_blend_t = 0
            cyc_t = 0.0
            owes = False
            n_over_t = 0
            # pass 0: HSR depth-only pass over WOZ opaque triangles (DR); pass 1: the render pass
            n_entries = s1 - s0
            for q in range(2 * n_entries if hsr else n_entries):
                pss = 1
                en = s0 + q
                if hsr:
                    pss = 0 if q < n_entries else 1
                    en = s0 + (q % n_entries)
                t = tri[en]
                tu = np.uint64(t)
                if en + PREFETCH_AHEAD < s1:
                    # a later entry's record (two cache lines) while this one is drawn
                    t_next = np.int64(tri[en + PREFETCH_AHEAD])
                    prefetch(rec, t_next, 0)
                    prefetch(rec, t_next, 16)
                flags_t = rec[tu, R_FLAGS]
                if flags_t & VALID_BIT == 0:
                    continue
                d = np.uint64(flags_t >> DRAW_SHIFT)
                fl0 = dflags[d]
                woz_opaque = (fl0 & 1) != 0 and (fl0 & 2) != 0 and (fl0 & 4) == 0
                if pss == 0:
                    if not woz_opaque:
                        continue
                    mode = 1
                elif hsr and woz_opaque:
                    mode = 2
                elif use_prefill and woz_opaque:
                    mode = 3
                else:
                    mode = 0
                fl = dflags[d]
                dtest = (fl & 1) != 0
                dwrite = (fl & 2) != 0 and dtest
                blend = (fl & 4) != 0
                obj = dobj[d]
                count = mode != 2  # fragments are counted as rasterized once
                shade_pass = mode != 1
                fast = mode == 0 and b == 1
                plain = (fast and dtest and not blend and depth_func == 1 and not rec_vis
                         and not rec_occ and not tie_prog)
                # DR's two passes at full rate without records or tie-break
                hsr_plain = ((mode == 1 or mode == 2) and b == 1 and not rec_vis and not rec_occ
                             and not tie_prog)
                # the prefill's WOZ opaque draws (oracle, DR given its depth pass) likewise
                prefill_plain = mode == 3 and b == 1 and not rec_vis and not rec_occ and not tie_prog
                # sample index ranges (y-down fixed point: sample at 128*(2*bx0 + b))
                nbx = (tw + b - 1) // b
                nby = (th + b - 1) // b
                base_x = 128 * (2 * x0t + b)
                base_y = 128 * (2 * y0t + b)
                step = 256 * b
                j0 = max(0, _ceil_div(rec[tu, R_BOX] - base_x, step))
                j1 = min(nbx - 1, (rec[tu, R_BOX + 1] - base_x) // step)
                i0 = max(0, _ceil_div(rec[tu, R_BOX + 2] - base_y, step))
                i1 = min(nby - 1, (rec[tu, R_BOX + 3] - base_y) // step)
                if j0 > j1 or i0 > i1:
                    continue
                # a replacing full-rate write of a triangle whose box in the tile has
                # LAZY_MIN_PIXELS or more leaves the colour owed (module docstring); the other
                # replacing writes of the fast loops clear a pixel's debt, and any other colour
                # write first has the tile's debts paid
                replacing = fast and not blend
                lazy = (owe and replacing and (j1 - j0 + 1) * (i1 - i0 + 1) >= LAZY_MIN_PIXELS
                        and LAZY_OVERWRITE_RATIO * (n_over_t + over_prev) > n_shade_t + shade_prev)
                if lazy:
                    owes = True
                elif owes and shade_pass and not replacing:
                    _pay_owed(tcol, towed, th, tw, x0u, y0u, H, rec, rec64, recf, dkind, dparams)
                    owes = False
                A0 = np.int64(rec[tu, R_AB])
                B0 = np.int64(rec[tu, R_AB + 1])
                C0 = rec64[tu, R_C64]
                A1 = np.int64(rec[tu, R_AB + 2])
                B1 = np.int64(rec[tu, R_AB + 3])
                C1 = rec64[tu, R_C64 + 1]
                A2 = np.int64(rec[tu, R_AB + 4])
                B2 = np.int64(rec[tu, R_AB + 5])
                C2 = rec64[tu, R_C64 + 2]
                bi0 = np.int64(flags_t & 1)
                bi1 = np.int64((flags_t >> 1) & 1)
                bi2 = np.int64((flags_t >> 2) & 1)
                sa0 = A0 * step
                sa1 = A1 * step
                sa2 = A2 * step
                dzdx = recf[tu, R_PLANE]
                dzdy = recf[tu, R_PLANE + 1]
                z0 = recf[tu, R_PLANE + 2]
                Hf = H * 256
                alpha = np.float64(dalpha[d])
                beta = 1.0 - alpha
                cost = np.float64(dcost[d])
                # per-draw colour parameters as float64 scalars; flat colour hoisted out of the fragment loop
                kind, const_colour, colp = _draw_colour(dkind, dparams, d)
                (u0, u1, u2), (v0, v1, v2), (sh0, sh1, sh2), (w0, w1, w2) = _vertex_attributes(recf, tu)
                n_rast = 0
                n_kill = 0
                n_shade = 0
                n_over = 0
                # the entry's visibility record, in registers while its fragments run
                zlo = zmin[en] if rec_vis else np.float32(0.0)
                zhi = zmax[en] if rec_vis else np.float32(0.0)
                seen = False
                for i in range(i0, i1 + 1):
                    by0 = i * b  # tile-local block origin
                    # gallium sample coords (x right, y up; pixel centres on integers)
                    sxg = 256 * (x0t + j0 * b) + 128 * (b - 1)
                    syg = Hf - 256 * (y0t + by0) - 128 * (b + 1)
                    e0 = A0 * sxg + B0 * syg + C0
                    e1 = A1 * sxg + B1 * syg + C1
                    e2 = A2 * sxg + B2 * syg + C2
                    # exact span of j - j0 with e_k + (j - j0) * sa_k > 0 for the three edges;
                    # an edge positive at the box's end it rises or falls towards bounds nothing
                    # (no division)
                    lo = 0
                    hi = j1 - j0
                    if sa0 > 0:
                        if e0 <= 0:
                            lo = max(lo, _floor_div(-e0, sa0) + 1)
                    elif sa0 < 0:
                        if e0 + sa0 * (j1 - j0) <= 0:
                            hi = min(hi, _ceil_div(e0, -sa0) - 1)
                    elif e0 <= 0:
                        continue
                    if sa1 > 0:
                        if e1 <= 0:
                            lo = max(lo, _floor_div(-e1, sa1) + 1)
                    elif sa1 < 0:
                        if e1 + sa1 * (j1 - j0) <= 0:
                            hi = min(hi, _ceil_div(e1, -sa1) - 1)
                    elif e1 <= 0:
                        continue
                    if sa2 > 0:
                        if e2 <= 0:
                            lo = max(lo, _floor_div(-e2, sa2) + 1)
                    elif sa2 < 0:
                        if e2 + sa2 * (j1 - j0) <= 0:
                            hi = min(hi, _ceil_div(e2, -sa2) - 1)
                    elif e2 <= 0:
                        continue
                    if lo > hi:
                        continue
                    fy = np.float32(syg / 256.0)
                    py1 = min(by0 + b, th)
                    if plain:
                        # the baseline's case: the fast loop below without its records and
                        # options (depth test "less", opaque, nothing recorded)
                        ty_ = np.uint64(by0)
                        gy = y0u + ty_
                        for jj in range(lo, hi + 1):
                            bx0 = j0 + jj
                            tx_ = np.uint64(bx0)
                            gx = x0u + tx_
                            fx = np.float32(x0t + bx0)
                            z = _plane_depth(dzdx, dzdy, z0, fx, fy)
                            covered_pp[gy, gx] += 1
                            stored = tdepth[ty_, tx_]
                            if not z < stored:
                                n_kill += 1
                                continue
                            n_over += stored != clear_depth
                            if dwrite:
                                tdepth[ty_, tx_] = z
                                twtri[ty_, tx_] = t
                            shaded_pp[gy, gx] += 1
                            if lazy:
                                towed[ty_, tx_] = t
                            else:
                                r, g, bb = _fragment_colour(const_colour, kind, colp, jj,
                                                           e0, e1, e2, sa0, sa1, sa2, bi0, bi1, bi2, w0, w1, w2,
                                                           u0, u1, u2, v0, v1, v2, sh0, sh1, sh2)
                                tcol[ty_, tx_, 0] = r
                                tcol[ty_, tx_, 1] = g
                                tcol[ty_, tx_, 2] = bb
                                if owes:
                                    towed[ty_, tx_] = -1
                            twriter[ty_, tx_] = en
                        n_rast += hi + 1 - lo
                        n_shade = n_rast - n_kill
                        continue
                    if fast:
                        # the common case (full rate, plain depth test): the general loop below
                        # specialised to one sample per pixel, records included
                        ty_ = np.uint64(by0)
                        gy = y0u + ty_
                        for jj in range(lo, hi + 1):
                            bx0 = j0 + jj
                            tx_ = np.uint64(bx0)
                            gx = x0u + tx_
                            fx = np.float32(x0t + bx0)
                            z = _plane_depth(dzdx, dzdy, z0, fx, fy)
                            n_rast += 1
                            covered_pp[gy, gx] += 1
                            if rec_vis:
                                if z < zlo:
                                    zlo = z
                                if z > zhi:
                                    zhi = z
                            if dtest:
                                stored = tdepth[ty_, tx_]
                                passed = _cmp(depth_func, z, stored)
                                if tie_prog and z == stored:
                                    passed = _tie_pass(depth_func, t, twtri[ty_, tx_], passed)
                                if passed and dwrite:
                                    tdepth[ty_, tx_] = z
                                    twtri[ty_, tx_] = t
                                if rec_occ:
                                    _record_occlusion(occ_first, occ_count, seq, oc, obj,
                                                      tobj[ty_, tx_], passed, log_occ, occ_slot, occ_log,
                                                      occ_log_count, occ_log_n, tile_start, ti)
                                    if passed and dwrite:
                                        tobj[ty_, tx_] = obj
                                if not passed:
                                    n_kill += 1
                                    continue
                                n_over += stored != clear_depth
                            seen = True
                            n_shade += 1
                            shaded_pp[gy, gx] += 1
                            if lazy:
                                towed[ty_, tx_] = t
                                twriter[ty_, tx_] = en
                                continue
                            if replacing and owes:
                                towed[ty_, tx_] = -1
                            r, g, bb = _fragment_colour(const_colour, kind, colp, jj,
                                                       e0, e1, e2, sa0, sa1, sa2, bi0, bi1, bi2, w0, w1, w2,
                                                       u0, u1, u2, v0, v1, v2, sh0, sh1, sh2)
                            _put_colour(tcol, twriter, ty_, tx_, r, g, bb, blend, alpha, beta, en)
                        continue
                    if hsr_plain:
                        # the general loop's modes 1 and 2 specialised to one sample per pixel
                        ty_ = np.uint64(by0)
                        gy = y0u + ty_
                        if mode == 1:
                            for jj in range(lo, hi + 1):
                                bx0 = j0 + jj
                                tx_ = np.uint64(bx0)
                                fx = np.float32(x0t + bx0)
                                z = _plane_depth(dzdx, dzdy, z0, fx, fy)
                                covered_pp[gy, x0u + tx_] += 1
                                if _cmp(depth_func, z, tdepth[ty_, tx_]):
                                    tdepth[ty_, tx_] = z
                                    towner[ty_, tx_] = t
                                    twtri[ty_, tx_] = t
                            n_rast += hi + 1 - lo
                        else:
                            for jj in range(lo, hi + 1):
                                bx0 = j0 + jj
                                tx_ = np.uint64(bx0)
                                if towner[ty_, tx_] != t:
                                    n_kill += 1
                                    continue
                                n_shade += 1
                                r, g, bb = _fragment_colour(const_colour, kind, colp, jj,
                                                           e0, e1, e2, sa0, sa1, sa2, bi0, bi1, bi2, w0, w1, w2,
                                                           u0, u1, u2, v0, v1, v2, sh0, sh1, sh2)
                                shaded_pp[gy, x0u + tx_] += 1
                                _put_colour(tcol, twriter, ty_, tx_, r, g, bb, blend, alpha, beta, en)
                        continue
                    if prefill_plain:
                        # the general loop's mode 3 specialised to one sample per pixel
                        ty_ = np.uint64(by0)
                        gy = y0u + ty_
                        for jj in range(lo, hi + 1):
                            bx0 = j0 + jj
                            tx_ = np.uint64(bx0)
                            fx = np.float32(x0t + bx0)
                            z = _plane_depth(dzdx, dzdy, z0, fx, fy)
                            covered_pp[gy, x0u + tx_] += 1
                            if (z != tdepth[ty_, tx_] or not _cmp(depth_func, z, clear_depth)
                                    or tclaim[ty_, tx_]):
                                n_kill += 1
                                continue
                            if depth_func == 1 or depth_func == 4:
                                tclaim[ty_, tx_] = True
                            n_shade += 1
                            r, g, bb = _fragment_colour(const_colour, kind, colp, jj,
                                                       e0, e1, e2, sa0, sa1, sa2, bi0, bi1, bi2, w0, w1, w2,
                                                       u0, u1, u2, v0, v1, v2, sh0, sh1, sh2)
                            shaded_pp[gy, x0u + tx_] += 1
                            _put_colour(tcol, twriter, ty_, tx_, r, g, bb, blend, alpha, beta, en)
                        n_rast += hi + 1 - lo
                        continue
                    for jj in range(lo, hi + 1):
                        j = j0 + jj
                        bx0 = j * b
                        px1 = min(bx0 + b, tw)
                        ty_ = np.uint64(by0)
                        tx_ = np.uint64(bx0)
                        gyu = y0u + ty_
                        gxu = x0u + tx_
                        fx = np.float32((sxg + step * jj) / 256.0)
                        z = _plane_depth(dzdx, dzdy, z0, fx, fy)
                        if count:
                            n_rast += 1
                            if b == 1:
                                covered_pp[gyu, gxu] += 1
                            else:
                                for yy in range(ty_, np.uint64(py1)):
                                    for xx in range(tx_, np.uint64(px1)):
                                        covered_pp[y0u + yy, x0u + xx] += 1
                            if rec_vis:
                                if z < zlo:
                                    zlo = z
                                if z > zhi:
                                    zhi = z
                        stored = tdepth[ty_, tx_]
                        passed = True
                        compared = False
                        if mode == 0:
                            if dtest:
                                compared = True
                                passed = _cmp(depth_func, z, stored)
                                if tie_prog and z == stored:
                                    passed = _tie_pass(depth_func, t, twtri[ty_, tx_], passed)
                                if passed and dwrite:
                                    if b == 1:
                                        tdepth[ty_, tx_] = z
                                        twtri[ty_, tx_] = t
                                    else:
                                        for yy in range(ty_, np.uint64(py1)):
                                            for xx in range(tx_, np.uint64(px1)):
                                                tdepth[yy, xx] = z
                                                twtri[yy, xx] = t
                        elif mode == 1:
                            compared = True
                            passed = _cmp(depth_func, z, stored)
                            if tie_prog and z == stored:
                                passed = _tie_pass(depth_func, t, twtri[ty_, tx_], passed)
                            if passed:
                                for yy in range(ty_, np.uint64(py1)):
                                    for xx in range(tx_, np.uint64(px1)):
                                        tdepth[yy, xx] = z
                                        towner[yy, xx] = t
                                        twtri[yy, xx] = t
                        elif mode == 2:
                            passed = towner[ty_, tx_] == t
                        else:
                            compared = True
                            passed = ((z == stored) and _cmp(depth_func, z, clear_depth)
                                      and not tclaim[ty_, tx_])
                            if passed and (depth_func == 1 or depth_func == 4):
                                for yy in range(ty_, np.uint64(py1)):
                                    for xx in range(tx_, np.uint64(px1)):
                                        tclaim[yy, xx] = True
                        if rec_occ:
                            if compared:
                                _record_occlusion(occ_first, occ_count, seq, oc, obj,
                                                  tobj[ty_, tx_], passed, log_occ, occ_slot, occ_log,
                                                  occ_log_count, occ_log_n, tile_start, ti)
                            # object of the last depth writer (mode 3 draws are WOZ: the claim stands for it)
                            if passed and (mode == 1 or mode == 3 or (mode == 0 and dwrite)):
                                for yy in range(ty_, np.uint64(py1)):
                                    for xx in range(tx_, np.uint64(px1)):
                                        tobj[yy, xx] = obj
                        if not shade_pass:
                            continue
                        if not passed:
                            n_kill += 1
                            continue
                        seen = True
                        n_shade += 1
                        r, g, bb = _fragment_colour(const_colour, kind, colp, jj,
                                                   e0, e1, e2, sa0, sa1, sa2, bi0, bi1, bi2, w0, w1, w2,
                                                   u0, u1, u2, v0, v1, v2, sh0, sh1, sh2)
                        if b == 1:
                            shaded_pp[gyu, gxu] += 1
                            _put_colour(tcol, twriter, ty_, tx_, r, g, bb, blend, alpha, beta, en)
                        else:
                            for yy in range(ty_, np.uint64(py1)):
                                for xx in range(tx_, np.uint64(px1)):
                                    shaded_pp[y0u + yy, x0u + xx] += 1
                                    _put_colour(tcol, twriter, yy, xx, r, g, bb, blend, alpha, beta, en)
                if rec_vis:
                    zmin[en] = zlo
                    zmax[en] = zhi
                    if seen:
                        vis[en] = 1
                n_rast_t += n_rast
                if mode == 1 or (mode == 3 and prefill_hsr):
                    n_hsr_t += n_rast
                n_kill_t += n_kill
                n_shade_t += n_shade
                n_over_t += n_over
                if blend:
                    n_blend_t += n_shade
                if kind >= 1 and kind <= 3:
                    n_tex_t += n_shade
                cyc_t += cost * n_shade
            # flush, the colours still owed first
            if owes:
                _pay_owed(tcol, towed, th, tw, x0u, y0u, H, rec, rec64, recf, dkind, dparams)
            for yy in range(th):
                gyu = y0u + np.uint64(yy)
                for xx in range(tw):
                    depth[gyu, x0u + np.uint64(xx)] = tdepth[yy, xx]
                if rec_writer:
                    for xx in range(tw):
                        writer[gyu, x0u + np.uint64(xx)] = twriter[yy, xx]
                # one row of the tile's colours as a flat run of 3 * tw channels
                for k_ in range(3 * tw):
                    v = min(max(tcol_rows[yy, k_], 0.0), 1.0)
                    colour_rows[gyu, np.uint64(3) * x0u + np.uint64(k_)] = np.uint8(np.int64(v * 255.0 + 0.5))
            over_prev = n_over_t
            shade_prev = n_shade_t
            counters[ti, 0] = n_rast_t
            counters[ti, 1] = n_kill_t
            counters[ti, 2] = n_shade_t
            counters[ti, 3] = ((tw + b - 1) // b) * ((th + b - 1) // b)
            counters[ti, 4] = n_blend_t
            counters[ti, 5] = 1
            counters[ti, 6] = s1 - s0
            counters[ti, 7] = n_hsr_t
            counters[ti, 8] = n_tex_t
            cycles[ti] = cyc_t

