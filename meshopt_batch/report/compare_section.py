"""Report section 1: which triangle order is best for which GPU (``meshopt-batch compare``).

The numbers come from :mod:`meshopt_batch.compare`, the module the ``compare`` command prints;
this section only lays them out (a Table-1-style table per profile, the optimizers' run times,
ASR bars) and draws one mesh coloured by batch (paper 001 Fig. 3).
"""

from __future__ import annotations

import time

import pandas as pd

from .document import Figure, Section, Table
from .figures import grouped_bars, new_figure, plot_mesh_batches


def run_compare(meshes, scope, progress=None) -> dict:
    """Run :func:`meshopt_batch.compare.compare` on the report's meshes (tidy frame)."""
    t0 = time.perf_counter()
    try:
        from .. import compare as cmp
    except ImportError as exc:
        return {"available": False, "reason": f"meshopt_batch.compare is not importable ({exc})",
                "seconds": time.perf_counter() - t0}
    frame = cmp.report_frame([m.mesh for m in meshes], profiles=scope.compare_profiles,
                             progress=progress)
    return {"available": True, "frame": frame, "seconds": time.perf_counter() - t0}


def compare_section(data: dict, meshes) -> tuple[Section, pd.DataFrame | None]:
    sec = Section("compare", "1. Which triangle order for which GPU (compare)")
    paths = " ".join(m.shown for m in meshes)
    sec.commands = [f"meshopt-batch compare {paths}"]
    if not data.get("available"):
        sec.paragraphs.append(
            f"The comparison could not run: {data['reason']}. The other sections do not depend on it.")
        _batch_picture(sec, meshes)
        return sec, None
    df = data["frame"]
    _tables(sec, df)
    _asr_bars(sec, df)
    _batch_picture(sec, meshes)
    return sec, df


def _tables(sec, df):
    methods = list(dict.fromkeys(df["method"]))
    for profile, part in df.groupby("profile", sort=False):
        piv = part.pivot_table(index="mesh", columns="method", values="asr", sort=False)
        piv = piv[[m for m in methods if m in piv.columns]].reset_index()
        piv.columns.name = None
        sec.tables.append(Table(f"ASR on the {profile} model (vertex-shader invocations per triangle)",
                                piv, floatfmt="{:.3f}"))
    times = df.groupby(["mesh", "method"], sort=False)["seconds"].mean().unstack("method")
    times = times[[m for m in methods if m in times.columns]].reset_index()
    times.columns.name = None
    sec.tables.append(Table("Optimizer run time (seconds, this machine)", times, floatfmt="{:.3f}"))


def _asr_bars(sec, df):
    profiles = list(dict.fromkeys(df["profile"]))
    cols = min(3, len(profiles))
    rows = -(-len(profiles) // cols)
    fig, axes = new_figure(rows, cols, 5.0 * cols, 3.6 * rows)
    notes = []
    for ax, profile in zip(axes, profiles):
        part = df[df["profile"] == profile]
        grouped_bars(ax, part, "asr", "mesh", "method")
        ax.set_title(profile, fontsize=9)
        ax.set_ylabel("ASR", fontsize=8)
        opt = part[part["method"] != "original"]
        wins = opt.loc[opt.groupby("mesh")["asr"].idxmin()]
        counts = wins["method"].value_counts()
        notes.append(f"{profile}: lowest ASR most often from {counts.index[0]} "
                     f"({counts.iloc[0]} of {len(wins)} meshes)")
    for ax in axes[len(profiles):]:
        ax.axis("off")
    axes[0].legend(fontsize=6, ncol=2)
    sec.figures.append(Figure("asr_bars", fig,
                              "ASR per mesh, method and GPU profile (paper 001 Table 1 layout). "
                              + "; ".join(notes) + "."))


def _batch_picture(sec, meshes):
    """Paper 001 Fig. 3: the bunny (or the largest mesh) coloured by batch, before and after."""
    try:
        from ..optimizers import optimize_result
    except ImportError as exc:
        sec.paragraphs.append(f"The batch picture needs meshopt_batch.optimizers ({exc}).")
        return
    pick = next((m for m in meshes if m.name == "bunny"), None)
    if pick is None:
        pick = max(meshes, key=lambda m: m.mesh.triangle_count)
    mesh = pick.mesh
    fig, axes = new_figure(1, 2, 10, 5)
    _, before = plot_mesh_batches(mesh.positions, mesh.triangles, "nvidia_gl", ax=axes[0],
                                  title=f"{pick.name}, original order")
    res = optimize_result(mesh.triangles, mesh.vertex_count, method="batch", profile="nvidia_gl")
    # the 16-bit boundary fix may append vertex copies: draw them where their source lies
    pos = mesh.positions if res.vertex_remap is None else mesh.positions[res.vertex_remap]
    _, after = plot_mesh_batches(pos, res.triangles, "nvidia_gl", ax=axes[1],
                                 title=f"{pick.name}, batch-optimized order")
    sec.figures.append(Figure(
        "mesh_batches", fig,
        f"{pick.name} ({mesh.triangle_count:,} triangles) coloured by the batch the nvidia_gl model "
        f"assigns each triangle (paper 001 Fig. 3). Original order: {before.batches:,} batches, ASR "
        f"{before.asr:.3f}; after the batch optimizer: {after.batches:,} batches, ASR {after.asr:.3f} "
        f"({100.0 * (1 - after.asr / before.asr):.1f}% fewer vertex-shader invocations)."))
