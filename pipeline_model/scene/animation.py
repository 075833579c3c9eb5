"""Placing and animating scene objects: the model matrix, keyframes and :class:`Animation`.

An object's placement is a position, Euler angles in degrees and a scale; its model matrix is
``T * Rz * Ry * Rx * S`` (rotations about the static x, then y, then z axis).  Animation adds
keyframes (interpolated linearly, clamped at both ends), then velocity, spin and oscillation
per frame on top.  The rotation and the inverse (a matrix back to a placement, for glTF nodes)
come from :mod:`trimesh.transformations` (axes ``"sxyz"``).

References
----------
.. [1] C. Gohlke, ``transformations.py`` (shipped as :mod:`trimesh.transformations`):
   ``euler_matrix`` and ``decompose_matrix`` with the static ``sxyz`` axis convention.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from trimesh import transformations

from .schema import SceneError, check_keys, number, vector, where

__all__ = ["Animation", "euler_matrix", "interpolate_keys", "model_matrix", "placement_from_matrix"]


def euler_matrix(deg) -> np.ndarray:
    """``Rz * Ry * Rx`` for angles ``(rx, ry, rz)`` in degrees (3x3, float64)."""
    rx, ry, rz = (math.radians(a) for a in deg)
    # + 0.0 turns the -0.0 entries trimesh writes into +0.0, as the products of the axis
    # matrices give (the same bits in every later product)
    return transformations.euler_matrix(rx, ry, rz, "sxyz")[:3, :3] + 0.0


def model_matrix(position, rotation, scale) -> np.ndarray:
    """The object-to-world matrix ``T * Rz * Ry * Rx * S`` (4x4, float64)."""
    m = np.eye(4)
    m[:3, :3] = euler_matrix(rotation) * np.asarray(scale, np.float64)[None, :]
    m[:3, 3] = position
    return m


def placement_from_matrix(matrix) -> tuple[tuple, tuple, tuple]:
    """Position, Euler angles (degrees) and scale of an affine 4x4 matrix: the inverse of
    :func:`model_matrix` (to rounding) for a matrix without shear.

    A mirroring matrix gives three negative scales.  Shear, which a placement cannot hold,
    is dropped.  A singular matrix (glTF hides a node by scaling it to zero) has no rotation
    to recover: it keeps its position and the lengths of its axes, with no rotation.
    """
    m = np.asarray(matrix, np.float64)
    position = tuple(float(x) for x in m[:3, 3])
    if np.linalg.det(m[:3, :3]) == 0.0:
        lengths = np.linalg.norm(m[:3, :3], axis=0)
        return position, (0.0, 0.0, 0.0), tuple(float(x) for x in lengths)
    scale, _shear, angles, _translate, _perspective = transformations.decompose_matrix(m)
    return (position, tuple(math.degrees(float(a)) for a in angles),
            tuple(float(x) for x in scale))


def interpolate_keys(keys: list[dict], frame: float, name: str, default):
    """Linear interpolation of ``name`` over keyframes (sorted by frame), clamped at both ends;
    ``default`` when no keyframe holds ``name``."""
    pts = [(k["frame"], k[name]) for k in keys if name in k]
    if not pts:
        return default
    if frame <= pts[0][0]:
        return pts[0][1]
    if frame >= pts[-1][0]:
        return pts[-1][1]
    for (f0, v0), (f1, v1) in zip(pts, pts[1:], strict=False):
        if f0 <= frame <= f1:
            t = (frame - f0) / (f1 - f0) if f1 > f0 else 1.0
            if isinstance(v0, tuple):
                return tuple(a + (b - a) * t for a, b in zip(v0, v1, strict=True))
            return v0 + (v1 - v0) * t
    return pts[-1][1]


@dataclass(frozen=True)
class Animation:
    """How an object moves: keyframes, then per-frame velocity, spin and oscillation.

    Attributes
    ----------
    velocity : tuple of float
        World units added to the position per frame.
    spin : tuple of float
        Degrees added to the Euler rotation per frame.
    keyframes : tuple of dict
        ``{"frame", "position", "rotation", "scale"}`` entries by frame, interpolated.
    oscillate : dict or None
        ``{"axis", "amplitude", "period", "phase"}``: a sine offset along ``axis``.
    """

    velocity: tuple = (0.0, 0.0, 0.0)
    spin: tuple = (0.0, 0.0, 0.0)
    keyframes: tuple = ()
    oscillate: dict | None = None

    @classmethod
    def from_dict(cls, d: dict, ctx: str) -> Animation:
        """An animation from its scene-JSON form, checked.

        Parameters
        ----------
        d : dict
            The ``animation`` object of a scene file.
        ctx : str
            Where it is in the file, for messages.

        Returns
        -------
        Animation
            The animation.

        Raises
        ------
        SceneError
            An unknown key or a value of the wrong type, named by its place.
        """
        check_keys(d, ("velocity", "spin", "keyframes", "oscillate"), ctx)
        kw: dict[str, Any] = {}
        for k in ("velocity", "spin"):
            if k in d:
                kw[k] = vector(d[k], where(ctx, k))
        if "keyframes" in d:
            if not isinstance(d["keyframes"], list):
                raise SceneError(f"{ctx}.keyframes: expected a list")
            keys = []
            for i, k in enumerate(d["keyframes"]):
                kc = where(where(ctx, "keyframes"), i)
                check_keys(k, ("frame", "position", "rotation", "scale"), kc)
                if "frame" not in k:
                    raise SceneError(f"{kc}: missing 'frame'")
                e: dict[str, Any] = {"frame": number(k["frame"], where(kc, "frame"), 0.0)}
                for q in ("position", "rotation", "scale"):
                    if q in k:
                        e[q] = vector(k[q], where(kc, q))
                keys.append(e)
            kw["keyframes"] = tuple(sorted(keys, key=lambda e: e["frame"]))
        if "oscillate" in d:
            oc = where(ctx, "oscillate")
            o = check_keys(d["oscillate"], ("axis", "amplitude", "period", "phase"), oc)
            kw["oscillate"] = {
                "axis": vector(o.get("axis", [0, 1, 0]), where(oc, "axis")),
                "amplitude": number(o.get("amplitude", 1.0), where(oc, "amplitude")),
                "period": number(o.get("period", 60.0), where(oc, "period"), 1e-6),
                "phase": number(o.get("phase", 0.0), where(oc, "phase")),
            }
        return cls(**kw)

    def to_dict(self) -> dict:
        """The scene-JSON form (what is not the default only).

        Returns
        -------
        dict
            The ``animation`` object.
        """
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
        """True when nothing moves (no velocity, spin, keyframes or oscillation)."""
        return not (any(self.velocity) or any(self.spin) or self.keyframes or self.oscillate)

    def placement(self, frame: int, position, rotation, scale) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Where an object placed at a rest pose is at one frame.

        Parameters
        ----------
        frame : int
            The frame.
        position, rotation, scale : array_like, shape (3,)
            The rest pose (rotation as Euler angles in degrees).

        Returns
        -------
        position : numpy.ndarray
            The position at ``frame``.
        rotation : numpy.ndarray
            The Euler rotation (degrees) at ``frame``.
        scale : numpy.ndarray
            The scale at ``frame``.
        """
        keys = list(self.keyframes)
        pos = np.asarray(interpolate_keys(keys, frame, "position", position), np.float64)
        rot = np.asarray(interpolate_keys(keys, frame, "rotation", rotation), np.float64)
        scl = np.asarray(interpolate_keys(keys, frame, "scale", scale), np.float64)
        pos = pos + np.asarray(self.velocity) * frame
        rot = rot + np.asarray(self.spin) * frame
        if self.oscillate:
            o = self.oscillate
            pos = pos + np.asarray(o["axis"]) * o["amplitude"] * math.sin(
                2 * math.pi * (frame / o["period"]) + math.radians(o["phase"]))
        return pos, rot, scl
