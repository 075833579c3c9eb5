"""The mesh record every part of the library passes around.

A :class:`Mesh` is one indexed triangle list, i.e. one GPU index buffer over one vertex
buffer: float32 positions ``(V, 3)``, uint32 triangles ``(T, 3)`` (C-contiguous), a name,
per-vertex attributes and the index type the file stored (``uint16`` or ``uint32``).

Vertex and triangle order are never changed by this module: order is what the reuse models
and optimizers of this library measure and change.  Degenerate triangles (a repeated index)
are kept as they are and counted (:attr:`Mesh.degenerate_count`); a GPU runs them too.

Attribute names (keys of :attr:`Mesh.attributes`; every array has first dimension ``V``):

==============  =====================================================================
``normal``      ``(V, 3)`` float32 vertex normals
``uv``          ``(V, 2)`` texture coordinates (``uv1``, ``uv2``... for further sets)
``color``       ``(V, 3|4)`` vertex colours, uint8 (0..255) or float (0..1) as stored
``tangent``     ``(V, 4)`` float32 tangents (glTF)
anything else   kept under its own name: PLY properties, glTF ``_CUSTOM`` attributes
                (stored as ``CUSTOM``), ``joints``/``weights``, morph targets
                (``target<i>.<SEMANTIC>``)...
==============  =====================================================================

Arrays held by a mesh are read-only views: a mesh is a value.  Optimizers make new meshes
with :meth:`Mesh.with_triangles` (same vertices, new triangle order) and
:meth:`Mesh.with_vertices` / :meth:`Mesh.append_vertex_copies` (a new vertex buffer
gathered from the old one, every attribute carried along with its position).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from ..support.errors import MeshError

__all__ = [
    "ATTR_COLOR",
    "ATTR_NORMAL",
    "ATTR_TANGENT",
    "ATTR_UV",
    "INDEX_DTYPES",
    "Mesh",
    "concatenate",
    "fit_index_dtype",
]

ATTR_NORMAL = "normal"
ATTR_UV = "uv"
ATTR_COLOR = "color"
ATTR_TANGENT = "tangent"

UINT16 = np.dtype(np.uint16)
UINT32 = np.dtype(np.uint32)
INDEX_DTYPES = (UINT16, UINT32)

#: Largest vertex count a 16-bit index buffer can address (indices 0..65535).
MAX_16BIT_VERTICES = 1 << 16


def _frozen(a: np.ndarray) -> np.ndarray:
    """A read-only view of ``a`` (the caller's array keeps its own flags)."""
    if not a.flags.writeable:
        return a
    v = a.view()
    v.flags.writeable = False
    return v


def _as_index_dtype(dt: Any) -> np.dtype:
    dt = np.dtype(dt)
    if dt not in INDEX_DTYPES:
        raise MeshError(f"index_dtype must be uint16 or uint32, not {dt}")
    return dt


def fit_index_dtype(preferred: Any, vertex_count: int, max_index: int | None = None) -> np.dtype:
    """The index type to store: ``preferred`` (uint16/uint32) when every index fits, else uint32.

    ``max_index`` is the largest value the index buffer may hold (default ``vertex_count - 1``);
    writers for formats that reserve 0xFFFF (glTF) pass their own limit through it.
    """
    preferred = _as_index_dtype(preferred)
    if preferred == np.uint16:
        top = vertex_count - 1 if max_index is None else max_index
        if top <= 0xFFFF:
            return preferred
    return np.dtype(np.uint32)


def _as_triangles(triangles: Any, name: str) -> np.ndarray:
    t = np.asarray(triangles)
    if t.ndim == 1 and t.size % 3 == 0:
        t = t.reshape(-1, 3)
    if t.ndim != 2 or t.shape[1] != 3:
        raise MeshError(f"{name}: triangles must have shape (T, 3), got {t.shape}")
    if t.dtype == np.uint32:
        return np.ascontiguousarray(t)
    if t.dtype.kind == "f":
        if t.size and not np.array_equal(t, np.floor(t)):  # NaN fails this too
            raise MeshError(f"{name}: triangle indices must be integers")
    elif t.dtype.kind not in "iu":
        raise MeshError(f"{name}: triangle indices must be integers, got {t.dtype}")
    if t.size and (t.min() < 0 or t.max() > 0xFFFFFFFF):
        raise MeshError(f"{name}: triangle index out of range (negative or over 32 bits)")
    return np.ascontiguousarray(t, dtype=np.uint32)


@dataclass(frozen=True, eq=False)
class Mesh:
    """One indexed triangle list.

    Construction checks shapes, dtypes and attribute lengths; :meth:`validate` checks the
    contents (finite positions, indices in range, index type wide enough).

    Parameters
    ----------
    positions : array_like, shape (V, 3)
        Vertex positions; stored as C-contiguous float32.
    triangles : array_like, shape (T, 3)
        Vertex indices per triangle; stored as C-contiguous uint32.
    name : str
        A label (the file stem, or glTF mesh name and primitive).
    attributes : mapping of str to array_like
        Per-vertex arrays, first dimension V (see the module docstring for the names).
    index_dtype : numpy dtype
        ``uint16`` or ``uint32``: the index type the source stored, used again when saving
        where every index fits.
    meta : mapping
        Free-form provenance (source file, glTF mesh/primitive numbers, material...).
        Writers use it where it helps; nothing depends on it.

    Raises
    ------
    MeshError
        A shape, dtype or attribute length that does not fit.
    """

    positions: np.ndarray
    triangles: np.ndarray
    name: str = ""
    attributes: Mapping[str, np.ndarray] = field(default_factory=dict)
    index_dtype: np.dtype = UINT32
    meta: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        label = self.name or "mesh"
        p = np.asarray(self.positions)
        if p.ndim != 2 or p.shape[1] != 3:
            raise MeshError(f"{label}: positions must have shape (V, 3), got {p.shape}")
        if p.dtype.kind not in "fiu":
            raise MeshError(f"{label}: positions must be numbers, got {p.dtype}")
        p = np.ascontiguousarray(p, dtype=np.float32)
        t = _as_triangles(self.triangles, label)
        V = p.shape[0]
        attrs: dict[str, np.ndarray] = {}
        for key, value in dict(self.attributes).items():
            a = np.ascontiguousarray(value)
            if a.ndim == 0 or a.shape[0] != V:
                raise MeshError(
                    f"{label}: attribute {key!r} has shape {a.shape}, first dimension must be V={V}"
                )
            attrs[str(key)] = _frozen(a)
        object.__setattr__(self, "positions", _frozen(p))
        object.__setattr__(self, "triangles", _frozen(t))
        object.__setattr__(self, "name", str(self.name))
        object.__setattr__(self, "attributes", attrs)
        object.__setattr__(self, "index_dtype", _as_index_dtype(self.index_dtype))
        object.__setattr__(self, "meta", dict(self.meta))

    # ------------------------------------------------------------------ sizes
    @property
    def vertex_count(self) -> int:
        """Number of vertices, ``V``."""
        return int(self.positions.shape[0])

    @property
    def triangle_count(self) -> int:
        """Number of triangles, ``T``."""
        return int(self.triangles.shape[0])

    @cached_property
    def degenerate_mask(self) -> np.ndarray:
        """Boolean ``(T,)``: triangles with a repeated index (kept, never removed)."""
        t = self.triangles
        m = (t[:, 0] == t[:, 1]) | (t[:, 1] == t[:, 2]) | (t[:, 0] == t[:, 2])
        return _frozen(m)

    @cached_property
    def degenerate_count(self) -> int:
        """Number of triangles with a repeated index."""
        return int(np.count_nonzero(self.degenerate_mask))

    @property
    def normals(self) -> np.ndarray | None:
        """The ``normal`` attribute, or None."""
        return self.attributes.get(ATTR_NORMAL)

    @property
    def uvs(self) -> np.ndarray | None:
        """The ``uv`` attribute (the first texture coordinates), or None."""
        return self.attributes.get(ATTR_UV)

    def bounds(self) -> np.ndarray:
        """The bounding box of the positions.

        Returns
        -------
        numpy.ndarray
            ``(2, 3)`` float64: the min and the max corner (zeros for an empty mesh).
        """
        if self.vertex_count == 0:
            return np.zeros((2, 3))
        return np.stack([self.positions.min(axis=0), self.positions.max(axis=0)]).astype(np.float64)

    def __repr__(self) -> str:
        attrs = ", ".join(f"{k}{list(v.shape[1:])}" for k, v in self.attributes.items())
        return (
            f"Mesh({self.name!r}, V={self.vertex_count}, T={self.triangle_count}, "
            f"index={self.index_dtype.name}, attributes=[{attrs}])"
        )

    # ------------------------------------------------------------- checking
    def validate(self, source: str | None = None) -> Mesh:
        """Check the contents.

        Refused: no vertices, no triangles, non-finite positions, an index ``>= V``, a
        ``uint16`` index type with more than 65536 vertices.

        Parameters
        ----------
        source : str, optional
            A file name, put in the message instead of the mesh name.

        Returns
        -------
        Mesh
            ``self``.

        Raises
        ------
        MeshError
            The first problem found, in one line.
        """
        label = source or self.name or "mesh"
        if self.vertex_count == 0:
            raise MeshError(f"{label}: empty mesh (no vertices)")
        if self.triangle_count == 0:
            raise MeshError(f"{label}: no triangles ({self.vertex_count} vertices only: a point cloud?)")
        finite = np.isfinite(self.positions)
        if not finite.all():
            bad = int(np.count_nonzero(~finite.all(axis=1)))
            first = int(np.argmin(finite.all(axis=1)))
            raise MeshError(f"{label}: {bad} vertex position(s) are NaN or infinite (first: vertex {first})")
        top = int(self.triangles.max())
        if top >= self.vertex_count:
            tri = int(np.argmax((self.triangles >= self.vertex_count).any(axis=1)))
            raise MeshError(
                f"{label}: triangle {tri} uses vertex index {int(self.triangles[tri].max())}, "
                f"but there are only {self.vertex_count} vertices"
            )
        if self.index_dtype == np.uint16 and self.vertex_count > MAX_16BIT_VERTICES:
            raise MeshError(f"{label}: uint16 indices cannot address {self.vertex_count} vertices")
        return self

    def equals(self, other: Mesh, *, check_name: bool = True) -> bool:
        """Exact equality of arrays (attributes' dtypes included), index type and name.

        Parameters
        ----------
        other : Mesh
            The mesh to compare with (anything else is unequal).
        check_name : bool, keyword-only
            Compare the names too (default True).

        Returns
        -------
        bool
            Whether the two are equal.
        """
        if not isinstance(other, Mesh):
            return False
        if check_name and self.name != other.name:
            return False
        if self.index_dtype != other.index_dtype or set(self.attributes) != set(other.attributes):
            return False
        if not (np.array_equal(self.positions, other.positions) and np.array_equal(self.triangles, other.triangles)):
            return False
        for k, a in self.attributes.items():
            b = other.attributes[k]
            if a.dtype != b.dtype or a.shape != b.shape or not np.array_equal(a, b, equal_nan=a.dtype.kind == "f"):
                return False
        return True

    # ----------------------------------------------------------- new meshes
    def replace(self, **changes: Any) -> Mesh:
        """A copy with some fields changed (``dataclasses.replace``).

        Parameters
        ----------
        **changes
            New values of fields (``name=``, ``meta=``...), checked as at construction.

        Returns
        -------
        Mesh
            The new mesh.
        """
        return dataclasses.replace(self, **changes)

    def with_triangles(self, triangles: Any) -> Mesh:
        """Same vertices, new triangles (e.g. a reordering from an optimizer).

        Parameters
        ----------
        triangles : array_like, shape (T, 3)
            The new index buffer; its indices must address existing vertices.

        Returns
        -------
        Mesh
            The new mesh.

        Raises
        ------
        MeshError
            An index out of range.
        """
        t = _as_triangles(triangles, self.name or "mesh")
        if t.size and int(t.max()) >= self.vertex_count:
            raise MeshError(
                f"{self.name or 'mesh'}: new triangles use vertex {int(t.max())}, "
                f"but there are only {self.vertex_count} vertices"
            )
        return dataclasses.replace(self, triangles=t)

    def with_vertices(self, source_indices: Any, triangles: Any | None = None) -> Mesh:
        """A new vertex buffer gathered from this one.

        New vertex ``i`` is old vertex ``source_indices[i]`` (positions and every attribute
        alike).  A ``uint16`` index type becomes ``uint32`` when the new buffer no longer
        fits 16 bits.

        Parameters
        ----------
        source_indices : array_like of int, shape (V',)
            The old vertex of each new one; may reorder, drop or repeat vertices.
        triangles : array_like, shape (T, 3), optional
            Triangles indexing the new buffer.  When omitted the old triangles are kept,
            which is only allowed when the new buffer starts with the old one unchanged
            (appending copies).

        Returns
        -------
        Mesh
            The new mesh.

        Raises
        ------
        MeshError
            Indices out of range, or old triangles kept over a buffer that moved them.
        """
        label = self.name or "mesh"
        src = np.asarray(source_indices)
        if src.ndim != 1 or (src.size and src.dtype.kind not in "iu"):
            raise MeshError(f"{label}: source_indices must be a 1-D integer array")
        src = src.astype(np.int64, copy=False)
        if src.size and (src.min() < 0 or src.max() >= self.vertex_count):
            raise MeshError(f"{label}: source_indices out of range 0..{self.vertex_count - 1}")
        if triangles is None:
            V = self.vertex_count
            if src.size < V or not np.array_equal(src[:V], np.arange(V)):
                raise MeshError(
                    f"{label}: with_vertices without new triangles must keep the old vertices first"
                )
            triangles = self.triangles
        new_v = int(src.size)
        t = _as_triangles(triangles, label)
        if t.size and int(t.max()) >= new_v:
            raise MeshError(f"{label}: triangles use vertex {int(t.max())}, new buffer has {new_v}")
        return dataclasses.replace(
            self,
            positions=self.positions[src],
            triangles=t,
            attributes={k: a[src] for k, a in self.attributes.items()},
            index_dtype=fit_index_dtype(self.index_dtype, new_v),
        )

    def append_vertex_copies(self, source_indices: Any, triangles: Any | None = None) -> Mesh:
        """Append copies of the given vertices at the end of the vertex buffer.

        Copy ``k`` becomes vertex ``V + k`` and carries every attribute of vertex
        ``source_indices[k]``; the existing vertices keep their indices.

        Parameters
        ----------
        source_indices : array_like of int
            The vertex each copy is made from.
        triangles : array_like, shape (T, 3), optional
            The new triangles, which may use the copies (default: the current ones).

        Returns
        -------
        Mesh
            The new mesh.
        """
        src = np.asarray(source_indices, dtype=np.int64).reshape(-1)
        full = np.concatenate([np.arange(self.vertex_count, dtype=np.int64), src])
        return self.with_vertices(full, triangles if triangles is not None else self.triangles)


def concatenate(meshes: Sequence[Mesh], name: str | None = None) -> Mesh:
    """One mesh holding ``meshes`` one after the other (vertex buffers appended, indices offset).

    Only attributes present in every part with the same trailing shape and dtype kind are
    kept.  The index type is ``uint16`` when every part was 16-bit and the total fits.
    ``meta["parts"]`` lists ``(name, first_triangle, end_triangle, first_vertex, end_vertex)``.
    """
    meshes = list(meshes)
    if not meshes:
        raise MeshError("concatenate: no meshes")
    if len(meshes) == 1 and name is None:
        return meshes[0]
    keys: list[str] = []
    for k, a in meshes[0].attributes.items():
        if all(
            k in m.attributes
            and m.attributes[k].shape[1:] == a.shape[1:]
            and m.attributes[k].dtype.kind == a.dtype.kind
            for m in meshes
        ):
            keys.append(k)
    offsets = np.cumsum([0] + [m.vertex_count for m in meshes])
    tri_offsets = np.cumsum([0] + [m.triangle_count for m in meshes])
    total_v = int(offsets[-1])
    tris = np.concatenate(
        [m.triangles.astype(np.int64) + int(o) for m, o in zip(meshes, offsets[:-1], strict=True)]
    ) if tri_offsets[-1] else np.zeros((0, 3), np.uint32)
    attrs = {}
    for k in keys:
        dt = np.result_type(*[m.attributes[k].dtype for m in meshes])
        attrs[k] = np.concatenate([m.attributes[k].astype(dt, copy=False) for m in meshes])
    all16 = all(m.index_dtype == np.uint16 for m in meshes)
    parts = [
        (m.name, int(tri_offsets[i]), int(tri_offsets[i + 1]), int(offsets[i]), int(offsets[i + 1]))
        for i, m in enumerate(meshes)
    ]
    return Mesh(
        positions=np.concatenate([m.positions for m in meshes]),
        triangles=tris,
        name=name if name is not None else "+".join(m.name for m in meshes),
        attributes=attrs,
        index_dtype=fit_index_dtype(np.uint16 if all16 else np.uint32, total_v),
        meta={"parts": parts},
    )

