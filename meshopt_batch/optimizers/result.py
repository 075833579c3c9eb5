"""The one result type every optimizer returns through :func:`meshopt_batch.optimizers.optimize`."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import MeshoptBatchError
from ..mesh import Mesh

__all__ = ["OptimizeResult"]


@dataclass(frozen=True, eq=False)
class OptimizeResult:
    """An optimized index buffer, and the new vertex buffer's layout when the method changed it.

    Attributes
    ----------
    triangles : (T, 3) ndarray
        The same triangles as the input, in the new order, each with its corners in the input's
        order (winding and provoking vertex kept).  Indices address the new vertex buffer.
    vertex_remap : (V',) int64 ndarray or None
        ``new vertex -> source vertex`` when the method renumbered vertices or appended copies
        (paper 001 sec. 4, the 16-bit boundary fix; the direct-mapped renumbering); ``None``
        when the vertex buffer is unchanged.
    batch_starts : (B,) int64 ndarray or None
        First triangle of every batch, for methods that form batches (``batch``).
    stats : dict
        Method-specific figures (timings, model invocations, vertex copies, options used).
    """

    triangles: np.ndarray
    vertex_remap: np.ndarray | None = None
    batch_starts: np.ndarray | None = None
    stats: dict = field(default_factory=dict)

    @property
    def vertex_copies(self) -> int:
        """Vertices the new buffer holds beyond the source buffer's (0 when unchanged)."""
        if self.vertex_remap is None or len(self.vertex_remap) == 0:
            return 0
        return int(len(self.vertex_remap) - len(np.unique(self.vertex_remap)))

    def apply(self, mesh: Mesh) -> Mesh:
        """``mesh`` with this order, and its vertex buffer gathered through the remap (every
        attribute travels with its position).

        Raises
        ------
        MeshoptBatchError
            The result was made for another mesh (triangle count differs).
        """
        if self.triangles.shape[0] != mesh.triangle_count:
            raise MeshoptBatchError(
                f"{mesh.name or 'mesh'}: optimizer result has {self.triangles.shape[0]} triangles, "
                f"the mesh {mesh.triangle_count}")
        if self.vertex_remap is None:
            return mesh.with_triangles(self.triangles)
        return mesh.with_vertices(self.vertex_remap, self.triangles)
