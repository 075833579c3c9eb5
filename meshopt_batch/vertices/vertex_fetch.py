"""Vertex-fetch order: numbering vertices in the order the index buffers first use them.

After the triangle order is fixed, the vertex buffer is renumbered so that vertex ``k`` is
the ``k``-th distinct vertex the index buffers reference (meshoptimizer's
``optimize_vertex_fetch`` does the same).  The input assembler then reads the vertex buffer
front to back instead of jumping around, and every cache line it loads is used by the
next few vertices.  Vertices no index references keep their relative order at the end.

The figure reported for it is the *mean first-use gap*: over the sequence of first uses
``v_0, v_1, ...`` (in draw order), the mean of ``|v_k - v_{k-1}|``.  It is 1 after the
renumbering (every first use is the next vertex) and grows with the distance the fetcher
jumps between vertices it has not read yet.

Renumbering changes no triangle and no triangle order.  Only reuse models keyed by vertex
*numbers* can see it: llvmpipe's direct-mapped table (``vertex % 256``) and NVIDIA's 2^16
boundary (paper 001 sec. 3.3); the caller checks those predictions before keeping it.

The numbering is one compiled pass over the indices (:func:`first_use_labels`), which the
batch optimizer also uses to lay its tables out in face order.

References
----------
.. [1] B. Kerbl et al., "Revisiting the Vertex Cache", Proc. ACM CGIT 1(2), 2018 (paper 001),
   sec. 3.3 (index-keyed reuse rules).
.. [2] A. Kapoulkine, meshoptimizer, "Vertex fetch optimization" (first-use order).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit

__all__ = ["first_use_gap", "first_use_labels", "first_use_order", "first_uses", "number_by_first_use"]


@njit(cache=True, nogil=True)
def _label_by_first_use(flat, label):
    n = 0
    for k in range(flat.shape[0]):
        v = flat[k]
        if label[v] < 0:
            label[v] = n
            n += 1
    return n


def first_use_labels(indices, vertex_count: int) -> np.ndarray:
    """``(vertex_count,)`` int64: each vertex's rank among the distinct vertices ``indices``
    (any shape, in draw order) uses, in order of first use; -1 for a vertex never used."""
    label = np.full(vertex_count, -1, np.int64)
    _label_by_first_use(np.ascontiguousarray(indices, np.int64).reshape(-1), label)
    return label


def _flat(index_buffers: Sequence[np.ndarray]) -> np.ndarray:
    flat = [np.asarray(b).reshape(-1) for b in index_buffers]
    return np.concatenate(flat).astype(np.int64) if flat else np.zeros(0, np.int64)


def first_uses(index_buffers: Sequence[np.ndarray]) -> np.ndarray:
    """Distinct vertices of the index buffers (drawn one after the other) in order of first use."""
    flat = _flat(index_buffers)
    if flat.size == 0:
        return flat
    label = first_use_labels(flat, int(flat.max()) + 1)
    used = np.flatnonzero(label >= 0)
    order = np.empty(used.shape[0], np.int64)
    order[label[used]] = used
    return order


def first_use_order(index_buffers: Sequence[np.ndarray], vertex_count: int) -> np.ndarray:
    """``new vertex -> old vertex``: first-use order, unreferenced vertices last in their order."""
    used = first_uses(index_buffers)
    if used.shape[0] == vertex_count:
        return used
    unused = np.ones(vertex_count, bool)
    unused[used] = False
    return np.concatenate([used, np.flatnonzero(unused)])


def number_by_first_use(triangles, vertex_count: int) -> tuple[np.ndarray, np.ndarray]:
    """``(triangles in the new numbers as int64, new -> old vertex)``: one index buffer with its
    vertices renumbered in first-use order (:func:`first_use_order`)."""
    order = first_use_order([triangles], vertex_count)
    inverse = np.empty(vertex_count, np.int64)
    inverse[order] = np.arange(vertex_count, dtype=np.int64)
    return inverse[np.asarray(triangles, np.int64)], order


def first_use_gap(index_buffers: Sequence[np.ndarray]) -> float:
    """Mean ``|v_k - v_{k-1}|`` over consecutive first uses (0.0 with fewer than two)."""
    used = first_uses(index_buffers)
    if used.shape[0] < 2:
        return 0.0
    return float(np.abs(np.diff(used)).mean())
