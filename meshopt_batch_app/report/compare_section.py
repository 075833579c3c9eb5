"""Report section 1: which triangle order is best for which GPU (``meshopt-batch compare``).

The section opens with the "one order shipped to every GPU" table (:mod:`.shipped_section`).
The rest comes from :mod:`meshopt_batch.evaluation.method_comparison`, the module the ``compare`` command prints;
this section only lays it out (a Table-1-style table per profile, folded after its first rows,
the optimizers' run times, ASR bars) and draws one mesh coloured by batch (paper 001 Fig. 3).
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from meshopt_batch.evaluation.method_comparison import compare, default_methods
from meshopt_batch.model.profiles import builtin_profile_names
from meshopt_batch.optimizers import get_method, optimize

from .document import Best, Figure, Section, Table
from .figures import grouped_bars, new_figure, plot_mesh_batches
from .shipped_section import shipped_paragraph, shipped_table

#: Rows of each per-profile table shown before the rest folds.
FOLD = 3


def run_compare(meshes, scope, progress=None) -> dict:
    """:func:`meshopt_batch.evaluation.method_comparison.compare` on the report's mesh files,
    every profile and method."""
    t0 = time.perf_counter()
    profiles = list(scope.compare_profiles or builtin_profile_names())
    methods = default_methods()
    runs = sum(len(profiles) if get_method(m).uses_profile else 1 for m in methods)
    bar = progress(len(meshes) * runs, "compare") if progress else None

    def tick(msg):
        if bar is not None:
            bar.set_postfix_str(msg)
            bar.update(1)

    result = compare([m.path for m in meshes], methods, profiles, progress=tick)
    if bar is not None:
        bar.close()
    return {"available": True, "result": result, "frame": result.results, "profiles": profiles,
            "seconds": time.perf_counter() - t0}


def compare_section(data: dict, meshes, shipped: dict | None = None) -> tuple[Section, pd.DataFrame | None]:
    sec = Section("compare", "1. Which triangle order for which GPU (compare)")
    if shipped and shipped.get("available"):
        sec.lead.append(shipped_table(shipped))
        sec.paragraphs.append(shipped_paragraph(shipped))
        sec.commands.append("meshopt-batch compare " + " ".join(m.shown for m in shipped["meshes"])
                            + " --shipped -p portable")
    elif shipped:
        sec.paragraphs.append(f"The shipped-order table did not run: {shipped['reason']}.")
    if not data.get("available"):
        sec.paragraphs.append(
            f"The comparison could not run: {data['reason']}. The other sections do not depend on it.")
        _batch_picture(sec, meshes)
        return sec, None
    result = data["result"]
    sec.commands.append(f"meshopt-batch compare {' '.join(m.shown for m in meshes)} "
                        f"--profile {','.join(data['profiles'])}")
    sec.paragraphs.append(
        f"{len(result.meshes)} meshes, each optimized once by every method ({', '.join(result.methods[1:])}; "
        "the batch optimizer once per profile, for the profile it is evaluated on), then evaluated with "
        f"the batch model of each GPU profile ({', '.join(result.profiles)}). ASR is vertex-shader "
        "invocations per triangle; 'perfect' is every referenced vertex shaded once. The tables are "
        "what `meshopt-batch compare` prints; the lowest ASR of each mesh (the original order and "
        f"'perfect' aside) is bold, as the command marks it with '*'. Each table shows {FOLD} meshes, the "
        "others unfold below it.")
    methods = tuple(m for m in result.methods if m != "original")
    for profile in result.profiles:
        sec.tables.append(Table(f"ASR on the {profile} model", result.table(profile).reset_index(),
                                floatfmt="{:.3f}", best=Best("row", among=methods), fold=FOLD))
    sec.tables.append(Table("Optimizer run time (seconds, this machine; the fastest of each mesh bold)",
                            result.time_table().reset_index(), floatfmt="{:.4f}", best=Best("row"), fold=FOLD))
    df = result.results
    _asr_bars(sec, df)
    _batch_picture(sec, meshes)
    return sec, df


def _asr_bars(sec, df):
    df = df[df["method"] != "original"]
    profiles = list(dict.fromkeys(df["profile"]))
    cols = min(3, len(profiles))
    rows = -(-len(profiles) // cols)
    fig, axes = new_figure(rows, cols, 5.0 * cols, 3.6 * rows)
    notes = []
    for ax, profile in zip(axes, profiles, strict=False):
        part = df[df["profile"] == profile]
        grouped_bars(ax, part, "asr", "mesh", "method")
        perfect = part.groupby("mesh", sort=False)["perfect_asr"].first()
        x = np.arange(len(perfect))
        ax.hlines(perfect.values, x - 0.42, x + 0.42, colors="k", lw=1.5, zorder=3, label="perfect reuse")
        ax.set_ylim(0.9 * min(perfect.min(), part["asr"].min()), 1.03 * part["asr"].max())
        ax.set_title(profile, fontsize=9)
        ax.set_ylabel("ASR", fontsize=8)
        low = part.groupby("mesh", sort=False)["asr"].transform("min")
        wins = part[part["asr"] <= low + 1e-12]
        n_mesh = part["mesh"].nunique()
        counts = wins["method"].value_counts()
        if len(wins) == len(part):
            notes.append(f"on {profile} every method reaches the same ASR on every mesh")
        else:
            tied = (wins.groupby("mesh").size() > 1).sum()
            notes.append(f"on {profile} the lowest ASR comes most often from {counts.index[0]} "
                         f"({counts.iloc[0]} of {n_mesh} meshes" + (f", ties on {tied}" if tied else "") + ")")
    for ax in axes[len(profiles):]:
        ax.axis("off")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 5), fontsize=7)
    sec.figures.append(Figure("asr_bars", fig,
                              "ASR per mesh, method and GPU profile (paper 001 Table 1 layout; the "
                              "original order is in the tables, black ticks mark perfect reuse): "
                              + "; ".join(notes) + "."))


def _batch_picture(sec, meshes):
    """Paper 001 Fig. 3: the bunny (or the largest mesh) coloured by batch, before and after."""
    pick = next((m for m in meshes if m.name == "bunny"), None)
    if pick is None:
        pick = max(meshes, key=lambda m: m.mesh.triangle_count)
    mesh = pick.mesh
    fig, axes = new_figure(1, 2, 10, 5)
    _, before = plot_mesh_batches(mesh.positions, mesh.triangles, "nvidia_gl", ax=axes[0],
                                  title=f"{pick.name}, original order")
    res = optimize(mesh.triangles, mesh.vertex_count, method="batch", profile="nvidia_gl")
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
