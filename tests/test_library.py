"""``meshopt-batch optimize DIR -o OUTDIR``: a whole library, its manifest, cache and backends.

The library is made here: procedural meshes in every input format, the small shared meshes
and glTF assets (when ../shared is present) copied into nested folders, broken files, and
files that are not meshes.  One local run serves most tests; the Dask test starts a real
LocalCluster (two worker processes on 127.0.0.1) and compares its outputs and manifest with
the local run's, byte for byte (``seconds`` aside).
"""

import hashlib
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import meshes
from meshopt_batch.assets.file_optimization import AssetOptions
from meshopt_batch.io import save_mesh
from meshopt_batch.model.profiles import get_profile
from meshopt_batch.optimizers import get_method
from meshopt_batch_app.cli import main
from meshopt_batch_app.library import LibrarySettings, cluster, optimize_library
from meshopt_batch_app.library.cluster import DaskBackend
from meshopt_batch_app.library.discovery import discover
from meshopt_batch_app.library.dispatch import Job, WorkerLost, run_jobs
from meshopt_batch_app.library.local import LocalBackend
from meshopt_batch_app.library.manifest import MANIFEST_NAME, read_manifest
from meshopt_batch_app.library.runner import RUN_MARKER
from meshopt_batch_app.library.worker import Task

SHARED = meshes.shared_meshes_dir()
SHARED_GLTF = SHARED.parent / "gltf"
OPTIONS = AssetOptions(get_method("batch"), get_profile("nvidia_gl"), {"use_distance": True, "queue": "fast"})
BROKEN = {"broken/garbage.ply", "broken/empty.obj", "broken/truncated.glb", "broken/missing_bin.gltf"}


def sha(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def shuffled(mesh, seed=0):
    rng = np.random.default_rng(seed)
    return mesh.with_triangles(np.asarray(mesh.triangles)[rng.permutation(mesh.triangle_count)])


def write_off(mesh, path):
    lines = ["OFF", f"{mesh.vertex_count} {mesh.triangle_count} 0"]
    lines += [" ".join(repr(float(c)) for c in p) for p in mesh.positions]
    lines += ["3 " + " ".join(str(int(i)) for i in t) for t in mesh.triangles]
    Path(path).write_text("\n".join(lines) + "\n")


def write_binary_stl(mesh, path):
    pos = np.asarray(mesh.positions, np.float32)
    rows = [b"\0" * 80, struct.pack("<I", mesh.triangle_count)]
    for t in mesh.triangles:
        rows.append(struct.pack("<12fH", 0, 0, 0, *pos[t[0]], *pos[t[1]], *pos[t[2]], 0))
    Path(path).write_bytes(b"".join(rows))


def make_library(root: Path) -> Path:
    proc = root / "procedural"
    (proc / "nested" / "deeper").mkdir(parents=True)
    save_mesh(shuffled(meshes.torus(40, 20)), proc / "torus.ply")
    shutil.copy(proc / "torus.ply", proc / "nested" / "deeper" / "torus.ply")
    save_mesh(shuffled(meshes.uv_sphere(12, 24), 1), proc / "sphere.obj")
    write_off(shuffled(meshes.icosphere(2), 2), proc / "ico.off")
    write_binary_stl(shuffled(meshes.grid(10, 6), 3), proc / "grid.stl")
    save_mesh(shuffled(meshes.grid(10, 6), 4), proc / "grid.ply")
    save_mesh(shuffled(meshes.icosphere(1), 5), proc / "nested" / "ico.glb")
    tree = SHARED / "tree_quaternius_birch8.ply"
    if tree.is_file():
        for sub in ("shared", "shared/copy", "shared/copy/again"):
            (root / sub).mkdir(parents=True, exist_ok=True)
            shutil.copy(tree, root / sub / tree.name)
    for name in ("TextureCoordinateTest", "BoxInterleaved", "PrimitiveMode08"):
        if (SHARED_GLTF / name).is_dir():
            shutil.copytree(SHARED_GLTF / name, root / "gltf" / name)
    if (SHARED_GLTF / "TextureCoordinateTest").is_dir():
        shutil.copytree(SHARED_GLTF / "TextureCoordinateTest", root / "gltf" / "again" / "TextureCoordinateTest")
    broken = root / "broken"
    broken.mkdir()
    (broken / "garbage.ply").write_bytes(b"ply\nformat nonsense 9\nend_header\n\x01\x02")
    (broken / "empty.obj").write_text("# nothing here\n")
    (broken / "truncated.glb").write_bytes((proc / "nested" / "ico.glb").read_bytes()[:40])
    (broken / "missing_bin.gltf").write_text(json.dumps({
        "asset": {"version": "2.0"}, "buffers": [{"uri": "absent.bin", "byteLength": 36}],
        "bufferViews": [{"buffer": 0, "byteLength": 36}],
        "accessors": [{"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3"}],
        "meshes": [{"primitives": [{"attributes": {"POSITION": 0}}]}]}))
    (root / "notes.txt").write_text("not a mesh\n")
    (root / "textures").mkdir()
    (root / "textures" / "unused.png").write_bytes(b"\x89PNG not really")
    return root


def expected_status(path: str) -> str:
    if path in BROKEN:
        return "failed"
    if path.startswith("gltf/PrimitiveMode08/"):
        return "passed-through"
    return "ok"


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    return make_library(tmp_path_factory.mktemp("lib") / "library")


@pytest.fixture(scope="module")
def local_run(library, tmp_path_factory):
    out = tmp_path_factory.mktemp("out") / "optimized"
    result = optimize_library(library, out, OPTIONS, LibrarySettings(workers=2, progress=False))
    return out, result


def output_files(out: Path) -> dict[str, str]:
    return {p.relative_to(out).as_posix(): sha(p) for p in sorted(out.rglob("*")) if p.is_file()}


def without_seconds(manifest: Path) -> list[dict]:
    rows = [json.loads(line) for line in manifest.read_text().splitlines()]
    for row in rows:
        row.pop("seconds")
    return rows


# ------------------------------------------------------------------------------ discovery
def test_discovery_names_outputs_and_skips_other_files(tmp_path):
    for name in ("a/x.stl", "a/x.ply", "a/y.STL", "a/z.off", "b/m.gltf", "b/m.bin", "c.txt",
                 "a/.x.ply.meshopt-batch-abc.tmp", "out/old.ply"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"12345")
    found = {f.path: f.output for f in discover(tmp_path, tmp_path / "out")}
    assert found == {"a/x.ply": "a/x.ply", "a/x.stl": "a/x.stl.ply", "a/y.STL": "a/y.ply",
                     "a/z.off": "a/z.ply", "b/m.gltf": "b/m.gltf"}


# ------------------------------------------------------------------------------ a local run
def test_manifest_has_one_entry_per_mesh_file_with_hashes(library, local_run):
    out, result = local_run
    inputs = {f.path for f in discover(library)}
    entries = read_manifest(out / "manifest.jsonl")
    assert set(entries) == inputs
    assert len((out / "manifest.jsonl").read_text().splitlines()) == len(inputs)
    assert [e["path"] for e in result.entries] == sorted(inputs)
    for path, e in entries.items():
        assert e["status"] == expected_status(path), (path, e)
        assert e["input_sha256"] == sha(library / path)
        if e["status"] == "failed":
            assert "\n" not in e["error"] and e["error"], path
            assert not (out / e["output"]).exists()
            continue
        assert e["output_sha256"] == sha(out / e["output"])
        for uri, digest in (e.get("output_references") or {}).items():
            assert sha((out / e["output"]).parent / uri) == digest
        for prof, pair in e["invocations"].items():
            assert pair["after"] <= pair["before"], (path, prof)
    assert result.counts["failed"] == len(BROKEN)
    assert entries["procedural/torus.ply"]["copied_from"] == "procedural/nested/deeper/torus.ply"
    assert entries["procedural/grid.stl"]["output"] == "procedural/grid.stl.ply"
    assert entries["broken/empty.obj"]["error"].startswith("broken/empty.obj: ")
    assert str(library) not in (out / "manifest.jsonl").read_text()


def test_outputs_equal_the_one_file_command(library, local_run, tmp_path, capsys):
    out, result = local_run
    for e in result.entries:
        if e["status"] == "failed":
            continue
        single = tmp_path / e["output"]
        single.parent.mkdir(parents=True, exist_ok=True)
        assert main(["optimize", str(library / e["path"]), "-o", str(single), "-p", "nvidia_gl"]) == 0, e["path"]
        assert sha(single) == e["output_sha256"], e["path"]
        for uri, digest in (e.get("output_references") or {}).items():
            assert sha(single.parent / uri) == digest, (e["path"], uri)
    capsys.readouterr()


def test_non_mesh_files_are_left_alone(local_run):
    out, _ = local_run
    files = output_files(out)
    assert "notes.txt" not in files and "textures/unused.png" not in files
    assert not (out / RUN_MARKER).exists()
    assert not [p for p in files if ".meshopt-batch-" in p]


def test_rerun_only_verifies_and_a_changed_file_is_redone(library, tmp_path):
    out = tmp_path / "out"
    first = optimize_library(library, out, OPTIONS, LibrarySettings(workers=1, progress=False))
    before = output_files(out)
    again = optimize_library(library, out, OPTIONS, LibrarySettings(workers=1, progress=False))
    assert again.computed == 0 and again.workers == 0
    for a, b in zip(first.entries, again.entries, strict=True):
        assert b["status"] == ("failed" if a["status"] == "failed" else "cached")
        assert {k: v for k, v in a.items() if k not in ("status", "seconds")} == \
               {k: v for k, v in b.items() if k not in ("status", "seconds")}
    changed = library / "procedural" / "sphere.obj"
    original = changed.read_bytes()
    try:
        save_mesh(shuffled(meshes.uv_sphere(12, 24), 9), changed)
        third = optimize_library(library, out, OPTIONS, LibrarySettings(workers=1, progress=False))
    finally:
        changed.write_bytes(original)
    statuses = {e["path"]: e["status"] for e in third.entries}
    assert third.computed == 1 and statuses["procedural/sphere.obj"] == "ok"
    assert sorted(p for p, s in statuses.items() if s == "cached") == \
           sorted(e["path"] for e in first.entries if e["status"] != "failed" and e["path"] != "procedural/sphere.obj")
    after = output_files(out)
    assert {k for k in before if before[k] != after[k]} == {"procedural/sphere.obj", "manifest.jsonl"}


def test_cli_json_and_exit_codes(library, tmp_path, capsys):
    out = tmp_path / "o"
    code = main(["optimize", str(library), "-o", str(out), "--workers", "1", "--json"])
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert code == 1
    assert summary["files"] == len(discover(library))
    assert summary["status"]["failed"] == len(BROKEN)
    assert sorted(f["path"] for f in summary["failed"]) == sorted(BROKEN)
    assert len([ln for ln in captured.err.splitlines() if ln.startswith("meshopt-batch: broken/")]) == len(BROKEN)
    clean = tmp_path / "clean"
    shutil.copytree(library / "procedural", clean / "procedural")
    assert main(["optimize", str(clean), "-o", str(tmp_path / "o2"), "--no-progress"]) == 0
    assert "0 failed" not in capsys.readouterr().out


@pytest.mark.parametrize("extra, message", [
    (["--workers", "0"], "--workers 0"),
    (["--max-memory", "lots"], "--max-memory 'lots'"),
    (["--scheduler", "localhost"], "--scheduler 'localhost'"),
])
def test_bad_library_arguments_exit_2(library, tmp_path, capsys, extra, message):
    assert main(["optimize", str(library), "-o", str(tmp_path / "o"), *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_folder_options_refused_for_one_file_and_outdir_inside_rules(library, tmp_path, capsys):
    mesh = tmp_path / "t.ply"
    save_mesh(meshes.torus(8, 4), mesh)
    assert main(["optimize", str(mesh), "-o", str(tmp_path / "o.ply"), "--workers", "2"]) == 2
    assert "--workers: only for a folder" in capsys.readouterr().err
    assert main(["optimize", str(library), "-o", str(library)]) == 2
    assert main(["optimize", str(library / "procedural"), "-o", str(library)]) == 2
    assert "must not be" in capsys.readouterr().err


def test_output_folder_inside_the_library_is_not_an_input(tmp_path):
    lib = tmp_path / "lib"
    lib.mkdir()
    save_mesh(shuffled(meshes.torus(10, 6)), lib / "t.ply")
    for _ in range(2):
        result = optimize_library(lib, lib / "optimized", OPTIONS, LibrarySettings(workers=1, progress=False))
        assert [e["path"] for e in result.entries] == ["t.ply"]


def test_report_library_summarises_the_manifest(local_run, tmp_path, capsys):
    out, result = local_run
    assert main(["report", "--library", str(out), "-o", str(tmp_path / "rep"), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    before = sum(e["invocations"]["nvidia_gl"]["before"] for e in result.entries if "invocations" in e)
    after = sum(e["invocations"]["nvidia_gl"]["after"] for e in result.entries if "invocations" in e)
    row = next(r for r in rep["invocations"] if r["profile"] == "nvidia_gl")
    assert (row["before"], row["after"], row["saved"]) == (before, after, before - after)
    assert sorted(r["path"] for r in rep["failures"]) == sorted(BROKEN)
    assert {r["status"]: r["files"] for r in rep["status"]} == result.counts
    assert [r["path"] for r in rep["slowest"]] == [e["path"] for e in sorted(
        result.entries, key=lambda e: (-e["seconds"], e["path"]))][:10]
    assert (tmp_path / "rep" / "index.html").is_file() and (tmp_path / "rep" / "library_invocations.png").is_file()
    assert main(["report", "--library", str(tmp_path / "none")]) == 2


def test_a_manifest_entry_never_reaches_outside_outdir(tmp_path, capsys):
    # entries for inputs no longer in the library: their outputs are removed only inside OUTDIR
    lib, out = tmp_path / "lib", tmp_path / "out"
    lib.mkdir()
    save_mesh(shuffled(meshes.torus(10, 6)), lib / "a.ply")
    assert main(["optimize", str(lib), "-o", str(out), "-p", "nvidia_gl", "--no-progress"]) == 0
    victim, outside = tmp_path / "victim.txt", tmp_path / "elsewhere" / "x.bin"
    victim.write_text("not ours")
    outside.parent.mkdir()
    outside.write_bytes(b"not ours either")
    (out / "link").symlink_to(outside.parent, target_is_directory=True)
    lines = (out / MANIFEST_NAME).read_text().splitlines()
    forged = [{"path": "gone.ply", "status": "ok", "output": "../victim.txt", "output_sha256": sha(victim)},
              {"path": "gone2.ply", "status": "ok", "output": str(victim), "output_sha256": sha(victim)},
              {"path": "gone3.ply", "status": "ok", "output": "link/x.bin", "output_sha256": sha(outside)},
              {"path": "gone4.gltf", "status": "ok", "output": "gone4.gltf", "output_sha256": "0" * 64,
               "output_references": {"../victim.txt": sha(victim)}}]
    (out / MANIFEST_NAME).write_text("\n".join(lines + [json.dumps(e) for e in forged]) + "\n")
    assert main(["optimize", str(lib), "-o", str(out), "-p", "nvidia_gl", "--no-progress"]) == 0
    assert victim.read_text() == "not ours" and outside.read_bytes() == b"not ours either"
    assert [json.loads(ln)["path"] for ln in (out / MANIFEST_NAME).read_text().splitlines()] == ["a.ply"]


def test_malformed_manifest_entries_are_done_again_not_a_traceback(tmp_path, capsys):
    lib, out = tmp_path / "lib", tmp_path / "out"
    lib.mkdir()
    for name in ("a.ply", "b.ply", "c.ply"):
        save_mesh(shuffled(meshes.torus(10, 6)), lib / name)
    assert main(["optimize", str(lib), "-o", str(out), "-p", "nvidia_gl", "--no-progress"]) == 0
    entries = [json.loads(ln) for ln in (out / MANIFEST_NAME).read_text().splitlines()]
    entries[0]["invocations"] = {"nvidia_gl": 5}
    entries[1]["output"] = 7
    del entries[2]["output"]
    entries[2]["invocations"] = "x"
    (out / MANIFEST_NAME).write_text("".join(json.dumps(e) + "\n" for e in entries))
    assert main(["report", "--library", str(out), "-o", str(tmp_path / "rep")]) == 2
    assert "no manifest entries" in capsys.readouterr().err
    assert main(["optimize", str(lib), "-o", str(out), "-p", "nvidia_gl", "--no-progress"]) == 0
    done = [json.loads(ln) for ln in (out / MANIFEST_NAME).read_text().splitlines()]
    assert [(e["path"], e["status"]) for e in done] == [("a.ply", "ok"), ("b.ply", "ok"), ("c.ply", "ok")]
    assert main(["report", "--library", str(out), "-o", str(tmp_path / "rep")]) == 0


def test_a_library_gltf_whose_buffer_is_a_fifo_fails_alone_and_does_not_hang(tmp_path, capsys):
    lib = tmp_path / "lib"
    lib.mkdir()
    doc = {"asset": {"version": "2.0"}, "buffers": [{"uri": "b.bin", "byteLength": 36}],
           "bufferViews": [{"buffer": 0, "byteLength": 36}],
           "accessors": [{"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3",
                          "min": [0, 0, 0], "max": [1, 1, 0]}],
           "meshes": [{"primitives": [{"attributes": {"POSITION": 0}}]}]}
    (lib / "a.gltf").write_text(json.dumps(doc))
    os.mkfifo(lib / "b.bin")
    save_mesh(shuffled(meshes.torus(10, 6)), lib / "c.ply")
    assert main(["optimize", str(lib), "-o", str(tmp_path / "out"), "--no-progress"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == ["meshopt-batch: a.gltf: buffer 0 file 'b.bin' is a FIFO (named pipe), not a regular file"]
    entries = read_manifest(tmp_path / "out" / MANIFEST_NAME)
    assert entries["a.gltf"]["references"] == {"b.bin": "missing"} and entries["c.ply"]["status"] == "ok"


# ------------------------------------------------------------------------------ kill -9
def test_kill_9_then_rerun_ends_every_file_ok_once(tmp_path):
    lib = tmp_path / "lib"
    for i in range(8):
        (lib / f"d{i % 3}").mkdir(parents=True, exist_ok=True)
        save_mesh(shuffled(meshes.torus(160 + 8 * i, 80), i), lib / f"d{i % 3}" / f"torus{i}.ply")
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "meshopt_batch_app", "optimize", str(lib), "-o", str(out),
                             "-p", "nvidia_gl", "--workers", "1", "--no-progress"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    manifest = out / "manifest.jsonl"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        if manifest.is_file() and manifest.read_text().count("\n") >= 2:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    time.sleep(0.5)                          # the worker follows its parent (PR_SET_PDEATHSIG)
    assert (out / RUN_MARKER).exists()
    killed = read_manifest(manifest)
    assert 2 <= len(killed) < 8
    stale = out / "d1" / ".torus1.ply.meshopt-batch-x1y2z3.tmp"
    stale.write_bytes(b"partial")
    result = optimize_library(lib, out, OPTIONS, LibrarySettings(workers=2, progress=False))
    assert [e["status"] for e in result.entries] == ["ok"] * 8
    assert result.computed == 8 - len(killed)
    lines = manifest.read_text().splitlines()
    assert sorted(json.loads(ln)["path"] for ln in lines) == sorted(e["path"] for e in result.entries)
    assert len(lines) == 8
    leftovers = [p for p in out.rglob("*") if p.is_file() and (".meshopt-batch-" in p.name or p.name == RUN_MARKER)]
    assert leftovers == []
    for e in result.entries:
        assert sha(out / e["output"]) == e["output_sha256"]


# ------------------------------------------------------------------------------ Dask
def test_dask_cluster_run_equals_local_run(library, local_run, tmp_path):
    import distributed

    local_out, local_result = local_run
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        out = tmp_path / "dask"
        result = optimize_library(library, out, OPTIONS,
                                  LibrarySettings(scheduler=cluster.scheduler_address, progress=False))
    assert result.workers == 2
    assert without_seconds(out / "manifest.jsonl") == without_seconds(local_out / "manifest.jsonl")
    ours, theirs = output_files(out), output_files(local_out)
    ours.pop("manifest.jsonl"), theirs.pop("manifest.jsonl")
    assert ours == theirs


def test_unreachable_scheduler_is_one_error_line_and_leaves_no_marker(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT_S", 3)  # Dask retries a refused connection until then
    lib = tmp_path / "lib"
    lib.mkdir()
    save_mesh(shuffled(meshes.torus(10, 6)), lib / "t.ply")
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "o"
    assert main(["optimize", str(lib), "-o", str(out), "--scheduler", f"tcp://127.0.0.1:{port}",
                 "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot reach the Dask scheduler" in err[0]
    assert not (out / RUN_MARKER).exists()
    assert not (out / "t.ply").exists()


def test_outputs_of_deleted_inputs_are_removed_and_nothing_else(tmp_path):
    lib, out = tmp_path / "lib", tmp_path / "out"
    (lib / "c").mkdir(parents=True)
    for name in ("b.ply", "c/keep.ply", "edited.ply"):
        save_mesh(shuffled(meshes.torus(10, 6)), lib / name)
    gltf_source = SHARED_GLTF / "TextureCoordinateTest"
    if gltf_source.is_dir():
        shutil.copytree(gltf_source, lib / "a")
        (lib / "a" / "deeper").mkdir()
        save_mesh(shuffled(meshes.torus(8, 5)), lib / "a" / "deeper" / "d.ply")
    settings = LibrarySettings(workers=1, progress=False)
    first = optimize_library(lib, out, OPTIONS, settings)
    written = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()} - {MANIFEST_NAME}
    (out / "notes.txt").write_text("the user's own file")
    with open(out / "edited.ply", "ab") as f:  # an output changed by hand is not ours to remove
        f.write(b"\n")
    shutil.rmtree(lib / "a", ignore_errors=True)
    (lib / "b.ply").unlink()
    (lib / "edited.ply").unlink()
    second = optimize_library(lib, out, OPTIONS, settings)
    assert [e["path"] for e in second.entries] == ["c/keep.ply"]
    assert second.entries[0]["status"] == "cached"
    left = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()} - {MANIFEST_NAME}
    assert left == {"c/keep.ply", "edited.ply", "notes.txt"}
    assert sorted(second.removed) == sorted(written - {"c/keep.ply", "edited.ply"})
    if gltf_source.is_dir():
        assert any(p.endswith(".gltf") for p in second.removed) and len(written) > 4  # external files too
        assert not (out / "a").exists()  # the folder it left empty
    assert len(first.entries) == (5 if gltf_source.is_dir() else 3)


# ------------------------------------------------------------------------------ a worker killed
def _tasks(tmp_path, count):
    """One mesh file per job, the first the largest (so the schedule starts it first)."""
    (tmp_path / "in").mkdir()
    (tmp_path / "out").mkdir()
    tasks = []
    for i in range(count):
        name = f"torus{i}.ply"
        save_mesh(shuffled(meshes.torus(160 - 40 * i, 80), i), tmp_path / "in" / name)
        tasks.append(Task(name, str(tmp_path / "in" / name), str(tmp_path / "out" / name), name, OPTIONS))
    return tasks


def _kill_new_workers(count, stop):
    """Kill -9 the first ``count`` worker processes this process starts, each once it appears."""
    import multiprocessing
    older = {child.pid for child in multiprocessing.active_children()}
    seen = set()
    while len(seen) < count and not stop.is_set():
        for child in multiprocessing.active_children():
            if child.pid not in seen | older:
                seen.add(child.pid)
                os.kill(child.pid, signal.SIGKILL)
        time.sleep(0.01)
    return seen


def test_a_worker_killed_twice_fails_its_file_alone_and_the_others_are_done(tmp_path):
    # the real process pool: the worker of the first file dies, the file runs again alone on a
    # fresh pool, dies again, fails; the others are optimized on the pool started after that
    import threading
    tasks = _tasks(tmp_path, 3)
    jobs = [Job(i, task, 3 - i) for i, task in enumerate(tasks)]
    backend = LocalBackend(1)
    stop, killed = threading.Event(), []
    killer = threading.Thread(target=lambda: killed.append(_kill_new_workers(2, stop)))
    killer.start()
    time.sleep(0.2)                          # the killer has seen the processes already running
    done, lost = {}, []
    try:
        run_jobs(jobs, backend, 100, lambda job, fields: done.update({job.index: fields}),
                 lambda job, message: lost.append((job.index, message)))
    finally:
        stop.set()
        killer.join()
        backend.close()
    assert len(killed[0]) == 2
    assert lost == [(0, "worker process died (killed, out of memory, or crashed)")]
    assert sorted(done) == [1, 2] and all(done[i]["status"] == "ok" for i in done)
    assert not Path(tasks[0].output).exists()
    for i in (1, 2):
        assert sha(tasks[i].output) == done[i]["output_sha256"]


def test_a_dask_worker_killed_mid_file_is_reported_and_the_file_runs_again(tmp_path):
    import dask
    import distributed
    task = _tasks(tmp_path, 1)[0]
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}), \
            distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                                     dashboard_address=None) as local:
        backend = DaskBackend(local.scheduler_address)
        try:
            pids = backend.client.run(os.getpid)
            future = backend.submit(Job(0, task, 1))
            deadline = time.monotonic() + 60
            while not any(backend.client.processing().values()) and time.monotonic() < deadline:
                time.sleep(0.01)
            (pid,) = pids.values()
            os.kill(pid, signal.SIGKILL)
            with pytest.raises(WorkerLost, match="worker process died"):
                backend.result(future)
            backend.client.wait_for_workers(1, timeout=60)      # the nanny starts a new one
            assert backend.client.run(os.getpid) != pids
            fields = backend.result(backend.submit(Job(0, task, 1)))
        finally:
            backend.close()
    assert fields["status"] == "ok" and sha(task.output) == fields["output_sha256"]
