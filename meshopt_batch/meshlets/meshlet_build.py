"""The one entry point of the meshlet builders: :func:`build_meshlets` (method by name)."""

from __future__ import annotations

import numpy as np

from ..model.prediction import as_index_array
from ..support.errors import MeshoptBatchError
from .batch import build_meshlets_batch
from .greedy import build_meshlets_greedy
from .meshlet_result import MeshletResult, check_limits
from .meshoptimizer_meshlets import available as meshoptimizer_available
from .meshoptimizer_meshlets import build_meshlets_meshoptimizer

__all__ = ["DEFAULT_METHOD", "METHODS", "available_methods", "build_meshlets"]

#: Builder names (``--method``), the default first.
METHODS = ("batch", "greedy", "meshoptimizer")
DEFAULT_METHOD = "batch"


def available_methods() -> list[str]:
    """The meshlet builders that can run here.

    Returns
    -------
    list of str
        Names from :data:`METHODS`; ``meshoptimizer`` only where ``almeshopt`` is installed.
    """
    return [m for m in METHODS if m != "meshoptimizer" or meshoptimizer_available()]


def build_meshlets(triangles, positions, *, max_vertices: int = 64, max_triangles: int = 126,
                   method: str = DEFAULT_METHOD, cone_weight: float = 0.0) -> MeshletResult:
    """Cut an index buffer into meshlets of bounded vertex and triangle counts.

    Each meshlet has at most ``max_vertices`` vertices and ``max_triangles`` triangles; the
    ``batch`` builder grows each by the priorities of paper 001's Algorithm 2.

    Parameters
    ----------
    triangles : (T, 3) integer array
        Index buffer; every triangle lands in exactly one meshlet with its corner order.
    positions : (V, 3) float array
        Vertex positions (the normal-cone weight and the peer use them).
    max_vertices : int
        3..256 (local indices are bytes).
    max_triangles : int
        1..512.
    method : {"batch", "greedy", "meshoptimizer"}
        The builder (module docstring of :mod:`meshopt_batch.meshlets`).
    cone_weight : float
        0..1: weight of normal-cone tightness (``batch`` and ``meshoptimizer``; 0 = off).

    Returns
    -------
    MeshletResult
        The meshlets in meshoptimizer's layout.

    Raises
    ------
    MeshoptBatchError
        Limits, positions, cone weight or method out of range.

    References
    ----------
    .. [1] B. Kerbl, M. Kenzel, E. Ivanchenko, D. Schmalstieg, M. Steinberger, "Revisiting the
       Vertex Cache: Understanding and Optimizing Vertex Processing on the modern GPU",
       Proc. ACM Comput. Graph. Interact. Tech. 1(2), 2018 (paper 001), Algorithm 2, eq. 1.
    """
    max_v, max_t = check_limits(max_vertices, max_triangles)
    pos = np.asarray(positions)
    if pos.ndim != 2 or pos.shape[1] != 3 or not np.issubdtype(pos.dtype, np.floating):
        raise MeshoptBatchError(f"positions must be a (V, 3) float array, got {pos.dtype} {pos.shape}")
    tris, vertex_count = as_index_array(triangles, pos.shape[0])
    try:
        weight = float(cone_weight)
    except (TypeError, ValueError):
        raise MeshoptBatchError(f"cone_weight must be a number, got {cone_weight!r}") from None
    if not 0.0 <= weight <= 1.0:
        raise MeshoptBatchError(f"cone_weight must be in 0..1, got {cone_weight!r}")
    if method == "batch":
        return build_meshlets_batch(tris, pos, vertex_count, max_v, max_t, cone_weight=weight)
    if method == "greedy":
        if weight:
            raise MeshoptBatchError("method 'greedy' has no cone weight (use batch or meshoptimizer)")
        return build_meshlets_greedy(np.ascontiguousarray(tris, np.int64), vertex_count, max_v, max_t)
    if method == "meshoptimizer":
        return build_meshlets_meshoptimizer(tris, pos, max_v, max_t, cone_weight=weight)
    raise MeshoptBatchError(f"unknown meshlet method {method!r} (known: {', '.join(METHODS)})")
