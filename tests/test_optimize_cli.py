"""``meshopt-batch optimize``: formats, attributes, 16-bit copies, JSON, atomic failure.

The figure printed for the optimized mesh must be what ``meshopt-batch analyze`` reports for
the written file.
"""

import json

import numpy as np
import pytest

import meshes
from meshopt_batch.geometry.mesh_record import Mesh
from meshopt_batch.io import load_meshes, save_mesh
from meshopt_batch_app.cli import main


def run_json(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out)


def shuffled(mesh, seed=0):
    rng = np.random.default_rng(seed)
    return mesh.with_triangles(np.asarray(mesh.triangles)[rng.permutation(mesh.triangle_count)])


def canonical(tris):
    t = np.asarray(tris, np.int64)
    k = np.argmin(t, axis=1)
    rows = np.stack([t[np.arange(len(t)), (k + i) % 3] for i in range(3)], axis=1)
    return rows[np.lexsort(rows.T[::-1])]


@pytest.mark.parametrize("ext", [".ply", ".obj", ".glb"])
@pytest.mark.parametrize("profile", ["nvidia_gl", "amd", "llvmpipe"])
def test_optimize_writes_and_analyze_agrees(tmp_path, capsys, ext, profile):
    src = tmp_path / "in.ply"
    mesh = shuffled(meshes.torus(30, 16))
    save_mesh(mesh, src)
    out = tmp_path / f"out{ext}"
    res = run_json(capsys, "optimize", str(src), "-o", str(out), "--profile", profile, "--json")
    assert out.is_file()
    assert res["after"]["asr"] < res["before"]["asr"]
    assert res["vertices_after"] == res["vertices_before"]
    ana = run_json(capsys, "analyze", str(out), "--profile", profile, "--json")
    assert ana["results"][0]["invocations"] == res["after"]["invocations"]
    assert ana["results"][0]["asr"] == pytest.approx(res["after"]["asr"])
    written = load_meshes(out)[0]
    # the same triangles (through the vertex positions, which are unique here)
    remap = {tuple(p): i for i, p in enumerate(mesh.positions.tolist())}
    back = np.array([remap[tuple(p)] for p in written.positions.tolist()])
    assert np.array_equal(canonical(back[written.triangles]), canonical(mesh.triangles))
    # attributes follow their vertex
    order = np.argsort(back)
    np.testing.assert_allclose(written.attributes["normal"][order], mesh.attributes["normal"][back[order]],
                               atol=1e-6)
    uv = np.array(written.attributes["uv"], np.float64)
    if written.meta.get("uv_origin") == "top-left":    # glTF's convention; the writer flipped v
        uv[:, 1] = 1.0 - uv[:, 1]
    np.testing.assert_allclose(uv[order], mesh.attributes["uv"][back[order]], atol=1e-6)


def test_human_output(tmp_path, capsys):
    src = tmp_path / "in.obj"
    save_mesh(shuffled(meshes.grid(10, 10)), src)
    assert main(["optimize", str(src), "-o", str(tmp_path / "o.ply"), "--no-distance"]) == 0
    text = capsys.readouterr().out
    assert "before" in text and "after" in text and "optimized in" in text


@pytest.mark.parametrize("method", ["forsyth", "tipsify"])
def test_classic_methods(tmp_path, capsys, method):
    src = tmp_path / "in.ply"
    save_mesh(shuffled(meshes.icosphere(2)), src)
    res = run_json(capsys, "optimize", str(src), "-o", str(tmp_path / "o.ply"), "--method", method, "--json")
    assert res["method"] == method and res["after"]["asr"] < res["before"]["asr"]


def test_16bit_copies_carry_attributes(tmp_path, capsys):
    base = meshes.grid(260, 260)
    V = base.vertex_count
    rng = np.random.default_rng(2)
    perm = rng.permutation(V)
    inv = np.empty_like(perm)
    inv[perm] = np.arange(V)
    colour = (rng.random((V, 3)) * 255).astype(np.uint8)
    mesh = Mesh(base.positions[perm], inv[np.asarray(base.triangles)], name="big",
                attributes={"normal": base.attributes["normal"][perm], "uv": base.attributes["uv"][perm],
                            "color": colour})
    src = tmp_path / "big.ply"
    save_mesh(mesh, src)
    out = tmp_path / "big_opt.ply"
    res = run_json(capsys, "optimize", str(src), "-o", str(out), "--json", "--no-distance", "-p", "nvidia_gl")
    assert res["vertices_after"] > V
    assert res["after_16bit"]["asr"] == pytest.approx(res["after"]["asr"])
    assert res["before_16bit"]["asr"] >= res["before"]["asr"]
    written = load_meshes(out)[0]
    assert written.vertex_count == res["vertices_after"]
    key = {tuple(p): i for i, p in enumerate(mesh.positions.tolist())}
    src_of = np.array([key[tuple(p)] for p in written.positions.tolist()])
    assert np.array_equal(np.sort(src_of[:V]), np.arange(V))
    for name in ("normal", "uv", "color"):
        np.testing.assert_array_equal(written.attributes[name], mesh.attributes[name][src_of])
    ana = run_json(capsys, "analyze", str(out), "-p", "nvidia_gl+16bit", "-p", "nvidia_gl", "--json")
    assert ana["results"][0]["invocations"] == res["after_16bit"]["invocations"]
    assert ana["results"][1]["invocations"] == res["after"]["invocations"]
    keep = tmp_path / "keep.ply"
    res2 = run_json(capsys, "optimize", str(src), "-o", str(keep), "--json", "--no-distance",
                    "--keep-16bit-boundaries", "-p", "nvidia_gl")
    assert res2["vertices_after"] == V
    assert res2["after"]["invocations"] == res["after"]["invocations"]
    assert res2["after_16bit"]["asr"] > res["after_16bit"]["asr"]


def test_gltf_primitives_one_by_one(tmp_path, capsys):
    parts = [shuffled(meshes.torus(16, 8), 1).replace(name="a"), shuffled(meshes.icosphere(2), 2).replace(name="b")]
    src = tmp_path / "two.glb"
    save_mesh(parts, src)
    out = tmp_path / "two_opt.glb"
    res = run_json(capsys, "optimize", str(src), "-o", str(out), "--json")
    assert len(res["primitives"]) == 2
    written = load_meshes(out)
    assert [m.triangle_count for m in written] == [p.triangle_count for p in parts]
    ana = run_json(capsys, "analyze", str(out), "-p", "nvidia_gl", "--json")
    assert ana["results"][0]["invocations"] == res["after"]["invocations"]


@pytest.mark.parametrize("argv", [
    ["--profile", "no_such_gpu"],
    ["--method", "no_such_method"],
    ["--method", "forsyth", "--no-distance"],
    ["--effort", "-1"],
    ["--effort", "nan"],
    ["--effort", "5", "-p", "nvidia_gl"],  # one profile: there is no window search
    ["--effort", "5", "--method", "tipsify"],
])
def test_errors_leave_no_file(tmp_path, capsys, argv):
    src = tmp_path / "in.ply"
    save_mesh(meshes.cube(), src)
    out = tmp_path / "out.ply"
    assert main(["optimize", str(src), "-o", str(out), *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("meshopt-batch: error:") and len(err.strip().splitlines()) == 1
    assert not out.exists()
    assert list(tmp_path.iterdir()) == [src]


def test_unwritable_output(tmp_path, capsys):
    src = tmp_path / "in.ply"
    save_mesh(meshes.cube(), src)
    assert main(["optimize", str(src), "-o", str(tmp_path / "missing" / "o.ply")]) == 2
    assert main(["optimize", str(src), "-o", str(tmp_path / "o.stl")]) == 2
    assert main(["optimize", str(tmp_path / "nope.ply"), "-o", str(tmp_path / "o.ply")]) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.ply"]


def test_stl_corners_are_welded_and_vertices_in_first_use_order(tmp_path, capsys):
    cube = meshes.cube()
    corners = np.asarray(cube.triangles).reshape(-1)
    soup = Mesh(cube.positions[corners], np.arange(corners.size).reshape(-1, 3), name="soup")
    src = tmp_path / "soup.ply"
    save_mesh(soup, src)
    res = run_json(capsys, "optimize", str(src), "-o", str(tmp_path / "out.ply"), "--json")
    (prim,) = res["primitives"]
    assert (res["vertices_before"], res["vertices_after"], prim["welded"]) == (36, 8, 28)
    assert prim["vertex_order"] == "first-use" and prim["fetch_gap_after"] == 1.0
    assert res["after"]["invocations"] == 8 < res["before"]["invocations"] == 36
    written = load_meshes(tmp_path / "out.ply")[0]
    assert written.vertex_count == 8 and written.index_dtype == np.uint16
    res = run_json(capsys, "optimize", str(src), "-o", str(tmp_path / "kept.ply"), "--json", "--no-weld")
    assert res["vertices_after"] == 36 and res["after"]["invocations"] == 36


def test_effort_bounds_the_portable_window_search(tmp_path, capsys):
    from meshopt_batch.model.targets import get_target
    from meshopt_batch.optimizers.portable import optimize_for_target

    mesh = meshes.grid(32)  # rows: the input binds on intel, and the window search folds them
    src = tmp_path / "in.ply"
    save_mesh(mesh, src)
    mean = {}
    for effort in ("0", "0.5", "20"):
        out = tmp_path / f"e{effort}.ply"
        run_json(capsys, "optimize", str(src), "-o", str(out), "--effort", effort, "--json")
        expected = optimize_for_target(mesh.triangles, mesh.vertex_count, target=get_target("portable"),
                                       window_work=int(float(effort) * 1e6))
        assert np.array_equal(load_meshes(out)[0].triangles, expected.triangles)  # the file has that order
        chosen = expected.stats["candidate"]
        assert chosen.endswith((" + screen", " + search")) == (effort != "0")
        assert sum(s["work"] for s in expected.stats["searches"]) <= float(effort) * 1e6 + 50_000
        mean[effort] = expected.stats["candidates"][chosen]["mean_ratio"]
    assert mean["20"] <= mean["0.5"] < mean["0"]


def test_no_progress_is_accepted_for_one_file_as_for_a_folder(tmp_path, capsys):
    """``--no-progress`` means the same for a file as for a folder (it was refused for a file);
    the folder-only options are still refused for a file."""
    src = tmp_path / "in.ply"
    save_mesh(shuffled(meshes.torus(12, 6)), src)
    quiet = run_json(capsys, "optimize", str(src), "-o", str(tmp_path / "a.ply"), "-p", "nvidia_gl", "--json",
                     "--no-progress")
    plain = run_json(capsys, "optimize", str(src), "-o", str(tmp_path / "b.ply"), "-p", "nvidia_gl", "--json")
    assert quiet["after"] == plain["after"] and quiet["after"]["invocations"] < quiet["before"]["invocations"]
    assert (tmp_path / "a.ply").read_bytes() == (tmp_path / "b.ply").read_bytes()
    assert main(["optimize", str(src), "-o", str(tmp_path / "c.ply"), "--no-progress", "--workers", "2"]) == 2
    assert capsys.readouterr().err.strip().endswith(f"--workers: only for a folder MESH (a library); {src} is a file")
