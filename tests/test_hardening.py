"""Every failure of issue 17's hostile-user run, pinned: the exact one-line error (or the
correct output) and the exit code, through the command line in this process.

Sections: glTF documents, profile files, scene files, resource limits, messages (warnings,
argparse, Mesa's chatter), text-format truncation and excess, temporary and output files.
"""

from __future__ import annotations

import copy
import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from test_fuzz_support import (
    check_contract,
    gltf_document,
    profile_document,
    quad_mesh,
    run_cli,
    sample_files,
)

from meshopt_batch.io import load_mesh, save_mesh
from meshopt_batch.support import limits
from meshopt_batch.support.files import TEMP_MARK, atomic_path, atomic_write, staging_directory

ROOT = Path(__file__).resolve().parents[1]
ERROR = "meshopt-batch: error: "


def one_error(run, folder: Path | None = None, inputs=()) -> str:
    """The one error line of a run that exited with 2 (without the prefix)."""
    assert run.code == 2, (run.code, run.err)
    lines = run.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(ERROR), run.err
    if folder is not None:
        check_contract(run, folder, set(inputs))
    return lines[0][len(ERROR):]


def write_json(path: Path, doc, **kw) -> Path:
    path.write_text(json.dumps(doc, allow_nan=True, **kw))
    return path


# ----------------------------------------------------------------------------- glTF documents
def _gltf(tmp_path, edit, name="doc.gltf") -> Path:
    doc = gltf_document()
    edit(doc)
    return write_json(tmp_path / name, doc)


@pytest.mark.parametrize("edit, message", [
    (lambda d: d.__setitem__("asset", "2.0"), '/asset: expected an object, got the string "2.0"'),
    (lambda d: d["buffers"][0].__setitem__("uri", 5), "/buffers/0/uri: expected a string, got the number 5"),
    (lambda d: d["meshes"][0]["primitives"].__setitem__(0, None),
     "/meshes/0/primitives/0: expected an object, got null"),
    (lambda d: d["meshes"][0]["primitives"][0].__setitem__("mode", 7),
     "/meshes/0/primitives/0/mode: expected a primitive mode 0-6 (points, lines, line loop, line strip, "
     "triangles, triangle strip, triangle fan), got the number 7"),
    (lambda d: d["nodes"][2].__setitem__("translation", None),
     "/nodes/2/translation: expected an array of 3 numbers, got null"),
    (lambda d: d["nodes"][0].__setitem__("scale", [1e39, 1, 1]),
     "/nodes/0/scale/0: expected a finite number within float32's range, got the number 1e+39"),
    (lambda d: d["nodes"][1]["matrix"].__setitem__(12, float("nan")),
     "/nodes/1/matrix/12: expected a finite number within float32's range, got the number NaN"),
    (lambda d: d["accessors"][0].__setitem__("count", 2**33),
     "/accessors/0/count: expected at most 4,294,967,296, got 8,589,934,592"),
    (lambda d: d["nodes"][0]["children"].append(7),
     "/nodes/0/children/2: expected an index into nodes (0..2), got the number 7"),
    (lambda d: d["meshes"][0]["primitives"][0]["attributes"].__setitem__("NORMAL", 1.0),
     "/meshes/0/primitives/0/attributes/NORMAL: expected an index into accessors (0..4), got the number 1.0"),
])
def test_type_confused_gltf_is_one_line_with_its_json_pointer(tmp_path, edit, message):
    src = _gltf(tmp_path, edit)
    for argv in (("analyze", src), ("optimize", src, "-o", tmp_path / "out.glb"),
                 ("simulate", src, "-n", "1", "--width", "16", "--height", "16", "--no-progress")):
        assert one_error(run_cli(*argv), tmp_path, {src.name}) == f"{src}: {message}"


def test_zero_filled_accessor_is_checked_against_memory(tmp_path, monkeypatch):
    monkeypatch.setattr(limits, "available_memory", lambda: 1 << 20)
    src = _gltf(tmp_path, lambda d: d["accessors"][4].__setitem__("count", 1_000_000))
    assert one_error(run_cli("analyze", src)) == (
        f"{src}: /accessors/4: 1,000,000 elements without a bufferView needs about 11.4 MiB, more than "
        "the 1.0 MiB of memory available")


def test_points_and_lines_only(tmp_path):
    def lines_only(d):
        d["meshes"][0]["primitives"][0]["mode"] = 1
        d["meshes"][1]["primitives"][0]["mode"] = 0
    src = _gltf(tmp_path, lines_only)
    for command in ("compare", "probe"):
        assert one_error(run_cli(command, src)) == f"{src}: no triangles: only point/line primitives"
    run = run_cli("analyze", src, "--json")
    assert run.code == 0 and run.err == ""
    assert json.loads(run.out)["notes"] == ["3 point/line primitive(s) skipped", "no triangle primitives"]


def test_a_skipped_line_primitive_is_one_warning_line_after_the_output(tmp_path):
    src = _gltf(tmp_path, lambda d: None)
    run = run_cli("compare", src, "-q", "-p", "fifo:8", "-m", "tipsify", "--json")
    assert run.code == 0
    assert run.err_lines == [f"meshopt-batch: warning: {src}: 1 point/line primitive(s) skipped"]


# ----------------------------------------------------------------------------- profile files
@pytest.mark.parametrize("doc, message", [
    ([1, 2], "expected a JSON object (a profile), got an array [1, 2]"),
    ({**profile_document(), "bogus": 1},
     "/bogus: unknown key (known: name, max_size, max_uniques, memory, memory_size, boundary_16bit, "
     "description, source)"),
    ({**profile_document(), "max_size": "96"}, '/max_size: expected a whole number, got the string "96"'),
    ({"name": "x", "max_size": 96}, "missing key 'max_uniques' (required: name, max_size, max_uniques, memory, "
     "memory_size)"),
    ({**profile_document(), "boundary_16bit": 1}, "/boundary_16bit: expected true or false, got the number 1"),
    ({**profile_document(), "memory_size": 2**40},
     "/memory_size: 1099511627776 outside 0..16,777,216"),
    ({**profile_document(), "memory": "teapot"}, "profile 'fuzzgpu': unknown memory kind 'teapot'"),
])
def test_bad_profile_files(tmp_path, doc, message):
    mesh = save_mesh(quad_mesh(), tmp_path / "m.obj")
    prof = write_json(tmp_path / "gpu.json", doc)
    assert one_error(run_cli("analyze", mesh, "-p", prof), tmp_path, {"m.obj", "gpu.json"}) == f"{prof}: {message}"


def test_profile_file_as_written_by_the_probe_still_loads(tmp_path, capsys):
    mesh = save_mesh(quad_mesh(), tmp_path / "m.obj")
    prof = write_json(tmp_path / "gpu.json", profile_document())
    run = run_cli("analyze", mesh, "-p", prof, "--json")
    assert run.code == 0 and json.loads(run.out)["results"][0] == {
        "profile": "fuzzgpu", "invocations": 4, "asr": 2.0, "acmr": 2.0, "atvr": 1.0, "batches": 1}


# ----------------------------------------------------------------------------- scene files
SCENE = {"frames": 2, "objects": [{"mesh": "box"}]}


def _scene(tmp_path, edit) -> Path:
    doc = copy.deepcopy(SCENE)
    edit(doc)
    return write_json(tmp_path / "s.json", doc)


@pytest.mark.parametrize("edit, message", [
    (lambda d: d.__setitem__("frames", float("inf")), "frames: expected an integer, got the number Infinity"),
    (lambda d: d.__setitem__("width", float("inf")), "width: expected an integer, got the number Infinity"),
    (lambda d: d.__setitem__("height", -float("inf")), "height: expected an integer, got the number -Infinity"),
    (lambda d: d.__setitem__("width", 20000), "width: must be at most 16,384, got 20,000"),
    (lambda d: d.__setitem__("frames", 10**7), "frames: must be at most 1,000,000, got 10,000,000"),
    (lambda d: d.__setitem__("seed", 1e300), "seed: must be at most 9,007,199,254,740,992, got 1e+300"),
    (lambda d: d.__setitem__("seed", 2**60), "seed: must be at most 9,007,199,254,740,992, got "
     "1,152,921,504,606,846,976"),
    (lambda d: d["objects"][0].__setitem__("mesh", None),
     "objects[0].mesh: expected a shape name, a file name or a MESH object, got null"),
    (lambda d: d["objects"][0].__setitem__("mesh", ["box"]),
     'objects[0].mesh: expected a shape name, a file name or a MESH object, got an array ["box"]'),
    (lambda d: d["objects"][0].__setitem__("mesh", 3),
     "objects[0].mesh: expected a shape name, a file name or a MESH object, got the number 3"),
    (lambda d: d["objects"][0].__setitem__("name", None), "objects[0].name: expected a string, got null"),
    (lambda d: d["objects"][0].__setitem__("layer", ["default"]), "objects[0].layer: unknown layer ['default']"),
    (lambda d: d["objects"][0].__setitem__("material", {}), "objects[0].material: unknown material {}"),
    (lambda d: d["objects"][0].__setitem__("scale", [1e39, 1, 1]),
     "objects[0].scale[0]: expected a finite number within float32's range, got the number 1e+39"),
    (lambda d: d.__setitem__("meshes", {"a": {"library": None}}), "meshes.a.library: expected a name, got null"),
    (lambda d: d.__setitem__("meshes", {"a": {"shape": ["box"]}}),
     'meshes.a.shape: expected a name, got an array ["box"]'),
    (lambda d: d.__setitem__("meshes", {"a": {"shape": "box", "divisions": None}}),
     "meshes.a.divisions: expected an integer, got null"),
    (lambda d: d.__setitem__("meshes", {"a": {"library": "grid", "nx": float("inf")}}),
     "meshes.a.nx: expected an integer, got the number Infinity"),
    (lambda d: d.__setitem__("meshes", {"a": {"library": "icosphere", "subdiv": "3"}}),
     'meshes.a.subdiv: expected an integer, got the string "3"'),
    (lambda d: d["objects"][0].__setitem__("mesh", {"library": "icosphere", "subdiv": 12}),
     "objects[0].mesh: library 'icosphere': would have 335,544,320 triangles, over the limit of 4,194,304 "
     "for a generated mesh"),
    (lambda d: d["objects"][0].__setitem__("mesh", {"shape": "box", "divisions": [2000, 2000, 1]}),
     "objects[0].mesh: shape 'box': would have 16,016,000 triangles, over the limit of 4,194,304 "
     "for a generated mesh"),
    (lambda d: d["objects"][0].__setitem__("mesh", {"library": "teapot"}),
     "objects[0].mesh.library: unknown library mesh 'teapot' (known: box, cone, cube, cylinder, grid, icosphere, "
     "plane, quad, random_soup, sphere, torus, uv_sphere)"),
    (lambda d: d["objects"][0].__setitem__("mesh", {"shape": "teapot", "fallback": "box"}),
     "objects[0].mesh.shape: unknown shape mesh 'teapot' (known: box, plane, quad, sphere, cylinder, cone, torus)"),
])
def test_bad_scene_values_are_one_line(tmp_path, edit, message):
    src = _scene(tmp_path, edit)
    run = run_cli("simulate", src, "-n", "1", "--width", "16", "--height", "16", "--no-progress")
    assert one_error(run, tmp_path, {"s.json"}) == f"s.json: {message}"


def test_scene_mesh_file_errors_name_the_scene_and_the_object(tmp_path):
    bad = _gltf(tmp_path, lambda d: d["nodes"][2].__setitem__("translation", None), "bad.gltf")
    src = _scene(tmp_path, lambda d: d["objects"][0].__setitem__("mesh", {"file": "bad.gltf"}))
    run = run_cli("simulate", src, "-n", "1", "--width", "16", "--height", "16", "--no-progress")
    assert one_error(run) == (f"s.json: objects[0].mesh: {bad}: /nodes/2/translation: expected an array of "
                              "3 numbers, got null")


def test_gltf_scene_node_leaving_float32_is_refused_by_name(tmp_path):
    def huge(d):
        d["nodes"][0]["scale"] = [1e38, 1, 1]       # each factor fits float32, their product does not
        d["nodes"][1]["matrix"][0] = 1e38
    src = _gltf(tmp_path, huge)
    run = run_cli("simulate", src, "-n", "1", "--width", "16", "--height", "16", "--no-progress")
    assert one_error(run) == (f"{src}: node 'left': its world transform takes the mesh 'quad' out of float32's "
                              "range (scales or translations too large)")


def test_placements_leaving_float32_are_refused(tmp_path):
    def huge(d):
        d["nodes"][0]["scale"] = [1e38, 1, 1]
        d["nodes"][1]["matrix"][0] = 1e38
    bad = _gltf(tmp_path, huge, "huge.gltf")
    src = _scene(tmp_path, lambda d: d["objects"][0].__setitem__("mesh", {"file": "huge.gltf"}))
    run = run_cli("simulate", src, "-n", "1", "--width", "16", "--height", "16", "--no-progress")
    assert one_error(run) == (f"s.json: objects[0].mesh: {bad}: quad: the transform takes vertex positions out "
                              "of float32's range")
    inner = {"merge": [{"mesh": "box", "scale": 3e38}]}
    src = _scene(tmp_path, lambda d: d["objects"][0].__setitem__("mesh", {"merge": [{"mesh": inner, "scale": 3e38}]}))
    run = run_cli("simulate", src, "-n", "1", "--width", "16", "--height", "16", "--no-progress")
    assert one_error(run) == ("s.json: objects[0].mesh.merge[0]: the transform takes vertex positions out of "
                              "float32's range")


def test_absent_files_still_fall_back(tmp_path):
    src = _scene(tmp_path, lambda d: d["objects"][0].__setitem__("mesh", {"file": "gone.ply", "fallback": "box"}))
    run = run_cli("simulate", src, "-n", "1", "--width", "16", "--height", "16", "--no-progress", "--json")
    assert run.code == 0 and run.err == ""
    assert json.loads(run.out)["mesh_fallbacks"] == ["file:gone.ply"]


# ----------------------------------------------------------------------------- resource limits
@pytest.mark.parametrize("argv, message", [
    (["--profile", "fifo:99999999999"], "profile 'fifo:99999999999': memory_size 99999999999 is over the limit "
     "of 16,777,216 (that large acts as unbounded, and its tables would not fit in memory)"),
    (["--profile", "lru:16777217"], "profile 'lru:16777217': memory_size 16777217 is over the limit of 16,777,216 "
     "(that large acts as unbounded, and its tables would not fit in memory)"),
    (["-m", "tipsify:99999999999"], "tipsify: cache size 99999999999 is over the limit of 16,777,216 (that large "
     "acts as unbounded, and its tables would not fit in memory)"),
    (["-m", "meshoptimizer_fifo:99999999999"], "meshoptimizer_fifo: cache size 99999999999 is over the limit of "
     "16,777,216 (that large acts as unbounded, and its tables would not fit in memory)"),
])
def test_cache_sizes_over_the_limit(tmp_path, argv, message):
    mesh = save_mesh(quad_mesh(), tmp_path / "m.obj")
    command = "compare" if argv[0] == "-m" else "optimize"
    extra = ["-q"] if command == "compare" else ["-o", tmp_path / "o.ply"]
    assert one_error(run_cli(command, mesh, *extra, *argv), tmp_path, {"m.obj"}) == message


@pytest.mark.parametrize("argv, message", [
    (["--width", "100000", "--height", "100000"], "--width 100000: must be 1..16384 pixels (the largest OpenGL "
     "viewport)"),
    (["--height", "0"], "--height 0: must be 1..16384 pixels (the largest OpenGL viewport)"),
    (["--tile", "1099511627776"], "--tile 1099511627776: must be a power of two from 1 to 1024 pixels "
     "(tile-based GPUs use 16 or 32)"),
    (["--tile", "24"], "--tile 24: must be a power of two from 1 to 1024 pixels (tile-based GPUs use 16 or 32)"),
    (["--frames", "0"], "--frames 0: must be 1..1,000,000"),
    (["--frames", "2000000"], "--frames 2000000: must be 1..1,000,000"),
    (["--first-frame", "-1"], "--first-frame -1: frames are numbered 0..2,147,483,647"),
    (["--first-frame", str(2**31)], "--first-frame 2147483648: frames are numbered 0..2,147,483,647"),
])
def test_simulate_options_over_the_limits(tmp_path, argv, message):
    src = write_json(tmp_path / "s.json", SCENE)
    assert one_error(run_cli("simulate", src, "--no-progress", *argv), tmp_path, {"s.json"}) == message


def test_screen_checked_against_available_memory(tmp_path, monkeypatch):
    monkeypatch.setattr(limits, "available_memory", lambda: 1 << 30)
    src = write_json(tmp_path / "s.json", SCENE)
    run = run_cli("simulate", src, "--no-progress", "--width", "16384", "--height", "16384")
    assert one_error(run) == "a 16384x16384 screen needs about 25.0 GiB, more than the 1.0 GiB of memory available"


def test_optimize_checks_the_estimated_memory_first(tmp_path, monkeypatch):
    monkeypatch.setattr(limits, "available_memory", lambda: 10 << 20)
    mesh = save_mesh(quad_mesh(), tmp_path / "m.obj")
    run = run_cli("optimize", mesh, "-o", tmp_path / "o.ply")
    assert one_error(run, tmp_path, {"m.obj"}) == (f"optimizing {mesh} needs about 16.0 MiB, more than the 10.0 MiB "
                                                   "of memory available")


def test_report_frames_limit(tmp_path):
    run = run_cli("report", "--out", tmp_path / "r", "--frames", "0")
    assert one_error(run) == "--frames 0: must be 1..1,000,000"
    assert not (tmp_path / "r").exists()


# ----------------------------------------------------------------------------- messages
def test_argparse_errors_are_one_line(tmp_path):
    run = run_cli("simulate", "x", "--tile", "abc")
    assert run.code == 2 and run.err_lines == [
        "meshopt-batch simulate: error: argument --tile: invalid int value: 'abc' (see meshopt-batch simulate "
        "--help)"]


def test_warnings_are_one_line_each_and_dropped_on_error(tmp_path):
    obj = tmp_path / "q.obj"
    obj.write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nf 1 2 4 3")      # a quad, no final line end
    run = run_cli("analyze", obj, "-p", "fifo:8", "--json")
    assert run.code == 0 and json.loads(run.out)["triangles"] == 2
    assert run.err_lines == [
        f"meshopt-batch: warning: {obj}: 1 polygon(s) with more than 3 corners were fan-triangulated "
        "(v0,v1,v2),(v0,v2,v3),...",
        f"meshopt-batch: warning: {obj}: the file ends without a line end; it may be truncated (OBJ has no "
        "counts to check)"]
    run = run_cli("analyze", obj, "-p", "nosuch")
    assert run.err_lines == ["meshopt-batch: error: unknown profile 'nosuch' (known: nvidia_gl, nvidia_dx, amd, "
                             "intel, llvmpipe, fifo:N, lru:N)"]


def test_mesa_chatter_is_folded_into_the_one_error_line(tmp_path):
    """A broken Mesa (its drivers moved away) makes libEGL print warnings before the context
    fails: the one stderr line carries them."""
    env = dict(os.environ, LIBGL_DRIVERS_PATH=str(tmp_path / "no-drivers"))
    proc = subprocess.run([sys.executable, "-m", "meshopt_batch_app", "probe", "--json"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    if proc.returncode == 0:
        pytest.skip("GL still works without Mesa's DRI drivers (a vendor EGL)")
    lines = proc.stderr.splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"{ERROR}cannot create a headless OpenGL 4.3 context through EGL (")
    if "libEGL" in lines[0]:
        assert "the driver said: libEGL warning: MESA-LOADER: failed to open" in lines[0]


def test_out_of_memory_is_one_line(tmp_path, monkeypatch):
    import meshopt_batch_app.commands.analyze as analyze

    def no_memory(args):
        raise MemoryError("Unable to allocate 2.91 TiB for an array")
    monkeypatch.setattr(analyze, "run", no_memory)
    run = run_cli("analyze", tmp_path / "x.obj")
    assert run.code == 2 and run.err_lines == [
        "meshopt-batch: error: out of memory (Unable to allocate 2.91 TiB for an array)"]


# ----------------------------------------------------------------------------- text formats
FACET = "facet normal 0 0 1\n outer loop\n  vertex 0 0 0\n  vertex 1 0 0\n  vertex 0 1 0\n endloop\nendfacet\n"
STL18 = "solid t\n" + FACET * 18 + "endsolid t\n"
PLY = ("ply\nformat ascii 1.0\nelement vertex 4\nproperty float x\nproperty float y\nproperty float z\n"
       "element face {}\nproperty list uchar int vertex_indices\nend_header\n0 0 0\n1 0 0\n0 1 0\n1 1 0\n"
       "3 0 1 2\n3 2 1 3\n")
OFF = "OFF\n4 {} 0\n0 0 0\n1 0 0\n0 1 0\n1 1 0\n3 0 1 2\n3 2 1 3\n"


@pytest.mark.parametrize("name, data, message", [
    ("t.stl", STL18[: len("solid t\n") + 9 * len(FACET)],
     "ASCII STL ends without 'endsolid' after 9 complete facets (truncated?)"),
    ("t.stl", STL18[:-30], "ASCII STL ends without 'endsolid' after 17 complete facets (truncated?)"),
    ("t.stl", STL18.replace("endloop\nendfacet\nendsolid", "endsolid"), "ASCII STL has 18 'facet' lines but "
     "17 'endfacet' lines"),
    ("t.stl", STL18.replace("  vertex 0 1 0\n endloop\nendfacet\nendsolid", " endloop\nendfacet\nendsolid"),
     "ASCII STL has 53 vertex lines for 18 facets (3 each)"),
    ("t.ply", PLY.format(1), "PLY header declares 5 records (vertex 4, face 1) but the data has 6 lines"),
    ("t.ply", PLY.format(3), "PLY header declares 7 records (vertex 4, face 3) but the data has 6 lines "
     "(truncated?)"),
    ("t.ply", PLY.format(2)[:-8], "PLY header declares 6 records (vertex 4, face 2) but the data has 5 lines "
     "(truncated?)"),
    ("t.ply", PLY.format(2).replace("element vertex 4", "element vertex 5"), "PLY header declares 7 records "
     "(vertex 5, face 2) but the data has 6 lines (truncated?)"),
    ("t.ply", PLY.format(2)[:-3] + "\n", "PLY data ends inside element 'face' (truncated?)"),
    ("t.ply", PLY.format(2)[:-1] + " 9\n", "PLY has 1 more numbers after its last element 'face' than its "
     "header declares"),
    ("t.off", OFF.format(1), "OFF has 1 more line(s) after its 1 faces than its header declares"),
    ("t.off", OFF.format(3), "OFF file ends after 2 of 3 faces"),
    ("t.off", OFF.format(2)[:-3], "OFF face 1 lists 3 corners but has 2 numbers"),
])
def test_text_truncation_and_excess(tmp_path, name, data, message):
    path = tmp_path / name
    path.write_text(data)
    assert one_error(run_cli("analyze", path), tmp_path, {name}) == f"{path}: {message}"


def test_binary_stl_size_must_match_its_count(tmp_path):
    src = sample_files(tmp_path)["stl_binary.stl"]
    data = src.read_bytes()
    src.write_bytes(data + bytes(50))
    assert one_error(run_cli("analyze", src)) == (f"{src}: binary STL declares 2 triangles (184 bytes) but has 50 "
                                                 "more bytes after them")
    src.write_bytes(data[:-1])
    assert one_error(run_cli("analyze", src)) == (f"{src}: binary STL declares 2 triangles (184 bytes) but is only "
                                                 "183 bytes (truncated?)")


def test_ascii_stl_with_leading_spaces_is_ascii(tmp_path):
    path = tmp_path / "lead.stl"
    path.write_text("  " + STL18)
    mesh = load_mesh(path)
    assert (mesh.triangle_count, mesh.vertex_count) == (18, 54)
    assert np.array_equal(mesh.positions[:3], [[0, 0, 0], [1, 0, 0], [0, 1, 0]])


@pytest.mark.parametrize("name, data", [("t.ply", PLY.format(2)[:-1]), ("t.off", OFF.format(2)[:-1])])
def test_last_number_cut_where_no_count_can_tell_is_warned(tmp_path, name, data):
    path = tmp_path / name
    path.write_text(data)
    run = run_cli("analyze", path, "-p", "fifo:8", "--json")
    assert run.code == 0 and json.loads(run.out)["triangles"] == 2
    assert run.err_lines == [f"meshopt-batch: warning: {path}: the file ends without a line end; its last "
                             "number may have been cut"]


# ----------------------------------------------------------------------------- temporary and output files
def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_stale_temporaries_of_dead_writers_are_removed_live_ones_kept(tmp_path):
    target = tmp_path / "out.ply"
    dead = tmp_path / f".out.ply{TEMP_MARK}{_dead_pid()}-abc.tmp"
    old_style = tmp_path / f".out.ply{TEMP_MARK}x1y2.tmp"
    live = tmp_path / f".out.ply{TEMP_MARK}{os.getppid()}-def.tmp"
    other = tmp_path / f".other.ply{TEMP_MARK}1-ghi.tmp"
    for p in (dead, old_style, live, other):
        p.write_bytes(b"partial")
    mesh = save_mesh(quad_mesh(), tmp_path / "m.obj")
    run = run_cli("optimize", mesh, "-o", target, "-m", "tipsify", "-p", "fifo:8")
    assert run.code == 0, run.err
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["m.obj", "out.ply", live.name, other.name])


def test_kill_inside_the_write_window_leaves_one_temporary_the_next_write_removes(tmp_path):
    target = tmp_path / "big.bin"
    code = ("import sys, time; from meshopt_batch.support.files import atomic_path\n"
            "with atomic_path(sys.argv[1]) as tmp:\n"
            "    tmp.write_bytes(b'x' * 1000); print('in', flush=True); time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(target)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "in"
    proc.kill()
    proc.wait()
    left = [p.name for p in tmp_path.iterdir()]
    assert len(left) == 1 and left[0].startswith(f".big.bin{TEMP_MARK}{proc.pid}-") and left[0].endswith(".tmp")
    atomic_write(target, b"whole")
    assert [p.name for p in tmp_path.iterdir()] == ["big.bin"] and target.read_bytes() == b"whole"


def test_stale_image_staging_folders_are_removed(tmp_path):
    images = tmp_path / "img"
    images.mkdir()
    stale = images / f"{TEMP_MARK}{_dead_pid()}-xyz.tmp"
    stale.mkdir()
    (stale / "baseline_0000.png").write_bytes(b"partial")
    src = write_json(tmp_path / "s.json", SCENE)
    run = run_cli("simulate", src, "-n", "1", "--width", "16", "--height", "16", "--no-progress", "--images", images)
    assert run.code == 0, run.err
    assert sorted(p.name for p in images.iterdir()) == ["baseline_0000.png"]
    staging = staging_directory(images)
    assert staging.name.startswith(f"{TEMP_MARK}{os.getpid()}-") and staging.parent == images


@pytest.mark.parametrize("mask", [0o022, 0o002, 0o077])
def test_every_output_gets_the_usual_permissions(tmp_path, mask):
    mesh = save_mesh(quad_mesh(), tmp_path / "m.obj")
    scene = write_json(tmp_path / "s.json", SCENE)
    old = os.umask(mask)
    try:
        runs = [run_cli("compare", mesh, "-q", "-p", "fifo:8", "-m", "tipsify", "--csv", tmp_path / "c.csv"),
                run_cli("simulate", scene, "-n", "1", "--width", "16", "--height", "16", "--no-progress",
                        "--csv", tmp_path / "f.csv"),
                run_cli("optimize", mesh, "-o", tmp_path / "o.glb", "-m", "tipsify"),
                run_cli("meshlets", mesh, "-o", tmp_path / "o.npz")]
        with atomic_path(tmp_path / "profile.json") as tmp:      # what probe --save-profile writes through
            tmp.write_text("{}")
    finally:
        os.umask(old)
    assert [r.code for r in runs] == [0, 0, 0, 0], [r.err for r in runs]
    for name in ("c.csv", "f.csv", "o.glb", "o.npz", "profile.json"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o666 & ~mask, name


def test_output_through_a_symlink_writes_its_target(tmp_path):
    mesh = save_mesh(quad_mesh(), tmp_path / "m.obj")
    (tmp_path / "real.ply").write_bytes(b"old")
    (tmp_path / "link.ply").symlink_to("real.ply")
    run = run_cli("optimize", mesh, "-o", tmp_path / "link.ply", "-m", "tipsify")
    assert run.code == 0, run.err
    assert (tmp_path / "link.ply").is_symlink() and os.readlink(tmp_path / "link.ply") == "real.ply"
    assert load_mesh(tmp_path / "real.ply").triangle_count == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.ply", "m.obj", "real.ply"]


def test_output_equal_to_the_input_is_replaced_and_said(tmp_path):
    src = save_mesh(quad_mesh(), tmp_path / "q.ply")
    before = src.stat().st_mtime_ns
    time.sleep(0.01)
    run = run_cli("optimize", src, "-o", src, "-m", "tipsify", "-p", "fifo:8", "--json")
    assert run.code == 0
    assert run.err_lines == [f"meshopt-batch: note: -o {src} is the input file: it was replaced atomically"]
    assert json.loads(run.out)["output"] == str(src) and src.stat().st_mtime_ns > before
    assert load_mesh(src).triangle_count == 2
    assert [p.name for p in tmp_path.iterdir()] == ["q.ply"]


# ----------------------------------------------------------------------------- output folders
def test_an_output_folder_that_cannot_be_one_is_refused_before_any_work(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("in the way")
    assert one_error(run_cli("simulate", "sprites-2d", "-n", "1", "--images", blocker)) == (
        f"--images {blocker}: {blocker} exists and is not a folder")
    assert one_error(run_cli("report", "--scope", "quick", "--out", blocker / "report")) == (
        f"--out {blocker / 'report'}: {blocker} exists and is not a folder")
    assert blocker.read_text() == "in the way"
