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

from .binning import fixed_point_vertices
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


@numba.njit(cache=True, nogil=True, inline="always")
def _edge(rec, rec64, t, i, xa, ya, xb, yb):
    """Edge ``i`` (from ``a`` to ``b``) of triangle ``t``'s record: ``A, B`` and ``C`` with the
    fill-rule bias folded in; returns the bias at flag bit ``i``."""
    dx = xb - xa
    dy = yb - ya
    rec[t, R_AB + 2 * i] = dy
    rec[t, R_AB + 2 * i + 1] = -dx
    bi = 1 if (dy > 0 or (dy == 0 and dx < 0)) else 0
    rec64[t, R_C64 + i] = dx * ya - dy * xa + bi
    return bi << i


@numba.njit(cache=True, nogil=True, inline="always")
def _setup_one(t, xy, Z, UV, INVW, SHADE, DRAW, Hf, rec, rec64, recf):
    """Fill triangle ``t``'s record; True when a vertex is beyond the fixed-point range."""
    half = np.float32(0.5)
    one = np.float32(1.0)
    px0, py0, px1, py1, px2, py2 = fixed_point_vertices(xy, t)
    out_of_range = (max(abs(px0), abs(px1), abs(px2)) >= MAX_FIXED
                    or max(abs(py0), abs(py1), abs(py2)) >= MAX_FIXED)
    # llvmpipe fixed point: GL window coords (y up), minus the pixel-centre offset
    xg0 = px0 - 128
    xg1 = px1 - 128
    xg2 = px2 - 128
    yg0 = Hf - py0 - 128
    yg1 = Hf - py1 - 128
    yg2 = Hf - py2 - 128
    area = (xg0 - xg1) * (yg2 - yg0) - (xg2 - xg0) * (yg0 - yg1)
    if area == 0:
        for k in range(R_WORDS):
            rec[t, k] = 0
        rec[t, R_FLAGS] = DRAW[t] << DRAW_SHIFT
        return out_of_range
    flags = VALID_BIT | (DRAW[t] << DRAW_SHIFT)
    rec[t, R_BOX] = min(px0, px1, px2)
    rec[t, R_BOX + 1] = max(px0, px1, px2)
    rec[t, R_BOX + 2] = min(py0, py1, py2)
    rec[t, R_BOX + 3] = max(py0, py1, py2)
    # set-up vertex order: llvmpipe's triangle_cw -> retry_triangle_ccw(v1, v0, v2)
    i0, i1 = 0, 1
    if area < 0:
        i0, i1 = 1, 0
        xg0, xg1 = xg1, xg0
        yg0, yg1 = yg1, yg0
    flags |= _edge(rec, rec64, t, 0, xg0, yg0, xg1, yg1)
    flags |= _edge(rec, rec64, t, 1, xg1, yg1, xg2, yg2)
    flags |= _edge(rec, rec64, t, 2, xg2, yg2, xg0, yg0)
    # depth plane, float32, llvmpipe lp_state_setup.c order of operations
    x0 = np.float32((xg0 + 128) / 256.0)
    x1 = np.float32((xg1 + 128) / 256.0)
    x2 = np.float32((xg2 + 128) / 256.0)
    y0 = np.float32((yg0 + 128) / 256.0)
    y1 = np.float32((yg1 + 128) / 256.0)
    y2 = np.float32((yg2 + 128) / 256.0)
    z0 = Z[t, i0]
    z1 = Z[t, i1]
    z2 = Z[t, 2]
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
    # attributes in the set-up vertex order; barycentric of vertex i+2 ~ edge i
    for k in range(3):
        s = i0 if k == 0 else (i1 if k == 1 else 2)
        recf[t, R_ATTR + 4 * k] = UV[t, s, 0]
        recf[t, R_ATTR + 4 * k + 1] = UV[t, s, 1]
        recf[t, R_ATTR + 4 * k + 2] = SHADE[t, s]
        recf[t, R_ATTR + 4 * k + 3] = INVW[t, s]
    return out_of_range


@numba.njit(cache=True, nogil=True, parallel=True)
def _setup(xy, Z, UV, INVW, SHADE, DRAW, height, rec, rec64, recf):
    """Every triangle's record (triangles are independent: one prange over them); the number
    of triangles with a vertex beyond the fixed-point range."""
    Hf = np.int64(height) * 256
    n_out = 0
    for t in numba.prange(xy.shape[0]):
        if _setup_one(t, xy, Z, UV, INVW, SHADE, DRAW, Hf, rec, rec64, recf):
            n_out += 1
    return n_out


def _aligned_records(n: int) -> np.ndarray:
    """Uninitialised ``(n, R_WORDS)`` int32 records starting on a 64-byte boundary (a record
    is two cache lines); :func:`_setup` writes every word."""
    buf = np.empty(n * R_WORDS + 16, np.int32)
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
