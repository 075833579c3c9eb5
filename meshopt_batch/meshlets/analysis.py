"""The figures that decide mesh-shader cost, for one set of meshlets.

=========================  ==================================================================
figure                     meaning
=========================  ==================================================================
``meshlets``               meshlet count (workgroups launched)
``vertices_per_triangle``  sum of meshlet vertex counts / triangles: the mesh shader's vertex
                           work (each meshlet transforms its own vertices)
``vertex_fill``            mean vertex count / ``max_vertices``
``triangle_fill``          mean triangle count / ``max_triangles``
``vertex_duplication``     sum of meshlet vertex counts / distinct vertices referenced (1 =
                           no vertex in two meshlets)
``cone_culled``            fraction of meshlets whose normal cone says back-facing, averaged
                           over the random views below
``frustum_culled``         fraction of meshlets whose bounding sphere is outside the view
                           frustum, averaged likewise
``culled``                 fraction culled by either test
``lane_occupancy``         one meshlet per workgroup of ``max(V, T)`` lanes, each lane emitting
                           one vertex and one primitive: sum of ``max(vertices, triangles)`` /
                           (meshlets * ``max(V, T)``)
=========================  ==================================================================

Random views (:func:`random_views`, seeded, the same for every builder of a mesh): the mesh's
bounding sphere (centre: middle of the bounding box of the referenced vertices; radius ``R``:
farthest referenced vertex) is looked at from ``count`` cameras (default 64, seed 0).  Camera
``i`` sits at distance ``U(1.5, 4) R`` from the centre in a direction uniform on the sphere,
and looks at the centre moved by a point uniform in the ball of radius ``R / 2``; up is +y
(+z when the view is within 0.1 rad of vertical).  The frustum is perspective: vertical field
of view 60 degrees, aspect 16:9, near plane ``0.01 R``, far plane ``distance + 2 R``.

References
----------
.. [1] NVIDIA, "Introduction to Turing Mesh Shaders" (2018): meshlets of 64 vertices and 126
   triangles, per-meshlet cone and sphere culling in the task shader.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from .bounds import MeshletBounds, cone_culled, frustum_culled, meshlet_bounds
from .meshlet_result import MeshletResult

__all__ = ["MeshletAnalysis", "analyze_meshlets", "combine_analyses", "random_views", "DEFAULT_VIEWS",
           "DEFAULT_SEED"]

DEFAULT_VIEWS = 64
DEFAULT_SEED = 0
FOV_Y_DEGREES = 60.0
ASPECT = 16.0 / 9.0


@dataclass(frozen=True)
class MeshletAnalysis:
    """Figures of one set of meshlets (the module docstring defines each).

    Attributes
    ----------
    max_vertices, max_triangles : int
        The limits the meshlets were built with.
    meshlets : int
        Meshlet count.
    triangles : int
        Triangles in the meshlets.
    vertices : int
        Distinct vertices referenced.
    vertices_emitted : int
        Sum of the meshlets' vertex counts.
    vertices_per_triangle : float
        ``vertices_emitted / triangles``: the mesh shader's vertex work.
    vertex_fill, triangle_fill : float
        Mean vertex and triangle count over the limits.
    vertex_duplication : float
        ``vertices_emitted / vertices`` (1: no vertex in two meshlets).
    cone_culled, frustum_culled, culled : float
        Fraction of meshlets culled by the normal cone, the frustum, either, over the views.
    lane_occupancy : float
        Lanes used over lanes launched, one meshlet per workgroup of ``max(V, T)`` lanes.
    views, seed : int
        The random views the culling figures were averaged over.
    """

    max_vertices: int
    max_triangles: int
    meshlets: int
    triangles: int
    vertices: int
    vertices_emitted: int
    vertices_per_triangle: float
    vertex_fill: float
    triangle_fill: float
    vertex_duplication: float
    cone_culled: float
    frustum_culled: float
    culled: float
    lane_occupancy: float
    views: int
    seed: int

    def to_dict(self) -> dict:
        """The figures as a dict.

        Returns
        -------
        dict
            Field name to value.
        """
        return asdict(self)


def random_views(center, radius: float, count: int = DEFAULT_VIEWS, seed: int = DEFAULT_SEED):
    """Seeded random cameras looking at a bounding sphere, and their frustum planes.

    See the module docstring for how the views are drawn.

    Parameters
    ----------
    center : array_like, shape (3,)
        The sphere's centre.
    radius : float
        The sphere's radius (1 when not positive).
    count : int
        Number of views.
    seed : int
        Seed of the random generator.

    Returns
    -------
    cameras : numpy.ndarray
        ``(count, 3)`` camera positions.
    planes : numpy.ndarray
        ``(count, 6, 4)`` frustum planes; a plane ``(n, d)`` keeps ``n . x + d >= 0`` inside.
    """
    rng = np.random.default_rng(seed)
    center = np.asarray(center, np.float64)
    radius = float(radius) if radius > 0 else 1.0
    cameras = np.zeros((count, 3))
    planes = np.zeros((count, 6, 4))
    tan_y = np.tan(np.radians(FOV_Y_DEGREES) / 2)
    tan_x = ASPECT * tan_y
    for i in range(count):
        direction = rng.normal(size=3)
        direction /= np.linalg.norm(direction)
        distance = rng.uniform(1.5, 4.0) * radius
        offset = rng.normal(size=3)
        offset *= 0.5 * radius * rng.uniform() ** (1 / 3) / np.linalg.norm(offset)
        cam = center + distance * direction
        forward = center + offset - cam
        forward /= np.linalg.norm(forward)
        up = np.array([0.0, 1.0, 0.0]) if abs(forward[1]) < np.cos(0.1) else np.array([0.0, 0.0, 1.0])
        right = np.cross(forward, up)
        right /= np.linalg.norm(right)
        up = np.cross(right, forward)
        normals = [forward * tan_x - right, forward * tan_x + right, forward * tan_y - up,
                   forward * tan_y + up]
        for k, n in enumerate(normals):
            n = n / np.linalg.norm(n)
            planes[i, k, :3] = n
            planes[i, k, 3] = -n @ cam
        planes[i, 4, :3] = forward
        planes[i, 4, 3] = -(forward @ cam) - 0.01 * radius
        planes[i, 5, :3] = -forward
        planes[i, 5, 3] = forward @ cam + distance + 2 * radius
        cameras[i] = cam
    return cameras, planes


def analyze_meshlets(result: MeshletResult, positions, *, views: int = DEFAULT_VIEWS,
                     seed: int = DEFAULT_SEED, bounds: MeshletBounds | None = None) -> MeshletAnalysis:
    """Meshlet count, vertex work, fill, duplication, culling and lane occupancy.

    Parameters
    ----------
    result : MeshletResult
        The meshlets.
    positions : (V, 3) float array
        The vertex positions.
    views, seed : int
        The random views of the culling figures (module docstring).
    bounds : MeshletBounds, optional
        Precomputed :func:`~.bounds.meshlet_bounds` of ``result``.

    Returns
    -------
    MeshletAnalysis
        The figures.
    """
    pos = np.asarray(positions, np.float64)
    m = result.meshlet_count
    vc, tc = result.vertex_counts, result.triangle_counts
    t_count = int(tc.sum())
    emitted = int(vc.sum())
    referenced = np.unique(result.meshlet_vertices)
    lanes = max(result.max_vertices, result.max_triangles)
    cone = frustum = either = 0.0
    if m:
        bounds = bounds if bounds is not None else meshlet_bounds(result, pos)
        used = pos[referenced]
        lo, hi = used.min(axis=0), used.max(axis=0)
        center = (lo + hi) / 2
        radius = float(np.linalg.norm(used - center, axis=1).max())
        cameras, planes = random_views(center, radius, views, seed)
        for cam, pl in zip(cameras, planes, strict=True):
            c = cone_culled(bounds, cam)
            f = frustum_culled(bounds, pl)
            cone += c.mean()
            frustum += f.mean()
            either += (c | f).mean()
        cone, frustum, either = cone / views, frustum / views, either / views
    return MeshletAnalysis(
        max_vertices=result.max_vertices, max_triangles=result.max_triangles, meshlets=m,
        triangles=t_count, vertices=int(referenced.shape[0]), vertices_emitted=emitted,
        vertices_per_triangle=emitted / t_count if t_count else 0.0,
        vertex_fill=float(vc.mean() / result.max_vertices) if m else 0.0,
        triangle_fill=float(tc.mean() / result.max_triangles) if m else 0.0,
        vertex_duplication=emitted / referenced.shape[0] if referenced.shape[0] else 0.0,
        cone_culled=float(cone), frustum_culled=float(frustum), culled=float(either),
        lane_occupancy=float(np.maximum(vc, tc).sum() / (m * lanes)) if m else 0.0,
        views=int(views), seed=int(seed))


def combine_analyses(parts: list[MeshletAnalysis]) -> MeshletAnalysis:
    """Figures of several index buffers drawn together (glTF primitives).

    Counts add up, fills and culling fractions are meshlet-weighted means (each part culled
    under its own views, in its own space), duplication is over the parts' own vertex buffers.

    Parameters
    ----------
    parts : list of MeshletAnalysis
        One analysis per index buffer, built with the same limits.

    Returns
    -------
    MeshletAnalysis
        The figures of the whole.

    Raises
    ------
    ValueError
        No part given.
    """
    if not parts:
        raise ValueError("combine_analyses needs at least one part")
    if len(parts) == 1:
        return parts[0]
    m = sum(p.meshlets for p in parts)
    t = sum(p.triangles for p in parts)
    v = sum(p.vertices for p in parts)
    emitted = sum(p.vertices_emitted for p in parts)

    def mean(name):
        return float(sum(getattr(p, name) * p.meshlets for p in parts) / m) if m else 0.0

    first = parts[0]
    return MeshletAnalysis(
        max_vertices=first.max_vertices, max_triangles=first.max_triangles, meshlets=m, triangles=t,
        vertices=v, vertices_emitted=emitted, vertices_per_triangle=emitted / t if t else 0.0,
        vertex_fill=mean("vertex_fill"), triangle_fill=mean("triangle_fill"),
        vertex_duplication=emitted / v if v else 0.0, cone_culled=mean("cone_culled"),
        frustum_culled=mean("frustum_culled"), culled=mean("culled"), lane_occupancy=mean("lane_occupancy"),
        views=first.views, seed=first.seed)
