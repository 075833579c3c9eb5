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

import os
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

    def with_lists(self, offsets: np.ndarray, tri: np.ndarray) -> TileLists:
        """Same tiling, other lists (e.g. a per-tile reordering); byte counts are kept."""
        return TileLists(self.width, self.height, self.tile,
                         np.ascontiguousarray(offsets, np.int64), np.ascontiguousarray(tri, np.int32),
                         self.triangles_binned, self.bytes_written, self.bytes_read, self.sizes)


def fixed_point_xy(xy: np.ndarray) -> np.ndarray:
    """int64 (N, 3, 2) fixed-point window coordinates (1/256 pixel units, y down)."""
    return np.rint(np.asarray(xy, np.float64) * SUBPIXEL_SCALE).astype(np.int64)


@numba.njit(cache=True, nogil=True, inline="always")
def fixed_point_vertices(xy, t):
    """:func:`fixed_point_xy` of triangle ``t`` in a compiled pass: ``x0, y0, x1, y1, x2, y2``
    (int64, 1/256 pixel units, y down)."""
    return (np.int64(np.rint(xy[t, 0, 0] * 256.0)), np.int64(np.rint(xy[t, 0, 1] * 256.0)),
            np.int64(np.rint(xy[t, 1, 0] * 256.0)), np.int64(np.rint(xy[t, 1, 1] * 256.0)),
            np.int64(np.rint(xy[t, 2, 0] * 256.0)), np.int64(np.rint(xy[t, 2, 1] * 256.0)))


@numba.njit(cache=True, nogil=True, _nrt=False)
def _overlaps(x0, y0, x1, y1, x2, y2, bx0, by0, bx1, by1):
    """Positive-area overlap of a triangle (fixed point, CCW or CW) and the box [b0, b1]."""
    if (max(x0, max(x1, x2)) <= bx0 or min(x0, min(x1, x2)) >= bx1
            or max(y0, max(y1, y2)) <= by0 or min(y0, min(y1, y2)) >= by1):
        return False
    area = (x1 - x0) * (y2 - y0) - (x2 - x0) * (y1 - y0)
    if area == 0:
        return False
    s = 1 if area > 0 else -1
    # f(p) = s * cross(v_j - v_i, p - v_i) > 0 inside, for the edges (0, 1), (1, 2), (2, 0)
    for i in range(3):
        xi, yi, xj, yj = (x0, y0, x1, y1) if i == 0 else ((x1, y1, x2, y2) if i == 1 else (x2, y2, x0, y0))
        a = -(yj - yi) * s  # coefficient of px
        b = (xj - xi) * s   # coefficient of py
        px = bx1 if a > 0 else bx0
        py = by1 if b > 0 else by0
        if a * (px - xi) + b * (py - yi) <= 0:
            return False
    return True


@numba.njit(cache=True, nogil=True)
def _bin_range(xy, lo, hi, width, height, tile, tiles_x, tiles_y, counts, pair_tile, pair_tri):
    """Bin triangles ``lo..hi-1``: count them per tile into ``counts`` and write the (tile,
    triangle) pairs in order into ``pair_tile`` / ``pair_tri``; returns how many pairs and how
    many triangles were binned into a tile, or ``(-1, 0)`` as soon as the pairs do not fit."""
    T = tile * 256
    Wf = width * 256
    Hf = height * 256
    cap = pair_tile.shape[0]
    m = 0
    binned = 0
    for t in range(lo, hi):
        x0, y0, x1, y1, x2, y2 = fixed_point_vertices(xy, t)
        xmin = min(x0, min(x1, x2))
        xmax = max(x0, max(x1, x2))
        ymin = min(y0, min(y1, y2))
        ymax = max(y0, max(y1, y2))
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
                if _overlaps(x0, y0, x1, y1, x2, y2, bx0, by0, bx1, by1):
                    if m == cap:
                        return -1, 0
                    ti = ty * tiles_x + tx
                    pair_tile[m] = ti
                    pair_tri[m] = t
                    m += 1
                    counts[ti] += 1
                    hit = True
        if hit:
            binned += 1
    return m, binned


def _make_bin(parallel):
    """The binning pass over chunks of triangles (one per numba thread when ``parallel``):
    each chunk lists its (tile, triangle) pairs into its row of one preallocated buffer (the
    buffer grows and the pass starts again when a chunk's pairs do not fit) and counts them per
    tile, the counts give every chunk its place in each tile's list (chunks in triangle order),
    and each chunk places its pairs there -- the lists are in program order either way."""

    def bin_chunks(xy, width, height, tile, tiles_x, tiles_y, n_chunks):
        n = xy.shape[0]
        n_tiles = tiles_x * tiles_y
        cap = 2 * ((n + n_chunks - 1) // n_chunks) + 4096
        while True:
            fill = np.zeros((n_chunks, n_tiles), np.int64)
            binned = np.zeros(n_chunks, np.int64)
            used = np.zeros(n_chunks, np.int64)
            pair_tile = np.empty((n_chunks, cap), np.int32)
            pair_tri = np.empty((n_chunks, cap), np.int32)
            for c in numba.prange(n_chunks):
                m, nb = _bin_range(xy, c * n // n_chunks, (c + 1) * n // n_chunks, width, height,
                                   tile, tiles_x, tiles_y, fill[c], pair_tile[c], pair_tri[c])
                used[c] = m
                binned[c] = nb
            if used.min() >= 0:
                break
            cap *= 4
        offsets = np.zeros(n_tiles + 1, np.int64)
        pos = 0
        for ti in range(n_tiles):
            offsets[ti] = pos
            for c in range(n_chunks):
                count = fill[c, ti]
                fill[c, ti] = pos
                pos += count
        offsets[n_tiles] = pos
        out = np.empty(pos, np.int32)
        for c in numba.prange(n_chunks):
            f = fill[c]
            for k in range(used[c]):
                ti = pair_tile[c, k]
                out[f[ti]] = pair_tri[c, k]
                f[ti] += 1
        return offsets, out, binned.sum()

    bin_chunks.__qualname__ = "bin_chunks_parallel" if parallel else "bin_chunks_serial"  # a cache entry each
    return numba.njit(cache=True, nogil=True, parallel=parallel)(bin_chunks)


_bin_serial = _make_bin(False)
_bin_parallel = _make_bin(True)
#: Default of ``bin_triangles(parallel=None)``, as the raster's (results identical either way).
_DEFAULT_PARALLEL = os.environ.get("MESHOPT_BATCH_RASTER_THREADS", "") != "1"


def bin_triangles(frame: FrameGeometry, tile: int | None = None,
                  sizes: ParamBufferSizes | None = None, parallel: bool | None = None) -> TileLists:
    """Bin ``frame``'s triangles into ``tile`` x ``tile`` tiles (default ``frame.tile``), in
    chunks of triangles on all numba threads unless ``parallel=False`` (or
    ``MESHOPT_BATCH_RASTER_THREADS=1``); the result is the same either way.

    Returns a :class:`TileLists` (CSR over tiles, program order) with the number of triangles
    binned into at least one tile and the parameter-buffer bytes written and read.
    """
    tile = int(frame.tile if tile is None else tile)
    sizes = sizes or ParamBufferSizes()
    w, h = frame.width, frame.height
    tiles_x = (w + tile - 1) // tile
    tiles_y = (h + tile - 1) // tile
    if parallel is None:
        parallel = _DEFAULT_PARALLEL
    xy = np.ascontiguousarray(frame.xy, np.float64)
    n_chunks = max(1, min(numba.get_num_threads(), xy.shape[0] // 4096)) if parallel else 1
    # fixed point computed in the compiled pass, as fixed_point_xy does it
    offsets, out, nb = (_bin_parallel if n_chunks > 1 else _bin_serial)(xy, w, h, tile, tiles_x, tiles_y,
                                                                       n_chunks)
    m = int(offsets[-1])
    nb = int(nb)
    vinv = int(frame.vertex_invocations.sum())
    written = m * sizes.list_entry + nb * sizes.primitive + vinv * sizes.vertex
    read = m * (sizes.list_entry + sizes.primitive + 3 * sizes.vertex)
    return TileLists(w, h, tile, offsets, out, nb, written, read, sizes)
