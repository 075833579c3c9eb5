"""Raster set-up: per-triangle integer edge functions, bounding box and float32 depth plane.

:func:`setup_triangles` computes, once per frame (it depends on the frame only), what the tile
renderer (:mod:`pipeline_model.raster_kernel`) reads for every triangle; :func:`covers` and
:func:`depth_at` answer the same rules for one triangle at one pixel (the GL cross-check in
``gpu_probe.gl_reference`` and the tests use them).

Rules (the same as Mesa llvmpipe's, checked pixel for pixel against GL):

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

References
----------
Mesa 3D, llvmpipe rasterizer: ``src/gallium/drivers/llvmpipe/lp_setup_tri.c`` (fixed-point edge
functions, fill rule) and ``lp_state_setup.c`` (plane set-up of interpolated attributes).
Pineda, J. (1988).  A Parallel Algorithm for Polygon Rasterization.  SIGGRAPH '88, 17-20.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .frame import FrameGeometry

__all__ = ["TriangleSetup", "setup_triangles", "covers", "depth_at", "fma32", "prefetch", "R_AB", "R_C64",
           "R_BOX", "R_PLANE", "R_FLAGS", "R_ATTR", "R_WORDS", "VALID_BIT", "DRAW_SHIFT"]


#: Slots of a triangle's 128-byte set-up record (int32 slots; ``R_C64`` in int64 slots, the
#: plane and attributes in float32 slots): the edge coefficients ``A, B`` of the three edges,
#: their constants ``C``, the bounding box, the depth plane, the flags (fill-rule bias of edge
#: ``i`` at bit ``i``, :data:`VALID_BIT`) and ``u, v, shade, 1/w`` of the three vertices.
R_AB, R_C64, R_BOX, R_PLANE, R_FLAGS, R_ATTR, R_WORDS = 0, 3, 12, 16, 19, 20, 32
VALID_BIT = 8
#: Fixed-point coordinates must stay well inside int32 (edge coefficients are stored in 32 bits).
MAX_FIXED = 1 << 30
#: The triangle's draw index sits in the flags from this bit on.
DRAW_SHIFT = 8


@intrinsic
def fma32(typingctx, a, b, c):
    """Fused multiply-add in float32 (llvm.fma.f32: one rounding)."""
    sig = types.float32(types.float32, types.float32, types.float32)

    def codegen(context, builder, signature, args):
        fl = ir.FloatType()
        fn = builder.module.declare_intrinsic("llvm.fma", [fl], ir.FunctionType(fl, [fl, fl, fl]))
        return builder.call(fn, args)

    return sig, codegen


@intrinsic
def prefetch(typingctx, arr, row, col):
    """Ask the CPU to fetch the cache line holding ``arr[row, col]`` of a 2-d array
    (llvm.prefetch: read, keep in all levels)."""
    sig = types.void(arr, row, col)

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        strides = cgutils.unpack_tuple(builder, ary.strides)
        row = context.cast(builder, args[1], signature.args[1], types.intp)
        col = context.cast(builder, args[2], signature.args[2], types.intp)
        off = builder.add(builder.mul(row, strides[0]), builder.mul(col, strides[1]))
        i8p = ir.IntType(8).as_pointer()
        addr = builder.inttoptr(builder.add(builder.ptrtoint(ary.data, ir.IntType(64)), off), i8p)
        i32 = ir.IntType(32)
        fn = builder.module.declare_intrinsic("llvm.prefetch", [i8p],
                                              ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]))
        builder.call(fn, [addr, i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return sig, codegen


@numba.njit(cache=True, nogil=True)
def _setup(xy, Z, UV, INVW, SHADE, DRAW, height, rec, rec64, recf):
    n = xy.shape[0]
    half = np.float32(0.5)
    one = np.float32(1.0)
    Hf = height * 256
    xg = np.empty(3, np.int64)
    yg = np.empty(3, np.int64)
    idx = np.empty(3, np.int64)
    px = np.empty(3, np.int64)
    py = np.empty(3, np.int64)
    out_of_range = False
    for t in range(n):
        # window coordinates on the 1/256-pixel grid (as binning.fixed_point_xy)
        for k in range(3):
            px[k] = np.int64(np.rint(xy[t, k, 0] * 256.0))
            py[k] = np.int64(np.rint(xy[t, k, 1] * 256.0))
            if abs(px[k]) >= MAX_FIXED or abs(py[k]) >= MAX_FIXED:
                out_of_range = True
        # llvmpipe fixed point: GL window coords (y up), minus the pixel-centre offset
        for k in range(3):
            xg[k] = px[k] - 128
            yg[k] = Hf - py[k] - 128
        area = (xg[0] - xg[1]) * (yg[2] - yg[0]) - (xg[2] - xg[0]) * (yg[0] - yg[1])
        if area == 0:
            rec[t, R_FLAGS] = DRAW[t] << DRAW_SHIFT
            continue
        flags = VALID_BIT | (DRAW[t] << DRAW_SHIFT)
        if area < 0:  # llvmpipe: triangle_cw -> retry_triangle_ccw(v1, v0, v2)
            idx[0] = 1
            idx[1] = 0
            idx[2] = 2
        else:
            idx[0] = 0
            idx[1] = 1
            idx[2] = 2
        xmin = px[0]
        xmax = xmin
        ymin = py[0]
        ymax = ymin
        for k in range(1, 3):
            xmin = min(xmin, px[k])
            xmax = max(xmax, px[k])
            ymin = min(ymin, py[k])
            ymax = max(ymax, py[k])
        rec[t, R_BOX] = xmin
        rec[t, R_BOX + 1] = xmax
        rec[t, R_BOX + 2] = ymin
        rec[t, R_BOX + 3] = ymax
        for i in range(3):
            a = idx[i]
            b = idx[(i + 1) % 3]
            dx = xg[b] - xg[a]
            dy = yg[b] - yg[a]
            rec[t, R_AB + 2 * i] = dy
            rec[t, R_AB + 2 * i + 1] = -dx
            bi = 1 if (dy > 0 or (dy == 0 and dx < 0)) else 0
            rec64[t, R_C64 + i] = dx * yg[a] - dy * xg[a] + bi
            flags |= bi << i
        # depth plane, float32, llvmpipe lp_state_setup.c order of operations
        i0 = idx[0]
        i1 = idx[1]
        i2 = idx[2]
        x0 = np.float32(px[i0] / 256.0)
        x1 = np.float32(px[i1] / 256.0)
        x2 = np.float32(px[i2] / 256.0)
        y0 = np.float32((Hf - py[i0]) / 256.0)
        y1 = np.float32((Hf - py[i1]) / 256.0)
        y2 = np.float32((Hf - py[i2]) / 256.0)
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
        recf[t, R_PLANE] = dadx
        recf[t, R_PLANE + 1] = dady
        recf[t, R_PLANE + 2] = z0 - av
        rec[t, R_FLAGS] = flags
        # attributes in the (possibly swapped) vertex order; barycentric of vertex i+2 ~ edge i
        for k in range(3):
            s = idx[k]
            recf[t, R_ATTR + 4 * k] = UV[t, s, 0]
            recf[t, R_ATTR + 4 * k + 1] = UV[t, s, 1]
            recf[t, R_ATTR + 4 * k + 2] = SHADE[t, s]
            recf[t, R_ATTR + 4 * k + 3] = INVW[t, s]
    return out_of_range


def _aligned_records(n: int) -> np.ndarray:
    """Zeroed ``(n, R_WORDS)`` int32 records starting on a 64-byte boundary (a record is two
    cache lines)."""
    buf = np.zeros(n * R_WORDS + 16, np.int32)
    skip = (-buf.ctypes.data % 64) // 4
    return buf[skip:skip + n * R_WORDS].reshape(n, R_WORDS)


@dataclass(eq=False)
class TriangleSetup:
    """Per-triangle raster set-up of one frame: one 128-byte record per triangle, so that the
    tile renderer reads a triangle's set-up from two adjacent cache lines.

    ``rec`` (int32, ``(N, 32)``) with the views ``rec64`` (int64) and ``recf`` (float32) of the
    same memory; the slots are the ``R_*`` constants.  The properties below give the set-up as
    separate arrays (copies, for tests and single-pixel queries).
    """

    rec: np.ndarray

    @property
    def rec64(self) -> np.ndarray:
        return self.rec.view(np.int64)

    @property
    def recf(self) -> np.ndarray:
        return self.rec.view(np.float32)

    @property
    def E(self) -> np.ndarray:
        """int64 (N, 3, 3): edge functions ``A x + B y + C`` (fixed point, GL window
        coordinates, fill-rule bias folded into ``C``): inside when all three are positive."""
        n = self.rec.shape[0]
        out = np.empty((n, 3, 3), np.int64)
        out[:, :, :2] = self.rec[:, R_AB:R_AB + 6].reshape(n, 3, 2)
        out[:, :, 2] = self.rec64[:, R_C64:R_C64 + 3]
        return out

    @property
    def bias(self) -> np.ndarray:
        """int64 (N, 3): the fill-rule bias of each edge (1 on a left or bottom edge)."""
        return ((self.rec[:, R_FLAGS, None] >> np.arange(3)) & 1).astype(np.int64)

    @property
    def box(self) -> np.ndarray:
        """int64 (N, 4): bounding box ``xmin, xmax, ymin, ymax`` in 1/256 pixels (y down)."""
        return self.rec[:, R_BOX:R_BOX + 4].astype(np.int64)

    @property
    def plane(self) -> np.ndarray:
        """float32 (N, 3): depth plane ``dzdx, dzdy, z0``."""
        return np.ascontiguousarray(self.recf[:, R_PLANE:R_PLANE + 3])

    @property
    def attr(self) -> np.ndarray:
        """float64 (N, 3, 4): ``u, v, shade, 1/w`` per vertex, in the set-up's vertex order."""
        return self.recf[:, R_ATTR:R_ATTR + 12].astype(np.float64).reshape(-1, 3, 4)

    @property
    def valid(self) -> np.ndarray:
        """bool (N,): False for zero-area triangles (never rasterized)."""
        return (self.rec[:, R_FLAGS] & VALID_BIT) != 0


def setup_triangles(frame: FrameGeometry) -> TriangleSetup:
    """Per-triangle raster setup: integer edge functions, bounding box, float32 depth plane."""
    n = frame.n_triangles
    s = TriangleSetup(_aligned_records(n))
    if frame.n_triangles and int(frame.draw.max()) >= 1 << (31 - DRAW_SHIFT):
        raise ValueError(f"the raster's set-up records hold up to {1 << (31 - DRAW_SHIFT)} draws")
    if _setup(frame.xy, frame.z, frame.uv, frame.inv_w, frame.shade, frame.draw, frame.height,
              s.rec, s.rec64, s.recf):
        raise ValueError("window coordinates beyond the raster's fixed-point range "
                         f"(|x|, |y| < {MAX_FIXED // 256} pixels)")
    return s


def covers(frame: FrameGeometry, t: int, px: int, py: int,
           setup: TriangleSetup | None = None) -> bool:
    """Does triangle t cover pixel (px, py) (y down) under the model's rules?"""
    s = setup if setup is not None else setup_triangles(frame)
    if not s.rec[t, R_FLAGS] & VALID_BIT:
        return False
    sx = 256 * px
    sy = 256 * (frame.height - 1 - py)
    return all(int(s.rec[t, R_AB + 2 * i]) * sx + int(s.rec[t, R_AB + 2 * i + 1]) * sy
               + int(s.rec64[t, R_C64 + i]) > 0 for i in range(3))


@numba.njit(cache=True)
def _depth_at(recf, t, fx, fy):
    """The depth plane of triangle ``t`` at GL pixel ``(fx, fy)``, as the renderer evaluates it."""
    z = fma32(recf[t, R_PLANE + 1], fy, fma32(recf[t, R_PLANE], fx, recf[t, R_PLANE + 2]))
    return min(max(z, np.float32(0.0)), np.float32(1.0))


def depth_at(frame: FrameGeometry, t: int, px: int, py: int,
             setup: TriangleSetup | None = None) -> np.float32:
    """The model's (llvmpipe's) float32 depth of triangle t at the centre of pixel (px, py)."""
    s = setup if setup is not None else setup_triangles(frame)
    return _depth_at(s.recf, int(t), np.float32(px), np.float32(frame.height - 1 - py))
