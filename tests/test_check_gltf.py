"""``meshopt-batch check`` on the glTF sample assets (../shared/gltf) against ``optimize DIR``.

One ``optimize DIR -o OUT`` run (``-p nvidia_gl``, so the module takes seconds; the portable
target is judged the same way) is the reference: ``check DIR`` must name exactly the files
whose manifest entry shows ``optimize`` improving them by more than 1%, with the manifest's
own figures; ``check OUT --baseline OUT/manifest.jsonl`` must hold; a primitive shuffled or
removed in a copy of OUT, and a budget rule below a file's triangles, must each be caught.
The JUnit file is read back with junitparser.
"""

import json
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest
from junitparser import Error, Failure, JUnitXml

import meshes
from meshopt_batch import predict
from meshopt_batch_app.cli import main
from meshopt_batch_app.library.discovery import discover

SHARED_GLTF = meshes.shared_meshes_dir().parent / "gltf"
PROFILE = ["-p", "nvidia_gl"]
BRAIN = "BrainStem/BrainStem.glb"

pytestmark = pytest.mark.skipif(not (SHARED_GLTF / "BrainStem").is_dir(), reason="../shared/gltf is not here")


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def read_glb(path: Path) -> tuple[dict, bytearray, int]:
    """(JSON, the file's bytes, offset of the BIN chunk's data)."""
    data = bytearray(path.read_bytes())
    json_length = struct.unpack_from("<I", data, 12)[0]
    return json.loads(data[20:20 + json_length]), data, 20 + json_length + 8


def write_glb(path: Path, doc: dict, data: bytearray, bin_at: int) -> None:
    text = json.dumps(doc).encode()
    text += b" " * (-len(text) % 4)
    body = data[bin_at - 8:]
    out = struct.pack("<4sII", b"glTF", 2, 12 + 8 + len(text) + len(body)) + struct.pack("<II", len(text), 0x4E4F534A)
    path.write_bytes(out + text + body)


def primitive_triangles(doc: dict, data: bytearray, bin_at: int, mesh: int, prim: int):
    """(triangles view into ``data``, vertex count) of a plain indexed triangle-list primitive."""
    p = doc["meshes"][mesh]["primitives"][prim]
    acc = doc["accessors"][p["indices"]]
    view = doc["bufferViews"][acc["bufferView"]]
    dtype = {5121: np.uint8, 5123: np.uint16, 5125: np.uint32}[acc["componentType"]]
    start = bin_at + view.get("byteOffset", 0) + acc.get("byteOffset", 0)
    tris = np.frombuffer(data, dtype, acc["count"], start).reshape(-1, 3)
    return tris, start, doc["accessors"][p["attributes"]["POSITION"]]["count"]


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    """A copy of ../shared/gltf, its ``optimize DIR -o OUT`` output, and a cache for the module."""
    root = tmp_path_factory.mktemp("check_gltf")
    lib, out = root / "lib", root / "out"
    shutil.copytree(SHARED_GLTF, lib)
    assert main(["optimize", str(lib), "-o", str(out), *PROFILE, "-j", "1", "--json"]) == 0
    return lib, out, root / "cache"


def test_check_names_exactly_the_files_optimize_improves_by_more_than_the_slack(library, capsys):
    lib, out, cache = library
    code, text, _ = run(capsys, "check", lib, *PROFILE, "--json", "-j", "1", "--cache", cache)
    report = json.loads(text)
    assert code == 1
    manifest = {e["path"]: e for e in map(json.loads, (out / "manifest.jsonl").read_text().splitlines())}
    improved = {f"{lib}/{p}" for p, e in manifest.items()
                if any(pair["before"] > 1.01 * pair["after"] for pair in e.get("invocations", {}).values())}
    named = {v["file"] for v in report["violations"] if v["kind"] == "unoptimized" and not v["primitive"]}
    assert named == improved and len(named) >= 5
    assert {f["file"] for f in report["files"]} == {f"{lib}/{f.path}" for f in discover(lib)}
    for f in report["files"]:   # the same worker, the same options: the manifest's figures
        entry = manifest[f["file"].removeprefix(f"{lib}/")]
        if entry["status"] == "passed-through":
            assert f["profiles"] == {} and f["status"] == "passed-through"
            continue
        pair = entry["invocations"]["nvidia_gl"]
        assert (f["profiles"]["nvidia_gl"]["invocations"], f["profiles"]["nvidia_gl"]["reachable"]) == \
            (pair["before"], pair["after"])


def test_the_optimized_library_holds_against_its_manifest_and_junit_has_a_case_per_file(library, capsys, tmp_path):
    lib, out, cache = library
    junit = tmp_path / "report.xml"
    code, text, err = run(capsys, "check", out, *PROFILE, "--baseline", out / "manifest.jsonl", "-j", "1",
                          "--cache", tmp_path / "cache", "--junit", junit)
    assert (code, err) == (0, ""), text
    assert text.splitlines()[-1] == "checked 22 file(s), target nvidia_gl, slack 0.01: everything holds"
    # every file optimize wrote is vouched for by the manifest; the one it passed through (lines only) is judged
    assert text.splitlines()[-2].endswith("; 21 known as optimize's own output from the baseline")
    xml = JUnitXml.fromfile(str(junit))
    suites = list(xml)
    assert len(suites) == 1 and (suites[0].tests, suites[0].failures, suites[0].errors) == (22, 0, 0)
    assert sorted(case.name for case in suites[0]) == sorted(f"{out}/{f.path}" for f in discover(out))
    assert all(case.is_passed for case in suites[0])


def test_a_shuffled_primitive_regresses_naming_file_primitive_profile_and_ratio(library, capsys, tmp_path):
    lib, out, cache = library
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    doc, data, bin_at = read_glb(copy / BRAIN)
    tris, start, count = primitive_triangles(doc, data, bin_at, 0, 23)
    then = predict(tris.astype(np.int64), count, profile="nvidia_gl").invocations
    mixed = tris[np.random.default_rng(3).permutation(len(tris))]
    now = predict(mixed.astype(np.int64), count, profile="nvidia_gl").invocations
    data[start:start + mixed.nbytes] = mixed.tobytes()
    (copy / BRAIN).write_bytes(data)
    junit = tmp_path / "report.xml"
    argv = ["check", copy, *PROFILE, "--baseline", copy / "manifest.jsonl", "-j", "1", "--cache", cache]
    code, text, _ = run(capsys, *argv, "--junit", junit)
    assert code == 1
    label = "mesh 0 primitive 23 (Figure_2_geometry[23])"
    row = next(line for line in text.splitlines() if line.startswith("regression") and label in line)
    assert f"{copy}/{BRAIN}" in row and "nvidia_gl" in row and f"ASR {now / len(tris):.3f} ({now / then:.4f}x " \
        "baseline)" in row
    code, text, _ = run(capsys, *argv, "--json")
    report = json.loads(text)
    prim = {v["kind"]: v for v in report["violations"] if v["primitive"]}
    assert {(v["kind"], v["file"], v["primitive"], v["profile"]) for v in prim.values()} == \
        {(kind, f"{copy}/{BRAIN}", label, "nvidia_gl") for kind in ("unoptimized", "regression")}
    assert prim["regression"]["ratio"] == pytest.approx(now / then, rel=1e-12)
    suite = next(iter(JUnitXml.fromfile(str(junit))))
    failed = [case for case in suite if not case.is_passed]
    assert (suite.tests, suite.failures, [case.name for case in failed]) == (22, 1, [f"{copy}/{BRAIN}"])
    assert isinstance(failed[0].result[0], Failure) and label in failed[0].result[0].text


def test_a_removed_primitive_is_named_and_the_others_still_pair(library, capsys, tmp_path):
    lib, out, cache = library
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    doc, data, bin_at = read_glb(copy / BRAIN)
    del doc["meshes"][0]["primitives"][30]
    write_glb(copy / BRAIN, doc, data, bin_at)
    code, text, _ = run(capsys, "check", copy, *PROFILE, "--baseline", copy / "manifest.jsonl", "-j", "1", "--json",
                        "--cache", cache)
    report = json.loads(text)
    assert code == 1
    assert [(v["kind"], v["primitive"]) for v in report["violations"]] == \
        [("removed", "mesh 0 primitive 30 (Figure_2_geometry[30])")]
    assert report["violations"][0]["fix"].startswith("accept: meshopt-batch check ")


def test_a_budget_rule_below_a_files_triangles_fails_naming_the_rule(library, capsys, tmp_path):
    lib, out, cache = library
    budget = out / "budget.toml"
    budget.write_text('[[rule]]\nglob = "BrainStem/**"\nmax_triangles = 61665\n\n[[rule]]\nglob = "**/*.glb"\n'
                      'max_bytes = "64M"\n')
    junit = tmp_path / "report.xml"
    code, text, _ = run(capsys, "check", out, *PROFILE, "--budget", budget, "-j", "1", "--cache", cache,
                        "--junit", junit)
    budget.unlink()
    assert code == 1
    rows = [line for line in text.splitlines() if line.startswith("budget")]
    assert len(rows) == 1 and f"{out}/{BRAIN}" in rows[0] and "61666 triangles" in rows[0]
    assert "61665 rule 1 (BrainStem/**)" in rows[0]
    suite = next(iter(JUnitXml.fromfile(str(junit))))
    assert (suite.tests, suite.failures, suite.errors) == (22, 1, 0)
    assert not any(isinstance(r, Error) for case in suite for r in case.result)
