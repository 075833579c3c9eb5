"""meshopt_batch.geometry.mesh_transform: positions, normals, tangents and winding baked together."""

import numpy as np
import pytest

from meshopt_batch.geometry.mesh_record import Mesh
from meshopt_batch.geometry.mesh_transform import transform_mesh
from meshopt_batch.support.errors import MeshError


def _quad():
    p = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], np.float32)
    n = np.tile([0, 0, 1], (4, 1)).astype(np.float32)
    t = np.tile([1, 0, 0, 1], (4, 1)).astype(np.float32)
    return Mesh(p, [[0, 1, 2], [0, 2, 3]], attributes={"normal": n, "tangent": t})


def _bitangent(m):
    n, t = m.attributes["normal"][0].astype(float), m.attributes["tangent"][0].astype(float)
    return t[3] * np.cross(n, t[:3])


def test_translation_and_scale():
    m = np.diag([2.0, 3.0, 4.0, 1.0])
    m[:3, 3] = [1, 2, 3]
    out = transform_mesh(_quad(), m)
    np.testing.assert_array_equal(out.positions[2], [3, 5, 3])
    np.testing.assert_array_equal(out.attributes["normal"][0], [0, 0, 1])
    np.testing.assert_array_equal(out.triangles, [[0, 1, 2], [0, 2, 3]])


def test_mirror_reverses_winding_and_handedness():
    mirror = np.diag([-1.0, 1.0, 1.0, 1.0])
    src = _quad()
    out = transform_mesh(src, mirror)
    np.testing.assert_array_equal(out.triangles, [[2, 1, 0], [3, 2, 0]])
    np.testing.assert_array_equal(out.attributes["tangent"][0], [-1, 0, 0, -1])
    # the bitangent follows the mirrored surface: mirror(b) == b'
    np.testing.assert_allclose(_bitangent(out), np.diag([-1, 1, 1]) @ _bitangent(src))
    kept = transform_mesh(src, mirror, keep_facing=False)
    np.testing.assert_array_equal(kept.triangles, src.triangles)


def test_bad_matrices_are_refused():
    with pytest.raises(MeshError, match="4x4"):
        transform_mesh(_quad(), np.eye(3))
    with pytest.raises(MeshError, match="non-finite"):
        transform_mesh(_quad(), np.full((4, 4), np.nan))
    with pytest.raises(MeshError, match="singular"):
        transform_mesh(_quad(), np.diag([0.0, 1, 1, 1]))
