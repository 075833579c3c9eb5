"""Cameras: view and projection matrices and a camera's path over the frames.

The matrices follow OpenGL's conventions: eye space looks down ``-Z``, clip space has
``z`` in ``[-w, w]``; the ``screen`` projection maps pixels (``y`` down) and a window depth in
``[0, 1]`` straight to clip space, for 2D layers and HUDs.

The matrices are written out: :func:`trimesh.transformations.clip_matrix` uses other signs
(a frustum on the ``+Z`` side), and trimesh has no view matrix.

References
----------
.. [1] Khronos, OpenGL 2.1 reference pages: ``gluLookAt``, ``gluPerspective`` and ``glOrtho``
   (the matrices these functions build).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .animation import interpolate_keys
from .schema import PROJECTIONS, SceneError, check_keys, choice, number, vector, where

__all__ = ["Camera", "look_at", "orthographic", "perspective", "screen_projection"]


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


@dataclass(frozen=True)
class Camera:
    """A camera and its path over the frames (``CAMERA`` in the scene format).

    Attributes
    ----------
    projection : str
        ``perspective``, ``orthographic`` or ``screen`` (2D: positions in pixels).
    fovy : float
        Vertical field of view in degrees (perspective).
    near, far : float
        Clip plane distances.
    height : float
        The view's height in world units (orthographic).
    eye, target, up : tuple of float
        Where the camera is, what it looks at, and its up direction.
    path : tuple of dict
        Keyframes ``{"frame", "eye", "target", "fovy", "height"}``, interpolated.
    orbit : dict or None
        ``{"center", "radius", "height", "start", "speed"}``: circle around a point.
    velocity : tuple of float
        World units the camera and its target move per frame.
    size : tuple or None
        A screen projection's logical pixel size (None: the screen's).
    """

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
    def from_dict(cls, d: dict, ctx: str = "camera") -> Camera:
        """A camera from its scene-JSON form, checked.

        Parameters
        ----------
        d : dict
            The ``camera`` object of a scene file.
        ctx : str
            Where it is in the file, for messages.

        Returns
        -------
        Camera
            The camera.

        Raises
        ------
        SceneError
            An unknown key, a value of the wrong type or range, named by its place.
        """
        check_keys(d, cls._KEYS, ctx)
        kw: dict[str, Any] = {}
        if "projection" in d:
            kw["projection"] = choice(d["projection"], where(ctx, "projection"), PROJECTIONS)
        if "fovy" in d:
            kw["fovy"] = number(d["fovy"], where(ctx, "fovy"), 1.0, 179.0)
        for k in ("near", "far", "height"):
            if k in d:
                kw[k] = number(d[k], where(ctx, k))
        for k in ("eye", "target", "up", "velocity"):
            if k in d:
                kw[k] = vector(d[k], where(ctx, k))
        if "path" in d:
            if not isinstance(d["path"], list):
                raise SceneError(f"{ctx}.path: expected a list of keyframes")
            keys = []
            for i, k in enumerate(d["path"]):
                kc = where(where(ctx, "path"), i)
                check_keys(k, ("frame", "eye", "target", "fovy", "height"), kc)
                if "frame" not in k:
                    raise SceneError(f"{kc}: missing 'frame'")
                e = {"frame": number(k["frame"], where(kc, "frame"), 0.0)}
                for q in ("eye", "target"):
                    if q in k:
                        e[q] = vector(k[q], where(kc, q))
                for q in ("fovy", "height"):
                    if q in k:
                        e[q] = number(k[q], where(kc, q))
                keys.append(e)
            kw["path"] = tuple(sorted(keys, key=lambda e: e["frame"]))
        if "orbit" in d:
            oc = where(ctx, "orbit")
            o = check_keys(d["orbit"], ("center", "radius", "height", "start", "speed"), oc)
            kw["orbit"] = {
                "center": vector(o.get("center", [0, 0, 0]), where(oc, "center")),
                "radius": number(o.get("radius", 20.0), where(oc, "radius"), 0.0),
                "height": number(o.get("height", 5.0), where(oc, "height")),
                "start": number(o.get("start", 0.0), where(oc, "start")),
                "speed": number(o.get("speed", 1.0), where(oc, "speed")),
            }
        if "size" in d:
            sz = d["size"]
            if not isinstance(sz, list) or len(sz) != 2:
                raise SceneError(f"{ctx}.size: expected [width, height]")
            kw["size"] = (number(sz[0], f"{ctx}.size[0]", 1.0), number(sz[1], f"{ctx}.size[1]", 1.0))
        cam = cls(**kw)
        if cam.projection != "screen":
            if cam.near <= 0 or cam.far <= cam.near:
                raise SceneError(f"{ctx}: need 0 < near < far, got near={cam.near}, far={cam.far}")
        return cam

    def to_dict(self) -> dict:
        """The scene-JSON form.

        Returns
        -------
        dict
            The ``camera`` object.
        """
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
        """Where the camera is and what it sees at one frame.

        Parameters
        ----------
        frame : int
            The frame.

        Returns
        -------
        eye : numpy.ndarray
            The camera's position.
        target : numpy.ndarray
            The point it looks at.
        fovy : float
            The vertical field of view in degrees.
        height : float
            The orthographic view height.
        """
        eye = interpolate_keys(list(self.path), frame, "eye", self.eye)
        target = interpolate_keys(list(self.path), frame, "target", self.target)
        fovy = interpolate_keys(list(self.path), frame, "fovy", self.fovy)
        height = interpolate_keys(list(self.path), frame, "height", self.height)
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
        """The view and projection matrices at one frame.

        Parameters
        ----------
        frame : int
            The frame.
        width, height : int
            The screen's size in pixels.

        Returns
        -------
        view : numpy.ndarray
            ``(4, 4)`` view matrix.
        projection : numpy.ndarray
            ``(4, 4)`` projection matrix.
        eye : numpy.ndarray
            The camera's position.
        """
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
