"""The meshlet layout every builder returns, and the packer that writes it.

The layout is the one mesh-shader engines know from meshoptimizer's ``meshopt_Meshlet``:

``meshlets`` (M, 4) uint32
    ``vertex_offset`` (into ``meshlet_vertices``), ``triangle_offset`` (into
    ``meshlet_triangles``, counted in bytes: 3 per triangle), ``vertex_count``,
    ``triangle_count``.
``meshlet_vertices`` uint32
    Global vertex ids, ``vertex_count`` of them per meshlet, each once.
``meshlet_triangles`` uint8
    Three local indices (into the meshlet's slice of ``meshlet_vertices``) per triangle, the
    corners in the input triangle's order (winding and provoking vertex kept).

Meshlets are packed densely, one after the other (no padding between them).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numba import njit

from ..support.errors import MeshoptBatchError

__all__ = ["MeshletResult", "pack_meshlets", "MAX_VERTICES_LIMIT", "MAX_TRIANGLES_LIMIT",
           "check_limits"]

#: Local indices are bytes: a meshlet addresses at most 256 vertices.
MAX_VERTICES_LIMIT = 256
#: The largest triangle limit meshoptimizer accepts (mesh-shader APIs cap lower, e.g. 256).
MAX_TRIANGLES_LIMIT = 512


def check_limits(max_vertices, max_triangles) -> tuple[int, int]:
    """The two limits as ints, or one clear error."""
    for name, value, low, high in (("max_vertices", max_vertices, 3, MAX_VERTICES_LIMIT),
                                   ("max_triangles", max_triangles, 1, MAX_TRIANGLES_LIMIT)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not low <= value <= high:
            raise MeshoptBatchError(f"{name} must be an integer in {low}..{high}, got {value!r}")
    return int(max_vertices), int(max_triangles)


@dataclass(frozen=True, eq=False)
class MeshletResult:
    """Meshlets of one index buffer (see the module docstring for the layout).

    Attributes
    ----------
    meshlets : (M, 4) uint32
        Per meshlet: vertex offset, triangle offset (bytes), vertex count, triangle count.
    meshlet_vertices : (sum of vertex counts,) uint32
        The global vertex index of each meshlet-local vertex.
    meshlet_triangles : (3 * triangles,) uint8
        Each triangle's three meshlet-local vertex indices.
    max_vertices, max_triangles : int
        The limits the meshlets were built for.
    stats : dict
        Builder name, options and timing.
    """

    meshlets: np.ndarray
    meshlet_vertices: np.ndarray
    meshlet_triangles: np.ndarray
    max_vertices: int
    max_triangles: int
    stats: dict = field(default_factory=dict)

    @property
    def meshlet_count(self) -> int:
        """Number of meshlets, ``M``."""
        return int(self.meshlets.shape[0])

    @property
    def vertex_counts(self) -> np.ndarray:
        """``(M,)`` int64: the vertex count of each meshlet."""
        return self.meshlets[:, 2].astype(np.int64)

    @property
    def triangle_counts(self) -> np.ndarray:
        """``(M,)`` int64: the triangle count of each meshlet."""
        return self.meshlets[:, 3].astype(np.int64)

    def triangles(self) -> np.ndarray:
        """The triangles in meshlet order, as global vertex indices.

        Returns
        -------
        numpy.ndarray
            ``(T, 3)`` uint32.
        """
        counts = self.triangle_counts
        ml = self.meshlets.astype(np.int64)
        local = self.meshlet_triangles.reshape(-1, 3).astype(np.int64)
        base = np.repeat(ml[:, 0], counts)[:, None]
        return self.meshlet_vertices[base + local].astype(np.uint32)

    def meshlet_of_triangle(self) -> np.ndarray:
        """The meshlet of each triangle of :meth:`triangles`.

        Returns
        -------
        numpy.ndarray
            ``(T,)`` int64 meshlet numbers.
        """
        return np.repeat(np.arange(self.meshlet_count, dtype=np.int64), self.triangle_counts)

    def meshlet_triangles_of(self, i: int) -> np.ndarray:
        """The triangles of one meshlet, as global vertex indices.

        Parameters
        ----------
        i : int
            The meshlet number.

        Returns
        -------
        numpy.ndarray
            ``(t, 3)``: its ``t`` triangles.
        """
        v0, t0, vc, tc = (int(x) for x in self.meshlets[i])
        local = self.meshlet_triangles[t0:t0 + 3 * tc].reshape(-1, 3).astype(np.int64)
        return self.meshlet_vertices[v0:v0 + vc][local]

    @classmethod
    def from_slices(cls, meshlets, meshlet_vertices, meshlet_triangles, max_vertices: int,
                    max_triangles: int, stats: dict | None = None) -> MeshletResult:
        """Repack meshlets whose offsets may leave gaps into the dense layout.

        A peer's buffers may be padded or over-allocated; the result has none of that.

        Parameters
        ----------
        meshlets : array_like, shape (M, 4)
            Offsets and counts as in :attr:`meshlets`, gaps allowed.
        meshlet_vertices : array_like
            The vertex indices the offsets point into.
        meshlet_triangles : array_like
            The local triangle indices the offsets point into.
        max_vertices, max_triangles : int
            The limits the meshlets were built for.
        stats : dict, optional
            Builder name, options and timing.

        Returns
        -------
        MeshletResult
            The same meshlets, densely packed.
        """
        ml = np.asarray(meshlets, np.int64).reshape(-1, 4)
        mv = np.asarray(meshlet_vertices)
        mt = np.asarray(meshlet_triangles)
        vc, tc = ml[:, 2], 3 * ml[:, 3]
        v_idx = np.repeat(ml[:, 0] - np.concatenate(([0], np.cumsum(vc)[:-1])), vc) + np.arange(vc.sum())
        t_idx = np.repeat(ml[:, 1] - np.concatenate(([0], np.cumsum(tc)[:-1])), tc) + np.arange(tc.sum())
        dense = np.stack([np.concatenate(([0], np.cumsum(vc)[:-1])), np.concatenate(([0], np.cumsum(tc)[:-1])),
                          vc, ml[:, 3]], axis=1) if ml.shape[0] else np.zeros((0, 4), np.int64)
        return cls(dense.astype(np.uint32), mv[v_idx].astype(np.uint32), mt[t_idx].astype(np.uint8),
                   int(max_vertices), int(max_triangles), dict(stats or {}))


@njit(cache=True)
def _pack(tris, order, starts, vertex_count):
    n_meshlets = starts.shape[0] - 1
    meshlets = np.zeros((n_meshlets, 4), np.int64)
    mvert = np.empty(3 * order.shape[0], np.int64)
    mtri = np.empty(3 * order.shape[0], np.int64)
    local = np.full(vertex_count, -1, np.int64)
    owner = np.full(vertex_count, -1, np.int64)
    nv = 0
    for m in range(n_meshlets):
        meshlets[m, 0] = nv
        meshlets[m, 1] = 3 * starts[m]
        for k in range(starts[m], starts[m + 1]):
            t = order[k]
            for c in range(3):
                v = tris[t, c]
                if owner[v] != m:
                    owner[v] = m
                    local[v] = nv - meshlets[m, 0]
                    mvert[nv] = v
                    nv += 1
                mtri[3 * k + c] = local[v]
        meshlets[m, 2] = nv - meshlets[m, 0]
        meshlets[m, 3] = starts[m + 1] - starts[m]
    return meshlets, mvert[:nv], mtri


def pack_meshlets(triangles: np.ndarray, order: np.ndarray, starts: np.ndarray, vertex_count: int,
                  max_vertices: int, max_triangles: int, stats: dict | None = None) -> MeshletResult:
    """Write meshlets given as a triangle order and the first position of each meshlet in it.

    Parameters
    ----------
    triangles : (T, 3) integer array
    order : (T,) int64
        A permutation of the triangles, meshlet after meshlet.
    starts : (M + 1,) int64
        Meshlet ``m`` is ``order[starts[m]:starts[m + 1]]``; ``starts[-1] == T``.
    vertex_count : int
        Vertex buffer size.
    """
    tris = np.ascontiguousarray(triangles, np.int64)
    meshlets, mvert, mtri = _pack(tris, np.ascontiguousarray(order, np.int64),
                                  np.ascontiguousarray(starts, np.int64), int(vertex_count))
    return MeshletResult(meshlets.astype(np.uint32), mvert.astype(np.uint32), mtri.astype(np.uint8),
                         int(max_vertices), int(max_triangles), dict(stats or {}))
