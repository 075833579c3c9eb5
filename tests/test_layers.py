"""The order of breadth-first layers (:mod:`meshopt_batch.optimizers.portable.layers`): the rows a
FIFO reuses, found on any numbering and any triangle order."""

from __future__ import annotations

import numpy as np

import meshes
from meshopt_batch import get_profile, predict
from meshopt_batch.optimizers.portable.layers import order_by_layers
from meshopt_batch.vertices.vertex_fetch import number_by_first_use


def _shuffled(tris, seed=0):
    rng = np.random.default_rng(seed)
    return np.asarray(tris, np.int64)[rng.permutation(len(tris))]


def _rows(tris) -> list:
    return sorted(map(tuple, np.asarray(tris).tolist()))


def _fifo_invocations(tris, vertex_count, size=128):
    numbered, source = number_by_first_use(np.asarray(tris, np.int64), vertex_count)
    return predict(numbered, source.shape[0], profile=get_profile(f"fifo:{size}")).invocations


def test_layers_keep_every_triangle_as_given():
    tris = _shuffled(meshes.torus(24, 12).triangles)
    out = order_by_layers(tris, int(tris.max()) + 1)
    assert out.dtype == np.int64 and out.shape == tris.shape
    assert _rows(out) == _rows(tris)


def test_layers_of_a_shuffled_grid_are_rows_a_fifo_of_128_shades_once():
    # a 24 x 24 grid seeded at a corner: diagonal layers of at most 25 vertices, each reused by
    # the next, so Intel's FIFO of 128 shades every vertex once
    mesh = meshes.grid(24)
    tris = _shuffled(mesh.triangles)
    assert _fifo_invocations(tris, mesh.vertex_count) > 2 * mesh.vertex_count
    out = order_by_layers(tris, mesh.vertex_count)
    assert _fifo_invocations(out, mesh.vertex_count) == mesh.vertex_count == 625
    # and a FIFO shorter than a layer cannot keep a layer for the next
    assert _fifo_invocations(out, mesh.vertex_count, size=16) > mesh.vertex_count


def test_layers_take_connected_components_whole_in_order_of_first_use():
    a, b = meshes.grid(12), meshes.torus(16, 8)
    tris = np.concatenate([np.asarray(a.triangles, np.int64), np.asarray(b.triangles, np.int64) + a.vertex_count])
    tris = _shuffled(tris, seed=3)
    count = a.vertex_count + b.vertex_count
    out = order_by_layers(tris, count)
    component = (out.min(axis=1) >= a.vertex_count).astype(int)
    assert np.count_nonzero(np.diff(component)) == 1
    assert component[0] == int(tris[0].min() >= a.vertex_count)
    assert _rows(out) == _rows(tris)


def test_layers_of_nothing_are_nothing():
    out = order_by_layers(np.zeros((0, 3), np.int64), 0)
    assert out.shape == (0, 3)


def test_layers_are_deterministic_and_ignore_unused_vertices():
    mesh = meshes.grid(10)
    tris = _shuffled(mesh.triangles)
    first = order_by_layers(tris, mesh.vertex_count)
    assert np.array_equal(first, order_by_layers(tris, mesh.vertex_count + 50))
    assert np.array_equal(first, order_by_layers(tris.copy(), mesh.vertex_count))


def test_layers_take_degenerate_triangles_with_their_vertices():
    mesh = meshes.grid(6)
    alone = mesh.vertex_count                        # a vertex only a degenerate triangle uses
    tris = np.concatenate([np.asarray(mesh.triangles, np.int64), [[3, 3, 10], [20, 20, 20], [alone] * 3]])
    tris = _shuffled(tris, seed=5)
    out = order_by_layers(tris, mesh.vertex_count + 1)
    assert _rows(out) == _rows(tris)
    assert (out[0] == alone).all() or (out[-1] == alone).all()     # a component of its own
