"""The report answers first (issue 31): best cells bold in one place, the Verdict computed from
the shipped table, the real-GPU section read from ``results/`` files (a new one appears, a
broken one stops the run with exit code 2), and real assets beside gltfpack."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

import meshes
from meshopt_batch import optimize_file, save_mesh
from meshopt_batch.evaluation.shipped_orders import compare_shipped
from meshopt_batch_app.cli import main
from meshopt_batch_app.report.assets_section import asset_totals, assets_section, run_assets
from meshopt_batch_app.report.document import Best, Section, Table, best_cells, html_table, markdown_table, write_report
from meshopt_batch_app.report.gltf_tools import find_gltfpack
from meshopt_batch_app.report.real_gpu_section import (
    block_rule_rows,
    exact_table,
    optimizer_table,
    real_gpu_section,
    run_real_gpus,
)
from meshopt_batch_app.report.results_files import read_results, read_results_file
from meshopt_batch_app.report.shipped_section import shipped_frame
from meshopt_batch_app.report.verdict_section import measured_gains, verdict_rows, verdict_section

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"
H100 = "NVIDIA H100 80GB HBM3/PCIe/SSE2"


# ------------------------------------------------------------------ best cells, one renderer
def _table(**kw) -> Table:
    frame = pd.DataFrame({"mesh": ["a", "b", "c"], "x": [1.0, 2.0, 0.5], "y": [0.9, 2.5, 0.5],
                          "n": [10, 20, 30], "label": ["p", "q", "r"]})
    return Table("t", frame, **kw)


def test_best_cells_by_row_column_group_and_nearness():
    assert best_cells(_table()) == set()
    # lowest of each row among x, y (ties as shown: row c has 0.500 twice)
    assert best_cells(_table(best=Best("row", among=("x", "y")))) == {(0, 2), (1, 1), (2, 1), (2, 2)}
    # highest of each numeric column (text columns never take part)
    assert best_cells(_table(best=Best("column", lower=False))) == {(1, 1), (1, 2), (2, 3)}
    grouped = Table("g", pd.DataFrame({"mesh": ["a", "a", "b", "b"], "v": [3.0, 2.0, 1.0, 4.0]}),
                    best=Best("column", group="mesh"))
    assert best_cells(grouped) == {(1, 1), (2, 1)}
    near = Table("n", pd.DataFrame({"mesh": ["a"], "measured": [1.0], "p": [1.2], "q": [0.95]}),
                 best=Best("row", among=("p", "q"), near="measured"))
    assert best_cells(near) == {(0, 3)}
    # values that differ only beyond the shown digits are the same to the reader
    tied = Table("t", pd.DataFrame({"m": ["a"], "p": [0.81231], "q": [0.81229]}), best=Best("row"))
    assert best_cells(tied) == {(0, 1), (0, 2)}


def test_markdown_and_html_mark_the_same_cells_and_fold_the_same_rows():
    table = _table(best=Best("row", among=("x", "y")), fold=1)
    md, page = markdown_table(table), html_table(table)
    assert md.count("**") == 2 * 4 and page.count("<strong>") == 4
    assert "| a | 1.000 | **0.900** |" in md and "<td><strong>0.900</strong></td>" in page
    # one row open, the other two folded under a summary
    assert md.index("<details>") > md.index("| a |") and md.index("<details>") < md.index("| b |")
    assert "2 more rows (of 3)" in md and "2 more rows (of 3)" in page
    assert page.count("<table>") == 2 and page.index("<details>") < page.index(">b<")
    plain = markdown_table(_table())
    assert "**" not in plain and "<details>" not in plain


def test_sections_keep_lead_tables_first_and_subsections_in_place(tmp_path):
    sub = Section("s1", "3.1 Sub", ["about the sub"], [_table(best=Best("row", among=("x", "y")))])
    sec = Section("top", "Top", ["a paragraph with **bold**"], lead=[_table()], subsections=[sub])
    out = write_report([sec], tmp_path, "T", [])
    md, page = out["markdown"].read_text(), out["html"].read_text()
    assert md.index("**t**") < md.index("a paragraph") < md.index("### 3.1 Sub") < md.index("about the sub")
    assert '<h3 id="s1">3.1 Sub</h3>' in page and "<strong>bold</strong>" in page


# ------------------------------------------------------------------ the verdict
@pytest.fixture(scope="module")
def shipped():
    result = compare_shipped([meshes.icosphere(2), meshes.grid(12), meshes.torus(16, 8)])
    return {"available": True, "result": result, "meshes": [], "left_out": []}


def test_verdict_figures_are_the_shipped_tables(shipped):
    result = shipped["result"]
    table = result.table()
    rows = verdict_rows(result).set_index("GPU")
    for p in result.profiles:
        order = rows.loc[p, "order"]
        assert order != "input"
        assert rows.loc[p, "ratio"] == table.loc[order, p] == table.drop(index="input")[p].min()
        per_mesh = result.results[(result.results["order"] == order) & (result.results["profile"] == p)]
        assert rows.loc[p, "worst"] == per_mesh["ratio"].max()
        assert rows.loc[p, "worst case"] == per_mesh.loc[per_mesh["ratio"].idxmax(), "mesh"]
        assert rows.loc[p, "portable"] == table.loc["batch@portable", p]
    every = rows.iloc[-1]
    assert rows.index[-1].startswith("all at once") and every["worst"] == table.drop(index="input")["worst"].min()
    assert every["ratio"] == table.loc[every["order"], "mean"]
    assert every["worst"] == table.loc[every["order"], "worst"]
    sec = verdict_section(shipped)
    text = " ".join(sec.paragraphs)
    shipped_order = ("ship meshoptimizer's order" if every["order"] == "meshoptimizer"
                     else f"ship `{every['order']}`: on average")
    assert "portable" in text and shipped_order in text
    assert every["order"] == "meshoptimizer" or f"{every['worst']:.3f}x" in text
    shown = markdown_table(sec.tables[0])
    for p in result.profiles:
        assert f"| {p} | {rows.loc[p, 'order']} | {rows.loc[p, 'ratio']:.3f} |" in shown


def test_verdict_says_where_the_input_order_binds_the_portable_order():
    # a 48 x 48 grid row by row is drawn with every vertex shaded once by intel's 128-entry FIFO
    result = compare_shipped([meshes.grid(48), meshes.icosphere(2)])
    shipped = {"available": True, "result": result, "meshes": [], "left_out": []}
    rows = result.results
    wins = rows[(rows["order"] == "input") & rows["profile"].isin(result.profiles) & (rows["ratio"] < 1)]
    text = " ".join(verdict_section(shipped).paragraphs)
    assert set(wins["mesh"]) == {"grid_48x48"} and "intel" in set(wins["profile"])
    for mesh, profile, ratio in zip(wins["mesh"], wins["profile"], wins["ratio"], strict=True):
        assert f"{mesh} on" in text and f"{profile} ({ratio:.3f}x)" in text
    rest = rows[(rows["order"] == "batch@portable") & rows["profile"].isin(result.profiles)
                & ~rows["mesh"].isin(set(wins["mesh"]))]
    if len(rest):
        assert f"{np.exp(np.log(rest['ratio']).mean()):.3f}x meshoptimizer's (geometric mean" in text


def test_verdict_reads_the_real_asset_ratio(shipped):
    result = shipped["result"]
    totals = pd.DataFrame({"profile": result.profiles + ["bytes"], "ours / gltfpack": 0.9,
                           "ours / gltfpack, same weld": np.linspace(0.8, 1.2, len(result.profiles) + 1)})
    rows = verdict_rows(result, totals)
    assert list(rows["assets vs gltfpack"][:-1]) == list(totals["ours / gltfpack, same weld"][:-1])
    assert rows["assets vs gltfpack"].iloc[-1] == totals["ours / gltfpack, same weld"][:-1].max()


def _llvmpipe_threads():
    return os.environ.get("LP_NUM_THREADS")


def test_stages_on_worker_processes_give_the_same_answers(tmp_path, monkeypatch):
    """On two cores the shipped table, the assets and the real-GPU files run on worker
    processes beside compare: the same answers as in this one, and each job says when it
    starts.  A worker has one core, so llvmpipe draws there without rasterizer threads
    (unless the environment says otherwise)."""
    from meshopt_batch_app.report import workers
    from meshopt_batch_app.report.scope import MeshInput
    from meshopt_batch_app.report.shipped_section import run_shipped

    inputs = []
    for mesh in (meshes.icosphere(2), meshes.grid(10)):
        save_mesh(mesh, tmp_path / f"{mesh.name}.ply")
        inputs.append(MeshInput(mesh.name, mesh, tmp_path / f"{mesh.name}.ply"))
    scope = SimpleNamespace(shipped_max_triangles=None, block_rule_stride=None)
    groups = read_results(RESULTS)
    monkeypatch.setattr(workers, "default_workers", lambda: 2)
    seen = []
    with workers.Workers(on_start=seen.append) as pool:
        assert pool.active and pool.workers == 2
        handles = (pool.submit("shipped", run_shipped, inputs, scope),
                   pool.submit("real GPUs", run_real_gpus, groups, scope))
        there, there_real = (pool.result(h) for h in handles)
        assert pool.result(pool.submit("llvmpipe", _llvmpipe_threads)) == os.environ.get("LP_NUM_THREADS", "0")
    assert sorted(seen) == ["llvmpipe", "real GPUs", "shipped"] and set(pool.started) == set(seen)
    assert set(pool.cpu) == set(seen) and pool.cpu["shipped"] > 0          # each job's CPU seconds there
    here, here_real = run_shipped(inputs, scope), run_real_gpus(groups, scope)
    pd.testing.assert_frame_equal(here["result"].table(), there["result"].table())
    assert [m.name for m in there["meshes"]] == [m.name for m in inputs] and not there["left_out"]
    for a, b in zip(here_real["groups"], there_real["groups"], strict=True):
        pd.testing.assert_frame_equal(a["exact"], b["exact"])
    ended = []
    with workers.Workers(enabled=False, on_start=seen.append) as inline:
        assert not inline.active and inline.workers == 1
        handle = inline.submit("real GPUs/again", run_real_gpus, groups, scope)
        inline.when_done(handle, lambda: ended.append(seen[-1]))
        assert not ended and seen[-1] != "real GPUs/again"         # kept until asked for
        assert inline.result(handle)["stride"] is None
    assert ended == ["real GPUs/again"] and inline.cpu["real GPUs/again"] >= 0


def test_shipped_table_marks_the_best_of_each_column(shipped):
    frame = shipped_frame(shipped["result"])
    md = markdown_table(Table("s", frame, best=Best("column")))
    lines = [line for line in md.splitlines() if line.startswith("| ") and not line.startswith("| order")]
    for j, col in enumerate(frame.columns[1:], start=1):
        best = f"{frame[col].min():.3f}"
        assert any(line.split(" | ")[j].strip("| ") == f"**{best}**" for line in lines), col


# ------------------------------------------------------------------ results files
def test_results_are_grouped_by_gpu_and_api_from_their_contents():
    groups = {(g.renderer, g.api): g for g in read_results(RESULTS)}
    assert (H100, "OpenGL") in groups
    vulkan = sorted(k[0] for k in groups if k[1].startswith("Vulkan"))      # NVIDIA before llvmpipe
    assert len(vulkan) == 2 and vulkan[0] == "NVIDIA H100 80GB HBM3" and vulkan[1].startswith("llvmpipe")
    h100 = groups[(H100, "OpenGL")]
    assert "580.159.04" in " ".join(h100.drivers) and h100.dates == ["2026-11-25", "2026-11-27"]
    kinds = {f.kind for f in h100.files}
    assert {"experiments", "accuracy", "optimizers", "assets", "raster_check", "block_rule"} <= kinds
    assert [f.records for f in h100.of_kind("experiments")] == [2745, 2745]
    assert sum(f.records for f in h100.of_kind("block_rule")) == 23874
    h100_vulkan = next(g for k, g in groups.items() if k[0] == vulkan[0])
    assert h100_vulkan.dates == ["2026-11-27"] and "580.159.04" in " ".join(h100_vulkan.drivers)
    assert sum(f.records for f in h100_vulkan.of_kind("experiments")) == 2745
    assert sum(f.records for f in h100_vulkan.of_kind("block_rule")) == 11923
    # files that name no renderer join their group by name and date
    log = next(f for f in h100.files if f.kind == "log")
    assert log.by_name and log.renderer == H100


def test_h100_figures_are_read_from_the_files():
    h100 = next(g for g in read_results(RESULTS) if g.renderer == H100)
    frame, source, _ = optimizer_table(h100)
    csv = pd.read_csv(RESULTS / source)
    want = csv[(csv["mesh"] == "bunny") & (csv["method"] == "batch") & (csv["numbering"] == "first use")]
    got = frame.set_index("mesh, vertex numbering").loc["bunny, first use", "batch"]
    assert got == want["measured_asr"].iloc[0]
    assert source == "nvidia_optimizers_2026-11-27.csv" and "portable" in frame   # the newest file
    exact = exact_table(h100).set_index("file")
    for date in ("2026-11-25", "2026-11-27"):
        assets = exact.loc[f"nvidia_assets_{date}.csv"]
        assert assets["draws"] == 358 and assets["nvidia_gl+16bit"] == 100.0
    for date, draws in (("2026-11-25", 182), ("2026-11-27", 208)):
        opt = exact.loc[f"nvidia_optimizers_{date}.csv"]
        assert opt["draws"] == draws and opt["nvidia_gl+16bit"] == 100.0 and opt["nvidia_gl"] < 100.0


def test_measured_gains_are_the_default_orders_from_the_newest_file():
    """The verdict's measured line: ``portable`` (the default) against meshoptimizer, first-use
    numbering, from the H100's newest optimizers file; files from before it give ``batch``."""
    groups = {g.renderer: g for g in read_results(RESULTS) if g.api == "OpenGL"}
    gain = measured_gains({"group": groups[H100]})
    assert (gain["method"], gain["file"], gain["meshes"]) == ("portable", "nvidia_optimizers_2026-11-27.csv", 13)
    csv = pd.read_csv(RESULTS / gain["file"])
    first_use = csv[csv["numbering"] == "first use"].pivot(index="mesh", columns="method", values="measured")
    ratio = first_use["portable"] / first_use["meshoptimizer"]
    assert gain["ratio"] == pytest.approx(float(np.exp(np.log(ratio).mean())), rel=1e-12) and gain["ratio"] < 0.96
    assert (gain["worst_mesh"], gain["worst"]) == ("tree", 1.0)
    older = SimpleNamespace(of_kind=lambda kind: [f for f in groups[H100].of_kind(kind) if "11-25" in f.path.name],
                            renderer=H100, api="OpenGL", dates=["2026-11-25"])
    assert measured_gains({"group": older})["method"] == "batch"


def test_block_rule_draws_are_predicted_again_from_their_seed():
    f = read_results_file(RESULTS / "nvidia_block_rule_8_2026-11-25.npz")
    (row,) = block_rule_rows(f, ("nvidia_gl", "nvidia_gl+16bit"), stride=400)
    exact, n = row["exact"]["nvidia_gl+16bit"]
    assert n == row["draws"] > 20 and exact == n
    plain, _ = row["exact"]["nvidia_gl"]
    assert plain < n


def _new_gpu_file(folder: Path) -> None:
    """An accuracy file of a GPU nobody committed: the H100's rows under another renderer,
    every nvidia_gl prediction made one invocation off."""
    df = pd.read_csv(RESULTS / "nvidia_accuracy_2026-11-25.csv")
    df["renderer"] = "Test GPU 9000"
    df["date"] = "2026-12-01"
    df.loc[df["profile"] == "nvidia_gl", "predicted"] += 1
    df.to_csv(folder / "testgpu_accuracy_2026-12-01.csv", index=False)


def test_a_new_results_file_appears_without_code_changes(tmp_path):
    for name in ("nvidia_optimizers_2026-11-25.csv", "nvidia_experiments_2026-11-25.json"):
        shutil.copy(RESULTS / name, tmp_path / name)
    _new_gpu_file(tmp_path)
    groups = read_results(tmp_path)
    assert {g.renderer for g in groups} == {H100, "Test GPU 9000"}
    data = run_real_gpus(groups, SimpleNamespace(block_rule_stride=None))
    sec = real_gpu_section(data, tmp_path)
    titles = [s.title for s in sec.subsections]
    assert any("Test GPU 9000" in t for t in titles) and any(H100 in t for t in titles)
    new = next(s for s in sec.subsections if "Test GPU 9000" in s.title)
    shares = new.tables[0].frame.set_index("draw set").iloc[0]
    assert shares["nvidia_gl"] == 0.0 and shares["nvidia_gl+16bit"] == 100.0
    assert "2026-12-01" in new.paragraphs[0]


def _report(args, capsys):
    rc = main(["report", "--scope", "smoke", "--no-progress", *args])
    return rc, capsys.readouterr().err


def test_bad_results_or_assets_folder_stops_with_exit_2(tmp_path, capsys):
    out = tmp_path / "r"
    rc, err = _report(["--out", str(out), "--assets", str(tmp_path / "absent")], capsys)
    assert rc == 2 and "--assets" in err and len(err.strip().splitlines()) == 1
    rc, err = _report(["--out", str(out), "--results", str(tmp_path / "absent")], capsys)
    assert rc == 2 and "--results" in err and len(err.strip().splitlines()) == 1
    broken = tmp_path / "results"
    broken.mkdir()
    (broken / "gpu_experiments_2026-12-01.json").write_text("{ not json")
    rc, err = _report(["--out", str(out), "--results", str(broken)], capsys)
    assert rc == 2 and "gpu_experiments_2026-12-01.json" in err and "unreadable" in err
    assert len(err.strip().splitlines()) == 1 and not out.exists()


# ------------------------------------------------------------------ real assets
def test_assets_judged_alike_beside_gltfpack(tmp_path):
    folder = tmp_path / "assets"
    for mesh in (meshes.icosphere(3), meshes.torus(24, 12)):
        (folder / mesh.name).mkdir(parents=True)
        save_mesh(mesh, folder / mesh.name / f"{mesh.name}.glb")
    data = run_assets(SimpleNamespace(assets_dir=str(folder), asset_pick=None), tmp_path / "work")
    rows = {(r["asset"], r["variant"]): r for r in data["rows"]}
    for mesh in ("icosphere_3", "torus_24x12"):
        ours = optimize_file(folder / mesh / f"{mesh}.glb", tmp_path / f"{mesh}.glb")
        for p, pair in ours.profiles.items():
            assert rows[(mesh, "input")][p] == pair["before"] and rows[(mesh, "ours")][p] == pair["after"]
    sec = assets_section(data)
    md = "\n".join(markdown_table(t) for t in sec.tables)
    if find_gltfpack()[0] is None:
        assert any("gltfpack is not installed" in p for p in sec.paragraphs)
        return
    assert all((m, "gltfpack") in rows for m in ("icosphere_3", "torus_24x12"))
    totals = asset_totals(data).set_index("profile")
    want = sum(rows[(m, "ours")]["nvidia_gl"] for m in ("icosphere_3", "torus_24x12"))
    assert totals.loc["nvidia_gl", "ours"] == want
    assert "| icosphere_3 | gltfpack |" in md and "**" in md


def test_missing_asset_folder_is_said_not_failed(tmp_path):
    data = run_assets(SimpleNamespace(assets_dir=str(tmp_path / "none"), asset_pick=None), tmp_path)
    sec = assets_section(data)
    assert not data["available"] and "no asset folder" in sec.paragraphs[0]


def test_empty_results_and_asset_folders_are_said(tmp_path):
    sec = real_gpu_section(run_real_gpus([], SimpleNamespace(block_rule_stride=None)), tmp_path)
    assert any("No results files in" in p for p in sec.paragraphs) and not sec.subsections
    (tmp_path / "assets").mkdir()
    data = run_assets(SimpleNamespace(assets_dir=str(tmp_path / "assets"), asset_pick=None), tmp_path / "w")
    sec = assets_section(data)
    assert data["available"] and not data["rows"] and not sec.tables
