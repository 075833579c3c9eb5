"""Input checks and output assembly shared by the triangle-order optimizers."""

from __future__ import annotations

import numpy as np

from ..model.prediction import as_index_array
from ..support.errors import MeshoptBatchError
from ..support.limits import check_cache_size as check_size_limit


def prepare(triangles, vertex_count: int | None):
    """Validate an index buffer: ``(tris (T, 3) C-contiguous, vertex_count)``."""
    return as_index_array(triangles, vertex_count)


def check_cache_size(name: str, cache_size, minimum: int = 3) -> int:
    """A cache size as a plain int, at least ``minimum`` (one triangle)."""
    try:
        size = int(cache_size)
    except (TypeError, ValueError):
        raise MeshoptBatchError(f"{name}: cache size must be an integer, got {cache_size!r}") from None
    if size != cache_size or size < minimum:
        raise MeshoptBatchError(f"{name}: cache size must be an integer >= {minimum}, got {cache_size!r}")
    check_size_limit(size, f"{name}: cache size")
    return size


def gather(original, tris: np.ndarray, order: np.ndarray) -> np.ndarray:
    """``tris[order]`` as a ``(T, 3)`` array in the caller's integer type.

    Every optimizer returns a permutation of the input rows: triangles are never split,
    merged, dropped or re-wound.
    """
    out = tris[order] if tris.shape[0] else np.zeros((0, 3), tris.dtype)
    dtype = np.asarray(original).dtype
    if np.issubdtype(dtype, np.integer) and out.dtype != dtype:
        out = out.astype(dtype)
    return out
