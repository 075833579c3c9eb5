"""The classic optimizers on high-valence, strip and degenerate inputs (issue 16), and the
building blocks their speed-ups rest on (int32 face lists, heaps, edge pairing).

Timings are the benchmark's business (benchmarks/bench_optimizers.py); here only results.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import meshes
from meshopt_batch.geometry.mesh_topology import face_index_type, vertex_corners, vertex_faces
from meshopt_batch.model.prediction import predict
from meshopt_batch.optimizers import forsyth, kcache, optimize
from meshopt_batch.optimizers._heaps import (
    indexed_heapify,
    indexed_remove,
    indexed_update,
    keyed_heapify,
    keyed_pop,
    keyed_push,
)
from meshopt_batch.optimizers._output import NO_ORDER
from meshopt_batch.optimizers.hoppe import _edge_adjacency

METHODS = ("hoppe", "kcache", "tipsify", "forsyth")


def fan(n, closed=False):
    """``n`` triangles ``(0, i, i + 1)`` around vertex 0."""
    rim = np.arange(1, n + 1)
    nxt = rim % n + 1 if closed else rim + 1
    return np.stack([np.zeros(n, np.int64), rim, nxt], 1)


def star(n):
    """``n`` triangles sharing vertex 0 and nothing else."""
    k = np.arange(n)
    return np.stack([np.zeros(n, np.int64), 2 * k + 1, 2 * k + 2], 1)


def book(n):
    """``n`` triangles on the one edge 0-1 (a non-manifold edge of valence n)."""
    return np.stack([np.zeros(n, np.int64), np.ones(n, np.int64), np.arange(2, n + 2)], 1)


def strip(n):
    """A triangle strip as a list, every other triangle flipped to keep the winding."""
    i = np.arange(n)
    return np.where((i % 2 == 0)[:, None], np.stack([i, i + 1, i + 2], 1), np.stack([i + 1, i, i + 2], 1))


def capped_cylinder(around, rows):
    """A tube of ``around x rows`` quads closed at one end by a fan: the cap's centre has
    valence ``around`` and its rim vertices also belong to the tube."""
    i, j = np.meshgrid(np.arange(around), np.arange(rows))
    i, j = i.ravel(), j.ravel()
    a, b = j * around + i, j * around + (i + 1) % around
    c, d = a + around, b + around
    tube = np.concatenate([np.stack([a, b, d], 1), np.stack([a, d, c], 1)])
    hub = around * (rows + 1)
    top = rows * around + np.arange(around)
    cap = np.stack([np.full(around, hub), top, rows * around + (np.arange(around) + 1) % around], 1)
    return np.concatenate([tube, cap])


def shuffled(tris, seed=0):
    return np.ascontiguousarray(tris[np.random.default_rng(seed).permutation(len(tris))])


def with_degenerates(tris):
    """``tris`` plus faces with a repeated corner around its vertex 0."""
    extra = np.array([[0, 0, 1], [0, 5, 5], [7, 0, 7], [0, 0, 0], [3, 3, 3]])
    return np.concatenate([tris, extra])


INPUTS = {
    "fan_2000": lambda: fan(2000),
    "closed_fan_2000": lambda: fan(2000, closed=True),
    "shuffled_closed_fan_3000": lambda: shuffled(fan(3000, closed=True), 1),
    "star_1500": lambda: star(1500),
    "book_500": lambda: book(500),
    "fan_with_degenerates": lambda: shuffled(with_degenerates(fan(600)), 2),
    "two_hubs": lambda: np.concatenate([fan(700), fan(700, closed=True) + 701]),
    "capped_cylinder": lambda: capped_cylinder(600, 6),
    "shuffled_capped_cylinder": lambda: shuffled(capped_cylinder(400, 3), 10),
    "fan_beside_grid": lambda: shuffled(np.concatenate([meshes.grid(20).triangles, fan(400) + 441]), 3),
    # faces on the same rim edges several times: pushing the hub fills several in at once
    "layered_fan": lambda: shuffled(np.concatenate([fan(1000), fan(1000)[:, ::-1], fan(1000)]), 8),
    "double_sided_star": lambda: shuffled(np.concatenate([star(800), star(800)[:, ::-1]]), 9),
    "strip_3000": lambda: strip(3000),
    "reversed_strip_3000": lambda: strip(3000)[::-1],
}


def assert_same_rows(before, after):
    """``after`` holds exactly the rows of ``before`` (none lost, doubled, rotated or flipped)."""
    before = np.asarray(before).reshape(-1, 3)
    after = np.asarray(after)
    assert after.shape == before.shape
    np.testing.assert_array_equal(before[np.lexsort(before.T[::-1])], after[np.lexsort(after.T[::-1])])


@pytest.mark.parametrize("name", list(INPUTS))
@pytest.mark.parametrize("method", METHODS)
def test_every_row_kept(method, name):
    tris = np.ascontiguousarray(INPUTS[name](), np.uint32)
    assert_same_rows(tris, optimize(tris, method=method).triangles)


@pytest.mark.parametrize("method", METHODS)
def test_fan_of_20k_triangles(method):
    for tris in (fan(20_000), shuffled(fan(20_000, closed=True), 4), star(20_000)):
        tris = tris.astype(np.uint32)
        assert_same_rows(tris, optimize(tris, method=method).triangles)


# predicted invocations (nvidia_gl, amd) of each order; every figure is the same as before the
# speed-ups of issue 16 (the orders are byte-identical to the earlier code on these inputs)
INVOCATIONS = {
    "grid_30x20": {"hoppe": (992, 816), "kcache": (1009, 836), "tipsify": (1061, 939), "forsyth": (1001, 851)},
    "torus_40x20": {"hoppe": (1326, 1102), "kcache": (1339, 1162), "tipsify": (1320, 1155),
                    "forsyth": (1388, 1214)},
    "soup_500": {"hoppe": (1500, 1500), "kcache": (1500, 1500), "tipsify": (1500, 1500), "forsyth": (1500, 1500)},
    "fan_1000": {"hoppe": (1068, 1016), "kcache": (1068, 1016), "tipsify": (1068, 1016), "forsyth": (1068, 1016)},
    "closed_fan_1000": {"hoppe": (1068, 1016), "kcache": (1103, 1022), "tipsify": (1068, 1016),
                        "forsyth": (1103, 1022)},
    "strip_1000": {"hoppe": (1068, 1016), "kcache": (1068, 1016), "tipsify": (1068, 1016),
                   "forsyth": (1068, 1016)},
}
FIGURE_INPUTS = {
    "grid_30x20": lambda: meshes.grid(30, 20).triangles,
    "torus_40x20": lambda: meshes.torus(40, 20).triangles,
    "soup_500": lambda: meshes.random_soup(500, 3).triangles,
    "fan_1000": lambda: fan(1000),
    "closed_fan_1000": lambda: fan(1000, closed=True),
    "strip_1000": lambda: strip(1000),
}


@pytest.mark.parametrize("name", list(INVOCATIONS))
def test_predicted_invocations_exact(name):
    tris = FIGURE_INPUTS[name]()
    for method, expected in INVOCATIONS[name].items():
        out = optimize(tris, method=method).triangles
        assert (predict(out, profile="nvidia_gl").invocations, predict(out, profile="amd").invocations) == expected


def _forsyth_kernel_order(tris, heavy_valence):
    tris = np.ascontiguousarray(tris, np.uint32)
    offsets, entries, place = vertex_corners(tris)
    table = forsyth._score_table(32, forsyth.CACHE_DECAY_POWER, forsyth.LAST_TRI_SCORE,
                                 forsyth.VALENCE_BOOST_SCALE, forsyth.VALENCE_BOOST_POWER)
    order = np.empty(len(tris), np.int64)
    forsyth._forsyth(tris, offsets, entries, place, table, forsyth.VALENCE_BOOST_SCALE,
                     forsyth.VALENCE_BOOST_POWER, heavy_valence, order, np.zeros((0, 3), np.uint32))
    return order


@pytest.mark.parametrize("name", ["fan_2000", "closed_fan_2000", "shuffled_closed_fan_3000", "star_1500",
                                  "book_500", "two_hubs", "fan_beside_grid", "capped_cylinder",
                                  "shuffled_capped_cylinder"])
def test_forsyth_high_valence_path_picks_as_the_article(name):
    """Where the lazy high-valence path is taken, these inputs still get the order of the
    article's per-triangle re-scoring (no vertex treated as heavy)."""
    tris = INPUTS[name]()
    lazy = _forsyth_kernel_order(tris, forsyth.HEAVY_VALENCE)
    np.testing.assert_array_equal(lazy, _forsyth_kernel_order(tris, 10**9))
    np.testing.assert_array_equal(lazy, forsyth.forsyth_order(tris))


def _kcache_kernel_order(tris, indirect_min):
    tris = np.ascontiguousarray(tris, np.uint32)
    offsets, faces = vertex_faces(tris, None, np.int32)
    kcache._sort_fans(tris, offsets, faces)
    order = np.empty(len(tris), np.int64)
    kcache._kcache(tris, offsets, faces, kcache.DEFAULT_CACHE_SIZE, kcache.WEIGHT_C2, kcache.WEIGHT_C3,
                   kcache._MAX_SIMULATED_FACES, indirect_min, order, np.zeros((0, 3), np.uint32))
    return order


@pytest.mark.parametrize("name", ["fan_2000", "closed_fan_2000", "shuffled_closed_fan_3000", "star_1500",
                                  "book_500", "fan_with_degenerates", "two_hubs", "fan_beside_grid",
                                  "layered_fan", "double_sided_star"])
def test_kcache_fill_in_through_neighbours_is_the_direct_scan(name):
    tris = INPUTS[name]()
    via_neighbours = _kcache_kernel_order(tris, kcache._MAX_FAN_SORT)
    np.testing.assert_array_equal(via_neighbours, _kcache_kernel_order(tris, 10**9))
    np.testing.assert_array_equal(via_neighbours, kcache.kcache_order(tris))


def test_forsyth_order_and_rows_agree():
    tris = shuffled(meshes.icosphere(3).triangles.astype(np.uint32), 5)
    order = forsyth.forsyth_order(tris)
    np.testing.assert_array_equal(forsyth.optimize_forsyth(tris), tris[order])
    assert NO_ORDER.size == 0


def test_rows_keep_the_callers_integer_type():
    tris = meshes.grid(4).triangles.astype(np.int8)
    for method in METHODS:
        out = optimize(tris, method=method).triangles
        assert out.dtype == np.int8
        assert_same_rows(tris, out)


# ------------------------------------------------------------------ building blocks


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9), st.integers(0, 9)), min_size=1, max_size=40))
def test_int32_face_lists_equal_int64(tri_list):
    tris = np.array(tri_list)
    wide = vertex_faces(tris, 10)
    narrow = vertex_faces(tris, 10, np.int32)
    assert wide[0].dtype == np.int64 and narrow[0].dtype == np.int32 and narrow[1].dtype == np.int32
    for a, b in zip(wide, narrow, strict=True):
        np.testing.assert_array_equal(a, b)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9), st.integers(0, 9)), min_size=1, max_size=40))
def test_vertex_corners_are_the_face_lists_with_corners_and_places(tri_list):
    tris = np.array(tri_list)
    offsets, faces = vertex_faces(tris, 10)
    c_offsets, entries, place = vertex_corners(tris, 10)
    np.testing.assert_array_equal(c_offsets, offsets)
    np.testing.assert_array_equal(entries >> 2, faces)
    for v in range(10):
        for slot in range(offsets[v], offsets[v + 1]):
            face, corner = entries[slot] >> 2, entries[slot] & 3
            assert tris[face, corner] == v and v not in tris[face, :corner]  # its first corner
            assert place[face, corner] == slot


def test_face_index_type():
    assert face_index_type(10) == np.int32
    assert face_index_type((2**31 - 1) // 3) == np.int32
    assert face_index_type((2**31 - 1) // 3 + 1) == np.int64
    with pytest.raises(ValueError):
        vertex_faces(np.zeros((1, 3), np.int64), 1, np.int16)


def reference_edge_pairs(tris):
    """Hoppe's edge pairing by its definition: the i-th face (in index order) holding a -> b
    is paired with the i-th face holding b -> a; degenerate faces hold no edge."""
    tris = [tuple(int(x) for x in t) for t in tris]
    holders = {}
    for t, tri in enumerate(tris):
        if len(set(tri)) < 3:
            continue
        for e in range(3):
            holders.setdefault((tri[e], tri[(e + 1) % 3]), []).append((t, e))
    nbr = np.full((len(tris), 3), -1)
    nbr_edge = np.full((len(tris), 3), -1)
    for (a, b), mine in holders.items():
        theirs = holders.get((b, a), [])
        for (t, e), (g, e2) in zip(mine, theirs, strict=False):  # leftovers stay unpaired
            nbr[t, e], nbr_edge[t, e] = g, e2
    return nbr, nbr_edge


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 7), st.integers(0, 7), st.integers(0, 7)), min_size=1, max_size=40))
def test_hoppe_edge_pairing_as_defined(tri_list):
    tris = np.array(tri_list, np.uint32)  # as hoppe gives it, with either face index type
    for dtype in (np.int64, np.int32):
        offsets, faces = vertex_faces(tris, 8, dtype)
        nbr, nbr_edge = _edge_adjacency(tris, offsets, faces)
        ref_nbr, ref_edge = reference_edge_pairs(tris)
        np.testing.assert_array_equal(nbr, ref_nbr)
        np.testing.assert_array_equal(nbr_edge, ref_edge)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["push", "pop"]), st.integers(0, 6), st.integers(0, 50)),
                min_size=1, max_size=80))
def test_keyed_heap_pops_best_score_then_lowest_id(ops):
    keys = np.empty(len(ops) + 1, np.float32)
    ids = np.empty(len(ops) + 1, np.int32)
    n = 0
    model = []
    for op, key, tid in ops:
        if op == "push":
            n = keyed_push(keys, ids, n, np.float32(key), tid)
            model.append((-key, tid))
        elif n:
            best = min(model)
            assert (keys[0], ids[0]) == (-best[0], best[1])
            model.remove(best)
            n = keyed_pop(keys, ids, n)
        assert n == len(model)
    # Floyd's heapify gives the same top
    if model:
        keys2 = np.array([-k for k, _ in model], np.float32)
        ids2 = np.array([t for _, t in model], np.int32)
        keyed_heapify(keys2, ids2, len(model))
        assert (keys2[0], ids2[0]) == (-min(model)[0], min(model)[1])


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 30), st.lists(st.tuples(st.sampled_from(["update", "remove"]), st.integers(0, 29),
                                              st.integers(0, 5)), max_size=60), st.integers(0, 2))
def test_indexed_heap_tracks_score_changes(size, ops, start):
    score = np.arange(size, dtype=np.float32) % 4  # many ties
    pool = np.zeros(start + size, np.int32)
    pool[start:] = np.arange(size)
    pos = np.full(size, -1, np.int64)
    indexed_heapify(score, pool, pos, start, size)
    live = set(range(size))
    n = size
    for op, tid, value in ops:
        tid %= size
        if tid not in live:
            continue
        if op == "update":
            score[tid] = value
            indexed_update(score, pool, pos, start, n, tid)
        else:
            n = indexed_remove(score, pool, pos, start, n, tid)
            live.discard(tid)
            assert pos[tid] == -1
        assert n == len(live)
        if live:
            assert pool[start] == min(live, key=lambda t: (-score[t], t))
            assert sorted(pool[start:start + n].tolist()) == sorted(live)
            assert all(pos[pool[start + i]] == start + i for i in range(n))
