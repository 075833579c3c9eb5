"""The window search's local moves: a new order for one window's triangles, compiled.

Each move takes the triangles of a window ``[start, stop)`` of the current order and returns the
same triangles in another order, numbered compactly (first use in the window) before the
ordering algorithm sees them, so a move costs the window's size, not the buffer's:

``FROM_FIRST``
    meshoptimizer's ``optimize_vertex_cache`` (a tuned Forsyth-style scorer): it starts from the
    window's first triangle, next to what precedes the window, and resumes its dead ends in the
    window's order.
``FROM_MIDDLE``
    The same given the window from its middle triangle on: another seed, and its dead ends
    resumed in another order.
``FROM_END``
    The same given last triangle first: the seed next to what follows the window.
``KCACHE``
    K-Cache (Lin & Yu 2006, :mod:`..kcache`) for a cache of the target's smallest LRU: a focus
    vertex's whole fan at a time, the focus chosen by simulating the cache ahead, where
    meshoptimizer's scorer takes one triangle at a time.

meshoptimizer's C function is called from compiled code: its symbol is taken from the
``meshoptimizer`` package's extension module, which this module loads into LLVM's symbol table
once (:func:`llvmlite.binding.load_library_permanently`), so the compiled search calls the very
function the ``meshoptimizer`` method and gltfpack's order come from.

References
----------
Kapoulkine, A.  meshoptimizer (``meshopt_optimizeVertexCache``).
Lin, G., Yu, T. P.-Y. (2006).  An improved vertex caching scheme for 3D mesh rendering.  IEEE
TVCG 12(4).
Forsyth, T. (2006).  Linear-speed vertex cache optimisation.
"""

from __future__ import annotations

import llvmlite.binding
import numpy as np
from numba import njit, types

from ...geometry.mesh_topology import _vertex_faces
from ...support.meshoptimizer_bindings import c_library_path
from ..kcache import _MAX_FAN_SORT, _MAX_SIMULATED_FACES, WEIGHT_C2, WEIGHT_C3, _kcache, _sort_fans

__all__ = ["FROM_END", "FROM_FIRST", "FROM_MIDDLE", "KCACHE", "MOVE_NAMES", "local_order", "move_buffers"]

FROM_FIRST, FROM_MIDDLE, FROM_END, KCACHE = range(4)
#: A move's name, by its code.
MOVE_NAMES = ("meshoptimizer from the first triangle", "meshoptimizer from the middle",
              "meshoptimizer from the last triangle", "K-Cache")


llvmlite.binding.load_library_permanently(c_library_path())
_optimize_vertex_cache = types.ExternalFunction(
    "meshopt_optimizeVertexCache",
    types.void(types.CPointer(types.uint32), types.CPointer(types.uint32), types.uintp, types.uintp))


def move_buffers(vertex_count: int, rows: int) -> tuple:
    """Scratch arrays for :func:`local_order` on windows of at most ``rows`` triangles over a
    buffer of ``vertex_count`` vertices."""
    return (np.full(max(vertex_count, 1), -1, np.int64), np.zeros(3 * rows, np.int64), np.zeros(3 * rows, np.uint32),
            np.zeros(3 * rows, np.uint32), np.zeros((rows, 3), np.int64), np.zeros(rows, np.int64))


@njit(cache=True, nogil=True)
def _compact(window, scratch, used, compact):
    """Number the window's vertices 0, 1, ... by first use into ``compact`` (flat), ``used``
    the new -> buffer vertex map, with ``scratch`` (-1 for every vertex, so again on return) as
    the table; returns how many there are."""
    count = 0
    for t in range(window.shape[0]):
        for i in range(3):
            v = window[t, i]
            if scratch[v] < 0:
                scratch[v] = count
                used[count] = v
                count += 1
            compact[3 * t + i] = scratch[v]
    for k in range(count):
        scratch[used[k]] = -1
    return count


@njit(cache=True, nogil=True)
def local_order(move, window, out, buffers, kcache_size):
    """The triangles of ``window`` ((w, 3) int64) reordered by ``move`` into ``out[:w]``."""
    scratch, used, compact, result, given, order = buffers
    w = window.shape[0]
    source = given[:w]
    half = w // 2
    for t in range(w):
        k = t
        if move == FROM_MIDDLE:
            k = (t + half) % w
        elif move == FROM_END:
            k = w - 1 - t
        for i in range(3):
            source[t, i] = window[k, i]
    count = _compact(source, scratch, used, compact)
    if move == KCACHE:
        tris = compact[:3 * w].reshape(w, 3)
        offsets = np.zeros(count + 1, np.int32)
        faces = _vertex_faces(tris, offsets)
        _sort_fans(tris, offsets, faces)
        _kcache(tris, offsets, faces, kcache_size, WEIGHT_C2, WEIGHT_C3, _MAX_SIMULATED_FACES, _MAX_FAN_SORT,
                order[:w], np.zeros((0, 3), np.uint32))
        for t in range(w):
            for i in range(3):
                out[t, i] = window[order[t], i]
        return
    _optimize_vertex_cache(result.ctypes, compact.ctypes, 3 * w, count)
    for t in range(w):
        for i in range(3):
            out[t, i] = used[result[3 * t + i]]
