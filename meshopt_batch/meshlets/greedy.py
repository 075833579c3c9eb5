"""Greedy scan meshlet builder: the simple baseline.

The triangles are taken in index-buffer order; each joins the current meshlet when its new
vertices and the triangle itself still fit under the two limits, otherwise the meshlet is
closed and the triangle starts the next one.  This is what an engine gets by cutting its
(vertex-cache optimized) index buffer into pieces, and it is the mesh-shader analogue of
the batch boundary rule of paper 001 (Algorithm 1): a batch ends where the next triangle
would overflow it.

References
----------
Kerbl, B., Kenzel, M., Ivanchenko, E., Schmalstieg, D., Steinberger, M. (2018).  Revisiting
the Vertex Cache: Understanding and Optimizing Vertex Processing on the modern GPU.  Proc. ACM
Comput. Graph. Interact. Tech. 1(2).  (Paper 001: Algorithm 1, batch boundaries.)
"""

from __future__ import annotations

import time

import numpy as np
from numba import njit

from .meshlet_result import MeshletResult, pack_meshlets

__all__ = ["build_meshlets_greedy"]


@njit(cache=True)
def _scan(tris, vertex_count, max_v, max_t):
    t_count = tris.shape[0]
    starts = np.empty(t_count + 1, np.int64)
    owner = np.full(vertex_count, -1, np.int64)
    m = 0
    starts[0] = 0
    v_used = 0
    t_used = 0
    for t in range(t_count):
        new = 0
        for c in range(3):
            v = tris[t, c]
            if owner[v] != m and not (c >= 1 and v == tris[t, 0]) and not (c == 2 and v == tris[t, 1]):
                new += 1
        if t_used > 0 and (t_used == max_t or v_used + new > max_v):
            m += 1
            starts[m] = t
            v_used = 0
            t_used = 0
            new = 0
            for c in range(3):
                v = tris[t, c]
                if not (c >= 1 and v == tris[t, 0]) and not (c == 2 and v == tris[t, 1]):
                    new += 1
        for c in range(3):
            owner[tris[t, c]] = m
        v_used += new
        t_used += 1
    starts[m + 1] = t_count
    return starts[:m + 2] if t_count else starts[:1]


def build_meshlets_greedy(tris: np.ndarray, vertex_count: int, max_vertices: int,
                          max_triangles: int) -> MeshletResult:
    """Cut the index buffer, in its order, into meshlets under both limits."""
    t0 = time.perf_counter()
    starts = _scan(tris, vertex_count, max_vertices, max_triangles)
    order = np.arange(tris.shape[0], dtype=np.int64)
    return pack_meshlets(tris, order, starts, vertex_count, max_vertices, max_triangles,
                         {"method": "greedy", "seconds": time.perf_counter() - t0})
