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
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

from meshopt_batch.support.files import atomic_write

from ..progress import wanted
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
from .document import Section, Table, write_report
from .progress import ReportProgress, stage_of
from .results_files import default_results_dir, read_results
from .scope import Scope, collect_meshes, make_workdir
from .shipped_section import run_shipped
from .workers import Workers

SECTION_ANCHORS = ("verdict", "compare", "assets", "real-gpus", "probe", "simulate", "glcheck", "anchors",
                   "meshlets", "overview")


#: Stages this process runs, in order, around the jobs of the workers.
MAIN_STAGES = ("results files", "meshes", "compare", "meshlets", "probe", "figures", "simulate figures", "matrix",
               "write")
#: Stages of one job each on the workers (the simulate matrix adds one job per cell).
WORKER_STAGES = ("shipped", "assets", "real GPUs")
#: Every stage, as the result lists them.
_ORDER = MAIN_STAGES[:5] + WORKER_STAGES + ("simulate",) + MAIN_STAGES[5:]


def build_report(out_dir: str | Path, scope: Scope, progress: bool | None = None) -> dict:
    """Run every stage for ``scope`` and write the report into ``out_dir``.

    The comparison, the meshlets and the probe run here while workers, one per core, run the
    shipped-order table, the real assets, the real-GPU files and the simulate matrix's cells
    (:mod:`~meshopt_batch_app.report.workers`).  Nothing is written before every stage has
    finished.

    Parameters
    ----------
    out_dir : str or Path
        The report's folder (``index.html``, ``report.md``, figures and data).
    scope : Scope
        What the report covers (:func:`get_scope`).
    progress : bool or None
        Show the stages on stderr (:mod:`~meshopt_batch_app.report.progress`; None: when
        stdout and stderr are terminals).

    Returns
    -------
    dict
        ``{"html", "markdown", "figures", "data", "seconds", "stages", "jobs", "cpu",
        "timeline", "workers"}``: ``stages`` is each stage's wall time, from its first job's
        start to its last job's end (stages on the workers overlap this process's), ``jobs``
        each worker stage's jobs' wall times added up, ``cpu`` each stage's CPU time (its
        process's threads included), ``timeline`` each stage's start and end in seconds from
        the report's start, ``workers`` the worker processes used (1: none).

    Raises
    ------
    MeshoptBatchError
        A results file cannot be read (before anything runs).
    """
    t_start = time.perf_counter()
    if progress is None:
        progress = wanted(None)
    sim_jobs, schedule, sim_meta = simulate_section.simulation_jobs(scope)
    counts = {name: 1 for name in MAIN_STAGES[:5] + WORKER_STAGES}
    counts["simulate"] = len(sim_jobs)
    counts.update({name: 1 for name in MAIN_STAGES[5:]})
    with ReportProgress(counts, bool(progress)) as show:
        timer = _Timer(show)
        with timer.stage("results files"):
            results_dir = Path(scope.results_dir) if scope.results_dir else default_results_dir()
            gpu_results = read_results(results_dir) if results_dir.is_dir() else []
        with make_workdir() as tmp:
            work = Path(tmp)
            with timer.stage("meshes"):
                meshes, mesh_notes = collect_meshes(scope, work)
                for m in meshes:
                    if m.procedural:
                        m.shown = str(Path(out_dir) / "meshes" / m.path.name)

            with Workers(workers=scope.workers, on_start=show.started) as pool:
                later = {"shipped": pool.submit("shipped", run_shipped, meshes, scope, progress=show.counter),
                         "assets": pool.submit("assets", assets_section.run_assets, scope, work / "assets",
                                               progress=show.counter),
                         "real GPUs": pool.submit("real GPUs", real_gpu_section.run_real_gpus, gpu_results, scope)}
                cells = {i: pool.submit(simulate_section.job_label(sim_jobs[i]), simulate_section.run_job,
                                        sim_jobs[i]) for i in schedule}
                for label, handle in [*later.items(),
                                      *((simulate_section.job_label(sim_jobs[i]), h) for i, h in cells.items())]:
                    pool.when_done(handle, timer.ended_job(label))

                with timer.stage("compare"):
                    cmp_data = compare_section.run_compare(meshes, scope, progress=show.counter)
                with timer.stage("meshlets"):
                    meshlet_data = meshlet_section.run_meshlets(meshes, progress=show.counter)
                with timer.stage("probe"):
                    probe_data = probe_section.run_probe(meshes, scope, work, progress=show.counter)

                shipped, asset_data, real_data = (pool.result(later[k]) for k in WORKER_STAGES)
                # while the workers run the matrix: every section but the matrix's, figures drawn
                with timer.stage("figures"):
                    real_data = real_gpu_section.with_this_machine(real_data, probe_data)
                    sec_cmp, cmp_df = compare_section.compare_section(cmp_data, meshes, shipped)
                    sec_assets = assets_section.assets_section(asset_data)
                    sec_real = real_gpu_section.real_gpu_section(real_data, results_dir)
                    sec_probe = probe_section.probe_section(probe_data, meshes)
                    sec_meshlets = meshlet_section.meshlet_section(meshlet_data, meshes)
                    sec_verdict = _verdict(shipped, asset_data, real_data)
                    for sec in (sec_verdict, sec_cmp, sec_assets, sec_real, sec_probe, sec_meshlets):
                        _draw(sec)
                answers = [None] * len(sim_jobs)
                first = [i for i in schedule if sim_jobs[i].first]
                for i in first:
                    answers[i] = pool.result(cells[i])
                # while the workers run the other orders: the figures of the first order's runs
                with timer.stage("simulate figures"):
                    partial = simulate_section.collect_simulations([sim_jobs[i] for i in first],
                                                                   [answers[i] for i in first], sim_meta, scope,
                                                                   pool.workers, 0.0)
                    sim_drawn = simulate_section.first_order_figures(partial, scope)
                    sec_gl = glcheck_section.glcheck_section(partial, scope)
                    for fig in sim_drawn:
                        fig.png_bytes()
                    _draw(sec_gl)
                for i in schedule:
                    if answers[i] is None:
                        answers[i] = pool.result(cells[i])
                workers = pool.workers
            timer.add_jobs(pool.started, pool.ended)          # complete once the pool is closed
            for label, seconds in pool.cpu.items():
                timer.cpu[stage_of(label)] = timer.cpu.get(stage_of(label), 0.0) + seconds
            sim_data = simulate_section.collect_simulations(sim_jobs, answers, sim_meta, scope, workers,
                                                            timer.seconds("simulate"))

            with timer.stage("matrix"):
                sec_sim, matrix = simulate_section.simulate_section(sim_data, scope, drawn=sim_drawn)
                tables = _data_tables(cmp_data, matrix, sim_data, shipped, asset_data)
                sec_anchor = anchors.anchors_section(cmp_df, matrix, tables.get("frames.csv"), scope.orders[0])
            where = f" ({workers} workers)" if workers > 1 else ""
            stages = {name + (where if name in WORKER_STAGES + ("simulate",) else ""): timer.seconds(name)
                      for name in _ORDER if name != "write"}

            with timer.stage("write"):
                overview = _overview(scope, meshes, mesh_notes, probe_data, stages,
                                     time.perf_counter() - t_start, list(tables), out_dir,
                                     _coverage(shipped, asset_data, results_dir, gpu_results))
                sections = [sec_verdict, sec_cmp, sec_assets, sec_real, sec_probe, sec_sim, sec_gl, sec_anchor,
                            sec_meshlets, overview]
                written = write_report(sections, out_dir, "meshopt-batch report", _preamble())
                for name, frame in tables.items():
                    atomic_write(Path(out_dir) / name, frame.to_csv(index=False).encode())
                written["data"] = [Path(out_dir) / name for name in tables]
                mesh_dir = Path(out_dir) / "meshes"
                mesh_dir.mkdir(exist_ok=True)
                for m in meshes:
                    if m.procedural:
                        atomic_write(mesh_dir / m.path.name, m.path.read_bytes())
    stages["write"] = timer.seconds("write")
    written["seconds"] = time.perf_counter() - t_start
    written["stages"] = stages
    written["jobs"] = {name: timer.job_seconds(name) for name in WORKER_STAGES + ("simulate",)}
    written["cpu"] = {name: timer.cpu.get(name, 0.0) for name in _ORDER}
    written["timeline"] = {name: timer.window(name) for name in _ORDER}
    written["workers"] = workers
    return written


class _Timer:
    """When each stage ran: this process's stages as they run, the workers' jobs as the workers
    saw them (:class:`~meshopt_batch_app.report.workers.Workers`); all on one monotonic clock,
    which the worker processes share."""

    def __init__(self, show: ReportProgress):
        self.show = show
        self.t0 = time.monotonic()
        self.runs: dict[str, tuple[float, float]] = {}     # job or stage -> (start, end)
        self.cpu: dict[str, float] = {}

    @contextmanager
    def stage(self, name: str):
        self.show.started(name)
        t0, c0 = time.monotonic(), time.process_time()
        yield
        self.runs[name] = (t0, time.monotonic())
        self.cpu[name] = time.process_time() - c0
        self.show.finished(name)

    def ended_job(self, label: str):
        return lambda: self.show.finished(label)

    def add_jobs(self, started: dict[str, float], ended: dict[str, float]) -> None:
        """The workers' jobs, once every start notice is in."""
        self.runs.update((k, (started[k], end)) for k, end in ended.items() if k in started)

    def window(self, stage: str) -> tuple[float, float]:
        """From the stage's first start to its last end, in seconds from the report's start."""
        runs = [r for k, r in self.runs.items() if stage_of(k) == stage]
        if not runs:
            return 0.0, 0.0
        return min(r[0] for r in runs) - self.t0, max(r[1] for r in runs) - self.t0

    def seconds(self, stage: str) -> float:
        start, end = self.window(stage)
        return end - start

    def job_seconds(self, stage: str) -> float:
        return sum(end - start for k, (start, end) in self.runs.items() if stage_of(k) == stage)


def _draw(section: Section) -> None:
    """Encode the section's figures now (they are kept as PNG for the writer)."""
    for fig in section.figures:
        fig.png_bytes()
    for sub in section.subsections:
        _draw(sub)


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
