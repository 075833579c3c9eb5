"""The classic triangle-order optimizers: Hoppe 1999, Tipsify, K-Cache, Forsyth.

Every optimizer must return exactly the input triangles (none lost, none duplicated, each
with its winding: only a cyclic rotation of a row is allowed) on any index buffer, and must
actually optimize: lower ACMR than a shuffled order, close to meshoptimizer's counterparts.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import meshes
from meshopt_batch.geometry.mesh_topology import vertex_faces
from meshopt_batch.model.prediction import predict
from meshopt_batch.optimizers import (
    CLASSIC_METHODS,
    METHODS,
    available_methods,
    get_method,
    optimize,
    optimize_mesh,
)
from meshopt_batch.optimizers.forsyth import optimize_forsyth
from meshopt_batch.optimizers.hoppe import _edge_adjacency, optimize_hoppe
from meshopt_batch.optimizers.kcache import _sort_fans, optimize_kcache
from meshopt_batch.optimizers.tipsify import optimize_tipsify
from meshopt_batch.support.errors import MeshoptBatchError

FOUR = {
    "hoppe": optimize_hoppe,
    "kcache": optimize_kcache,
    "tipsify": optimize_tipsify,
    "forsyth": optimize_forsyth,
}
HAVE_MESHOPT = "meshoptimizer" in available_methods()


def canonical_rows(tris):
    """Rows rotated cyclically so the smallest index comes first (winding kept), sorted."""
    t = np.asarray(tris, np.int64).reshape(-1, 3)
    if len(t) == 0:
        return t
    r = np.argmin(t, axis=1)
    idx = np.arange(len(t))
    rot = np.stack([t[idx, r], t[idx, (r + 1) % 3], t[idx, (r + 2) % 3]], 1)
    return rot[np.lexsort(rot.T[::-1])]


def assert_reordering(before, after, exact_rows=True):
    before = np.asarray(before).reshape(-1, 3)
    after = np.asarray(after)
    assert after.shape == before.shape
    if exact_rows:  # our optimizers do not even rotate a row
        a = before[np.lexsort(before.T[::-1])]
        b = after[np.lexsort(after.T[::-1])]
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(canonical_rows(before), canonical_rows(after))


def shuffled(tris, seed=0):
    rng = np.random.default_rng(seed)
    return np.ascontiguousarray(np.asarray(tris)[rng.permutation(len(tris))])


def acmr(tris, profile, vertex_count=None):
    return predict(tris, vertex_count, profile=profile).acmr


# ------------------------------------------------------------------ exact reordering


@pytest.mark.parametrize("name", list(FOUR))
@pytest.mark.parametrize("case", ["empty", "single", "degenerate", "soup", "nonmanifold", "components",
                                  "duplicates", "unreferenced", "fan"])
def test_edge_cases(name, case):
    if case == "empty":
        tris = np.zeros((0, 3), np.uint32)
    elif case == "single":
        tris = np.array([[0, 1, 2]], np.uint32)
    elif case == "degenerate":
        tris = np.array([[0, 0, 0], [0, 0, 1], [1, 2, 1], [0, 1, 2], [2, 3, 0], [3, 3, 3]], np.uint32)
    elif case == "soup":
        tris = meshes.random_soup(50).triangles
    elif case == "nonmanifold":  # edge 0-1 shared by four faces, two each way
        tris = np.array([[0, 1, 2], [1, 0, 3], [0, 1, 4], [1, 0, 5], [2, 1, 6], [0, 2, 7]], np.uint32)
    elif case == "components":
        parts = [meshes.grid(3).triangles + 100 * k for k in range(5)] + [meshes.icosphere(1).triangles + 600]
        tris = shuffled(np.concatenate(parts), 3)
    elif case == "duplicates":  # the same triangle twice and once reversed
        tris = np.array([[0, 1, 2], [0, 1, 2], [2, 1, 0], [1, 2, 3]], np.uint32)
    elif case == "unreferenced":
        tris = np.array([[10, 11, 12], [12, 11, 13]], np.uint32)
    else:  # a fan around one vertex of high valence
        n = 300
        tris = np.stack([np.zeros(n, int), np.arange(1, n + 1), np.arange(2, n + 2)], 1).astype(np.uint32)
    out = FOUR[name](tris)
    assert_reordering(tris, out)
    assert out.dtype == tris.dtype


@pytest.mark.parametrize("name", list(FOUR))
def test_dtypes_and_shapes_kept(name):
    tris = meshes.torus(8, 6).triangles
    for dtype in (np.uint16, np.uint32, np.int32, np.int64):
        out = FOUR[name](tris.astype(dtype))
        assert out.dtype == dtype and out.shape == tris.shape
    flat = FOUR[name](tris.astype(np.uint32).ravel())
    assert flat.shape == tris.shape


@pytest.mark.parametrize("name", list(FOUR))
def test_input_not_modified_and_deterministic(name):
    tris = shuffled(meshes.icosphere(2).triangles.astype(np.uint32), 1)
    copy = tris.copy()
    a = FOUR[name](tris)
    b = FOUR[name](tris)
    np.testing.assert_array_equal(tris, copy)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", list(FOUR))
def test_bad_input_rejected(name):
    with pytest.raises(MeshoptBatchError):
        FOUR[name](np.array([[0, 1, 5]]), vertex_count=3)
    with pytest.raises(MeshoptBatchError):
        FOUR[name](np.array([[0, -1, 2]]))
    with pytest.raises(MeshoptBatchError):
        FOUR[name](np.array([0, 1, 2, 3]))
    with pytest.raises(MeshoptBatchError):
        FOUR[name](np.array([[0, 1, 2]]), cache_size=2)


triangle_lists = st.lists(
    st.tuples(st.integers(0, 15), st.integers(0, 15), st.integers(0, 15)), min_size=0, max_size=60
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tri_list=triangle_lists, cache=st.integers(3, 40))
def test_random_index_buffers_are_reordered_exactly(tri_list, cache):
    tris = np.array(tri_list, np.uint32).reshape(-1, 3)
    for name, func in FOUR.items():
        kwargs = {"cache_size": max(cache, 4) if name == "forsyth" else cache}
        if name == "hoppe":
            kwargs["restart_margin"] = cache // 2
        out = func(tris, 16, **kwargs)
        assert_reordering(tris, out)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nx=st.integers(1, 12), ny=st.integers(1, 12), seed=st.integers(0, 2**31), drop=st.floats(0, 0.5),
       flips=st.floats(0, 0.3))
def test_random_grids_with_holes_and_flips(nx, ny, seed, drop, flips):
    """Manifold-ish meshes with holes, several components and inconsistently wound faces."""
    rng = np.random.default_rng(seed)
    tris = meshes.grid(nx, ny).triangles.astype(np.int64)
    tris = tris[rng.random(len(tris)) >= drop]
    flip = rng.random(len(tris)) < flips
    tris[flip] = tris[flip][:, ::-1]
    tris = shuffled(tris, seed)
    for func in FOUR.values():
        assert_reordering(tris, func(tris))


# ------------------------------------------------------------------ quality


def _procedural():
    return {
        "grid": meshes.grid(40).triangles,
        "uv_sphere": meshes.uv_sphere(40, 80).triangles,
        "icosphere": meshes.icosphere(4).triangles,
        "torus": meshes.torus(64, 32).triangles,
    }


@pytest.mark.parametrize("mesh_name", ["grid", "uv_sphere", "icosphere", "torus"])
def test_all_improve_on_shuffled_order(mesh_name):
    tris = shuffled(_procedural()[mesh_name].astype(np.uint32), 7)
    base = acmr(tris, "fifo:16")
    for name, func in FOUR.items():
        out = func(tris)
        assert acmr(out, "fifo:16") < 0.8 * base, name
        assert acmr(out, "fifo:16") < 1.0, name


@pytest.mark.skipif(not HAVE_MESHOPT, reason="meshoptimizer not installed")
@pytest.mark.parametrize("mesh_name", ["grid", "uv_sphere", "icosphere", "torus"])
@pytest.mark.parametrize("size", [11, 14, 16, 32])
def test_tipsify_matches_meshoptimizer_fifo(mesh_name, size):
    """meshoptimizer's optimize_vertex_cache_fifo is also Tipsify: same ACMR within 3%."""
    tris = shuffled(_procedural()[mesh_name].astype(np.uint32), 11)
    ours = acmr(optimize_tipsify(tris, cache_size=size), f"fifo:{size}")
    theirs = acmr(optimize(tris, method="meshoptimizer_fifo", cache_size=size).triangles, f"fifo:{size}")
    assert ours <= 1.03 * theirs


@pytest.mark.skipif(not HAVE_MESHOPT, reason="meshoptimizer not installed")
@pytest.mark.parametrize("mesh_name", ["grid", "uv_sphere", "icosphere", "torus"])
def test_forsyth_near_meshoptimizer_on_regular_meshes(mesh_name):
    """On regular tessellations the article's constants lose 3-13% (closed torus) to
    meshoptimizer's tuned scorer -- paper 001 saw the same: TomF on its sphere 0.77 against
    0.66-0.68 for the others on AMD.  On scanned meshes the gap stays below 3%
    (test_real_meshes_against_meshoptimizer)."""
    tris = shuffled(_procedural()[mesh_name].astype(np.uint32), 5)
    ours = optimize_forsyth(tris)
    theirs = optimize(tris, method="meshoptimizer").triangles
    for profile in ("lru:32", "fifo:32"):
        assert acmr(ours, profile) <= 1.15 * acmr(theirs, profile), profile


def test_tipsify_paper_example_behaviour():
    """On a regular grid Tipsify with a big cache approaches the 0.5 + boundary ideal."""
    tris = shuffled(meshes.grid(30).triangles.astype(np.uint32), 2)
    assert acmr(optimize_tipsify(tris, cache_size=32), "fifo:32") < 0.7


def test_kcache_cache_size_matters():
    tris = shuffled(meshes.torus(64, 32).triangles.astype(np.uint32), 4)
    small = acmr(optimize_kcache(tris, cache_size=4), "fifo:16")
    right = acmr(optimize_kcache(tris, cache_size=16), "fifo:16")
    assert right < small


def test_hoppe_strips_are_edge_connected():
    """Hoppe emits strips: on a closed manifold most consecutive faces share an edge."""
    tris = shuffled(meshes.torus(48, 24).triangles.astype(np.uint32), 9)
    out = optimize_hoppe(tris)
    shared = [len(set(out[i]) & set(out[i + 1])) >= 2 for i in range(len(out) - 1)]
    assert np.mean(shared) > 0.8


# ------------------------------------------------------------------ literal references


def reference_forsyth(tris, cache_size=32):
    """Forsyth 2006 written literally (every score from scratch each step; slow)."""
    tris = [tuple(int(x) for x in t) for t in np.asarray(tris).reshape(-1, 3)]
    vcount = max((max(t) for t in tris), default=-1) + 1
    live = [0] * vcount
    by_vertex = [[] for _ in range(vcount)]
    for i, t in enumerate(tris):
        for v in dict.fromkeys(t):
            live[v] += 1
            by_vertex[v].append(i)
    cache, done, order = [], [False] * len(tris), []

    def vscore(v):
        if live[v] == 0:
            return -1.0
        s = 0.0
        if v in cache:
            p = cache.index(v)
            s = 0.75 if p < 3 else (1.0 - (p - 3) / (cache_size - 3)) ** 1.5
        return s + 2.0 * live[v] ** -0.5

    def tscore(i):
        return sum(vscore(v) for v in dict.fromkeys(tris[i]))

    best = max(range(len(tris)), key=lambda i: (tscore(i), -i)) if tris else None
    while best is not None:
        order.append(best)
        done[best] = True
        tv = list(dict.fromkeys(tris[best]))
        for v in tv:
            live[v] -= 1
        cache = (tv + [u for u in cache if u not in tv])[:cache_size]
        cand = {i for v in cache for i in by_vertex[v] if not done[i]}
        if not cand:
            cand = [i for i in range(len(tris)) if not done[i]]
        best = max(cand, key=lambda i: (tscore(i), -i)) if cand else None
    return np.array(order, np.int64)


def reference_tipsify(tris, k):
    """Sander et al. 2007, the paper's pseudo-code (Tipsify / Next / SkipDeadEnd) literally."""
    tris = np.asarray(tris).reshape(-1, 3)
    vcount = int(tris.max()) + 1 if len(tris) else 0
    adjacency = [[] for _ in range(vcount)]
    for t, tri in enumerate(tris):
        for v in dict.fromkeys(tri.tolist()):
            adjacency[v].append(t)
    live = [len(a) for a in adjacency]
    cache_time = [0] * vcount
    dead_end, emitted, out = [], [False] * len(tris), []
    s, cursor = k + 1, 0

    def skip_dead_end():
        nonlocal cursor
        while dead_end:
            d = dead_end.pop()
            if live[d] > 0:
                return d
        while cursor < vcount:
            if live[cursor] > 0:
                return cursor
            cursor += 1
        return -1

    f = skip_dead_end()
    while f >= 0:
        candidates = []
        for t in adjacency[f]:
            if emitted[t]:
                continue
            out.append(t)
            for v in tris[t].tolist():
                dead_end.append(v)
                candidates.append(v)
            for v in dict.fromkeys(tris[t].tolist()):
                live[v] -= 1
            for v in tris[t].tolist():
                if s - cache_time[v] > k:
                    cache_time[v] = s
                    s += 1
            emitted[t] = True
        best, best_p = -1, -1
        for v in candidates:
            if live[v] > 0:
                p = s - cache_time[v] if s - cache_time[v] + 2 * live[v] <= k else 0
                if p > best_p:
                    best, best_p = v, p
        f = best if best >= 0 else skip_dead_end()
    return np.array(out, np.int64)


@pytest.mark.parametrize("mesh", [meshes.grid(12), meshes.icosphere(2), meshes.torus(16, 8),
                                  meshes.uv_sphere(8, 16)], ids=lambda m: m.name)
def test_forsyth_equals_literal_article(mesh):
    from meshopt_batch.optimizers.forsyth import forsyth_order

    tris = shuffled(mesh.triangles.astype(np.uint32), 1)
    np.testing.assert_array_equal(forsyth_order(tris), reference_forsyth(tris))


@pytest.mark.parametrize("mesh", [meshes.grid(12), meshes.icosphere(2), meshes.torus(16, 8),
                                  meshes.uv_sphere(8, 16), meshes.random_soup(20)], ids=lambda m: m.name)
@pytest.mark.parametrize("k", [6, 11, 14])
def test_tipsify_equals_paper_pseudocode(mesh, k):
    from meshopt_batch.optimizers.tipsify import tipsify_order

    tris = shuffled(mesh.triangles.astype(np.uint32), 2)
    np.testing.assert_array_equal(tipsify_order(tris, cache_size=k), reference_tipsify(tris, k))


# ------------------------------------------------------------------ building blocks


@settings(max_examples=60, deadline=None)
@given(tri_list=triangle_lists)
def test_hoppe_edge_adjacency_is_symmetric(tri_list):
    tris = np.array(tri_list, np.uint32).reshape(-1, 3)  # the types hoppe gives it
    offsets, faces = vertex_faces(tris, 16, np.int32)
    nbr, nbr_edge = _edge_adjacency(tris, offsets, faces)
    for t in range(len(tris)):
        for e in range(3):
            g = nbr[t, e]
            if g < 0:
                continue
            e2 = nbr_edge[t, e]
            assert nbr[g, e2] == t and nbr_edge[g, e2] == e
            # the shared edge runs the other way in the neighbour
            assert tris[g, e2] == tris[t, (e + 1) % 3] and tris[g, (e2 + 1) % 3] == tris[t, e]


def test_kcache_fans_are_rotational():
    tris = meshes.torus(12, 8).triangles.astype(np.uint32)  # the types K-Cache gives it
    offsets, faces = vertex_faces(tris, tris.max() + 1, np.int32)
    _sort_fans(tris, offsets, faces)
    v = 0
    fan = faces[offsets[v]:offsets[v + 1]]
    assert sorted(fan.tolist()) == sorted(np.nonzero((tris == v).any(1))[0].tolist())
    for f, g in zip(fan[:-1], fan[1:], strict=True):
        assert len(set(tris[f]) & set(tris[g])) == 2  # consecutive faces share an edge


# ------------------------------------------------------------------ dispatcher


def test_registry_and_dispatch():
    assert set(CLASSIC_METHODS) <= set(METHODS)
    assert {"original", "batch", "meshoptimizer", "meshoptimizer_fifo", "meshoptimizer_strip"} <= set(METHODS)
    assert get_method("batch").target == "meshopt_batch.optimizers.batch:optimize_batch"
    tris = meshes.icosphere(2).triangles
    np.testing.assert_array_equal(optimize(tris, method="original").triangles, tris)
    for name in CLASSIC_METHODS:
        assert_reordering(tris, optimize(tris, method=name).triangles)
    out = optimize(tris, method="tipsify", cache_size=14).triangles
    np.testing.assert_array_equal(out, optimize_tipsify(tris, cache_size=14))
    mesh = meshes.icosphere(2)
    assert_reordering(mesh.triangles, optimize_mesh(mesh, method="forsyth").triangles)
    with pytest.raises(MeshoptBatchError, match="unknown optimization method"):
        optimize(tris, method="nope")
    result = optimize(tris, method="kcache")
    assert result.vertex_remap is None


def test_batch_is_imported_lazily():
    import subprocess
    import sys

    code = ("import sys, numpy as np; from meshopt_batch.optimizers import optimize; "
            "optimize(np.array([[0, 1, 2]]), method='tipsify').triangles; "
            "assert 'meshopt_batch.optimizers.batch' not in sys.modules; "
            "assert 'meshoptimizer' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.skipif(not HAVE_MESHOPT, reason="meshoptimizer not installed")
@pytest.mark.parametrize("name", ["meshoptimizer", "meshoptimizer_fifo", "meshoptimizer_strip"])
def test_meshoptimizer_wrappers_reorder(name):
    tris = shuffled(meshes.icosphere(3).triangles.astype(np.uint32), 1)
    out = optimize(tris, method=name).triangles
    assert_reordering(tris, out, exact_rows=False)
    assert optimize(np.zeros((0, 3), np.uint32), method=name).triangles.shape == (0, 3)


# ------------------------------------------------------------------ real meshes (slow)

REAL = ["bunny", "dragon_100k", "dragon_res3", "happy_buddha_100k", "armadillo_86k", "tree"]


def _real(name):
    path = meshes.shared_mesh_path(name)
    if path is None:
        pytest.skip(f"shared mesh {name} not available")
    from meshopt_batch.io import load_mesh

    m = load_mesh(path)
    return np.ascontiguousarray(m.triangles), m.vertex_count


@pytest.mark.parametrize("name", ["dragon_res3"])
def test_real_mesh_reordered_exactly(name):
    tris, vcount = _real(name)
    for func in FOUR.values():
        assert_reordering(tris, func(tris, vcount))


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_MESHOPT, reason="meshoptimizer not installed")
@pytest.mark.parametrize("name", REAL)
def test_real_meshes_against_meshoptimizer(name):
    """The issue's acceptance figures: Tipsify vs optimize_vertex_cache_fifo at the same N,
    Forsyth vs optimize_vertex_cache on lru:32 / fifo:32, all within 3%."""
    tris, vcount = _real(name)
    for n in (11, 14, 16):
        ours = acmr(optimize_tipsify(tris, vcount, cache_size=n), f"fifo:{n}", vcount)
        theirs = acmr(optimize(tris, vcount, method="meshoptimizer_fifo", cache_size=n).triangles, f"fifo:{n}", vcount)
        assert ours <= 1.03 * theirs, (n, ours, theirs)
    ours = optimize_forsyth(tris, vcount)
    theirs = optimize(tris, vcount, method="meshoptimizer").triangles
    for profile in ("lru:32", "fifo:32"):
        assert acmr(ours, profile, vcount) <= 1.03 * acmr(theirs, profile, vcount), profile


@pytest.mark.slow
@pytest.mark.parametrize("name", ["bunny", "happy_buddha_100k"])
def test_real_meshes_paper_ranking(name):
    """Paper 001 Tables 1-2: on scanned meshes K-Cache and Hoppe are the best of the four
    classic methods on the NVIDIA and AMD models (TomF and Tipsify trail)."""
    tris, vcount = _real(name)
    asr = {}
    for method in CLASSIC_METHODS:
        kw = {"cache_size": 14} if method == "tipsify" else {}
        out = optimize(tris, vcount, method=method, **kw).triangles
        asr[method] = {p: predict(out, vcount, profile=p).asr for p in ("nvidia_gl", "amd")}
    for profile in ("nvidia_gl", "amd"):
        best_classic = min(asr[m][profile] for m in ("kcache", "hoppe"))
        assert best_classic <= min(asr["tipsify"][profile], asr["forsyth"][profile])
