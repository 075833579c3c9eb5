"""``meshopt-batch report``: run compare, probe and simulate and write the report.

:func:`build_report` reads the committed GPU measurements, gathers the meshes of the scope,
runs each stage through the library's public functions, turns the results into
:class:`~meshopt_batch_app.report.document.Section` objects and writes ``index.html``
(self-contained) and ``report.md`` (with the PNGs beside it).  The page opens with the
Verdict, computed from the sections' own data.
"""

from __future__ import annotations

import os
import platform
import time
from pathlib import Path

import pandas as pd

from meshopt_batch.files import atomic_write

from . import (
    anchors,
    assets_section,
    compare_section,
    glcheck_section,
    meshlet_section,
    probe_section,
    real_gpu_section,
    simulate_section,
    verdict_section,
)
from .background import Background
from .document import Section, Table, write_report
from .results_files import default_results_dir, read_results
from .scope import Scope, collect_meshes, make_workdir, progress_bar
from .shipped_section import run_shipped

SECTION_ANCHORS = ("verdict", "compare", "assets", "real-gpus", "probe", "simulate", "glcheck", "anchors",
                   "meshlets", "overview")


def build_report(out_dir: str | Path, scope: Scope, progress: bool | None = None) -> dict:
    """Run every stage for ``scope`` and write the report into ``out_dir``.

    Returns ``{"html", "markdown", "figures", "data", "seconds", "stages"}``; nothing is written
    before every stage has finished.

    Raises
    ------
    MeshoptBatchError
        A results file cannot be read (before anything runs).
    """
    t_start = time.perf_counter()

    def bar(total, desc):
        return progress_bar(total, desc, progress)

    stages: dict[str, float] = {}
    results_dir = Path(scope.results_dir) if scope.results_dir else default_results_dir()
    t0 = time.perf_counter()
    gpu_results = read_results(results_dir) if results_dir.is_dir() else []
    stages["results files"] = time.perf_counter() - t0
    outer = bar(8, "report")
    with make_workdir() as tmp:
        work = Path(tmp)

        def stage(name):
            outer.set_postfix_str(name)

        stage("meshes")
        t0 = time.perf_counter()
        meshes, mesh_notes = collect_meshes(scope, work)
        for m in meshes:
            if m.procedural:
                m.shown = str(Path(out_dir) / "meshes" / m.path.name)
        stages["meshes"] = time.perf_counter() - t0
        outer.update(1)

        stage("compare")
        with Background() as second:
            later = {"shipped": second.submit(run_shipped, meshes, scope, progress=bar),
                     "assets": second.submit(assets_section.run_assets, scope, work / "assets", progress=bar),
                     "real GPUs": second.submit(real_gpu_section.run_real_gpus, gpu_results, scope)}
            cmp_data = compare_section.run_compare(meshes, scope, progress=bar)
            stages["compare"] = cmp_data["seconds"]
            meshlet_data = meshlet_section.run_meshlets(meshes, progress=bar)
            stages["meshlets"] = meshlet_data["seconds"]
            outer.update(1)

            stage("probe")
            probe_data = probe_section.run_probe(meshes, scope, work, progress=bar)
            stages["probe"] = probe_data["seconds"]
            outer.update(1)

            stage("shipped, assets, real GPUs")
            where = " (second process)" if second.active else ""
            shipped, asset_data, real_data = (second.result(later[k]) for k in ("shipped", "assets", "real GPUs"))
            for name, data in zip(later, (shipped, asset_data, real_data), strict=True):
                stages[name + where] = data["seconds"]
            real_data = real_gpu_section.with_this_machine(real_data, probe_data)
            outer.update(3)

        stage("simulate")
        sim_data = simulate_section.run_simulations(scope, progress=bar)
        stages["simulate"] = sim_data["seconds"]
        outer.update(1)

        stage("figures")
        t0 = time.perf_counter()
        sec_cmp, cmp_df = compare_section.compare_section(cmp_data, meshes, shipped)
        sec_assets = assets_section.assets_section(asset_data)
        sec_real = real_gpu_section.real_gpu_section(real_data, results_dir)
        sec_probe = probe_section.probe_section(probe_data, meshes)
        sec_sim, matrix = simulate_section.simulate_section(sim_data, scope)
        sec_gl = glcheck_section.glcheck_section(sim_data, scope)
        tables = _data_tables(cmp_data, matrix, sim_data, shipped, asset_data)
        sec_anchor = anchors.anchors_section(cmp_df, matrix, tables.get("frames.csv"), scope.orders[0])
        sec_verdict = _verdict(shipped, asset_data, real_data)
        stages["figures"] = time.perf_counter() - t0
        outer.update(1)
        outer.close()

        overview = _overview(scope, meshes, mesh_notes, probe_data, stages,
                             time.perf_counter() - t_start, list(tables), out_dir,
                             _coverage(shipped, asset_data, results_dir, gpu_results))
        sections = [sec_verdict, sec_cmp, sec_assets, sec_real, sec_probe, sec_sim, sec_gl, sec_anchor,
                    meshlet_section.meshlet_section(meshlet_data, meshes), overview]
        written = write_report(sections, out_dir, "meshopt-batch report", _preamble())
        for name, frame in tables.items():
            atomic_write(Path(out_dir) / name, frame.to_csv(index=False).encode())
        written["data"] = [Path(out_dir) / name for name in tables]
        mesh_dir = Path(out_dir) / "meshes"
        mesh_dir.mkdir(exist_ok=True)
        for m in meshes:
            if m.procedural:
                atomic_write(mesh_dir / m.path.name, m.path.read_bytes())
    written["seconds"] = time.perf_counter() - t_start
    written["stages"] = stages
    return written


def _verdict(shipped, asset_data, real_data) -> Section:
    """The Verdict from the shipped table, the asset totals and the real-GPU files."""
    assets = None
    if asset_data.get("available"):
        totals = assets_section.asset_totals(asset_data)
        if len(totals):
            assets = {"totals": totals, "same_weld": assets_section.same_weld_assets(asset_data),
                      "assets": list(dict.fromkeys(r["asset"] for r in asset_data["rows"]))}
    committed = [e for e in real_data["groups"] if not e["live"]]
    gains = [g for g in (verdict_section.measured_gains(e) for e in committed) if g]
    exact = {}
    for e in committed:
        totals = real_gpu_section.exact_totals(e["exact"]) if len(e["exact"]) else []
        if totals:
            exact[(e["group"].renderer, e["group"].api)] = totals[0]
    return verdict_section.verdict_section(shipped, assets, gains, exact)


def _preamble() -> list[str]:
    return [
        "Which triangle order to ship, for each GPU and for all of them at once (the Verdict, "
        "computed from the sections below), then the evidence: every order on every GPU model (1), "
        "real glTF assets beside gltfpack (2), what real GPUs measured (3), this machine's GPU "
        "probed now (4), what a tile-based mobile GPU saves with VRO, EVR, RE and DSR on animated "
        "scenes (5), the pipeline model's raster against a real OpenGL renderer (6), the published "
        "figures beside ours (7), meshlets (8) and this run (9). Every figure is computed in this "
        "run or read from a committed results file; best cells are bold; every section names the "
        "command that reproduces it.",
    ]


def _data_tables(cmp_data, matrix, sim_data, shipped=None, asset_data=None) -> dict:
    """The figures' data as tidy CSV tables written beside the report."""
    out = {}
    if cmp_data.get("available"):
        out["compare.csv"] = cmp_data["result"].results
    if shipped and shipped.get("available"):
        out["shipped.csv"] = shipped["result"].results
    if asset_data and asset_data.get("available") and asset_data["rows"]:
        out["assets.csv"] = assets_section.asset_frame(asset_data)
    if matrix is not None and len(matrix):
        out["matrix.csv"] = matrix
    frames = []
    for (scene, order), res in sim_data["runs"].items():
        pf = res.per_frame
        pf.insert(0, "order", order)
        pf.insert(0, "scene", scene)
        frames.append(pf)
    if frames:
        out["frames.csv"] = pd.concat(frames, ignore_index=True)
    return out


def _coverage(shipped, asset_data, results_dir, gpu_results) -> list[tuple[str, str]]:
    """What the verdict's inputs cover in this run."""
    rows = [("shipped-order table", ", ".join(m.name for m in shipped["meshes"]) if shipped.get("available")
             else f"not run: {shipped.get('reason')}")]
    if asset_data.get("available"):
        names = list(dict.fromkeys(r["asset"] for r in asset_data["rows"]))
        rows.append(("real assets", f"{len(names)} from {asset_data['folder']}: {', '.join(names) or 'none'}"))
    else:
        rows.append(("real assets", asset_data["reason"]))
    files = sum(len(g.files) for g in gpu_results)
    rows.append(("real-GPU results", f"{files} files of {len(gpu_results)} GPU/API pairs in {results_dir}"))
    return rows


def _overview(scope, meshes, mesh_notes, probe_data, stages, seconds, data_files=(), out_dir="report",
              coverage=()) -> Section:
    sec = Section("overview", "9. This run")
    renderer = probe_data.get("info", {}).get("renderer") if probe_data.get("available") else None
    rows = [
        ("scope", scope.describe()),
        ("meshes", ", ".join(f"{m.name} ({m.mesh.triangle_count:,} tri.)" for m in meshes)),
        *coverage,
        ("machine", f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"),
        ("OpenGL renderer", renderer or "none (see section 4)"),
        ("date (UTC)", time.strftime("%Y-%m-%d %H:%M", time.gmtime())),
    ]
    rows += [(f"time: {k}", f"{v:.1f} s") for k, v in stages.items()]
    rows.append(("time: total before writing", f"{seconds:.1f} s"))
    sec.tables.append(Table("Run", pd.DataFrame(rows, columns=["item", "value"])))
    sec.paragraphs += [f"Note: {n}." for n in mesh_notes]
    if data_files:
        sec.paragraphs.append("The data behind the tables and figures is written beside this page as "
                              + ", ".join(data_files) + " (tidy CSV, one row per mesh/profile/method, "
                              "per scene/order/technique, per frame, per shipped order and per asset).")
    sec.commands = [scope.command(out_dir)]
    return sec
