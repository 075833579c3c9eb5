"""The batch optimizer's tables of the mesh: corner lists, dual graph and components.

Algorithm 2 of paper 001 walks the faces around vertices (the ``R``, ``V`` and ``N`` terms),
the dual graph (the ``D`` term) and, for ``fill_small``, the connected components.  Built once
per run in int32, O(T):

* :func:`corner_others`: beside :func:`meshopt_batch.geometry.mesh_topology.vertex_faces`'s vertex -> face
  lists, the two other vertices of every listed face, so that the faces sharing an edge are
  found by scanning one contiguous list instead of reading the neighbours' triangles;
* :func:`dual_graph`: faces sharing an edge, in the order of
  :func:`meshopt_batch.geometry.mesh_topology.face_adjacency` (edges of a face in order, each edge's faces
  ascending, a face listed once), found from the edge's endpoint with fewer faces; stored as
  one slot per edge (with the neighbour's third vertex) for every face with at most one
  neighbour per edge, a short overflow list for the others.  An edge
  whose two endpoints are both *heavy* (more than ``heavy`` faces, see :mod:`.batch_optimizer`) is left
  out: such a vertex takes no part in eq. 1, and listing every pair of faces around a
  non-manifold edge would be quadratic;
* :func:`find_components`: faces connected through shared vertices (union-find over the
  vertices), numbered by their lowest face, with their vertex and face counts, and the
  components small enough for one batch grouped by vertex count.

References
----------
Kerbl, B., Kenzel, M., Ivanchenko, E., Schmalstieg, D., Steinberger, M. (2018).  Revisiting
the Vertex Cache: Understanding and Optimizing Vertex Processing on the modern GPU.  Proc. ACM
Comput. Graph. Interact. Tech. 1(2).  (Paper 001: Algorithm 2.)
Tarjan, R. E. (1975).  Efficiency of a good but not linear set union algorithm.  J. ACM 22(2),
215-225 (union-find).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["corner_others", "dual_graph", "find_components"]


@njit(cache=True, nogil=True)
def corner_others(tris, voff):
    """``(entries, 2)`` int32, aligned with the vertex -> face lists: for the entry of face
    ``f`` in vertex ``v``'s list, the vertices after ``v`` in ``f`` (cyclically).

    The lists are in ascending face order, so one pass over the faces with a cursor per vertex
    finds every entry's slot."""
    vertex_count = voff.shape[0] - 1
    cursor = voff[:-1].copy()
    others = np.empty((voff[vertex_count], 2), np.int32)
    for t in range(tris.shape[0]):
        a = tris[t, 0]
        b = tris[t, 1]
        c = tris[t, 2]
        k = cursor[a]
        cursor[a] = k + 1
        others[k, 0] = b
        others[k, 1] = c
        if b != a:
            k = cursor[b]
            cursor[b] = k + 1
            others[k, 0] = c
            others[k, 1] = a
        if c != a and c != b:
            k = cursor[c]
            cursor[c] = k + 1
            others[k, 0] = a
            others[k, 1] = b
    return others


@njit(cache=True, inline="always")
def _light_edge(voff, a, b, heavy):
    return a != b and (voff[a + 1] - voff[a] <= heavy or voff[b + 1] - voff[b] <= heavy)


@njit(cache=True, nogil=True)
def _listed_before(tris, t, e, x, o1, o2, voff, heavy):
    """Does the face with vertices ``{x, o1, o2}`` hold both ends of an earlier (listed) edge
    of ``t`` than ``e``?"""
    for e2 in range(e):
        a2 = tris[t, e2]
        b2 = tris[t, (e2 + 1) % 3]
        if (_light_edge(voff, a2, b2, heavy) and (a2 == x or a2 == o1 or a2 == o2)
                and (b2 == x or b2 == o1 or b2 == o2)):
            return True
    return False


@njit(cache=True, nogil=True)
def _grow(arr, n):
    """``arr`` with room for at least ``n`` entries (doubling)."""
    if n <= arr.shape[0]:
        return arr
    out = np.empty(max(n, 2 * arr.shape[0]), arr.dtype)
    out[:arr.shape[0]] = arr
    return out


@njit(cache=True, nogil=True)
def dual_graph(tris, voff, vfaces, others, heavy):
    """Faces sharing an edge with at least one light endpoint (see the module docstring for
    the order), as ``(nbr, opp, xoff, xadj)``.

    Most faces have at most one neighbour across each edge: ``nbr[t, e]`` is the face across
    edge ``e`` (``tris[t, e], tris[t, e + 1]``) or -1, and ``opp[t, e]`` that face's vertex off
    the edge, so that a search can tell which neighbours share a vertex with a given triangle
    without reading them.  The other faces (a non-manifold edge, a duplicated face) keep their
    list in the overflow CSR ``xadj[xoff[x]:xoff[x + 1]]`` with ``nbr[t, 0] = -2 - x``.
    Iterating ``nbr[t]`` (skipping -1) or the overflow list gives the neighbours in order."""
    t_count = tris.shape[0]
    nbr = np.full((t_count, 3), -1, np.int32)
    opp = np.full((t_count, 3), -1, np.int32)
    xoff = np.zeros(16, np.int64)
    xadj = np.empty(16, np.int32)
    nx = 0
    maxval = 0
    for v in range(voff.shape[0] - 1):
        maxval = max(maxval, voff[v + 1] - voff[v])
    cap = min(maxval, heavy) + 1
    hits = np.empty(cap, np.int64)
    lst = np.empty(3 * cap, np.int32)
    led = np.empty(3 * cap, np.int32)
    lop = np.empty(3 * cap, np.int32)
    for t in range(t_count):
        n = 0
        single = True
        for e in range(3):
            a = tris[t, e]
            b = tris[t, (e + 1) % 3]
            if not _light_edge(voff, a, b, heavy):
                continue
            c = tris[t, (e + 2) % 3]
            x = a
            y = b
            if voff[b + 1] - voff[b] < voff[a + 1] - voff[a]:
                x = b
                y = a
            # the entries holding y, gathered without a branch per entry (t's own among them)
            m = 0
            for k in range(voff[x], voff[x + 1]):
                hits[m] = k
                m += (others[k, 0] == y) | (others[k, 1] == y)
            n_edge = 0
            for i in range(m):
                k = hits[i]
                f = vfaces[k]
                if f == t:
                    continue
                o1 = others[k, 0]
                o2 = others[k, 1]
                # listed through an earlier edge only if it also holds t's third vertex
                if e > 0 and (o1 == c or o2 == c) and _listed_before(tris, t, e, x, o1, o2, voff, heavy):
                    continue
                lst[n] = f
                led[n] = e
                lop[n] = o1 if o2 == y else o2
                n += 1
                n_edge += 1
            single = single and n_edge <= 1
        if single:
            for i in range(n):
                nbr[t, led[i]] = lst[i]
                opp[t, led[i]] = lop[i]
        else:
            xoff = _grow(xoff, nx + 2)
            start = xoff[nx]
            xadj = _grow(xadj, start + n)
            for i in range(n):
                xadj[start + i] = lst[i]
            xoff[nx + 1] = start + n
            nbr[t, 0] = -2 - nx
            nx += 1
    return nbr, opp, xoff[:nx + 1], xadj[:xoff[nx]]


@njit(cache=True, inline="always")
def _find(parent, v):
    while parent[v] != v:
        parent[v] = parent[parent[v]]
        v = parent[v]
    return v


@njit(cache=True, inline="always")
def _union(parent, size, a, b):
    ra = _find(parent, a)
    rb = _find(parent, b)
    if ra != rb:
        if size[ra] < size[rb]:
            ra, rb = rb, ra
        parent[rb] = ra
        size[ra] += size[rb]


@njit(cache=True, nogil=True)
def find_components(tris, voff, cap_u, cap_s):
    """Connected components over shared vertices: face -> component (int32), per component
    ``(vertices, triangles, first face, touched)`` (int32, numbered by first face), and the
    components that fit in one batch (``vertices <= cap_u`` and ``3 * triangles <= cap_s``)
    grouped by vertex count (CSR, by id)."""
    t_count = tris.shape[0]
    vertex_count = voff.shape[0] - 1
    parent = np.empty(vertex_count, np.int32)
    size = np.ones(vertex_count, np.int32)
    for v in range(vertex_count):
        parent[v] = v
    for t in range(t_count):
        _union(parent, size, tris[t, 0], tris[t, 1])
        _union(parent, size, tris[t, 0], tris[t, 2])
    cid = size  # reused: root -> component id
    cid[:] = -1
    comp = np.empty(t_count, np.int32)
    first = np.empty(t_count, np.int32)
    n = 0
    for t in range(t_count):
        r = _find(parent, tris[t, 0])
        if cid[r] < 0:
            cid[r] = n
            first[n] = t
            n += 1
        comp[t] = cid[r]
    info = np.zeros((n, 4), np.int32)
    for c in range(n):
        info[c, 2] = first[c]
    for t in range(t_count):
        info[comp[t], 1] += 1
    for v in range(vertex_count):
        if voff[v + 1] > voff[v]:
            info[cid[_find(parent, v)], 0] += 1
    counts = np.zeros(max(cap_u, 0) + 2, np.int64)
    for c in range(n):
        if info[c, 0] <= cap_u and 3 * np.int64(info[c, 1]) <= cap_s:
            counts[info[c, 0] + 1] += 1
    for k in range(counts.shape[0] - 1):
        counts[k + 1] += counts[k]
    comps = np.empty(counts[-1], np.int32)
    fill = counts[:-1].copy()
    for c in range(n):
        if info[c, 0] <= cap_u and 3 * np.int64(info[c, 1]) <= cap_s:
            comps[fill[info[c, 0]]] = c
            fill[info[c, 0]] += 1
    return comp, info, counts, comps
