"""``meshopt-batch report``: run compare, probe and simulate and write the report.

:func:`build_report` gathers the meshes of the scope, runs each stage through the library's
public functions, turns the results into :class:`~meshopt_batch_app.report.document.Section` objects
and writes ``index.html`` (self-contained) and ``report.md`` (with the PNGs beside it).
"""

from __future__ import annotations

import os
import platform
import time
from pathlib import Path

import pandas as pd

from meshopt_batch.files import atomic_write

from . import anchors, compare_section, glcheck_section, meshlet_section, probe_section, simulate_section
from .document import Section, Table, write_report
from .scope import Scope, collect_meshes, make_workdir, progress_bar

SECTION_ANCHORS = ("overview", "compare", "probe", "simulate", "glcheck", "anchors", "meshlets")


def build_report(out_dir: "str | Path", scope: Scope, progress: bool | None = None) -> dict:
    """Run every stage for ``scope`` and write the report into ``out_dir``.

    Returns ``{"html", "markdown", "figures", "seconds", "stages"}``; nothing is written
    before every stage has finished.
    """
    t_start = time.perf_counter()

    def bar(total, desc):
        return progress_bar(total, desc, progress)

    stages: dict[str, float] = {}
    outer = bar(5, "report")
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
        cmp_data = compare_section.run_compare(meshes, scope, progress=bar)
        stages["compare"] = cmp_data["seconds"]
        meshlet_data = meshlet_section.run_meshlets(meshes, progress=bar)
        stages["meshlets"] = meshlet_data["seconds"]
        outer.update(1)

        stage("probe")
        probe_data = probe_section.run_probe(meshes, scope, work, progress=bar)
        stages["probe"] = probe_data["seconds"]
        outer.update(1)

        stage("simulate")
        sim_data = simulate_section.run_simulations(scope, progress=bar)
        stages["simulate"] = sim_data["seconds"]
        outer.update(1)

        stage("figures")
        t0 = time.perf_counter()
        sec_cmp, cmp_df = compare_section.compare_section(cmp_data, meshes)
        sec_probe = probe_section.probe_section(probe_data, meshes)
        sec_sim, matrix = simulate_section.simulate_section(sim_data, scope)
        sec_gl = glcheck_section.glcheck_section(sim_data, scope)
        tables = _data_tables(cmp_data, matrix, sim_data)
        sec_anchor = anchors.anchors_section(cmp_df, matrix, tables.get("frames.csv"), scope.orders[0])
        stages["figures"] = time.perf_counter() - t0
        outer.update(1)
        outer.close()

        overview = _overview(scope, meshes, mesh_notes, probe_data, stages,
                             time.perf_counter() - t_start, list(tables), out_dir)
        sections = [overview, sec_cmp, sec_probe, sec_sim, sec_gl, sec_anchor,
                    meshlet_section.meshlet_section(meshlet_data, meshes)]
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


def _preamble() -> list[str]:
    return [
        "What this machine and the models say about vertex-shader work and whole-frame cost: "
        "which triangle order is best for which GPU (1), what this machine's GPU really does (2), "
        "what a tile-based mobile GPU saves with VRO, EVR, RE and DSR on animated scenes (3), how "
        "closely the pipeline model's raster matches a real OpenGL renderer (4), and the "
        "published figures beside ours (5). Every figure states the numbers it shows; every "
        "section names the command that reproduces it.",
    ]


def _data_tables(cmp_data, matrix, sim_data) -> dict:
    """The figures' data as tidy CSV tables written beside the report."""
    out = {}
    if cmp_data.get("available"):
        out["compare.csv"] = cmp_data["result"].results
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


def _overview(scope, meshes, mesh_notes, probe_data, stages, seconds, data_files=(), out_dir="report") -> Section:
    sec = Section("overview", "0. This run")
    renderer = probe_data.get("info", {}).get("renderer") if probe_data.get("available") else None
    rows = [
        ("scope", scope.describe()),
        ("meshes", ", ".join(f"{m.name} ({m.mesh.triangle_count:,} tri.)" for m in meshes)),
        ("machine", f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"),
        ("OpenGL renderer", renderer or "none (see section 2)"),
        ("date (UTC)", time.strftime("%Y-%m-%d %H:%M", time.gmtime())),
    ]
    rows += [(f"time: {k}", f"{v:.1f} s") for k, v in stages.items()]
    rows.append(("time: total before writing", f"{seconds:.1f} s"))
    sec.tables.append(Table("Run", pd.DataFrame(rows, columns=["item", "value"])))
    sec.paragraphs += [f"Note: {n}." for n in mesh_notes]
    if data_files:
        sec.paragraphs.append("The data behind the tables and figures is written beside this page as "
                              + ", ".join(data_files) + " (tidy CSV, one row per mesh/profile/method, "
                              "per scene/order/technique, and per frame).")
    sec.commands = [scope.command(out_dir)]
    return sec
