"""Overdraw of a mesh on its own: shaded fragments per covered pixel under early-Z, in program order.

:func:`mesh_overdraw` renders one mesh, with its index buffer in the order given, through the
project's own pipeline (:class:`~pipeline_model.geometry.GeometryStage`,
:func:`~pipeline_model.binning.bin_triangles`, :func:`~pipeline_model.raster.render_frame`:
llvmpipe's coverage and depth rules, back faces culled, depth test ``less`` before shading)
from a fixed set of views, and counts

    overdraw = sum over views of fragments shaded / sum over views of pixels covered,

where a pixel is covered when at least one front-facing fragment lands on it.  1.0 means no
fragment was shaded twice; a mesh drawn back to front shades every layer of itself.  The
figure depends on the triangle order only: the same views, screen and rules for every order.

Views (:func:`view_directions`)
-------------------------------
``views`` directions (default 16), the first six the axis views ``+x, -x, +y, -y, +z, -z`` (as
meshoptimizer's ``analyzeOverdraw``, which renders the six axis views at 256 x 256), then
directions drawn uniformly on the sphere by ``numpy.random.default_rng(seed)`` (default seed
2007).  Each view is an orthographic camera on the mesh's bounding sphere (centre of the
bounding box of the referenced vertices, radius to the farthest one) looking at its centre,
the sphere filling a ``size x size`` screen (default 256).

References
----------
.. [1] P. V. Sander, D. Nehab, J. Barczak, "Fast Triangle Reordering for Vertex Locality and
   Reduced Overdraw", ACM Trans. Graph. 26(3), 2007 (overdraw as shaded over covered pixels,
   over viewpoints around the model: the measure its cluster sort is judged by).
.. [2] A. Kapoulkine, meshoptimizer, ``meshopt_analyzeOverdraw`` (six axis views, 256 x 256).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from meshopt_batch.geometry.mesh_record import Mesh
from meshopt_batch.model.profiles import get_profile
from meshopt_batch.support.errors import MeshoptBatchError

from .binning import bin_triangles
from .geometry import GeometryStage
from .raster import render_frame
from .scene import Draw, FrameSpec, RenderState
from .scene.camera import look_at, orthographic

__all__ = ["DEFAULT_SEED", "DEFAULT_SIZE", "DEFAULT_VIEWS", "OverdrawResult", "mesh_overdraw",
           "view_directions"]

#: Views, screen size (pixels, square) and seed of :func:`mesh_overdraw`'s defaults.
DEFAULT_VIEWS = 16
DEFAULT_SIZE = 256
DEFAULT_SEED = 2007

_AXES = np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]], np.float64)


def view_directions(views: int = DEFAULT_VIEWS, seed: int = DEFAULT_SEED) -> np.ndarray:
    """``(views, 3)`` unit vectors from the mesh's centre to the eye: the six axis views, then
    seeded uniform directions on the sphere (see the module docstring)."""
    if views < 1:
        raise MeshoptBatchError(f"overdraw views must be at least 1, got {views}")
    out = _AXES[:views]
    extra = views - len(out)
    if extra > 0:
        g = np.random.default_rng(seed).normal(size=(extra, 3))
        out = np.concatenate([out, g / np.linalg.norm(g, axis=1, keepdims=True)])
    return out


@dataclass(frozen=True)
class OverdrawResult:
    """Overdraw of one index order over a set of views.

    Attributes
    ----------
    overdraw : float
        Total shaded fragments / total covered pixels (1.0 for no overdraw; 0.0 when no
        pixel is covered).
    shaded, covered : (views,) int64
        Fragments shaded and pixels covered per view.
    directions : (views, 3) float64
        Eye directions (from the centre).
    size : int
        Screen size (square) in pixels.
    """

    overdraw: float
    shaded: np.ndarray
    covered: np.ndarray
    directions: np.ndarray
    size: int

    @property
    def per_view(self) -> np.ndarray:
        """Overdraw of each view (0 where a view covers nothing)."""
        cov = np.maximum(self.covered, 1)
        return np.where(self.covered > 0, self.shaded / cov, 0.0)

    def to_dict(self) -> dict:
        return {"overdraw": self.overdraw, "views": int(len(self.shaded)), "size": self.size,
                "fragments_shaded": int(self.shaded.sum()), "pixels_covered": int(self.covered.sum())}


def mesh_overdraw(mesh: Mesh, *, views: int = DEFAULT_VIEWS, size: int = DEFAULT_SIZE,
                  seed: int = DEFAULT_SEED, directions=None) -> OverdrawResult:
    """Overdraw of ``mesh`` in its index order (see the module docstring).

    Parameters
    ----------
    mesh : Mesh
        Positions and triangles (counter-clockwise front faces); other attributes are ignored.
    views, seed : int
        Number of views and the seed of the random ones (:func:`view_directions`).
    size : int
        Screen width and height in pixels.
    directions : (K, 3) array_like, optional
        Eye directions to use instead of :func:`view_directions`.

    Returns
    -------
    OverdrawResult
    """
    if size < 1:
        raise MeshoptBatchError(f"overdraw screen size must be at least 1 pixel, got {size}")
    dirs = view_directions(views, seed) if directions is None else np.asarray(directions, np.float64).reshape(-1, 3)
    shaded = np.zeros(len(dirs), np.int64)
    covered = np.zeros(len(dirs), np.int64)
    if mesh.triangle_count == 0:
        return OverdrawResult(0.0, shaded, covered, dirs, size)
    used = np.asarray(mesh.positions, np.float64)[np.unique(mesh.triangles)]
    centre = (used.min(0) + used.max(0)) / 2.0
    radius = float(np.sqrt(((used - centre) ** 2).sum(1).max())) or 1.0
    stage = GeometryStage(profile=get_profile("fifo:16"))
    state = RenderState()
    proj = orthographic(-radius, radius, -radius, radius, radius, 3.0 * radius)
    for k, d in enumerate(dirs):
        n = np.linalg.norm(d)
        if not n > 0:
            raise MeshoptBatchError("overdraw view directions must be non-zero")
        eye = centre + 2.0 * radius * d / n
        draw = Draw(0, 0, mesh.name or "mesh", mesh.name or "mesh", mesh, np.eye(4),
                    look_at(eye, centre, (0.0, 1.0, 0.0)), proj, state)
        frame = stage.process(FrameSpec(k, size, size, [draw], (0.0, 0.0, 0.0), (0.0, 1.0, 0.0)))
        res = render_frame(frame, bin_triangles(frame))
        totals = res.totals()
        shaded[k] = totals["fragments_shaded"]
        covered[k] = totals["pixels_covered"]
    total = int(covered.sum())
    return OverdrawResult(float(shaded.sum()) / total if total else 0.0, shaded, covered, dirs, size)
