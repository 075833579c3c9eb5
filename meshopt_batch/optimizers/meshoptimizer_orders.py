"""meshoptimizer's vertex-cache functions as registered methods (the peer users run today).

Needs the optional ``meshoptimizer`` package (``pip install 'meshopt-batch[compare]'``); the
registry in :mod:`meshopt_batch.optimizers` checks for it before this module is imported.

References
----------
.. [1] A. Kapoulkine, meshoptimizer, https://github.com/zeux/meshoptimizer (vertex cache
   optimization: a Forsyth-style scorer; Tipsify for a FIFO of a given size; a strip order;
   overdraw optimization after Sander et al. 2007 on a vertex-cache order).
"""

from __future__ import annotations

import numpy as np

from ..support.meshoptimizer_bindings import optimizers as meshoptimizer
from ._util import check_cache_size

__all__ = ["optimize_overdraw", "optimize_vertex_cache", "optimize_vertex_cache_fifo", "optimize_vertex_cache_strip"]


def _call(name: str, triangles: np.ndarray, vertex_count: int, **kwargs) -> np.ndarray:
    if triangles.shape[0] == 0:
        return triangles.copy()
    flat = np.ascontiguousarray(triangles, dtype=np.uint32).reshape(-1)
    dst = np.empty_like(flat)
    getattr(meshoptimizer, name)(dst, flat, flat.size, vertex_count, **kwargs)
    return dst.reshape(-1, 3)


def optimize_vertex_cache(triangles, vertex_count: int) -> np.ndarray:
    """meshoptimizer's ``optimize_vertex_cache`` (a tuned Forsyth-style scorer)."""
    return _call("optimize_vertex_cache", triangles, vertex_count)


def optimize_vertex_cache_fifo(triangles, vertex_count: int, cache_size: int = 16) -> np.ndarray:
    """meshoptimizer's ``optimize_vertex_cache_fifo`` (Tipsify) for a FIFO of ``cache_size``."""
    return _call("optimize_vertex_cache_fifo", triangles, vertex_count,
                 cache_size=check_cache_size("meshoptimizer_fifo", cache_size))


def optimize_vertex_cache_strip(triangles, vertex_count: int) -> np.ndarray:
    """meshoptimizer's ``optimize_vertex_cache_strip`` (an order for strip conversion)."""
    return _call("optimize_vertex_cache_strip", triangles, vertex_count)


def optimize_overdraw(triangles, vertex_count: int, *, positions, threshold: float = 1.05) -> np.ndarray:
    """meshoptimizer's ``optimize_overdraw`` with ``threshold`` (its documented 1.05) applied to
    its own ``optimize_vertex_cache`` order, as its documentation prescribes."""
    if triangles.shape[0] == 0:
        return triangles.copy()
    cache_order = optimize_vertex_cache(triangles, vertex_count).reshape(-1)
    pos = np.ascontiguousarray(np.asarray(positions, np.float32)[:vertex_count, :3])
    dst = np.empty_like(cache_order)
    meshoptimizer.optimize_overdraw(dst, cache_order, pos, cache_order.size, vertex_count, 12, float(threshold))
    return dst.reshape(-1, 3)
