"""Batch-based optimizer (paper 001, Algorithm 2) and its 16-bit boundary fix.

* the fibheap-package queue and the compiled bucket queue give the identical order;
* the output is the input's triangles (each possibly rotated cyclically, winding kept),
  plus appended vertex copies that are exact copies;
* the optimizer's own invocation count is what Algorithm 1 predicts for its output;
* the 16-bit fix makes every batch single-block, so the ``+16bit`` model agrees with the
  plain one, and never changes the plain ASR.
"""

import numpy as np
import pytest

import meshes
from meshopt_batch.model.prediction import predict
from meshopt_batch.optimizers import optimize
from meshopt_batch.optimizers.batch import DEFAULT_COEFFICIENTS, NO_DISTANCE_COEFFICIENTS, optimize_batch
from meshopt_batch.optimizers.batch.boundary16 import fix_16bit_boundaries, mixed_batches
from meshopt_batch.optimizers.batch.fibheap_reference import FibQueue
from meshopt_batch.support.errors import MeshoptBatchError


def canonical(tris):
    """Rows rotated so the smallest index comes first (winding kept), then sorted."""
    t = np.asarray(tris, np.int64)
    k = np.argmin(t, axis=1)
    rows = np.stack([t[np.arange(len(t)), (k + i) % 3] for i in range(3)], axis=1)
    return rows[np.lexsort(rows.T[::-1])]


def small_meshes():
    shuffled = meshes.icosphere(3)
    rng = np.random.default_rng(1)
    tris = np.asarray(shuffled.triangles)[rng.permutation(shuffled.triangle_count)]
    return {
        "grid": meshes.grid(12, 9),
        "torus": meshes.torus(20, 10),
        "sphere_shuffled": shuffled.with_triangles(tris),
        "soup": meshes.random_soup(60, seed=3),
        "cube": meshes.cube(),
    }


PROFILES = ["nvidia_gl", "nvidia_dx", "amd", "intel", "fifo:16", "lru:12", "llvmpipe"]
VARIANTS = [
    {},
    {"use_distance": False},
    {"lookahead": False},
    {"lookahead": False, "use_distance": False, "rotate": False},
    {"n_mode": "count", "d_region": "ball", "d_cap": 4},
    {"n_neighbourhood": "edge", "coefficients": {"k_n": 2}},
]


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("name", ["grid", "torus", "sphere_shuffled", "soup"])
def test_fibheap_and_fast_queue_agree(profile, name):
    mesh = small_meshes()[name]
    for variant in VARIANTS:
        fast = optimize_batch(mesh.triangles, mesh.vertex_count, profile=profile, **variant)
        ref = optimize_batch(mesh.triangles, mesh.vertex_count, profile=profile, queue="fibheap",
                             **variant)
        assert np.array_equal(fast.triangles, ref.triangles), variant
        assert np.array_equal(fast.vertex_remap, ref.vertex_remap)
        assert fast.stats["model_invocations"] == ref.stats["model_invocations"]


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("name", ["grid", "torus", "sphere_shuffled", "soup", "cube"])
def test_output_is_a_reordering(profile, name):
    mesh = small_meshes()[name]
    res = optimize_batch(mesh.triangles, mesh.vertex_count, profile=profile)
    original = res.vertex_remap[np.asarray(res.triangles, np.int64)]
    assert np.array_equal(canonical(original), canonical(mesh.triangles))
    if res.stats["renumbered"]:
        assert np.array_equal(np.sort(res.vertex_remap), np.arange(mesh.vertex_count))
    else:
        assert np.array_equal(res.vertex_remap, np.arange(mesh.vertex_count))
    fixed = optimize_batch(mesh.triangles, mesh.vertex_count, profile=profile, rotate=False)
    rows = np.asarray(mesh.triangles, np.int64)
    got = fixed.vertex_remap[np.asarray(fixed.triangles, np.int64)]
    # without rotation every row is an input row verbatim
    assert np.array_equal(np.sort(got.view([("", got.dtype)] * 3), axis=0),
                          np.sort(rows.view([("", rows.dtype)] * 3), axis=0))


@pytest.mark.parametrize("profile", ["nvidia_gl", "nvidia_dx", "amd", "intel", "fifo:16", "lru:12"])
def test_model_matches_predictor(profile):
    """The optimizer tracks batches with the predictor's own memory module, exactly."""
    for mesh in small_meshes().values():
        for variant in VARIANTS[:3]:
            res = optimize_batch(mesh.triangles, mesh.vertex_count, profile=profile, **variant)
            pred = predict(res.triangles, len(res.vertex_remap), profile=profile, return_batches=True)
            assert res.stats["model_invocations"] == pred.invocations == res.stats["invocations"]
            assert res.stats["model_batches"] == pred.batches
            assert np.array_equal(res.batch_starts, pred.batch_starts)


def test_improves_on_input_and_classics():
    mesh = meshes.icosphere(4)
    rng = np.random.default_rng(0)
    tris = np.asarray(mesh.triangles)[rng.permutation(mesh.triangle_count)]
    res = optimize_batch(tris, mesh.vertex_count)
    assert res.stats["asr"] < predict(tris, profile="nvidia_gl").asr * 0.5
    forsyth = predict(optimize(tris, mesh.vertex_count, method="forsyth").triangles, profile="nvidia_gl").asr
    assert res.stats["asr"] < forsyth
    assert res.stats["asr"] < 0.82


def test_registry_and_result_fields():
    mesh = meshes.grid(10, 10)
    res = optimize(mesh.triangles, mesh.vertex_count, method="batch", profile="amd")
    assert res.triangles.shape == (mesh.triangle_count, 3)
    batch = optimize_batch(mesh.triangles, mesh.vertex_count, profile="amd")
    assert batch.stats["coefficients"] == {**DEFAULT_COEFFICIENTS}
    nod = optimize_batch(mesh.triangles, mesh.vertex_count, use_distance=False)
    assert nod.stats["coefficients"] == NO_DISTANCE_COEFFICIENTS
    unbatched = optimize_batch(mesh.triangles, mesh.vertex_count, profile="intel")
    assert unbatched.stats["coefficients"]["k_d"] == 0
    assert batch.triangles.dtype == np.uint32
    empty = optimize_batch(np.zeros((0, 3), np.uint32), 4)
    assert empty.triangles.shape == (0, 3) and len(empty.vertex_remap) == 4


@pytest.mark.parametrize("bad", [{"coefficients": {"k_r": 1.5}}, {"coefficients": {"k_x": 1}},
                                 {"queue": "pairing"}, {"n_mode": "both"}, {"frobnicate": 1}])
def test_bad_arguments(bad):
    mesh = meshes.cube()
    with pytest.raises(MeshoptBatchError):
        optimize_batch(mesh.triangles, mesh.vertex_count, **bad)


def test_fibqueue_order():
    prio = np.zeros(6, np.int64)
    q = FibQueue(prio)
    for t, p in [(5, 1), (4, 3), (3, 3), (2, 0), (1, 7), (0, 3)]:
        q.insert(t, p)
    assert q.top() == 1
    q.adjust(1, -10)          # increase of the key: delete + insert
    assert q.top() == 0       # equal priorities: the most recently inserted first
    q.adjust(4, 1)            # decrease-key
    assert q.top() == 4
    q.delete(4)
    assert q.top() == 0 and len(q) == 5


def _scrambled_grid(nx, ny, seed=0):
    mesh = meshes.grid(nx, ny)
    rng = np.random.default_rng(seed)
    perm = rng.permutation(mesh.vertex_count)
    inv = np.empty_like(perm)
    inv[perm] = np.arange(mesh.vertex_count)
    return inv[np.asarray(mesh.triangles, np.int64)], mesh.vertex_count


def test_16bit_fix_large_mesh():
    tris, V = _scrambled_grid(300, 230)
    assert V > 1 << 16
    plain = optimize_batch(tris, V, fix_16bit=False)
    fixed = optimize_batch(tris, V)
    assert fixed.stats["vertex_copies"] > 0 and len(fixed.vertex_remap) > V
    # every vertex once (numbered in first use here), then the copies
    assert np.array_equal(np.sort(fixed.vertex_remap[:V]), np.arange(V))
    _, as_numbered = fix_16bit_boundaries(plain.triangles, V)
    assert fixed.stats["vertex_copies"] * 4 < len(as_numbered) - V
    # same triangles through the remap, same order, same plain ASR
    assert np.array_equal(fixed.vertex_remap[np.asarray(fixed.triangles, np.int64)],
                          np.asarray(plain.triangles, np.int64))
    n = len(fixed.vertex_remap)
    assert predict(fixed.triangles, n, profile="nvidia_gl").invocations == plain.stats["invocations"]
    assert mixed_batches(fixed.triangles, n) == 0
    assert mixed_batches(plain.triangles, V) > 0
    with16 = predict(fixed.triangles, n, profile="nvidia_gl+16bit").asr
    assert with16 == pytest.approx(fixed.stats["asr"])
    assert predict(plain.triangles, V, profile="nvidia_gl+16bit").asr > with16
    # the +16bit profile is optimized under its plain model, then fixed
    p16 = optimize_batch(tris, V, profile="nvidia_gl+16bit")
    assert np.array_equal(p16.triangles, fixed.triangles)


def test_16bit_fix_function_directly():
    tris, V = _scrambled_grid(260, 260, seed=5)
    out, remap = fix_16bit_boundaries(tris, V)
    assert np.array_equal(remap[out], tris)
    assert mixed_batches(out, len(remap)) == 0
    small, same = fix_16bit_boundaries(tris[:100] % 1000, 1000)
    assert np.array_equal(small, tris[:100] % 1000) and len(same) == 1000


def test_amd_profile_not_fixed():
    tris, V = _scrambled_grid(300, 230)
    res = optimize_batch(tris, V, profile="amd")
    assert len(res.vertex_remap) == V and res.stats["vertex_copies"] == 0


@pytest.mark.slow
def test_bunny_reaches_paper_figure():
    path = meshes.shared_mesh_path("bunny")
    if path is None:
        pytest.skip("shared meshes not available")
    from meshopt_batch.io import load_mesh

    bunny = load_mesh(path)
    res = optimize_batch(bunny.triangles, bunny.vertex_count)
    assert res.stats["asr"] <= 0.82          # paper 001 Table 1
    nod = optimize_batch(bunny.triangles, bunny.vertex_count, use_distance=False)
    assert nod.stats["asr"] <= 0.82


def _tubes_and_cards(n_cards=203, seed=0):
    """A tree-like index buffer: strips (4 rings around, 7 rings long) and two-triangle cards."""
    tris = []
    v = 0
    for _ in range(40):
        for r in range(6):
            for k in range(4):
                a, b = v + 4 * r + k, v + 4 * r + (k + 1) % 4
                c, d = a + 4, b + 4
                tris += [(a, b, c), (b, d, c)]
        v += 28
    for _ in range(n_cards):
        tris += [(v, v + 1, v + 2), (v, v + 2, v + 3)]
        v += 4
    rng = np.random.default_rng(seed)
    tris = np.array(tris, np.int64)
    return tris[rng.permutation(len(tris))], v


def test_small_components_fill_batches():
    tris, V = _tubes_and_cards()
    on = optimize_batch(tris, V)
    off = optimize_batch(tris, V, fill_small=False, lookahead=False)
    assert on.stats["asr"] <= off.stats["asr"]
    # no two-triangle card is cut by a batch boundary
    out = np.asarray(on.triangles, np.int64)
    batch_of = np.searchsorted(on.batch_starts, np.arange(len(out)), side="right")
    card = out.min(axis=1) >= 40 * 28
    first_vertex = out.min(axis=1)
    for v0 in np.unique(first_vertex[card]):
        assert len(set(batch_of[card & (first_vertex == v0)])) == 1
    ref = optimize_batch(tris, V, queue="fibheap")
    assert np.array_equal(ref.triangles, on.triangles)


@pytest.mark.parametrize("coefficients", [{"k_r": 100000, "k_v": -1000, "k_d": -300, "k_n": 5000},
                                          {"k_r": 1, "k_v": 7, "k_d": 3, "k_n": -2}])
def test_unusual_coefficients_agree(coefficients):
    """Priorities far outside the first bucket range (the bucket array regrows)."""
    mesh = meshes.torus(30, 12)
    a = optimize_batch(mesh.triangles, mesh.vertex_count, coefficients=coefficients)
    b = optimize_batch(mesh.triangles, mesh.vertex_count, coefficients=coefficients, queue="fibheap")
    assert np.array_equal(a.triangles, b.triangles)
