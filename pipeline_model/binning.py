"""Tiling stage: bin each triangle into every tile it overlaps (the polygon list builder).

:func:`bin_triangles` builds per-tile display lists as one CSR structure over the tiles, with
each list in program order, and counts the parameter-buffer traffic.

Overlap test
------------
Exact, on the snapped 1/256-pixel fixed-point coordinates: a triangle is binned into a tile when
the triangle and the tile's rectangle (clipped to the screen) share a region of positive area.
It is the separating-axis test with the two box axes and the three edge normals, evaluated in
64-bit integers, so there is no rounding. Every sample point the rasterizer uses (pixel centres,
and superfragment centres under DSR) lies strictly inside its tile, so a triangle that covers a
sample of a tile is always binned into that tile. Degenerate (zero-area) triangles cover nothing
and are binned nowhere.

Tiles are numbered row-major from the top-left of the screen: ``tile = ty * tiles_x + tx``, tile
``(tx, ty)`` covering pixels ``[tx*T, min(W, (tx+1)*T)) x [ty*T, min(H, (ty+1)*T))`` (y down).

Parameter buffer (bytes), modelled on a Mali-style tiler; the sizes are data
(:class:`ParamBufferSizes`) and can be changed by the caller:

* ``list_entry`` (4 B) per tile-triangle pair: the polygon-list command that points a tile at a
  primitive (written by the tiler, read by the tile's fragment front end).
* ``primitive`` (16 B) per binned triangle: its three vertex indices and a draw-state reference,
  written once, read once per tile it is binned into.
* ``vertex`` (28 B) per vertex-shader invocation: the transformed position (4 x float32) and the
  varyings the model interpolates (u, v, light: 3 x float32), written once by the vertex stage,
  read three times per tile-triangle pair (one per corner).

``bytes_written = pairs*list_entry + binned*primitive + vertex_invocations*vertex`` and
``bytes_read = pairs*(list_entry + primitive + 3*vertex)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numba
import numpy as np

from .frame import SUBPIXEL_SCALE, FrameGeometry, TileGrid

__all__ = ["ParamBufferSizes", "TileLists", "bin_triangles", "fixed_point_xy"]


@dataclass(frozen=True)
class ParamBufferSizes:
    """Bytes per parameter-buffer record (see module docstring)."""

    list_entry: int = 4
    primitive: int = 16
    vertex: int = 28


@dataclass(eq=False)
class TileLists(TileGrid):
    """Per-tile triangle lists in CSR form, program order within each tile.

    Triangles of tile ``i`` are ``tri[offsets[i]:offsets[i+1]]`` (indices into the frame's
    triangle arrays). The same layout is used for the raster stage's ``order`` override.
    """

    width: int
    height: int
    tile: int
    offsets: np.ndarray  # int64 (n_tiles + 1,)
    tri: np.ndarray      # int32 (M,)
    triangles_binned: int = 0
    bytes_written: int = 0
    bytes_read: int = 0
    sizes: ParamBufferSizes = field(default_factory=ParamBufferSizes)

    @property
    def pairs(self) -> int:
        """Number of tile-triangle pairs (M)."""
        return int(self.tri.shape[0])

    def counts(self) -> np.ndarray:
        """(n_tiles,) triangles per tile."""
        return np.diff(self.offsets)

    def tile_triangles(self, i: int) -> np.ndarray:
        return self.tri[self.offsets[i]:self.offsets[i + 1]]

    def tile_rect(self, i: int) -> tuple[int, int, int, int]:
        """(x0, y0, x1, y1) pixel rectangle of tile ``i`` (x1, y1 exclusive, clipped to screen)."""
        tx, ty = i % self.tiles_x, i // self.tiles_x
        t = self.tile
        return (tx * t, ty * t, min(self.width, (tx + 1) * t), min(self.height, (ty + 1) * t))

    def with_lists(self, offsets: np.ndarray, tri: np.ndarray) -> "TileLists":
        """Same tiling, other lists (e.g. a per-tile reordering); byte counts are kept."""
        return TileLists(self.width, self.height, self.tile,
                         np.ascontiguousarray(offsets, np.int64), np.ascontiguousarray(tri, np.int32),
                         self.triangles_binned, self.bytes_written, self.bytes_read, self.sizes)


def fixed_point_xy(xy: np.ndarray) -> np.ndarray:
    """int64 (N, 3, 2) fixed-point window coordinates (1/256 pixel units, y down)."""
    return np.rint(np.asarray(xy, np.float64) * SUBPIXEL_SCALE).astype(np.int64)


@numba.njit(cache=True, nogil=True)
def _overlaps(X, Y, bx0, by0, bx1, by1):
    """Positive-area overlap of triangle (fixed-point X[3], Y[3], CCW or CW) and box [b0, b1]."""
    xmin = min(X[0], min(X[1], X[2]))
    xmax = max(X[0], max(X[1], X[2]))
    ymin = min(Y[0], min(Y[1], Y[2]))
    ymax = max(Y[0], max(Y[1], Y[2]))
    if xmax <= bx0 or xmin >= bx1 or ymax <= by0 or ymin >= by1:
        return False
    area = (X[1] - X[0]) * (Y[2] - Y[0]) - (X[2] - X[0]) * (Y[1] - Y[0])
    if area == 0:
        return False
    s = 1 if area > 0 else -1
    for i in range(3):
        j = (i + 1) % 3
        # f(p) = s * cross(v_j - v_i, p - v_i) > 0 inside
        a = -(Y[j] - Y[i]) * s  # coefficient of px
        b = (X[j] - X[i]) * s   # coefficient of py
        px = bx1 if a > 0 else bx0
        py = by1 if b > 0 else by0
        f = a * (px - X[i]) + b * (py - Y[i])
        if f <= 0:
            return False
    return True


@numba.njit(cache=True, nogil=True)
def _bin(XY, width, height, tile, tiles_x, tiles_y, count_only, offsets, out, binned):
    n = XY.shape[0]
    fill = np.zeros(tiles_x * tiles_y, np.int64)
    if not count_only:
        for i in range(tiles_x * tiles_y):
            fill[i] = offsets[i]
    X = np.empty(3, np.int64)
    Y = np.empty(3, np.int64)
    T = tile * 256
    Wf = width * 256
    Hf = height * 256
    for t in range(n):
        for k in range(3):
            X[k] = XY[t, k, 0]
            Y[k] = XY[t, k, 1]
        xmin = min(X[0], min(X[1], X[2]))
        xmax = max(X[0], max(X[1], X[2]))
        ymin = min(Y[0], min(Y[1], Y[2]))
        ymax = max(Y[0], max(Y[1], Y[2]))
        if xmax <= 0 or ymax <= 0 or xmin >= Wf or ymin >= Hf:
            continue
        tx0 = max(0, xmin // T)
        tx1 = min(tiles_x - 1, xmax // T)
        ty0 = max(0, ymin // T)
        ty1 = min(tiles_y - 1, ymax // T)
        hit = False
        for ty in range(ty0, ty1 + 1):
            by0 = ty * T
            by1 = min(Hf, by0 + T)
            for tx in range(tx0, tx1 + 1):
                bx0 = tx * T
                bx1 = min(Wf, bx0 + T)
                if _overlaps(X, Y, bx0, by0, bx1, by1):
                    ti = ty * tiles_x + tx
                    if not count_only:
                        out[fill[ti]] = t
                    fill[ti] += 1
                    hit = True
        if hit:
            binned[0] += 1
    return fill


def bin_triangles(frame: FrameGeometry, tile: int | None = None,
                  sizes: ParamBufferSizes | None = None) -> TileLists:
    """Bin ``frame``'s triangles into ``tile`` x ``tile`` tiles (default ``frame.tile``).

    Returns a :class:`TileLists` (CSR over tiles, program order) with the number of triangles
    binned into at least one tile and the parameter-buffer bytes written and read.
    """
    tile = int(frame.tile if tile is None else tile)
    sizes = sizes or ParamBufferSizes()
    w, h = frame.width, frame.height
    tiles_x = (w + tile - 1) // tile
    tiles_y = (h + tile - 1) // tile
    n_tiles = tiles_x * tiles_y
    XY = fixed_point_xy(frame.xy)
    binned = np.zeros(1, np.int64)
    counts = _bin(XY, w, h, tile, tiles_x, tiles_y, True, np.zeros(1, np.int64),
                  np.zeros(1, np.int32), binned)
    offsets = np.zeros(n_tiles + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    out = np.empty(int(offsets[-1]), np.int32)
    binned2 = np.zeros(1, np.int64)
    _bin(XY, w, h, tile, tiles_x, tiles_y, False, offsets, out, binned2)
    m = int(offsets[-1])
    nb = int(binned[0])
    vinv = int(frame.vertex_invocations.sum())
    written = m * sizes.list_entry + nb * sizes.primitive + vinv * sizes.vertex
    read = m * (sizes.list_entry + sizes.primitive + 3 * sizes.vertex)
    return TileLists(w, h, tile, offsets, out, nb, written, read, sizes)
