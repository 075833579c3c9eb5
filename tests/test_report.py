"""The report renders, with every section and every figure kind, in HTML and Markdown; the
examples run."""

import base64
import html
import importlib.util
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import pytest

from meshopt_batch.model.profiles import get_profile
from meshopt_batch_app.cli import main
from meshopt_batch_app.report.assets_section import default_assets_dir
from meshopt_batch_app.report.build import SECTION_ANCHORS
from meshopt_batch_app.report.gltf_tools import find_gltfpack

ROOT = Path(__file__).resolve().parent.parent
PNG = b"\x89PNG\r\n\x1a\n"


def _gl() -> bool:
    try:
        from gpu_probe.context import gl_available

        return gl_available()
    except ImportError:
        return False


def expected_figures() -> list[str]:
    names = ["mesh_batches", "technique_bars", "order_bars", "dsr_rate_map", "skip_map", "timelines",
             "mesh_meshlets"]
    if importlib.util.find_spec("meshopt_batch.evaluation.method_comparison") is not None:
        names.append("asr_bars")
    if _gl():
        names += ["probe_scatter", "probe_cache_sweep", "probe_staircases", "glcheck_bars"]
    return names


@pytest.fixture(scope="module")
def smoke_report(tmp_path_factory):
    """The report at the test scope: every section and figure kind, smallest inputs (with
    ``--json``, which shows no progress on stderr)."""
    out = tmp_path_factory.mktemp("report")
    import io
    from contextlib import redirect_stderr, redirect_stdout

    buf, err = io.StringIO(), io.StringIO()
    with redirect_stdout(buf), redirect_stderr(err):
        rc = main(["report", "--scope", "smoke", "--out", str(out), "--json"])
    assert rc == 0
    assert "report [" not in err.getvalue() and "\r" not in err.getvalue(), err.getvalue()
    return out, json.loads(buf.getvalue())


def test_report_sections_and_figures(smoke_report):
    out, summary = smoke_report
    html = (out / "index.html").read_text()
    md = (out / "report.md").read_text()
    assert summary["html"] == str(out / "index.html") and summary["scope"] == "smoke"
    for anchor in SECTION_ANCHORS:
        assert f'id="{anchor}"' in html, anchor
    headings = re.findall(r"^## (.+)$", md, flags=re.M)
    assert len(headings) == len(SECTION_ANCHORS)
    # every section has content in both twins
    for chunk in re.split(r"^## .+$", md, flags=re.M)[1:]:
        assert len(chunk.strip()) > 40
    for name in expected_figures():
        png = out / f"{name}.png"
        assert png.is_file() and png.stat().st_size > 2000, name
        assert png.read_bytes()[:8] == PNG
        assert f"![{name}]({name}.png)" in md, name
        m = re.search(rf'<img alt="{name}" src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
        assert m, name
        assert base64.b64decode(m.group(1)) == png.read_bytes()
    # every figure is read in a paragraph that states numbers
    for caption in re.findall(r"<figcaption>(.*?)</figcaption>", html, flags=re.S):
        assert re.search(r"\d", caption)
    # the tables are there and filled
    assert html.count("<table>") >= 6
    assert "| ---" not in md and md.count("|---|") >= 6
    # the page is self-contained: no external resources
    assert not re.search(r'src="(?!data:)', html)
    # the data behind the figures, as CSV
    for name in ("matrix.csv", "frames.csv") + (("compare.csv",) if "asr_bars" in expected_figures() else ()):
        assert str(out / name) in summary["data"]
        assert len((out / name).read_text().splitlines()) > 5
    # no partial files left behind
    assert not [p for p in out.iterdir() if p.name.startswith(".")]


def test_report_anchors_and_gl_table(smoke_report):
    out, _ = smoke_report
    md = (out / "report.md").read_text()
    for published in ("0.82", "0.88", "~0.81x", "~0.7x", "49%", "54%", "0.36"):
        assert published in md
    if _gl():
        section = md.split("\n## 6. ")[1].split("\n## 7. ")[0]
        assert "coverage diff. pixels" in section
        for scene in ("city-ordered", "city-unordered", "city-batched", "hud-over-3d", "low-frequency",
                      "sprites-2d"):
            assert f"| {scene} |" in section


def test_report_opens_with_the_verdict(smoke_report):
    """Issue 31: the Verdict comes before any table, speaks of the all-GPU target, and both
    twins carry the same sections in the same order."""
    out, _ = smoke_report
    md = (out / "report.md").read_text()
    page = (out / "index.html").read_text()
    assert re.findall(r"^## (.+)$", md, flags=re.M)[0] == "Verdict"
    assert md.index("## Verdict") < md.index("\n|")
    assert page.index('<h2 id="verdict">') < page.index("<table>")
    verdict = md.split("## Verdict")[1].split("\n## ")[0]
    assert "portable" in verdict and "meshoptimizer" in verdict and "| all at once (portable) |" in verdict
    md_titles = re.findall(r"^#{2,3} (.+)$", md, flags=re.M)
    html_titles = [html.unescape(t) for t in re.findall(r'<h[23] id="[^"]+">(.*?)</h[23]>', page)]
    assert md_titles == html_titles


def test_report_marks_best_cells_and_shows_real_gpus_and_assets(smoke_report):
    out, _ = smoke_report
    md = (out / "report.md").read_text()
    page = (out / "index.html").read_text()
    compare = md.split("\n## 1. ")[1].split("\n## ")[0]
    assert compare.index("**One order shipped to every GPU") < compare.index("Each row is the order")
    for chunk in compare.split("**ASR on the ")[1:]:
        assert re.search(r"\| \*\*\d\.\d{3}\*\* \|", chunk), "a best ASR is bold in every profile's table"
    assert page.count("<strong>") > 20 and "<details><summary>" in page
    real = md.split("\n## 3. ")[1].split("\n## ")[0]
    csv = pd.read_csv(ROOT / "results" / "nvidia_optimizers_2026-11-27.csv")      # the newest
    bunny = csv[(csv["mesh"] == "bunny") & (csv["method"] == "portable") & (csv["numbering"] == "first use")]
    assert "NVIDIA H100" in real and f"{bunny['measured_asr'].iloc[0]:.4f}" in real
    assets = md.split("\n## 2. ")[1].split("\n## ")[0]
    if default_assets_dir().is_dir() and find_gltfpack()[0]:
        assert "| gltfpack |" in assets and "| ours |" in assets


def test_report_compares_reordering_with_the_oracle(smoke_report):
    out, _ = smoke_report
    md = (out / "report.md").read_text()
    m = re.search(r"city-batched: baseline ([0-9.]+), VRO ([0-9.]+), EVR ([0-9.]+), oracle ([0-9.]+) "
                  r"\((EVR|VRO) closer to the oracle\)", md)
    assert m, "the reordering summary names city-batched"
    base, vro, evr, oracle = map(float, m.groups()[:4])
    assert oracle <= min(vro, evr) and max(vro, evr) <= base
    assert m.group(5) == ("EVR" if evr - oracle < vro - oracle else "VRO")


@pytest.fixture(scope="module")
def small_matrix():
    """Two scenes in the smoke scope's orders, two frames, plus a scene that does not exist: the
    matrix in this process and on two worker processes."""
    from dataclasses import replace

    from meshopt_batch_app.report.scope import SCOPES
    from meshopt_batch_app.report.simulate_section import run_simulations

    scope = replace(SCOPES["smoke"], scenes=("hud-over-3d", "sprites-2d", "no-such-scene"),
                    frames=2, overdraw_scenes=())
    return scope, run_simulations(scope, check_gl=False, workers=1), run_simulations(scope, check_gl=False, workers=2)


def test_simulate_matrix_on_worker_processes_equals_one_process(small_matrix):
    """The full and quick reports run the matrix on one worker process per core, each with its
    share of the raster threads: every figure, per frame, and every recorded map is the same
    as in one process (one cell made to fail stays one error in both)."""
    import numpy as np

    scope, one, two = small_matrix
    assert one["workers"] == 1 and two["workers"] == 2
    assert list(one["runs"]) == list(two["runs"]) and len(one["runs"]) == 2 * len(scope.orders)
    for key, run in one["runs"].items():
        assert run.per_frame.drop(columns=[c for c in run.per_frame if "second" in c]).equals(
            two["runs"][key].per_frame.drop(columns=[c for c in run.per_frame if "second" in c]))
    assert one["errors"] == two["errors"] and len(one["errors"]) == len(scope.orders)
    assert one["commands"] == two["commands"]
    for scene, maps in one["maps"].items():
        other = two["maps"][scene]
        assert maps["frame"] == other["frame"]
        assert all(np.array_equal(c, other["colour"][n]) for n, c in maps["colour"].items())
        for tech, frames in maps["requests"].items():
            for i, req in frames.items():
                assert all(np.array_equal(v, other["requests"][tech][i][k]) for k, v in req.items())


def test_first_order_figures_are_drawn_alike_before_the_other_orders_end(small_matrix):
    """The report draws the figures of the first order's runs while the workers still run the
    other orders: from those runs alone they are the same images and captions as from the whole
    matrix, and the section puts them in the same places."""
    from meshopt_batch_app.report.simulate_section import first_order_figures, simulate_section

    scope, data, _ = small_matrix
    first = scope.orders[0]
    partial = {**data, "runs": {k: r for k, r in data["runs"].items() if k[1] == first},
               "commands": [c for c in data["commands"] if not c.startswith("#")]}
    early, whole = first_order_figures(partial, scope), first_order_figures(data, scope)
    assert [f.name for f in early] == [f.name for f in whole] == ["technique_bars", "dsr_rate_map", "skip_map",
                                                                  "timelines"]
    assert [f.caption for f in early] == [f.caption for f in whole]
    assert [f.png_bytes() for f in early] == [f.png_bytes() for f in whole]
    drawn, _ = simulate_section(data, scope, drawn=early)
    own, _ = simulate_section(data, scope)
    assert [f.name for f in drawn.figures] == [f.name for f in own.figures] == [
        "technique_bars", "order_bars", "dsr_rate_map", "skip_map", "timelines"]
    assert [f.caption for f in drawn.figures] == [f.caption for f in own.figures]


def test_report_bad_arguments(tmp_path, capsys):
    assert main(["report", "--out", str(tmp_path / "r"), "--mesh", str(tmp_path / "absent.ply")]) == 2
    assert "absent.ply" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()
    assert main(["report", "--out", str(tmp_path / "r"), "--scene", "no-such-scene"]) == 2
    assert not (tmp_path / "r").exists()


def _example(script, *args, timeout=300):
    """Run an example as a user would, from a scratch folder so files it writes stay out of the repo."""
    with tempfile.TemporaryDirectory() as scratch:
        proc = subprocess.run([sys.executable, str(ROOT / script), *args], capture_output=True, text=True,
                              cwd=scratch, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_example_optimize_for_gpu(tmp_path):
    import meshes
    from meshopt_batch import load_mesh, save_mesh

    src = tmp_path / "sphere.ply"
    save_mesh(meshes.uv_sphere(12, 24), src)
    dst = tmp_path / "sphere_opt.glb"
    out = _example("examples/optimize_for_gpu.py", str(src), str(dst), "--profile", "nvidia_gl")
    assert "ASR on nvidia_gl" in out and dst.is_file()
    a, b = load_mesh(src), load_mesh(dst)
    assert b.triangle_count == a.triangle_count


@pytest.mark.skipif(not _gl(), reason="needs an OpenGL context")
def test_example_probe_this_gpu(tmp_path):
    prof = tmp_path / "gpu.json"
    out = _example("examples/probe_this_gpu.py", "--random", "5", "--save", str(prof))
    assert "fitted: MAX_SIZE" in out
    fitted = json.loads(prof.read_text())
    from gpu_probe.context import gl_info

    if gl_info()["renderer"].startswith("llvmpipe"):          # CI's GL: the shipped profile, found again
        shipped = get_profile("llvmpipe")
        assert (fitted["max_size"], fitted["memory"], fitted["memory_size"]) == (
            shipped.max_size, shipped.memory, shipped.memory_size)
    else:
        assert fitted["max_size"] > 0


def test_example_evaluate_scene():
    out = _example("examples/evaluate_scene.py", "sprites-2d", "--frames", "2", "--size", "128", "96")
    assert "baseline" in out and "evr+re" in out


COVERED = {"optimize_for_gpu.py", "probe_this_gpu.py", "evaluate_scene.py"}


@pytest.mark.parametrize("script", sorted(p.name for p in (ROOT / "examples").glob("*.py") if p.name not in COVERED))
def test_other_examples_run(script):
    """Every other example runs as documented (no arguments)."""
    _example(f"examples/{script}")
