"""Per-meshlet culling bounds: bounding sphere and normal cone.

Bounding sphere (Ritter 1990): start from the pair of extreme vertices along x, y and z that
lies farthest apart, then grow the sphere just enough to take in each vertex outside it.  It
contains every vertex of the meshlet (at most about 5 % larger than the smallest sphere).

Normal cone: the axis ``a`` is the normalised mean of the triangles' unit normals, and
``m = min_i n_i . a`` the cosine of the widest normal's angle ``theta`` to it.  Seen from a
camera ``c``, every triangle faces away when the direction from ``c`` to the cone apex ``p``
lies within ``90 deg - theta`` of the axis::

    dot(normalize(p - c), a) >= cutoff,        cutoff = sin(theta) = sqrt(1 - m^2)

(the test meshoptimizer documents for ``meshopt_Bounds``).  It is conservative when every
triangle plane has the apex behind or on it: ``p = s - a t`` with ``s`` the sphere centre and
``t = max_i ((s - q_i) . n_i) / (a . n_i)`` (``q_i`` a corner of triangle ``i``).  Then
``c = p - r u`` with ``r > 0`` and ``u . a >= sin(theta)`` gives ``u . n_i >= 0`` and
``(c - q_i) . n_i = (p - q_i) . n_i - r u . n_i <= 0`` for every ``i``.  When the normals spread
over a half-space or more (``m <= 0``), or the meshlet has no non-degenerate triangle, the
cone cannot cull: axis ``(0, 0, 0)`` and cutoff 1, so the test never passes.

References
----------
.. [1] J. Ritter, "An efficient bounding sphere", Graphics Gems, 1990, pp. 301-303.
.. [2] A. Kapoulkine, meshoptimizer, ``meshopt_computeMeshletBounds`` (the cone test's form).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from .meshlet_result import MeshletResult

__all__ = ["MeshletBounds", "meshlet_bounds", "cone_culled", "frustum_culled"]


@dataclass(frozen=True, eq=False)
class MeshletBounds:
    """Bounds of M meshlets, as separate arrays (float32, as a mesh shader reads them).

    Attributes
    ----------
    center : (M, 3)
        Centre of each meshlet's bounding sphere.
    radius : (M,)
        Radius of each bounding sphere.
    cone_apex : (M, 3)
        Apex of each meshlet's normal cone.
    cone_axis : (M, 3)
        Unit axis, or zero for a meshlet whose cone cannot cull.
    cone_cutoff : (M,)
        Cull when ``dot(normalize(cone_apex - camera), cone_axis) >= cone_cutoff``.
    """

    center: np.ndarray
    radius: np.ndarray
    cone_apex: np.ndarray
    cone_axis: np.ndarray
    cone_cutoff: np.ndarray

    def as_arrays(self, prefix: str = "") -> dict:
        """The five arrays by name (for an ``.npz``).

        Parameters
        ----------
        prefix : str
            Put before each name.

        Returns
        -------
        dict
            ``prefix + name`` to array.
        """
        return {f"{prefix}{name}": getattr(self, name) for name in
                ("center", "radius", "cone_apex", "cone_axis", "cone_cutoff")}


@njit(cache=True)
def _sphere(pos, verts, out_c):
    n = verts.shape[0]
    best_d = -1.0
    ia = verts[0]
    ib = verts[0]
    for axis in range(3):
        lo = verts[0]
        hi = verts[0]
        for j in range(n):
            v = verts[j]
            if pos[v, axis] < pos[lo, axis]:
                lo = v
            if pos[v, axis] > pos[hi, axis]:
                hi = v
        d = 0.0
        for k in range(3):
            d += (pos[hi, k] - pos[lo, k]) ** 2
        if d > best_d:
            best_d = d
            ia = lo
            ib = hi
    for k in range(3):
        out_c[k] = 0.5 * (pos[ia, k] + pos[ib, k])
    r = 0.5 * np.sqrt(best_d)
    for j in range(n):
        v = verts[j]
        d2 = 0.0
        for k in range(3):
            d2 += (pos[v, k] - out_c[k]) ** 2
        if d2 > r * r:
            d = np.sqrt(d2)
            new_r = 0.5 * (r + d)
            shift = (new_r - r) / d
            for k in range(3):
                out_c[k] += (pos[v, k] - out_c[k]) * shift
            r = new_r
    # float rounding: make sure every vertex is inside
    for j in range(n):
        v = verts[j]
        d2 = 0.0
        for k in range(3):
            d2 += (pos[v, k] - out_c[k]) ** 2
        if d2 > r * r:
            r = np.sqrt(d2)
    return r


@njit(cache=True)
def _bounds(pos, meshlets, mverts, mtris, center, radius, apex, axis, cutoff):
    normals = np.empty((512, 3))
    corner = np.empty((512, 3))
    c = np.empty(3)
    for m in range(meshlets.shape[0]):
        v0 = meshlets[m, 0]
        t0 = meshlets[m, 1]
        vc = meshlets[m, 2]
        tc = meshlets[m, 3]
        radius[m] = _sphere(pos, mverts[v0:v0 + vc], c)
        for k in range(3):
            center[m, k] = c[k]
        if normals.shape[0] < tc:
            normals = np.empty((tc, 3))
            corner = np.empty((tc, 3))
        ax = 0.0
        ay = 0.0
        az = 0.0
        nt = 0
        for i in range(tc):
            a = mverts[v0 + mtris[t0 + 3 * i]]
            b = mverts[v0 + mtris[t0 + 3 * i + 1]]
            cc = mverts[v0 + mtris[t0 + 3 * i + 2]]
            ux = pos[b, 0] - pos[a, 0]
            uy = pos[b, 1] - pos[a, 1]
            uz = pos[b, 2] - pos[a, 2]
            wx = pos[cc, 0] - pos[a, 0]
            wy = pos[cc, 1] - pos[a, 1]
            wz = pos[cc, 2] - pos[a, 2]
            nx = uy * wz - uz * wy
            ny = uz * wx - ux * wz
            nz = ux * wy - uy * wx
            length = np.sqrt(nx * nx + ny * ny + nz * nz)
            if length == 0.0:
                continue
            normals[nt, 0] = nx / length
            normals[nt, 1] = ny / length
            normals[nt, 2] = nz / length
            for k in range(3):
                corner[nt, k] = pos[a, k]
            ax += normals[nt, 0]
            ay += normals[nt, 1]
            az += normals[nt, 2]
            nt += 1
        alen = np.sqrt(ax * ax + ay * ay + az * az)
        mindp = -1.0
        if nt > 0 and alen > 0.0:
            ax /= alen
            ay /= alen
            az /= alen
            mindp = 1.0
            for i in range(nt):
                dp = normals[i, 0] * ax + normals[i, 1] * ay + normals[i, 2] * az
                mindp = min(mindp, dp)
        if mindp <= 0.0:
            for k in range(3):
                apex[m, k] = c[k]
                axis[m, k] = 0.0
            cutoff[m] = 1.0
            continue
        t = -np.inf
        for i in range(nt):
            dn = normals[i, 0] * ax + normals[i, 1] * ay + normals[i, 2] * az
            num = ((c[0] - corner[i, 0]) * normals[i, 0] + (c[1] - corner[i, 1]) * normals[i, 1]
                   + (c[2] - corner[i, 2]) * normals[i, 2])
            t = max(t, num / dn)
        apex[m, 0] = c[0] - ax * t
        apex[m, 1] = c[1] - ay * t
        apex[m, 2] = c[2] - az * t
        axis[m, 0] = ax
        axis[m, 1] = ay
        axis[m, 2] = az
        cutoff[m] = np.sqrt(max(0.0, 1.0 - mindp * mindp))


def meshlet_bounds(result: MeshletResult, positions) -> MeshletBounds:
    """Bounding sphere and normal cone of every meshlet (see the module docstring).

    Parameters
    ----------
    result : MeshletResult
        The meshlets.
    positions : (V, 3) float array
        The vertex positions the meshlets index.

    Returns
    -------
    MeshletBounds
        Computed in float64, stored as float32; the stored cutoff is rounded up and the
        radius out, so that the float32 tests stay conservative.
    """
    pos = np.ascontiguousarray(positions, np.float64)
    m = result.meshlet_count
    center = np.zeros((m, 3))
    radius = np.zeros(m)
    apex = np.zeros((m, 3))
    axis = np.zeros((m, 3))
    cutoff = np.zeros(m)
    _bounds(pos, result.meshlets.astype(np.int64), result.meshlet_vertices.astype(np.int64),
            result.meshlet_triangles.astype(np.int64), center, radius, apex, axis, cutoff)
    radius32 = np.nextafter(radius.astype(np.float32), np.float32(np.inf))
    cutoff32 = np.minimum(np.nextafter(cutoff.astype(np.float32), np.float32(np.inf)), np.float32(1.0))
    return MeshletBounds(center.astype(np.float32), radius32, apex.astype(np.float32),
                         axis.astype(np.float32), cutoff32)


def cone_culled(bounds: MeshletBounds, camera) -> np.ndarray:
    """The meshlets whose every triangle faces away from a camera, by the normal-cone test.

    Parameters
    ----------
    bounds : MeshletBounds
        The meshlets' bounds.
    camera : array_like, shape (3,)
        The camera position.

    Returns
    -------
    numpy.ndarray
        ``(M,)`` bool, True where the meshlet can be culled.
    """
    d = bounds.cone_apex.astype(np.float64) - np.asarray(camera, np.float64)
    length = np.linalg.norm(d, axis=1)
    length[length == 0] = 1.0
    return (d * bounds.cone_axis).sum(axis=1) / length >= bounds.cone_cutoff


def frustum_culled(bounds: MeshletBounds, planes) -> np.ndarray:
    """The meshlets whose bounding sphere lies wholly outside a frustum.

    Parameters
    ----------
    bounds : MeshletBounds
        The meshlets' bounds.
    planes : array_like, shape (P, 4)
        Planes ``(n, d)`` with ``n`` of unit length; ``n . x + d >= 0`` is inside.

    Returns
    -------
    numpy.ndarray
        ``(M,)`` bool, True where the sphere is outside one of the planes.
    """
    planes = np.asarray(planes, np.float64)
    dist = bounds.center.astype(np.float64) @ planes[:, :3].T + planes[:, 3]
    return (dist < -bounds.radius.astype(np.float64)[:, None]).any(axis=1)
