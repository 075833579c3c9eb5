"""Meshlets (issue 19): builders, layout, validity, bounds and figures."""

import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import meshes
from meshopt_batch.io import load_meshes
from meshopt_batch.meshlets import (
    MeshletResult,
    analyze_meshlets,
    build_meshlets,
    combine_analyses,
    cone_culled,
    frustum_culled,
    meshlet_bounds,
    meshlet_problems,
    random_views,
    validate_meshlets,
)
from meshopt_batch.meshlets.batch import EQ2_COEFFICIENTS, build_meshlets_batch
from meshopt_batch.meshlets.bounds import MeshletBounds
from meshopt_batch.meshlets.meshlet_comparison import COMPARE_BUILDERS, compare_meshlets
from meshopt_batch.meshlets.meshoptimizer_meshlets import MISSING_REASON, meshoptimizer_bounds
from meshopt_batch.meshlets.meshoptimizer_meshlets import available as peer_available
from meshopt_batch.support.errors import MeshoptBatchError

METHODS = ["batch", "greedy"] + (["meshoptimizer"] if peer_available() else [])
GLTF_DIR = Path(__file__).resolve().parents[2] / "shared" / "gltf"


def _gltf_primitives():
    if not GLTF_DIR.is_dir():
        return []
    out = []
    for path in sorted(GLTF_DIR.glob("*/*.gl*")):
        if path.suffix.lower() not in (".gltf", ".glb"):
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # point and line primitives are skipped
                prims = load_meshes(path)
        except MeshoptBatchError:
            continue
        out += [(f"{path.stem}[{i}]", m) for i, m in enumerate(prims) if m.triangle_count]
    return out


GLTF_PRIMITIVES = _gltf_primitives()


# ---------------------------------------------------------------------------- layout, exact figures
def test_greedy_cuts_in_order_with_exact_layout():
    tris = np.array([[0, 1, 2], [2, 1, 3], [3, 4, 5], [5, 4, 0]], np.uint32)
    pos = np.random.default_rng(0).normal(size=(6, 3))
    r = build_meshlets(tris, pos, max_vertices=5, max_triangles=3, method="greedy")
    # the third triangle would bring the first meshlet to 6 vertices
    assert r.meshlets.tolist() == [[0, 0, 4, 2], [4, 6, 4, 2]]
    assert r.meshlet_vertices.tolist() == [0, 1, 2, 3, 3, 4, 5, 0]
    assert r.meshlet_triangles.tolist() == [0, 1, 2, 2, 1, 3, 0, 1, 2, 2, 1, 3]
    assert np.array_equal(r.triangles(), tris)
    assert (r.meshlets.dtype, r.meshlet_vertices.dtype, r.meshlet_triangles.dtype) == (
        np.uint32, np.uint32, np.uint8)


def test_grid_exact_figures():
    g = meshes.grid(8, 8)
    batch = build_meshlets(g.triangles, g.positions, max_vertices=16, max_triangles=16)
    greedy = build_meshlets(g.triangles, g.positions, max_vertices=16, max_triangles=16, method="greedy")
    assert (batch.meshlet_count, int(batch.vertex_counts.sum())) == (8, 121)
    assert batch.meshlets[:2].tolist() == [[0, 0, 15, 16], [15, 48, 15, 16]]
    assert (greedy.meshlet_count, int(greedy.vertex_counts.sum())) == (10, 160)
    for r in (batch, greedy):
        validate_meshlets(r, g.triangles, g.vertex_count)


def test_icosphere_analysis_exact():
    ico = meshes.icosphere(2)
    r = build_meshlets(ico.triangles, ico.positions, max_vertices=32, max_triangles=32)
    a = analyze_meshlets(r, ico.positions)
    assert (a.meshlets, a.triangles, a.vertices, a.vertices_emitted) == (10, 320, 162, 249)
    assert a.vertices_per_triangle == 249 / 320 and a.vertex_duplication == 249 / 162
    assert a.vertex_fill == 249 / 320 and a.triangle_fill == 1.0 and a.lane_occupancy == 1.0
    assert a.cone_culled == pytest.approx(163 / 640, abs=1e-12)
    assert a.frustum_culled == 0.0 and (a.views, a.seed) == (64, 0)
    g = build_meshlets(ico.triangles, ico.positions, max_vertices=32, max_triangles=32, method="greedy")
    assert analyze_meshlets(g, ico.positions).vertices_emitted == 275


def test_batch_beats_greedy_and_eq2_is_available():
    ico = meshes.icosphere(3)
    ours = build_meshlets(ico.triangles, ico.positions, max_vertices=64, max_triangles=126)
    base = build_meshlets(ico.triangles, ico.positions, max_vertices=64, max_triangles=126, method="greedy")
    assert ours.vertex_counts.sum() < base.vertex_counts.sum()
    eq2 = build_meshlets_batch(ico.triangles.astype(np.int64), ico.positions, ico.vertex_count, 64, 126,
                               coefficients=EQ2_COEFFICIENTS)
    validate_meshlets(eq2, ico.triangles)
    assert eq2.stats["coefficients"] == EQ2_COEFFICIENTS


def test_fill_small_packs_separate_components_whole():
    # 40 separate quads (4 vertices, 2 triangles): 16 per meshlet at 64 vertices, none cut
    quads = np.array([[4 * i, 4 * i + 1, 4 * i + 2, 4 * i, 4 * i + 2, 4 * i + 3] for i in range(40)]).reshape(-1, 3)
    pos = np.random.default_rng(1).normal(size=(160, 3))
    r = build_meshlets(quads, pos, max_vertices=64, max_triangles=126)
    assert r.triangle_counts.tolist() == [32, 32, 16] and r.vertex_counts.tolist() == [64, 64, 32]


def test_lane_occupancy_and_fill_exact():
    quad = meshes.grid(1, 1)
    r = build_meshlets(quad.triangles, quad.positions, max_vertices=64, max_triangles=126)
    a = analyze_meshlets(r, quad.positions)
    assert (a.meshlets, a.vertices_emitted) == (1, 4)
    assert a.lane_occupancy == 4 / 126 and a.vertex_fill == 4 / 64 and a.triangle_fill == 2 / 126


def test_flat_quad_cone_culls_exactly_the_views_behind_it():
    quad = meshes.grid(1, 1)
    r = build_meshlets(quad.triangles, quad.positions)
    b = meshlet_bounds(r, quad.positions)
    normal = np.cross(*(quad.positions[quad.triangles[0, 1:]] - quad.positions[quad.triangles[0, 0]]))
    normal = normal / np.linalg.norm(normal)
    assert np.allclose(b.cone_axis[0], normal) and b.cone_cutoff[0] < 1e-6
    used = quad.positions
    lo, hi = used.min(axis=0), used.max(axis=0)
    centre = (lo + hi) / 2
    cams, _ = random_views(centre, float(np.linalg.norm(used - centre, axis=1).max()))
    behind = ((cams - quad.positions[0]) @ normal < 0).mean()
    assert analyze_meshlets(r, quad.positions).cone_culled == behind
    assert 0 < behind < 1


def test_random_views_are_seeded_and_documented():
    cams, planes = random_views(np.zeros(3), 2.0, count=16, seed=3)
    cams2, planes2 = random_views(np.zeros(3), 2.0, count=16, seed=3)
    assert np.array_equal(cams, cams2) and np.array_equal(planes, planes2)
    dist = np.linalg.norm(cams, axis=1)
    assert ((dist >= 3.0) & (dist <= 8.0)).all()
    assert np.allclose(np.linalg.norm(planes[:, :, :3], axis=2), 1.0)
    # the look-at target (within R/2 of the centre) and the centre itself are inside every frustum
    assert ((planes[:, :, :3] @ np.zeros(3) + planes[:, :, 3]) > 0).all()
    assert not np.array_equal(random_views(np.zeros(3), 2.0, count=16, seed=4)[0], cams)


def test_frustum_culled_sphere_test():
    b = MeshletBounds(np.array([[0, 0, 0], [5, 0, 0], [1.5, 0, 0]], np.float32), np.array([1, 1, 1], np.float32),
                      np.zeros((3, 3), np.float32), np.zeros((3, 3), np.float32), np.ones(3, np.float32))
    planes = np.array([[-1.0, 0, 0, 1.0]])  # inside: x <= 1
    assert frustum_culled(b, planes).tolist() == [False, True, False]
    assert not cone_culled(b, [0, 0, 10]).any()


def test_combine_analyses_weights_by_meshlets():
    a = meshes.icosphere(1)
    b = meshes.grid(4, 4)
    ra = analyze_meshlets(build_meshlets(a.triangles, a.positions, max_vertices=16, max_triangles=16), a.positions)
    rb = analyze_meshlets(build_meshlets(b.triangles, b.positions, max_vertices=16, max_triangles=16), b.positions)
    c = combine_analyses([ra, rb])
    assert c.meshlets == ra.meshlets + rb.meshlets and c.triangles == ra.triangles + rb.triangles
    assert c.vertices_per_triangle == (ra.vertices_emitted + rb.vertices_emitted) / c.triangles
    assert c.cone_culled == pytest.approx((ra.cone_culled * ra.meshlets + rb.cone_culled * rb.meshlets) / c.meshlets)
    assert combine_analyses([ra]) is ra


# ---------------------------------------------------------------------------- validity
@st.composite
def random_mesh(draw):
    n_vertices = draw(st.integers(3, 60))
    n_tris = draw(st.integers(1, 150))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    if draw(st.booleans()):
        tris = rng.integers(0, n_vertices, size=(n_tris, 3))  # degenerate triangles included
    else:
        tris = np.array([rng.choice(n_vertices, 3, replace=False) for _ in range(n_tris)])
    pos = rng.normal(size=(n_vertices, 3))
    return tris.astype(np.uint32), pos


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mesh=random_mesh(), max_v=st.integers(3, 40), max_t=st.integers(1, 40),
       method=st.sampled_from(METHODS), cone=st.sampled_from([0.0, 0.25, 1.0]))
def test_random_meshes_give_valid_meshlets(mesh, max_v, max_t, method, cone):
    tris, pos = mesh
    if method == "greedy":
        cone = 0.0
    r = build_meshlets(tris, pos, max_vertices=max_v, max_triangles=max_t, method=method, cone_weight=cone)
    assert meshlet_problems(r, tris, pos.shape[0]) == []
    assert r.meshlet_count >= -(-tris.shape[0] // max_t)


@pytest.mark.skipif(not GLTF_PRIMITIVES, reason="shared glTF set absent")
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(item=st.sampled_from(GLTF_PRIMITIVES or [("none", None)]), max_v=st.sampled_from([3, 16, 64, 128, 256]),
       max_t=st.sampled_from([1, 8, 64, 126, 512]), method=st.sampled_from(METHODS),
       cone=st.sampled_from([0.0, 0.25]))
def test_shared_gltf_primitives_give_valid_meshlets(item, max_v, max_t, method, cone):
    _, mesh = item
    if method == "greedy":
        cone = 0.0
    r = build_meshlets(mesh.triangles, mesh.positions, max_vertices=max_v, max_triangles=max_t,
                       method=method, cone_weight=cone)
    validate_meshlets(r, mesh.triangles, mesh.vertex_count)


@pytest.mark.skipif(not GLTF_PRIMITIVES, reason="shared glTF set absent")
def test_every_shared_gltf_primitive_at_the_default_limits():
    for name, mesh in GLTF_PRIMITIVES:
        for method in ("batch", "greedy"):
            r = build_meshlets(mesh.triangles, mesh.positions, method=method)
            assert meshlet_problems(r, mesh.triangles, mesh.vertex_count) == [], (name, method)


def _mutated(r: MeshletResult, **arrays) -> MeshletResult:
    fields = {"meshlets": r.meshlets, "meshlet_vertices": r.meshlet_vertices,
              "meshlet_triangles": r.meshlet_triangles, "max_vertices": r.max_vertices,
              "max_triangles": r.max_triangles}
    fields.update(arrays)
    return MeshletResult(**fields)


def test_validator_catches_each_defect():
    g = meshes.grid(4, 4)
    r = build_meshlets(g.triangles, g.positions, max_vertices=12, max_triangles=8)
    assert meshlet_problems(r, g.triangles) == []
    flipped = r.meshlet_triangles.copy()
    flipped[[0, 1]] = flipped[[1, 0]]
    assert "winding" in meshlet_problems(_mutated(r, meshlet_triangles=flipped), g.triangles)[0]
    rotated = r.meshlet_triangles.copy()
    rotated[:3] = rotated[[1, 2, 0]]
    assert meshlet_problems(_mutated(r, meshlet_triangles=rotated), g.triangles) == []
    assert "over 8 vertices" in meshlet_problems(_mutated(r, max_vertices=8), g.triangles)[0]
    assert "over 4 triangles" in meshlet_problems(_mutated(r, max_triangles=4), g.triangles)[0]
    assert "uint8" in meshlet_problems(_mutated(r, meshlet_triangles=r.meshlet_triangles.astype(np.uint16)),
                                       g.triangles)[0]
    dup = r.meshlet_vertices.copy()
    dup[1] = dup[0]
    assert any("twice" in p for p in meshlet_problems(_mutated(r, meshlet_vertices=dup), g.triangles))
    gap = r.meshlets.copy()
    gap[1, 0] += 1
    assert "densely" in meshlet_problems(_mutated(r, meshlets=gap), g.triangles)[0]
    bad_local = r.meshlet_triangles.copy()
    bad_local[0] = 200
    assert "local index" in meshlet_problems(_mutated(r, meshlet_triangles=bad_local), g.triangles)[0]
    assert "triangles in meshlets" in meshlet_problems(r, g.triangles[:-1])[0]
    with pytest.raises(MeshoptBatchError, match="invalid meshlets"):
        validate_meshlets(r, g.triangles[::-1][:-1])


# ---------------------------------------------------------------------------- bounds
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mesh=random_mesh(), max_v=st.integers(3, 32), cams=st.integers(0, 2**31 - 1))
def test_bounds_are_conservative(mesh, max_v, cams):
    tris, pos = mesh
    r = build_meshlets(tris, pos, max_vertices=max_v, max_triangles=max_v, cone_weight=1.0)
    b = meshlet_bounds(r, pos)
    rng = np.random.default_rng(cams)
    for i in range(r.meshlet_count):
        v0, _, vc, _ = (int(x) for x in r.meshlets[i])
        p = pos[r.meshlet_vertices[v0:v0 + vc]]
        assert (np.linalg.norm(p - b.center[i], axis=1) <= b.radius[i] * (1 + 1e-5) + 1e-6).all()
        corners = pos[r.meshlet_triangles_of(i)]
        normals = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
        if b.cone_cutoff[i] >= 1:
            continue
        # cameras behind the apex inside the culling cone, and random ones
        around = rng.normal(size=(20, 3))
        around /= np.linalg.norm(around, axis=1)[:, None]
        toward = -(b.cone_axis[i] + 0.3 * around)
        cameras = np.concatenate([b.cone_apex[i] + toward * rng.uniform(0.1, 10, size=(20, 1)),
                                  rng.normal(scale=5, size=(20, 3))])
        for cam in cameras:
            sub = MeshletResult(r.meshlets[i:i + 1], r.meshlet_vertices, r.meshlet_triangles, 256, 512)
            bi = meshlet_bounds(sub, pos)
            if cone_culled(bi, cam)[0]:
                facing = ((cam - corners[:, 0]) * normals).sum(axis=1)
                scale = np.linalg.norm(normals, axis=1) * (np.linalg.norm(cam) + np.abs(pos).max() + 1)
                assert (facing <= 1e-4 * scale).all()


def test_degenerate_meshlet_cannot_cull():
    tris = np.array([[0, 1, 2], [0, 2, 1]], np.uint32)  # two faces back to back
    pos = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], float)
    r = build_meshlets(tris, pos)
    b = meshlet_bounds(r, pos)
    assert b.cone_cutoff.tolist() == [1.0] and b.cone_axis.tolist() == [[0, 0, 0]]
    assert not cone_culled(b, [0, 0, -5]).any() and not cone_culled(b, [0, 0, 5]).any()


# ---------------------------------------------------------------------------- errors, comparison, peer
@pytest.mark.parametrize("kwargs, message", [
    ({"max_vertices": 2}, "max_vertices"), ({"max_vertices": 257}, "max_vertices"),
    ({"max_triangles": 0}, "max_triangles"), ({"max_triangles": 513}, "max_triangles"),
    ({"max_vertices": 64.0}, "max_vertices"), ({"cone_weight": 1.5}, "cone_weight"),
    ({"cone_weight": "x"}, "cone_weight"), ({"method": "nope"}, "unknown meshlet method"),
    ({"method": "greedy", "cone_weight": 0.5}, "no cone weight"),
])
def test_bad_arguments_are_one_clear_error(kwargs, message):
    g = meshes.grid(2, 2)
    with pytest.raises(MeshoptBatchError, match=message):
        build_meshlets(g.triangles, g.positions, **kwargs)


def test_bad_positions_and_indices():
    g = meshes.grid(2, 2)
    with pytest.raises(MeshoptBatchError, match="positions"):
        build_meshlets(g.triangles, g.positions[:, :2])
    with pytest.raises(MeshoptBatchError, match="out of range"):
        build_meshlets(g.triangles + 100, g.positions)


def test_empty_index_buffer():
    r = build_meshlets(np.zeros((0, 3), np.uint32), np.zeros((3, 3)))
    assert r.meshlet_count == 0 and meshlet_problems(r, np.zeros((0, 3))) == []
    assert analyze_meshlets(r, np.zeros((3, 3))).meshlets == 0


def test_compare_rows_and_peer_skip(monkeypatch):
    ico = meshes.icosphere(1)
    rows = compare_meshlets({"ico": [ico]}, limits=[(16, 16)], views=4)
    assert [r["builder"] for r in rows] == ["batch", "batch cone 0.25", "greedy", "meshoptimizer",
                                            "meshoptimizer cone 0.25"]
    assert len(COMPARE_BUILDERS) == 5
    ours = rows[0]
    assert ours["triangles"] == 80 and ours["cone_culled_meshlets"] == ours["cone_culled"] * ours["meshlets"]
    monkeypatch.setattr("meshopt_batch.meshlets.meshlet_comparison.peer_available", lambda: False)
    rows = compare_meshlets({"ico": [ico]}, limits=[(16, 16)], views=4)
    assert rows[3] == {"mesh": "ico", "limits": "16/16", "builder": "meshoptimizer", "method": "meshoptimizer",
                       "cone_weight": 0.0, "skipped": MISSING_REASON}


@pytest.mark.skipif(not peer_available(), reason=MISSING_REASON)
def test_meshoptimizer_peer_layout_is_valid_and_repacked():
    ico = meshes.icosphere(3)
    r = build_meshlets(ico.triangles, ico.positions, max_vertices=64, max_triangles=126, method="meshoptimizer")
    validate_meshlets(r, ico.triangles, ico.vertex_count)
    assert r.stats["method"] == "meshoptimizer"
    theirs = meshoptimizer_bounds(r, ico.positions)
    ours = meshlet_bounds(r, ico.positions)
    # Ritter's sphere against meshoptimizer's: the same size overall, never far off
    assert ours.radius.sum() <= 1.02 * theirs["radius"].sum()
    assert (ours.radius <= 1.15 * theirs["radius"]).all()


@pytest.mark.skipif(not peer_available(), reason=MISSING_REASON)
def test_meshoptimizer_peer_equals_its_python_wrapper_and_is_valid_at_any_triangle_limit():
    """The C builder called with buffers sized as it writes them: the same meshlets as almeshopt's
    wrapper where that wrapper's buffer suffices (a multiple of 4 triangles), valid meshlets at
    limits where it would overflow (hypothesis found 5/1 corrupting the heap)."""
    import almeshopt

    ico = meshes.icosphere(3)
    for max_v, max_t in ((64, 124), (64, 64), (32, 8)):
        ours = build_meshlets(ico.triangles, ico.positions, max_vertices=max_v, max_triangles=max_t,
                              method="meshoptimizer")
        out = almeshopt.build_meshlets(np.ascontiguousarray(ico.triangles, np.uint32).reshape(-1),
                                       np.ascontiguousarray(ico.positions, np.float32), max_v, max_t, 0.0)
        theirs = MeshletResult.from_slices(out["meshlets"], out["meshlet_vertices"], out["meshlet_triangles"],
                                           max_v, max_t)
        assert np.array_equal(ours.meshlets, theirs.meshlets)
        assert np.array_equal(ours.meshlet_vertices, theirs.meshlet_vertices)
        assert np.array_equal(ours.meshlet_triangles, theirs.meshlet_triangles)
    for max_v, max_t in ((5, 1), (3, 2), (8, 3), (64, 126), (255, 511)):
        r = build_meshlets(ico.triangles, ico.positions, max_vertices=max_v, max_triangles=max_t,
                           method="meshoptimizer")
        assert meshlet_problems(r, ico.triangles, ico.vertex_count) == [], (max_v, max_t)
        assert r.meshlet_count >= -(-ico.triangles.shape[0] // max_t)
