"""The probe finds any GPU's reuse rules (issue 18): the counter interface, the simulated GPUs
and the blind fit.  No OpenGL is needed: every count comes from a counter function.

For every simulated GPU of :mod:`gpu_probe.simulated`, ``meshopt-batch probe --counter
gpu_probe.simulated:NAME --experiments --fit --save-profile P.json`` must write a profile whose
predictions equal the simulated counts, vertex by vertex, on 200 random index buffers and on
the small shared meshes in original, shuffled and optimized order.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from gpu_probe import simulated
from gpu_probe.corpus import ORDERS, load_draws, ordered
from gpu_probe.counters import FunctionCounter, resolve_counter
from gpu_probe.experiments import random_buffer_set, run_experiments
from gpu_probe.profile_fit import fit
from gpu_probe.vsplit import simulate_vsplit
from meshes import shared_mesh_path
from meshopt_batch.model.prediction import predict
from meshopt_batch.model.profiles import get_profile
from meshopt_batch.support.errors import MeshoptBatchError
from meshopt_batch_app import cli

#: What the blind fit must find: (MAX_SIZE, MAX_UNIQUES, memory, memory size).  A batch of 64
#: indices holds 21 whole triangles, so its MAX_SIZE is 63 (the staircase steps at 66).
EXPECTED = {
    "nvidia_gl": (96, 32, "lookback", 42),
    "nvidia_gl_16bit": (96, 32, "lookback", 42),
    "nvidia_dx": (96, 32, "lookback_dx", 44),
    "amd": (384, 384, "lru", 15),
    "intel": (0, 0, "fifo", 128),
    "llvmpipe": (1023, 1023, "direct", 256),
    "mali_valhall": (0, 0, "groups", 4),
    "mali_400": (0, 0, "range", 1),
    "batch_64_16": (63, 16, "lookback", 42),
    "lookback_20": (96, 32, "lookback", 20),
    "lru_7": (384, 384, "lru", 7),
    "fifo_32": (0, 0, "fifo", 32),
    "direct_128": (1023, 1023, "direct", 128),
    "groups_8": (0, 0, "groups", 8),
}

SMALL_MESHES = ["tree_quaternius_birch8.ply", "dragon_res3.ply", "flight_helmet.glb"]


def test_every_simulated_gpu_has_an_expected_fit():
    assert set(EXPECTED) == set(simulated.SIMULATED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_blind_fit_recovers_simulated_gpu(name, tmp_path, capsys):
    saved = tmp_path / "P.json"
    assert cli.main(["probe", "--counter", f"gpu_probe.simulated:{name}", "--experiments", "--fit",
                     "--save-profile", str(saved), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["counter"] == f"gpu_probe.simulated:{name}"
    assert out["fit"]["exact"] and out["fit"]["reproduction_mismatches"] == 0
    assert out["fit"]["verification"]["cases"] == 120 and out["fit"]["verification"]["exact"]
    profile = get_profile(str(saved))
    assert (profile.max_size, profile.max_uniques, profile.memory, profile.memory_size) == EXPECTED[name]
    assert profile.boundary_16bit == (name == "nvidia_gl_16bit")
    assert "index_size" not in out["experiments"]          # needs OpenGL's render state

    count = simulated.SIMULATED[name]
    bufs, specs = random_buffer_set(200, seed=18, max_triangles=3000)
    for buf, (_, width, _) in zip(bufs, specs, strict=True):
        want = count(buf.astype(np.uint32), width)
        got = predict(buf.reshape(-1, 3), width, profile=profile, per_vertex=True)
        assert np.array_equal(got.shaded_per_vertex, want), (name, width)
    for mesh in SMALL_MESHES:
        path = shared_mesh_path(mesh)
        if path is None:
            continue
        for draw in load_draws(path):
            for order in ORDERS:
                tri = ordered(draw, order, seed=3)
                want = count(tri.reshape(-1), draw.vertex_count)
                got = predict(tri, draw.vertex_count, profile=profile, per_vertex=True)
                assert np.array_equal(got.shaded_per_vertex, want), (name, draw.name, order)


def test_published_facts():
    sim = simulated.SIMULATED
    # Mali Valhall, groups of 4: indices 0, 7, 15 shade vertices 0-7 and 12-15
    shaded = sim["mali_valhall"](np.array([0, 7, 15], np.uint32), 20)
    assert np.flatnonzero(shaded).tolist() == list(range(8)) + list(range(12, 16))
    # Mali-400: indices 0, 1000, 2 shade 1001 vertices
    assert sim["mali_400"](np.array([0, 1000, 2], np.uint32), 1001).sum() == 1001
    # NVIDIA: 33 new vertices then a repeated triangle cost 34 (paper 001 sec. 3.3)
    seq = list(range(33))
    while len(seq) < 96:
        seq += [29, 30, 31]
    assert sim["nvidia_gl"](np.array(seq, np.uint32), 33).sum() == 34
    # AMD: no reuse over more than 14 distinct vertices in between
    for between, cost in ((14, 15), (15, 17)):
        lru = [100] + list(range(between)) + [100]
        lru += [100] * (-len(lru) % 3)
        assert sim["amd"](np.array(lru, np.uint32), 101).sum() == cost
    # llvmpipe is Mesa's vsplit rule
    rng = np.random.default_rng(5)
    for _ in range(20):
        idx = rng.integers(0, 2000, size=3 * int(rng.integers(1, 1500))).astype(np.uint32)
        assert sim["llvmpipe"](idx, 2000).sum() == simulate_vsplit(idx)


def sevens(indices, vertex_count):
    """Shades each referenced vertex once, and again at every index position divisible by 7."""
    counts = np.zeros(vertex_count, np.int64)
    counts[np.unique(indices)] = 1
    np.add.at(counts, indices[::7], 1)
    return counts


def test_counts_that_fit_no_known_kind_give_the_closest_not_a_profile(tmp_path, capsys):
    saved = tmp_path / "P.json"
    code = cli.main(["probe", "--counter", f"{__file__}:sevens", "--save-profile", str(saved),
                     "--json"])
    captured = capsys.readouterr()
    assert code == 1 and not saved.exists()
    assert "not written: no known memory kind fits" in captured.err
    out = json.loads(captured.out)
    assert out["fitted_profile"] is None and out["fit"]["fits"] is False
    closest = out["fit"]["closest"]
    assert closest["error"]["mismatches"] > 0 and closest["error"]["abs_error"] > 0
    assert any("no known memory kind" in r for r in out["fit"]["reasons"])


def test_fit_with_a_counter_object():
    counter = FunctionCounter(simulated.lru_7, "lru_7")
    suite = run_experiments(counter, only=["staircase", "uniques", "lru", "refresh", "extent"])
    res = fit(suite, counter=counter, random_count=30)
    assert res.fits and res.exact
    assert (res.profile.max_size, res.profile.memory, res.profile.memory_size) == (384, "lru", 7)


def _bad_length(indices, vertex_count):
    return np.zeros(vertex_count + 1, np.int64)


def _negative(indices, vertex_count):
    return np.full(vertex_count, -1, np.int64)


def _floats(indices, vertex_count):
    return np.zeros(vertex_count)


@pytest.mark.parametrize("spec, message", [
    ("gpu_probe.simulated", "expected MODULE:FUNCTION"),
    ("no_such_module_here:f", "cannot import no_such_module_here"),
    ("gpu_probe.simulated:no_such_gpu", "has no function no_such_gpu"),
    ("/no/such/file.py:f", "no such file"),
    (f"{__file__}:_bad_length", "integer array of length"),
    (f"{__file__}:_negative", "negative count"),
    (f"{__file__}:_floats", "integer array of length"),
])
def test_bad_counter_is_one_line_and_exit_2(spec, message, capsys):
    assert cli.main(["probe", "--counter", spec, "--experiments"]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_counter_measures_a_mesh_against_every_profile(capsys):
    path = shared_mesh_path("tree_quaternius_birch8.ply")
    if path is None:
        pytest.skip("shared meshes not found")
    assert cli.main(["probe", str(path), "--counter", "gpu_probe.simulated:nvidia_dx",
                     "-p", "nvidia_gl,nvidia_dx", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = {r["profile"]: r for r in out["predictions"]}
    assert out["measured"]["invocations"] == rows["nvidia_dx"]["invocations"] == 2809
    assert rows["nvidia_dx"]["exact"] and not rows["nvidia_gl"]["exact"]
    with pytest.raises(MeshoptBatchError):
        resolve_counter("gpu_probe.simulated:nope")
