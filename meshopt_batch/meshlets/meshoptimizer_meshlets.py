"""meshoptimizer's meshlet builder and bounds (the peer users run today), through ``almeshopt``.

The ``meshoptimizer`` package on PyPI has no meshlet functions; ``almeshopt`` (PyPI, a
Cython wrapper of the C++ library, optional ``compare`` extra) exposes
``build_meshlets(indices, vertices, max_vertices, max_triangles, cone_weight)`` and
``compute_meshlet_bounds(meshlet_vertices, meshlet_triangles, vertices)``.  Only benchmarks
and comparison tables use it; :func:`available` says whether it is installed.

References
----------
.. [1] A. Kapoulkine, meshoptimizer, https://github.com/zeux/meshoptimizer (``buildMeshlets``,
   ``computeMeshletBounds``).
"""

from __future__ import annotations

import importlib.util
import time

import numpy as np

from ..support.errors import MeshoptBatchError
from .meshlet_result import MeshletResult

__all__ = ["available", "build_meshlets_meshoptimizer", "meshoptimizer_bounds", "MISSING_REASON"]

MISSING_REASON = "almeshopt is not installed (pip install 'meshopt-batch[compare]')"


def available() -> bool:
    """``almeshopt`` can be imported."""
    return importlib.util.find_spec("almeshopt") is not None


def _module():
    if not available():
        raise MeshoptBatchError(f"method 'meshoptimizer' needs almeshopt: {MISSING_REASON}")
    import almeshopt  # lazy: optional package, only the peer needs it

    return almeshopt


def build_meshlets_meshoptimizer(tris: np.ndarray, positions: np.ndarray, max_vertices: int,
                                 max_triangles: int, cone_weight: float = 0.0) -> MeshletResult:
    """meshoptimizer's ``buildMeshlets`` under the same limits, repacked densely."""
    alm = _module()
    t0 = time.perf_counter()
    stats = {"method": "meshoptimizer", "cone_weight": float(cone_weight)}
    if tris.shape[0] == 0:
        return MeshletResult(np.zeros((0, 4), np.uint32), np.zeros(0, np.uint32), np.zeros(0, np.uint8),
                             max_vertices, max_triangles, {**stats, "seconds": 0.0})
    out = alm.build_meshlets(np.ascontiguousarray(tris, np.uint32).reshape(-1),
                             np.ascontiguousarray(positions, np.float32), int(max_vertices),
                             int(max_triangles), float(cone_weight))
    seconds = time.perf_counter() - t0
    return MeshletResult.from_slices(out["meshlets"], out["meshlet_vertices"], out["meshlet_triangles"],
                                     max_vertices, max_triangles, {**stats, "seconds": seconds})


def meshoptimizer_bounds(result: MeshletResult, positions: np.ndarray) -> dict:
    """meshoptimizer's ``computeMeshletBounds`` for every meshlet, as arrays named like
    :class:`~meshopt_batch.meshlets.bounds.MeshletBounds`' fields."""
    alm = _module()
    pos = np.ascontiguousarray(positions, np.float32)
    rows = []
    for v0, t0, vc, tc in result.meshlets.astype(np.int64):
        b = alm.compute_meshlet_bounds(np.ascontiguousarray(result.meshlet_vertices[v0:v0 + vc]),
                                       np.ascontiguousarray(result.meshlet_triangles[t0:t0 + 3 * tc]), pos)
        rows.append(b)
    return {"center": np.array([r["center"] for r in rows], np.float64).reshape(-1, 3),
            "radius": np.array([r["radius"] for r in rows], np.float64),
            "cone_apex": np.array([r["cone_apex"] for r in rows], np.float64).reshape(-1, 3),
            "cone_axis": np.array([r["cone_axis"] for r in rows], np.float64).reshape(-1, 3),
            "cone_cutoff": np.array([r["cone_cutoff"] for r in rows], np.float64)}
