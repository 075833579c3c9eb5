"""Report section: measured on real GPUs, from the committed ``results/`` files and this run's probe.

Every figure here is read from a results file (:mod:`.results_files`) or, for this machine,
from this run's probe; the only thing computed is the prediction of the 2^16 block-rule draws,
whose buffers :func:`gpu_probe.experiments.block_rule_buffers` regenerates from the seed the
file records.  For each GPU and API: the share of measured draws each profile predicts
exactly (with and without NVIDIA's 2^16 rule), the measured ASR of every optimizer on every
mesh, the glTF asset draws beside gltfpack, and the raster check frame by frame.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd

from gpu_probe.experiments import block_rule_buffers
from meshopt_batch.model.prediction import predict
from meshopt_batch.model.profiles import Profile, builtin_profile_names, get_profile
from meshopt_batch.model.targets import PORTABLE
from meshopt_batch.support.errors import MeshoptBatchError

from .document import Best, Section, Table
from .results_files import KIND_NAMES, GPUResults, ResultsFile

__all__ = ["exact_table", "exact_totals", "live_group", "optimizer_table", "real_gpu_section", "run_real_gpus",
           "with_this_machine"]

_PARAMS = ("max_size", "max_uniques", "memory", "memory_size", "boundary_16bit")


def profile_label(profile: dict | Profile) -> str:
    """The built-in name (``+16bit`` forms included) of a fitted profile, or ``fitted``."""
    p = profile if isinstance(profile, Profile) else Profile.from_dict(profile)
    key = tuple(getattr(p, k) for k in _PARAMS)
    for name in builtin_profile_names():
        for candidate in (get_profile(name), get_profile(name).with_16bit_boundaries(True)):
            if tuple(getattr(candidate, k) for k in _PARAMS) == key:
                return candidate.name
    return "fitted"


def _is_profile(name: str) -> bool:
    try:
        get_profile(name)
    except (MeshoptBatchError, OSError, ValueError):
        return False
    return not name.endswith(".json")


def _shares(rows: list[dict]) -> list[dict]:
    """Per draw set: ``{"draws": n, profile: (exact, draws)}`` turned into percentages."""
    out = []
    for r in rows:
        row = {"draw set": r["draw set"], "file": r["file"], "draws": r["draws"]}
        row.update({p: 100.0 * e / n for p, (e, n) in r["exact"].items() if n})
        out.append(row)
    return out


def _fitted(group: GPUResults) -> str | None:
    for f in group.of_kind("experiments"):
        return profile_label(f.data["fit"]["profile"])
    return None


def _experiment_rows(f: ResultsFile) -> list[dict]:
    fit = f.data["fit"]
    name = profile_label(fit["profile"])
    rep = fit.get("reproduction") or {}
    draws = sum(int(v["draws"]) for v in rep.values())
    rows = []
    if draws:
        bad = sum(int(v["mismatches"]) for v in rep.values())
        rows.append({"draw set": "experiment draws (paper 001 sec. 3.3), the fit's own check",
                     "file": f.path.name, "draws": draws, "exact": {name: (draws - bad, draws)}})
    ver = f.data.get("verification_rows") or []
    if ver:
        ok = sum(int(r["measured"]) == int(r["predicted"]) for r in ver)
        rows.append({"draw set": "random verification buffers", "file": f.path.name, "draws": len(ver),
                     "exact": {name: (ok, len(ver))}})
    return rows


def _accuracy_rows(f: ResultsFile) -> list[dict]:
    df = f.data
    df = df[df["kind"] == "batch"] if "kind" in df else df
    exact = {}
    for prof, part in df.groupby("profile", sort=False):
        if str(prof).endswith(".json"):
            continue          # a fitted profile file: its evidence is the experiments' rows
        exact[str(prof)] = (int((part["measured"] == part["predicted"]).sum()), len(part))
    n = max((v[1] for v in exact.values()), default=0)
    orders = ", ".join(dict.fromkeys(df["order"])) if "order" in df else ""
    return [{"draw set": f"mesh draws in {df['mesh'].nunique()} meshes ({orders})", "file": f.path.name,
             "draws": n, "exact": exact}] if n else []


def _optimizer_rows(f: ResultsFile) -> list[dict]:
    df = f.data
    exact = {}
    for col in df.columns:
        if col.endswith("_asr") and col != "measured_asr" and _is_profile(col[:-4]):
            pred = np.rint(df[col].to_numpy(float) * df["triangles"].to_numpy(float)).astype(np.int64)
            exact[col[:-4]] = (int((pred == df["measured"].to_numpy(np.int64)).sum()), len(df))
    return [{"draw set": f"optimizer outputs ({df['mesh'].nunique()} draws x {df['method'].nunique()} methods "
             f"x {df['numbering'].nunique()} numberings)", "file": f.path.name, "draws": len(df),
             "exact": exact}] if exact else []


def _asset_rows(f: ResultsFile) -> list[dict]:
    df = f.data
    skip = {"renderer", "date", "asset", "variant", "file", "draw", "name", "triangles", "vertices",
            "index_type", "measured", "counters_agree"}
    exact = {c: (int((df[c] == df["measured"]).sum()), len(df)) for c in df.columns
             if c not in skip and _is_profile(c)}
    return [{"draw set": f"glTF asset draws ({df['asset'].nunique()} assets, variants "
             f"{', '.join(dict.fromkeys(df['variant']))})", "file": f.path.name, "draws": len(df),
             "exact": exact}] if exact else []


def _wave_rows(f: ResultsFile) -> list[dict]:
    df = f.data
    ok = ((df["waves"] == df["batches"]) & (df["waves_equal_to_a_batch"] == df["waves"])
          & (df["invocations_model"] == df["invocations_waves"]))
    exact = {str(p): (int(ok[df["profile"] == p].sum()), int((df["profile"] == p).sum()))
             for p in dict.fromkeys(df["profile"])}
    return [{"draw set": f"waves, each the vertices of one predicted batch ({int(df['waves'].sum()):,} waves)",
             "file": f.path.name, "draws": len(df), "exact": exact}]


def _probe_rows(f: ResultsFile) -> list[dict]:
    preds = f.data.get("predictions") or []
    exact = {str(p["profile"]): (int(bool(p.get("exact"))), 1) for p in preds}
    return [{"draw set": f"probe of {Path(str(f.data['mesh'])).name}", "file": f.path.name, "draws": 1,
             "exact": exact}] if exact else []


def block_rule_rows(f: ResultsFile, profiles: tuple[str, str], stride: int = 1) -> list[dict]:
    """Every ``stride``-th draw of a block-rule file (its buffers regenerated from the recorded
    seed) predicted by ``profiles``; compared with the recorded totals."""
    z = f.data
    seed = int(z["seed"])
    buffers = block_rule_buffers(seed)
    profs = [get_profile(p) for p in profiles]
    exact = {p.name: [0, 0] for p in profs}
    total = 0
    for name, bufs in buffers.items():
        key = f"{name}__totals"
        if key not in z:
            continue
        totals = z[key]
        if len(totals) != len(bufs):
            raise MeshoptBatchError(f"{f.path}: {name} holds {len(totals)} draws, the seed {seed} gives {len(bufs)}")
        total += len(bufs)
        for b, want in zip(bufs[::stride], totals[::stride], strict=True):
            tri = b.reshape(-1, 3)
            V = int(b.max()) + 1
            for p in profs:
                exact[p.name][0] += predict(tri, V, profile=p).invocations == int(want)
                exact[p.name][1] += 1
    checked = next(iter(exact.values()))[1]
    label = f"2^16 block-rule draws (seed {seed})" + (f", every {stride}th of {total:,}" if stride > 1 else "")
    return [{"draw set": label, "file": f.path.name, "draws": checked,
             "exact": {k: tuple(v) for k, v in exact.items()}}]


def _profile_order(names) -> list[str]:
    names = list(dict.fromkeys(names))
    ranked = []
    for base in PORTABLE:
        ranked += [n for n in (base, f"{base}+16bit") if n in names]
    return ranked + [n for n in names if n not in ranked]


def exact_table(group: GPUResults, block_rule_stride: int | None = None) -> pd.DataFrame:
    """Rows draw sets, columns ``draws`` then each profile's share of them predicted exactly (%)."""
    readers = {"experiments": _experiment_rows, "accuracy": _accuracy_rows, "optimizers": _optimizer_rows,
               "assets": _asset_rows, "waves": _wave_rows, "probe": _probe_rows}
    rows = []
    for f in group.files:
        if f.kind in readers:
            rows += readers[f.kind](f)
        elif f.kind == "block_rule" and block_rule_stride:
            fitted = _fitted(group) or "nvidia_gl+16bit"
            base = get_profile(fitted).with_16bit_boundaries(False).name
            rows += block_rule_rows(f, (base, base + "+16bit"), block_rule_stride)
    frame = pd.DataFrame(_shares(rows))
    if not len(frame):
        return frame
    profiles = _profile_order(c for c in frame.columns if c not in ("draw set", "file", "draws"))
    return frame[["draw set", "file", "draws", *profiles]]


def optimizer_table(group: GPUResults) -> tuple[pd.DataFrame, str, str] | None:
    """Measured ASR of every optimizer on every mesh (rows mesh and numbering, columns methods),
    from the newest optimizers file; else measured ASR per triangle order from the newest
    accuracy file.  Returns the table, its source file and what it shows."""
    files = group.of_kind("optimizers")
    if files:
        df = files[-1].data
        wide = df.pivot_table(index=["mesh", "numbering"], columns="method", values="measured_asr", sort=False)
        wide = wide.reset_index()
        wide.insert(0, "mesh ", [f"{m}, {n}" for m, n in zip(wide["mesh"], wide["numbering"], strict=True)])
        wide = wide.drop(columns=["mesh", "numbering"]).rename(columns={"mesh ": "mesh, vertex numbering"})
        wide.columns.name = None
        return wide, files[-1].path.name, ("measured ASR of every optimizer, as each returns its order "
                                           "and renumbered by first use")
    files = group.of_kind("accuracy")
    if files:
        df = files[-1].data
        draws = df.drop_duplicates(["mesh", "draw", "order"])
        g = draws.groupby(["mesh", "order"], sort=False)[["measured", "triangles"]].sum().reset_index()
        g["asr"] = g["measured"] / g["triangles"]
        wide = g.pivot_table(index="mesh", columns="order", values="asr", sort=False).reset_index()
        wide.columns.name = None
        return wide, files[-1].path.name, "measured ASR per triangle order ('optimized': meshoptimizer's)"
    return None


def _asset_table(group: GPUResults) -> tuple[pd.DataFrame, str] | None:
    """Measured invocations per asset and variant, from the newest assets file."""
    files = group.of_kind("assets")
    if not files:
        return None
    df = files[-1].data
    g = df.groupby(["asset", "variant"], sort=False).agg(measured=("measured", "sum"), vertices=("vertices", "sum"))
    inv = g["measured"].unstack("variant")
    verts = g["vertices"].unstack("variant")
    out = inv.copy()
    for v in verts.columns:
        out[f"vertices {v}"] = verts[v]
    out = out.reset_index()
    out.columns.name = None
    return out, files[-1].path.name


def _raster_table(group: GPUResults) -> tuple[pd.DataFrame, str] | None:
    files = group.of_kind("raster_check")
    if not files:
        return None
    df = files[-1].data
    cols = {"scene": "scene", "frame": "frame", "coverage_diff_pixels": "coverage diff. px",
            "shaded_diff_pixels": "shaded diff. px", "shaded_total_model": "shaded (model)",
            "shaded_total_gl": "shaded (GPU)", "depth_diff_pixels": "depth diff. px", "reasons": "why"}
    return df[[c for c in cols if c in df]].rename(columns=cols), files[-1].path.name


def _files_table(group: GPUResults) -> pd.DataFrame:
    return pd.DataFrame([{
        "file": f.path.name, "holds": KIND_NAMES.get(f.kind, f.kind),
        "renderer, driver": (f"{f.renderer}; {f.driver}" if f.driver else str(f.renderer))
        + (" (by its name)" if f.by_name else ""),
        "date": f.date or "-", "records": f.records} for f in group.files])


def _entry(group: GPUResults, live: bool, stride: int | None) -> dict:
    return {"group": group, "live": live, "exact": exact_table(group, stride), "optimizers": optimizer_table(group),
            "assets": _asset_table(group), "raster": _raster_table(group)}


def run_real_gpus(groups: list[GPUResults], scope) -> dict:
    """The tables of every committed group, the one with the most records first."""
    t0 = time.perf_counter()
    ranked = sorted(groups, key=lambda g: -sum(f.records for f in g.files))
    out = [_entry(group, False, scope.block_rule_stride) for group in ranked]
    return {"groups": out, "seconds": time.perf_counter() - t0, "stride": scope.block_rule_stride}


def with_this_machine(data: dict, probe_data: dict | None) -> dict:
    """``data`` with this run's probe (when it ran) as the first group."""
    live = live_group(probe_data) if probe_data else None
    if live is None:
        return data
    return {**data, "groups": [_entry(live, True, None), *data["groups"]]}


def live_group(probe_data: dict) -> GPUResults | None:
    """This run's probe as a group of two in-memory files (experiments and fit, accuracy)."""
    if not probe_data.get("available"):
        return None
    info, res, acc = probe_data["info"], probe_data["fit"], probe_data["accuracy"]
    date = time.strftime("%Y-%m-%d", time.gmtime())
    group = GPUResults(info["renderer"], "OpenGL")
    fit = {"fit": res.to_dict(), "verification_rows": res.verification.rows if res.verification else []}
    reps = sum(v["draws"] for v in res.reproduction.values())
    group.files.append(ResultsFile(Path("this run: probe --fit"), "experiments", info["renderer"], group.api,
                                   info.get("version"), date, reps, fit))
    if len(acc):
        group.files.append(ResultsFile(Path("this run: probe MESH"), "accuracy", info["renderer"], group.api,
                                       info.get("version"), date, len(acc), acc))
    return group


def exact_totals(exact: pd.DataFrame) -> list[tuple[float, int, int, str]]:
    """Per profile, over the draw sets it was checked on: (share, exact draws, draws, profile),
    the best first (ties: the more draws)."""
    out = []
    for p in [c for c in exact.columns if c not in ("draw set", "file", "draws")]:
        have = exact[p].notna()
        n = int(exact.loc[have, "draws"].sum())
        if n:
            k = int(round((exact.loc[have, p] * exact.loc[have, "draws"]).sum() / 100.0))
            out.append((k / n, k, n, p))
    return sorted(out, key=lambda t: (-t[0], -t[2]))


def _summary(entry: dict) -> str:
    group, exact = entry["group"], entry["exact"]
    when = ", ".join(group.dates) or "undated"
    text = (f"**{group.renderer}** through {group.api}"
            + (f", driver {', '.join(group.drivers)}" if group.drivers else "")
            + f", measured {when} ({len(group.files)} file{'s' if len(group.files) != 1 else ''}).")
    fitted = _fitted(group)
    if fitted:
        f = group.of_kind("experiments")[0].data["fit"]["profile"]
        text += (f" Its blind fit: MAX_SIZE {f['max_size']}, MAX_UNIQUES {f['max_uniques']}, {f['memory']} "
                 f"{f['memory_size']}" + (", with the 2^16 rule" if f.get("boundary_16bit") else "")
                 + (f", which is {fitted}." if fitted != "fitted" else " (no built-in profile is the same)."))
    totals = exact_totals(exact)
    if totals:
        text += " Draws predicted exactly, over the sets each profile was checked on: " + "; ".join(
            f"{p} {k:,} of {n:,} ({100.0 * s:.1f}%)" for s, k, n, p in totals) + "."
    return text


def real_gpu_section(data: dict, results_dir, number: str = "3") -> Section:
    sec = Section("real-gpus", f"{number}. Measured on real GPUs")
    groups = data["groups"]
    committed = [e for e in groups if not e["live"]]
    sec.paragraphs.append(
        f"What real GPUs measured, read from the {sum(len(e['group'].files) for e in committed)} files of "
        f"`{results_dir}` ({len(committed)} GPU/API pair{'s' if len(committed) != 1 else ''}; each file's renderer, "
        "driver and date come from its own contents) and, first, from this run's probe of this machine. "
        "A results file written by `benchmarks/bench_probe.py --results`, `bench_block_rule.py` or "
        "`bench_assets_gpu.py` into that folder appears here on the next run. In each table of "
        "shares, a row is a set of measured draws and a cell the percentage a profile predicts "
        "exactly ('-': not predicted in that file); the best profile of each row is bold.")
    if not committed:
        sec.paragraphs.append(f"No results files in `{results_dir}`.")
    if data["stride"] is None and any(e["group"].of_kind("block_rule") for e in committed):
        sec.paragraphs.append("The 2^16 block-rule draws are predicted again in the full report only "
                              "(their buffers take seconds to regenerate); this scope lists their files.")
    for i, entry in enumerate(groups):
        group = entry["group"]
        title = (f"This machine, measured in this run: {group.renderer}, {group.api}" if entry["live"]
                 else f"{group.renderer}, {group.api}")
        sub = Section(f"real-gpu-{i}", f"{number}.{i + 1} {title}", [_summary(entry)])
        sec.subsections.append(sub)
        if len(entry["exact"]):
            profiles = tuple(c for c in entry["exact"].columns if c not in ("draw set", "file", "draws"))
            sub.tables.append(Table("Share of measured draws predicted exactly (%)", entry["exact"],
                                    floatfmt="{:.1f}", best=Best("row", among=profiles, lower=False)))
        if entry["optimizers"] is not None:
            frame, source, what = entry["optimizers"]
            among = tuple(c for c in frame.columns[1:] if c not in ("original", "shuffled"))
            sub.tables.append(Table(f"{what[0].upper()}{what[1:]}, from {source}", frame, floatfmt="{:.4f}",
                                    best=Best("row", among=among), fold=6))
        if entry["assets"] is not None:
            frame, source = entry["assets"]
            among = tuple(c for c in frame.columns[1:] if not str(c).startswith("vertices") and c != "input")
            sub.tables.append(Table(f"glTF assets: measured vertex-shader invocations per variant, from {source}",
                                    frame, floatfmt="{:.0f}", best=Best("row", among=among), fold=8))
        if entry["raster"] is not None:
            frame, source = entry["raster"]
            cov, sh = int(frame["coverage diff. px"].sum()), int(frame["shaded diff. px"].sum())
            sub.paragraphs.append(
                f"Raster check ({source}): {len(frame)} frames of {frame['scene'].nunique()} scenes drawn by "
                f"the GPU in the model's program order; {cov:,} pixels differ in coverage and {sh:,} in "
                f"shaded-fragment count over all frames (at most {int(frame['shaded diff. px'].max()):,} "
                "in one frame).")
            sub.tables.append(Table(f"Raster check per frame, from {source}", frame, floatfmt="{:.0f}", fold=7))
        if not entry["live"]:
            sub.tables.append(Table("The files", _files_table(group), fold=4))
    return sec
