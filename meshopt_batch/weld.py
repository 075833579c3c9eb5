"""Welding: merging vertices whose every attribute is bit-identical.

Two vertices are the same vertex when the bytes of every attribute they carry are equal:
position, normal, tangent, texture coordinates, colours, skin joints and weights, and the
deltas of every morph target.  Comparing bytes (not values) is what keeps a weld lossless:
``-0.0`` and ``0.0`` stay apart (a shader may tell them apart through a division), two NaNs
with the same bits merge, and an integer attribute is compared as stored.  A GPU shades a
vertex once per index, so merged duplicates can be reused from the post-transform memory
where two copies never could (paper 001 sec. 3.1: reuse is by index).

The welded buffer keeps the vertices' order: new vertex ``k`` is the ``k``-th vertex of the
old buffer that is not a repeat of an earlier one.  Vertex-fetch order is chosen later
(:mod:`meshopt_batch.vertex_fetch`).

The grouping is one ``numpy.unique`` over the vertices' bytes viewed as fixed-size records
(a sort, no Python loop over vertices).  A hashing pass in compiled code would be linear
instead of ``O(V log V)``, but costs a compile or a cache load at start-up, which is more
than the sort takes on any asset this tool sees.

References
----------
.. [1] B. Kerbl, M. Kenzel, E. Ivanchenko, D. Schmalstieg, M. Steinberger, "Revisiting the
   Vertex Cache: Understanding and Optimizing Vertex Processing on the modern GPU",
   Proc. ACM Comput. Graph. Interact. Tech. 1(2), 2018 (paper 001), sec. 3.1.
.. [2] Khronos, glTF 2.0 specification, "Meshes": morph targets and skin attributes are
   per-vertex data like any other attribute.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .errors import MeshoptBatchError
from .mesh import Mesh

__all__ = ["Weld", "vertex_records", "weld", "weld_mesh"]


@dataclass(frozen=True, eq=False)
class Weld:
    """How a vertex buffer folds onto its distinct vertices.

    Attributes
    ----------
    remap : (V,) int64 ndarray
        Old vertex -> new vertex.
    source : (V',) int64 ndarray
        New vertex -> the first old vertex it stands for (increasing).
    """

    remap: np.ndarray
    source: np.ndarray

    @property
    def merged(self) -> int:
        """Vertices removed by the weld."""
        return int(self.remap.shape[0] - self.source.shape[0])


def vertex_records(arrays: Sequence[np.ndarray], vertex_count: int) -> np.ndarray:
    """Every vertex's bytes over all ``arrays`` (first dimension ``vertex_count``) as one
    fixed-size record each: a ``(V,)`` array of ``numpy.void``."""
    columns = []
    for a in arrays:
        a = np.ascontiguousarray(a)
        if a.shape[0] != vertex_count:
            raise MeshoptBatchError(f"weld: attribute with {a.shape[0]} rows for {vertex_count} vertices")
        columns.append(a.view(np.uint8).reshape(vertex_count, -1))
    if not columns:
        raise MeshoptBatchError("weld: no attributes")
    table = np.ascontiguousarray(np.concatenate(columns, axis=1))
    return table.view(np.dtype((np.void, table.shape[1]))).reshape(vertex_count)


def weld(records: np.ndarray) -> Weld:
    """Merge vertices whose records (:func:`vertex_records`) are equal, keeping first
    occurrences in their order."""
    count = int(records.shape[0])
    if count == 0:
        return Weld(np.zeros(0, np.int64), np.zeros(0, np.int64))
    _, first, inverse = np.unique(records, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(order.shape[0], np.int64)
    rank[order] = np.arange(order.shape[0], dtype=np.int64)
    return Weld(rank[inverse.reshape(-1)], first[order].astype(np.int64))


def weld_mesh(mesh: Mesh) -> tuple[Mesh, Weld]:
    """``mesh`` with bit-identical vertices (position and every attribute) merged, and the
    :class:`Weld` that did it; triangles keep their order and corners."""
    arrays = [mesh.positions] + [mesh.attributes[k] for k in sorted(mesh.attributes)]
    w = weld(vertex_records(arrays, mesh.vertex_count))
    if w.merged == 0:
        return mesh, w
    return mesh.with_vertices(w.source, w.remap[np.asarray(mesh.triangles, np.int64)]), w
