import json
import os
import subprocess
import sys

import pytest

from meshes import shared_mesh_path
from meshopt_batch.io import load_mesh
from meshopt_batch.model.prediction import predict
from meshopt_batch_app.cli import main


def run_cli(*args):
    proc = subprocess.run([sys.executable, "-m", "meshopt_batch_app.cli", *args], capture_output=True, text=True)
    return proc.returncode, proc.stdout, proc.stderr


def write_obj(path, text):
    path.write_text(text)
    return str(path)


def test_analyze_json_contract(tmp_path, capsys):
    obj = write_obj(tmp_path / "quad.obj", "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nf 1 2 3\nf 1 3 4\n")
    assert main(["analyze", obj, "--profile", "nvidia_gl", "--profile", "fifo:8", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) >= {"mesh", "triangles", "vertices", "results"}
    assert out["triangles"] == 2 and out["vertices"] == 4
    assert [r["profile"] for r in out["results"]] == ["nvidia_gl", "fifo:8"]
    for r in out["results"]:
        assert set(r) == {"profile", "invocations", "asr", "acmr", "atvr", "batches"}
        assert r["invocations"] == 4 and r["asr"] == 2.0 and r["atvr"] == 1.0 and r["batches"] == 1


@pytest.mark.parametrize("content, reason", [
    ("v 0 0 0\nv 1 0 0\n", "no faces"),
    ("v 0 0 0\nv 1 0 0\nv nan 1 0\nf 1 2 3\n", "NaN"),
    ("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 9\n", "index"),
    ("", "empty"),
])
def test_bad_files_exit_2_with_one_line(tmp_path, content, reason):
    path = write_obj(tmp_path / "bad.obj", content)
    code, out, err = run_cli("analyze", path, "--json")
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "bad.obj" in lines[0] and "Traceback" not in err


def test_unknown_profile_exit_2(tmp_path):
    obj = write_obj(tmp_path / "t.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")
    code, _, err = run_cli("analyze", obj, "--profile", "nvidia_xx")
    assert code == 2 and "unknown profile" in err and len(err.strip().splitlines()) == 1


def test_bunny_analyze_matches_predict(capsys):
    path = shared_mesh_path("bunny.ply")
    if path is None:
        pytest.skip("../shared/meshes not present")
    assert main(["analyze", str(path), "--profile", "nvidia_gl", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    mesh = load_mesh(path)
    assert out["triangles"] == 69451 and out["vertices"] == 35947
    expected = predict(mesh.triangles, profile="nvidia_gl")
    assert out["results"][0]["invocations"] == expected.invocations
    assert out["results"][0]["batches"] == expected.batches


def test_skipping_numbas_blas_probe_leaves_blas_usable():
    """The program skips numba's scipy BLAS probe at start-up (meshopt_batch_app.cli); scipy's
    BLAS and numba's np.dot still work afterwards, and kernels give the same counts."""
    code = """
import sys
import numpy as np
from meshopt_batch_app.cli import _skip_numba_blas_probe
_skip_numba_blas_probe()
assert "numba.np.arraymath" in sys.modules
assert "scipy.linalg" not in sys.modules, "the probe imported scipy.linalg"
import numba
from numba.np import arraymath
assert arraymath._HAVE_BLAS is False
dot = numba.njit(lambda a, b: np.dot(a, b))
assert dot(np.arange(4.0), np.arange(4.0)) == 14.0
import scipy.linalg.cython_blas  # importable again
from meshopt_batch.model.prediction import predict
tris = np.array([[0, 1, 2], [2, 1, 3], [3, 1, 4]])
print(predict(tris, 5, profile="fifo:3").invocations)
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["5"]


def test_analyze_adds_the_16bit_rule_over_2_16_vertices(tmp_path, capsys):
    import meshes
    from meshopt_batch.io import save_mesh

    small, big = meshes.grid(10), meshes.grid(300)          # 121 and 90,601 vertices
    for mesh, has_rule in ((small, False), (big, True)):
        path = tmp_path / f"g{mesh.vertex_count}.ply"
        save_mesh(mesh, path)
        assert main(["analyze", str(path), "--json"]) == 0
        rows = {r["profile"]: r["invocations"] for r in json.loads(capsys.readouterr().out)["results"]}
        assert ("nvidia_gl+16bit" in rows) == has_rule
        if has_rule:
            assert rows["nvidia_gl+16bit"] == predict(mesh.triangles, mesh.vertex_count,
                                                      profile="nvidia_gl+16bit").invocations
            assert rows["nvidia_gl+16bit"] > rows["nvidia_gl"]


def test_a_reader_that_leaves_stdout_ends_the_run_quietly(tmp_path):
    """``meshopt-batch ... | head``: no error line, status 141 (128 + SIGPIPE) as other tools."""
    obj = write_obj(tmp_path / "quad.obj", "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nf 1 2 3\nf 1 3 4\n")
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader has already gone when the command prints
    try:
        proc = subprocess.run([sys.executable, "-m", "meshopt_batch_app.cli", "analyze", obj], stdout=write_end,
                              stderr=subprocess.PIPE, text=True, timeout=300)
    finally:
        os.close(write_end)
    assert proc.returncode == 141 and proc.stderr == ""


# ----------------------------------------------------------------------------- targets (issue 48)
QUAD_STRIP = ("v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nv 0 2 0\nv 1 2 0\nv 0 3 0\nv 1 3 0\n"
              "f 1 2 3\nf 3 2 4\nf 3 4 5\nf 5 4 6\nf 5 6 7\nf 7 6 8\n")


def test_analyze_takes_the_portable_target(tmp_path, capsys):
    """``-p portable`` (what optimize targets by default) reports each of its five profiles,
    each as predict gives it; a set mixes a target and a profile."""
    from meshopt_batch.model.targets import PORTABLE

    obj = write_obj(tmp_path / "strip.obj", QUAD_STRIP)
    mesh = load_mesh(obj)
    assert main(["analyze", obj, "-p", "portable", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["results"]
    assert [r["profile"] for r in rows] == list(PORTABLE) == ["nvidia_gl", "nvidia_dx", "amd", "intel", "llvmpipe"]
    for r in rows:
        pred = predict(mesh.triangles, mesh.vertex_count, profile=r["profile"])
        assert (r["invocations"], r["batches"]) == (pred.invocations, pred.batches)
    assert main(["analyze", obj, "-p", "portable,fifo:4", "--json"]) == 0
    assert [r["profile"] for r in json.loads(capsys.readouterr().out)["results"]] == [*PORTABLE, "fifo:4"]


def test_analyze_portable_over_2_16_vertices_adds_the_block_rule_forms(tmp_path, capsys):
    """Over 2^16 vertices a target is judged with NVIDIA's block rule (as optimize judges it):
    both look-back profiles' +16bit forms are reported beside the target's five."""
    import meshes
    from meshopt_batch.io import save_mesh

    big = meshes.grid(300)                                   # 90,601 vertices
    path = tmp_path / "g.ply"
    save_mesh(big, path)
    assert main(["analyze", str(path), "-p", "portable", "--json"]) == 0
    rows = {r["profile"]: r["invocations"] for r in json.loads(capsys.readouterr().out)["results"]}
    assert list(rows) == ["nvidia_gl", "nvidia_dx", "amd", "intel", "llvmpipe", "nvidia_gl+16bit", "nvidia_dx+16bit"]
    for name in ("nvidia_gl+16bit", "nvidia_dx+16bit"):
        assert rows[name] == predict(big.triangles, big.vertex_count, profile=name).invocations


def test_compare_and_probe_take_the_portable_target(tmp_path, capsys):
    obj = write_obj(tmp_path / "strip.obj", QUAD_STRIP)
    assert main(["compare", obj, "-p", "portable", "-m", "tipsify", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["profiles"] == ["nvidia_gl", "nvidia_dx", "amd", "intel", "llvmpipe"]
    assert main(["probe", obj, "--counter", "gpu_probe.simulated:nvidia_gl", "-p", "portable", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [p["profile"] for p in out["predictions"]] == ["nvidia_gl", "nvidia_dx", "amd", "intel", "llvmpipe"]
    assert out["predictions"][0]["exact"]                   # the simulated NVIDIA counter and its profile


def test_unknown_target_is_one_line(tmp_path):
    obj = write_obj(tmp_path / "t.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")
    for command in ("analyze", "compare"):
        code, out, err = run_cli(command, obj, "-p", "portable,nosuch")
        assert code == 2 and out == "" and err.splitlines() == [
            "meshopt-batch: error: unknown profile 'nosuch' (known: nvidia_gl, nvidia_dx, amd, intel, llvmpipe, "
            "fifo:N, lru:N)"]
