"""Report section 5: the end-to-end matrix on the tile-based GPU model (``meshopt-batch simulate``).

Every shipped scene is run with every technique for each triangle order of the scope through
:func:`pipeline_model.pipeline.simulate`, the function the ``simulate`` command calls; the
tables below are its ``totals`` and ``per_frame`` frames.  The only addition is
:class:`_Recorder`, a pass-through technique wrapper that keeps the per-tile ``skip`` / ``rate``
requests of the RE and DSR techniques so that they can be drawn over a rendered frame.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pandas as pd
from matplotlib.colors import ListedColormap
from matplotlib.ticker import MaxNLocator

from gpu_probe.gl_reference import gl_available
from pipeline_model.pipeline import simulate
from pipeline_model.scene import load_scene, shipped_scenes
from pipeline_model.techniques import Technique, available, create

from ..glcheck import GLFrameCheck
from ..library.local import default_workers
from .anchors import BAR_REFERENCES
from .document import Best, Figure, Section, Table
from .figures import grouped_bars, new_figure, tile_overlay
from .workers import Workers

#: Techniques whose per-tile requests the report draws (skip map: RE family; rate map: DSR).
SKIP_TECHNIQUES = ("re", "evr+re")
RATE_TECHNIQUES = ("dsr", "evr+dsr")
RATE_LABELS = ("1", "1/4", "1/16", "1/64", "1/256")


class _Recorder(Technique):
    """Wraps a technique: same hooks and results, plus a copy of every frame's request."""

    def __init__(self, inner: Technique):
        self.inner = inner
        self.name = inner.name
        self.exact = inner.exact
        self.aggregate = inner.aggregate
        self.requests: dict[int, dict] = {}

    def reset(self):
        self.requests = {}
        self.inner.reset()

    def run(self, ctx):
        req, res = self.inner.run(ctx)
        self.requests[ctx.index] = {key: np.array(v, copy=True) for key in ("skip", "rate")
                                    if (v := getattr(req, key)) is not None}
        return req, res

    def end_frame(self, ctx, result):
        return self.inner.end_frame(ctx, result)

    def summary(self):
        return self.inner.summary()


def _command(scene, scope, order, techniques, check_gl=False) -> str:
    parts = [f"meshopt-batch simulate {scene}"]
    if scope.frames:
        parts.append(f"--frames {scope.frames}")
    if scope.size:
        parts.append(f"--width {scope.size[0]} --height {scope.size[1]}")
    if order != "original":
        parts.append(f"--method {order}")
    parts.append("--technique " + ",".join(techniques))
    if check_gl:
        parts.append("--check-gl")
    return " ".join(parts)


@dataclass(frozen=True)
class _Job:
    """One cell of the matrix: a scene in one triangle order (picklable, for a worker)."""

    scene: str
    order: str
    scope: object
    techniques: tuple
    first: bool           # the scope's first order: record maps and images, run the GL check
    check_gl: bool


#: Scenes a process has built, for its later orders (a worker keeps its own).
_LOADED: dict = {}


def run_job(job: _Job) -> dict:
    """Simulate one cell; returns its result (or its error), maps and command."""
    scope = job.scope
    width, height = scope.size if scope.size else (None, None)
    techs = [create(t) for t in job.techniques]
    if job.first:
        techs = [_Recorder(t) if t.name in SKIP_TECHNIQUES + RATE_TECHNIQUES else t for t in techs]
    last = {}

    def keep_last(name, frame, colour):
        last[name] = (frame, colour)

    try:
        if job.scene not in _LOADED:
            _LOADED[job.scene] = load_scene(job.scene)
        res = simulate(_LOADED[job.scene], techs, frames=scope.frames,
                       method=None if job.order == "original" else job.order,
                       width=width, height=height, progress=False,
                       image_callback=keep_last if job.first else None,
                       frame_checks=[GLFrameCheck()] if job.check_gl else [])
    except Exception as exc:  # noqa: BLE001 - one failing cell must not lose the report
        return {"error": f"{type(exc).__name__}: {exc}".splitlines()[0]}
    out = {"result": res}
    if job.first:
        out["command"] = _command(job.scene, scope, job.order, job.techniques, check_gl=job.check_gl)
        out["maps"] = {
            "colour": {n: c for n, (f, c) in last.items()},
            "frame": max((f for f, _ in last.values()), default=None),
            "requests": {t.name: t.requests for t in techs if isinstance(t, _Recorder)},
        }
    return out


def simulation_jobs(scope, check_gl: bool = True) -> tuple[list[_Job], list[int], dict]:
    """The matrix's cells, the order to run them in and what :func:`collect_simulations` needs.

    Cells are listed order by order, scene by scene (the tables' order); they are run longest
    first by :func:`job_cost`, so that on several workers the last cells to end are short.
    """
    scenes = list(scope.scenes or shipped_scenes())
    techniques = tuple(available())
    gl_reason = None
    if check_gl and not gl_available():
        gl_reason = "no OpenGL context can be created here"
    jobs = [_Job(scene, order, scope, techniques, order == scope.orders[0],
                 order == scope.orders[0] and check_gl and gl_reason is None)
            for order in scope.all_orders for scene in scenes if order in scope.orders_for(scene)]
    sizes = {scene: _scene_size(scene) for scene in scenes}
    cost = [job_cost(job, *sizes[job.scene]) for job in jobs]
    schedule = sorted(range(len(jobs)), key=lambda i: -cost[i])
    return jobs, schedule, {"scenes": scenes, "techniques": list(techniques), "gl_reason": gl_reason}


def _scene_size(scene: str) -> tuple[int, int]:
    """The scene's own frames and pixels per frame (0, 0 when it cannot be read: its cell
    fails at once)."""
    try:
        sc = load_scene(scene)
    except Exception:  # noqa: BLE001 - the cell itself reports the error
        return 0, 0
    return sc.frames, sc.width * sc.height


def job_cost(job: _Job, scene_frames: int, scene_pixels: int) -> float:
    """A cell's work for ordering the cells, in rendered pixels: frames times pixels, counted
    twice where the OpenGL check renders every frame again (an estimate, used for nothing else)."""
    frames = job.scope.frames or scene_frames
    pixels = job.scope.size[0] * job.scope.size[1] if job.scope.size else scene_pixels
    return float(frames) * pixels * (2.0 if job.check_gl else 1.0)


def job_label(job: _Job) -> str:
    """How progress names the cell: ``simulate/SCENE/ORDER``."""
    return f"simulate/{job.scene}/{job.order}"


def collect_simulations(jobs: list, answers: list, meta: dict, scope, workers: int, seconds: float) -> dict:
    """The matrix's data from every cell's answer (in the jobs' order)."""
    runs, errors, maps, commands = {}, {}, {}, []
    for job, answer in zip(jobs, answers, strict=True):
        if "error" in answer:
            errors[(job.scene, job.order)] = answer["error"]
            continue
        runs[(job.scene, job.order)] = answer["result"]
        if job.first:
            commands.append(answer["command"])
            maps[job.scene] = answer["maps"]
    if scope.orders[1:]:
        commands.append("# the same with --method " + " / --method ".join(scope.orders[1:]))
    scenes = meta["scenes"]
    extra = [s for s in scenes if s in scope.overdraw_scenes]
    if extra and scope.overdraw_orders:
        commands.append(f"# and on {', '.join(extra)} with --method " + " / --method ".join(scope.overdraw_orders))
    return {"runs": runs, "errors": errors, "maps": maps, "scenes": scenes, "techniques": meta["techniques"],
            "commands": commands, "gl_reason": meta["gl_reason"], "workers": workers, "seconds": seconds}


def run_simulations(scope, progress=None, check_gl: bool = True, workers: int | None = None) -> dict:
    """Run the matrix; returns runs, recorded maps, errors, timings and the commands.

    ``workers`` (default: the scope's ``workers``, else one per core) cells run at once in
    worker processes (:class:`~meshopt_batch_app.report.workers.Workers`), each with its
    share of the cores for the raster's threads; a run's figures do not depend on where or
    beside what it ran (:mod:`pipeline_model.raster` is bit-identical on any number of
    threads). One worker runs the cells in this process.  The report itself runs the cells
    among its other jobs (:func:`simulation_jobs`, :func:`collect_simulations`).
    """
    t0 = time.perf_counter()
    jobs, schedule, meta = simulation_jobs(scope, check_gl)
    if workers is None:
        workers = scope.workers or default_workers()
    workers = max(1, min(int(workers), len(jobs)))
    bar = progress(len(jobs), "simulate") if progress else None
    answers = [None] * len(jobs)
    with Workers(workers=workers) as pool:
        handles = {i: pool.submit(job_label(jobs[i]), run_job, jobs[i]) for i in schedule}
        for i in schedule:
            answers[i] = pool.result(handles[i])
            if bar is not None:
                bar.set_postfix_str(f"{jobs[i].scene} / {jobs[i].order}")
                bar.update(1)
        used = pool.workers
    if bar is not None:
        bar.close()
    return collect_simulations(jobs, answers, meta, scope, used, time.perf_counter() - t0)


def matrix_frame(data: dict) -> pd.DataFrame:
    """One row per (scene, order, technique): the run's totals plus ratios to the baselines."""
    rows = []
    for (scene, order), res in data["runs"].items():
        tot = res.totals
        base = tot.loc["baseline"] if "baseline" in tot.index else None
        ref = data["runs"].get((scene, "original"))
        ref_base = ref.totals.loc["baseline"] if ref is not None and "baseline" in ref.totals.index else base
        for tech in res.techniques:
            t = tot.loc[tech]
            rendered = float(t.get("tiles_rendered", 0) or 0)
            skipped = float(t.get("tiles_skipped", 0) or 0)
            row = {
                "scene": scene, "order": order, "technique": tech,
                "vertex_invocations": float(t["vertex_invocations"]),
                "fragments_shaded": float(t["fragments_shaded"]),
                "overshading": float(t["overshading"]),
                "tiles_skipped_pct": 100.0 * skipped / (rendered + skipped) if rendered + skipped else np.nan,
                "samples_per_pixel": float(t["samples_per_pixel"]) if pd.notna(t.get("samples_per_pixel")) else np.nan,
                "mssim_min": float(t["mssim_min"]) if pd.notna(t.get("mssim_min")) else np.nan,
                "cycles": float(t["cycles"]), "energy": float(t["energy"]),
            }
            if base is not None:
                row["overshading_vs_baseline"] = (row["overshading"] / float(base["overshading"])
                                                  if base["overshading"] else np.nan)
                row["speedup"] = float(base["cycles"]) / row["cycles"] if row["cycles"] else np.nan
                row["energy_vs_baseline"] = row["energy"] / float(base["energy"]) if base["energy"] else np.nan
            if ref_base is not None:
                row["speedup_vs_original_baseline"] = (float(ref_base["cycles"]) / row["cycles"]
                                                       if row["cycles"] else np.nan)
            rows.append(row)
    return pd.DataFrame(rows)


def _range(values, fmt="{:.2f}") -> str:
    v = np.asarray([x for x in values if np.isfinite(x)])
    if not len(v):
        return "n/a"
    if len(v) == 1:
        return fmt.format(v[0])
    return f"{fmt.format(v.min())}-{fmt.format(v.max())} (mean {fmt.format(v.mean())})"


def first_order_figures(data: dict, scope) -> list[Figure]:
    """The section's figures that read the scope's first order only (the technique bars, the
    DSR and RE maps, the timelines): the same from the first order's runs alone as from the
    whole matrix, so the report draws them while the other orders still run."""
    m = matrix_frame(data)
    if not len(m):
        return []
    first = scope.orders[0]
    sec = Section("simulate", "")
    own = m[m["order"] == first]
    _technique_bars(sec, own)
    _maps(sec, data, own)
    _timelines(sec, data, first)
    return sec.figures


def simulate_section(data: dict, scope, drawn: list[Figure] | None = None) -> tuple[Section, pd.DataFrame]:
    """Section 5 from the matrix's data; ``drawn``: :func:`first_order_figures`, when they were
    drawn already."""
    sec = Section("simulate", "5. Whole frames on a tile-based GPU model (simulate)")
    m = matrix_frame(data)
    sec.commands = list(data["commands"])
    first = scope.orders[0]
    sec.paragraphs.append(
        f"Every shipped scene ({', '.join(data['scenes'])}) with every technique "
        f"({', '.join(data['techniques'])}) and the triangle orders {', '.join(scope.orders)}: "
        f"{len(data['runs'])} runs, {scope.describe()}. Each row is what "
        "`meshopt-batch simulate` prints for the same options. Frame-to-frame techniques (VRO, "
        "EVR, RE, DSR) learn from frame N for frame N+1, so their first frame is the baseline's "
        "and short runs understate them.")
    for (scene, order), why in data["errors"].items():
        sec.paragraphs.append(f"Not run: {scene} with order {order}: {why}.")
    if not len(m):
        sec.paragraphs.append("No simulation finished, so this section has no figures.")
        return sec, m
    own = m[m["order"] == first]
    cols = ["scene", "technique", "vertex_invocations", "fragments_shaded", "overshading",
            "overshading_vs_baseline", "tiles_skipped_pct", "samples_per_pixel", "mssim_min",
            "speedup", "energy_vs_baseline"]
    table = own[[c for c in cols if c in own]].astype({"vertex_invocations": "int64", "fragments_shaded": "int64"})
    sec.tables.append(Table(f"Techniques on each scene ({first} triangle order)",
                            table.rename(columns={
                                "vertex_invocations": "vertex inv.", "fragments_shaded": "frag. shaded",
                                "overshading_vs_baseline": "overshading / baseline",
                                "tiles_skipped_pct": "tiles skipped %", "samples_per_pixel": "samples/pixel",
                                "mssim_min": "min MSSIM", "speedup": "speed-up",
                                "energy_vs_baseline": "energy / baseline"}),
                            floatfmt="{:.3f}", best=TECHNIQUE_BEST))
    reorder = _reorder_summary(own)
    if reorder:
        sec.paragraphs.append(reorder)
    cut_notes = []
    for (scene, order), res in data["runs"].items():
        if order != first:
            continue
        for tech, summ in res.summaries.items():
            after = (summ or {}).get("mssim_after_cut") or []
            if after:
                cut_notes.append(f"{scene} {tech}: " + ", ".join(f"frame {int(f)} MSSIM {float(q):.3f}"
                                                                 for f, q in after))
    size_notes = {(summ or {}).get("dsr_params_note") for (_, order), res in data["runs"].items()
                  if order == first for summ in res.summaries.values()} - {None}
    for note in sorted(size_notes):
        sec.paragraphs.append(f"DSR at this scope's screen size: {note}; min MSSIM may fall below 0.95 here.")
    if cut_notes:
        sec.paragraphs.append(
            "Camera cuts: the first frame after a cut is rendered with the sampling rates DSR "
            "learned from the previous shot, so the 0.95 rule does not judge it and min MSSIM "
            "above leaves it out; after it every tile restarts at full rate. "
            + "; ".join(cut_notes) + ".")
    piv = m.pivot_table(index=["scene", "order"], columns="technique", values="speedup_vs_original_baseline",
                        sort=False).reset_index()
    vinv = m[m["technique"] == "baseline"].set_index(["scene", "order"])["vertex_invocations"]
    piv.insert(2, "vertex inv.", [int(vinv.get((s, o), -1)) for s, o in zip(piv["scene"], piv["order"], strict=False)])
    piv.columns.name = None
    sec.tables.append(Table("End-to-end matrix: speed-up (cycles) over the baseline in the scene's own order",
                            piv, floatfmt="{:.3f}", best=Best("row", among=tuple(piv.columns[3:]), lower=False)))

    overdraw_tables(sec, data, m, scope)
    figures = first_order_figures(data, scope) if drawn is None else drawn
    _order_bars(sec, m, scope)                    # between the technique bars and the maps
    sec.figures = ([f for f in figures if f.name == "technique_bars"] + sec.figures
                   + [f for f in figures if f.name != "technique_bars"])
    return sec, m


#: Best cells of the techniques table: per scene, the least work and the most saved.
TECHNIQUE_BEST = (
    Best("column", among=("frag. shaded", "overshading", "overshading / baseline", "energy / baseline"),
         group="scene"),
    Best("column", among=("tiles skipped %", "speed-up"), group="scene", lower=False),
)

#: Techniques whose gain on top of each triangle order the overdraw table states.
OVERDRAW_TECHNIQUES = ("vro", "evr", "dr")


def _pct(x: float) -> str:
    return f"{100.0 * x:+.1f}%"


def overdraw_tables(sec, data: dict, m: pd.DataFrame, scope) -> None:
    """Issue 20: per overdraw scene, each order's vertex work, overshading and cost-table figures,
    with what VRO, EVR and DR gain on top of it, and a paragraph on how much of the mesh-level
    gain (batch+overdraw over batch) survives under each technique."""
    for scene in [s for s in data["scenes"] if s in scope.overdraw_scenes]:
        part = m[m["scene"] == scene]
        orders = [o for o in scope.orders_for(scene) if o in set(part["order"])]
        if not orders:
            continue
        cell = part.set_index(["order", "technique"])
        techs = [t for t in OVERDRAW_TECHNIQUES if t in set(part["technique"])]
        first = data["runs"][(scene, orders[0])]
        work, cost = [], []
        for o in orders:
            b = cell.loc[(o, "baseline")]
            row = {"order": o, "vertex inv.": int(b["vertex_invocations"]), "frag. shaded": int(b["fragments_shaded"]),
                   "overshading": b["overshading"]}
            row.update({f"{t.upper()} overshading": cell.loc[(o, t), "overshading"] for t in techs})
            work.append(row)
            c = {"order": o, "Mcycles": b["cycles"] / 1e6, "energy (mJ)": b["energy"] / 1e6}
            c.update({f"{t.upper()} speed-up": cell.loc[(o, t), "speedup"] for t in techs})
            c.update({f"{t.upper()} energy": cell.loc[(o, t), "energy_vs_baseline"] for t in techs})
            cost.append(c)
        how = (f"{first.frames} frames at {first.width}x{first.height}, vertex work under the "
               f"{first.profile} model")
        cost = pd.DataFrame(cost)
        faster = tuple(c for c in cost.columns if c.endswith("speed-up"))
        sec.tables.append(Table(f"Overdraw-aware triangle orders on {scene} ({how}): work per order and "
                                "overshading (shaded fragments per covered pixel) under each technique",
                                pd.DataFrame(work), floatfmt="{:.4f}", best=Best("column")))
        sec.tables.append(Table(f"Overdraw-aware triangle orders on {scene}: the cost table's cycles and "
                                "energy of the baseline, and each technique's speed-up and energy "
                                "relative to the baseline of the same order", cost, floatfmt="{:.3f}",
                                best=(Best("column", among=tuple(c for c in cost.columns[1:] if c not in faster)),
                                      Best("column", among=faster, lower=False))))
        text = _overdraw_paragraph(scene, data, cell, orders, techs)
        if text:
            sec.paragraphs.append(text)


def _overdraw_paragraph(scene, data, cell, orders, techs) -> str:
    """The mesh-level gain of batch+overdraw over batch, and how much of it each technique keeps."""
    base, ours, peer = "batch", "batch+overdraw", "meshoptimizer_overdraw"
    if base not in orders or ours not in orders:
        return ""

    def val(order, tech, col):
        return float(cell.loc[(order, tech), col])

    def tot(order, col):
        return float(data["runs"][(scene, order)].totals.loc["baseline", col])

    inv_b, inv_o = val(base, "baseline", "vertex_invocations"), val(ours, "baseline", "vertex_invocations")
    fr_b, fr_o = val(base, "baseline", "fragments_shaded"), val(ours, "baseline", "fragments_shaded")
    gain = fr_b - fr_o
    text = (f"Does mesh-level ordering still pay on {scene}? In program order with early-Z, {ours} shades "
            f"{val(ours, 'baseline', 'overshading'):.3f} fragments per covered pixel against {base}'s "
            f"{val(base, 'baseline', 'overshading'):.3f}")
    if peer in orders:
        text += (f" and meshoptimizer's overdraw order's {val(peer, 'baseline', 'overshading'):.3f} (whose "
                 f"vertex shading is {_pct(val(peer, 'baseline', 'vertex_invocations') / inv_b - 1)} of "
                 f"{base}'s)")
    text += (f"; it pays {_pct(inv_o / inv_b - 1)} vertex-shader invocations for that "
             f"({int(inv_o):,} against {int(inv_b):,}). The mesh-level gain is {int(gain):,} fragments "
             f"({100.0 * gain / fr_b if fr_b else 0.0:.1f}% of {base}'s shaded fragments).")
    kept = []
    for t in techs:
        g = val(base, t, "fragments_shaded") - val(ours, t, "fragments_shaded")
        share = f"{100.0 * g / gain:.0f}% of it" if gain > 0 else "n/a"
        kept.append(f"under {t.upper()} {int(g):,} fragments ({share}; overshading "
                    f"{val(base, t, 'overshading'):.3f} -> {val(ours, t, 'overshading'):.3f})")
    if kept:
        text += " What survives on top of each technique: " + "; ".join(kept) + "."
    d_geo = tot(ours, "geometry_cycles") - tot(base, "geometry_cycles")
    d_ras = tot(ours, "raster_cycles") - tot(base, "raster_cycles")
    d_cyc = val(ours, "baseline", "cycles") / val(base, "baseline", "cycles") - 1
    d_en = val(ours, "baseline", "energy") / val(base, "baseline", "energy") - 1
    text += (f" In the cost table's terms the overdraw order changes the baseline's cycles by {_pct(d_cyc)} "
             f"and its energy by {_pct(d_en)}: the geometry stage {d_geo / 1e6:+.2f} Mcycles (vertex shading), "
             f"the raster stage {d_ras / 1e6:+.2f} Mcycles (a tile takes as long as its slowest stage: list "
             "fetch, rasterization, shading or flush).")
    if techs:
        dc = [_pct(val(ours, t, "cycles") / val(base, t, "cycles") - 1) for t in techs]
        de = [_pct(val(ours, t, "energy") / val(base, t, "energy") - 1) for t in techs]
        text += (f" The same comparison on top of {', '.join(t.upper() for t in techs)}: cycles "
                 f"{', '.join(dc)}; energy {', '.join(de)}.")
    verdict = ("so on this model the overdraw order pays for itself" if d_cyc < 0 and d_en < 0 else
               "so on this model the extra vertex shading outweighs the fragments saved")
    return text + f" Against {base} in program order, {verdict}."


def _reorder_summary(own: pd.DataFrame) -> str:
    """One sentence per scene: how far VRO and EVR stay above the oracle's overshading."""
    parts = []
    for scene, g in own.groupby("scene", sort=False):
        o = g.set_index("technique")["overshading"]
        if not {"vro", "evr", "oracle", "baseline"} <= set(o.index) or o["baseline"] <= o["oracle"] + 1e-9:
            continue
        gap = {t: o[t] - o["oracle"] for t in ("vro", "evr")}
        closer = "EVR" if gap["evr"] < gap["vro"] else "VRO"
        parts.append(f"{scene}: baseline {o['baseline']:.2f}, VRO {o['vro']:.2f}, EVR {o['evr']:.2f}, "
                     f"oracle {o['oracle']:.2f} ({closer} closer to the oracle)")
    if not parts:
        return ""
    return ("Overshading (shaded fragments per covered pixel) where reordering has something to win: "
            + "; ".join(parts) + ". VRO sorts whole draws: it can undo a far-to-near submission "
            "completely when every object is its own draw (city-unordered), but not inside a draw "
            "(city-batched's static batches). EVR moves single primitives, tile by tile, but only "
            "those it predicts hidden behind the tile's farthest visible point of the previous "
            "frame: little where sky or ground shows in the tile or the camera moves fast.")


def _technique_bars(sec, own):
    techs = [t for t in dict.fromkeys(own["technique"]) if t != "baseline"]
    scenes = list(dict.fromkeys(own["scene"]))
    fig, axes = new_figure(1, 3, 13.5, 3.8)
    grouped_bars(axes[0], own[own["technique"] != "baseline"], "overshading_vs_baseline", "technique",
                 "scene", groups=techs, hues=scenes)
    axes[0].axhline(1.0, color="k", lw=0.8)
    axes[0].set_ylabel("overshading / baseline")
    axes[0].set_title("overshading relative to the baseline", fontsize=9)
    re_like = [t for t in techs if "re" in t.split("+")]
    grouped_bars(axes[1], own, "tiles_skipped_pct", "technique", "scene", groups=re_like, hues=scenes)
    axes[1].set_ylabel("% of tiles skipped")
    axes[1].set_title("tiles skipped (RE family)", fontsize=9)
    dsr_like = [t for t in techs if "dsr" in t.split("+")]
    grouped_bars(axes[2], own, "samples_per_pixel", "technique", "scene", groups=dsr_like, hues=scenes)
    axes[2].set_ylabel("samples per pixel")
    axes[2].set_title("sampling rate (DSR family)", fontsize=9)
    for ax, col, groups in ((axes[0], "overshading_vs_baseline", techs), (axes[1], "tiles_skipped_pct", re_like),
                            (axes[2], "samples_per_pixel", dsr_like)):
        for i, t in enumerate(groups):
            ref = BAR_REFERENCES.get((col, t))
            if ref is not None:
                ax.hlines(ref, i - 0.45, i + 0.45, colors="k", linestyles="--", lw=1.3, zorder=4,
                          label="published" if ax is axes[2] else None)
    handles, labels = axes[2].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=len(labels), fontsize=7)
    by = own.groupby("technique")
    parts = []
    for t in techs:
        parts.append(f"{t} {_range(by.get_group(t)['overshading_vs_baseline'], '{:.2f}x')}")
    skip = "; ".join(f"{t} {_range(by.get_group(t)['tiles_skipped_pct'], '{:.1f}%')}" for t in re_like)
    spp = "; ".join(f"{t} {_range(by.get_group(t)['samples_per_pixel'], '{:.3f}')}" for t in dsr_like)
    note = ""
    if re_like:
        note = (" Overshading is shaded fragments per covered pixel of the frame; a tile that RE skips keeps "
                "last frame's picture and its covered pixels, so the RE family's overshading falls with the "
                "fragments of the tiles it skips.")
    sec.figures.append(Figure(
        "technique_bars", fig,
        f"Per technique and scene ({len(scenes)} scenes); dashed black: the papers' published averages ("
        + ", ".join(f"{t} {v:g}" + {"overshading_vs_baseline": "x overshading", "tiles_skipped_pct": "% tiles skipped",
                                     "samples_per_pixel": " samples per fragment"}[c]
                    for (c, t), v in BAR_REFERENCES.items())
        + "). Overshading relative to the baseline: "
        + "; ".join(parts) + f". Tiles skipped: {skip or 'n/a'}. Samples per pixel: {spp or 'n/a'}." + note))


def _order_bars(sec, m, scope):
    base = m[m["technique"] == "baseline"].copy()
    if base["order"].nunique() < 2:
        return
    ref = base[base["order"] == scope.orders[0]].set_index("scene")
    base["vertex inv. / own order"] = [v / ref.loc[s, "vertex_invocations"] if s in ref.index else np.nan
                                       for s, v in zip(base["scene"], base["vertex_invocations"], strict=False)]
    best = m.loc[m.groupby(["scene", "order"])["cycles"].idxmin()]
    fig, axes = new_figure(1, 2, 11, 3.6)
    grouped_bars(axes[0], base, "vertex inv. / own order", "scene", "order", hues=list(scope.all_orders))
    axes[0].axhline(1.0, color="k", lw=0.8)
    axes[0].set_ylabel("vertex-shader invocations / own order")
    axes[0].set_title("geometry stage: vertex shading per triangle order", fontsize=9)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=len(labels), fontsize=7)
    grouped_bars(axes[1], best, "speedup_vs_original_baseline", "scene", "order", hues=list(scope.all_orders))
    axes[1].set_ylabel("speed-up over baseline, own order")
    axes[1].set_title("best technique per order: whole-frame speed-up", fontsize=9)
    parts = []
    for o in scope.all_orders[1:]:
        v = base[base["order"] == o]["vertex inv. / own order"]
        parts.append(f"{o} {_range(v, '{:.3f}x')}")
    top = best.loc[best["speedup_vs_original_baseline"].idxmax()]
    sec.figures.append(Figure(
        "order_bars", fig,
        "Mesh optimizers end to end. Left: vertex-shader invocations of the baseline relative to the "
        "scenes' own index order: " + "; ".join(parts) + ". Right: speed-up of the best technique "
        f"per scene and order; the largest is {top['speedup_vs_original_baseline']:.3f}x "
        f"({top['technique']} with {top['order']} order on {top['scene']})."))


def _maps(sec, data, own):
    """DSR rate map and RE / EVR+RE skipped-tile map over the last recorded frame."""
    maps = data["maps"]
    spp = own[own["technique"] == "dsr"].set_index("scene")["samples_per_pixel"]
    cand = [s for s in spp.sort_values().index if maps.get(s, {}).get("requests", {}).get("dsr")]
    if cand:
        scene = cand[0]
        info = maps[scene]
        fr = info["frame"]
        res = data["runs"][(scene, "original")]
        tiles_x = -(-res.width // res.tile)
        tiles_y = -(-res.height // res.tile)
        fig, axes = new_figure(1, 2, 13, 4.4)
        ok = 0
        for ax, tech in zip(axes, RATE_TECHNIQUES, strict=False):
            req = info["requests"].get(tech, {}).get(fr, {})
            rate = req.get("rate")
            if rate is None or tech not in info["colour"]:
                ax.set_title(f"{tech}: no rate request recorded", fontsize=9)
                ax.axis("off")
                continue
            ok += 1
            cmap = ListedColormap(["#66c2a5", "#3288bd", "#fdae61", "#d53e4f"])
            shown = np.where(rate > 0, rate, np.nan).astype(float)      # full-rate tiles stay clear
            tile_overlay(ax, info["colour"][tech], shown, tiles_x, tiles_y, res.tile, cmap,
                         vmin=0.5, vmax=4.5, title=f"{tech}, {scene}, frame {fr} (clear: full rate)",
                         colorbar_label="sampling rate", ticks=range(1, 5), ticklabels=RATE_LABELS[1:])
        req = info["requests"]["dsr"].get(fr, {}).get("rate")
        if ok and req is not None:
            share = [100.0 * np.mean(req == k) for k in range(5)]
            sec.figures.append(Figure(
                "dsr_rate_map", fig,
                f"DSR's per-tile sampling rate on {scene} (the scene where DSR sampled least), frame {fr}, "
                "over the frame DSR rendered: "
                + ", ".join(f"{lab} on {p:.0f}% of tiles" for lab, p in zip(RATE_LABELS, share, strict=False))
                + f"; over the whole run {spp[scene]:.3f} samples per pixel. DSR sets each tile's rate for "
                "frame N+1 from the DCT of its colours in frame N, so tiles with little high-frequency "
                "content are the ones sampled sparsely."))
    # skipped-tile map: the scene where EVR adds most to RE (then: most tiles skipped)
    best_scene, best_key = None, None
    for scene, info in maps.items():
        fr = info["frame"]
        reqs = info["requests"]
        sk = {t: np.asarray(reqs.get(t, {}).get(fr, {}).get("skip", np.zeros(0, bool)), bool) for t in SKIP_TECHNIQUES}
        if not all(len(v) for v in sk.values()):
            continue
        key = (int(np.sum(sk["evr+re"] & ~sk["re"])), int(np.sum(sk["evr+re"] | sk["re"])))
        if best_key is None or key > best_key:
            best_scene, best_key = scene, key
    if best_scene is None:
        return
    info = maps[best_scene]
    fr = info["frame"]
    res = data["runs"][(best_scene, "original")]
    tiles_x = -(-res.width // res.tile)
    tiles_y = -(-res.height // res.tile)
    n_tiles = tiles_x * tiles_y
    skips = {t: info["requests"].get(t, {}).get(fr, {}).get("skip") for t in SKIP_TECHNIQUES}
    re_s = skips.get("re")
    evr_s = skips.get("evr+re")
    re_s = np.zeros(n_tiles, bool) if re_s is None else re_s.astype(bool)
    evr_s = np.zeros(n_tiles, bool) if evr_s is None else evr_s.astype(bool)
    cat = np.full(n_tiles, np.nan)
    cat[re_s & evr_s] = 0
    cat[re_s & ~evr_s] = 1
    cat[~re_s & evr_s] = 2
    image = info["colour"].get("evr+re", info["colour"].get("re"))
    if image is None:
        return
    fig, (ax,) = new_figure(1, 1, 8.5, 5.2)
    cmap = ListedColormap(["#2b83ba", "#fdae61", "#d7191c"])
    tile_overlay(ax, image, cat, tiles_x, tiles_y, res.tile, cmap, vmin=-0.5, vmax=2.5,
                 title=f"tiles skipped at frame {fr} of {best_scene}", colorbar_label="skipped by",
                 ticks=range(3), ticklabels=["RE and EVR+RE", "RE only", "EVR+RE only"])
    sec.figures.append(Figure(
        "skip_map", fig,
        f"Tiles skipped by Rendering Elimination on {best_scene} at frame {fr} (the scene where EVR adds "
        f"most skipped tiles to RE), over the frame EVR+RE rendered (clear: rendered): RE skips "
        f"{int(re_s.sum())} of {n_tiles} tiles "
        f"({100.0 * re_s.mean():.1f}%), EVR+RE {int(evr_s.sum())} ({100.0 * evr_s.mean():.1f}%); "
        f"{int((evr_s & ~re_s).sum())} tiles are skipped only because EVR left predicted-occluded "
        "primitives out of the signature, "
        f"{int((re_s & ~evr_s).sum())} only by plain RE."))


def _timelines(sec, data, first):
    runs = [(s, r) for (s, o), r in data["runs"].items() if o == first]
    if not runs:
        return
    cols = 3 if len(runs) > 2 else len(runs)
    rows = -(-len(runs) // cols)
    fig, axes = new_figure(rows, cols, 4.6 * cols, 3.2 * rows)
    notes = []
    for ax, (scene, res) in zip(axes, runs, strict=False):
        pf = res.per_frame
        base = pf[pf["technique"] == "baseline"].set_index("frame")["cycles"]
        for tech, part in pf.groupby("technique", sort=False):
            rel = part["cycles"].to_numpy() / base.reindex(part["frame"]).to_numpy()
            if tech == "baseline":
                ax.plot(part["frame"], rel, "k--", lw=1.2, label=tech, zorder=5)
            else:
                ax.plot(part["frame"], rel, lw=1.0, label=tech, marker=".", ms=3)
        ax.set_title(f"{scene} (baseline {base.mean() / 1e6:.2f} Mcycles/frame)", fontsize=9)
        ax.set_xlabel("frame", fontsize=8)
        ax.set_ylabel("cycles / baseline", fontsize=8)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.tick_params(labelsize=7)
        ax.grid(True, alpha=0.3)
        later = pf[pf["frame"] > pf["frame"].min()]
        if len(later) and len(base):
            per = later.groupby("technique")["cycles"].sum()
            ref = base[base.index > pf["frame"].min()].sum()
            bt = per.drop("baseline", errors="ignore").idxmin()
            notes.append(f"{scene}: {bt} {ref / per[bt]:.2f}x")
    for ax in axes[len(runs):]:
        ax.axis("off")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 10), fontsize=7)
    sec.figures.append(Figure(
        "timelines", fig,
        "Cycles per frame of every technique relative to the baseline's on the same frame (dashed). "
        "Frame-to-frame techniques render their first frame like the baseline; from the second frame "
        "on, the cheapest technique and its speed-up over the baseline on those frames: "
        + "; ".join(notes) + "."))
