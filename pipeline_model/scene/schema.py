"""The JSON scene format: its documentation, its validation helpers and the render state.

Every scene module reads its part of the format through the helpers here, so a bad value is
always one :class:`SceneError` line naming the place (``objects[3].state.alpha: 1.5 outside
[0.0, 1.0]``).

JSON scene format
-----------------
One object; unknown keys are errors (so typos are caught), every key but ``objects`` is
optional.  Numbers are JSON numbers, colours are ``[r, g, b]`` in ``[0, 1]``, angles are
degrees, lengths are world units, time is counted in frames::

    {
      "name": "my-scene",
      "description": "free text",
      "frames": 60,                       # default frame count of a run
      "width": 1196, "height": 768,       # default screen (a run may override)
      "clear": [0.1, 0.1, 0.15],          # clear colour
      "seed": 1,                          # for "shuffle" orders
      "light": {"direction": [0.4, 1, 0.3]},   # towards the light, world space
      "camera": CAMERA,                   # the default camera (layers may have their own)
      "cuts": [30],                       # camera cuts: frames that start a new shot
      "meshes": {"NAME": MESH, ...},      # meshes the objects refer to by name
      "materials": {"NAME": STATE, ...},  # named render states
      "layers": [LAYER, ...],             # draw-order groups, drawn in list order
      "objects": [OBJECT, ...]            # the draw calls, in listed (program) order
    }

``MESH`` -- one of (modifiers in brackets apply to all)::

    "box" | {"shape": "box", "divisions": 4}            # pipeline_model.shapes: box, plane,
                                                        #   quad, sphere, cylinder, cone, torus
    {"library": "NAME", ...params}                      # a `meshes` generator: grid, uv_sphere,
                                                        #   icosphere, torus, cube, random_soup
    {"shared": "bunny", "fallback": MESH}               # ../shared/meshes/bunny.ply if present
    {"file": "path.ply|.obj|.glb", "fallback": MESH}    # relative to the scene file
    {"merge": [{"mesh": MESH, "position": [x,y,z],      # a static batch: the parts placed
                "rotation": [rx,ry,rz], "scale": s}]}   #   and baked into one mesh, in order
    [ "shuffle": SEED ]      triangles in a seeded random order (a cache-hostile index buffer)
    [ "normalize": true ]    centre x/z on 0, base at y = 0, largest extent 1
    [ "mesh": INDEX ]        one index buffer of a multi-mesh file, in object space
                             (default: the whole model, a glTF's primitives in world space)

A ``shared`` or ``file`` mesh that is absent (the shared meshes are not shipped with the
project) falls back to ``fallback`` (default a sphere); :attr:`Scene.fallbacks` lists those.

``STATE`` -- render state of a draw (defaults in brackets)::

    {"depth_test": true, "depth_write": true,   # depth_write false = NWOZ
     "blend": false, "alpha": 1.0,              # blend true = translucent (alpha over)
     "shader_cost": 1.0,                        # relative fragment-shader cost
     "cull": "back",                            # back | front | none
     "lit": false,                              # per-vertex directional light into `shade`
     "colour": COLOUR}

``COLOUR`` -- ``[r, g, b]`` (flat) or ``{"kind": "flat|checker|stripes|noise|lit",
"base": [r,g,b], "second": [r,g,b], "frequency": 8}`` (``frequency`` is pattern periods per
unit of texture coordinate; :mod:`pipeline_model.shading` evaluates it).  ``lit`` puts the
per-vertex directional light ``max(0, n . l)`` into the frame's ``shade`` and makes the
shader modulate the pattern by it (kind ``lit`` is a flat colour that is always lit).

``LAYER`` -- ``{"name": "world", "order": ORDER, "camera": CAMERA}``.  ``ORDER`` is how the
layer's objects are submitted each frame: ``listed`` (as in the file), ``back-to-front`` /
``front-to-back`` (by the distance from the eye to each object's world-space bounding box
this frame, ties in listed order), or ``shuffle`` (a fixed seeded permutation of the listed order).  Without
``layers`` there is one layer ``default`` with order ``listed``.

``CAMERA``::

    {"projection": "perspective", "fovy": 60, "near": 0.5, "far": 400,
     "eye": [x,y,z], "target": [x,y,z], "up": [0,1,0],
     "path": [{"frame": 0, "eye": [...], "target": [...], "fovy": 60}, ...],  # linear, clamped
     "orbit": {"center": [...], "radius": 30, "height": 10, "start": 0, "speed": 1},  # deg/frame
     "velocity": [dx, dy, dz]}           # eye and target move together (scrolling)
    {"projection": "orthographic", "height": 20, ...same placement keys...}
    {"projection": "screen", "size": [1196, 768]}   # 2D/HUD: x, y in pixels (y down) of a
                                         # logical screen scaled to the real one, z = depth

``OBJECT``::

    {"name": "tower-3", "mesh": "NAME or MESH", "layer": "world",
     "material": "NAME", "state": STATE,          # state keys override the material's
     "position": [x,y,z], "rotation": [rx,ry,rz], "scale": s | [sx,sy,sz],
     "object_id": 17,                             # default: index in the objects list
     "visible": [first, last],                    # frames (inclusive); default always
     "animation": {"velocity": [...], "spin": [...],          # per frame
                   "keyframes": [{"frame": 0, "position": ..., "rotation": ..., "scale": ...}],
                   "oscillate": {"axis": [...], "amplitude": 1, "period": 60, "phase": 0}}}

``cuts`` lists the frames (>= 1) that are the first frame after a camera cut: the scene jumps
there (typically a camera ``path`` with keys at frames ``c - 1`` and ``c``), so frame ``c`` has
no coherence with frame ``c - 1``.  :attr:`FrameSpec.cut` is true on those frames; techniques
that learn from the previous frame may reset there, and DSR's MSSIM >= 0.95 rule does not
judge them (they are reported apart).

The model matrix is ``T * Rz * Ry * Rx * S``.  Keyframes are interpolated linearly and
clamped at both ends; velocity, spin and oscillation add on top.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from meshopt_batch.support.errors import MeshoptBatchError
from meshopt_batch.support.json_values import describe
from meshopt_batch.support.limits import FLOAT32_MAX

__all__ = [
    "COLOUR_KIND_CODES", "CULL_MODES", "MAX_JSON_INTEGER", "ORDERS", "PROJECTIONS", "RenderState",
    "SceneError", "boolean", "check_keys", "choice", "integer", "number", "string", "vector", "where",
]

ORDERS = ("listed", "back-to-front", "front-to-back", "shuffle")
CULL_MODES = ("back", "front", "none")
PROJECTIONS = ("perspective", "orthographic", "screen")
COLOUR_KIND_CODES = {"flat": 0, "checker": 1, "stripes": 2, "noise": 3, "lit": 4}
#: Largest integer a scene may hold (seeds, ids, frame numbers): JSON numbers are exact
#: integers up to 2^53.
MAX_JSON_INTEGER = 2**53


class SceneError(MeshoptBatchError, ValueError):
    """A scene file or scene description that cannot be used (names the place and problem)."""


# ----------------------------------------------------------------------------- validation helpers
def where(ctx: str, key: str | int) -> str:
    """The place ``key`` inside ``ctx``: ``objects[3]``, ``camera.eye``."""
    return f"{ctx}[{key}]" if isinstance(key, int) else (f"{ctx}.{key}" if ctx else str(key))


def check_keys(d: Any, allowed: Iterable[str], ctx: str) -> dict:
    """``d`` itself when it is an object holding only ``allowed`` keys."""
    if not isinstance(d, dict):
        raise SceneError(f"{ctx or 'scene'}: expected an object, got {describe(d)}")
    bad = sorted(set(d) - set(allowed))
    if bad:
        raise SceneError(f"{ctx or 'scene'}: unknown key {bad[0]!r} (allowed: {', '.join(sorted(allowed))})")
    return d


def number(v: Any, ctx: str, lo: float | None = None, hi: float | None = None) -> float:
    """A finite JSON number in ``[lo, hi]`` as a float; every number is also within float32's
    range (:data:`~meshopt_batch.support.limits.FLOAT32_MAX`: the pipeline model computes in float32,
    where a larger number is infinite)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
            or abs(v) > FLOAT32_MAX:
        raise SceneError(f"{ctx}: expected a finite number within float32's range, got {describe(v)}")
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        span = (f"in [{lo}, {hi}]" if lo is not None and hi is not None
                else f">= {lo}" if lo is not None else f"<= {hi}")
        raise SceneError(f"{ctx}: expected a number {span}, got {v}")
    return float(v)


def integer(v: Any, ctx: str, lo: int | None = None, hi: int = MAX_JSON_INTEGER) -> int:
    """A whole JSON number from ``lo`` to ``hi`` (default :data:`MAX_JSON_INTEGER`) as an int."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or int(v) != v:
        raise SceneError(f"{ctx}: expected an integer, got {describe(v)}")
    if lo is not None and v < lo:
        raise SceneError(f"{ctx}: must be at least {lo}, got {v}")
    if v > hi:
        raise SceneError(f"{ctx}: must be at most {hi:,}, got {v:,}" if isinstance(v, int)
                         else f"{ctx}: must be at most {hi:,}, got {v:g}")
    return int(v)


def string(v: Any, ctx: str) -> str:
    """A JSON string (a name, a description)."""
    if not isinstance(v, str):
        raise SceneError(f"{ctx}: expected a string, got {describe(v)}")
    return v


def boolean(v: Any, ctx: str) -> bool:
    """A JSON ``true`` or ``false``."""
    if not isinstance(v, bool):
        raise SceneError(f"{ctx}: expected true or false, got {describe(v)}")
    return v


def vector(v: Any, ctx: str, n: int = 3, lo: float | None = None, hi: float | None = None) -> tuple:
    """A list of ``n`` numbers as a tuple; a single number stands for ``[s, s, s]`` where
    ``ctx`` is a ``scale``."""
    if isinstance(v, (int, float)) and not isinstance(v, bool) and n == 3 and ctx.endswith("scale"):
        v = [v, v, v]
    if not isinstance(v, (list, tuple)) or len(v) != n:
        raise SceneError(f"{ctx}: expected a list of {n} numbers, got {describe(v)}")
    return tuple(number(x, where(ctx, i), lo, hi) for i, x in enumerate(v))


def choice(v: Any, ctx: str, options: Iterable[str]) -> str:
    """One of ``options``."""
    options = tuple(options)
    if not isinstance(v, str) or v not in options:
        raise SceneError(f"{ctx}: expected one of {', '.join(options)}, got {describe(v)}")
    return v


# ----------------------------------------------------------------------------- render state
@dataclass(frozen=True)
class RenderState:
    """Render state of one draw call (the module docstring's ``STATE`` and ``COLOUR`` give the JSON keys).

    Attributes
    ----------
    depth_test : bool
        Early depth test on.
    depth_write : bool
        Depth writes on (WOZ) or off (NWOZ).
    blend : bool
        Alpha blending (a translucent draw).
    alpha : float
        Opacity for blending, 0..1.
    shader_cost : float
        Relative per-fragment shading cost.
    cull : str
        Face culling: one of :data:`CULL_MODES`.
    lit : bool
        Modulate the colour by the scene's light.
    colour_kind : str
        The colour function: a key of :data:`COLOUR_KIND_CODES`.
    base, second : tuple of float
        The colour function's two RGB colours, 0..1.
    frequency : float
        The pattern's frequency (checker, stripes, noise).
    """

    depth_test: bool = True
    depth_write: bool = True
    blend: bool = False
    alpha: float = 1.0
    shader_cost: float = 1.0
    cull: str = "back"
    lit: bool = False
    colour_kind: str = "flat"
    base: tuple = (0.8, 0.8, 0.8)
    second: tuple = (0.2, 0.2, 0.2)
    frequency: float = 8.0

    _KEYS = ("depth_test", "depth_write", "blend", "alpha", "shader_cost", "cull", "lit", "colour")

    @property
    def colour_code(self) -> int:
        """The colour function's code (:data:`COLOUR_KIND_CODES`)."""
        return COLOUR_KIND_CODES[self.colour_kind]

    def colour_params(self) -> np.ndarray:
        """The 8 colour parameters of :class:`~pipeline_model.frame.FrameGeometry`.

        Returns
        -------
        numpy.ndarray
            Float32: base rgb, second rgb, frequency, flags (1 = modulate by the light, see
            :mod:`pipeline_model.shading`).
        """
        return np.array([*self.base, *self.second, self.frequency, 1.0 if self.lit else 0.0],
                        np.float32)

    @classmethod
    def from_dict(cls, d: dict, ctx: str = "state", base: RenderState | None = None) -> RenderState:
        """A render state from its scene-JSON form, checked.

        Parameters
        ----------
        d : dict
            A ``state`` object (or a material).
        ctx : str
            Where it is in the file, for messages.
        base : RenderState, optional
            The state the keys of ``d`` change (a material); default the defaults.

        Returns
        -------
        RenderState
            The state.

        Raises
        ------
        SceneError
            An unknown key or a value of the wrong type or range, named by its place.
        """
        check_keys(d, cls._KEYS, ctx)
        kw: dict[str, Any] = {} if base is None else dict(base.__dict__)
        for k in ("depth_test", "depth_write", "blend", "lit"):
            if k in d:
                kw[k] = boolean(d[k], where(ctx, k))
        if "alpha" in d:
            kw["alpha"] = number(d["alpha"], where(ctx, "alpha"), 0.0, 1.0)
        if "shader_cost" in d:
            kw["shader_cost"] = number(d["shader_cost"], where(ctx, "shader_cost"), 0.0)
        if "cull" in d:
            kw["cull"] = choice(d["cull"], where(ctx, "cull"), CULL_MODES)
        if "colour" in d:
            c = d["colour"]
            cctx = where(ctx, "colour")
            if isinstance(c, list):
                kw.update(colour_kind="flat", base=vector(c, cctx, 3, 0.0, 1.0))
            else:
                check_keys(c, ("kind", "base", "second", "frequency"), cctx)
                if "kind" in c:
                    kw["colour_kind"] = choice(c["kind"], where(cctx, "kind"), COLOUR_KIND_CODES)
                if "base" in c:
                    kw["base"] = vector(c["base"], where(cctx, "base"), 3, 0.0, 1.0)
                if "second" in c:
                    kw["second"] = vector(c["second"], where(cctx, "second"), 3, 0.0, 1.0)
                if "frequency" in c:
                    kw["frequency"] = number(c["frequency"], where(cctx, "frequency"), 0.0)
        return cls(**kw)

    def to_dict(self) -> dict:
        """The scene-JSON form.

        Returns
        -------
        dict
            The ``state`` object.
        """
        return {
            "depth_test": self.depth_test, "depth_write": self.depth_write, "blend": self.blend,
            "alpha": self.alpha, "shader_cost": self.shader_cost, "cull": self.cull, "lit": self.lit,
            "colour": {"kind": self.colour_kind, "base": list(self.base), "second": list(self.second),
                       "frequency": self.frequency},
        }
