"""The one result type every optimizer returns through :func:`meshopt_batch.optimizers.optimize`."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..geometry.mesh_record import Mesh
from ..support.errors import MeshoptBatchError

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

    def apply(self, mesh):
        """The mesh with this triangle order and, where there is one, the vertex remap applied.

        Every attribute travels with its position.

        Parameters
        ----------
        mesh : Mesh or trimesh.Trimesh
            The mesh the result was made for.  A ``Trimesh`` comes back as a new ``Trimesh``
            (nothing merged or reordered by trimesh): vertices, vertex normals, texture
            coordinates, vertex colours and every ``vertex_attributes`` entry renumbered;
            face attributes reordered with the faces.

        Returns
        -------
        Mesh or trimesh.Trimesh
            A new mesh of the kind given.

        Raises
        ------
        MeshoptBatchError
            The result was made for another mesh (triangle count differs).
        """
        if not isinstance(mesh, Mesh):
            return self._apply_trimesh(mesh)
        if self.triangles.shape[0] != mesh.triangle_count:
            raise MeshoptBatchError(
                f"{mesh.name or 'mesh'}: optimizer result has {self.triangles.shape[0]} triangles, "
                f"the mesh {mesh.triangle_count}")
        if self.vertex_remap is None:
            return mesh.with_triangles(self.triangles)
        return mesh.with_vertices(self.vertex_remap, self.triangles)

    def face_order(self, source_triangles) -> np.ndarray:
        """Where each output triangle came from.

        Every optimizer keeps a triangle's corners in cyclic order, so a triangle is found by
        its corner set.

        Parameters
        ----------
        source_triangles : (T, 3) integer array_like
            The index buffer the result was made from.

        Returns
        -------
        numpy.ndarray
            ``(T,)``: the source face of each new face.

        Raises
        ------
        MeshoptBatchError
            The result does not hold the source's triangles.
        """
        src = np.asarray(source_triangles, np.int64).reshape(-1, 3)
        out = np.asarray(self.triangles, np.int64).reshape(-1, 3)
        if self.vertex_remap is not None:
            out = np.asarray(self.vertex_remap, np.int64)[out]
        keys_src = np.sort(src, axis=1)
        keys_out = np.sort(out, axis=1)
        rank_src = np.lexsort(keys_src.T[::-1])
        rank_out = np.lexsort(keys_out.T[::-1])
        if not np.array_equal(keys_src[rank_src], keys_out[rank_out]):
            raise MeshoptBatchError("optimizer result does not hold the source's triangles")
        order = np.empty(len(out), np.int64)
        order[rank_out] = rank_src
        return order

    def _apply_trimesh(self, mesh):
        import trimesh  # lazy: only a caller with trimesh meshes needs it

        faces = np.asarray(mesh.faces)
        if self.triangles.shape[0] != faces.shape[0]:
            raise MeshoptBatchError(f"trimesh: optimizer result has {self.triangles.shape[0]} triangles, "
                                    f"the mesh {faces.shape[0]}")
        count = len(mesh.vertices)
        source = np.arange(count) if self.vertex_remap is None else np.asarray(self.vertex_remap, np.int64)
        face_source = self.face_order(faces)

        def per_vertex(values):
            values = np.asarray(values)
            return values[source] if values.ndim and len(values) == count else values

        kwargs = {"vertex_attributes": {k: per_vertex(v) for k, v in mesh.vertex_attributes.items()},
                  "face_attributes": {k: np.asarray(v)[face_source] for k, v in mesh.face_attributes.items()
                                      if np.ndim(v) and len(v) == len(faces)}}
        kwargs["vertex_normals"] = per_vertex(mesh.vertex_normals)
        visual = mesh.visual.copy() if mesh.visual is not None else None
        if visual is not None and getattr(visual, "kind", None) == "texture" and visual.uv is not None:
            visual.uv = per_vertex(visual.uv)
        elif visual is not None and getattr(visual, "kind", None) == "vertex":
            visual = trimesh.visual.ColorVisuals(vertex_colors=per_vertex(visual.vertex_colors))
        elif visual is not None and getattr(visual, "kind", None) == "face":
            visual = trimesh.visual.ColorVisuals(face_colors=np.asarray(visual.face_colors)[face_source])
        return trimesh.Trimesh(vertices=per_vertex(mesh.vertices), faces=np.asarray(self.triangles, np.int64),
                               visual=visual, process=False, validate=False, metadata=dict(mesh.metadata),
                               **kwargs)
