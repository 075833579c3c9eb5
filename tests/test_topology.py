import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from meshopt_batch.geometry.mesh_topology import face_adjacency, valence, vertex_faces


def test_vertex_faces_quad():
    tris = np.array([[0, 1, 2], [0, 2, 3]], np.uint32)
    offsets, faces = vertex_faces(tris)
    assert offsets.tolist() == [0, 2, 3, 5, 6]
    assert faces.tolist() == [0, 1, 0, 0, 1, 1]
    assert valence(tris).tolist() == [2, 1, 2, 1]


def test_degenerate_listed_once_per_distinct_vertex():
    offsets, faces = vertex_faces(np.array([[0, 0, 1]]), 3)
    assert offsets.tolist() == [0, 1, 2, 2] and faces.tolist() == [0, 0]


def test_face_adjacency_fan_and_nonmanifold():
    tris = np.array([[0, 1, 2], [0, 2, 3], [0, 3, 4], [2, 0, 5]])  # edge 0-2 shared by three faces
    offsets, nbrs = face_adjacency(tris)
    adj = [sorted(nbrs[offsets[t]:offsets[t + 1]].tolist()) for t in range(len(tris))]
    assert adj == [[1, 3], [0, 2, 3], [1], [0, 1]]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 12), st.integers(0, 12), st.integers(0, 12)), min_size=1, max_size=40))
def test_against_brute_force(tri_list):
    tris = np.array(tri_list)
    offsets, faces = vertex_faces(tris, 13)
    for v in range(13):
        expected = [t for t, tri in enumerate(tri_list) if v in tri]
        assert faces[offsets[v]:offsets[v + 1]].tolist() == expected
    off, nbrs = face_adjacency(tris, 13)

    def edges(tri):
        return {frozenset((tri[e], tri[(e + 1) % 3])) for e in range(3) if tri[e] != tri[(e + 1) % 3]}

    for t, tri in enumerate(tri_list):
        expected = sorted(f for f, other in enumerate(tri_list) if f != t and edges(tri) & edges(other))
        assert sorted(nbrs[off[t]:off[t + 1]].tolist()) == expected
