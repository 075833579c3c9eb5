"""``meshopt-batch check``: the unoptimized rule, the cache, baselines and budgets on small meshes.

The figures a check reports are compared with what the ``optimize`` command itself prints for
the same file (its ``--json`` before/after per profile), and with :func:`meshopt_batch.predict`
run here on the file's triangles.  The glTF sample assets are judged in ``test_check_gltf.py``,
the pre-commit hook in ``test_check_precommit.py``.
"""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import meshes
from meshopt_batch import load_mesh, predict
from meshopt_batch.io import save_mesh
from meshopt_batch_app.check.budget import glob_pattern
from meshopt_batch_app.cli import main

PROFILE = ["-p", "nvidia_gl"]


def shuffled(mesh, seed=0):
    rng = np.random.default_rng(seed)
    return mesh.with_triangles(np.asarray(mesh.triangles)[rng.permutation(mesh.triangle_count)])


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def check_json(capsys, *argv) -> tuple[int, dict]:
    code, out, err = run(capsys, "check", *argv, "--json", "-j", "1")
    return code, json.loads(out)


@pytest.fixture
def assets(tmp_path):
    """A folder of a shuffled torus (PLY), a shuffled sphere (OBJ) and an optimized torus."""
    root = tmp_path / "assets"
    (root / "characters").mkdir(parents=True)
    (root / "props").mkdir()
    save_mesh(shuffled(meshes.torus(40, 20)), root / "characters" / "torus.ply")
    save_mesh(shuffled(meshes.uv_sphere(12, 24), 1), root / "props" / "sphere.obj")
    assert main(["optimize", str(root / "characters" / "torus.ply"), "-o", str(root / "props" / "ring.ply"),
                 *PROFILE, "--json"]) == 0
    return root


def optimize_figures(capsys, path: Path, tmp_path: Path, profile: list[str]) -> dict:
    """``optimize PATH --json`` into a scratch file: its per-profile before/after."""
    code, out, _ = run(capsys, "optimize", path, "-o", tmp_path / ("scratch" + path.suffix), *profile, "--json")
    assert code == 0
    return json.loads(out)["profiles"]


# ---------------------------------------------------------------------------- unoptimized
def test_an_unoptimized_file_is_named_with_the_figures_optimize_reaches(assets, capsys, tmp_path):
    torus = assets / "characters" / "torus.ply"
    code, out = check_json(capsys, torus, *PROFILE, "--cache", tmp_path / "cache")
    assert code == 1
    pairs = optimize_figures(capsys, torus, tmp_path, PROFILE)
    before, after = pairs["nvidia_gl"]["before"], pairs["nvidia_gl"]["after"]
    assert before > 1.01 * after
    mesh = load_mesh(torus)
    assert predict(mesh.triangles, mesh.vertex_count, profile="nvidia_gl").invocations == before
    file_rows = [v for v in out["violations"] if v["primitive"] == ""]
    assert [(v["kind"], v["file"], v["profile"]) for v in file_rows] == [("unoptimized", str(torus), "nvidia_gl")]
    v = file_rows[0]
    assert v["ratio"] == before / after
    assert v["figure"] == before / mesh.triangle_count
    assert v["limit"] == pytest.approx(after / mesh.triangle_count * 1.01)
    assert v["fix"] == f"meshopt-batch optimize {torus} -o {torus} -p nvidia_gl"
    assert out["files"][0]["profiles"]["nvidia_gl"] == {"invocations": before, "asr": before / mesh.triangle_count,
                                                        "reachable": after}
    assert out["exit"] == 1 and out["reachable"]["computed"] == 1 and out["reachable"]["cached"] == 0


def test_the_table_says_how_the_reachable_figure_was_found(assets, capsys, tmp_path):
    torus = assets / "characters" / "torus.ply"
    code, out, err = run(capsys, "check", torus, *PROFILE, "--cache", tmp_path / "cache")
    assert (code, err) == (1, "")
    lines = out.splitlines()
    assert lines[0].split()[:7] == ["CHECK", "FILE", "PRIMITIVE", "PROFILE", "FIGURE", "LIMIT", "FIX"]
    assert lines[1].split()[:4] == ["unoptimized", str(torus), "-", "nvidia_gl"]
    assert "reachable figures: what optimize reaches (method batch, target nvidia_gl): computed for 1 file(s)" in out
    assert lines[-1] == "checked 1 file(s), target nvidia_gl, slack 0.01: 1 file(s) do not hold (unoptimized: 1)"
    code, out, _ = run(capsys, "check", torus, *PROFILE, "--cache", tmp_path / "cache")
    assert code == 1 and f"1 from the cache ({tmp_path / 'cache'})" in out


def test_running_the_fix_check_names_makes_the_file_hold_on_every_profile_of_portable(assets, capsys, tmp_path):
    """check keeps optimize's output of each file it judged: after the suggested fix the file is
    recognised as optimize's own output and holds, without running optimize again."""
    torus = assets / "characters" / "torus.ply"
    cache = ["--cache", tmp_path / "cache"]
    code, out = check_json(capsys, torus, *cache)
    assert code == 1
    fix = {v["fix"] for v in out["violations"]}
    assert fix == {f"meshopt-batch optimize {torus} -o {torus}"}
    code, printed, _ = run(capsys, *fix.pop().split()[1:], "--json")
    assert code == 0
    after = json.loads(printed)["profiles"]
    code, out = check_json(capsys, torus, *cache)
    assert (code, out["violations"], out["reachable"]["computed"], out["reachable"]["outputs"]) == (0, [], 0, 1)
    assert out["files"][0]["optimize_output"] == "cache"
    assert {name: (fig["invocations"], fig["reachable"]) for name, fig in out["files"][0]["profiles"].items()} == \
        {name: (pair["after"], pair["after"]) for name, pair in after.items()}
    assert "1 from the cache" in out["reachable"]["how"] and "1 of them known as optimize's own output" in \
        out["reachable"]["how"]
    code, out = check_json(capsys, torus, "--no-cache")   # unknown to check: optimize runs on it again
    assert out["files"][0]["optimize_output"] is None and out["reachable"]["computed"] == 1
    for fig in out["files"][0]["profiles"].values():
        assert fig["reachable"] <= fig["invocations"]


def test_an_optimize_manifest_vouches_for_its_outputs_under_its_own_options_only(assets, capsys, tmp_path):
    out_dir = tmp_path / "out"
    assert main(["optimize", str(assets), "-o", str(out_dir), *PROFILE, "-j", "1", "--json"]) == 0
    capsys.readouterr()
    base = ["--baseline", out_dir / "manifest.jsonl", "--no-cache"]
    code, out = check_json(capsys, out_dir, *PROFILE, *base)
    assert (code, out["reachable"]["vouched"], out["reachable"]["computed"]) == (0, 3, 0)
    assert [f["optimize_output"] for f in out["files"]] == ["baseline"] * 3
    code, out = check_json(capsys, out_dir, "-p", "amd", *base)   # written for nvidia_gl: judged anew for amd
    assert (out["reachable"]["vouched"], out["reachable"]["computed"]) == (0, 3)
    code, out = check_json(capsys, out_dir, *PROFILE, "--cache", tmp_path / "cache", *base[:2])
    assert (out["reachable"]["vouched"], out["reachable"]["cached"]) == (3, 0)
    code, out = check_json(capsys, out_dir, *PROFILE, "--cache", tmp_path / "cache")   # kept: no baseline needed
    assert (code, out["reachable"]["cached"], out["reachable"]["outputs"], out["reachable"]["computed"]) == (0, 3, 3, 0)
    mesh = load_mesh(out_dir / "props" / "sphere.obj")
    save_mesh(shuffled(mesh, 4), out_dir / "props" / "sphere.obj")
    code, out = check_json(capsys, out_dir, *PROFILE, *base)
    assert (code, out["reachable"]["vouched"], out["reachable"]["computed"]) == (1, 2, 1)
    assert {(v["kind"], Path(v["file"]).name) for v in out["violations"]} == \
        {("unoptimized", "sphere.obj"), ("regression", "sphere.obj")}


def test_a_slack_lets_a_file_through_and_a_fast_estimate_says_so(assets, capsys, tmp_path):
    torus = assets / "characters" / "torus.ply"
    pairs = optimize_figures(capsys, torus, tmp_path, PROFILE)
    ratio = pairs["nvidia_gl"]["before"] / pairs["nvidia_gl"]["after"]
    code, _ = check_json(capsys, torus, *PROFILE, "--no-cache", "--slack", f"{ratio - 1 + 1e-6}")
    assert code == 0
    code, out, _ = run(capsys, "check", torus, "--no-cache", "--effort", "0", "-j", "1")
    assert code == 1 and "a fast estimate: optimize --effort 0" in out


# ---------------------------------------------------------------------------- the cache
def test_an_unchanged_folder_is_judged_from_the_cache_and_a_changed_file_is_redone(assets, capsys, tmp_path):
    cache = tmp_path / "cache"
    code, first = check_json(capsys, assets, *PROFILE, "--cache", cache)
    assert code == 1 and (first["reachable"]["computed"], first["reachable"]["cached"]) == (3, 0)
    code, again = check_json(capsys, assets, *PROFILE, "--cache", cache)
    assert (code, again["reachable"]["computed"], again["reachable"]["cached"]) == (1, 0, 3)
    assert again["violations"] == first["violations"]
    assert [f["profiles"] for f in again["files"]] == [f["profiles"] for f in first["files"]]
    save_mesh(shuffled(meshes.uv_sphere(12, 24), 2), assets / "props" / "sphere.obj")
    code, changed = check_json(capsys, assets, *PROFILE, "--cache", cache)
    assert (changed["reachable"]["computed"], changed["reachable"]["cached"]) == (1, 2)
    assert [f["cached"] for f in changed["files"]] == [True, True, False]  # torus, ring, sphere


def test_copies_of_one_asset_are_computed_once(assets, capsys, tmp_path):
    """Keyed as the library runner keys files (the output's name is part of the key)."""
    shutil.copy(assets / "characters" / "torus.ply", assets / "props" / "torus.ply")
    code, out = check_json(capsys, assets, *PROFILE, "--no-cache")
    assert code == 1 and out["reachable"]["computed"] == 3 and len(out["files"]) == 4
    rows = {v["file"]: v["ratio"] for v in out["violations"] if v["primitive"] == ""}
    assert rows[str(assets / "characters" / "torus.ply")] == rows[str(assets / "props" / "torus.ply")]


# ---------------------------------------------------------------------------- baselines
def test_a_written_baseline_catches_a_shuffled_a_removed_and_an_added_file(assets, capsys, tmp_path):
    base = assets / "baseline.jsonl"
    cache = ["--cache", tmp_path / "cache"]
    ring = assets / "props" / "ring.ply"
    code, out, _ = run(capsys, "check", ring, *PROFILE, *cache, "--write-baseline", base)
    assert code == 0 and f"wrote baseline {base}" in out
    code, out = check_json(capsys, ring, *PROFILE, *cache, "--baseline", base)
    assert (code, out["violations"]) == (0, [])

    mesh = load_mesh(ring)
    save_mesh(shuffled(mesh, 7), ring)
    now = predict(shuffled(mesh, 7).triangles, mesh.vertex_count, profile="nvidia_gl").invocations
    then = predict(mesh.triangles, mesh.vertex_count, profile="nvidia_gl").invocations
    code, out = check_json(capsys, ring, *PROFILE, *cache, "--baseline", base)
    assert code == 1
    regressed = [v for v in out["violations"] if v["kind"] == "regression"]
    assert {(v["primitive"], v["profile"]) for v in regressed} == {("", "nvidia_gl"), ("ring", "nvidia_gl")}
    assert regressed[0]["ratio"] == pytest.approx(now / then, rel=1e-12)
    assert regressed[0]["fix"] == f"meshopt-batch optimize {ring} -o {ring} -p nvidia_gl"

    code, out, _ = run(capsys, "check", assets / "props", *PROFILE, *cache, "--write-baseline", base)
    ring.unlink()
    save_mesh(meshes.icosphere(1), assets / "props" / "new.ply")
    code, out = check_json(capsys, assets / "props", *PROFILE, *cache, "--baseline", base)
    assert code == 1
    kinds = {(v["kind"], Path(v["file"]).name) for v in out["violations"] if v["kind"] in ("added", "removed")}
    assert kinds == {("removed", "ring.ply"), ("added", "new.ply")}


def test_write_baseline_keeps_the_entries_of_files_not_checked(assets, capsys, tmp_path):
    base = assets / "baseline.jsonl"
    cache = ["--cache", tmp_path / "cache"]
    run(capsys, "check", assets, *PROFILE, *cache, "--write-baseline", base)
    paths = [json.loads(line)["path"] for line in base.read_text().splitlines()]
    assert paths == ["characters/torus.ply", "props/ring.ply", "props/sphere.obj"]
    run(capsys, "check", assets / "props" / "ring.ply", *PROFILE, *cache, "--write-baseline", base)
    assert [json.loads(line)["path"] for line in base.read_text().splitlines()] == paths
    (assets / "props" / "sphere.obj").unlink()
    run(capsys, "check", assets / "props", *PROFILE, *cache, "--write-baseline", base)
    assert [json.loads(line)["path"] for line in base.read_text().splitlines()] == paths[:2]


# ---------------------------------------------------------------------------- budgets
def test_a_budget_rule_below_a_files_triangles_names_the_rule(assets, capsys, tmp_path):
    budget = assets / "budget.toml"
    budget.write_text('[[rule]]\nglob = "characters/**"\nname = "heroes"\nmax_triangles = 1599\n\n'
                      '[[rule]]\nglob = "**/*.ply"\nmax_asr = { nvidia_gl = 0.5 }\nmax_bytes = "1M"\n')
    ring = assets / "props" / "ring.ply"
    torus = assets / "characters" / "torus.ply"
    code, out = check_json(capsys, ring, torus, *PROFILE, "--no-cache", "--budget", budget)
    assert code == 1
    rows = [(v["file"], v["rule"], v["measure"], v["figure"], v["limit"]) for v in out["violations"]
            if v["kind"] == "budget"]
    ring_asr = load_mesh(ring)
    ring_asr = predict(ring_asr.triangles, ring_asr.vertex_count, profile="nvidia_gl").asr
    torus_asr = out["files"][1]["profiles"]["nvidia_gl"]["asr"]
    assert rows == [(str(ring), "rule 2 (**/*.ply)", "asr", ring_asr, 0.5),
                    (str(torus), "rule 1 (heroes)", "triangles", 1600, 1599),
                    (str(torus), "rule 2 (**/*.ply)", "asr", torus_asr, 0.5)]
    code, out, _ = run(capsys, "check", torus, *PROFILE, "--no-cache", "--budget", budget, "--slack", "1")
    assert code == 1
    row = next(line for line in out.splitlines() if line.startswith("budget") and "triangles" in line)
    assert "1600 triangles" in row and "1599 rule 1 (heroes)" in row


def test_budget_globs_match_whole_paths():
    cases = {"characters/**": (["characters/a.glb", "characters/x/y/b.ply"], ["props/a.glb", "characters"]),
             "**/*.glb": (["a.glb", "x/y/a.glb"], ["a.gltf", "x/a.glb.bak"]),
             "*.obj": (["a.obj"], ["x/a.obj"]),
             "props/?.ply": (["props/a.ply"], ["props/ab.ply", "props/a/b.ply"]),
             "lod[0-2]/*": (["lod1/a.glb"], ["lod3/a.glb"]),
             "[!x]*/a.glb": (["b/a.glb"], ["x/a.glb"]),
             "a+b (1).glb": (["a+b (1).glb"], ["aab (1).glb"])}
    for glob, (yes, no) in cases.items():
        pattern = glob_pattern(glob)
        assert [p for p in yes if not pattern.match(p)] == [], glob
        assert [p for p in no if pattern.match(p)] == [], glob


@pytest.mark.parametrize("text, message", [
    ('[[rule]]\nglob = "a/**"\nmax_triangles = \n', "not valid TOML: Invalid value (at line 3, column 17)"),
    ('[[rule]]\nglob = "a/**"\nmax_tris = 5\n', "rule 1 (a/**): unknown key 'max_tris' (known: glob, name, "),
    ('[[rule]]\nmax_triangles = 5\n', "rule 1: needs glob = \"PATTERN\""),
    ('[[rule]]\nglob = "a/**"\n', "rule 1 (a/**): no limit (give one of max_triangles, "),
    ('[[rule]]\nglob = "a"\nmax_triangles = 5\n[[rule]]\nglob = "b"\nmax_vertices = -3\n',
     "rule 2 (b): max_vertices must be a positive integer, not -3"),
    ('[[rule]]\nglob = "a"\nmax_bytes = "lots"\n', "rule 1 (a): max_bytes must be a positive integer or a size"),
    ('[[rule]]\nglob = "a"\nmax_asr = { adreno = 0.7 }\n', "rule 1 (a): max_asr names profile 'adreno', not one of "
     "the target's (nvidia_gl; -p sets the target)"),
    ('[[rule]]\nglob = "a"\nmax_acmr = true\n', "rule 1 (a): max_acmr must be a positive number"),
    ('[rule]\nglob = "a"\nmax_triangles = 5\n', "'rule' must be an array of tables: write [[rule]], not [rule]"),
    ('limit = 5\n', "unknown top-level key 'limit'"),
])
def test_a_malformed_budget_file_is_one_line_and_exit_2(assets, capsys, text, message):
    budget = assets / "budget.toml"
    budget.write_text(text)
    code, out, err = run(capsys, "check", assets / "props" / "ring.ply", *PROFILE, "--no-cache", "--budget", budget)
    assert (code, out) == (2, "")
    assert err.startswith(f"meshopt-batch: error: --budget {budget}: ") and message in err
    assert err.count("\n") == 1


# ---------------------------------------------------------------------------- bad input
def test_bad_input_is_one_line_and_exit_2(assets, capsys, tmp_path):
    ring = assets / "props" / "ring.ply"
    (assets / "notes.txt").write_text("not a mesh")
    (assets / "broken.glb").write_bytes(b"glTF\x02\x00\x00\x00garbage")
    bad_baseline = assets / "bad.jsonl"
    bad_baseline.write_text('{"path": "props/ring.ply", "status": "ok"}\nnot json\n')
    cases = [
        (["check", assets / "absent.glb"], f"{assets / 'absent.glb'}: no such file or folder"),
        (["check", assets / "notes.txt"], f"{assets / 'notes.txt'}: not a mesh file"),
        (["check", ring, "--slack", "-0.5"], "--slack -0.5: expected a fraction of at least 0"),
        (["check", ring, "--baseline", bad_baseline], f"--baseline {bad_baseline}: line 2 is not a manifest record"),
        (["check", ring, "--baseline", assets / "none.jsonl"], f"--baseline {assets / 'none.jsonl'}: cannot read"),
        (["check", ring, "--junit", assets / "no" / "such" / "r.xml"], "--junit"),
        (["check", ring, "-p", "nvidia_gl", "--effort", "1"], "--effort applies to a target of several profiles"),
    ]
    for argv, message in cases:
        code, out, err = run(capsys, *argv, "--no-cache")
        assert (code, out) == (2, ""), argv
        assert err.startswith("meshopt-batch: error: ") and message in err and err.count("\n") == 1, (argv, err)
    code, out, err = run(capsys, "check", assets / "broken.glb", ring, *PROFILE, "--no-cache", "-j", "1",
                         "--junit", tmp_path / "r.xml")
    assert code == 2 and err.startswith(f"meshopt-batch: {assets / 'broken.glb'}: ") and err.count("\n") == 1
    assert "checked 2 file(s)" in out and "1 could not be read" in out
    assert "<error" in (tmp_path / "r.xml").read_text()


def test_check_writes_nothing_beside_the_assets(assets, capsys, tmp_path):
    before = sorted(p.relative_to(assets) for p in assets.rglob("*"))
    code, _ = check_json(capsys, assets, *PROFILE, "--cache", tmp_path / "cache")
    assert code == 1
    assert sorted(p.relative_to(assets) for p in assets.rglob("*")) == before


# ---------------------------------------------------------------------------- manifest records
def test_manifest_entries_with_and_without_primitives_are_valid():
    from meshopt_batch_app.library.manifest import valid_entry

    entry = {"path": "a.glb", "status": "ok", "invocations": {"amd": {"before": 9, "after": 7}}}
    prim = {"mesh": 0, "primitive": 1, "name": "body", "triangles": 4,
            "invocations": {"amd": {"before": 9, "after": 7}}}
    assert valid_entry(entry) and valid_entry({**entry, "primitives": [prim]})
    assert not valid_entry({**entry, "primitives": [{**prim, "triangles": -1}]})
    assert not valid_entry({**entry, "primitives": [{**prim, "invocations": {"amd": {"before": 9}}}]})
    assert not valid_entry({**entry, "primitives": {"0": prim}})


def test_primitives_pair_by_mesh_name_and_triangles():
    from meshopt_batch_app.check.figures import PrimitiveFigures, match_primitives

    def prims(*sig):
        return [PrimitiveFigures(f"{name} #{i}", (name, tris), tris, {}) for i, (name, tris) in enumerate(sig)]

    old = prims(("body", 10), ("body", 20), ("body", 30), ("hat", 5))
    pairs, removed, added = match_primitives(old, prims(("body", 10), ("body", 30), ("hat", 5)))
    assert ([p.label for p in removed], added, len(pairs)) == (["body #1"], [], 3)
    pairs, removed, added = match_primitives(old, prims(("body", 10), ("body", 21), ("body", 30), ("hat", 5)))
    assert (removed, added, [(a.label, b.triangles) for a, b in pairs][1]) == ([], [], ("body #1", 21))
    pairs, removed, added = match_primitives(old, prims(("body", 10), ("body", 20), ("body", 30), ("hat", 5),
                                                        ("cape", 8)))
    assert (removed, [p.label for p in added]) == ([], ["cape #4"])


def test_a_baseline_without_primitives_judges_the_file(assets, capsys, tmp_path):
    base = assets / "baseline.jsonl"
    ring = assets / "props" / "ring.ply"
    cache = ["--cache", tmp_path / "cache"]
    run(capsys, "check", ring, *PROFILE, *cache, "--write-baseline", base)
    entries = [json.loads(line) for line in base.read_text().splitlines()]
    base.write_text("".join(json.dumps({k: v for k, v in e.items() if k != "primitives"}) + "\n" for e in entries))
    save_mesh(shuffled(load_mesh(ring), 7), ring)
    code, out = check_json(capsys, ring, *PROFILE, *cache, "--baseline", base)
    assert code == 1
    assert {(v["kind"], v["primitive"]) for v in out["violations"] if v["kind"] != "unoptimized"} == \
        {("regression", "")}
