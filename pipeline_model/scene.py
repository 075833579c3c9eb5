"""Animated scenes for the pipeline model: draw calls per frame, render state, cameras.

A scene is what an application submits to the GPU: every frame, an ordered list of draw
calls (mesh + model matrix + render state) and the camera they are seen through.  The
geometry stage (:mod:`pipeline_model.geometry`) turns one :class:`FrameSpec` into a
:class:`~pipeline_model.frame.FrameGeometry`.

Scenes are data.  They come from a small declarative JSON format (below), from a glTF/GLB
file with a camera path (:func:`load_gltf_scene`), or from Python (build the dataclasses).
The shipped scenes live in ``meshes/scenes/*.json`` (:func:`shipped_scenes`,
:func:`load_scene` by name).  Everything is deterministic: the same file gives the same
frames on every machine.

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
    {"library": "NAME", ...params}                      # meshes/ procedural generator (if any)
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

import copy
import json
import math
import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from meshopt_batch.errors import MeshoptBatchError
from meshopt_batch.mesh import Mesh, concatenate

from . import shapes

__all__ = [
    "SceneError", "RenderState", "Camera", "Layer", "Animation", "SceneObject", "Scene",
    "Draw", "FrameSpec", "load_scene", "load_gltf_scene", "shipped_scenes", "shipped_scene_path",
    "shared_meshes_dir", "resolve_mesh", "ORDERS", "COLOUR_KIND_CODES",
]

ORDERS = ("listed", "back-to-front", "front-to-back", "shuffle")
CULL_MODES = ("back", "front", "none")
PROJECTIONS = ("perspective", "orthographic", "screen")
COLOUR_KIND_CODES = {"flat": 0, "checker": 1, "stripes": 2, "noise": 3, "lit": 4}


class SceneError(MeshoptBatchError, ValueError):
    """A scene file or scene description that cannot be used (names the place and problem)."""


# ----------------------------------------------------------------------------- validation helpers
def _where(ctx: str, key: str | int) -> str:
    return f"{ctx}[{key}]" if isinstance(key, int) else (f"{ctx}.{key}" if ctx else str(key))


def _check_keys(d: Any, allowed: Iterable[str], ctx: str) -> dict:
    if not isinstance(d, dict):
        raise SceneError(f"{ctx or 'scene'}: expected an object, got {type(d).__name__}")
    bad = sorted(set(d) - set(allowed))
    if bad:
        raise SceneError(f"{ctx or 'scene'}: unknown key {bad[0]!r} (allowed: {', '.join(sorted(allowed))})")
    return d


def _num(v: Any, ctx: str, lo: float | None = None, hi: float | None = None) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise SceneError(f"{ctx}: expected a number, got {v!r}")
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise SceneError(f"{ctx}: {v} outside [{lo}, {hi}]")
    return float(v)


def _int(v: Any, ctx: str, lo: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or int(v) != v:
        raise SceneError(f"{ctx}: expected an integer, got {v!r}")
    if lo is not None and v < lo:
        raise SceneError(f"{ctx}: must be at least {lo}, got {v}")
    return int(v)


def _bool(v: Any, ctx: str) -> bool:
    if not isinstance(v, bool):
        raise SceneError(f"{ctx}: expected true or false, got {v!r}")
    return v


def _vec(v: Any, ctx: str, n: int = 3, lo: float | None = None, hi: float | None = None) -> tuple:
    if isinstance(v, (int, float)) and not isinstance(v, bool) and n == 3 and ctx.endswith("scale"):
        v = [v, v, v]
    if not isinstance(v, (list, tuple)) or len(v) != n:
        raise SceneError(f"{ctx}: expected a list of {n} numbers, got {v!r}")
    return tuple(_num(x, _where(ctx, i), lo, hi) for i, x in enumerate(v))


def _choice(v: Any, ctx: str, options: Iterable[str]) -> str:
    options = tuple(options)
    if v not in options:
        raise SceneError(f"{ctx}: expected one of {', '.join(options)}, got {v!r}")
    return v


# ----------------------------------------------------------------------------- render state
@dataclass(frozen=True)
class RenderState:
    """Render state of one draw call (see the module docstring for the JSON keys)."""

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
        return COLOUR_KIND_CODES[self.colour_kind]

    def colour_params(self) -> np.ndarray:
        """The 8 colour parameters of :class:`~pipeline_model.frame.FrameGeometry`:
        base rgb, second rgb, frequency, flags (1 = modulate by the light, see
        :mod:`pipeline_model.shading`)."""
        return np.array([*self.base, *self.second, self.frequency, 1.0 if self.lit else 0.0],
                        np.float32)

    @classmethod
    def from_dict(cls, d: dict, ctx: str = "state", base: "RenderState | None" = None) -> "RenderState":
        _check_keys(d, cls._KEYS, ctx)
        kw: dict[str, Any] = {} if base is None else dict(base.__dict__)
        for k in ("depth_test", "depth_write", "blend", "lit"):
            if k in d:
                kw[k] = _bool(d[k], _where(ctx, k))
        if "alpha" in d:
            kw["alpha"] = _num(d["alpha"], _where(ctx, "alpha"), 0.0, 1.0)
        if "shader_cost" in d:
            kw["shader_cost"] = _num(d["shader_cost"], _where(ctx, "shader_cost"), 0.0)
        if "cull" in d:
            kw["cull"] = _choice(d["cull"], _where(ctx, "cull"), CULL_MODES)
        if "colour" in d:
            c = d["colour"]
            cctx = _where(ctx, "colour")
            if isinstance(c, list):
                kw.update(colour_kind="flat", base=_vec(c, cctx, 3, 0.0, 1.0))
            else:
                _check_keys(c, ("kind", "base", "second", "frequency"), cctx)
                if "kind" in c:
                    kw["colour_kind"] = _choice(c["kind"], _where(cctx, "kind"), COLOUR_KIND_CODES)
                if "base" in c:
                    kw["base"] = _vec(c["base"], _where(cctx, "base"), 3, 0.0, 1.0)
                if "second" in c:
                    kw["second"] = _vec(c["second"], _where(cctx, "second"), 3, 0.0, 1.0)
                if "frequency" in c:
                    kw["frequency"] = _num(c["frequency"], _where(cctx, "frequency"), 0.0)
        return cls(**kw)

    def to_dict(self) -> dict:
        return {
            "depth_test": self.depth_test, "depth_write": self.depth_write, "blend": self.blend,
            "alpha": self.alpha, "shader_cost": self.shader_cost, "cull": self.cull, "lit": self.lit,
            "colour": {"kind": self.colour_kind, "base": list(self.base), "second": list(self.second),
                       "frequency": self.frequency},
        }


# ----------------------------------------------------------------------------- matrices
def look_at(eye, target, up) -> np.ndarray:
    """View matrix (world -> eye space, camera looking down -Z), float64 (4, 4)."""
    eye = np.asarray(eye, np.float64)
    f = np.asarray(target, np.float64) - eye
    n = np.linalg.norm(f)
    f = f / n if n > 0 else np.array([0.0, 0.0, -1.0])
    s = np.cross(f, np.asarray(up, np.float64))
    if np.linalg.norm(s) < 1e-12:  # looking along up: pick another up
        s = np.cross(f, np.array([0.0, 0.0, 1.0]) if abs(f[1]) > 0.9 else np.array([0.0, 1.0, 0.0]))
    s /= np.linalg.norm(s)
    u = np.cross(s, f)
    m = np.eye(4)
    m[0, :3], m[1, :3], m[2, :3] = s, u, -f
    m[:3, 3] = -m[:3, :3] @ eye
    return m


def perspective(fovy_deg: float, aspect: float, near: float, far: float) -> np.ndarray:
    """GL perspective projection (clip z in [-w, w])."""
    f = 1.0 / math.tan(math.radians(fovy_deg) / 2.0)
    m = np.zeros((4, 4))
    m[0, 0] = f / aspect
    m[1, 1] = f
    m[2, 2] = (far + near) / (near - far)
    m[2, 3] = 2.0 * far * near / (near - far)
    m[3, 2] = -1.0
    return m


def orthographic(left, right, bottom, top, near, far) -> np.ndarray:
    """GL orthographic projection."""
    m = np.eye(4)
    m[0, 0] = 2.0 / (right - left)
    m[1, 1] = 2.0 / (top - bottom)
    m[2, 2] = -2.0 / (far - near)
    m[0, 3] = -(right + left) / (right - left)
    m[1, 3] = -(top + bottom) / (top - bottom)
    m[2, 3] = -(far + near) / (far - near)
    return m


def screen_projection(width: int, height: int) -> np.ndarray:
    """Pixels (x right, y down) and window depth z in [0, 1] straight to clip space (w = 1)."""
    m = np.eye(4)
    m[0, 0], m[0, 3] = 2.0 / width, -1.0
    m[1, 1], m[1, 3] = -2.0 / height, 1.0
    m[2, 2], m[2, 3] = 2.0, -1.0
    return m


def euler_matrix(deg) -> np.ndarray:
    """Rz * Ry * Rx for angles in degrees (3x3)."""
    rx, ry, rz = (math.radians(a) for a in deg)
    cx, sx, cy, sy, cz, sz = math.cos(rx), math.sin(rx), math.cos(ry), math.sin(ry), math.cos(rz), math.sin(rz)
    Rx = np.array([[1, 0, 0], [0, cx, -sx], [0, sx, cx]])
    Ry = np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
    Rz = np.array([[cz, -sz, 0], [sz, cz, 0], [0, 0, 1]])
    return Rz @ Ry @ Rx


def model_matrix(position, rotation, scale) -> np.ndarray:
    m = np.eye(4)
    m[:3, :3] = euler_matrix(rotation) * np.asarray(scale, np.float64)[None, :]
    m[:3, 3] = position
    return m


def _interp_keys(keys: list[dict], frame: float, name: str, default):
    """Linear interpolation of ``name`` over keyframes (sorted by frame), clamped."""
    pts = [(k["frame"], k[name]) for k in keys if name in k]
    if not pts:
        return default
    if frame <= pts[0][0]:
        return pts[0][1]
    if frame >= pts[-1][0]:
        return pts[-1][1]
    for (f0, v0), (f1, v1) in zip(pts, pts[1:]):
        if f0 <= frame <= f1:
            t = (frame - f0) / (f1 - f0) if f1 > f0 else 1.0
            if isinstance(v0, tuple):
                return tuple(a + (b - a) * t for a, b in zip(v0, v1))
            return v0 + (v1 - v0) * t
    return pts[-1][1]


# ----------------------------------------------------------------------------- camera
@dataclass(frozen=True)
class Camera:
    """A camera and its path over the frames (see the module docstring)."""

    projection: str = "perspective"
    fovy: float = 60.0
    near: float = 0.5
    far: float = 400.0
    height: float = 20.0           # orthographic view height (world units)
    eye: tuple = (0.0, 5.0, 20.0)
    target: tuple = (0.0, 0.0, 0.0)
    up: tuple = (0.0, 1.0, 0.0)
    path: tuple = ()               # tuple of dicts {"frame", "eye"?, "target"?, "fovy"?, "height"?}
    orbit: dict | None = None      # {"center", "radius", "height", "start", "speed"}
    velocity: tuple = (0.0, 0.0, 0.0)
    size: tuple | None = None      # screen projection: logical pixel size (None = the screen's)

    _KEYS = ("projection", "fovy", "near", "far", "height", "eye", "target", "up", "path", "orbit",
             "velocity", "size")

    @classmethod
    def from_dict(cls, d: dict, ctx: str = "camera") -> "Camera":
        _check_keys(d, cls._KEYS, ctx)
        kw: dict[str, Any] = {}
        if "projection" in d:
            kw["projection"] = _choice(d["projection"], _where(ctx, "projection"), PROJECTIONS)
        if "fovy" in d:
            kw["fovy"] = _num(d["fovy"], _where(ctx, "fovy"), 1.0, 179.0)
        for k in ("near", "far", "height"):
            if k in d:
                kw[k] = _num(d[k], _where(ctx, k))
        for k in ("eye", "target", "up", "velocity"):
            if k in d:
                kw[k] = _vec(d[k], _where(ctx, k))
        if "path" in d:
            if not isinstance(d["path"], list):
                raise SceneError(f"{ctx}.path: expected a list of keyframes")
            keys = []
            for i, k in enumerate(d["path"]):
                kc = _where(_where(ctx, "path"), i)
                _check_keys(k, ("frame", "eye", "target", "fovy", "height"), kc)
                if "frame" not in k:
                    raise SceneError(f"{kc}: missing 'frame'")
                e = {"frame": _num(k["frame"], _where(kc, "frame"), 0.0)}
                for q in ("eye", "target"):
                    if q in k:
                        e[q] = _vec(k[q], _where(kc, q))
                for q in ("fovy", "height"):
                    if q in k:
                        e[q] = _num(k[q], _where(kc, q))
                keys.append(e)
            kw["path"] = tuple(sorted(keys, key=lambda e: e["frame"]))
        if "orbit" in d:
            oc = _where(ctx, "orbit")
            o = _check_keys(d["orbit"], ("center", "radius", "height", "start", "speed"), oc)
            kw["orbit"] = {
                "center": _vec(o.get("center", [0, 0, 0]), _where(oc, "center")),
                "radius": _num(o.get("radius", 20.0), _where(oc, "radius"), 0.0),
                "height": _num(o.get("height", 5.0), _where(oc, "height")),
                "start": _num(o.get("start", 0.0), _where(oc, "start")),
                "speed": _num(o.get("speed", 1.0), _where(oc, "speed")),
            }
        if "size" in d:
            sz = d["size"]
            if not isinstance(sz, list) or len(sz) != 2:
                raise SceneError(f"{ctx}.size: expected [width, height]")
            kw["size"] = (_num(sz[0], f"{ctx}.size[0]", 1.0), _num(sz[1], f"{ctx}.size[1]", 1.0))
        cam = cls(**kw)
        if cam.projection != "screen":
            if cam.near <= 0 or cam.far <= cam.near:
                raise SceneError(f"{ctx}: need 0 < near < far, got near={cam.near}, far={cam.far}")
        return cam

    def to_dict(self) -> dict:
        d: dict[str, Any] = {"projection": self.projection}
        if self.projection == "screen":
            if self.size is not None:
                d["size"] = list(self.size)
            return d
        d.update(fovy=self.fovy, near=self.near, far=self.far, height=self.height,
                 eye=list(self.eye), target=list(self.target), up=list(self.up),
                 velocity=list(self.velocity))
        if self.path:
            d["path"] = [{k: (list(v) if isinstance(v, tuple) else v) for k, v in e.items()}
                         for e in self.path]
        if self.orbit:
            d["orbit"] = {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.orbit.items()}
        return d

    def placement(self, frame: int) -> tuple[np.ndarray, np.ndarray, float, float]:
        """(eye, target, fovy, ortho height) at a frame."""
        eye = _interp_keys(list(self.path), frame, "eye", self.eye)
        target = _interp_keys(list(self.path), frame, "target", self.target)
        fovy = _interp_keys(list(self.path), frame, "fovy", self.fovy)
        height = _interp_keys(list(self.path), frame, "height", self.height)
        eye = np.asarray(eye, np.float64)
        target = np.asarray(target, np.float64)
        if self.orbit:
            o = self.orbit
            a = math.radians(o["start"] + o["speed"] * frame)
            c = np.asarray(o["center"], np.float64)
            eye = c + np.array([o["radius"] * math.sin(a), o["height"], o["radius"] * math.cos(a)])
            target = c
        v = np.asarray(self.velocity, np.float64) * frame
        return eye + v, target + v, float(fovy), float(height)

    def matrices(self, frame: int, width: int, height: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(view, projection, eye position) at a frame for a ``width x height`` screen."""
        if self.projection == "screen":
            w, h = self.size if self.size is not None else (width, height)
            return np.eye(4), screen_projection(w, h), np.array([0.0, 0.0, -1.0])
        eye, target, fovy, h = self.placement(frame)
        view = look_at(eye, target, self.up)
        aspect = width / height
        if self.projection == "perspective":
            proj = perspective(fovy, aspect, self.near, self.far)
        else:
            proj = orthographic(-h * aspect / 2, h * aspect / 2, -h / 2, h / 2, self.near, self.far)
        return view, proj, eye


# ----------------------------------------------------------------------------- layers, objects
@dataclass(frozen=True)
class Layer:
    name: str = "default"
    order: str = "listed"
    camera: Camera | None = None

    @classmethod
    def from_dict(cls, d: dict, ctx: str) -> "Layer":
        _check_keys(d, ("name", "order", "camera"), ctx)
        if not isinstance(d.get("name"), str) or not d["name"]:
            raise SceneError(f"{ctx}.name: expected a non-empty string")
        order = _choice(d.get("order", "listed"), _where(ctx, "order"), ORDERS)
        cam = Camera.from_dict(d["camera"], _where(ctx, "camera")) if "camera" in d else None
        return cls(d["name"], order, cam)

    def to_dict(self) -> dict:
        d: dict[str, Any] = {"name": self.name, "order": self.order}
        if self.camera is not None:
            d["camera"] = self.camera.to_dict()
        return d


@dataclass(frozen=True)
class Animation:
    velocity: tuple = (0.0, 0.0, 0.0)
    spin: tuple = (0.0, 0.0, 0.0)
    keyframes: tuple = ()
    oscillate: dict | None = None

    @classmethod
    def from_dict(cls, d: dict, ctx: str) -> "Animation":
        _check_keys(d, ("velocity", "spin", "keyframes", "oscillate"), ctx)
        kw: dict[str, Any] = {}
        for k in ("velocity", "spin"):
            if k in d:
                kw[k] = _vec(d[k], _where(ctx, k))
        if "keyframes" in d:
            if not isinstance(d["keyframes"], list):
                raise SceneError(f"{ctx}.keyframes: expected a list")
            keys = []
            for i, k in enumerate(d["keyframes"]):
                kc = _where(_where(ctx, "keyframes"), i)
                _check_keys(k, ("frame", "position", "rotation", "scale"), kc)
                if "frame" not in k:
                    raise SceneError(f"{kc}: missing 'frame'")
                e: dict[str, Any] = {"frame": _num(k["frame"], _where(kc, "frame"), 0.0)}
                for q in ("position", "rotation"):
                    if q in k:
                        e[q] = _vec(k[q], _where(kc, q))
                if "scale" in k:
                    e["scale"] = _vec(k["scale"], _where(kc, "scale"))
                keys.append(e)
            kw["keyframes"] = tuple(sorted(keys, key=lambda e: e["frame"]))
        if "oscillate" in d:
            oc = _where(ctx, "oscillate")
            o = _check_keys(d["oscillate"], ("axis", "amplitude", "period", "phase"), oc)
            kw["oscillate"] = {
                "axis": _vec(o.get("axis", [0, 1, 0]), _where(oc, "axis")),
                "amplitude": _num(o.get("amplitude", 1.0), _where(oc, "amplitude")),
                "period": _num(o.get("period", 60.0), _where(oc, "period"), 1e-6),
                "phase": _num(o.get("phase", 0.0), _where(oc, "phase")),
            }
        return cls(**kw)

    def to_dict(self) -> dict:
        d: dict[str, Any] = {}
        if any(self.velocity):
            d["velocity"] = list(self.velocity)
        if any(self.spin):
            d["spin"] = list(self.spin)
        if self.keyframes:
            d["keyframes"] = [{k: (list(v) if isinstance(v, tuple) else v) for k, v in e.items()}
                              for e in self.keyframes]
        if self.oscillate:
            d["oscillate"] = {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.oscillate.items()}
        return d

    @property
    def static(self) -> bool:
        return not (any(self.velocity) or any(self.spin) or self.keyframes or self.oscillate)


@dataclass(frozen=True)
class SceneObject:
    """One draw call of the scene (drawn in every frame of its visible range)."""

    name: str
    mesh: str
    object_id: int
    layer: str = "default"
    state: RenderState = RenderState()
    position: tuple = (0.0, 0.0, 0.0)
    rotation: tuple = (0.0, 0.0, 0.0)
    scale: tuple = (1.0, 1.0, 1.0)
    animation: Animation = Animation()
    visible: tuple | None = None
    material: str | None = None
    state_overrides: dict | None = field(default=None, compare=False)

    def transform(self, frame: int) -> np.ndarray:
        a = self.animation
        keys = list(a.keyframes)
        pos = np.asarray(_interp_keys(keys, frame, "position", self.position), np.float64)
        rot = np.asarray(_interp_keys(keys, frame, "rotation", self.rotation), np.float64)
        scl = np.asarray(_interp_keys(keys, frame, "scale", self.scale), np.float64)
        pos = pos + np.asarray(a.velocity) * frame
        rot = rot + np.asarray(a.spin) * frame
        if a.oscillate:
            o = a.oscillate
            pos = pos + np.asarray(o["axis"]) * o["amplitude"] * math.sin(
                2 * math.pi * (frame / o["period"]) + math.radians(o["phase"]))
        return model_matrix(pos, rot, scl)

    def visible_at(self, frame: int) -> bool:
        return self.visible is None or self.visible[0] <= frame <= self.visible[1]

    def to_dict(self) -> dict:
        d: dict[str, Any] = {"name": self.name, "mesh": self.mesh, "object_id": self.object_id,
                             "layer": self.layer}
        if self.material is not None:
            d["material"] = self.material
            if self.state_overrides:
                d["state"] = copy.deepcopy(self.state_overrides)
        else:
            d["state"] = self.state.to_dict()
        d.update(position=list(self.position), rotation=list(self.rotation), scale=list(self.scale))
        if not self.animation.static:
            d["animation"] = self.animation.to_dict()
        if self.visible is not None:
            d["visible"] = list(self.visible)
        return d


# ----------------------------------------------------------------------------- meshes
def shared_meshes_dir() -> Path | None:
    """The folder of the real test meshes (``../shared/meshes``), or None when absent.

    Looks at ``$MESHOPT_BATCH_SHARED_MESHES``, then the ``meshes`` package's finder, then
    ``../shared/meshes`` next to the repository.
    """
    env = os.environ.get("MESHOPT_BATCH_SHARED_MESHES")
    if env and Path(env).is_dir():
        return Path(env)
    try:
        import meshes as _m  # the project's meshes package (another module owns it)

        fn = getattr(_m, "shared_meshes_dir", None)
        if callable(fn):
            p = fn()
            if p and Path(p).is_dir():
                return Path(p)
    except Exception:  # noqa: BLE001 - the finder is optional
        pass
    here = Path(__file__).resolve().parent.parent
    for cand in (here.parent / "shared" / "meshes", here / ".." / "shared" / "meshes"):
        if cand.is_dir():
            return cand.resolve()
    return None


def _shared_mesh_path(name: str) -> Path | None:
    try:
        import meshes as _m

        fn = getattr(_m, "shared_mesh_path", None)
        if callable(fn):
            try:
                p = fn(name)
            except Exception:  # noqa: BLE001 - absent mesh: fall back below
                p = None
            if p and Path(p).is_file():
                return Path(p)
    except Exception:  # noqa: BLE001
        pass
    d = shared_meshes_dir()
    if d is None:
        return None
    for cand in (d / name, d / f"{name}.ply", d / f"{name}.glb", d / f"{name}.obj"):
        if cand.is_file():
            return cand
    return None


def _load_mesh_file(path: Path, which: int | None, geometry: str | None = None) -> Mesh:
    """Load a mesh file without reordering (:mod:`meshopt_batch.io`, else trimesh).

    ``geometry`` picks one named geometry of a glTF scene in its own (object) space, ``which``
    one index buffer (glTF primitive) in object space; otherwise the whole model (a glTF's
    primitives moved to world space and concatenated in file order).
    """
    import trimesh

    meshes_: list[Mesh] = []
    if geometry is not None:
        sc = trimesh.load(str(path), force="scene", process=False, maintain_order=True)
        if geometry not in sc.geometry:
            raise SceneError(f"{path}: no geometry named {geometry!r}")
        g = sc.geometry[geometry]
        return Mesh(np.asarray(g.vertices, np.float32), np.asarray(g.faces), name=str(geometry))
    try:
        from meshopt_batch import io as mio   # order-preserving readers
    except ImportError:
        mio = None
    if mio is not None:
        if which is None:
            return mio.load_mesh(str(path))       # glTF: the whole model in world space
        meshes_ = list(mio.load_meshes(str(path)))   # one per index buffer, object space
    if not meshes_:
        loaded = trimesh.load(str(path), process=False, maintain_order=True)
        if isinstance(loaded, trimesh.Scene):
            for node in loaded.graph.nodes_geometry:
                tf, gname = loaded.graph[node]
                g = loaded.geometry[gname]
                if not hasattr(g, "faces") or len(g.faces) == 0:
                    continue
                p = np.asarray(g.vertices, np.float64)
                p = p @ np.asarray(tf)[:3, :3].T + np.asarray(tf)[:3, 3]
                meshes_.append(Mesh(p.astype(np.float32), np.asarray(g.faces), name=str(node)))
        else:
            meshes_.append(Mesh(np.asarray(loaded.vertices, np.float32), np.asarray(loaded.faces),
                                name=path.stem))
    if not meshes_:
        raise SceneError(f"{path}: no triangle mesh in the file")
    if which is not None:
        if not 0 <= which < len(meshes_):
            raise SceneError(f"{path}: mesh index {which} out of range ({len(meshes_)} meshes)")
        return meshes_[which]
    if len(meshes_) == 1:
        return meshes_[0]
    pos, tris, base = [], [], 0
    for m in meshes_:
        pos.append(m.positions)
        tris.append(m.triangles.astype(np.int64) + base)
        base += m.vertex_count
    return Mesh(np.concatenate(pos), np.concatenate(tris).astype(np.uint32), name=path.stem)


def _library_mesh(name: str, params: dict) -> Mesh | None:
    """A procedural mesh from the project's ``meshes`` package, if it has one by that name."""
    try:
        import meshes as _m
    except ImportError:
        return None
    for attr in ("procedural", "make", "generate"):
        fn = getattr(_m, attr, None)
        if callable(fn):
            try:
                out = fn(name, **params)
            except (KeyError, ValueError, TypeError):
                continue
            if isinstance(out, Mesh):
                return out
    fn = getattr(_m, name, None)
    if callable(fn):
        out = fn(**params)
        if isinstance(out, Mesh):
            return out
    return None


def _finish_mesh(m: Mesh) -> Mesh:
    """Make sure a mesh has normals and uvs (computed when the source has none)."""
    attrs = dict(m.attributes)
    if "normal" not in attrs:
        attrs["normal"] = shapes.vertex_normals(m.positions, m.triangles)
    if "uv" not in attrs:
        attrs["uv"] = shapes.planar_uv(m.positions)
    return Mesh(m.positions, m.triangles, name=m.name, attributes={"normal": attrs["normal"],
                                                                     "uv": attrs["uv"]},
                meta=dict(m.meta))


def resolve_mesh(spec: Any, base_dir: Path | None = None, ctx: str = "mesh",
                 fallbacks: list | None = None) -> Mesh:
    """Build the mesh a scene's MESH entry describes (see the module docstring)."""
    if isinstance(spec, str):
        if spec.startswith("shared:"):
            spec = {"shared": spec[len("shared:"):]}
        elif spec in shapes.SHAPES:
            spec = {"shape": spec}
        else:
            spec = {"file": spec}
    if not isinstance(spec, dict):
        raise SceneError(f"{ctx}: expected a shape name or an object, got {spec!r}")
    spec = dict(spec)
    shuffle = spec.pop("shuffle", None)
    normalize = spec.pop("normalize", False)
    which = spec.pop("mesh", None)
    geometry = spec.pop("gltf_geometry", None)
    fallback = spec.pop("fallback", {"shape": "sphere"})
    kinds = [k for k in ("shape", "library", "shared", "file", "merge") if k in spec]
    if len(kinds) != 1:
        raise SceneError(f"{ctx}: give exactly one of shape, library, shared, file, merge")
    kind = kinds[0]
    if kind == "merge":
        parts = spec.pop("merge")
        if spec:
            raise SceneError(f"{ctx}: unknown key {sorted(spec)[0]!r}")
        mesh = _merge_parts(parts, base_dir, _where(ctx, "merge"), fallbacks)
        if normalize:
            mesh = _normalize(mesh)
        if shuffle is not None:
            mesh = shapes.shuffle_triangles(mesh, _int(shuffle, _where(ctx, "shuffle"), 0))
        return mesh
    src = spec.pop(kind)
    params = spec.pop("params", {})
    if kind in ("shape", "library"):
        params = {**params, **spec}
        spec = {}
    if spec:
        raise SceneError(f"{ctx}: unknown key {sorted(spec)[0]!r}")
    if not isinstance(params, dict):
        raise SceneError(f"{ctx}.params: expected an object")
    mesh: Mesh | None = None
    if kind == "shape":
        try:
            mesh = shapes.make_shape(src, **params)
        except ValueError as exc:
            raise SceneError(f"{ctx}: {exc}") from None
    elif kind == "library":
        mesh = _library_mesh(src, params)
        if mesh is None and src in shapes.SHAPES:
            mesh = shapes.make_shape(src, **params)
        if mesh is None:
            if fallbacks is not None:
                fallbacks.append(f"library:{src}")
            return resolve_mesh(fallback, base_dir, _where(ctx, "fallback"), fallbacks)
    else:
        if kind == "shared":
            path = _shared_mesh_path(str(src))
        else:
            path = Path(str(src)).expanduser()
            if not path.is_absolute() and base_dir is not None:
                path = base_dir / path
            path = path if path.is_file() else None
        if path is None:
            if fallbacks is not None:
                fallbacks.append(f"{kind}:{src}")
            m = resolve_mesh(fallback, base_dir, _where(ctx, "fallback"), fallbacks)
            return m if not normalize else _normalize(m)
        try:
            mesh = _load_mesh_file(path, None if which is None else _int(which, _where(ctx, "mesh"), 0),
                                   None if geometry is None else str(geometry))
        except SceneError:
            raise
        except Exception as exc:  # noqa: BLE001 - a broken file is a user error
            raise SceneError(f"{ctx}: cannot load {path}: {exc}") from None
    mesh = _finish_mesh(mesh)
    if normalize:
        mesh = _normalize(mesh)
    if shuffle is not None:
        mesh = shapes.shuffle_triangles(mesh, _int(shuffle, _where(ctx, "shuffle"), 0))
    return mesh


def _merge_parts(parts: Any, base_dir: Path | None, ctx: str, fallbacks: list | None) -> Mesh:
    """A static batch: every part's mesh moved to its placement and appended in listed order.

    Normals go through the inverse transpose of the part's matrix; uvs are kept.  The result
    is one index buffer, as an engine's static batching bakes many objects into one draw.
    """
    if not isinstance(parts, list) or not parts:
        raise SceneError(f"{ctx}: expected a non-empty list of parts")
    baked = []
    for i, part in enumerate(parts):
        pctx = _where(ctx, i)
        part = _check_keys(part, ("mesh", "position", "rotation", "scale"), pctx)
        if "mesh" not in part:
            raise SceneError(f"{pctx}: missing 'mesh'")
        m = resolve_mesh(part["mesh"], base_dir, _where(pctx, "mesh"), fallbacks)
        scale = part.get("scale", 1.0)
        scale = (_num(scale, _where(pctx, "scale")),) * 3 if not isinstance(scale, list) \
            else _vec(scale, _where(pctx, "scale"))
        mat = model_matrix(_vec(part.get("position", [0, 0, 0]), _where(pctx, "position")),
                           _vec(part.get("rotation", [0, 0, 0]), _where(pctx, "rotation")), scale)
        lin = mat[:3, :3]
        det = np.linalg.det(lin)
        if abs(det) < 1e-12:
            raise SceneError(f"{pctx}: the placement is singular (a zero scale)")
        pos = m.positions.astype(np.float64) @ lin.T + mat[:3, 3]
        nrm = m.normals.astype(np.float64) @ np.linalg.inv(lin)
        nrm /= np.maximum(np.linalg.norm(nrm, axis=1, keepdims=True), 1e-30)
        tris = m.triangles if det > 0 else m.triangles[:, ::-1]
        baked.append(Mesh(pos.astype(np.float32), tris, name=m.name,
                          attributes={"normal": nrm.astype(np.float32), "uv": m.uvs}))
    merged = concatenate(baked, name="merge")
    return _finish_mesh(Mesh(merged.positions, merged.triangles.astype(np.uint32), name="merge",
                             attributes=dict(merged.attributes)))


def _normalize(m: Mesh) -> Mesh:
    p = m.positions.astype(np.float64)
    if len(p) == 0:
        return m
    used = np.unique(m.triangles.ravel()) if m.triangle_count else np.arange(len(p))
    lo, hi = p[used].min(0), p[used].max(0)
    ext = float(np.max(hi - lo)) or 1.0
    c = np.array([(lo[0] + hi[0]) / 2, lo[1], (lo[2] + hi[2]) / 2])
    return Mesh(((p - c) / ext).astype(np.float32), m.triangles, name=m.name,
                attributes=dict(m.attributes), meta=dict(m.meta))


# ----------------------------------------------------------------------------- frames
@dataclass(frozen=True, eq=False)
class Draw:
    """One draw call of one frame."""

    index: int
    object_id: int
    name: str
    mesh_name: str
    mesh: Mesh
    model: np.ndarray       # (4, 4) object -> world
    view: np.ndarray        # (4, 4) world -> eye
    proj: np.ndarray        # (4, 4) eye -> clip
    state: RenderState


@dataclass(frozen=True, eq=False)
class FrameSpec:
    """What the application submits for one frame."""

    index: int
    width: int
    height: int
    draws: list
    clear: tuple
    light_direction: tuple
    cut: bool = False     # first frame after a camera cut (the scene's "cuts")


# ----------------------------------------------------------------------------- scene
_SCENE_KEYS = ("name", "description", "frames", "width", "height", "clear", "seed", "light",
               "camera", "cuts", "meshes", "materials", "layers", "objects")


@dataclass(eq=False)
class Scene:
    """An animated scene: meshes, layers, objects (draw calls) and a camera."""

    name: str
    objects: list
    meshes: dict = field(default_factory=dict)           # name -> MESH spec (JSON-able)
    materials: dict = field(default_factory=dict)        # name -> RenderState
    layers: list = field(default_factory=lambda: [Layer()])
    camera: Camera = Camera()
    frames: int = 60
    width: int = 1196
    height: int = 768
    clear: tuple = (0.0, 0.0, 0.0)
    seed: int = 1
    light_direction: tuple = (0.4, 1.0, 0.3)
    cuts: tuple = ()                                     # frames that start a new shot
    description: str = ""
    base_dir: Path | None = None
    source: str | None = None
    fallbacks: list = field(default_factory=list)        # meshes that fell back (absent files)

    def __post_init__(self):
        self._mesh_cache: dict[str, Mesh] = {}
        self._check()

    # ------------------------------------------------------------ construction
    @classmethod
    def from_dict(cls, d: dict, base_dir: str | Path | None = None, source: str | None = None) -> "Scene":
        """Build a scene from its JSON form; raise :class:`SceneError` naming any problem."""
        ctx = ""
        _check_keys(d, _SCENE_KEYS, ctx)
        if "objects" not in d or not isinstance(d["objects"], list):
            raise SceneError("scene: 'objects' must be a list of draw calls")
        kw: dict[str, Any] = {"name": str(d.get("name", source and Path(source).stem or "scene"))}
        if "description" in d:
            kw["description"] = str(d["description"])
        if "frames" in d:
            kw["frames"] = _int(d["frames"], "frames", 1)
        for k in ("width", "height"):
            if k in d:
                kw[k] = _int(d[k], k, 1)
        if "clear" in d:
            kw["clear"] = _vec(d["clear"], "clear", 3, 0.0, 1.0)
        if "seed" in d:
            kw["seed"] = _int(d["seed"], "seed", 0)
        if "light" in d:
            lt = _check_keys(d["light"], ("direction",), "light")
            if "direction" in lt:
                kw["light_direction"] = _vec(lt["direction"], "light.direction")
        if "camera" in d:
            kw["camera"] = Camera.from_dict(d["camera"], "camera")
        if "cuts" in d:
            if not isinstance(d["cuts"], list):
                raise SceneError("cuts: expected a list of frame numbers")
            kw["cuts"] = tuple(sorted({_int(c, f"cuts[{i}]", 1) for i, c in enumerate(d["cuts"])}))
        meshes = d.get("meshes", {})
        if not isinstance(meshes, dict):
            raise SceneError("meshes: expected an object of name -> mesh")
        kw["meshes"] = copy.deepcopy(meshes)
        mats_raw = d.get("materials", {})
        _check_keys(mats_raw, list(mats_raw) if isinstance(mats_raw, dict) else [], "materials")
        materials = {name: RenderState.from_dict(s, f"materials.{name}") for name, s in mats_raw.items()}
        kw["materials"] = materials
        if "layers" in d:
            if not isinstance(d["layers"], list) or not d["layers"]:
                raise SceneError("layers: expected a non-empty list")
            kw["layers"] = [Layer.from_dict(x, f"layers[{i}]") for i, x in enumerate(d["layers"])]
        layer_names = {ly.name for ly in kw.get("layers", [Layer()])}
        objects = []
        for i, o in enumerate(d["objects"]):
            oc = f"objects[{i}]"
            _check_keys(o, ("name", "mesh", "layer", "material", "state", "position", "rotation",
                            "scale", "object_id", "visible", "animation"), oc)
            if "mesh" not in o:
                raise SceneError(f"{oc}: missing 'mesh'")
            mesh = o["mesh"]
            if not isinstance(mesh, str):
                # an inline mesh spec: register it under a generated name
                mname = f"__inline_{i}"
                kw["meshes"][mname] = copy.deepcopy(mesh)
                mesh = mname
            elif mesh not in kw["meshes"] and not (mesh in shapes.SHAPES or mesh.startswith("shared:")):
                raise SceneError(f"{oc}.mesh: unknown mesh {mesh!r} (not in 'meshes' and not a shape)")
            layer = o.get("layer", "default" if "layers" not in d else kw["layers"][0].name)
            if layer not in layer_names:
                raise SceneError(f"{oc}.layer: unknown layer {layer!r}")
            base_state = None
            material = o.get("material")
            if material is not None:
                if material not in materials:
                    raise SceneError(f"{oc}.material: unknown material {material!r}")
                base_state = materials[material]
            overrides = o.get("state")
            state = RenderState.from_dict(overrides or {}, f"{oc}.state", base_state)
            visible = None
            if "visible" in o:
                v = o["visible"]
                if not isinstance(v, list) or len(v) != 2:
                    raise SceneError(f"{oc}.visible: expected [first, last]")
                visible = (_int(v[0], f"{oc}.visible[0]", 0), _int(v[1], f"{oc}.visible[1]", 0))
            objects.append(SceneObject(
                name=str(o.get("name", f"object-{i}")),
                mesh=mesh,
                object_id=_int(o.get("object_id", i), f"{oc}.object_id", 0),
                layer=layer,
                state=state,
                position=_vec(o.get("position", [0, 0, 0]), f"{oc}.position"),
                rotation=_vec(o.get("rotation", [0, 0, 0]), f"{oc}.rotation"),
                scale=_vec(o.get("scale", [1, 1, 1]), f"{oc}.scale"),
                animation=Animation.from_dict(o["animation"], f"{oc}.animation") if "animation" in o else Animation(),
                visible=visible,
                material=material,
                state_overrides=copy.deepcopy(overrides) if material is not None else None,
            ))
        kw["objects"] = objects
        return cls(**kw, base_dir=Path(base_dir) if base_dir else None, source=source)

    def _check(self):
        ids = [o.object_id for o in self.objects]
        if len(set(ids)) != len(ids):
            dup = sorted({i for i in ids if ids.count(i) > 1})[0]
            raise SceneError(f"objects: object_id {dup} used twice (ids must be unique)")
        names = [ly.name for ly in self.layers]
        if len(set(names)) != len(names):
            raise SceneError("layers: layer names must be unique")
        for ly in self.layers:
            if ly.camera is None and self.camera is None:
                raise SceneError(f"layers: {ly.name} has no camera")

    def to_dict(self) -> dict:
        """The JSON form (``Scene.from_dict(s.to_dict())`` renders the same frames)."""
        d: dict[str, Any] = {"name": self.name}
        if self.description:
            d["description"] = self.description
        d.update(frames=self.frames, width=self.width, height=self.height, clear=list(self.clear),
                 seed=self.seed, light={"direction": list(self.light_direction)},
                 camera=self.camera.to_dict())
        if self.cuts:
            d["cuts"] = list(self.cuts)
        d.update(meshes=copy.deepcopy(self.meshes),
                 materials={k: v.to_dict() for k, v in self.materials.items()},
                 layers=[ly.to_dict() for ly in self.layers],
                 objects=[o.to_dict() for o in self.objects])
        return d

    def to_json(self, indent: int | None = 1) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json() + "\n")

    # ------------------------------------------------------------ meshes
    def mesh(self, name: str) -> Mesh:
        """The mesh an object refers to (built once, cached)."""
        m = self._mesh_cache.get(name)
        if m is None:
            spec = self.meshes.get(name, name)
            m = resolve_mesh(spec, self.base_dir, f"meshes.{name}", self.fallbacks)
            self._mesh_cache[name] = m
        return m

    def load_meshes(self) -> dict[str, Mesh]:
        """Build every referenced mesh now (so absent files are known before frame 0)."""
        return {o.mesh: self.mesh(o.mesh) for o in self.objects}

    @cached_property
    def _bounds_corners(self) -> dict:
        out = {}
        for o in self.objects:
            b = self.mesh(o.mesh).bounds()
            out[o.mesh] = np.array([[b[i][0], b[j][1], b[k][2], 1.0]
                                    for i in (0, 1) for j in (0, 1) for k in (0, 1)])
        return out

    def _distance(self, model: np.ndarray, mesh: str, eye: np.ndarray) -> float:
        """Distance from the eye to the object's world-space bounding box (0 inside it)."""
        c = (model @ self._bounds_corners[mesh].T)[:3].T
        lo, hi = c.min(0), c.max(0)
        return float(np.linalg.norm(np.maximum(np.maximum(lo - eye, eye - hi), 0.0)))

    # ------------------------------------------------------------ frames
    def frame(self, index: int, width: int | None = None, height: int | None = None) -> FrameSpec:
        """The draw calls of frame ``index`` in program order."""
        width = int(width or self.width)
        height = int(height or self.height)
        draws: list[Draw] = []
        cams: dict[int, tuple] = {}
        for li, layer in enumerate(self.layers):
            cam = layer.camera or self.camera
            key = id(cam)
            if key not in cams:
                cams[key] = cam.matrices(index, width, height)
            view, proj, eye = cams[key]
            members = [(k, o) for k, o in enumerate(self.objects)
                       if o.layer == layer.name and o.visible_at(index)]
            models = [o.transform(index) for _, o in members]
            order = list(range(len(members)))
            if layer.order in ("back-to-front", "front-to-back") and members:
                # distance from the eye to each object's world bounding box, as an engine's
                # sort would use; the stable sort keeps listed order on ties
                dist = np.array([self._distance(m, o.mesh, eye) for m, (_, o) in zip(models, members)])
                key_ = -dist if layer.order == "back-to-front" else dist
                order = list(np.argsort(key_, kind="stable"))
            elif layer.order == "shuffle" and members:
                # one fixed permutation of the layer's objects (by listed index), every frame
                rng = np.random.default_rng(self.seed * 1000 + li)
                rank = {k: r for r, k in enumerate(rng.permutation(
                    [k for k, o in enumerate(self.objects) if o.layer == layer.name]))}
                order = sorted(range(len(members)), key=lambda j: rank[members[j][0]])
            for j in order:
                _, o = members[j]
                draws.append(Draw(len(draws), o.object_id, o.name, o.mesh, self.mesh(o.mesh),
                                  models[j], view, proj, o.state))
        return FrameSpec(index, width, height, draws, tuple(self.clear), tuple(self.light_direction),
                         cut=index in self.cuts)

    def __repr__(self) -> str:
        return (f"Scene({self.name!r}, {len(self.objects)} objects, {len(self.layers)} layers, "
                f"{self.frames} frames, {self.width}x{self.height})")


# ----------------------------------------------------------------------------- loading
def _scenes_dir() -> Path:
    """``meshes/scenes`` of the installed project (the ``meshes`` package's folder)."""
    try:
        import meshes as _m

        f = getattr(_m, "__file__", None)
        if f:
            p = Path(f).resolve().parent / "scenes"
            if p.is_dir():
                return p
    except ImportError:
        pass
    return Path(__file__).resolve().parent.parent / "meshes" / "scenes"


def shipped_scenes() -> list[str]:
    """Names of the scenes shipped in ``meshes/scenes``."""
    d = _scenes_dir()
    return sorted(p.stem for p in d.glob("*.json")) if d.is_dir() else []


def shipped_scene_path(name: str) -> Path:
    return _scenes_dir() / f"{name}.json"


def load_scene(spec: "str | Path | dict | Scene") -> Scene:
    """A scene from a shipped scene name, a JSON file, a glTF/GLB file, or a dict."""
    if isinstance(spec, Scene):
        return spec
    if isinstance(spec, dict):
        return Scene.from_dict(spec)
    text = str(spec)
    path = Path(text).expanduser()
    if not path.is_file():
        shipped = shipped_scene_path(text)
        if shipped.is_file():
            path = shipped
        else:
            known = ", ".join(shipped_scenes()) or "none"
            raise SceneError(f"{text}: no such scene file or shipped scene (shipped: {known})")
    if path.suffix.lower() in (".glb", ".gltf"):
        return load_gltf_scene(path)
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise SceneError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    except UnicodeDecodeError:
        raise SceneError(f"{path}: not a text (JSON) scene file") from None
    try:
        return Scene.from_dict(data, base_dir=path.parent, source=str(path))
    except SceneError as exc:
        raise SceneError(f"{path.name}: {exc}") from None


_GLTF_PALETTE = [(0.85, 0.35, 0.3), (0.3, 0.6, 0.85), (0.45, 0.75, 0.4), (0.9, 0.75, 0.35),
                 (0.7, 0.5, 0.8), (0.6, 0.6, 0.6)]


def load_gltf_scene(path: "str | Path", frames: int = 60, camera: Camera | dict | None = None,
                    colour: str = "lit") -> Scene:
    """A scene from a glTF/GLB file: one object per mesh node (world transform baked into
    the model matrix), lit flat colours, and an orbit camera around the bounds unless
    ``camera`` is given."""
    import trimesh

    path = Path(path)
    try:
        sc = trimesh.load(str(path), force="scene", process=False, maintain_order=True)
    except Exception as exc:  # noqa: BLE001
        raise SceneError(f"{path}: cannot load glTF ({exc})") from None
    meshes: dict[str, Any] = {}
    objects: list[SceneObject] = []
    lo = np.full(3, np.inf)
    hi = np.full(3, -np.inf)
    for i, node in enumerate(sc.graph.nodes_geometry):
        tf, gname = sc.graph[node]
        g = sc.geometry[gname]
        if not hasattr(g, "faces") or len(g.faces) == 0:
            continue
        tf = np.asarray(tf, np.float64)
        p = np.asarray(g.vertices, np.float64) @ tf[:3, :3].T + tf[:3, 3]
        lo, hi = np.minimum(lo, p.min(0)), np.maximum(hi, p.max(0))
        mname = f"{path.stem}:{gname}"
        # the mesh is the file's geometry in object space; the node transform becomes the
        # object's placement (translation, Euler rotation, scale)
        meshes[mname] = {"file": str(path.resolve()), "gltf_geometry": str(gname),
                         "fallback": {"shape": "box"}}
        pos, rot, scl = _decompose(tf)
        k = len(objects)
        state = RenderState(lit=True, colour_kind=colour, base=_GLTF_PALETTE[k % len(_GLTF_PALETTE)],
                            cull="none")
        objects.append(SceneObject(name=str(node), mesh=mname, object_id=k, state=state,
                                   position=pos, rotation=rot, scale=scl))
    if not objects:
        raise SceneError(f"{path}: no triangle meshes in the glTF scene")
    centre = (lo + hi) / 2
    radius = float(np.linalg.norm(hi - lo)) or 1.0
    if camera is None:
        cam = Camera(near=radius * 0.02, far=radius * 10,
                     orbit={"center": tuple(centre), "radius": radius * 1.1, "height": radius * 0.25,
                            "start": 0.0, "speed": 360.0 / max(frames, 1)})
    elif isinstance(camera, dict):
        cam = Camera.from_dict(camera)
    else:
        cam = camera
    return Scene(name=path.stem, objects=objects, meshes=meshes, camera=cam, frames=frames,
                 clear=(0.15, 0.15, 0.18), source=str(path), base_dir=path.parent)


def _decompose(tf: np.ndarray) -> tuple[tuple, tuple, tuple]:
    """Translation, Euler angles (degrees, Rz*Ry*Rx) and scale of an affine matrix (no shear)."""
    t = tuple(float(x) for x in tf[:3, 3])
    m = tf[:3, :3]
    s = np.linalg.norm(m, axis=0)
    s[s == 0] = 1.0
    r = m / s
    if np.linalg.det(r) < 0:
        s[0] = -s[0]
        r[:, 0] = -r[:, 0]
    ry = math.asin(max(-1.0, min(1.0, -r[2, 0])))
    if abs(math.cos(ry)) > 1e-9:
        rx = math.atan2(r[2, 1], r[2, 2])
        rz = math.atan2(r[1, 0], r[0, 0])
    else:
        rx = math.atan2(-r[1, 2], r[1, 1])
        rz = 0.0
    return t, tuple(math.degrees(a) for a in (rx, ry, rz)), tuple(float(x) for x in s)
