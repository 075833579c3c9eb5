"""The geometry stage, the frame loop, baseline / DR / oracle, the counters and the simulate
command."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
from PIL import Image
from threadpoolctl import threadpool_info

from gpu_probe.gl_reference import gl_available
from meshopt_batch.model.prediction import predict
from meshopt_batch.model.profiles import get_profile
from meshopt_batch.optimizers import get_method, optimize
from meshopt_batch.support.errors import MeshoptBatchError
from meshopt_batch_app.cli import main as cli_main
from meshopt_batch_app.glcheck import GLFrameCheck
from pipeline_model import techniques
from pipeline_model.geometry import DEFAULT_PROFILE, GeometryStage
from pipeline_model.pipeline import JSON_COUNTERS, simulate
from pipeline_model.scene import Scene, load_scene
from pipeline_model.stats import covered_per_tile, load_costs
from pipeline_model.techniques.base import RenderRequest, Technique

SHIPPED = ("city-unordered", "city-ordered", "city-batched", "hud-over-3d", "sprites-2d",
           "low-frequency")
SMALL = dict(width=320, height=208)


def _scene(objects, **kw):
    d = {"name": "t", "camera": {"eye": [0, 0, 10], "target": [0, 0, 0], "near": 1, "far": 100},
         "objects": objects}
    d.update(kw)
    return Scene.from_dict(d)


# ----------------------------------------------------------------------------- geometry stage
def test_face_culling_modes():
    front = {"mesh": "quad", "scale": 4}
    back = {"mesh": "quad", "scale": 4, "rotation": [0, 180, 0]}
    g = GeometryStage()
    for cull, expect in (("back", (2, 0)), ("front", (0, 2)), ("none", (2, 2))):
        sc = _scene([{**front, "state": {"cull": cull}}, {**back, "state": {"cull": cull}}])
        fr = g.process(sc.frame(0, 64, 64))
        assert (np.count_nonzero(fr.draw == 0), np.count_nonzero(fr.draw == 1)) == expect, cull
        assert list(fr.triangles_culled) == [2 - expect[0], 2 - expect[1]]
    # front faces are counter-clockwise in GL (y up), i.e. negative area with y down
    sc = _scene([front])
    xy = g.process(sc.frame(0, 64, 64)).xy
    e1, e2 = xy[:, 1] - xy[:, 0], xy[:, 2] - xy[:, 0]
    assert np.all(e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0] < 0)


def test_near_plane_clipping_and_program_order():
    sc = _scene([{"mesh": {"shape": "plane", "nx": 4}, "scale": [40, 1, 40], "position": [0, -1, 5],
                  "state": {"cull": "none"}},
                 {"mesh": "box", "position": [0, 0, 0]}])
    g = GeometryStage()
    fr = g.process(sc.frame(0, 320, 200))
    fr.validate()                                   # snapped, z in [0, 1], program order
    assert fr.triangles_clipped[0] > 0 and fr.triangles_clipped[1] == 0
    d0 = fr.draw == 0
    assert np.all(np.diff(fr.prim[d0]) >= 0)        # fans stay in place of their triangle
    assert fr.z[d0].min() < 1e-6                    # new vertices on the near plane
    assert np.abs(fr.xy).max() <= 4096 + 320        # guard band


def test_offscreen_object_culled_but_shaded():
    sc = _scene([{"mesh": "sphere", "position": [0, 0, 30]},      # behind the camera
                 {"mesh": "sphere", "position": [0, 0, 0]}])
    fr = GeometryStage().process(sc.frame(0, 64, 64))
    m = sc.mesh("sphere")
    inv = predict(m.triangles, profile=DEFAULT_PROFILE).invocations
    assert list(fr.vertex_invocations) == [inv, inv]
    assert fr.triangles_culled[0] == m.triangle_count
    assert not np.any(fr.draw == 0)


def test_vertex_invocations_are_predict_per_draw():
    sc = load_scene("hud-over-3d")
    for profile in (DEFAULT_PROFILE, "lru:32", "nvidia_gl"):
        spec = sc.frame(0, **SMALL)
        fr = GeometryStage(profile=get_profile(profile)).process(spec)
        want = [predict(d.mesh.triangles, profile=profile, vertex_count=d.mesh.vertex_count).invocations
                for d in spec.draws]
        assert list(fr.vertex_invocations) == want


@pytest.mark.parametrize("method", ["forsyth", "tipsify"])
def test_optimizer_changes_vertex_count_by_predict(method):
    sc = load_scene("hud-over-3d")
    spec = sc.frame(0, **SMALL)
    plain = GeometryStage().process(spec)
    opt = GeometryStage(method=get_method(method)).process(spec)
    want = [predict(optimize(d.mesh.triangles, d.mesh.vertex_count, method=method).triangles, profile=DEFAULT_PROFILE,
                    vertex_count=d.mesh.vertex_count).invocations for d in spec.draws]
    assert list(opt.vertex_invocations) == want
    assert int(opt.vertex_invocations.sum()) < int(plain.vertex_invocations.sum())
    # end to end: the counter of a run moves by exactly what predict says
    a = simulate(sc, ["baseline"], frames=2, progress=False, **SMALL)
    b = simulate(sc, ["baseline"], frames=2, method=method, progress=False, **SMALL)
    delta = a.technique_totals("baseline")["vertex_invocations"] - b.technique_totals("baseline")["vertex_invocations"]
    per_frame = sum(predict(d.mesh.triangles, profile=DEFAULT_PROFILE, vertex_count=d.mesh.vertex_count).invocations
                    for d in spec.draws) - sum(want)
    assert delta == 2 * per_frame
    # same picture: the optimizer only reorders triangles inside each draw (opaque meshes)
    assert a.technique_totals("baseline")["covered_pixels"] == b.technique_totals("baseline")["covered_pixels"]


# ----------------------------------------------------------------------------- techniques
@pytest.mark.parametrize("name", SHIPPED)
def test_baseline_dr_oracle_bit_identical(name):
    frames = {}

    def keep(tech, f, colour):
        frames[(tech, f)] = colour.copy()

    run = simulate(name, ["baseline", "dr", "oracle"], frames=2, first_frame=20, progress=False,
                   image_callback=keep, check_images=True, **SMALL)
    for f in (20, 21):
        assert np.array_equal(frames[("baseline", f)], frames[("dr", f)])
        assert np.array_equal(frames[("baseline", f)], frames[("oracle", f)])
    assert run.per_frame["image_diff_pixels"].sum() == 0
    t = {n: run.technique_totals(n) for n in run.techniques}
    assert t["dr"]["fragments_shaded"] <= t["baseline"]["fragments_shaded"]
    assert t["oracle"]["fragments_shaded"] <= t["baseline"]["fragments_shaded"]


def test_overshading_city_unordered_vs_ordered():
    un = simulate("city-unordered", ["baseline", "dr", "oracle"], frames=2, first_frame=10, progress=False)
    o = {n: un.technique_totals(n)["overshading"] for n in un.techniques}
    assert o["baseline"] > 2.0
    assert o["dr"] < 0.5 * o["baseline"] and o["oracle"] < 0.5 * o["baseline"]
    assert o["oracle"] == pytest.approx(1.0, abs=0.01)
    od = simulate("city-ordered", ["baseline", "oracle"], frames=2, first_frame=10, progress=False)
    b, orc = (od.technique_totals(n)["overshading"] for n in ("baseline", "oracle"))
    # close to the oracle: what is left is overdraw inside the trees' leaf clusters
    assert b <= 1.1 * orc
    assert (b - orc) < 0.05 * (o["baseline"] - o["oracle"])
    # DR is faster and cheaper than the baseline on the unordered city
    tb, td = un.technique_totals("baseline"), un.technique_totals("dr")
    assert td["cycles"] < tb["cycles"] and td["energy"] < tb["energy"]


def test_oracle_alone_and_shared_baseline():
    a = simulate("sprites-2d", ["oracle"], frames=1, progress=False, **SMALL)
    b = simulate("sprites-2d", ["oracle", "baseline"], frames=1, progress=False, **SMALL)
    assert a.technique_totals("oracle")["fragments_shaded"] == b.technique_totals("oracle")["fragments_shaded"]


class _Recorder(Technique):
    name = "recorder"
    aggregate = {"seen": "max"}

    def reset(self):
        self.frames = []

    def begin_frame(self, ctx):
        assert ctx.frame.n_triangles >= 0 and ctx.tiles.n_tiles > 0
        return RenderRequest()

    def end_frame(self, ctx, result):
        self.frames.append(ctx.index)
        return {"seen": len(self.frames), "had_previous": int(ctx.previous_colour is not None)}

    def summary(self):
        return {"frames_seen": len(self.frames)}


def test_registry_and_hooks(monkeypatch):
    monkeypatch.setitem(techniques.REGISTRY, "recorder", techniques.TechniqueEntry(_Recorder))
    assert "recorder" in techniques.available()
    run = simulate("sprites-2d", ["baseline", "recorder"], frames=3, progress=False, **SMALL)
    rows = run.per_frame[run.per_frame.technique == "recorder"]
    assert list(rows["had_previous"]) == [0, 1, 1]
    tot = run.technique_totals("recorder")
    assert tot["seen"] == 3 and tot["frames_seen"] == 3 and tot["had_previous"] == 2
    with pytest.raises(MeshoptBatchError, match="unknown technique"):
        simulate("sprites-2d", ["nonsense"], frames=1, progress=False)
    for name in ("baseline", "dr", "oracle"):
        assert name in techniques.available()


class _BlasThreads(Technique):
    """Records the BLAS thread limit in force while a frame is rendered."""

    name = "blas_threads"

    def reset(self):
        self.seen = []

    def begin_frame(self, ctx):
        self.seen.append({p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"})
        return RenderRequest()


def test_frames_run_with_blas_on_one_thread():
    """OpenBLAS's spinning idle threads would take the core the raster's threads need."""
    before = [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]
    tech = _BlasThreads()
    simulate("sprites-2d", [tech], frames=2, progress=False, **SMALL)
    assert tech.seen == [{1}, {1}] or not before
    assert [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"] == before


def test_cost_table_overrides(tmp_path):
    a = simulate("sprites-2d", ["baseline"], frames=1, progress=False, **SMALL)
    costs = tmp_path / "costs.json"
    costs.write_text(json.dumps({"energy_dram_byte": 0.2, "static_energy_per_cycle": {"value": 0.0}}))
    b = simulate("sprites-2d", ["baseline"], frames=1, progress=False, costs=costs, **SMALL)
    ta, tb = a.technique_totals("baseline"), b.technique_totals("baseline")
    assert ta["cycles"] == tb["cycles"]
    assert tb["energy"] == pytest.approx(ta["energy"] + ta["memory_bytes"] * 0.1 - ta["cycles"] * 0.3)
    with pytest.raises(MeshoptBatchError, match="unknown cost"):
        load_costs({"energy_per_unicorn": 1})


# ----------------------------------------------------------------------------- command line
def test_simulate_json_contract(capsys):
    assert cli_main(["simulate", "city-unordered", "--technique", "baseline", "-t", "dr,oracle",
                     "--frames", "2", "--width", "320", "--height", "208", "--json", "--no-progress"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["scene"] == "city-unordered" and out["frames"] == 2
    assert (out["width"], out["height"]) == (320, 208)
    assert set(out["techniques"]) == {"baseline", "dr", "oracle"}
    for t in out["techniques"].values():
        assert set(JSON_COUNTERS) <= set(t)
    assert len(out["per_frame"]) == 6
    for row in out["per_frame"]:
        assert {"technique", "frame"} | set(JSON_COUNTERS) <= set(row)
    assert out["techniques"]["baseline"]["tiles_rendered"] == 2 * 20 * 13


def test_simulate_list(capsys):
    assert cli_main(["simulate", "--list", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(SHIPPED) <= {s["name"] for s in out["scenes"]}
    assert {"baseline", "dr", "oracle"} <= set(out["techniques"])


def test_simulate_images_lossless(tmp_path, capsys):
    d = tmp_path / "frames"
    assert cli_main(["simulate", "sprites-2d", "-t", "baseline,oracle", "-n", "2", "--first-frame", "5",
                     "--width", "320", "--height", "208", "--images", str(d), "--no-progress",
                     "--csv", str(tmp_path / "rows.csv")]) == 0
    assert sorted(p.name for p in d.iterdir()) == ["baseline_0005.png", "baseline_0006.png",
                                                     "oracle_0005.png", "oracle_0006.png"]
    got = {}
    simulate("sprites-2d", ["baseline"], frames=2, first_frame=5, progress=False,
             image_callback=lambda t, f, c: got.__setitem__(f, c.copy()), **SMALL)
    for f in (5, 6):
        assert np.array_equal(np.asarray(Image.open(d / f"baseline_{f:04d}.png")), got[f])
    assert (tmp_path / "rows.csv").read_text().count("\n") == 5
    human = capsys.readouterr().out
    assert "sprites-2d" in human and "overshade" in human


class _Broken(Technique):
    name = "broken"

    def end_frame(self, ctx, result):
        if ctx.index == 1:
            raise MeshoptBatchError("broken on purpose")
        return {}


def test_no_partial_images(tmp_path, monkeypatch):
    # registered for this test only: the report lists every registered technique
    monkeypatch.setitem(techniques.REGISTRY, "broken", techniques.TechniqueEntry(_Broken))
    d = tmp_path / "out"
    with pytest.raises(MeshoptBatchError):
        simulate("sprites-2d", ["baseline", "broken"], frames=3, images_dir=d, progress=False, **SMALL)
    assert list(d.iterdir()) == []


def test_check_gl_block():
    if not gl_available():
        pytest.skip("no OpenGL context")
    run = simulate("sprites-2d", ["baseline"], frames=1, frame_checks=[GLFrameCheck()], progress=False,
                   **SMALL)
    gl = run.to_json()["gl_check"]
    assert gl["renderer"] and len(gl["frames"]) == 1
    f = gl["frames"][0]
    assert {"frame", "coverage_diff_pixels", "shaded_diff_pixels", "shaded_total_model",
            "shaded_total_gl"} <= set(f)
    assert f["coverage_diff_pixels"] == 0


@pytest.mark.parametrize("height,width,tile", [(160, 256, 16), (37, 53, 8), (1, 1, 16), (50, 17, 16)])
def test_covered_per_tile_counts_pixels_per_tile_and_keeps_skipped_tiles(height, width, tile):
    """Per tile: pixels with a nonzero count (edge tiles partial); a tile the render skipped
    keeps the previous frame's count."""
    rng = np.random.default_rng(height * width)
    covered = (rng.random((height, width)) < 0.6) * rng.integers(0, 3, (height, width))
    ty, tx = -(-height // tile), -(-width // tile)
    expected = np.array([np.count_nonzero(covered[r * tile:(r + 1) * tile, c * tile:(c + 1) * tile])
                         for r in range(ty) for c in range(tx)])
    rendered = np.ones((ty * tx, 1), np.int64)
    rendered[::3] = 0
    frame = SimpleNamespace(n_tiles=ty * tx, tile=tile)
    result = SimpleNamespace(covered=covered.astype(np.int32),
                             counter=lambda name: rendered[:, 0])
    previous = np.arange(ty * tx) + 1000
    got = covered_per_tile(frame, result, previous)
    assert got.dtype == np.int64
    assert np.array_equal(got, np.where(rendered[:, 0] > 0, expected, previous))
    rendered[:] = 1
    assert np.array_equal(covered_per_tile(frame, result), expected)
