"""FrameGeometry: one frame's triangles after the geometry stage, in program order.

This record is the interface between the geometry stage (``pipeline_model.geometry``), the
tiling stage (``pipeline_model.binning``) and the raster stage (``pipeline_model.raster``).
It is a plain struct of numpy arrays so that the compiled (numba) stages can take the arrays
directly.

Conventions (they match what Mesa's llvmpipe does, see ``gpu_probe.gl_reference``):

* Window coordinates in pixels, origin at the **top-left** of the screen, x right, y down.
  Pixel ``(px, py)`` is sampled at its centre ``(px + 0.5, py + 0.5)``.
* ``xy`` is already snapped to the 1/256-pixel grid (8 sub-pixel bits, like llvmpipe);
  :func:`snap_to_subpixel` does it.
* ``z`` is window depth in ``[0, 1]`` (``glDepthRange(0, 1)``), float32.
* Triangles are in program order: draw order, then index-buffer order within a draw, so
  ``draw`` is non-decreasing.

Per-triangle arrays (N triangles after clipping and culling)::

    xy      float64 (N, 3, 2)   window x, y (pixels, y down), on the 1/256 grid
    z       float32 (N, 3)      window depth
    inv_w   float32 (N, 3)      1 / w_clip (perspective-correct interpolation; 1 for 2D)
    uv      float32 (N, 3, 2)   texture coordinates
    shade   float32 (N, 3)      per-vertex light intensity in [0, 1]
    draw    int32   (N,)        draw index 0..D-1
    prim    int32   (N,)        triangle index in the draw's index buffer

Per-draw arrays (D draws)::

    object_id          int32   (D,)    stable across frames (VRO / EVR key on it)
    depth_test         bool    (D,)
    depth_write        bool    (D,)    True = WOZ, False = NWOZ
    blend              bool    (D,)    translucent: alpha-over blending
    alpha              float32 (D,)
    shader_cost        float32 (D,)    relative per-fragment shader cost
    colour_kind        int8    (D,)    0 flat, 1 checker, 2 stripes, 3 noise, 4 lit
    colour_params      float32 (D, 8)  base rgb, second rgb, frequency, spare
    vertex_invocations int64   (D,)    from the geometry stage
    triangles_in       int64   (D,)    triangles submitted
    triangles_culled   int64   (D,)    back-face / outside culled
    triangles_clipped  int64   (D,)    triangles that went through near-plane clipping
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import NamedTuple

import numpy as np

__all__ = [
    "SUBPIXEL_BITS",
    "SUBPIXEL_SCALE",
    "COLOUR_KINDS",
    "DrawState",
    "FrameGeometry",
    "snap_to_subpixel",
]

SUBPIXEL_BITS = 8
SUBPIXEL_SCALE = 1 << SUBPIXEL_BITS  # 256 steps per pixel

#: Names of ``colour_kind`` codes.
COLOUR_KINDS = {"flat": 0, "checker": 1, "stripes": 2, "noise": 3, "lit": 4}

#: Largest |x|, |y| in pixels: keeps the raster's 64-bit fixed-point edge functions exact.
#: (The GL cross-check feeds positions exactly only within a 16384-pixel guard-band viewport,
#: so a geometry stage that wants exact GL agreement clips x/y to about [-7000, W + 7000].)
MAX_COORD = float(2**21)

DEFAULT_WIDTH = 1196
DEFAULT_HEIGHT = 768
DEFAULT_TILE = 16


def snap_to_subpixel(xy: np.ndarray) -> np.ndarray:
    """Round window coordinates to the nearest 1/256 pixel (ties away from zero), float64.

    llvmpipe converts window positions to 24.8 fixed point with round-to-nearest; feeding it
    positions that are already on the grid makes the conversion exact.
    """
    a = np.asarray(xy, dtype=np.float64) * SUBPIXEL_SCALE
    return (np.sign(a) * np.floor(np.abs(a) + 0.5)) / SUBPIXEL_SCALE


class DrawState(NamedTuple):
    """Render state of one draw, for readability (``FrameGeometry.draw_state(d)``)."""

    draw: int
    object_id: int
    depth_test: bool
    depth_write: bool
    blend: bool
    alpha: float
    shader_cost: float
    colour_kind: int
    colour_params: np.ndarray
    vertex_invocations: int
    triangles_in: int
    triangles_culled: int
    triangles_clipped: int
    first_triangle: int
    triangle_count: int


_TRI_SPEC = {  # name: (dtype, trailing shape)
    "xy": (np.float64, (3, 2)),
    "z": (np.float32, (3,)),
    "inv_w": (np.float32, (3,)),
    "uv": (np.float32, (3, 2)),
    "shade": (np.float32, (3,)),
    "draw": (np.int32, ()),
    "prim": (np.int32, ()),
}
_DRAW_SPEC = {
    "object_id": (np.int32, ()),
    "depth_test": (np.bool_, ()),
    "depth_write": (np.bool_, ()),
    "blend": (np.bool_, ()),
    "alpha": (np.float32, ()),
    "shader_cost": (np.float32, ()),
    "colour_kind": (np.int8, ()),
    "colour_params": (np.float32, (8,)),
    "vertex_invocations": (np.int64, ()),
    "triangles_in": (np.int64, ()),
    "triangles_culled": (np.int64, ()),
    "triangles_clipped": (np.int64, ()),
}


def _empty(spec, n):
    return {k: np.zeros((n,) + shp, dtype=dt) for k, (dt, shp) in spec.items()}


class TileGrid:
    """``tiles_x`` / ``tiles_y`` / ``n_tiles`` of a ``width`` x ``height`` frame cut into
    ``tile`` x ``tile`` tiles (the last column and row may be partial); shared by
    :class:`FrameGeometry` and :class:`~pipeline_model.binning.TileLists`."""

    width: int
    height: int
    tile: int

    @property
    def tiles_x(self) -> int:
        return (self.width + self.tile - 1) // self.tile

    @property
    def tiles_y(self) -> int:
        return (self.height + self.tile - 1) // self.tile

    @property
    def n_tiles(self) -> int:
        return self.tiles_x * self.tiles_y


@dataclass(eq=False)
class FrameGeometry(TileGrid):
    """One frame's post-geometry triangles (see module docstring for the array layout)."""

    width: int
    height: int
    xy: np.ndarray
    z: np.ndarray
    inv_w: np.ndarray
    uv: np.ndarray
    shade: np.ndarray
    draw: np.ndarray
    prim: np.ndarray
    object_id: np.ndarray
    depth_test: np.ndarray
    depth_write: np.ndarray
    blend: np.ndarray
    alpha: np.ndarray
    shader_cost: np.ndarray
    colour_kind: np.ndarray
    colour_params: np.ndarray
    vertex_invocations: np.ndarray
    triangles_in: np.ndarray
    triangles_culled: np.ndarray
    triangles_clipped: np.ndarray
    tile: int = DEFAULT_TILE
    validate_on_init: bool = field(default=True, repr=False)

    def __post_init__(self):
        # Coerce dtypes (cheap when already right) and make arrays C-contiguous for numba.
        for name, (dt, _) in {**_TRI_SPEC, **_DRAW_SPEC}.items():
            setattr(self, name, np.ascontiguousarray(getattr(self, name), dtype=dt))
        self.width = int(self.width)
        self.height = int(self.height)
        self.tile = int(self.tile)
        if self.validate_on_init:
            self.validate()

    # ------------------------------------------------------------------ sizes
    @property
    def n_triangles(self) -> int:
        return int(self.xy.shape[0])

    @property
    def n_draws(self) -> int:
        return int(self.object_id.shape[0])

    def draw_ranges(self) -> np.ndarray:
        """(D+1,) offsets: triangles of draw d are ``[r[d], r[d+1])`` (draw is sorted)."""
        return np.searchsorted(self.draw, np.arange(self.n_draws + 1), side="left").astype(np.int64)

    def draw_state(self, d: int) -> DrawState:
        r = self.draw_ranges()
        return DrawState(
            draw=int(d),
            object_id=int(self.object_id[d]),
            depth_test=bool(self.depth_test[d]),
            depth_write=bool(self.depth_write[d]),
            blend=bool(self.blend[d]),
            alpha=float(self.alpha[d]),
            shader_cost=float(self.shader_cost[d]),
            colour_kind=int(self.colour_kind[d]),
            colour_params=self.colour_params[d].copy(),
            vertex_invocations=int(self.vertex_invocations[d]),
            triangles_in=int(self.triangles_in[d]),
            triangles_culled=int(self.triangles_culled[d]),
            triangles_clipped=int(self.triangles_clipped[d]),
            first_triangle=int(r[d]),
            triangle_count=int(r[d + 1] - r[d]),
        )

    # ------------------------------------------------------------- validation
    def validate(self) -> FrameGeometry:
        """Check shapes, dtypes, ranges and program order; raise ValueError naming the problem."""
        if self.width <= 0 or self.height <= 0:
            raise ValueError(f"FrameGeometry: bad size {self.width}x{self.height}")
        if self.tile <= 0 or self.tile & (self.tile - 1):
            raise ValueError(f"FrameGeometry: tile size must be a power of two, got {self.tile}")
        n, d = self.n_triangles, self.n_draws
        for name, (_dt, shp) in _TRI_SPEC.items():
            a = getattr(self, name)
            if a.shape != (n,) + shp:
                raise ValueError(f"FrameGeometry.{name}: shape {a.shape}, expected {(n,) + shp}")
        for name, (_dt, shp) in _DRAW_SPEC.items():
            a = getattr(self, name)
            if a.shape != (d,) + shp:
                raise ValueError(f"FrameGeometry.{name}: shape {a.shape}, expected {(d,) + shp}")
        if n:
            if not np.all(np.isfinite(self.xy)):
                raise ValueError("FrameGeometry.xy: non-finite coordinates")
            if np.any(np.abs(self.xy) > MAX_COORD):
                raise ValueError(f"FrameGeometry.xy: coordinates beyond +-{MAX_COORD:.0f} pixels "
                                 "(64-bit fixed-point edge functions); clip to a guard band")
            s = self.xy * SUBPIXEL_SCALE
            if not np.array_equal(s, np.round(s)):
                raise ValueError("FrameGeometry.xy: not snapped to the 1/256-pixel grid "
                                 "(use frame.snap_to_subpixel)")
            if not (np.all(np.isfinite(self.z)) and self.z.min() >= 0.0 and self.z.max() <= 1.0):
                raise ValueError("FrameGeometry.z: window depth outside [0, 1]")
            if not np.all(np.isfinite(self.inv_w)) or np.any(self.inv_w <= 0):
                raise ValueError("FrameGeometry.inv_w: must be finite and > 0")
            if self.draw.min() < 0 or self.draw.max() >= d:
                raise ValueError("FrameGeometry.draw: index out of range")
            if np.any(np.diff(self.draw) < 0):
                raise ValueError("FrameGeometry.draw: not in program order (must be non-decreasing)")
        if d and np.any((self.colour_kind < 0) | (self.colour_kind > 4)):
            raise ValueError("FrameGeometry.colour_kind: codes are 0..4")
        return self

    # ------------------------------------------------------------ constructors
    @classmethod
    def empty(cls, width: int = DEFAULT_WIDTH, height: int = DEFAULT_HEIGHT,
              tile: int = DEFAULT_TILE, n_draws: int = 0) -> FrameGeometry:
        """A frame with no triangles (and ``n_draws`` default opaque WOZ draws)."""
        tri = _empty(_TRI_SPEC, 0)
        dr = _default_draws(n_draws)
        return cls(width=width, height=height, tile=tile, **tri, **dr)

    @classmethod
    def from_screen_triangles(cls, xy, z=None, *, draw=None, width: int = DEFAULT_WIDTH,
                              height: int = DEFAULT_HEIGHT, tile: int = DEFAULT_TILE,
                              inv_w=None, uv=None, shade=None, snap: bool = True,
                              **draw_fields) -> FrameGeometry:
        """Build a frame from screen-space triangles (mostly for tests).

        Parameters
        ----------
        xy : (N, 3, 2) window coordinates in pixels (top-left origin, y down).
        z : (N, 3) or (N,) window depths in [0, 1]; default 0.5.
        draw : (N,) non-decreasing draw index per triangle; default one draw.
        snap : round ``xy`` to the 1/256 grid.
        **draw_fields : per-draw values (scalar broadcast or length-D sequence) for any of
            ``object_id, depth_test, depth_write, blend, alpha, shader_cost, colour_kind,
            colour_params, vertex_invocations, triangles_in, triangles_culled,
            triangles_clipped``.
        """
        xy = np.asarray(xy, dtype=np.float64).reshape(-1, 3, 2)
        n = xy.shape[0]
        if snap:
            xy = snap_to_subpixel(xy)
        if z is None:
            z = np.full((n, 3), 0.5, np.float32)
        else:
            z = np.asarray(z, dtype=np.float32)
            if z.ndim == 1:
                z = np.repeat(z[:, None], 3, axis=1)
        draw = np.zeros(n, np.int32) if draw is None else np.asarray(draw, dtype=np.int32)
        n_draws = int(draw.max()) + 1 if n else 0
        for k, v in draw_fields.items():
            if k in _DRAW_SPEC and np.ndim(v) > (1 if k == "colour_params" else 0):
                n_draws = max(n_draws, len(v))
        tri = dict(
            xy=xy, z=z, draw=draw,
            inv_w=np.ones((n, 3), np.float32) if inv_w is None else inv_w,
            uv=_default_uv(xy) if uv is None else uv,
            shade=np.ones((n, 3), np.float32) if shade is None else shade,
            prim=_prim_in_draw(draw),
        )
        dr = _default_draws(n_draws)
        for k, v in draw_fields.items():
            if k not in _DRAW_SPEC:
                raise TypeError(f"from_screen_triangles: unknown draw field {k!r}")
            dt, shp = _DRAW_SPEC[k]
            dr[k] = np.broadcast_to(np.asarray(v, dtype=dt), (n_draws,) + shp).copy()
        return cls(width=width, height=height, tile=tile, **tri, **dr)

    def replace(self, **changes) -> FrameGeometry:
        """A copy with some fields replaced (arrays are shared, not copied)."""
        kw = {f.name: getattr(self, f.name) for f in fields(self)}
        kw.update(changes)
        return FrameGeometry(**kw)

    def with_draw_state(self, **per_draw) -> FrameGeometry:
        """A copy with per-draw fields replaced (scalar broadcast or length-D)."""
        ch = {}
        for k, v in per_draw.items():
            dt, shp = _DRAW_SPEC[k]
            ch[k] = np.broadcast_to(np.asarray(v, dtype=dt), (self.n_draws,) + shp).copy()
        return self.replace(**ch)


def _default_draws(d: int) -> dict:
    dr = _empty(_DRAW_SPEC, d)
    dr["object_id"][:] = np.arange(d, dtype=np.int32)
    dr["depth_test"][:] = True
    dr["depth_write"][:] = True
    dr["alpha"][:] = 1.0
    dr["shader_cost"][:] = 1.0
    if d:
        dr["colour_params"][:, 0:3] = 0.8
        dr["colour_params"][:, 3:6] = 0.2
        dr["colour_params"][:, 6] = 8.0
    return dr


def _prim_in_draw(draw: np.ndarray) -> np.ndarray:
    n = draw.shape[0]
    if n == 0:
        return np.zeros(0, np.int32)
    starts = np.searchsorted(draw, draw, side="left")
    return (np.arange(n) - starts).astype(np.int32)


def _default_uv(xy: np.ndarray) -> np.ndarray:
    # Screen-space uv (pixels / 64) so patterns are visible on test frames.
    return (xy / 64.0).astype(np.float32)
