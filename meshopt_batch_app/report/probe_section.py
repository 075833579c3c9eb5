"""Report section 4: this machine's GPU, measured (``meshopt-batch probe``).

Runs :func:`gpu_probe.experiments.run_experiments` (paper 001 sec. 3.3), :func:`gpu_probe.profile_fit.fit`
and :func:`gpu_probe.accuracy.accuracy_table` on the report's meshes; nothing is measured or
predicted here that those functions do not compute themselves.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from gpu_probe.accuracy import accuracy_table, plot_accuracy
from gpu_probe.context import INSTALL_HINT, gl_info
from gpu_probe.experiments import run_experiments
from gpu_probe.profile_fit import fit
from meshopt_batch.model.profiles import builtin_profile_names
from meshopt_batch.support.errors import MeshoptBatchError
from meshopt_batch.support.files import atomic_write

from .document import Best, Figure, Section, Table
from .figures import new_figure

#: Experiments drawn as staircases (name, what the y axis shows). Except for the staircase
#: itself, the curve is the measured count minus the count with no limit or forgetting.
STAIRCASES = (
    ("staircase", "invocations"),
    ("uniques", "extra invocations"),
    ("lookback", "extra invocations"),
    ("lru", "extra invocations"),
    ("refresh", "extra invocations"),
    ("slot_conflicts", "X shaded again"),
)

#: fifo/lru cache sizes of the accuracy sweep (paper 001 Fig. 2) kept small in the report.
CACHE_SIZES = (8, 16, 32, 64, 128, 256)


def run_probe(meshes, scope, workdir: Path, progress=None) -> dict:
    """Measure this machine's GPU; ``{"available": False, "reason": ...}`` without OpenGL."""
    t0 = time.perf_counter()
    try:
        info = gl_info()
    except MeshoptBatchError as exc:
        return {"available": False, "reason": str(exc), "hint": INSTALL_HINT,
                "seconds": time.perf_counter() - t0}
    steps = ["experiments", "fit"] + [m.name for m in meshes]
    bar = progress(len(steps), "probe") if progress else None

    def tick(label):
        if bar is not None:
            bar.set_postfix_str(label)
            bar.update(1)

    suite = run_experiments()
    tick("experiments")
    res = fit(suite, name="fitted", meshes=(), random_count=scope.probe_random)
    tick("fit")
    fitted_path = workdir / "fitted-profile.json"
    atomic_write(fitted_path, json.dumps(res.profile.to_dict(), indent=2))
    profiles = builtin_profile_names() + [str(fitted_path)]
    profiles += [f"fifo:{n}" for n in CACHE_SIZES] + [f"lru:{n}" for n in CACHE_SIZES]
    frames = []
    for m in meshes:
        frames.append(accuracy_table(meshes=[m.path], orders=scope.probe_orders, profiles=profiles))
        tick(m.name)
    if bar is not None:
        bar.close()
    acc = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    acc_png = None
    if len(acc):
        acc_png = plot_accuracy(acc, workdir / "accuracy.png").read_bytes()
    return {"available": True, "info": info, "suite": suite, "fit": res, "accuracy": acc,
            "accuracy_png": acc_png, "fitted_path": fitted_path,
            "seconds": time.perf_counter() - t0}


def _fmt_steps(steps, n=4) -> str:
    s = ", ".join(str(v) for v in steps[:n])
    return s + (", ..." if len(steps) > n else "") if steps else "none"


def _measured_table(acc: pd.DataFrame) -> pd.DataFrame:
    """Rows meshes (original order), columns measured ASR and each batch profile's prediction."""
    orig = acc[(acc["order"] == "original") & (acc["kind"] == "batch")]
    g = orig.groupby(["mesh", "profile"], sort=False).agg(
        triangles=("triangles", "sum"), measured=("measured", "sum"), predicted=("predicted", "sum"))
    g = g.reset_index()
    rows = []
    for mesh, part in g.groupby("mesh", sort=False):
        tri = int(part["triangles"].iloc[0])
        row = {"mesh": mesh, "triangles": tri, "measured ASR": part["measured"].iloc[0] / tri}
        for _, r in part.iterrows():
            row[r["profile"]] = r["predicted"] / tri
        rows.append(row)
    return pd.DataFrame(rows)


def probe_section(data: dict, meshes) -> Section:
    sec = Section("probe", "4. This machine's GPU, measured (probe)")
    if not data.get("available"):
        sec.paragraphs += [
            "No OpenGL context could be created on this machine, so nothing was measured: "
            f"{data['reason']}.",
            f"To measure the GPU: {data['hint']}. Then run `meshopt-batch probe --fit` or "
            "re-run this report. The model figures in the other sections do not need OpenGL.",
        ]
        return sec
    info, suite, res, acc = data["info"], data["suite"], data["fit"], data["accuracy"]
    prof = res.profile
    sec.commands = ["meshopt-batch probe --fit"] + [f"meshopt-batch probe {m.shown}" for m in meshes]
    sec.paragraphs.append(
        f"Renderer: {info['renderer']} ({info['vendor']}; OpenGL {info['version']}). "
        "Vertex-shader invocations are counted by "
        f"{'the pipeline-statistics query and ' if info['pipeline_statistics'] else ''}"
        f"an atomic counter in the shader. The experiments of paper 001 sec. 3.3 took "
        f"{suite.seconds:.1f} s, the fit and its verification {res.seconds:.1f} s.")

    # fitted profile
    ver = res.verification.summary() if res.verification is not None else None
    rep_draws = sum(v["draws"] for v in res.reproduction.values())
    rep_bad = sum(v["mismatches"] for v in res.reproduction.values())
    fit_rows = [("MAX_SIZE", prof.max_size), ("MAX_UNIQUES", prof.max_uniques),
                ("memory module", f"{prof.memory} {prof.memory_size}"),
                ("16-bit boundaries matter", prof.boundary_16bit),
                ("experiment draws reproduced exactly", f"{rep_draws - rep_bad}/{rep_draws}")]
    if ver:
        fit_rows.append(("random buffers predicted exactly", f"{ver['cases'] - ver['mismatches']}/{ver['cases']}"))
    if not res.fits:
        fit_rows.append(("a known memory kind fits", "no: the closest profile is shown"))
    sec.tables.append(Table(f"Profile fitted on {info['renderer']}",
                            pd.DataFrame(fit_rows, columns=["parameter", "value"])))
    sec.paragraphs.append("How the fit decided: " + " ".join(r.strip() + ("" if r.strip().endswith(".") else ".")
                                                             for r in res.reasons))

    # predicted vs measured
    if len(acc):
        table = _measured_table(acc)
        sec.tables.append(Table("Measured ASR (original order) and each profile's prediction (the closest "
                                "prediction of each mesh bold)", table, floatfmt="{:.4f}",
                                best=Best("row", among=tuple(table.columns[3:]), near="measured ASR")))
        batch = acc[acc["kind"] == "batch"]
        mse = batch.groupby("profile", sort=False)["sq_error"].mean()
        exact = batch.groupby("profile", sort=False)["error_asr"].apply(lambda s: int((s == 0).sum()))
        cases = batch.groupby("profile", sort=False).size()
        best = mse.idxmin()
        fig, (ax,) = new_figure(1, 1, 5.6, 4.6)
        lo = min(batch["measured_asr"].min(), batch["predicted_asr"].min())
        hi = max(batch["measured_asr"].max(), batch["predicted_asr"].max())
        ax.plot([lo, hi], [lo, hi], "k--", lw=0.8, label="predicted = measured")
        markers = "osD^vPX*"
        for i, (name, part) in enumerate(batch.groupby("profile", sort=False)):
            ax.scatter(part["measured_asr"], part["predicted_asr"], s=40 - 3 * i, alpha=0.9, label=name,
                       marker=markers[i % len(markers)], facecolors="none",
                       edgecolors=f"C{i % 10}", linewidths=1.1)
        ax.set_xlabel(f"measured ASR on {info['renderer']}")
        ax.set_ylabel("predicted ASR")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
        n_draws = len(batch[batch["profile"] == best])
        sec.figures.append(Figure(
            "probe_scatter", fig,
            f"Predicted vs measured ASR for {n_draws} draws ({acc['mesh'].nunique()} meshes in the "
            f"orders {', '.join(dict.fromkeys(acc['order']))}). The closest profile is {best}: MSE "
            f"{mse[best]:.3g}, {exact[best]}/{cases[best]} draws exact; "
            + "; ".join(f"{p} MSE {mse[p]:.3g}" for p in mse.index if p != best)
            + ". A profile on the dashed line predicts this GPU's vertex-shader work exactly."))
        if data.get("accuracy_png"):
            sweep = acc[acc["kind"] != "batch"].groupby("profile", sort=False)["sq_error"].mean()
            cbest = sweep.idxmin() if len(sweep) else None
            sec.figures.append(Figure(
                "probe_cache_sweep", None,
                "Paper 001 Fig. 2 on this machine: MSE of the predicted ASR for global FIFO/LRU "
                f"caches of {', '.join(str(c) for c in CACHE_SIZES)} entries and for the batch "
                f"profiles (horizontal lines). The best cache model is {cbest} "
                f"(MSE {sweep.min():.3g}); the best batch profile {best} (MSE {mse[best]:.3g})."
                if cbest else "MSE of the predicted ASR per profile.",
                png=data["accuracy_png"]))

    # staircases
    present = [(n, y) for n, y in STAIRCASES if n in suite.experiments]
    if present:
        cols = 3
        rows = (len(present) + cols - 1) // cols
        fig, axes = new_figure(rows, cols, 10.5, 3.0 * rows)
        for ax, (name, ylabel) in zip(axes, present, strict=False):
            e = suite[name]
            if name == "staircase" or e.expected is None:
                ax.plot(e.x, e.measured, lw=1.2, label="measured")
                if e.expected is not None:
                    ax.plot(e.x, e.expected, "--", lw=0.9, color="grey", label="with no batches")
            else:
                ax.plot(e.x, np.asarray(e.measured) - np.asarray(e.expected), lw=1.2)
            for s in e.steps[:8]:
                ax.axvline(s, color="r", lw=0.5, alpha=0.5)
            ax.set_title(name, fontsize=9)
            ax.set_xlabel(e.x_label, fontsize=8)
            ax.set_ylabel(ylabel, fontsize=8)
            ax.tick_params(labelsize=7)
        for ax in axes[len(present):]:
            ax.axis("off")
        axes[0].legend(fontsize=7)
        d = suite.derived()
        parts = []
        st = suite["staircase"]
        parts.append(f"the {{0,1,2}} staircase steps at indices {_fmt_steps(st.steps)}, so a batch "
                     f"holds MAX_SIZE = {d['staircase'].get('max_size')} indices")
        if "uniques" in d:
            mu = d["uniques"].get("max_uniques")
            parts.append("no unique-vertex limit shows below MAX_SIZE" if mu is None
                         else f"a batch takes at most MAX_UNIQUES = {mu} new vertices")
        if "lookback" in d:
            lb = d["lookback"].get("lookback")
            parts.append("a repeated vertex is always reused within a batch (no look-back limit)"
                         if lb is None else f"reuse reaches back {lb} index positions")
        if "lru" in d and d["lru"].get("first_failure_k") is not None:
            parts.append(f"with k = {d['lru']['first_failure_k']} distinct vertices in between a "
                         "vertex is shaded again")
        if "slot_conflicts" in d and d["slot_conflicts"].get("direct_mapped_modulus"):
            parts.append(f"a single vertex X+d evicts X exactly when d is a multiple of "
                         f"{d['slot_conflicts']['direct_mapped_modulus']} (a direct-mapped table)")
        sec.figures.append(Figure(
            "probe_staircases", fig,
            f"The experiments' raw counts on {info['renderer']} (staircase: invocations; the others: "
            "invocations beyond what a GPU with no limit would shade; red lines: where the count steps): "
            + "; ".join(parts) + ". Paper 001 sec. 3.3 found MAX_SIZE 96 and MAX_UNIQUES 32 "
            "on NVIDIA, 384-index batches with an LRU of 15 on AMD."))
    return sec
