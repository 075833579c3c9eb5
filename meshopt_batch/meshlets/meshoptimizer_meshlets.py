"""meshoptimizer's meshlet builder and bounds (the peer users run today), from ``almeshopt``.

The ``meshoptimizer`` package on PyPI wraps no meshlet function; ``almeshopt`` (PyPI, optional
``compare`` extra) compiles meshoptimizer's C++ into its extension module.  Its
``meshopt_buildMeshlets`` and ``meshopt_computeMeshletBounds`` are called through :mod:`ctypes`
rather than its Python wrapper, whose triangle buffer is ``3 * max_triangles`` bytes per
meshlet: the C library starts each meshlet's local triangles on a 4-byte boundary, so a meshlet
takes ``(3 * max_triangles + 3) & ~3`` bytes and the wrapper's buffer overflows when
``max_triangles`` is not a multiple of 4 (NVIDIA's 126, for one).

References
----------
.. [1] A. Kapoulkine, meshoptimizer, https://github.com/zeux/meshoptimizer (``buildMeshlets``,
   ``computeMeshletBounds``, ``meshopt_Meshlet``, ``meshopt_Bounds``).
"""

from __future__ import annotations

import ctypes
import functools
import sys
import time

import numpy as np

from ..support.errors import MeshoptBatchError
from .meshlet_result import MeshletResult

__all__ = ["available", "build_meshlets_meshoptimizer", "meshoptimizer_bounds", "MISSING_REASON"]

MISSING_REASON = "almeshopt is not installed (pip install 'meshopt-batch[compare]')"

_size = ctypes.c_size_t
_u32 = ctypes.POINTER(ctypes.c_uint32)
_u8 = ctypes.POINTER(ctypes.c_uint8)
_f32 = ctypes.POINTER(ctypes.c_float)


class _Bounds(ctypes.Structure):
    """``meshopt_Bounds``, returned by value."""

    _fields_ = [("center", ctypes.c_float * 3), ("radius", ctypes.c_float),
                ("cone_apex", ctypes.c_float * 3), ("cone_axis", ctypes.c_float * 3),
                ("cone_cutoff", ctypes.c_float), ("cone_axis_s8", ctypes.c_int8 * 3),
                ("cone_cutoff_s8", ctypes.c_int8)]


@functools.cache
def _library():
    """``almeshopt``'s compiled meshoptimizer with the functions' signatures declared, or ``None``."""
    try:
        import almeshopt  # lazy: optional package, only the peer needs it

        module = sys.modules[almeshopt.build_meshlets.__module__]
        lib = ctypes.CDLL(module.__file__)
        build, bound = lib.meshopt_buildMeshlets, lib.meshopt_buildMeshletsBound
        bounds = lib.meshopt_computeMeshletBounds
    except (ImportError, OSError, AttributeError, KeyError):
        return None
    build.restype = _size
    build.argtypes = [_u32, _u32, _u8, _u32, _size, _f32, _size, _size, _size, _size, ctypes.c_float]
    bound.restype = _size
    bound.argtypes = [_size, _size, _size]
    bounds.restype = _Bounds
    bounds.argtypes = [_u32, _u8, _size, _f32, _size, _size]
    return lib


def available() -> bool:
    """``almeshopt``'s meshlet functions can be called."""
    return _library() is not None


def _lib():
    lib = _library()
    if lib is None:
        raise MeshoptBatchError(f"method 'meshoptimizer' needs almeshopt: {MISSING_REASON}")
    return lib


def _ptr(a: np.ndarray, kind):
    return a.ctypes.data_as(kind)


def build_meshlets_meshoptimizer(tris: np.ndarray, positions: np.ndarray, max_vertices: int,
                                 max_triangles: int, cone_weight: float = 0.0) -> MeshletResult:
    """meshoptimizer's ``buildMeshlets`` under the same limits, repacked densely."""
    lib = _lib()
    t0 = time.perf_counter()
    stats = {"method": "meshoptimizer", "cone_weight": float(cone_weight)}
    indices = np.ascontiguousarray(tris, np.uint32).reshape(-1)
    if indices.size == 0:
        return MeshletResult(np.zeros((0, 4), np.uint32), np.zeros(0, np.uint32), np.zeros(0, np.uint8),
                             max_vertices, max_triangles, {**stats, "seconds": 0.0})
    pos = np.ascontiguousarray(positions, np.float32).reshape(-1, 3)
    count = lib.meshopt_buildMeshletsBound(indices.size, max_vertices, max_triangles)
    meshlets = np.zeros((count, 4), np.uint32)
    meshlet_vertices = np.zeros(count * max_vertices, np.uint32)
    meshlet_triangles = np.zeros(count * ((3 * max_triangles + 3) & ~3), np.uint8)
    made = lib.meshopt_buildMeshlets(_ptr(meshlets, _u32), _ptr(meshlet_vertices, _u32),
                                     _ptr(meshlet_triangles, _u8), _ptr(indices, _u32), indices.size,
                                     _ptr(pos, _f32), pos.shape[0], pos.strides[0], max_vertices,
                                     max_triangles, float(cone_weight))
    seconds = time.perf_counter() - t0
    return MeshletResult.from_slices(meshlets[:made], meshlet_vertices, meshlet_triangles,
                                     max_vertices, max_triangles, {**stats, "seconds": seconds})


def meshoptimizer_bounds(result: MeshletResult, positions: np.ndarray) -> dict:
    """meshoptimizer's ``computeMeshletBounds`` for every meshlet, as arrays named like
    :class:`~meshopt_batch.meshlets.bounds.MeshletBounds`' fields."""
    lib = _lib()
    pos = np.ascontiguousarray(positions, np.float32).reshape(-1, 3)
    rows = []
    for v0, t0, vc, tc in result.meshlets.astype(np.int64):
        mv = np.ascontiguousarray(result.meshlet_vertices[v0:v0 + vc], np.uint32)
        mt = np.ascontiguousarray(result.meshlet_triangles[t0:t0 + 3 * tc], np.uint8)
        rows.append(lib.meshopt_computeMeshletBounds(_ptr(mv, _u32), _ptr(mt, _u8), int(tc), _ptr(pos, _f32),
                                                     pos.shape[0], pos.strides[0]))
    return {"center": np.array([r.center[:] for r in rows], np.float64).reshape(-1, 3),
            "radius": np.array([r.radius for r in rows], np.float64),
            "cone_apex": np.array([r.cone_apex[:] for r in rows], np.float64).reshape(-1, 3),
            "cone_axis": np.array([r.cone_axis[:] for r in rows], np.float64).reshape(-1, 3),
            "cone_cutoff": np.array([r.cone_cutoff for r in rows], np.float64)}
