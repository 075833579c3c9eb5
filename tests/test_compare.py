"""``meshopt_batch.evaluation.method_comparison`` and ``meshopt-batch compare``."""

import json

import numpy as np
import pandas as pd
import pytest

import meshes
from meshopt_batch.evaluation.method_comparison import compare, default_methods, parse_method
from meshopt_batch.io import save_mesh
from meshopt_batch.model.prediction import predict
from meshopt_batch.optimizers import available_methods, optimize
from meshopt_batch.support.errors import MeshoptBatchError
from meshopt_batch_app.cli import main

COLUMNS = ["mesh", "profile", "method", "asr", "invocations", "triangles", "vertices", "batches", "acmr",
           "atvr", "perfect_asr", "seconds"]


def _shuffled(mesh, seed=0):
    rng = np.random.default_rng(seed)
    return mesh.with_triangles(mesh.triangles[rng.permutation(mesh.triangle_count)])


@pytest.fixture(scope="module")
def small():
    return [_shuffled(meshes.icosphere(2), 1), _shuffled(meshes.torus(16, 8), 2)]


def test_tidy_table(small):
    res = compare(small, ["hoppe", "tipsify:14", "forsyth"], ["nvidia_gl", "fifo:16"])
    df = res.results
    assert list(df.columns) == COLUMNS
    assert res.methods == ["original", "hoppe", "tipsify:14", "forsyth"]
    assert len(df) == 2 * 2 * 4
    assert not df.duplicated(["mesh", "profile", "method"]).any()
    for mesh in small:
        sub = df[df["mesh"] == mesh.name]
        assert (sub["triangles"] == mesh.triangle_count).all()
        assert np.allclose(sub["perfect_asr"], mesh.vertex_count / mesh.triangle_count)
        orig = sub[(sub["method"] == "original") & (sub["profile"] == "nvidia_gl")].iloc[0]
        assert orig["invocations"] == predict(mesh.triangles, profile="nvidia_gl").invocations
        assert orig["seconds"] == 0.0
        tip = sub[(sub["method"] == "tipsify:14") & (sub["profile"] == "fifo:16")].iloc[0]
        expected = predict(optimize(mesh.triangles, method="tipsify", cache_size=14).triangles, profile="fifo:16")
        assert tip["invocations"] == expected.invocations
        assert tip["asr"] == pytest.approx(expected.asr)
        assert (sub[sub["method"] != "original"]["asr"] < orig["asr"]).all()
    assert (df["seconds"] >= 0).all()
    # one optimization per method and mesh, shared by the profiles
    assert len(res.times) == 2 * 4
    assert (res.times["profile"] == "").all()


def test_paper_layout(small):
    res = compare(small, ["kcache", "forsyth"], ["amd"])
    wide = res.table("amd")
    assert list(wide.index) == [m.name for m in small]
    assert list(wide.columns) == ["original", "kcache", "forsyth", "perfect"]
    assert (wide["perfect"] <= wide["kcache"]).all()
    times = res.time_table()
    assert list(times.columns) == ["original", "kcache", "forsyth"]
    text = res.to_text()
    assert "profile amd" in text and "perfect" in text and "run time" in text and "*" in text
    with pytest.raises(MeshoptBatchError):
        res.table("nvidia_gl")


def test_primitives_are_summed():
    a = _shuffled(meshes.icosphere(2), 3)
    b = _shuffled(meshes.grid(6), 4)
    res = compare([[a, b]], ["tipsify"], ["amd"])
    row = res.results[res.results["method"] == "tipsify"].iloc[0]
    inv = sum(predict(optimize(m.triangles, m.vertex_count, method="tipsify").triangles, m.vertex_count,
                      profile="amd").invocations for m in (a, b))
    assert row["invocations"] == inv
    assert row["triangles"] == a.triangle_count + b.triangle_count
    assert row["perfect_asr"] == pytest.approx((a.vertex_count + b.vertex_count)
                                               / (a.triangle_count + b.triangle_count))


def test_profile_aware_method_runs_per_profile():
    mesh = _shuffled(meshes.icosphere(2), 5)
    res = compare([mesh], ["batch"], ["nvidia_gl", "amd"])
    t = res.times[res.times["method"] == "batch"]
    assert sorted(t["profile"]) == ["amd", "nvidia_gl"]
    assert list(res.time_table().columns) == ["original", "batch@nvidia_gl", "batch@amd"]
    assert len(res.results[res.results["method"] == "batch"]) == 2


def test_method_specs():
    assert parse_method("tipsify:14") == ("tipsify:14", "tipsify", {"cache_size": 14})
    assert parse_method("forsyth") == ("forsyth", "forsyth", {})
    for bad in ("nope", "original:4", "tipsify:x", "kcache:2", "batch:16"):
        with pytest.raises(MeshoptBatchError):
            parse_method(bad)
    methods = default_methods()
    assert methods[:5] == ["original", "hoppe", "kcache", "tipsify", "forsyth"]
    if "meshoptimizer" in available_methods():
        assert {"meshoptimizer", "meshoptimizer_fifo", "meshoptimizer_strip"} <= set(methods)


def test_named_arrays_and_duplicate_names():
    tris = meshes.grid(4).triangles
    res = compare([("g", tris), ("g", tris)], ["forsyth"], ["fifo:8"])
    assert res.meshes == ["g#1", "g#2"]


@pytest.fixture
def mesh_file(tmp_path):
    path = tmp_path / "ico.obj"
    save_mesh(_shuffled(meshes.icosphere(2), 6), path)
    return path


def test_cli_json_and_csv(mesh_file, tmp_path, capsys):
    out_csv = tmp_path / "table.csv"
    code = main(["compare", str(mesh_file), "--method", "tipsify:14,forsyth", "-m", "kcache",
                 "--profile", "nvidia_gl,amd", "--csv", str(out_csv), "--json"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert data["methods"] == ["original", "tipsify:14", "forsyth", "kcache"]
    assert data["profiles"] == ["nvidia_gl", "amd"]
    assert data["meshes"] == ["ico"]
    assert len(data["results"]) == 2 * 4
    assert set(data["results"][0]) == set(COLUMNS)
    table = pd.read_csv(out_csv)
    assert list(table.columns) == COLUMNS and len(table) == 8


def test_cli_human_output(mesh_file, capsys):
    assert main(["compare", str(mesh_file), "--method", "hoppe", "--profile", "lru:15"]) == 0
    out = capsys.readouterr().out
    assert "profile lru:15" in out and "hoppe" in out and "perfect" in out and "ico" in out


@pytest.mark.parametrize("argv", [
    ["--method", "nope"],
    ["--profile", "gpu9000"],
    ["--method", "tipsify:1"],
])
def test_cli_errors_are_one_line(mesh_file, tmp_path, capsys, argv):
    out_csv = tmp_path / "never.csv"
    code = main(["compare", str(mesh_file), *argv, "--csv", str(out_csv)])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("meshopt-batch: error:") and "\n" not in err
    assert not out_csv.exists()


def test_cli_missing_file(tmp_path, capsys):
    assert main(["compare", str(tmp_path / "absent.ply")]) == 2
    assert "absent.ply" in capsys.readouterr().err


@pytest.mark.slow
def test_real_meshes_table():
    path = meshes.shared_mesh_path("bunny")
    if path is None:
        pytest.skip("shared meshes not available")
    res = compare([path], ["hoppe", "kcache", "tipsify:11", "forsyth"], ["nvidia_gl", "amd"])
    nv = res.table("nvidia_gl").loc["bunny"]
    amd = res.table("amd").loc["bunny"]
    # paper 001 Table 1 / 2a (measured on hardware): Hoppe 0.84 / 0.68, K-Cache 0.84 / 0.70
    assert nv["hoppe"] == pytest.approx(0.84, abs=0.03) and amd["hoppe"] == pytest.approx(0.68, abs=0.03)
    assert nv["kcache"] == pytest.approx(0.84, abs=0.03) and amd["kcache"] == pytest.approx(0.70, abs=0.03)
    assert nv["perfect"] == pytest.approx(0.50, abs=0.01)


def test_old_option_spellings_are_refused_in_one_line(mesh_file, capsys):
    # the plural spellings were never released: they are unknown options like any other
    with pytest.raises(SystemExit) as exc:
        main(["compare", str(mesh_file), "--methods", "hoppe", "--json"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--methods" in err[0]


def test_default_profiles_add_the_2_16_rule_over_2_16_vertices():
    small, big = meshes.grid(10), meshes.grid(300)          # 121 and 90,601 vertices
    assert sorted(compare([small], ["tipsify"]).results["profile"].unique()) == ["amd", "intel", "nvidia_gl"]
    df = compare([big], ["tipsify"]).results
    assert sorted(df["profile"].unique()) == ["amd", "intel", "nvidia_gl", "nvidia_gl+16bit"]
    orig = df[(df["method"] == "original") & (df["profile"] == "nvidia_gl+16bit")].iloc[0]
    assert orig["invocations"] == predict(big.triangles, big.vertex_count, profile="nvidia_gl+16bit").invocations
    assert "nvidia_gl+16bit" not in compare([big], ["tipsify"], ["nvidia_gl"]).results["profile"].unique()
