"""Compact mesh topology shared by every algorithm: vertex->faces CSR, valence, dual graph.

All builders run in O(T) (counting sort plus bounded scans over vertex fans) and return flat
int64 arrays, in the style of meshoptimizer's triangle adjacency.  A degenerate triangle
(a repeated index) is listed once per *distinct* vertex, so valence counts faces, not corners.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _running_ends(tris, offsets):
    """Count each vertex's distinct-corner faces into ``offsets[v]`` (zeros, ``V + 1``
    entries) and turn the counts into running ends; ``offsets[V]`` is the total."""
    t_count = tris.shape[0]
    vertex_count = offsets.shape[0] - 1
    for t in range(t_count):
        a, b, c = tris[t, 0], tris[t, 1], tris[t, 2]
        offsets[a] += 1
        if b != a:
            offsets[b] += 1
        if c != a and c != b:
            offsets[c] += 1
    for v in range(1, vertex_count):
        offsets[v] += offsets[v - 1]
    if vertex_count > 0:
        offsets[vertex_count] = offsets[vertex_count - 1]


@njit(cache=True, nogil=True)
def _vertex_faces(tris, offsets):
    """Fill ``offsets`` (zeros, ``V + 1`` entries) and return ``faces``, both of offsets' type.

    After :func:`_running_ends` the triangles are placed back to front, each decrementing its
    vertices' ends, which leaves every start in ``offsets[v]`` and every list in ascending
    face order without a cursor array.
    """
    _running_ends(tris, offsets)
    faces = np.empty(offsets[offsets.shape[0] - 1], offsets.dtype)
    for t in range(tris.shape[0] - 1, -1, -1):
        a, b, c = tris[t, 0], tris[t, 1], tris[t, 2]
        offsets[a] -= 1
        faces[offsets[a]] = t
        if b != a:
            offsets[b] -= 1
            faces[offsets[b]] = t
        if c != a and c != b:
            offsets[c] -= 1
            faces[offsets[c]] = t
    return faces


@njit(cache=True, nogil=True)
def _vertex_corners(tris, offsets):
    """As :func:`_vertex_faces`, entries ``4 * face + corner``, plus ``place[face, corner]``."""
    _running_ends(tris, offsets)
    entries = np.empty(offsets[offsets.shape[0] - 1], offsets.dtype)
    place = np.empty((tris.shape[0], 3), offsets.dtype)
    for t in range(tris.shape[0] - 1, -1, -1):
        a, b, c = tris[t, 0], tris[t, 1], tris[t, 2]
        s = offsets[a] - 1
        offsets[a] = s
        entries[s] = 4 * t
        place[t, 0] = s
        if b != a:
            s = offsets[b] - 1
            offsets[b] = s
            entries[s] = 4 * t + 1
            place[t, 1] = s
        if c != a and c != b:
            s = offsets[c] - 1
            offsets[c] = s
            entries[s] = 4 * t + 2
            place[t, 2] = s
    return entries, place


def vertex_faces(triangles: np.ndarray, vertex_count: int | None = None, dtype=np.int64):
    """Faces around each vertex as CSR arrays.

    Parameters
    ----------
    triangles : (T, 3) integer array
        The index buffer.
    vertex_count : int, optional
        Defaults to ``max index + 1``.
    dtype : np.int64 or np.int32
        Integer type of both arrays; ``np.int32`` (half the memory traffic, for the
        optimizers) needs ``3 T < 2**31``.

    Returns
    -------
    offsets : (V + 1,) dtype
        Faces of vertex ``v`` are ``faces[offsets[v]:offsets[v + 1]]`` (ascending face order).
    faces : (sum of valences,) dtype
        The face lists of all vertices, one after the other.

    Raises
    ------
    ValueError
        Another dtype, or too many triangles for int32.
    """
    tris = _as_triangles(triangles)
    if vertex_count is None:
        vertex_count = int(tris.max()) + 1 if tris.size else 0
    dtype = np.dtype(dtype)
    if dtype not in (np.dtype(np.int64), np.dtype(np.int32)):
        raise ValueError(f"vertex_faces: dtype must be int64 or int32, got {dtype}")
    if 3 * tris.shape[0] > np.iinfo(dtype).max:
        raise ValueError(f"vertex_faces: {tris.shape[0]} triangles need int64 face lists")
    offsets = np.zeros(int(vertex_count) + 1, dtype)
    return offsets, _vertex_faces(tris, offsets)


def vertex_corners(triangles: np.ndarray, vertex_count: int | None = None):
    """Corners around each vertex as CSR arrays, with the place of every entry.

    The lists of :func:`vertex_faces` (same offsets, same ascending face order) with each
    entry ``4 * face + corner``, ``corner`` the first corner of ``face`` that holds the
    vertex, and ``place[face, corner]`` the entry's index in ``entries``: an algorithm that
    reorders the lists keeps ``place`` up to date and takes a face out of a list in O(1).

    Returns
    -------
    offsets : (V + 1,) int32 (int64 when ``4 T`` exceeds int32)
    entries : (sum of valences,) same type
    place : (T, 3) same type; only the distinct corners' entries are set
    """
    tris = _as_triangles(triangles)
    if vertex_count is None:
        vertex_count = int(tris.max()) + 1 if tris.size else 0
    dtype = np.int32 if 4 * tris.shape[0] + 3 <= np.iinfo(np.int32).max else np.int64
    offsets = np.zeros(int(vertex_count) + 1, dtype)
    entries, place = _vertex_corners(tris, offsets)
    return offsets, entries, place


def face_index_type(triangle_count: int):
    """The narrowest of int32 / int64 that :func:`vertex_faces` can use for ``T`` triangles."""
    return np.int32 if 3 * int(triangle_count) <= np.iinfo(np.int32).max else np.int64


def valence(triangles: np.ndarray, vertex_count: int | None = None) -> np.ndarray:
    """Number of faces incident to each vertex.

    Parameters
    ----------
    triangles : (T, 3) integer array
        The index buffer.
    vertex_count : int, optional
        Defaults to ``max index + 1``.

    Returns
    -------
    numpy.ndarray
        ``(V,)`` int64 valences.
    """
    offsets, _ = vertex_faces(triangles, vertex_count)
    return np.diff(offsets)


@njit(cache=True, nogil=True)
def _face_adjacency(tris, offsets, faces):
    t_count = tris.shape[0]
    counts = np.zeros(t_count + 1, np.int64)
    # two passes over the same scan: count, then fill
    for sweep in range(2):
        if sweep == 1:
            for t in range(t_count):
                counts[t + 1] += counts[t]
            out = np.empty(counts[t_count], np.int64)
            fill = counts[:-1].copy()
        for t in range(t_count):
            for e in range(3):
                a = tris[t, e]
                b = tris[t, (e + 1) % 3]
                if a == b:
                    continue
                for k in range(offsets[a], offsets[a + 1]):
                    f = faces[k]
                    if f == t:
                        continue
                    if tris[f, 0] == b or tris[f, 1] == b or tris[f, 2] == b:
                        # skip a neighbour already recorded for this face through another edge
                        dup = False
                        for e2 in range(e):
                            a2 = tris[t, e2]
                            b2 = tris[t, (e2 + 1) % 3]
                            if a2 != b2 and (tris[f, 0] == a2 or tris[f, 1] == a2 or tris[f, 2] == a2) and (
                                tris[f, 0] == b2 or tris[f, 1] == b2 or tris[f, 2] == b2
                            ):
                                dup = True
                        if dup:
                            continue
                        if sweep == 0:
                            counts[t + 1] += 1
                        else:
                            out[fill[t]] = f
                            fill[t] += 1
    return counts, out


def face_adjacency(triangles: np.ndarray, vertex_count: int | None = None):
    """Dual graph: faces sharing an edge, as CSR arrays.

    Non-manifold edges give every face on the edge as a neighbour; a pair of faces sharing
    two edges is listed once.

    Parameters
    ----------
    triangles : (T, 3) integer array
        The index buffer.
    vertex_count : int, optional
        Defaults to ``max index + 1``.

    Returns
    -------
    offsets : (T + 1,) int64
        Where each face's neighbours start in ``neighbours``.
    neighbours : int64 array
        Neighbours of face ``t`` are ``neighbours[offsets[t]:offsets[t + 1]]``.
    """
    tris = _as_triangles(triangles)
    offsets, faces = vertex_faces(tris, vertex_count)
    return _face_adjacency(tris, offsets, faces)


def _as_triangles(triangles) -> np.ndarray:
    """The index buffer as a writable C-contiguous (T, 3) ``uint32`` array: the one type the
    kernels are compiled for at install, so another integer type or a read-only array
    compiles nothing on its first use (indices outside uint32 raise ``ValueError``)."""
    tris = np.asarray(triangles)
    if tris.ndim != 2 or tris.shape[1] != 3:
        tris = tris.reshape(-1, 3)
    if tris.dtype != np.uint32 and tris.size and (tris.min() < 0 or tris.max() > np.iinfo(np.uint32).max):
        raise ValueError("triangle indices must lie in 0 .. 2**32 - 1")
    if tris.dtype == np.uint32 and tris.flags.c_contiguous and tris.flags.writeable:
        return tris
    return np.array(tris, np.uint32, order="C")
