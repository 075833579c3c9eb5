"""Moving a mesh by an affine matrix: positions, normals, tangents and winding together.

One helper for every place that bakes a transform into vertex data (a glTF node's world
matrix, a static batch's placement), so positions and their normals are always moved the
same way.

References
----------
.. [1] Khronos, glTF 2.0 specification, sec. 3.7.4 (a node transform with a negative
   determinant reverses the winding of the primitives it moves) and sec. 3.7.2.1 (normals and
   tangents are unit vectors; tangent ``w`` is the handedness).
"""

from __future__ import annotations

import numpy as np

from ..support.errors import MeshError
from ..support.limits import FLOAT32_MAX
from .mesh_record import ATTR_NORMAL, ATTR_TANGENT, Mesh

__all__ = ["transform_directions", "transform_mesh", "transform_normals", "transform_points"]


def _affine(matrix) -> np.ndarray:
    m = np.asarray(matrix, dtype=np.float64)
    if m.shape != (4, 4):
        raise MeshError(f"transform must be a 4x4 matrix, got shape {m.shape}")
    if not np.all(np.isfinite(m)):
        raise MeshError("transform has a non-finite entry")
    return m


def _unit(v: np.ndarray) -> np.ndarray:
    length = np.linalg.norm(v, axis=1, keepdims=True)
    return v / np.where(length > 0, length, 1.0)


def transform_points(points, matrix) -> np.ndarray:
    """``(N, 3)`` points moved by the 4x4 affine ``matrix`` (float64 result)."""
    m = _affine(matrix)
    return np.asarray(points, np.float64) @ m[:3, :3].T + m[:3, 3]


def transform_normals(normals, matrix) -> np.ndarray:
    """``(N, 3)`` unit normals moved by the inverse transpose of ``matrix``'s linear part,
    renormalised (zero vectors stay zero); float64 result."""
    lin = _affine(matrix)[:3, :3]
    if abs(np.linalg.det(lin)) < 1e-300:
        raise MeshError("transform is singular (a zero scale): normals cannot follow it")
    return _unit(np.asarray(normals, np.float64) @ np.linalg.inv(lin))


def transform_directions(directions, matrix) -> np.ndarray:
    """``(N, 3)`` tangent directions moved by ``matrix``'s linear part, renormalised."""
    lin = _affine(matrix)[:3, :3]
    return _unit(np.asarray(directions, np.float64) @ lin.T)


def transform_mesh(mesh: Mesh, matrix, *, keep_facing: bool = True) -> Mesh:
    """``mesh`` with its vertices baked through the affine ``matrix``.

    Parameters
    ----------
    mesh : Mesh
    matrix : (4, 4) array_like
        Affine transform (column vectors: ``p' = M @ [p, 1]``).
    keep_facing : bool, keyword-only
        When the matrix mirrors (negative determinant), reverse every triangle's winding so
        front faces stay front faces ([1]_ sec. 3.7.4).  Triangle order is unchanged either way.

    Returns
    -------
    Mesh
        float32 positions; float ``normal`` through the inverse transpose and ``tangent``
        (xyz through the linear part) renormalised; under a mirror the tangent's handedness
        ``w`` changes sign, since the bitangent ``w * (n x t)`` must follow the mirrored
        surface; every other attribute, the name and the index type unchanged.
    """
    m = _affine(matrix)
    attrs = dict(mesh.attributes)
    normal = attrs.get(ATTR_NORMAL)
    if normal is not None and normal.dtype.kind == "f":
        attrs[ATTR_NORMAL] = transform_normals(normal, m).astype(np.float32)
    mirrored = np.linalg.det(m[:3, :3]) < 0
    tangent = attrs.get(ATTR_TANGENT)
    if tangent is not None and tangent.dtype.kind == "f" and tangent.shape[1:] == (4,):
        t = tangent.astype(np.float64)
        xyz = transform_directions(t[:, :3], m)
        handedness = -t[:, 3:] if mirrored else t[:, 3:]
        attrs[ATTR_TANGENT] = np.concatenate([xyz, handedness], axis=1).astype(np.float32)
    triangles = mesh.triangles
    if keep_facing and mirrored:
        triangles = np.ascontiguousarray(triangles[:, ::-1])
    with np.errstate(over="ignore", invalid="ignore"):
        positions = transform_points(mesh.positions, m)
    if positions.size and not np.abs(positions).max() <= FLOAT32_MAX:
        raise MeshError("the transform takes vertex positions out of float32's range")
    return mesh.replace(positions=positions.astype(np.float32), triangles=triangles, attributes=attrs)
