"""Welding: merging vertices whose every attribute is equal, by value or within a tolerance.

Two vertices are the same vertex when every attribute they carry is equal: position,
normal, tangent, texture coordinates, colours, skin joints and weights, and the deltas of
every morph target.  A GPU shades a vertex once per index, so merged duplicates can be
reused from the post-transform memory where two copies never could (paper 001 sec. 3.1:
reuse is by index).

**By value** (:func:`weld_records`, what ``optimize`` does): float components compare as
numbers, so ``-0.0`` equals ``0.0`` (an exporter that writes ``-0.0`` in normals leaves
such vertices apart under a bit comparison); NaN equals nothing, not even itself; integer
components compare as stored.  A merged vertex keeps the bits of its first vertex.  This
changes nothing on screen: every operation a vertex shader applies to an attribute gives
equal results for equal inputs, except a division by zero, whose infinity's sign follows
the zero's (``1 / -0.0``), and a shader that inspects the sign bit; neither is done with
vertex attributes in practice.

**Within a tolerance** (``tolerance=EPS``, ``--weld-tolerance``): among vertices equal by
value in every column that is not *tolerant* (positions and joints are never tolerant),
a vertex also merges with an earlier one whose tolerant columns each differ by at most
``EPS``.  Vertices are taken in order; each joins the first earlier representative of its
exact group within ``EPS`` (it keeps that representative's values) or becomes a
representative itself, so every merged vertex moves by at most ``EPS`` per component (a
chain of small differences never adds up).  On screen: normals and tangents turn by up to
about ``EPS`` radians per component (lighting changes by that order), texture
coordinates move by ``EPS`` (``EPS`` x the texture's size in texels), colours and skin
weights change by ``EPS`` (a skinned position by ``EPS`` x its bones' displacement).

The welded buffer keeps the vertices' order: new vertex ``k`` is the ``k``-th vertex of the
old buffer that is not a repeat of an earlier one.  Vertex-fetch order is chosen later
(:mod:`meshopt_batch.vertices.vertex_fetch`).

The exact grouping is one ``numpy.unique`` over the vertices' canonical bytes viewed as
fixed-size records (a sort, no Python loop over vertices); the tolerant pass is a compiled
loop over each exact group (vertices sharing a position and joints: a handful each).

References
----------
.. [1] B. Kerbl, M. Kenzel, E. Ivanchenko, D. Schmalstieg, M. Steinberger, "Revisiting the
   Vertex Cache: Understanding and Optimizing Vertex Processing on the modern GPU",
   Proc. ACM Comput. Graph. Interact. Tech. 1(2), 2018 (paper 001), sec. 3.1.
.. [2] Khronos, glTF 2.0 specification, "Meshes": morph targets and skin attributes are
   per-vertex data like any other attribute.
.. [3] IEEE 754-2019, sec. 5.11: ``-0`` and ``+0`` compare equal, NaN compares unordered
   with everything, itself included.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numba import njit

from ..geometry.mesh_record import Mesh
from ..support.errors import MeshoptBatchError

__all__ = ["MAX_REPRESENTATIVES", "Weld", "check_tolerance", "vertex_records", "weld", "weld_mesh", "weld_records"]

#: Representatives of an exact group a vertex is compared with under a tolerance (the most
#: recent ones): bounds the work on a degenerate mesh with thousands of vertices at one position.
MAX_REPRESENTATIVES = 256


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


def _columns(arrays: Sequence[np.ndarray], vertex_count: int) -> list[np.ndarray]:
    out = []
    for a in arrays:
        a = np.ascontiguousarray(a)
        if a.shape[0] != vertex_count:
            raise MeshoptBatchError(f"weld: attribute with {a.shape[0]} rows for {vertex_count} vertices")
        out.append(a.reshape(vertex_count, -1))
    if not out:
        raise MeshoptBatchError("weld: no attributes")
    return out


def _as_records(columns: list[np.ndarray], vertex_count: int) -> np.ndarray:
    table = np.ascontiguousarray(np.concatenate([c.view(np.uint8).reshape(vertex_count, -1) for c in columns], axis=1))
    return table.view(np.dtype((np.void, table.shape[1]))).reshape(vertex_count)


def vertex_records(arrays: Sequence[np.ndarray], vertex_count: int) -> np.ndarray:
    """Every vertex's bytes over all ``arrays`` (first dimension ``vertex_count``) as one
    fixed-size record each: a ``(V,)`` array of ``numpy.void`` (a bit comparison)."""
    return _as_records([np.ascontiguousarray(c) for c in _columns(arrays, vertex_count)], vertex_count)


def _by_value(column: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """A column's canonical bytes for value comparison, and its rows holding a NaN."""
    if column.dtype.kind != "f":
        return np.ascontiguousarray(column), None
    with np.errstate(invalid="ignore"):  # a signalling NaN stays a NaN, quietly
        canonical = column + column.dtype.type(0)  # -0.0 + 0.0 is +0.0
    nan = np.isnan(canonical).any(axis=1)
    return np.ascontiguousarray(canonical), nan if nan.any() else None


def check_tolerance(value) -> float:
    """A weld tolerance: a finite number >= 0 (else :class:`MeshoptBatchError`)."""
    try:
        eps = float(value)
    except (TypeError, ValueError):
        raise MeshoptBatchError(f"weld tolerance must be a number >= 0, got {value!r}") from None
    if not math.isfinite(eps) or eps < 0:
        raise MeshoptBatchError(f"weld tolerance must be a finite number >= 0, got {value!r}")
    return eps


def weld_records(arrays: Sequence[np.ndarray], vertex_count: int, *, tolerant: Sequence[bool] | None = None,
                 tolerance: float = 0.0) -> np.ndarray:
    """Records for :func:`weld` (and :func:`meshopt_batch.vertices.vertex_set.optimize_vertex_set`)
    under which equal records are the vertices to merge by value, or within ``tolerance``
    on the ``tolerant`` arrays (see the module docstring).

    Parameters
    ----------
    arrays : sequence of ndarray
        Every attribute, first dimension ``vertex_count``; float arrays compare by value,
        integer arrays as stored.
    vertex_count : int
    tolerant : sequence of bool, keyword-only
        Per array: may differ by ``tolerance`` (float arrays only; default none).
    tolerance : float, keyword-only
        ``EPS`` >= 0 (0: by value only).
    """
    columns = _columns(arrays, vertex_count)
    tolerance = check_tolerance(tolerance)
    tolerant = list(tolerant) if tolerant is not None else [False] * len(columns)
    if len(tolerant) != len(columns):
        raise MeshoptBatchError("weld: one tolerant flag per attribute")
    loose = [c for c, t in zip(columns, tolerant, strict=True) if t and c.dtype.kind == "f"] if tolerance else []
    exact = [c for c, t in zip(columns, tolerant, strict=True) if not (t and c.dtype.kind == "f" and tolerance)]
    canon, nan = [], np.zeros(vertex_count, bool)
    for c in exact:
        value, rows = _by_value(c)
        canon.append(value)
        if rows is not None:
            nan |= rows
    if nan.any():  # NaN equals nothing: each such vertex gets a record of its own
        marker = np.where(nan, np.arange(1, vertex_count + 1, dtype=np.int64), 0)
        canon.append(marker.reshape(-1, 1))
    if not canon:
        canon.append(np.zeros((vertex_count, 1), np.uint8))
    records = _as_records(canon, vertex_count)
    if not loose or vertex_count == 0:
        return records
    _, group = np.unique(records, return_inverse=True)
    values = np.concatenate([c.astype(np.float64) for c in loose], axis=1)
    order = np.lexsort((np.arange(vertex_count), group.reshape(-1)))
    rep = _tolerant_representatives(order, group.reshape(-1)[order].astype(np.int64),
                                    np.ascontiguousarray(values), float(tolerance), MAX_REPRESENTATIVES)
    return rep.view(np.dtype((np.void, 8))).reshape(vertex_count)


@njit(cache=True, nogil=True)
def _tolerant_representatives(order, groups, values, eps, max_reps):  # pragma: no cover - compiled
    """Each vertex's representative (see the module docstring); ``order`` lists vertices by
    exact group, then by index."""
    n = order.shape[0]
    rep = np.empty(n, np.int64)
    reps = np.empty(n, np.int64)
    k = values.shape[1]
    start = 0
    while start < n:
        end = start
        while end < n and groups[end] == groups[start]:
            end += 1
        count = 0
        for j in range(start, end):
            v = order[j]
            found = -1
            first = max(0, count - max_reps)
            for r in range(first, count):
                u = reps[r]
                close = True
                for c in range(k):
                    if not abs(values[v, c] - values[u, c]) <= eps:
                        close = False
                        break
                if close:
                    found = u
                    break
            if found < 0:
                reps[count] = v
                count += 1
                found = v
            rep[v] = found
        start = end
    return rep


def weld(records: np.ndarray) -> Weld:
    """Merge vertices whose records (:func:`vertex_records`, :func:`weld_records`) are equal,
    keeping first occurrences in their order."""
    count = int(records.shape[0])
    if count == 0:
        return Weld(np.zeros(0, np.int64), np.zeros(0, np.int64))
    _, first, inverse = np.unique(records, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(order.shape[0], np.int64)
    rank[order] = np.arange(order.shape[0], dtype=np.int64)
    return Weld(rank[inverse.reshape(-1)], first[order].astype(np.int64))


def weld_mesh(mesh: Mesh, *, tolerance: float = 0.0) -> tuple[Mesh, Weld]:
    """``mesh`` with vertices equal by value (position and every attribute; other attributes
    than positions within ``tolerance``) merged, and the :class:`Weld` that did it;
    triangles keep their order and corners."""
    keys = sorted(mesh.attributes)
    arrays = [mesh.positions] + [mesh.attributes[k] for k in keys]
    tolerant = [False] + [not k.startswith("joints") for k in keys]
    w = weld(weld_records(arrays, mesh.vertex_count, tolerant=tolerant, tolerance=tolerance))
    if w.merged == 0:
        return mesh, w
    return mesh.with_vertices(w.source, w.remap[np.asarray(mesh.triangles, np.int64)]), w
