"""Raster stage: whole-frame tile renderer (numba), matching llvmpipe's rules bit for bit.

Signature (as in .notes/PIPELINE.md, with additive keyword arguments marked *)::

    render_frame(frame, tiles, *, order=None, skip=None, rate=None, depth_prefill=None,
                 hsr_pass=False, record_occlusion=False, record_prim_visibility=False,
                 previous_colour=None, previous_depth=None*, depth_func="less"*,
                 clear_colour=(0, 0, 0)*, clear_depth=1.0*, record_writer=False*,
                 tie_break="none"*, parallel=None*, setup=None*) -> RasterResult

``RasterResult``: ``colour`` uint8 (H, W, 3), ``depth`` float32 (H, W), ``shaded`` / ``covered``
int32 (H, W) per-pixel fragment counts, ``tile_counters`` int64 (n_tiles, len(COUNTER_NAMES))
with ``counter(name)`` and ``totals()``, ``shader_cycles`` float64 (n_tiles,), and the optional
records below. Per-tile counters: ``fragments_rasterized`` (each fragment once, also under DR),
``early_z_killed``, ``fragments_shaded``, ``samples`` (sample positions of a rendered tile),
``blended``, ``tiles_rendered`` (0/1), ``tile_triangles`` (list length), ``hsr_fragments``
(fragments DR's depth-only pass rasterized; they are also in fragments_rasterized),
``textured_fragments`` (shaded fragments of checker/stripes/noise draws).

Per tile (row-major, top-left first), each triangle of the tile's list in order (``tiles`` or the
``order`` override) is rasterized into a tile-sized depth and colour buffer, then the tile is
flushed into the frame. Nothing is kept across frames; memory is O(frame + tile).

Rasterization rules (the same as Mesa llvmpipe's, checked pixel for pixel by
``gpu_probe.gl_reference``):

* Vertex positions on the 1/256-pixel grid (``frame.xy`` is snapped), edge functions in 64-bit
  integers: no rounding at all in coverage.
* Samples at pixel centres ``(px + 0.5, py + 0.5)``.
* Fill rule: a sample exactly on an edge belongs to the triangle when the edge is a *left* edge
  or a *bottom* edge of the triangle as seen on the screen (y down). This is llvmpipe's top-left
  rule applied in GL's window coordinates, whose y axis points up (measured on an FBO, which is
  what the GL reference renders into).
* Depth: window z is interpolated as a float32 plane anchored at the framebuffer origin, set up
  exactly as llvmpipe does (vertices in GL window coordinates, y up, pixel centre offset 0.5;
  vertex order v1, v0, v2 when the triangle is clockwise in those coordinates; float32
  ``dzdx, dzdy, z0`` computed without fused operations) and evaluated per sample as
  ``fma(dzdy, y, fma(dzdx, x, z0))`` with x, y the integer pixel coordinates (GL rows from the
  bottom), then clamped to [0, 1]. Compared with an ideal float64 interpolation this moves a
  handful of near-tie fragments per million, and it is what makes the early-Z counts match GL.
* Early depth test with ``depth_func`` (GL names: never, less, equal, lequal, greater,
  notequal, gequal, always; default less) for draws with ``depth_test``; depth written only by
  draws with ``depth_write`` (WOZ); NWOZ draws test without writing; draws without depth test
  pass every fragment and write nothing.
* Every fragment that passes is shaded (``pipeline_model.shading``, perspective-correct uv from
  ``inv_w``) and written; ``blend`` draws are composited "alpha over" with the draw's alpha. The
  tile colour buffer is float64 and rounded to 8 bits per channel at flush.

Options:

* ``order``: per-tile triangle lists to render instead of ``tiles`` (a TileLists or an
  ``(offsets, tri)`` CSR pair over the same tiles); VRO/EVR reorderings.
* ``skip``: bool per tile; a skipped tile is not rendered and keeps ``previous_colour`` (and
  ``previous_depth`` when given; otherwise the clear values) (RE).
* ``rate``: int8 per tile, k in 0..4: the tile is sampled with superfragments of 2^k x 2^k pixels
  (aligned to the tile), each sampled once at its centre (coverage, depth, shading) and
  replicated to its pixels (DSR). Counters count samples; per-pixel arrays count replicated.
* ``depth_prefill``: float32 (H, W) depth buffer loaded before rendering (oracle). For WOZ
  opaque draws a fragment then passes when its depth equals the prefilled depth and passes the
  compare against ``clear_depth``; with less/greater only the first such fragment per pixel
  passes (later equal fragments would have failed the strict test), so the image equals the
  baseline's when the prefill is the baseline's final depth.
* ``hsr_pass`` (DR): per tile a depth-only pass over the WOZ opaque (non-blend, depth-tested)
  triangles records the final depth and the triangle that wrote it; the shading pass then
  shades, of those triangles, only the fragment that wrote the final depth of its pixel (depth
  EQUAL plus the owner identity, which keeps near-ties identical to the baseline); other draws
  are tested normally against that depth. Fragments are counted as rasterized once.
* ``record_occlusion`` (VRO): for every depth comparison between an incoming fragment and a
  stored depth written by a *different* object, the relation (occluder, occluded) is recorded:
  (stored, incoming) when the incoming fragment fails, (incoming, stored) when it passes. The
  first relation seen for an unordered pair wins (tiles in row-major order, lists in order);
  results: ``occlusion_pairs`` (K, 2) object ids in first-seen order, ``occlusion_counts`` (K,)
  comparisons supporting the kept direction, ``occlusion_conflicts`` (K,) against it. Each
  chunk of tile rows (one per thread under ``parallel``) records into its own (objects x
  objects) tables, numbering first relations in its own tile order; the chunks are merged in
  row order (:func:`_merge_chunks`), so the result is bit-identical to a serial pass. Fewer
  chunks (down to one, i.e. serial) when the tables would exceed ``_OCC_TABLE_BYTES``.
* ``record_prim_visibility`` (EVR): per entry of the rendered lists (aligned with
  ``result.vis_tri`` / ``result.vis_offsets``): ``prim_visible`` (any fragment passed the depth
  test), ``prim_zmin`` / ``prim_zmax`` over the entry's rasterized fragments (inf / -inf when it
  covered no sample of the tile).

* ``record_writer``: ``writer_entry`` int32 (H, W), the index in the rendered lists (as
  ``vis_tri``) of the entry whose fragment last wrote the pixel's colour *without* blending
  (-1: background). EVR's Layer Buffer is ``layer[writer_entry]``.
* ``tie_break``: ``"none"`` (GL: an equal depth fails less/greater and passes lequal/gequal)
  or ``"program"``: when the incoming depth equals the stored one, the fragment passes iff it
  would have in program order, i.e. its triangle index is smaller (less/greater) or larger
  (lequal/gequal) than that of the triangle that wrote the stored depth (a cleared or prefilled
  value counts as written before everything). With it, a reordering of WOZ opaque triangles
  (VRO, EVR) produces the program-order image bit for bit.
* ``parallel``: tiles are independent, so tile rows run on all numba threads
  (``numba.set_num_threads`` / ``NUMBA_NUM_THREADS``); results are bit-identical either way,
  ``record_occlusion`` included (per-chunk tables, see above). Default: parallel unless the
  environment variable ``MESHOPT_BATCH_RASTER_THREADS=1``.
* ``setup``: a cached :func:`setup_triangles` of the frame (it depends on the frame only).

DR and oracle give images identical to the baseline as long as blended draws do not write depth
(translucent draws are NWOZ in our scenes); the test suite checks it.
"""

from __future__ import annotations

import os
import types as pytypes
from dataclasses import dataclass, field

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from .binning import TileLists, fixed_point_xy
from .frame import FrameGeometry
from .shading import shade_scalar

__all__ = ["RasterResult", "render_frame", "setup_triangles", "DEPTH_FUNCS", "COUNTER_NAMES",
           "depth_at", "covers"]

#: Default for ``render_frame(parallel=None)``: tiles on all numba threads (results identical).
_DEFAULT_PARALLEL = os.environ.get("MESHOPT_BATCH_RASTER_THREADS", "") != "1"

#: Upper bound on the per-chunk occlusion tables of a parallel ``record_occlusion`` render
#: (2 int64 tables of objects x objects per chunk of tile rows).
_OCC_TABLE_BYTES = 64 << 20

DEPTH_FUNCS = {"never": 0, "less": 1, "equal": 2, "lequal": 3, "greater": 4, "notequal": 5,
               "gequal": 6, "always": 7}

#: Per-tile integer counters (columns of ``RasterResult.tile_counters``).
COUNTER_NAMES = ("fragments_rasterized", "early_z_killed", "fragments_shaded", "samples",
                 "blended", "tiles_rendered", "tile_triangles", "hsr_fragments",
                 "textured_fragments")
_N_COUNTERS = len(COUNTER_NAMES)

_F_TEST, _F_WRITE, _F_BLEND = 1, 2, 4


@intrinsic
def fma32(typingctx, a, b, c):
    """Fused multiply-add in float32 (llvm.fma.f32: one rounding)."""
    sig = types.float32(types.float32, types.float32, types.float32)

    def codegen(context, builder, signature, args):
        fl = ir.FloatType()
        fn = builder.module.declare_intrinsic("llvm.fma", [fl], ir.FunctionType(fl, [fl, fl, fl]))
        return builder.call(fn, args)

    return sig, codegen


# ------------------------------------------------------------------------------------- setup
@numba.njit(cache=True, nogil=True)
def _setup(XY, Z, UV, INVW, SHADE, height, E, bias, box, plane, attr, valid):
    n = XY.shape[0]
    half = np.float32(0.5)
    one = np.float32(1.0)
    Hf = height * 256
    xg = np.empty(3, np.int64)
    yg = np.empty(3, np.int64)
    idx = np.empty(3, np.int64)
    for t in range(n):
        # llvmpipe fixed point: GL window coords (y up), minus the pixel-centre offset
        for k in range(3):
            xg[k] = XY[t, k, 0] - 128
            yg[k] = Hf - XY[t, k, 1] - 128
        area = (xg[0] - xg[1]) * (yg[2] - yg[0]) - (xg[2] - xg[0]) * (yg[0] - yg[1])
        if area == 0:
            valid[t] = False
            continue
        valid[t] = True
        if area < 0:  # llvmpipe: triangle_cw -> retry_triangle_ccw(v1, v0, v2)
            idx[0] = 1
            idx[1] = 0
            idx[2] = 2
        else:
            idx[0] = 0
            idx[1] = 1
            idx[2] = 2
        xmin = XY[t, 0, 0]
        xmax = xmin
        ymin = XY[t, 0, 1]
        ymax = ymin
        for k in range(1, 3):
            xmin = min(xmin, XY[t, k, 0])
            xmax = max(xmax, XY[t, k, 0])
            ymin = min(ymin, XY[t, k, 1])
            ymax = max(ymax, XY[t, k, 1])
        box[t, 0] = xmin
        box[t, 1] = xmax
        box[t, 2] = ymin
        box[t, 3] = ymax
        for i in range(3):
            a = idx[i]
            b = idx[(i + 1) % 3]
            dx = xg[b] - xg[a]
            dy = yg[b] - yg[a]
            E[t, i, 0] = dy
            E[t, i, 1] = -dx
            bi = 1 if (dy > 0 or (dy == 0 and dx < 0)) else 0
            E[t, i, 2] = dx * yg[a] - dy * xg[a] + bi
            bias[t, i] = bi
        # depth plane, float32, llvmpipe lp_state_setup.c order of operations
        i0 = idx[0]
        i1 = idx[1]
        i2 = idx[2]
        x0 = np.float32(XY[t, i0, 0] / 256.0)
        x1 = np.float32(XY[t, i1, 0] / 256.0)
        x2 = np.float32(XY[t, i2, 0] / 256.0)
        y0 = np.float32((Hf - XY[t, i0, 1]) / 256.0)
        y1 = np.float32((Hf - XY[t, i1, 1]) / 256.0)
        y2 = np.float32((Hf - XY[t, i2, 1]) / 256.0)
        z0 = Z[t, i0]
        z1 = Z[t, i1]
        z2 = Z[t, i2]
        x0c = x0 - half
        y0c = y0 - half
        dx01 = x0 - x1
        dy01 = y0 - y1
        dx20 = x2 - x0
        dy20 = y2 - y0
        e = dx01 * dy20
        f = dy01 * dx20
        ooa = one / (e - f)
        dy20o = dy20 * ooa
        dy01o = dy01 * ooa
        dx20o = dx20 * ooa
        dx01o = dx01 * ooa
        da01 = z0 - z1
        da20 = z2 - z0
        dadx = da01 * dy20o - da20 * dy01o
        dady = da20 * dx01o - da01 * dx20o
        av = dadx * x0c + dady * y0c
        plane[t, 0] = dadx
        plane[t, 1] = dady
        plane[t, 2] = z0 - av
        # attributes in the (possibly swapped) vertex order; barycentric of vertex i+2 ~ edge i
        for k in range(3):
            s = idx[k]
            attr[t, k, 0] = UV[t, s, 0]
            attr[t, k, 1] = UV[t, s, 1]
            attr[t, k, 2] = SHADE[t, s]
            attr[t, k, 3] = INVW[t, s]


@dataclass
class _Setup:
    E: np.ndarray
    bias: np.ndarray
    box: np.ndarray
    plane: np.ndarray
    attr: np.ndarray
    valid: np.ndarray


def setup_triangles(frame: FrameGeometry) -> _Setup:
    """Per-triangle raster setup: integer edge functions, bounding box, float32 depth plane."""
    n = frame.n_triangles
    XY = fixed_point_xy(frame.xy)
    s = _Setup(E=np.zeros((n, 3, 3), np.int64), bias=np.zeros((n, 3), np.int64),
               box=np.zeros((n, 4), np.int64), plane=np.zeros((n, 3), np.float32),
               attr=np.zeros((n, 3, 4), np.float64), valid=np.zeros(n, np.bool_))
    _setup(XY, frame.z, frame.uv, frame.inv_w, frame.shade, frame.height,
           s.E, s.bias, s.box, s.plane, s.attr, s.valid)
    return s


# ------------------------------------------------------------------------------ raster kernel
@numba.njit(cache=True, nogil=True, inline="always")
def _cmp(func, a, b):
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
def _record_occlusion(occ_first, occ_count, seq, oc, obj, other, passed):
    """VRO's record of one early-depth comparison between two objects (self-occlusion and the
    cleared background ignored): (occluder, occluded) pair counted, its first sighting numbered."""
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


def _render_impl(W, H, T, tiles_x, tiles_y,
                 E, bias, box, plane, attr, valid, tdraw,
                 dflags, dalpha, dcost, dkind, dparams, dobj,
                 offsets, tri,
                 skip, rate, use_prefill, prefill, hsr,
                 rec_occ, occ_first, occ_count, seq, n_chunks,
                 rec_vis, vis, zmin, zmax, rec_writer, writer, tie_prog,
                 use_prev_c, prev_c, use_prev_d, prev_d,
                 depth_func, clear_depth, clear_col,
                 colour, depth, shaded_pp, covered_pp, counters, cycles):
    n_tiles = tiles_x * tiles_y
    clear_u8 = np.empty(3, np.uint8)
    for c in range(3):
        v = min(max(clear_col[c], 0.0), 1.0)
        clear_u8[c] = np.uint8(np.int64(v * 255.0 + 0.5))
    # Tile rows are split into n_chunks contiguous chunks (one prange iteration each; tiles
    # row-major within a chunk). Occlusion records go to the chunk's own table and counter
    # (``occ_first[ch]``, ``seq[ch]``), merged in chunk order afterwards.
    for ch in numba.prange(n_chunks):
        oc = np.int64(ch)  # chunk index (occlusion tables are indexed only under rec_occ)
        ti0 = (oc * tiles_y // n_chunks) * tiles_x
        ti1 = ((oc + 1) * tiles_y // n_chunks) * tiles_x
        tdepth = np.empty((T, T), np.float32)
        tcol = np.empty((T, T, 3), np.float64)
        towner = np.empty((T, T), np.int32)
        tobj = np.empty((T, T), np.int32)
        tclaim = np.zeros((T, T), np.bool_)
        twriter = np.empty((T, T), np.int32)
        twtri = np.empty((T, T), np.int32)
        p = np.empty(8, np.float32)
        for ti in range(ti0, ti1):
            ty = ti // tiles_x
            tx = ti - ty * tiles_x
            x0t = tx * T
            y0t = ty * T
            tw = min(W, x0t + T) - x0t
            th = min(H, y0t + T) - y0t
            if skip[ti]:
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
            k = rate[ti]
            b = 1 << k
            for yy in range(th):
                for xx in range(tw):
                    tdepth[yy, xx] = prefill[y0t + yy, x0t + xx] if use_prefill else clear_depth
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
            # pass 0: HSR depth-only pass over WOZ opaque triangles (DR); pass 1: the render pass
            n_entries = s1 - s0
            for q in range(2 * n_entries if hsr else n_entries):
                pss = 1
                en = s0 + q
                if hsr:
                    pss = 0 if q < n_entries else 1
                    en = s0 + (q % n_entries)
                t = tri[en]
                if not valid[t]:
                    continue
                fl0 = dflags[tdraw[t]]
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
                d = tdraw[t]
                fl = dflags[d]
                dtest = (fl & 1) != 0
                dwrite = (fl & 2) != 0 and dtest
                blend = (fl & 4) != 0
                obj = dobj[d]
                count = mode != 2  # fragments are counted as rasterized once
                shade_pass = mode != 1
                fast = mode == 0 and b == 1
                # sample index ranges (y-down fixed point: sample at 128*(2*bx0 + b))
                nbx = (tw + b - 1) // b
                nby = (th + b - 1) // b
                base_x = 128 * (2 * x0t + b)
                base_y = 128 * (2 * y0t + b)
                step = 256 * b
                j0 = max(0, _ceil_div(box[t, 0] - base_x, step))
                j1 = min(nbx - 1, (box[t, 1] - base_x) // step)
                i0 = max(0, _ceil_div(box[t, 2] - base_y, step))
                i1 = min(nby - 1, (box[t, 3] - base_y) // step)
                if j0 > j1 or i0 > i1:
                    continue
                A0 = E[t, 0, 0]
                B0 = E[t, 0, 1]
                C0 = E[t, 0, 2]
                A1 = E[t, 1, 0]
                B1 = E[t, 1, 1]
                C1 = E[t, 1, 2]
                A2 = E[t, 2, 0]
                B2 = E[t, 2, 1]
                C2 = E[t, 2, 2]
                bi0 = bias[t, 0]
                bi1 = bias[t, 1]
                bi2 = bias[t, 2]
                sa0 = A0 * step
                sa1 = A1 * step
                sa2 = A2 * step
                dzdx = plane[t, 0]
                dzdy = plane[t, 1]
                z0 = plane[t, 2]
                zero32 = np.float32(0.0)
                one32 = np.float32(1.0)
                Hf = H * 256
                kind = dkind[d]
                alpha = np.float64(dalpha[d])
                beta = 1.0 - alpha
                cost = np.float64(dcost[d])
                # per-draw colour parameters as float64 scalars; flat colour hoisted out of the fragment loop
                for k in range(8):
                    p[k] = dparams[d, k]
                const_colour = kind == 0 and p[7] <= 0
                colp = (np.float64(p[0]), np.float64(p[1]), np.float64(p[2]), np.float64(p[3]),
                        np.float64(p[4]), np.float64(p[5]), np.float64(p[6]), np.float64(p[7]))
                u0 = attr[t, 0, 0]
                u1 = attr[t, 1, 0]
                u2 = attr[t, 2, 0]
                v0 = attr[t, 0, 1]
                v1 = attr[t, 1, 1]
                v2 = attr[t, 2, 1]
                sh0 = attr[t, 0, 2]
                sh1 = attr[t, 1, 2]
                sh2 = attr[t, 2, 2]
                w0 = attr[t, 0, 3]
                w1 = attr[t, 1, 3]
                w2 = attr[t, 2, 3]
                n_rast = 0
                n_kill = 0
                n_shade = 0
                for i in range(i0, i1 + 1):
                    by0 = i * b  # tile-local block origin
                    # gallium sample coords (x right, y up; pixel centres on integers)
                    sxg = 256 * (x0t + j0 * b) + 128 * (b - 1)
                    syg = Hf - 256 * (y0t + by0) - 128 * (b + 1)
                    e0 = A0 * sxg + B0 * syg + C0
                    e1 = A1 * sxg + B1 * syg + C1
                    e2 = A2 * sxg + B2 * syg + C2
                    # exact span of j - j0 with e_k + (j - j0) * sa_k > 0 for the three edges
                    lo = 0
                    hi = j1 - j0
                    if sa0 > 0:
                        lo = max(lo, _floor_div(-e0, sa0) + 1)
                    elif sa0 < 0:
                        hi = min(hi, _ceil_div(e0, -sa0) - 1)
                    elif e0 <= 0:
                        continue
                    if sa1 > 0:
                        lo = max(lo, _floor_div(-e1, sa1) + 1)
                    elif sa1 < 0:
                        hi = min(hi, _ceil_div(e1, -sa1) - 1)
                    elif e1 <= 0:
                        continue
                    if sa2 > 0:
                        lo = max(lo, _floor_div(-e2, sa2) + 1)
                    elif sa2 < 0:
                        hi = min(hi, _ceil_div(e2, -sa2) - 1)
                    elif e2 <= 0:
                        continue
                    if lo > hi:
                        continue
                    fy = np.float32(syg / 256.0)
                    py1 = min(by0 + b, th)
                    if fast:
                        # the common case (full rate, plain depth test): the general loop below
                        # specialised to one sample per pixel, records included
                        gy = y0t + by0
                        for jj in range(lo, hi + 1):
                            bx0 = j0 + jj
                            fx = np.float32(x0t + bx0)
                            z = fma32(dzdy, fy, fma32(dzdx, fx, z0))
                            if z < zero32:
                                z = zero32
                            elif z > one32:
                                z = one32
                            n_rast += 1
                            covered_pp[gy, x0t + bx0] += 1
                            if rec_vis:
                                if z < zmin[en]:
                                    zmin[en] = z
                                if z > zmax[en]:
                                    zmax[en] = z
                            if dtest:
                                stored = tdepth[by0, bx0]
                                passed = _cmp(depth_func, z, stored)
                                if tie_prog and z == stored:
                                    passed = _tie_pass(depth_func, t, twtri[by0, bx0], passed)
                                if passed and dwrite:
                                    tdepth[by0, bx0] = z
                                    twtri[by0, bx0] = t
                                if rec_occ:
                                    _record_occlusion(occ_first, occ_count, seq, oc, obj,
                                                      tobj[by0, bx0], passed)
                                    if passed and dwrite:
                                        tobj[by0, bx0] = obj
                                if not passed:
                                    n_kill += 1
                                    continue
                            if rec_vis:
                                vis[en] = 1
                            n_shade += 1
                            r, g, bb = _fragment_colour(const_colour, kind, colp, jj,
                                                       e0, e1, e2, sa0, sa1, sa2, bi0, bi1, bi2, w0, w1, w2,
                                                       u0, u1, u2, v0, v1, v2, sh0, sh1, sh2)
                            shaded_pp[gy, x0t + bx0] += 1
                            _put_colour(tcol, twriter, by0, bx0, r, g, bb, blend, alpha, beta, en)
                        continue
                    for jj in range(lo, hi + 1):
                        j = j0 + jj
                        bx0 = j * b
                        px1 = min(bx0 + b, tw)
                        fx = np.float32((sxg + step * jj) / 256.0)
                        z = fma32(dzdy, fy, fma32(dzdx, fx, z0))
                        if z < zero32:
                            z = zero32
                        elif z > one32:
                            z = one32
                        if count:
                            n_rast += 1
                            if b == 1:
                                covered_pp[y0t + by0, x0t + bx0] += 1
                            else:
                                for yy in range(by0, py1):
                                    for xx in range(bx0, px1):
                                        covered_pp[y0t + yy, x0t + xx] += 1
                            if rec_vis:
                                if z < zmin[en]:
                                    zmin[en] = z
                                if z > zmax[en]:
                                    zmax[en] = z
                        stored = tdepth[by0, bx0]
                        passed = True
                        compared = False
                        if mode == 0:
                            if dtest:
                                compared = True
                                passed = _cmp(depth_func, z, stored)
                                if tie_prog and z == stored:
                                    passed = _tie_pass(depth_func, t, twtri[by0, bx0], passed)
                                if passed and dwrite:
                                    if b == 1:
                                        tdepth[by0, bx0] = z
                                        twtri[by0, bx0] = t
                                    else:
                                        for yy in range(by0, py1):
                                            for xx in range(bx0, px1):
                                                tdepth[yy, xx] = z
                                                twtri[yy, xx] = t
                        elif mode == 1:
                            compared = True
                            passed = _cmp(depth_func, z, stored)
                            if tie_prog and z == stored:
                                passed = _tie_pass(depth_func, t, twtri[by0, bx0], passed)
                            if passed:
                                for yy in range(by0, py1):
                                    for xx in range(bx0, px1):
                                        tdepth[yy, xx] = z
                                        towner[yy, xx] = t
                                        twtri[yy, xx] = t
                        elif mode == 2:
                            passed = towner[by0, bx0] == t
                        else:
                            compared = True
                            passed = (z == stored) and _cmp(depth_func, z, clear_depth) and not tclaim[by0, bx0]
                            if passed and (depth_func == 1 or depth_func == 4):
                                for yy in range(by0, py1):
                                    for xx in range(bx0, px1):
                                        tclaim[yy, xx] = True
                        if rec_occ:
                            if compared:
                                _record_occlusion(occ_first, occ_count, seq, oc, obj,
                                                  tobj[by0, bx0], passed)
                            # object of the last depth writer (mode 3 draws are WOZ: the claim stands for it)
                            if passed and (mode == 1 or mode == 3 or (mode == 0 and dwrite)):
                                for yy in range(by0, py1):
                                    for xx in range(bx0, px1):
                                        tobj[yy, xx] = obj
                        if not shade_pass:
                            continue
                        if not passed:
                            n_kill += 1
                            continue
                        if rec_vis:
                            vis[en] = 1
                        n_shade += 1
                        r, g, bb = _fragment_colour(const_colour, kind, colp, jj,
                                                   e0, e1, e2, sa0, sa1, sa2, bi0, bi1, bi2, w0, w1, w2,
                                                   u0, u1, u2, v0, v1, v2, sh0, sh1, sh2)
                        if b == 1:
                            shaded_pp[y0t + by0, x0t + bx0] += 1
                            _put_colour(tcol, twriter, by0, bx0, r, g, bb, blend, alpha, beta, en)
                        else:
                            for yy in range(by0, py1):
                                for xx in range(bx0, px1):
                                    shaded_pp[y0t + yy, x0t + xx] += 1
                                    _put_colour(tcol, twriter, yy, xx, r, g, bb, blend, alpha, beta, en)
                n_rast_t += n_rast
                if mode == 1:
                    n_hsr_t += n_rast
                n_kill_t += n_kill
                n_shade_t += n_shade
                if blend:
                    n_blend_t += n_shade
                if kind >= 1 and kind <= 3:
                    n_tex_t += n_shade
                cyc_t += cost * n_shade
            # flush
            for yy in range(th):
                for xx in range(tw):
                    depth[y0t + yy, x0t + xx] = tdepth[yy, xx]
                    if rec_writer:
                        writer[y0t + yy, x0t + xx] = twriter[yy, xx]
                    for c in range(3):
                        v = tcol[yy, xx, c]
                        if v < 0.0:
                            v = 0.0
                        elif v > 1.0:
                            v = 1.0
                        colour[y0t + yy, x0t + xx, c] = np.uint8(np.int64(v * 255.0 + 0.5))
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


def _clone(fn, name):
    """A copy of a Python function under another name (separate numba caches per variant)."""
    f = pytypes.FunctionType(fn.__code__, fn.__globals__, name, fn.__defaults__, fn.__closure__)
    f.__qualname__ = name
    return f


# Tiles are independent, so the parallel variant (chunks of tile rows over threads) gives
# bit-identical results; occlusion records are per chunk and merged in row order.
_render_serial = numba.njit(cache=True, nogil=True)(_clone(_render_impl, "_render_serial"))
_render_parallel = numba.njit(cache=True, nogil=True, parallel=True)(
    _clone(_render_impl, "_render_parallel"))


# ------------------------------------------------------------------------------------ result
@dataclass(eq=False)
class RasterResult:
    """Output of :func:`render_frame` (images y down, row 0 = top of the screen)."""

    colour: np.ndarray          # uint8 (H, W, 3)
    depth: np.ndarray           # float32 (H, W)
    shaded: np.ndarray          # int32 (H, W): shaded fragments landing on each pixel
    covered: np.ndarray         # int32 (H, W): rasterized fragments landing on each pixel
    tile_counters: np.ndarray   # int64 (n_tiles, len(COUNTER_NAMES))
    shader_cycles: np.ndarray   # float64 (n_tiles,): sum of shader_cost over shaded fragments
    tiles_x: int
    tiles_y: int
    tile: int
    occlusion_pairs: np.ndarray | None = None      # int32 (K, 2) (occluder, occluded) object ids
    occlusion_counts: np.ndarray | None = None     # int64 (K,)
    occlusion_conflicts: np.ndarray | None = None  # int64 (K,)
    vis_offsets: np.ndarray | None = None  # int64 (n_tiles + 1,): CSR of the rendered lists
    vis_tri: np.ndarray | None = None      # int32 (M,): triangle of each entry
    prim_visible: np.ndarray | None = None  # bool (M,)
    prim_zmin: np.ndarray | None = None     # float32 (M,)
    prim_zmax: np.ndarray | None = None     # float32 (M,)
    writer_entry: np.ndarray | None = None  # int32 (H, W): list entry of the last opaque writer
    extra: dict = field(default_factory=dict)

    def counter(self, name: str) -> np.ndarray:
        """Per-tile values of one counter (``COUNTER_NAMES`` or ``shader_cycles``)."""
        if name == "shader_cycles":
            return self.shader_cycles
        return self.tile_counters[:, COUNTER_NAMES.index(name)]

    def totals(self) -> dict:
        """Frame totals: every counter summed, covered pixels and overshading."""
        out = {name: int(self.tile_counters[:, i].sum()) for i, name in enumerate(COUNTER_NAMES)}
        out["shader_cycles"] = float(self.shader_cycles.sum())
        out["tiles_skipped"] = int(self.tile_counters.shape[0] - out["tiles_rendered"])
        cov = int(np.count_nonzero(self.covered))
        out["pixels_covered"] = cov
        out["overshading"] = out["fragments_shaded"] / cov if cov else 0.0
        return out


def _csr(obj, n_tiles):
    if obj is None:
        return None
    if isinstance(obj, TileLists):
        off, tri = obj.offsets, obj.tri
    else:
        off, tri = obj
    off = np.ascontiguousarray(off, np.int64)
    tri = np.ascontiguousarray(tri, np.int32)
    if off.shape != (n_tiles + 1,):
        raise ValueError(f"order: offsets must have n_tiles + 1 = {n_tiles + 1} entries")
    return off, tri


def render_frame(frame: FrameGeometry, tiles: TileLists, *, order=None, skip=None, rate=None,
                 depth_prefill=None, hsr_pass: bool = False, record_occlusion: bool = False,
                 record_prim_visibility: bool = False, previous_colour=None, previous_depth=None,
                 depth_func: str = "less", clear_colour=(0.0, 0.0, 0.0),
                 clear_depth: float = 1.0, record_writer: bool = False,
                 tie_break: str = "none", parallel: bool | None = None, setup: _Setup | None = None) -> RasterResult:
    """Render one frame tile by tile (see the module docstring for every option)."""
    W, H, T = frame.width, frame.height, tiles.tile
    if (tiles.width, tiles.height) != (W, H):
        raise ValueError("tiles were binned for another screen size")
    tiles_x, tiles_y = tiles.tiles_x, tiles.tiles_y
    n_tiles = tiles_x * tiles_y
    off, tri = _csr(order, n_tiles) or (tiles.offsets, tiles.tri)
    if depth_func not in DEPTH_FUNCS:
        raise ValueError(f"depth_func must be one of {sorted(DEPTH_FUNCS)}")
    if tie_break not in ("none", "program"):
        raise ValueError('tie_break must be "none" or "program"')
    if hsr_pass and depth_prefill is not None:
        raise ValueError("hsr_pass and depth_prefill are two different techniques; pick one")
    s = setup if setup is not None else setup_triangles(frame)

    skip_a = np.zeros(n_tiles, np.bool_) if skip is None else np.ascontiguousarray(skip, np.bool_)
    rate_a = np.zeros(n_tiles, np.int8) if rate is None else np.ascontiguousarray(rate, np.int8)
    if skip_a.shape != (n_tiles,) or rate_a.shape != (n_tiles,):
        raise ValueError("skip and rate need one value per tile")
    if rate_a.size and (rate_a.min() < 0 or (1 << int(rate_a.max())) > T):
        raise ValueError("rate values must be in 0..log2(tile)")
    use_prefill = depth_prefill is not None
    prefill = (np.ascontiguousarray(depth_prefill, np.float32) if use_prefill
               else np.zeros((1, 1), np.float32))
    if use_prefill and prefill.shape != (H, W):
        raise ValueError("depth_prefill must be (H, W)")
    use_pc = previous_colour is not None
    prev_c = np.ascontiguousarray(previous_colour, np.uint8) if use_pc else np.zeros((1, 1, 3), np.uint8)
    use_pd = previous_depth is not None
    prev_d = np.ascontiguousarray(previous_depth, np.float32) if use_pd else np.zeros((1, 1), np.float32)
    if use_pc and prev_c.shape != (H, W, 3):
        raise ValueError("previous_colour must be (H, W, 3) uint8")
    if use_pd and prev_d.shape != (H, W):
        raise ValueError("previous_depth must be (H, W)")

    dflags = (frame.depth_test.astype(np.int8) * _F_TEST + frame.depth_write.astype(np.int8) * _F_WRITE
              + frame.blend.astype(np.int8) * _F_BLEND).astype(np.int8)
    obj_ids, dobj = np.unique(frame.object_id, return_inverse=True)
    dobj = dobj.astype(np.int32).reshape(-1)
    n_obj = len(obj_ids)
    if parallel is None:
        parallel = _DEFAULT_PARALLEL
    if record_occlusion:
        # one (objects x objects) table pair per chunk of tile rows; chunks = threads, fewer
        # when the tables would exceed _OCC_TABLE_BYTES (down to 1: the serial order itself)
        n_chunks = _occ_chunks(tiles_y, n_obj) if parallel else 1
        occ_first = np.zeros((n_chunks, n_obj, n_obj), np.int64)
        occ_count = np.zeros((n_chunks, n_obj, n_obj), np.int64)
    else:
        n_chunks = tiles_y  # one tile row per prange iteration
        occ_first = np.zeros((1, 1, 1), np.int64)
        occ_count = np.zeros((1, 1, 1), np.int64)
    seq = np.zeros(max(n_chunks, 1), np.int64)
    m = tri.shape[0]
    if record_prim_visibility:
        vis = np.zeros(m, np.uint8)
        zmin = np.full(m, np.inf, np.float32)
        zmax = np.full(m, -np.inf, np.float32)
    else:
        vis = np.zeros(1, np.uint8)
        zmin = np.zeros(1, np.float32)
        zmax = np.zeros(1, np.float32)

    colour = np.empty((H, W, 3), np.uint8)
    depth = np.empty((H, W), np.float32)
    shaded = np.zeros((H, W), np.int32)
    covered = np.zeros((H, W), np.int32)
    counters = np.zeros((n_tiles, _N_COUNTERS), np.int64)
    cycles = np.zeros(n_tiles, np.float64)
    # filled by the kernel (rendered tiles at flush, skipped ones with -1), in parallel
    writer = np.empty((H, W), np.int32) if record_writer else np.full((1, 1), -1, np.int32)
    clear_col = np.asarray(clear_colour, np.float64).reshape(3)
    kernel = _render_parallel if parallel else _render_serial
    kernel(W, H, T, tiles_x, tiles_y, s.E, s.bias, s.box, s.plane, s.attr, s.valid, frame.draw,
            dflags, frame.alpha, frame.shader_cost, frame.colour_kind, frame.colour_params, dobj,
            off, tri, skip_a, rate_a, use_prefill, prefill, bool(hsr_pass),
            bool(record_occlusion), occ_first, occ_count, seq, n_chunks,
            bool(record_prim_visibility), vis, zmin, zmax, bool(record_writer), writer,
            tie_break == "program", use_pc, prev_c, use_pd, prev_d,
            DEPTH_FUNCS[depth_func], np.float32(clear_depth), clear_col,
            colour, depth, shaded, covered, counters, cycles)
    res = RasterResult(colour=colour, depth=depth, shaded=shaded, covered=covered,
                       tile_counters=counters, shader_cycles=cycles, tiles_x=tiles_x,
                       tiles_y=tiles_y, tile=T)
    if record_occlusion:
        first, count = _merge_chunks(occ_first, occ_count, seq)
        res.occlusion_pairs, res.occlusion_counts, res.occlusion_conflicts = _pairs(
            first, count, obj_ids)
    if record_writer:
        res.writer_entry = writer
    if record_prim_visibility:
        res.vis_offsets = off
        res.vis_tri = tri
        res.prim_visible = vis.astype(np.bool_)
        res.prim_zmin = zmin
        res.prim_zmax = zmax
    return res


def _occ_chunks(tiles_y, n_obj):
    """Chunks of tile rows for a parallel ``record_occlusion`` render: one per numba thread,
    fewer when their tables would exceed ``_OCC_TABLE_BYTES``."""
    return max(1, min(tiles_y, numba.get_num_threads(),
                      _OCC_TABLE_BYTES // max(1, 16 * n_obj * n_obj)))


def _merge_chunks(first, count, seq):
    """Merge per-chunk occlusion tables in chunk (= serial tile) order.

    ``first[c]`` numbers each directed pair's first relation 1..seq[c] in chunk c's own tile
    order. Offsetting chunk c by the relations numbered in the chunks before it and keeping the
    earliest chunk's number per pair orders first relations exactly as one serial pass over all
    tiles would (only that order matters to :func:`_pairs`); counts add up.
    """
    if first.shape[0] == 1:
        return first[0], count[0]
    base = np.concatenate(([0], np.cumsum(seq)[:-1]))
    merged = first[0].copy()
    for c in range(1, first.shape[0]):
        new = (merged == 0) & (first[c] != 0)
        merged[new] = first[c][new] + base[c]
    return merged, count.sum(axis=0)


def _pairs(first, count, obj_ids):
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


# --------------------------------------------------------------------- single-sample queries
def covers(frame: FrameGeometry, t: int, px: int, py: int, setup: _Setup | None = None) -> bool:
    """Does triangle t cover pixel (px, py) (y down) under the model's rules?"""
    s = setup if setup is not None else setup_triangles(frame)
    if not s.valid[t]:
        return False
    sx = 256 * px
    sy = 256 * (frame.height - 1 - py)
    return all(int(s.E[t, i, 0]) * sx + int(s.E[t, i, 1]) * sy + int(s.E[t, i, 2]) > 0 for i in range(3))


@numba.njit(cache=True)
def _depth_at(plane, t, fx, fy):
    z = fma32(plane[t, 1], fy, fma32(plane[t, 0], fx, plane[t, 2]))
    return min(max(z, np.float32(0.0)), np.float32(1.0))


def depth_at(frame: FrameGeometry, t: int, px: int, py: int, setup: _Setup | None = None) -> np.float32:
    """The model's (llvmpipe's) float32 depth of triangle t at the centre of pixel (px, py)."""
    s = setup if setup is not None else setup_triangles(frame)
    return _depth_at(s.plane, int(t), np.float32(px), np.float32(frame.height - 1 - py))
