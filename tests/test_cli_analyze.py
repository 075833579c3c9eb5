import json
import os
import subprocess
import sys

import pytest

from meshes import shared_mesh_path
from meshopt_batch.io import load_mesh
from meshopt_batch.reuse import predict
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
from meshopt_batch.reuse import predict
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
