"""Checks that meshlets are a valid cut of an index buffer.

Valid means: the layout is consistent (offsets, counts and dtypes; meshlets packed densely),
both limits hold, no meshlet lists a vertex twice, every local index addresses the meshlet's
own vertices, and the triangles of all meshlets are exactly the input triangles -- each one
once, with its winding (a cyclic rotation of its corners is allowed, a flip is not).
"""

from __future__ import annotations

import numpy as np

from ..support.errors import MeshoptBatchError
from .meshlet_result import MeshletResult

__all__ = ["meshlet_problems", "validate_meshlets"]


def _canonical(tris: np.ndarray) -> np.ndarray:
    """Each triangle rotated so that its smallest index comes first (winding kept)."""
    tris = np.asarray(tris, np.int64).reshape(-1, 3)
    shift = np.argmin(tris, axis=1)
    cols = (shift[:, None] + np.arange(3)[None, :]) % 3
    return np.take_along_axis(tris, cols, axis=1)


def _sorted_rows(tris: np.ndarray) -> np.ndarray:
    c = _canonical(tris)
    return c[np.lexsort((c[:, 2], c[:, 1], c[:, 0]))] if c.shape[0] else c


def meshlet_problems(result: MeshletResult, triangles, vertex_count: int | None = None) -> list[str]:
    """Every way a set of meshlets fails to be a valid cut of an index buffer.

    Parameters
    ----------
    result : MeshletResult
        The meshlets.
    triangles : (T, 3) integer array_like
        The index buffer they should cut.
    vertex_count : int, optional
        Size of the vertex buffer (default: the largest index + 1).

    Returns
    -------
    list of str
        One line per problem; empty when the meshlets are valid.
    """
    ml, mv, mt = result.meshlets, result.meshlet_vertices, result.meshlet_triangles
    tris = np.asarray(triangles).reshape(-1, 3)
    problems = []
    for name, arr, dtype in (("meshlets", ml, np.uint32), ("meshlet_vertices", mv, np.uint32),
                             ("meshlet_triangles", mt, np.uint8)):
        if arr.dtype != dtype:
            problems.append(f"{name} is {arr.dtype}, expected {np.dtype(dtype)}")
    if ml.ndim != 2 or ml.shape[1] != 4:
        return problems + [f"meshlets has shape {ml.shape}, expected (M, 4)"]
    m = ml.astype(np.int64)
    vc, tc = m[:, 2], m[:, 3]
    if (vc > result.max_vertices).any():
        problems.append(f"{int((vc > result.max_vertices).sum())} meshlet(s) over {result.max_vertices} vertices")
    if (tc > result.max_triangles).any():
        problems.append(f"{int((tc > result.max_triangles).sum())} meshlet(s) over {result.max_triangles} triangles")
    if (tc < 1).any() or (vc < 1).any():
        problems.append("empty meshlet(s)")
    v_start = np.concatenate(([0], np.cumsum(vc)[:-1])) if m.shape[0] else vc
    t_start = np.concatenate(([0], np.cumsum(3 * tc)[:-1])) if m.shape[0] else tc
    if not np.array_equal(m[:, 0], v_start) or not np.array_equal(m[:, 1], t_start):
        problems.append("offsets are not densely packed")
    if mv.shape[0] != vc.sum() or mt.shape[0] != 3 * tc.sum():
        problems.append(f"array lengths {mv.shape[0]}/{mt.shape[0]} do not match the counts "
                        f"{int(vc.sum())}/{int(3 * tc.sum())}")
    if problems:
        return problems
    owner = np.repeat(np.arange(m.shape[0]), vc)
    pairs = np.stack([owner, mv.astype(np.int64)], axis=1)
    if pairs.shape[0] and np.unique(pairs, axis=0).shape[0] != pairs.shape[0]:
        problems.append("a meshlet lists a vertex twice")
    if vertex_count is not None and mv.size and int(mv.max()) >= vertex_count:
        problems.append(f"vertex id {int(mv.max())} out of range for {vertex_count} vertices")
    local_limit = np.repeat(vc, 3 * tc)
    if (mt.astype(np.int64) >= local_limit).any():
        problems.append("a local index addresses past its meshlet's vertices")
        return problems
    got = result.triangles().astype(np.int64)
    if got.shape[0] != tris.shape[0]:
        problems.append(f"{got.shape[0]} triangles in meshlets, {tris.shape[0]} in the input")
    elif not np.array_equal(_sorted_rows(got), _sorted_rows(tris)):
        problems.append("the meshlets' triangles are not the input triangles with their winding")
    return problems


def validate_meshlets(result: MeshletResult, triangles, vertex_count: int | None = None) -> None:
    """Check that a set of meshlets is a valid cut of an index buffer.

    Parameters
    ----------
    result : MeshletResult
        The meshlets.
    triangles : (T, 3) integer array_like
        The index buffer they should cut.
    vertex_count : int, optional
        Size of the vertex buffer (default: the largest index + 1).

    Raises
    ------
    MeshoptBatchError
        Naming the first problem :func:`meshlet_problems` finds.
    """
    problems = meshlet_problems(result, triangles, vertex_count)
    if problems:
        raise MeshoptBatchError(f"invalid meshlets: {problems[0]}")
