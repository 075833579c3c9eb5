"""What several format readers and writers share: refusals, polygon fans, texture-coordinate
conventions.

References
----------
.. [1] Khronos, glTF 2.0 specification, sec. 3.7.2.1: texture coordinates have their origin
   at the top left of the image; OBJ and PLY place it at the bottom left.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from ..geometry.mesh_record import Mesh, concatenate

__all__ = [
    "UV_TOP_LEFT",
    "Refusal",
    "bottom_left_attributes",
    "check_indices",
    "fan_triangles",
    "flip_uv",
    "is_uv_key",
    "one_line",
    "one_mesh",
    "polygons_to_triangles",
]

#: ``meta["uv_origin"]`` of meshes whose texture coordinates start at the top left (glTF).
UV_TOP_LEFT = "top-left"


class Refusal(Exception):
    """Raised inside a reader or writer with a message; the public functions turn it into
    ``MeshError("<file>: <message>")``."""


def one_line(text: object) -> str:
    """``text`` with every run of whitespace (newlines included) made one space."""
    return " ".join(str(text).split())


def fan_triangles(sizes: np.ndarray, corners: np.ndarray) -> np.ndarray:
    """Fan-triangulate polygons in place: ``(v0, v1, v2), (v0, v2, v3), ...``.

    ``sizes`` (each >= 3) are the corner counts of consecutive polygons over the flat
    ``corners``; returns ``(sum(sizes - 2), 3)`` corners, polygon by polygon.
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    ntri = sizes - 2
    first = np.repeat(starts, ntri)
    k = np.arange(int(ntri.sum()), dtype=np.int64) - np.repeat(np.cumsum(ntri) - ntri, ntri) + 1
    corners = np.asarray(corners)
    return np.stack([corners[first], corners[first + k], corners[first + k + 1]], axis=1)


def polygons_to_triangles(sizes: np.ndarray, corners: np.ndarray, path: Path) -> np.ndarray:
    """Triangles of a polygon list: faces with fewer than 3 corners dropped and larger
    polygons fan-triangulated, each with a warning naming ``path``."""
    sizes = np.asarray(sizes, dtype=np.int64)
    small = sizes < 3
    if small.any():
        if small.all():
            raise Refusal(f"no triangles: all {sizes.size} faces have fewer than 3 corners (lines/points only)")
        warnings.warn(f"{path}: {int(small.sum())} face(s) with fewer than 3 corners ignored", stacklevel=4)
        keep = np.repeat(~small, sizes)
        corners = np.asarray(corners)[keep]
        sizes = sizes[~small]
    if sizes.size and (sizes == 3).all():
        return np.asarray(corners).reshape(-1, 3)
    if sizes.size:
        warnings.warn(
            f"{path}: {int((sizes > 3).sum())} polygon(s) with more than 3 corners were "
            f"fan-triangulated (v0,v1,v2),(v0,v2,v3),...",
            stacklevel=4,
        )
    return fan_triangles(sizes, corners)


def check_indices(indices: np.ndarray, vertex_count: int, what: str = "vertex", *, first: int = 0) -> None:
    """Refuse an index below 0 or at/above ``vertex_count``; the message gives it as the file
    wrote it, counting from ``first`` (OBJ counts from 1)."""
    if indices.size == 0:
        return
    lo, hi = int(indices.min()), int(indices.max())
    if lo < 0 or hi >= vertex_count:
        bad = lo if lo < 0 else hi
        counted = "" if first == 0 else f", numbered from {first}"
        plural = "vertices" if what == "vertex" else f"{what}s"
        raise Refusal(f"{what} index {bad + first} out of range (the file has {vertex_count} {plural}{counted})")


def is_uv_key(key: str) -> bool:
    """Whether an attribute name is a texture-coordinate set (``uv``, ``uv1``, ...)."""
    return re.fullmatch(r"uv\d*", key) is not None


def flip_uv(attributes: dict[str, np.ndarray], keys: Iterable[str]) -> dict[str, np.ndarray]:
    """``attributes`` with ``v`` replaced by ``1 - v`` in the texture coordinates ``keys``
    (integer ones become float32)."""
    out = dict(attributes)
    for k in keys:
        uv = np.array(out[k], dtype=np.float32 if out[k].dtype.kind != "f" else out[k].dtype)
        if uv.ndim == 2 and uv.shape[1] >= 2:
            uv[:, 1] = 1 - uv[:, 1]
            out[k] = uv
    return out


def bottom_left_attributes(mesh: Mesh) -> dict[str, np.ndarray]:
    """The mesh's attributes with texture coordinates in OBJ/PLY convention (origin bottom
    left, [1]_)."""
    if mesh.meta.get("uv_origin") == UV_TOP_LEFT:
        return flip_uv(dict(mesh.attributes), [k for k in mesh.attributes if is_uv_key(k)])
    return dict(mesh.attributes)


def one_mesh(meshes: list[Mesh]) -> Mesh:
    """The meshes concatenated, keeping the texture-coordinate convention of the first."""
    if len(meshes) == 1:
        return meshes[0]
    whole = concatenate(meshes)
    if meshes[0].meta.get("uv_origin"):
        whole = whole.replace(meta=dict(whole.meta, uv_origin=meshes[0].meta["uv_origin"]))
    return whole
