"""``meshopt-batch meshlets``, ``analyze --meshlets`` and ``compare --meshlets`` (issue 19)."""

import json
import subprocess
import sys

import numpy as np
import pytest

import meshes
from meshopt_batch.io import load_meshes, save_mesh
from meshopt_batch.meshlets import MeshletResult, meshlet_problems
from meshopt_batch.meshlets.meshlet_comparison import COMPARE_BUILDERS, COMPARE_LIMITS
from meshopt_batch.meshlets.meshoptimizer_meshlets import available as peer_available
from meshopt_batch_app.cli import main


def run_cli(*args):
    proc = subprocess.run([sys.executable, "-m", "meshopt_batch_app.cli", *args], capture_output=True, text=True)
    return proc.returncode, proc.stdout, proc.stderr


def _result_of(data, first: int, count: int, max_v: int, max_t: int) -> MeshletResult:
    """The meshlets of one primitive out of the file-wide arrays, with local offsets."""
    ml = data["meshlets"][first:first + count].astype(np.int64)
    v0, t0 = ml[0, 0], ml[0, 1]
    v1, t1 = ml[-1, 0] + ml[-1, 2], ml[-1, 1] + 3 * ml[-1, 3]
    ml[:, 0] -= v0
    ml[:, 1] -= t0
    return MeshletResult(ml.astype(np.uint32), data["meshlet_vertices"][v0:v1], data["meshlet_triangles"][t0:t1],
                         max_v, max_t)


def test_meshlets_command_writes_the_layout(tmp_path, capsys):
    ico = meshes.icosphere(2)
    src = save_mesh(ico, tmp_path / "ico.ply")
    out = tmp_path / "ico.npz"
    assert main(["meshlets", str(src), "-o", str(out), "--max-vertices", "32", "--max-triangles", "32",
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["meshlets"], report["vertices_emitted"], report["method"]) == (10, 249, "batch")
    assert report["primitives"] == [{"index": 0, "name": report["primitives"][0]["name"], "gltf_mesh": None,
                                     "gltf_primitive": None, "triangles": 320, "vertices": 162,
                                     "first_meshlet": 0, "meshlets": 10}]
    with np.load(out) as data:
        assert set(data.files) == {"meshlets", "meshlet_vertices", "meshlet_triangles", "meshlet_primitive",
                                   "center", "radius", "cone_apex", "cone_axis", "cone_cutoff",
                                   "primitive_name", "primitive_gltf", "max_vertices", "max_triangles",
                                   "method", "cone_weight"}
        assert data["meshlets"].dtype == np.uint32 and data["meshlet_triangles"].dtype == np.uint8
        assert data["center"].shape == (10, 3) and data["radius"].dtype == np.float32
        assert data["meshlet_primitive"].tolist() == [0] * 10 and data["primitive_gltf"].tolist() == [[-1, -1]]
        assert (int(data["max_vertices"]), int(data["max_triangles"]), str(data["method"])) == (32, 32, "batch")
        r = _result_of(data, 0, 10, 32, 32)
    assert meshlet_problems(r, ico.triangles, ico.vertex_count) == []
    first = out.read_bytes()
    assert main(["meshlets", str(src), "-o", str(out), "--max-vertices", "32", "--max-triangles", "32"]) == 0
    assert out.read_bytes() == first  # same meshlets, same bytes
    text = capsys.readouterr().out
    assert "320 triangles in 10 meshlets (batch, 32/32)" in text and "vert/tri" in text


def test_meshlets_command_per_gltf_primitive(tmp_path, capsys):
    parts = [meshes.icosphere(1), meshes.torus(12, 6)]
    src = save_mesh(parts, tmp_path / "two.glb")
    out = tmp_path / "two.npz"
    assert main(["meshlets", str(src), "-o", str(out), "--max-vertices", "16", "--max-triangles", "16",
                 "--method", "greedy", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    prims = report["primitives"]
    assert [(p["gltf_mesh"], p["gltf_primitive"], p["triangles"]) for p in prims] == [(0, 0, 80), (1, 0, 144)]
    assert prims[1]["first_meshlet"] == prims[0]["meshlets"]
    loaded = load_meshes(src)
    with np.load(out) as data:
        owner = data["meshlet_primitive"]
        assert owner.tolist() == [0] * prims[0]["meshlets"] + [1] * prims[1]["meshlets"]
        assert data["primitive_gltf"].tolist() == [[0, 0], [1, 0]]
        for p, mesh in zip(prims, loaded, strict=True):
            r = _result_of(data, p["first_meshlet"], p["meshlets"], 16, 16)
            assert meshlet_problems(r, mesh.triangles, mesh.vertex_count) == []


@pytest.mark.parametrize("args, message", [
    (["--max-vertices", "300"], "max_vertices"),
    (["--max-triangles", "0"], "max_triangles"),
    (["--method", "nope"], "unknown meshlet method"),
    (["--cone-weight", "2"], "cone_weight"),
    (["--method", "greedy", "--cone-weight", "0.5"], "no cone weight"),
])
def test_meshlets_command_bad_input_exits_2(tmp_path, args, message):
    src = save_mesh(meshes.grid(2, 2), tmp_path / "g.ply")
    code, out, err = run_cli("meshlets", str(src), "-o", str(tmp_path / "g.npz"), *args)
    assert code == 2 and message in err and "Traceback" not in err
    assert not (tmp_path / "g.npz").exists()


def test_meshlets_command_bad_paths_exit_2(tmp_path):
    src = save_mesh(meshes.grid(2, 2), tmp_path / "g.ply")
    code, _, err = run_cli("meshlets", str(src), "-o", str(tmp_path / "g.bin"))
    assert code == 2 and ".npz" in err
    code, _, err = run_cli("meshlets", str(src), "-o", str(tmp_path / "missing" / "g.npz"))
    assert code == 2 and "does not exist" in err and "Traceback" not in err
    code, _, err = run_cli("meshlets", str(tmp_path / "none.ply"), "-o", str(tmp_path / "g.npz"))
    assert code == 2 and "Traceback" not in err


def test_analyze_meshlets_rows(tmp_path, capsys):
    src = save_mesh(meshes.icosphere(2), tmp_path / "ico.ply")
    assert main(["analyze", str(src), "-p", "nvidia_gl", "--meshlets", "32/32", "--json"]) == 0
    block = json.loads(capsys.readouterr().out)["meshlets"]
    assert block["limits"] == "32/32"
    assert [r["builder"] for r in block["rows"]] == ["batch", "greedy"] + (["meshoptimizer"] if peer_available()
                                                                         else [])
    assert (block["rows"][0]["meshlets"], block["rows"][0]["vertices_emitted"]) == (10, 249)
    assert main(["analyze", str(src), "-p", "nvidia_gl", "--meshlets"]) == 0
    assert "meshlets 64/126" in capsys.readouterr().out
    code, _, err = run_cli("analyze", str(src), "--meshlets", "64x64")
    assert code == 2 and "V/T" in err


def test_compare_meshlets_rows(tmp_path, capsys):
    src = save_mesh(meshes.icosphere(1), tmp_path / "ico.ply")
    assert main(["compare", str(src), "--meshlets", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["limits"] == ["64/126", "64/64", "128/128", "64/96"]
    assert len(out["rows"]) == len(COMPARE_LIMITS) * len(COMPARE_BUILDERS)
    done = [r for r in out["rows"] if "skipped" not in r]
    assert all(r["triangles"] == 80 for r in done)
    assert main(["compare", str(src), "--meshlets", "-m", "greedy"]) == 0
    text = capsys.readouterr().out
    assert "limits 128/128" in text and "batch" not in text.replace("meshlets", "")
    code, _, err = run_cli("compare", str(src), "--meshlets", "-m", "hoppe")
    assert code == 2 and "unknown meshlet method" in err
