"""An order of breadth-first layers: the rows a long FIFO reuses, found on any mesh.

From one end of each connected component (the far end of a double sweep: the vertex farthest
from the vertex farthest from the component's first-used vertex), the vertices fall into
breadth-first layers, as in Cuthill & McKee's level structure; each layer's vertices are ranked
in the order the search reached them, which follows the ranks of the layer before (a vertex is
reached from the earliest-ranked neighbour in the previous layer).  A triangle belongs to the
lowest layer among its vertices and sits along it at the mean rank of its vertices (as a
fraction of each one's layer).  The order takes the components in order of first use, the
layers in turn, and each layer's triangles along it.

On a surface of rows (a grid, a sphere's rings from its pole, a strap) this gives back rows:
every layer is reused once, by the next, which Intel's FIFO of 128 vertices serves perfectly
where a layer is shorter than it.  It is not an order to ship, but a start for the window
search of :mod:`.window_search`, which folds rows into patches for the batch rules while the FIFO
still finds what it needs; on a scan the layers are long fronts and the start is useless
(:mod:`.starts` tries it only where it beats meshoptimizer's order on some profile).

References
----------
Cuthill, E., McKee, J. (1969).  Reducing the bandwidth of sparse symmetric matrices.  Proc.
24th ACM National Conference (the level structure of a breadth-first search).
George, A., Liu, J. W. H. (1979).  An implementation of a pseudoperipheral node finder.  ACM
TOMS 5(3) (starting from a far end).
Kerbl, B. et al. (2018).  Revisiting the Vertex Cache.  Proc. ACM Comput. Graph. Interact.
Tech. 1(2) (paper 001, sec. 3.3: Intel's FIFO of 128 vertices).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ...geometry.mesh_topology import vertex_faces

__all__ = ["order_by_layers"]


@njit(cache=True, nogil=True)
def _sweep(seed, tris, offsets, faces, depth, queue):
    """Breadth-first search from ``seed`` (``depth``: -1 for every vertex not yet reached);
    fills ``queue`` with the reached vertices in the order reached, returns how many."""
    depth[seed] = 0
    queue[0] = seed
    head, tail = 0, 1
    while head < tail:
        x = queue[head]
        head += 1
        for k in range(offsets[x], offsets[x + 1]):
            f = faces[k]
            for c in range(3):
                y = tris[f, c]
                if depth[y] < 0:
                    depth[y] = depth[x] + 1
                    queue[tail] = y
                    tail += 1
    return tail


@njit(cache=True, nogil=True)
def _forget(depth, queue, count):
    for k in range(count):
        depth[queue[k]] = -1


@njit(cache=True, nogil=True)
def _layers(tris, offsets, faces, vertex_count):
    """Every used vertex's layer (components' layers numbered on from the last component's)
    and its rank along the layer as a fraction in (0, 1); -1 and 0 for unused vertices."""
    layer = np.full(vertex_count, -1, np.int64)
    along = np.zeros(vertex_count, np.float64)
    depth = np.full(vertex_count, -1, np.int64)
    queue = np.empty(vertex_count, np.int64)
    base = 0
    flat = tris.reshape(-1)
    for k in range(flat.shape[0]):
        if layer[flat[k]] >= 0:
            continue
        seed = flat[k]
        for _ in range(2):
            count = _sweep(seed, tris, offsets, faces, depth, queue)
            seed = queue[count - 1]
            _forget(depth, queue, count)
        count = _sweep(seed, tris, offsets, faces, depth, queue)
        start = 0
        while start < count:
            stop = start
            while stop < count and depth[queue[stop]] == depth[queue[start]]:
                stop += 1
            for j in range(start, stop):
                v = queue[j]
                layer[v] = base + depth[v]
                along[v] = (j - start + 0.5) / (stop - start)
            start = stop
        base += depth[queue[count - 1]] + 1
        _forget(depth, queue, count)
    return layer, along


def order_by_layers(triangles: np.ndarray, vertex_count: int) -> np.ndarray:
    """The triangles in breadth-first layers (see the module docstring).

    Parameters
    ----------
    triangles : (T, 3) integer array
        Index buffer.
    vertex_count : int
        Vertex buffer size.

    Returns
    -------
    (T, 3) int64 array
        The same triangles (corners as given), component by component, layer by layer, each
        layer's triangles along it; ties keep the input order.
    """
    tris = np.ascontiguousarray(triangles, np.int64)
    if tris.shape[0] == 0:
        return tris.copy()
    offsets, faces = vertex_faces(tris, vertex_count)
    layer, along = _layers(tris, offsets, faces, int(vertex_count))
    lowest = layer[tris].min(axis=1)
    position = along[tris].mean(axis=1)
    return tris[np.lexsort((position, lowest))]
