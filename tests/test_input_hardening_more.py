"""Input hardening, second round: scene totals, user counters, malformed results files.

Every refusal is one ``meshopt-batch: error:`` line on stderr with exit code 2, and comes
before the work (and the memory) the input asked for: each case here runs in well under a
second or two.
"""

from __future__ import annotations

import json
import resource
import time

import numpy as np
import pytest

from meshopt_batch.support import limits
from meshopt_batch_app.cli import main
from pipeline_model.scene import Scene, SceneError, load_scene, shipped_scenes
from pipeline_model.scene.mesh_resolution import check_mesh_spec

GRID = {"library": "grid", "nx": 1448, "ny": 1448}          # 4,193,408 triangles, just under 2^22
GRID_TRIANGLES = 2 * 1448 * 1448
CAMERA = {"path": [{"frame": 0, "eye": [0, 2, 5], "target": [0, 0, 0]}]}


def _peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _refused(capsys, argv, seconds: float = 5.0) -> str:
    """Run the CLI; it must refuse fast, in one line, with exit 2, without growing the process."""
    rss, t0 = _peak_rss(), time.perf_counter()
    code = main(argv)
    elapsed = time.perf_counter() - t0
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("meshopt-batch: error: "), err
    assert "Traceback" not in err
    assert elapsed < seconds, f"refused after {elapsed:.1f} s"
    assert _peak_rss() - rss < 300 << 20, "the refusal allocated hundreds of MiB"
    return err


def _scene(tmp_path, meshes, objects, name="s.json") -> str:
    doc = {"frames": 1, "width": 64, "height": 48, "camera": CAMERA, "meshes": meshes, "objects": objects}
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


# ------------------------------------------------------------------ 1. scene triangle totals

def test_merge_of_many_grids_is_refused_before_building(tmp_path, capsys):
    parts = [{"mesh": dict(GRID), "position": [0, 0.01 * i, 0]} for i in range(40)]
    path = _scene(tmp_path, {"ground": {"merge": parts}}, [{"mesh": "ground"}], "bigmerge.json")
    err = _refused(capsys, ["simulate", "-n", "1", path])
    assert "bigmerge.json: meshes.ground.merge: 40 parts together" in err
    assert f"{40 * GRID_TRIANGLES:,} triangles" in err and f"{limits.MAX_GENERATED_TRIANGLES:,}" in err


def test_merge_just_over_the_mesh_limit(tmp_path, capsys):
    parts = [{"mesh": dict(GRID)}, {"mesh": {"library": "grid", "nx": 1000, "ny": 1000}}]
    path = _scene(tmp_path, {"m": {"merge": parts}}, [{"mesh": "m"}])
    err = _refused(capsys, ["simulate", "-n", "1", path])
    assert "meshes.m.merge: 2 parts together" in err and "for a generated mesh" in err


def test_nested_merges_add_up(tmp_path):
    inner = {"merge": [{"mesh": dict(GRID)}]}
    spec = {"merge": [{"mesh": inner}, {"mesh": inner}]}
    with pytest.raises(SceneError, match=r"^x\.merge: 2 parts together: would have 8,386,816 triangles"):
        check_mesh_spec(spec, "x")


def test_many_meshes_are_refused_as_a_scene_total(tmp_path, capsys):
    meshes = {f"g{i}": dict(GRID) for i in range(40)}
    objects = [{"name": f"o{i}", "mesh": f"g{i}"} for i in range(40)]
    path = _scene(tmp_path, meshes, objects, "manymeshes.json")
    err = _refused(capsys, ["simulate", "-n", "1", path])
    assert "manymeshes.json: objects: 40 draw calls" in err and "meshes.g0" in err
    assert f"would draw {40 * GRID_TRIANGLES:,} triangles a frame" in err
    assert f"over the limit of {limits.MAX_SCENE_TRIANGLES:,} for a scene" in err


def test_one_mesh_drawn_by_many_objects_counts_every_draw(tmp_path, capsys):
    objects = [{"mesh": "g", "position": [i, 0, 0]} for i in range(3)]
    err = _refused(capsys, ["simulate", "-n", "1", _scene(tmp_path, {"g": dict(GRID)}, objects)])
    assert f"meshes.g: {GRID_TRIANGLES:,} triangles x 3 objects" in err
    assert f"would draw {3 * GRID_TRIANGLES:,} triangles a frame" in err


def test_inline_meshes_count_too(tmp_path, capsys):
    objects = [{"mesh": dict(GRID)} for _ in range(3)]
    err = _refused(capsys, ["simulate", "-n", "1", _scene(tmp_path, {}, objects)])
    assert "objects[0].mesh" in err and "for a scene" in err


def test_a_scene_at_the_limits_still_loads():
    doc = {"camera": CAMERA, "meshes": {"g": dict(GRID)},
           "objects": [{"mesh": "g"}, {"mesh": {"library": "icosphere", "subdiv": 3}}]}
    scene = Scene.from_dict(doc)            # checked, nothing built
    assert scene.objects and check_mesh_spec(GRID) == GRID_TRIANGLES <= limits.MAX_GENERATED_TRIANGLES


def _cube_obj(path):
    """An OBJ cube: 12 triangles."""
    v = [(x, y, z) for x in (0, 1) for y in (0, 1) for z in (0, 1)]
    quads = [(1, 2, 4, 3), (5, 7, 8, 6), (1, 5, 6, 2), (3, 4, 8, 7), (1, 3, 7, 5), (2, 6, 8, 4)]
    lines = [f"v {x} {y} {z}" for x, y, z in v]
    lines += [f"f {a} {b} {c}\nf {a} {c} {d}" for a, b, c, d in quads]
    path.write_text("\n".join(lines) + "\n")
    return path


#: A file mesh's fallback: 6 triangles (the estimate before the file is read).
SMALL_FALLBACK = {"shape": "cone", "segments": 3}


def test_file_parts_of_a_merge_are_counted_as_they_are_read(tmp_path, capsys, monkeypatch):
    _cube_obj(tmp_path / "cube.obj")
    monkeypatch.setattr(limits, "MAX_GENERATED_TRIANGLES", 20)
    part = {"mesh": {"file": "cube.obj", "fallback": SMALL_FALLBACK}}
    path = _scene(tmp_path, {"m": {"merge": [part, part, part]}}, [{"mesh": "m"}])
    assert check_mesh_spec({"merge": [part, part, part]}) == 18        # passes before reading
    err = _refused(capsys, ["simulate", "-n", "1", path])
    assert "meshes.m.merge: parts 0..1 together: would have 24 triangles, over the limit of 20" in err


def test_file_meshes_are_counted_in_the_scene_total_once_read(tmp_path, capsys, monkeypatch):
    _cube_obj(tmp_path / "cube.obj")
    monkeypatch.setattr(limits, "MAX_SCENE_TRIANGLES", 40)
    objects = [{"mesh": "f", "position": [i, 0, 0]} for i in range(5)]
    path = _scene(tmp_path, {"f": {"file": "cube.obj", "fallback": SMALL_FALLBACK}}, objects)
    load_scene(path)                                    # 5 x 6 (the fallback) = 30: loads
    err = _refused(capsys, ["simulate", "-n", "1", path])
    assert "meshes.f: 12 triangles x 5 objects" in err and "would draw 60 triangles a frame" in err


def test_shipped_scenes_still_load_and_stay_within_the_limits():
    names = shipped_scenes()
    assert names
    for name in names:
        scene = load_scene(name)
        built = scene.load_meshes()
        drawn = sum(built[o.mesh].triangle_count for o in scene.objects)
        assert drawn <= limits.MAX_SCENE_TRIANGLES, name
        assert all(m.triangle_count <= limits.MAX_GENERATED_TRIANGLES for m in built.values()), name


# ------------------------------------------------------------------ 2. user counters

COUNTERS = '''
import numpy as np

def raises_type(indices, vertex_count):
    return None + 1

def raises_key(indices, vertex_count):
    return {}["missing"]

def exits(indices, vertex_count):
    raise SystemExit(3)

def two_lines(indices, vertex_count):
    raise RuntimeError("first line\\nsecond line")

def huge(indices, vertex_count):
    return np.full(vertex_count, 2**62, np.int64)

def huge_unsigned(indices, vertex_count):
    return np.full(vertex_count, 2**64 - 1, np.uint64)

def one_too_many(indices, vertex_count):
    counts = np.zeros(vertex_count, np.int64)
    counts[0] = indices.size + 1
    return counts

def booleans(indices, vertex_count):
    return np.ones(vertex_count, bool)

def objects(indices, vertex_count):
    return np.array([10**30] * vertex_count, dtype=object)

def one_argument(indices):
    return indices
'''


@pytest.fixture
def counters(tmp_path):
    path = tmp_path / "counters.py"
    path.write_text(COUNTERS)
    return str(path)


@pytest.mark.parametrize("func, message", [
    ("raises_type", "raised TypeError: unsupported operand type(s) for +: 'NoneType' and 'int'"),
    ("raises_key", "raised KeyError: 'missing'"),
    ("exits", "raised SystemExit: 3"),
    ("two_lines", "raised RuntimeError: first line second line"),
    ("huge", "returned 4,611,686,018,427,387,904 invocations of vertex 0"),
    ("huge_unsigned", "returned 18,446,744,073,709,551,615 invocations"),
    ("one_too_many", "(at most one per index)"),
    ("booleans", "must return an integer array"),
    ("objects", "must return an integer array"),
])
def test_counter_that_fails_is_one_line_naming_it(counters, func, message, capsys):
    err = _refused(capsys, ["probe", "--counter", f"{counters}:{func}", "--experiments"])
    assert f"counter {counters}:{func} " in err and message in err


@pytest.mark.parametrize("source, message", [
    ("def f(:\n", "cannot import {file} (SyntaxError: "),
    ("raise KeyError('at import')\n", "cannot import {file} (KeyError: 'at import')"),
    ("import sys\nsys.exit(4)\n", "cannot import {file} (SystemExit: 4)"),
    ("import no_such_module_xyz\n", "cannot import {file} (ModuleNotFoundError: "),
])
def test_counter_file_that_cannot_load_is_one_line(tmp_path, source, message, capsys):
    path = tmp_path / "bad_counter.py"
    path.write_text(source)
    err = _refused(capsys, ["probe", "--counter", f"{path}:f", "--experiments"])
    assert f"--counter {path}:f: " + message.format(file=path) in err


@pytest.mark.parametrize("spec, message", [
    ("os:system", "cannot be called as system(indices, vertex_count)"),
    ("os:abort", "cannot be called as abort(indices, vertex_count)"),
    ("os:getcwd", "cannot be called as getcwd(indices, vertex_count)"),
    (".relative:f", "cannot import .relative (TypeError: "),
    ("{counters}:one_argument", "cannot be called as one_argument(indices, vertex_count)"),
])
def test_odd_counter_targets_are_refused_before_a_call(spec, message, counters, capsys):
    err = _refused(capsys, ["probe", "--counter", spec.format(counters=counters), "--experiments"])
    assert message in err


def test_counter_object_refuses_a_count_over_the_index_count():
    from gpu_probe.counters import FunctionCounter
    from meshopt_batch.support.errors import MeshoptBatchError

    ok = FunctionCounter(lambda idx, v: np.bincount(idx, minlength=v).astype(np.int64), "each")
    assert ok.measure(np.array([[0, 1, 2], [2, 1, 0]])).invocations == 6
    bad = FunctionCounter(lambda idx, v: np.full(v, idx.size + 1, np.int64), "over")
    with pytest.raises(MeshoptBatchError, match="at most one per index"):
        bad.measure(np.array([[0, 1, 2]]))


# ------------------------------------------------------------------ 3. malformed results files

ACCURACY = ("date,mesh,draw,order,triangles,renderer,measured,profile,kind,predicted\n"
            "2026-11-25,m.ply,m,original,2,GPU X,{measured},nvidia_gl,batch,6\n")
OPTIMIZERS = ("renderer,date,mesh,triangles,vertices,method,numbering,measured,measured_asr,nvidia_gl_asr\n"
              "GPU X,2026-11-25,m,2,4,batch,first use,6,3.0,{asr}\n")
ASSETS = ("renderer,date,asset,variant,vertices,measured,nvidia_gl\n"
          "GPU X,2026-11-25,A,input,{vertices},24,24\n")
PROBE = {"renderer": "GPU X", "date": "2026-11-25", "mesh": "m.ply", "measured": {"invocations": 6},
         "predictions": [{"profile": "nvidia_gl", "exact": True}]}
EXPERIMENTS = {"renderer": "GPU X", "date": "2026-11-25", "experiments": {},
               "fit": {"profile": {"name": "gpu", "max_size": 96, "max_uniques": 32, "memory": "lookback",
                                   "memory_size": 42},
                       "reproduction": {"staircase": {"draws": 10, "mismatches": 0}}},
               "verification_rows": [{"measured": 3, "predicted": 3}]}


def _edit(doc: dict, place: list, value):
    doc = json.loads(json.dumps(doc))
    target = doc
    for key in place[:-1]:
        target = target[key]
    if value is _DELETE:
        del target[place[-1]]
    else:
        target[place[-1]] = value
    return doc


_DELETE = object()


@pytest.mark.parametrize("name, text, message", [
    ("gpu_accuracy_2026-11-25.csv", ACCURACY.format(measured="abc"),
     "column 'measured', row 1: expected a whole number (at most 2^53) in every row, got 'abc'"),
    ("gpu_accuracy_2026-11-25.csv", ACCURACY.format(measured=""), "column 'measured', row 1: "
     "expected a whole number (at most 2^53) in every row, got an empty cell"),
    ("gpu_accuracy_2026-11-25.csv", ACCURACY.format(measured="1e30"), "column 'measured', row 1"),
    ("gpu_accuracy_2026-11-25.csv", ACCURACY.format(measured="2.5"), "column 'measured', row 1"),
    ("gpu_accuracy_2026-11-25.csv", ACCURACY.replace("date,mesh,", "date,model,").format(measured=6),
     "no column 'mesh' (a file of predicted vs measured ASR per profile needs it)"),
    ("gpu_optimizers_2026-11-25.csv", OPTIMIZERS.format(asr="fast"),
     "column 'nvidia_gl_asr', row 1: expected a finite number, got 'fast'"),
    ("gpu_optimizers_2026-11-25.csv", OPTIMIZERS.format(asr="inf"), "column 'nvidia_gl_asr', row 1"),
    ("gpu_assets_2026-11-25.csv", ASSETS.format(vertices="many"), "column 'vertices', row 1"),
    ("gpu_probe_m_2026-11-25.json", json.dumps(_edit(PROBE, ["predictions"], 5)),
     "/predictions: expected an array or null, got the number 5"),
    ("gpu_probe_m_2026-11-25.json", json.dumps(_edit(PROBE, ["predictions", 0], "nvidia_gl")),
     "/predictions/0: expected an object, got the string \"nvidia_gl\""),
    ("gpu_probe_m_2026-11-25.json", json.dumps(_edit(PROBE, ["predictions", 0, "profile"], _DELETE)),
     "/predictions/0: no 'profile'"),
    ("gpu_probe_m_2026-11-25.json", json.dumps(_edit(PROBE, ["renderer"], 7)),
     "/renderer: expected a string, got the number 7"),
    ("gpu_probe_m_2026-11-25.json", json.dumps(_edit(PROBE, ["date"], [2026])), "/date: expected a string"),
    ("gpu_experiments_2026-11-25.json", json.dumps(_edit(EXPERIMENTS, ["fit"], [])),
     "/fit: expected an object, got an array []"),
    ("gpu_experiments_2026-11-25.json", json.dumps(_edit(EXPERIMENTS, ["fit", "profile", "max_size"], "96")),
     "/fit/profile/max_size: expected a whole number >= 0, got the string \"96\""),
    ("gpu_experiments_2026-11-25.json", json.dumps(_edit(EXPERIMENTS, ["fit", "profile", "memory"], "fog")),
     "/fit/profile: profile 'gpu': unknown memory kind 'fog'"),
    ("gpu_experiments_2026-11-25.json", json.dumps(_edit(EXPERIMENTS, ["fit", "reproduction", "staircase"], 3)),
     "/fit/reproduction/staircase: expected an object, got the number 3"),
    ("gpu_experiments_2026-11-25.json", json.dumps(_edit(EXPERIMENTS, ["verification_rows", 0, "measured"],
                                                          None)),
     "/verification_rows/0/measured: expected a whole number >= 0, got null"),
    ("gpu_renumber_2026-11-25.json", json.dumps({"renderer": "GPU X", "large_probe": {}, "rows": 5}),
     "/rows: expected an array or null, got the number 5"),
])
def test_malformed_results_file_refuses_the_report(tmp_path, capsys, name, text, message):
    results = tmp_path / "results"
    results.mkdir()
    (results / name).write_text(text)
    out = tmp_path / "out"
    err = _refused(capsys, ["report", "--scope", "smoke", "--no-progress", "--results", str(results),
                            "-o", str(out)], seconds=10.0)
    assert f"{results / name}: {message}" in err
    assert not out.exists() or not any(out.iterdir())        # nothing written


def test_block_rule_file_without_its_seed_is_refused(tmp_path, capsys):
    from meshopt_batch.support.errors import MeshoptBatchError
    from meshopt_batch_app.report.results_files import read_results_file

    path = tmp_path / "gpu_block_rule_8_2026-11-25.npz"
    np.savez(path, renderer=np.array("GPU X"), single__totals=np.arange(3, dtype=np.uint32))
    with pytest.raises(MeshoptBatchError, match=r"array 'seed': expected a whole number >= 0.*found none"):
        read_results_file(path)
    np.savez(path, renderer=np.array("GPU X"), seed=np.array(7), single__totals=np.array([1.5]))
    with pytest.raises(MeshoptBatchError, match=r"array 'single__totals': expected a 1-D array of whole"):
        read_results_file(path)


def test_well_formed_results_files_read_unchanged(tmp_path):
    import pandas as pd

    from meshopt_batch_app.report.results_files import default_results_dir, read_results, read_results_file

    for name, text in (("gpu_accuracy_2026-11-25.csv", ACCURACY.format(measured=6)),
                       ("gpu_optimizers_2026-11-25.csv", OPTIMIZERS.format(asr=3.0)),
                       ("gpu_assets_2026-11-25.csv", ASSETS.format(vertices=4)),
                       ("gpu_probe_m_2026-11-25.json", json.dumps(PROBE)),
                       ("gpu_experiments_2026-11-25.json", json.dumps(EXPERIMENTS))):
        (tmp_path / name).write_text(text)
    groups = read_results(tmp_path)
    assert [len(g.files) for g in groups] == [5]
    committed = default_results_dir()
    if committed.is_dir():
        for path in sorted(committed.glob("*.csv")):
            frame = read_results_file(path).data
            pd.testing.assert_frame_equal(frame, pd.read_csv(path), check_dtype=False)
        assert read_results(committed)
