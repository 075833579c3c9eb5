"""The report's first section: which triangle order to ship, for each GPU and for all of them.

Nothing here is measured or typed: every figure is read from this run's shipped table
(:mod:`.shipped_section`), its real-asset totals (:mod:`.assets_section`) and the real-GPU
files (:mod:`.real_gpu_section`).  For each GPU profile, the order with the fewest invocations
relative to meshoptimizer's (geometric mean over the meshes) and its worst mesh; for all of
them at once, the order whose worst case over every profile and mesh is lowest (ties: the
lower mean).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from meshopt_batch.evaluation.shipped_orders import REFERENCE

from .document import Section, Table

__all__ = ["measured_gains", "verdict_rows", "verdict_section"]

ALL = "all at once"


def _change(ratio: float) -> str:
    """A ratio to the reference in words."""
    if np.isclose(ratio, 1.0, rtol=0, atol=5e-4):
        return "the same invocations as"
    return f"{100.0 * abs(1.0 - ratio):.1f}% {'fewer' if ratio < 1 else 'more'} invocations than"


def _worst(result, order: str, profiles: list[str]) -> tuple[float, str, str]:
    """The largest per-mesh ratio of ``order`` over ``profiles``: (ratio, mesh, profile)."""
    rows = result.results
    rows = rows[(rows["order"] == order) & rows["profile"].isin(profiles)]
    top = rows.loc[rows["ratio"].idxmax()]
    return float(top["ratio"]), str(top["mesh"]), str(top["profile"])


def _input_wins(result) -> dict[str, list[tuple[str, float]]]:
    """Meshes whose input order takes fewer invocations than the reference on some profile:
    ``{mesh: [(profile, ratio), ...]}``."""
    rows = result.results
    rows = rows[(rows["order"] == "input") & rows["profile"].isin(result.profiles) & (rows["ratio"] < 1.0)]
    wins: dict[str, list[tuple[str, float]]] = {}
    for mesh, profile, ratio in zip(rows["mesh"], rows["profile"], rows["ratio"], strict=True):
        wins.setdefault(str(mesh), []).append((str(profile), float(ratio)))
    return wins


def _never_worse_note(result, portable: str, bound: dict) -> str:
    """Why the portable order loses to the reference where the input beats it somewhere, and
    how it does on the other meshes."""
    where = "; ".join(f"{mesh} on {', '.join(f'{p} ({r:.3f}x)' for p, r in wins)}" for mesh, wins in bound.items())
    text = (f"Where the input order already takes fewer invocations than {REFERENCE}'s on some GPU ({where}), "
            f"`{portable}` only takes orders that are no worse than the input on every GPU (the never-worse "
            f"rule of `optimize`), which {REFERENCE}'s order is not there.")
    rows = result.results
    rest = rows[(rows["order"] == portable) & rows["profile"].isin(result.profiles) & ~rows["mesh"].isin(list(bound))]
    if len(rest):
        per_mesh = rest.groupby("mesh")["ratio"]
        mean = float(np.exp(np.log(rest["ratio"]).mean()))
        worst = rest.loc[rest["ratio"].idxmax()]
        text += (f" On the other {per_mesh.ngroups} mesh{'es' if per_mesh.ngroups != 1 else ''} it averages "
                 f"{mean:.3f}x {REFERENCE}'s (geometric mean over meshes and GPUs), worst {float(worst['ratio']):.3f}x "
                 f"({worst['mesh']} on {worst['profile']}).")
    return text


def verdict_rows(result, asset_totals: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per profile of the target and one for all of them (:data:`ALL`).

    Columns: ``GPU``, ``order`` (the one to use), ``ratio`` (its invocations over the
    reference's, geometric mean over the meshes; for all GPUs the mean over profiles),
    ``saves %``, ``worst`` (largest per-mesh ratio), ``worst case`` (mesh, and profile for the
    all-GPU row), ``portable`` (the portable order's ratio on that GPU, or its mean) and,
    given the real-asset totals, ``assets vs gltfpack`` (our output's invocations over
    gltfpack's; for all GPUs the largest over profiles).
    """
    table = result.table()
    candidates = table.drop(index="input", errors="ignore")
    portable = f"batch@{result.target.name}"
    assets = None
    if asset_totals is not None and len(asset_totals):
        col = next((c for c in ("ours / gltfpack, same weld", "ours / gltfpack") if c in asset_totals), None)
        if col is not None:
            assets = asset_totals.set_index("profile")[col]
    rows = []
    for p in result.profiles:
        order = str(candidates.sort_values([p, "worst", "mean"], kind="stable").index[0])
        worst, mesh, _ = _worst(result, order, [p])
        rows.append({"GPU": p, "order": order, "ratio": float(table.loc[order, p]),
                     "saves %": 100.0 * (1.0 - float(table.loc[order, p])), "worst": worst,
                     "worst case": mesh,
                     "portable": float(table.loc[portable, p]) if portable in table.index else np.nan,
                     "assets vs gltfpack": float(assets[p]) if assets is not None and p in assets else np.nan})
    ranked = candidates.sort_values(["worst", "mean"], kind="stable")
    order = str(ranked.index[0])
    worst, mesh, prof = _worst(result, order, result.profiles)
    rows.append({"GPU": f"{ALL} ({result.target.name})", "order": order, "ratio": float(table.loc[order, "mean"]),
                 "saves %": 100.0 * (1.0 - float(table.loc[order, "mean"])), "worst": worst,
                 "worst case": f"{mesh} on {prof}",
                 "portable": float(table.loc[portable, "mean"]) if portable in table.index else np.nan,
                 "assets vs gltfpack": (float(assets[result.profiles].max()) if assets is not None
                                        and set(result.profiles) <= set(assets.index) else np.nan)})
    return pd.DataFrame(rows)


def measured_gains(entry: dict) -> dict | None:
    """From a GPU's newest optimizers file: the default order's measured invocations (the
    ``portable`` column, or the ``batch`` one in files from before it) over meshoptimizer's,
    vertices numbered by first use in both (what gltfpack ships), geometric mean over the
    meshes, with the worst mesh."""
    group = entry["group"]
    files = group.of_kind("optimizers")
    if not files:
        return None
    df = files[-1].data
    df = df[df["numbering"] == "first use"] if "first use" in set(df["numbering"]) else df
    wide = df.pivot_table(index="mesh", columns="method", values="measured", sort=False)
    method = next((m for m in ("portable", "batch") if m in wide), None)
    if method is None or REFERENCE not in wide:
        return None
    ratio = (wide[method] / wide[REFERENCE]).dropna()
    if not len(ratio):
        return None
    return {"renderer": group.renderer, "api": group.api, "dates": group.dates, "file": files[-1].path.name,
            "method": method, "meshes": len(ratio), "ratio": float(np.exp(np.log(ratio).mean())),
            "worst": float(ratio.max()), "worst_mesh": str(ratio.idxmax())}


def verdict_section(shipped: dict, assets: dict | None = None, gains: list | None = None,
                    exact: dict | None = None) -> Section:
    """The Verdict: a few sentences and one table, every figure from this run's data.

    Parameters
    ----------
    shipped : :func:`.shipped_section.run_shipped`'s answer
    assets : ``{"totals": asset_totals frame, "same_weld": [asset], "assets": [asset]}`` or None
    gains : :func:`measured_gains` of each real GPU that has an optimizers file
    exact : ``{(renderer, api): (share, exact, draws, profile)}``, the profile that predicts
        most of each real GPU's measured draws
    """
    sec = Section("verdict", "Verdict")
    if not shipped.get("available"):
        sec.paragraphs.append(f"No verdict: the shipped-order comparison did not run ({shipped.get('reason')}).")
        return sec
    result = shipped["result"]
    totals = assets["totals"] if assets else None
    rows = verdict_rows(result, totals)
    per_gpu, every = rows.iloc[:-1], rows.iloc[-1]
    def pick(r):
        if r["order"] == REFERENCE:
            return f"for {r['GPU']}, {REFERENCE}'s own order (no other order does better on average)"
        return (f"for {r['GPU']}, `{r['order']}` ({_change(r['ratio'])} {REFERENCE}, worst mesh "
                f"{r['worst case']} {r['worst']:.3f}x)")

    sec.paragraphs.append(
        f"Which triangle order to ship, judged by the batch model of each GPU family on this run's "
        f"{len(result.meshes)} meshes and compared with {REFERENCE}'s order (the one gltfpack writes): "
        + "; ".join(pick(r) for _, r in per_gpu.iterrows()) + ".")
    if every["order"] == REFERENCE:
        text = (f"For every GPU at once (the `{result.target.name}` target: {', '.join(result.profiles)}), ship "
                f"{REFERENCE}'s order: no other order has a lower worst case over the {len(result.profiles)} "
                "GPUs and these meshes.")
    else:
        text = (f"For every GPU at once (the `{result.target.name}` target: {', '.join(result.profiles)}), ship "
                f"`{every['order']}`: on average over the {len(result.profiles)} GPUs it takes "
                f"{_change(every['ratio'])} {REFERENCE}, and at worst {every['worst']:.3f}x ({every['worst case']}).")
    portable = f"batch@{result.target.name}"
    if every["order"] != portable and np.isfinite(every["portable"]):
        p_worst, p_mesh, p_prof = _worst(result, portable, result.profiles)
        text += (f" The order written for that target, `{portable}`, averages {every['portable']:.3f}x with a "
                 f"worst case of {p_worst:.3f}x ({p_mesh} on {p_prof}).")
    sec.paragraphs.append(text)
    bound = _input_wins(result)
    if bound and portable in result.results["order"].values:
        sec.paragraphs.append(_never_worse_note(result, portable, bound))
    if assets and np.isfinite(rows["assets vs gltfpack"]).any():
        vals = per_gpu["assets vs gltfpack"]
        alike = ("that both tools weld to the same vertex count" if assets["same_weld"]
                 else "written by both tools")
        n = len(assets["same_weld"] or assets["assets"])
        sec.paragraphs.append(
            f"On {n} real glTF asset{'s' if n != 1 else ''} {alike}, `meshopt-batch optimize` (target "
            f"{result.target.name}) "
            f"predicts {vals.min():.3f}x to {vals.max():.3f}x the invocations of `gltfpack -noq` over the "
            f"{len(vals)} GPUs (section 2).")
    for gain in gains or []:
        order = ("the `portable` order (the default)" if gain["method"] == "portable"
                 else "the batch optimizer's order")
        text = (f"Measured on {gain['renderer']} ({gain['api']}, {', '.join(gain['dates'])}): {order} "
                f"took {_change(gain['ratio'])} {REFERENCE}'s over {gain['meshes']} meshes "
                f"(geometric mean, vertices numbered by first use in both; worst mesh {gain['worst_mesh']} "
                f"{gain['worst']:.3f}x)")
        top = (exact or {}).get((gain["renderer"], gain["api"]))
        if top:
            share, k, n, prof = top
            text += (f"; {prof} predicts {k:,} of the {n:,} measured draws it was checked on exactly "
                     f"({100.0 * share:.1f}%)")
        sec.paragraphs.append(text + " (section 3).")
    shown = rows.rename(columns={"order": "use this order", "ratio": f"invocations / {REFERENCE}",
                                 "worst": "worst mesh ratio", "portable": f"{portable} / {REFERENCE}",
                                 "assets vs gltfpack": f"real assets: ours ({result.target.name}) / gltfpack"})
    if not np.isfinite(rows["assets vs gltfpack"]).any():
        shown = shown.drop(columns=[f"real assets: ours ({result.target.name}) / gltfpack"])
    sec.tables.append(Table(
        "The verdict: the order to use on each GPU and on all of them, relative to "
        f"{REFERENCE}'s (geometric mean over {len(result.meshes)} meshes; for all GPUs the mean over them "
        "and the worst over every GPU and mesh)", shown, floatfmt="{:.3f}", formats={"saves %": "{:.1f}"}))
    return sec
