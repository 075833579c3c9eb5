"""gpu_probe: real invocation counts, experiments, fitted profile, llvmpipe rule.

Tests marked ``gl`` need a headless OpenGL 4.3 context and are skipped cleanly without one.
Tests that check llvmpipe's specific numbers are skipped on other renderers.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from gpu_probe import context as gctx
from gpu_probe.vsplit import fetch_sequence, simulate_vsplit
from meshopt_batch.model.prediction import predict
from meshopt_batch.model.profiles import get_profile

HAVE_GL = gctx.gl_available()
needs_gl = pytest.mark.skipif(not HAVE_GL, reason="no headless OpenGL 4.3 context (EGL)")
gl = [pytest.mark.gl, needs_gl]


def _renderer() -> str:
    return gctx.gl_info()["renderer"] if HAVE_GL else ""


IS_LLVMPIPE = _renderer().startswith("llvmpipe")
llvmpipe_only = pytest.mark.skipif(not IS_LLVMPIPE, reason="checks llvmpipe's own numbers")


def _pred(tri, profile, V):
    return predict(np.array(tri, dtype=np.int64).reshape(-1, 3), V, profile=profile).invocations


# -- no GL needed -------------------------------------------------------------------------

def test_vsplit_reference_matches_algorithm1_llvmpipe_profile():
    """The plain-Python rule and Algorithm 1 with the llvmpipe profile agree exactly."""
    rng = np.random.default_rng(3)
    prof = get_profile("llvmpipe")
    for _ in range(60):
        w = int(rng.integers(3, 3000))
        t = int(rng.integers(1, 2500))
        idx = rng.integers(0, w, size=3 * t)
        assert _pred(idx, prof, w) == simulate_vsplit(idx)


def test_llvmpipe_profile_is_builtin_and_direct():
    p = get_profile("llvmpipe")
    assert (p.max_size, p.memory, p.memory_size) == (1023, "direct", 256)
    assert "llvmpipe" in p.source


def test_vsplit_hand_cases():
    assert simulate_vsplit([0, 1, 2] * 341) == 3            # one segment
    assert simulate_vsplit([0, 1, 2] * 342) == 6            # two segments
    assert simulate_vsplit([0, 256, 0]) == 3                # same slot: evicted
    assert simulate_vsplit([0, 255, 0]) == 2
    assert fetch_sequence([0, 1, 2, 0, 256, 0]) == [[0, 1, 2, 256, 0]]


def test_missing_gl_is_one_line_with_install_hint(monkeypatch, capsys):
    """No OpenGL: one line on stderr naming the packages, exit code 2, no traceback."""
    import moderngl

    from meshopt_batch_app import cli

    def boom(*a, **k):
        raise Exception("requested device index 0, but found 0 devices")

    monkeypatch.setattr(gctx, "_ctx", None)
    monkeypatch.setattr(gctx, "_error", None)
    monkeypatch.setattr(moderngl, "create_context", boom)
    with pytest.raises(gctx.GLUnavailableError) as exc:
        gctx.get_context()
    assert "apt-get install libegl1 libgl1 libegl-mesa0 libgl1-mesa-dri" in str(exc.value)
    assert cli.main(["probe"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("meshopt-batch: error: cannot create")
    assert "Traceback" not in err[0]


# -- measurements ----------------------------------------------------------------------------

@pytest.mark.gl
@needs_gl
def test_context_is_reused_and_named():
    assert gctx.get_context() is gctx.get_context()
    info = gctx.gl_info()
    assert info["renderer"] and info["version"] and info["version_code"] >= 430


@pytest.mark.gl
@needs_gl
@pytest.mark.parametrize("dtype", [np.uint16, np.uint32])
@pytest.mark.parametrize("tris", [1, 2, 340, 341, 342, 1000, 5000])
def test_disjoint_triangles_cost_three_each(tris, dtype):
    """A list of disjoint triangles costs exactly 3 per triangle under any batching."""
    from gpu_probe.invocations import measure_invocations

    idx = np.arange(3 * tris).reshape(-1, 3)
    m = measure_invocations(idx, 3 * tris, dtype)
    assert m.invocations == 3 * tris
    assert m.per_vertex.tolist() == [1] * (3 * tris)
    assert m.agree


@pytest.mark.gl
@needs_gl
def test_counters_agree_and_per_vertex_sums():
    from gpu_probe.invocations import measure_invocations, prober

    rng = np.random.default_rng(0)
    idx = rng.integers(0, 5000, size=(4000, 3))
    m = measure_invocations(idx, 5000)
    assert int(m.per_vertex.sum()) == m.invocations
    assert (m.per_vertex[np.setdiff1d(np.arange(5000), idx)] == 0).all()
    if prober().query is not None:
        assert m.method == "ssbo+pipeline_statistics"
        assert m.query_invocations == m.ssbo_invocations
    d = m.to_dict()
    assert d["renderer"] and d["asr"] == m.invocations / 4000


@pytest.mark.gl
@needs_gl
def test_degenerate_and_empty():
    from gpu_probe.invocations import measure_invocations

    assert measure_invocations([[7, 7, 7]], 8).invocations == 1
    m = measure_invocations(np.zeros((0, 3), np.uint32), 4)
    assert m.invocations == 0 and m.asr == 0.0


@pytest.mark.gl
@needs_gl
def test_bad_input_is_a_clean_error():
    from gpu_probe.invocations import measure_invocations
    from meshopt_batch.support.errors import MeshoptBatchError

    with pytest.raises(MeshoptBatchError):
        measure_invocations([[0, 1, 70000]], 70001, np.uint16)
    with pytest.raises(MeshoptBatchError):
        measure_invocations([[0, 1, 5]], 4)
    with pytest.raises(MeshoptBatchError):
        measure_invocations([0, 1], 4)


@pytest.mark.gl
@needs_gl
def test_16_and_32_bit_indices_agree():
    from gpu_probe.invocations import prober

    rng = np.random.default_rng(5)
    bufs = [rng.integers(0, int(w), size=3 * int(t))
            for w, t in zip(rng.integers(3, 60000, 20), rng.integers(1, 3000, 20), strict=True)]
    a, _, _ = prober().measure_many(bufs, 60000, np.uint16)
    b, _, _ = prober().measure_many(bufs, 60000, np.uint32)
    assert (a == b).all()


# -- llvmpipe's rule, hand-computable --------------------------------------------------------

@pytest.mark.gl
@needs_gl
@llvmpipe_only
@pytest.mark.parametrize("tris", [1, 341, 342, 682, 683, 2000])
def test_repeated_triangle_costs_three_per_segment(tris):
    from gpu_probe.invocations import measure_invocations

    m = measure_invocations(np.tile([[0, 1, 2]], (tris, 1)), 3)
    assert m.invocations == 3 * -(-tris // 341)


@pytest.mark.gl
@needs_gl
@llvmpipe_only
def test_direct_mapped_slots():
    """X, then X + 256 (same slot), then X: X is shaded twice; X + 255 does not evict."""
    from gpu_probe.invocations import measure_invocations

    m = measure_invocations([[3, 10, 11], [10, 11, 259], [3, 10, 11]], 300)
    assert m.invocations == 5 and m.per_vertex[3] == 2
    m = measure_invocations([[3, 10, 11], [10, 11, 258], [3, 10, 11]], 300)
    assert m.invocations == 4


@pytest.mark.gl
@needs_gl
@llvmpipe_only
def test_builtin_profile_exact_on_random_buffers():
    from gpu_probe.experiments import random_buffer_set
    from gpu_probe.invocations import prober

    bufs, specs = random_buffer_set(150, seed=11, max_triangles=8000)
    V = max(s[1] for s in specs)
    tot, _, _ = prober().measure_many(bufs, V)
    prof = get_profile("llvmpipe")
    pred = [_pred(b, prof, V) for b in bufs]
    assert tot.tolist() == pred


@pytest.mark.gl
@needs_gl
def test_waves_match_the_fetch_order():
    """Sec. 3.2 capture: on llvmpipe the waves are each segment's misses, 8 at a time."""
    from gpu_probe.waves import capture_waves

    rng = np.random.default_rng(8)
    idx = rng.integers(0, 700, size=(1500, 3))
    w = capture_waves(idx, 700)
    if not w.supported:
        assert w.reason
        pytest.skip(w.reason)
    assert w.subgroup_size >= 1
    from gpu_probe.invocations import measure_invocations

    assert w.invocations == measure_invocations(idx, 700).invocations
    if IS_LLVMPIPE:
        assert w.subgroup_size == 8
        expected = []
        for seq in fetch_sequence(idx):
            expected += [seq[i:i + 8] for i in range(0, len(seq), 8)]
        assert [x.tolist() for x in w.waves] == expected


# -- experiments and fit ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def suite():
    from gpu_probe.experiments import run_experiments

    return run_experiments()


@pytest.mark.gl
@needs_gl
def test_experiment_suite_is_complete(suite):
    from gpu_probe.experiments import EXPERIMENTS, ExperimentSuite

    assert set(suite.experiments) == set(EXPERIMENTS)
    d = suite.to_dict()
    assert d["renderer"] and d["date"]
    back = ExperimentSuite.from_dict(json.loads(json.dumps(d)))
    assert back["staircase"].steps == suite["staircase"].steps
    assert suite["render_state"].derived["independent"]
    if suite["random"].derived["query_agrees"] is not None:
        assert suite["random"].derived["query_agrees"]


@pytest.mark.gl
@needs_gl
@llvmpipe_only
def test_experiments_find_llvmpipe_rule(suite):
    assert suite["staircase"].steps[:3] == [1026, 2049, 3072]
    assert suite["staircase"].derived["max_size"] == 1023
    assert suite["batch_triplets"].derived["max_size_confirmed"]
    assert suite["uniques"].derived["max_uniques"] is None
    assert suite["lookback"].derived["lookback"] is None
    assert suite["slot_conflicts"].derived["direct_mapped_modulus"] == 256
    assert not suite["boundary_16bit"].derived["differs"]
    assert not suite["index_size"].derived["differs"]


@pytest.mark.gl
@needs_gl
def test_fitted_profile_reproduces_every_measurement(suite):
    """The fitted profile predicts every single experiment draw and random buffer exactly."""
    from gpu_probe.profile_fit import fit

    res = fit(suite, name="fitted", random_count=60)
    assert res.exact, (res.reasons, res.reproduction, res.verification.summary())
    if IS_LLVMPIPE:
        p, b = res.profile, get_profile("llvmpipe")
        assert (p.max_size, p.max_uniques, p.memory, p.memory_size, p.boundary_16bit) == \
               (b.max_size, b.max_uniques, b.memory, b.memory_size, b.boundary_16bit)


# -- the command line --------------------------------------------------------------------------

@pytest.mark.gl
@needs_gl
def test_cli_probe_json(tmp_path, capsys):
    from meshopt_batch_app import cli

    tris = np.arange(30).reshape(-1, 3)
    obj = tmp_path / "m.obj"
    obj.write_text("".join("v 0 0 0\n" for _ in range(30))
                   + "".join(f"f {a + 1} {b + 1} {c + 1}\n" for a, b, c in tris))
    prof = tmp_path / "fitted.json"
    assert cli.main(["probe", str(obj), "--json", "--save-profile", str(prof),
                     "--profile", "llvmpipe", "--profile", "fifo:16"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["renderer"] and out["measured"]["invocations"] == 30
    assert {r["profile"] for r in out["predictions"]} == {"llvmpipe", "fifo:16"}
    assert all(r["invocations"] == 30 for r in out["predictions"])
    assert out["experiments"]["staircase"]["steps"]
    assert out["fit"]["exact"]
    saved = json.loads(prof.read_text())
    assert saved == out["fitted_profile"]
    assert get_profile(str(prof)).memory == saved["memory"]


@pytest.mark.gl
@needs_gl
def test_cli_probe_missing_mesh(capsys):
    from meshopt_batch_app import cli

    assert cli.main(["probe", "/nonexistent/mesh.ply"]) == 2
    assert "no such file" in capsys.readouterr().err
