"""The probe through WebGPU (issue 32): ``probe --api wgpu``, Vulkan/Metal/Direct3D 12 via wgpu.

Tests that draw need a WebGPU adapter with ``vertex-writable-storage`` and skip with the reason
where there is none; ``make setup`` installs Mesa's lavapipe (Vulkan on the CPU) so that CI runs
them.  Tests of lavapipe's own numbers are skipped on other adapters.  On lavapipe the figures
are exact: Mesa's draw module batches the index stream the same way under Vulkan as under OpenGL
(llvmpipe), so the ``llvmpipe`` profile holds for both.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from gpu_probe import wgpu_counter as wc
from gpu_probe.corpus import load_draws, ordered
from gpu_probe.experiments import block_switch_buffers, boundary_16bit_buffers, random_buffer_set, run_experiments
from meshes import shared_mesh_path
from meshopt_batch.model.prediction import predict
from meshopt_batch.model.profiles import get_profile
from meshopt_batch.support.errors import MeshoptBatchError
from meshopt_batch_app import cli

#: bunny.ply measured by OpenGL on llvmpipe (results/llvmpipe_accuracy_2026-11-21.csv).
BUNNY_LLVMPIPE = {"original": 132_535, "shuffled": 207_362}


@pytest.fixture(scope="module")
def counter():
    try:
        return wc.wgpu_counter()
    except MeshoptBatchError as exc:
        pytest.skip(f"no WebGPU adapter: {exc}")


@pytest.fixture(scope="module")
def lavapipe(counter):
    if not (counter.info["renderer"].startswith("llvmpipe") and counter.info["backend"] == "Vulkan"):
        pytest.skip(f"checks lavapipe's own numbers; this adapter is {counter.info['adapter']}")
    return counter


def _bunny():
    path = shared_mesh_path("bunny.ply")
    if path is None:
        pytest.skip("bunny.ply not found in the shared meshes")
    return path, load_draws(path)[0]


def _one_line_error(capsys, argv) -> str:
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("meshopt-batch: error: "), err
    return err[0]


RESULTS = Path(__file__).resolve().parents[1] / "results"


# -- no adapter needed -----------------------------------------------------------------------

def test_committed_lavapipe_results_are_llvmpipe_exactly():
    """``results/llvmpipe_vulkan_*_2026-11-26.*`` (``bench_probe.py --api wgpu --all-meshes``
    on lavapipe): stamped with API, backend, adapter, driver and date; the seeded experiment
    draws, the verification buffers and the 36 mesh cases are predicted again by ``llvmpipe``
    (which ``nvidia_gl`` misses), and the meshes measure what OpenGL measured on 2026-11-21."""
    rec = json.loads((RESULTS / "llvmpipe_vulkan_experiments_2026-11-26.json").read_text())
    assert (rec["api"], rec["backend"], rec["date"]) == ("wgpu", "Vulkan", "2026-11-26")
    assert rec["adapter"].startswith("llvmpipe") and rec["driver"].startswith("Mesa 22.3.6")
    assert rec["experiments"]["api"] == "wgpu" and rec["fit"]["exact"]
    fitted = json.loads((RESULTS / "llvmpipe_vulkan_profile_2026-11-26.json").read_text())
    assert (fitted["max_size"], fitted["max_uniques"], fitted["memory"], fitted["memory_size"]) == \
           (1023, 1023, "direct", 256)
    exps = rec["experiments"]["experiments"]
    assert sum(len(e["totals"]) for e in exps.values()) == 8772
    designed, groups = block_switch_buffers(exps["block_switch"]["extra"]["seed"])
    cases = [(designed + [b for _, b in groups], exps["block_switch"]["totals"]),
             (boundary_16bit_buffers()[0], exps["boundary_16bit"]["measured"]),
             (random_buffer_set(120, seed=exps["random"]["extra"]["seed"])[0], exps["random"]["measured"]),
             (random_buffer_set(120, seed=99)[0], [r["measured"] for r in rec["verification_rows"]])]
    llvmpipe, nvidia = get_profile("llvmpipe"), get_profile("nvidia_gl")
    missed = 0
    for bufs, measured in cases:
        assert len(bufs) == len(measured)
        for b, want in zip(bufs, measured, strict=True):
            V = int(b.max()) + 1
            assert predict(b.reshape(-1, 3), V, profile=llvmpipe).invocations == want
            missed += predict(b.reshape(-1, 3), V, profile=nvidia).invocations != want
    assert missed > 100
    acc = pd.read_csv(RESULTS / "llvmpipe_vulkan_accuracy_2026-11-26.csv")
    assert set(acc["api"]) == {"wgpu"} and set(acc["backend"]) == {"Vulkan"}
    rows = acc[acc["profile"] == "llvmpipe"]
    assert len(rows) == 36 and (rows["predicted"] == rows["measured"]).all()
    bunny = rows[rows["mesh"] == "bunny.ply"].set_index("order")["measured"]
    assert {k: bunny[k] for k in BUNNY_LLVMPIPE} == BUNNY_LLVMPIPE
    gl = pd.read_csv(RESULTS / "llvmpipe_accuracy_2026-11-21.csv").drop_duplicates(["mesh", "draw", "order"])
    both = rows.merge(gl, on=["mesh", "draw", "order"], suffixes=("", "_gl"))
    assert len(both) == 36 and (both["measured"] == both["measured_gl"]).all()


def test_importing_the_probe_and_the_cli_does_not_load_wgpu():
    code = ("import sys, gpu_probe, gpu_probe.counters, gpu_probe.experiments, gpu_probe.wgpu_counter, "
            "meshopt_batch_app.cli; print('wgpu' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("argv, says", [
    (["probe", "--adapter", "x"], "--adapter picks a WebGPU adapter: add --api wgpu"),
    (["probe", "--api", "wgpu", "--counter", "gpu_probe.simulated:amd"], "--counter replaces the GPU"),
    (["probe", "--waves", "--counter", "gpu_probe.simulated:amd"], "--waves captures waves on a GPU"),
])
def test_conflicting_options_are_one_line_errors(capsys, argv, says):
    assert says in _one_line_error(capsys, argv)


def test_wave_capture_through_webgpu_needs_subgroups_in_vertex_shaders(counter, capsys):
    """Where the adapter has no ``subgroup-vertex`` (lavapipe), the capture says so and ``probe
    MESH --api wgpu --waves`` prints why; where it has it, the waves hold every vertex the draw
    shades, as many times as the counter measures."""
    from gpu_probe.counters import capture_waves_through

    tri = (np.arange(600, dtype=np.uint32) * 7 % 150).reshape(-1, 3)
    w = capture_waves_through(counter, tri, 150)
    if counter.has_subgroup_vertex:
        flat = np.concatenate(w.waves)
        assert w.supported and len(flat) == counter.measure(tri, 150).invocations
        assert set(flat.tolist()) == set(tri.ravel().tolist())
        return
    assert not w.supported and "subgroup-vertex" in w.reason and w.renderer == counter.info["renderer"]
    path, _ = _bunny()
    assert cli.main(["probe", str(path), "--api", "wgpu", "--waves", "--profile", "llvmpipe"]) == 0
    assert "waves: unsupported:" in capsys.readouterr().out
    mine = [a for a in wc.adapter_records() if a["adapter"] == counter.info["adapter"]]
    assert mine and all(a["subgroup_vertex"] is False for a in mine)      # the list says so too


def test_a_refused_capture_shader_is_a_reason_not_an_exception(counter, monkeypatch):
    """A device that claims subgroup operations but refuses them in a vertex shader (here: one
    told it has them)."""
    if counter.has_subgroup_vertex:
        pytest.skip("this adapter has subgroup-vertex: the capture shader is accepted")
    from gpu_probe import wgpu_waves
    from gpu_probe.counters import capture_waves_through

    monkeypatch.setattr(counter, "has_subgroup_vertex", True)
    monkeypatch.setattr(wgpu_waves, "_made", wgpu_waves.weakref.WeakKeyDictionary())
    w = capture_waves_through(counter, np.arange(6, dtype=np.uint32).reshape(-1, 3), 6)
    assert not w.supported and w.reason.startswith("the capture shader was refused: ")


def test_unknown_api_is_refused_by_the_counter_factory():
    from gpu_probe.counters import api_counter

    with pytest.raises(MeshoptBatchError, match="--api 'vulkan'"):
        api_counter("vulkan")
    with pytest.raises(MeshoptBatchError, match="add --api wgpu"):
        api_counter("gl", "nvidia")


def test_missing_wgpu_package_is_one_line(monkeypatch, capsys):
    monkeypatch.setattr(wc, "_adapters", None)
    monkeypatch.setitem(sys.modules, "wgpu", None)
    assert "pip install wgpu" in _one_line_error(capsys, ["probe", "--api", "wgpu"])


def test_no_adapter_is_one_line_with_install_hint(monkeypatch, capsys):
    monkeypatch.setattr(wc, "_adapters", [])
    monkeypatch.setattr(wc, "_none_found", "no WebGPU adapter through Vulkan, Metal or Direct3D 12; "
                        + wc.INSTALL_HINT)
    line = _one_line_error(capsys, ["probe", "--api", "wgpu", "--experiments"])
    assert "apt-get install mesa-vulkan-drivers libvulkan1" in line


def _adapter(device, kind, backend, features):
    info = {"device": device, "adapter_type": kind, "backend_type": backend, "vendor": "",
            "description": "driver 1.0"}
    return SimpleNamespace(info=info, features=set(features))


def test_adapter_choice_by_words_rank_and_features(monkeypatch, capsys):
    """Selection only (no drawing): every word must match; discrete before CPU; an adapter
    without storage writes from vertex shaders is named with the missing feature."""
    cpu = _adapter("llvmpipe (LLVM 15)", "CPU", "Vulkan", [wc.STORAGE_FEATURE, wc.QUERY_FEATURE])
    gpu = _adapter("NVIDIA H100", "DiscreteGPU", "Vulkan", [wc.STORAGE_FEATURE, wc.QUERY_FEATURE])
    mtl = _adapter("Apple M2", "IntegratedGPU", "Metal", [])
    monkeypatch.setattr(wc, "_adapters", [cpu, mtl, gpu])
    assert wc.choose_adapter() is gpu
    assert wc.choose_adapter("LLVMPIPE vulkan") is cpu
    assert [r["adapter"] for r in wc.adapter_records()] == [
        "NVIDIA H100 (DiscreteGPU) via Vulkan", "llvmpipe (LLVM 15) (CPU) via Vulkan",
        "Apple M2 (IntegratedGPU) via Metal"]
    with pytest.raises(wc.WgpuProbeError, match="lacks the feature vertex-writable-storage"):
        wc.choose_adapter("apple")
    line = _one_line_error(capsys, ["probe", "--api", "wgpu", "--adapter", "radeon"])
    assert "no WebGPU adapter matches (found: NVIDIA H100 (DiscreteGPU) via Vulkan;" in line


def test_index_buffers_are_padded_to_whole_words():
    for dtype, n, size in ((np.uint16, 0, 2), (np.uint16, 3, 4), (np.uint16, 6, 6), (np.uint32, 0, 1),
                           (np.uint32, 3, 3)):
        out = wc._padded(np.arange(n, dtype=dtype))
        assert out.size == size and out.nbytes % 4 == 0 and out[:n].tolist() == list(range(n))


def test_counter_disagreement_is_an_error():
    """The check that runs on every draw: query totals against the storage atomics, and the
    per-vertex counts against the total and the referenced vertices."""
    check = SimpleNamespace(info={"adapter": "test adapter"})
    ibuf = np.array([0, 1, 2, 2, 1, 3], np.uint32)
    ranges = [(0, 3), (3, 3)]
    tot = np.array([3, 3])
    per = np.array([[1, 1, 1, 0], [0, 1, 1, 1]])
    wc.WgpuCounter._check(check, ibuf, ranges, 4, tot, per, tot.copy())
    with pytest.raises(wc.WgpuProbeError, match="disagree on draw 1 of 2: storage-buffer atomics counted 3, "
                                                "the pipeline-statistics query 4"):
        wc.WgpuCounter._check(check, ibuf, ranges, 4, tot, per, np.array([3, 4]))
    with pytest.raises(wc.WgpuProbeError, match="draw 0: per-vertex counts"):
        wc.WgpuCounter._check(check, ibuf, ranges, 4, tot, np.array([[2, 1, 0, 0], [0, 1, 1, 1]]), None)
    with pytest.raises(wc.WgpuProbeError, match="draw 1: per-vertex counts"):
        wc.WgpuCounter._check(check, ibuf, ranges, 4, np.array([3, 4]), per, None)


# -- measurements through wgpu ---------------------------------------------------------------

def test_renderer_record_names_api_backend_adapter_driver(counter):
    from gpu_probe.counters import renderer_record

    rec = renderer_record(counter.info)
    assert rec["api"] == "wgpu" and rec["backend"] in wc.BACKENDS
    assert rec["adapter"].endswith(f"via {rec['backend']}") and rec["renderer"] in rec["adapter"]
    assert rec["driver"] and rec["driver"] in rec["version"] and rec["backend"] in rec["version"]


@pytest.mark.parametrize("dtype", [np.uint16, np.uint32])
@pytest.mark.parametrize("tris", [1, 2, 341, 342, 5000])
def test_disjoint_triangles_cost_three_each(counter, tris, dtype):
    m = counter.measure(np.arange(3 * tris).reshape(-1, 3), 3 * tris, dtype)
    assert m.invocations == 3 * tris and m.per_vertex.tolist() == [1] * (3 * tris)
    assert m.index_type == np.dtype(dtype).name
    assert m.method == ("storage+pipeline_statistics" if counter.has_query else "storage")
    if counter.has_query:
        assert m.query_invocations == m.ssbo_invocations == 3 * tris


def test_degenerate_empty_and_bad_input(counter):
    assert counter.measure([[7, 7, 7]], 8).invocations == 1
    m = counter.measure(np.zeros((0, 3), np.uint32), 4)
    assert m.invocations == 0 and m.per_vertex.tolist() == [0] * 4
    none = np.zeros(0, np.int64)
    tot, per, _ = counter.measure_many([none, [0, 1, 2], none], 3, per_vertex=True)
    assert tot.tolist() == [0, 3, 0] and per.sum(axis=1).tolist() == [0, 3, 0]
    for bad in (lambda: counter.measure([[0, 1, 70000]], 70001, np.uint16),
                lambda: counter.measure([[0, 1, 5]], 4),
                lambda: counter.measure_many([[0, 1]], 4)):
        with pytest.raises(MeshoptBatchError):
            bad()


def test_chunked_draws_equal_one_pass(counter, monkeypatch):
    """Many draws are split into query sets and per-vertex bindings that fit; the split does
    not change a count."""
    bufs, specs = random_buffer_set(40, seed=3, max_triangles=900)
    V = max(s[1] for s in specs)
    whole = counter.measure_many(bufs, V, per_vertex=True, with_query=True)
    monkeypatch.setattr(wc, "MAX_QUERIES", 7)
    monkeypatch.setattr(counter, "max_binding", 3 * V * 4 + 5)
    split = counter.measure_many(bufs, V, per_vertex=True, with_query=True)
    assert np.array_equal(whole[0], split[0]) and np.array_equal(whole[1], split[1])
    assert (whole[1].sum(axis=1) == whole[0]).all()
    if counter.has_query:
        assert np.array_equal(whole[2], whole[0]) and np.array_equal(split[2], whole[0])


def test_index_type_and_render_state_leave_counts_alone(counter):
    rng = np.random.default_rng(5)
    bufs = [rng.integers(0, int(w), size=3 * int(t))
            for w, t in zip(rng.integers(3, 60000, 16), rng.integers(1, 3000, 16), strict=True)]
    base, _, _ = counter.measure_many(bufs, 60000, np.uint32)
    for kw in ({"index_dtype": np.uint16}, {"discard": False}, {"varyings": 16}):
        assert counter.measure_many(bufs, 60000, **kw)[0].tolist() == base.tolist(), kw


# -- lavapipe: the same rule as OpenGL llvmpipe ----------------------------------------------

@pytest.mark.parametrize("tris", [1, 341, 342, 682, 683, 2000])
def test_lavapipe_repeated_triangle_costs_three_per_segment(lavapipe, tris):
    assert lavapipe.measure(np.tile([[0, 1, 2]], (tris, 1)), 3).invocations == 3 * -(-tris // 341)


def test_lavapipe_direct_mapped_slots(lavapipe):
    m = lavapipe.measure([[3, 10, 11], [10, 11, 259], [3, 10, 11]], 300)
    assert m.invocations == 5 and m.per_vertex[3] == 2
    assert lavapipe.measure([[3, 10, 11], [10, 11, 258], [3, 10, 11]], 300).invocations == 4


def test_lavapipe_equals_opengl_llvmpipe_draw_for_draw(lavapipe):
    """Every experiment draw and every vertex of 150 random buffers: Vulkan (lavapipe, wgpu)
    counts what OpenGL (llvmpipe) counts."""
    from gpu_probe import context
    from gpu_probe.counters import gl_counter

    if not context.gl_available() or not context.gl_info()["renderer"].startswith("llvmpipe"):
        pytest.skip("needs OpenGL on llvmpipe to compare with")
    gl = gl_counter()
    vk_suite, gl_suite = run_experiments(lavapipe), run_experiments(gl)
    for name, exp in gl_suite.experiments.items():
        assert vk_suite[name].totals == exp.totals, name
    assert sum(len(e.totals) for e in vk_suite.experiments.values()) > 8000
    bufs, specs = random_buffer_set(150, seed=11, max_triangles=8000)
    V = max(s[1] for s in specs)
    assert np.array_equal(lavapipe.measure_many(bufs, V, per_vertex=True)[1],
                          gl.measure_many(bufs, V, per_vertex=True)[1])


def test_cli_fit_through_wgpu_predicts_fresh_counts(lavapipe, tmp_path, capsys):
    """Done when of issue 32: ``probe --api wgpu --experiments --fit --save-profile FILE`` on
    lavapipe; the saved profile predicts, exactly and vertex by vertex, random buffers and bunny
    (file order and shuffled) as the wgpu counter measures them afresh."""
    saved = tmp_path / "lavapipe.json"
    raw = tmp_path / "raw.json"
    assert cli.main(["probe", "--api", "wgpu", "--experiments", "--fit", "--save-profile", str(saved),
                     "--raw", str(raw), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["api"] == "wgpu" and out["backend"] == "Vulkan" and out["date"]
    assert out["fit"]["exact"] and out["fit"]["reproduction_mismatches"] == 0
    assert out["experiments"]["render_state"]["derived"]["independent"]
    assert out["experiments"]["random"]["derived"]["query_agrees"] is True
    record = json.loads(raw.read_text())
    assert record["api"] == "wgpu" and record["adapter"] == lavapipe.info["adapter"]
    prof = get_profile(str(saved))
    builtin = get_profile("llvmpipe")
    assert (prof.max_size, prof.max_uniques, prof.memory, prof.memory_size, prof.boundary_16bit) == \
           (builtin.max_size, builtin.max_uniques, builtin.memory, builtin.memory_size, False)
    assert "Vulkan via wgpu" in prof.description

    bufs, specs = random_buffer_set(120, seed=7, max_triangles=6000)
    V = max(s[1] for s in specs)
    tot, per, _ = lavapipe.measure_many(bufs, V, per_vertex=True)
    for b, t, row in zip(bufs, tot, per, strict=True):
        p = predict(b.reshape(-1, 3), V, profile=prof, per_vertex=True)
        assert p.invocations == t and np.array_equal(p.shaded_per_vertex, row)
    _, draw = _bunny()
    for order, expected in BUNNY_LLVMPIPE.items():
        tri = ordered(draw, order, 0)
        m = lavapipe.measure(tri, draw.vertex_count, draw.index_dtype)
        p = predict(tri, draw.vertex_count, profile=prof, per_vertex=True)
        assert m.invocations == p.invocations == expected, order
        assert np.array_equal(m.per_vertex, p.shaded_per_vertex)


def test_cli_probe_mesh_through_wgpu(lavapipe, capsys):
    path, draw = _bunny()
    assert cli.main(["probe", str(path), "--api", "wgpu", "--profile", "llvmpipe", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    m = out["measured"]
    assert m["invocations"] == BUNNY_LLVMPIPE["original"] == m["query_invocations"]
    assert m["method"] == "storage+pipeline_statistics" and m["counters_agree"]
    assert out["predictions"] == [{"profile": "llvmpipe", "invocations": 132_535, "asr": 132_535 / 69_451,
                                   "error_asr": 0.0, "exact": True}]
    assert (out["api"], out["backend"], out["adapter"]) == ("wgpu", "Vulkan", lavapipe.info["adapter"])
    assert cli.main(["probe", "--api", "wgpu", "--adapter", "llvmpipe vulkan"]) == 0
    text = capsys.readouterr().out
    assert "Vulkan via wgpu" in text and "pipeline-statistics query: yes" in text
    assert f"adapter: {lavapipe.info['adapter']}" in text
