"""Report section: real glTF assets through ``meshopt-batch optimize`` beside ``gltfpack``.

Each asset of the folder (``../shared/gltf`` by default, ``report --assets DIR`` for any) is
written by :func:`meshopt_batch.optimize_file` with its defaults (the ``portable`` target)
and by ``gltfpack -noq`` (what asset pipelines run today, without quantization so that both
outputs keep the input's vertex attributes).  The input and both outputs are read back and
judged the same way, per draw, on every profile of the target as the hardware judges it
(:func:`meshopt_batch.vertices.vertex_set.judged`: NVIDIA's 2^16 rule over 2^16 vertices); bytes are
each file with the buffers and images it refers to; the Khronos validator checks all three.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd

from meshes import shared_meshes_dir
from meshopt_batch.assets.file_optimization import optimize_file
from meshopt_batch.io import load_draws
from meshopt_batch.io.gltf.file_packaging import resource_files
from meshopt_batch.io.gltf.gltf_document import load_document
from meshopt_batch.model.targets import get_target
from meshopt_batch.support.errors import MeshoptBatchError
from meshopt_batch.vertices.vertex_set import judged

from .document import Best, Section, Table
from .gltf_tools import find_gltfpack, find_validator, run_gltfpack, validate

__all__ = ["VARIANTS", "asset_totals", "assets_section", "default_assets_dir", "find_assets", "run_assets"]

#: The files compared for each asset, in table order.
VARIANTS = ("input", "ours", "gltfpack")
_GLTF = (".gltf", ".glb")


def default_assets_dir() -> Path:
    """``../shared/gltf`` (beside the shared meshes)."""
    return shared_meshes_dir().parent / "gltf"


def find_assets(folder: Path) -> list[Path]:
    """The glTF files of ``folder`` and of its direct subfolders (one asset per folder, as
    the Khronos sample assets are laid out), sorted by path."""
    found = [p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in _GLTF]
    for sub in sorted(q for q in folder.iterdir() if q.is_dir()):
        found += [p for p in sub.iterdir() if p.is_file() and p.suffix.lower() in _GLTF]
    return sorted(found)


def _name(path: Path, folder: Path) -> str:
    return path.parent.name if path.parent != folder else path.stem


def _bytes(path: Path) -> int:
    """The file and every external buffer and image it refers to."""
    doc, _ = load_document(path.read_bytes(), path)
    extra = {q.resolve() for q in resource_files(doc, path) if q.exists()}
    return path.stat().st_size + sum(q.stat().st_size for q in extra)


def _judge(path: Path, target) -> dict:
    """Triangles, vertices and each profile's predicted invocations, summed over the draws."""
    meshes, _ = load_draws(path)
    out = {"triangles": sum(m.triangle_count for m in meshes), "vertices": sum(m.vertex_count for m in meshes)}
    out.update(dict.fromkeys((p.name for p in target.profiles), 0))
    for m in meshes:
        for p, inv in zip(target.profiles, judged(m.triangles, m.vertex_count, target), strict=True):
            out[p.name] += inv
    return out


def _pick(paths: list[Path], pick) -> tuple[list[Path], list[str]]:
    """All assets, or (``pick = (min, max, count)``) the ``count`` largest with between min
    and max triangles."""
    if pick is None:
        return paths, []
    lo, hi, count = pick
    sized = []
    for p in paths:
        try:
            meshes, _ = load_draws(p)
        except MeshoptBatchError:
            continue
        tris = sum(m.triangle_count for m in meshes)
        if lo <= tris <= hi:
            sized.append((tris, p))
    chosen = [p for _, p in sorted(sized, key=lambda s: (-s[0], str(s[1])))[:count]]
    note = (f"this scope takes {len(chosen)} of the {len(paths)} assets: the largest with {lo:,} to {hi:,} "
            "triangles (the full report takes all)")
    return sorted(chosen), [note]


def run_assets(scope, workdir: Path, progress=None) -> dict:
    """Optimize, pack, judge and validate the scope's assets; ``{"available": False, "reason"}``
    when there is no asset folder."""
    t0 = time.perf_counter()
    folder = Path(scope.assets_dir) if scope.assets_dir else default_assets_dir()
    if not folder.is_dir():
        return {"available": False, "folder": folder, "seconds": time.perf_counter() - t0,
                "reason": f"no asset folder {folder} (pass `report --assets DIR`)"}
    paths, notes = _pick(find_assets(folder), scope.asset_pick)
    target = get_target("portable")
    gltfpack, gp_reason = find_gltfpack()
    can_validate, val_reason = find_validator()
    bar = progress(len(paths), "assets") if progress else None
    rows, files = [], {}
    with ThreadPoolExecutor(max_workers=2) as pool:
        packed = {p: pool.submit(run_gltfpack, gltfpack, p, workdir / "gltfpack" / _name(p, folder) / f"{p.stem}.glb")
                  for p in paths} if gltfpack else {}
        for src in paths:
            name = _name(src, folder)
            if bar is not None:
                bar.set_postfix_str(name)
            ours = workdir / "ours" / name / src.name
            ours.parent.mkdir(parents=True, exist_ok=True)
            outputs = {"input": (src, None)}
            try:
                optimize_file(src, ours)
                outputs["ours"] = (ours, None)
            except MeshoptBatchError as exc:
                outputs["ours"] = (None, str(exc))
            if gltfpack:
                error = packed[src].result()
                gp = workdir / "gltfpack" / name / f"{src.stem}.glb"
                outputs["gltfpack"] = (None, error) if error else (gp, None)
            for variant, (path, error) in outputs.items():
                row = {"asset": name, "variant": variant}
                if path is None:
                    row["error"] = error
                else:
                    row.update(_judge(path, target), bytes=_bytes(path))
                    files[(name, variant)] = path
                rows.append(row)
            if bar is not None:
                bar.update(1)
    if bar is not None:
        bar.close()
    issues = validate(list(files.values())) if can_validate else {}
    for row in rows:
        path = files.get((row["asset"], row["variant"]))
        if path is not None and path in issues:
            row["issues"] = issues[path]
    return {"available": True, "folder": folder, "rows": rows, "profiles": [p.name for p in target.profiles],
            "target": target.name, "notes": notes, "gltfpack": gltfpack is not None, "gltfpack_reason": gp_reason,
            "validator": can_validate, "validator_reason": val_reason, "seconds": time.perf_counter() - t0}


def _problems(codes: dict) -> tuple[int, int]:
    errors = sum(v["count"] for v in codes.values() if v["severity"] == 0)
    warnings = sum(v["count"] for v in codes.values() if v["severity"] == 1)
    return errors, warnings


def _verdict(row: dict, input_codes: dict | None) -> str:
    """The validator's verdict in words; for an output, also what it adds to the input's."""
    if "issues" not in row:
        return "-"
    errors, warnings = _problems(row["issues"])
    text = f"{errors} error{'s' if errors != 1 else ''}, {warnings} warning{'s' if warnings != 1 else ''}"
    if row["variant"] != "input" and input_codes is not None:
        new = sorted(code for code, v in row["issues"].items() if v["severity"] <= 1
                     and v["count"] > input_codes.get(code, {"count": 0})["count"])
        text += "; new: " + (", ".join(new) if new else "none")
    return text


def asset_frame(data: dict) -> pd.DataFrame:
    """One row per asset and variant: triangles, vertices, each profile's invocations, bytes,
    the validator's verdict."""
    inputs = {r["asset"]: r.get("issues") for r in data["rows"] if r["variant"] == "input"}
    out = []
    for r in data["rows"]:
        row = {"asset": r["asset"], "file": r["variant"]}
        if "error" in r:
            row["validator"] = f"failed: {r['error']}"
        else:
            row.update({k: r[k] for k in ("triangles", "vertices", *data["profiles"], "bytes")})
            row["validator"] = _verdict(r, inputs.get(r["asset"]))
        out.append(row)
    return pd.DataFrame(out)


def same_weld_assets(data: dict) -> list[str]:
    """Assets whose output by both tools has the same vertex count (the like-for-like ones)."""
    verts = {(r["asset"], r["variant"]): r["vertices"] for r in data["rows"] if "error" not in r}
    return [a for a in dict.fromkeys(r["asset"] for r in data["rows"])
            if (a, "ours") in verts and verts.get((a, "gltfpack")) == verts[(a, "ours")]]


def asset_totals(data: dict) -> pd.DataFrame:
    """Rows profiles (then ``bytes``), columns each variant's sum over the assets every
    variant was written for, ``ours / gltfpack`` and ``ours / input``, and ``ours / gltfpack,
    same weld`` over the assets both tools weld to the same vertex count."""
    frame = pd.DataFrame([r for r in data["rows"] if "error" not in r])
    if not len(frame):
        return pd.DataFrame()
    variants = [v for v in VARIANTS if v in set(frame["variant"])]
    complete = frame.groupby("asset")["variant"].nunique()
    frame = frame[frame["asset"].isin(complete[complete == len(variants)].index)]
    columns = [*data["profiles"], "bytes"]
    sums = frame.groupby("variant")[columns].sum().T[variants]
    sums.index.name = "profile"
    sums["ours / input"] = sums["ours"] / sums["input"]
    if "gltfpack" in variants:
        sums["ours / gltfpack"] = sums["ours"] / sums["gltfpack"]
        alike = frame[frame["asset"].isin(same_weld_assets(data))]
        if len(alike):
            same = alike.groupby("variant")[columns].sum().T
            sums["ours / gltfpack, same weld"] = same["ours"] / same["gltfpack"]
    sums.columns.name = None
    return sums.reset_index()


def assets_section(data: dict, number: str = "2") -> Section:
    sec = Section("assets", f"{number}. Real assets: ours beside gltfpack")
    if not data.get("available"):
        sec.paragraphs.append(f"Not run: {data['reason']}.")
        return sec
    folder = data["folder"]
    if not data["rows"]:
        sec.paragraphs.append(f"No glTF files (.gltf, .glb) in `{folder}` or its subfolders.")
        return sec
    frame = asset_frame(data)
    sec.commands = [f"meshopt-batch optimize {folder}/ASSET -o OUT.glb --json",
                    "gltfpack -noq -i ASSET -o OUT.glb"]
    n = frame["asset"].nunique()
    sec.paragraphs.append(
        f"{n} glTF asset{'s' if n != 1 else ''} of `{folder}`, each written by `meshopt-batch optimize` with "
        f"its defaults (target {data['target']}: {', '.join(data['profiles'])}) and by `gltfpack -noq` (no "
        "quantization, so both keep the input's attributes). Every file is read back and judged "
        "draw by draw on every profile as the hardware judges it (NVIDIA's 2^16 rule over 2^16 "
        "vertices): predicted vertex-shader invocations, vertices, bytes (with external buffers and "
        "images) and the Khronos validator's verdict ('new': error or warning codes the input did "
        "not have as often). The best of each asset's three files is bold.")
    sec.paragraphs += [n[0].upper() + n[1:] + "." for n in data["notes"]]
    if not data["gltfpack"]:
        sec.paragraphs.append(f"No gltfpack column: {data['gltfpack_reason']}.")
    if not data["validator"]:
        sec.paragraphs.append(f"No validator verdicts: {data['validator_reason']}.")
    totals = asset_totals(data)
    if len(totals):
        first = data["profiles"][0]
        row = totals.set_index("profile").loc[first]
        text = (f"Summed over the assets every tool wrote, on {first}: input {int(row['input']):,}, ours "
                f"{int(row['ours']):,}")
        if "gltfpack" in totals:
            text += f", gltfpack {int(row['gltfpack']):,} invocations (ours / gltfpack {row['ours / gltfpack']:.4f})"
        alike = same_weld_assets(data)
        if "ours / gltfpack, same weld" in totals:
            text += (f"; over the {len(alike)} asset{'s' if len(alike) != 1 else ''} both tools weld to the "
                     f"same vertex count, ours / gltfpack {row['ours / gltfpack, same weld']:.4f}")
        sec.paragraphs.append(text + ".")
        sec.tables.append(Table("All assets together: predicted invocations per profile and bytes", totals,
                                floatfmt="{:.4f}", best=Best("row", among=tuple(v for v in VARIANTS if v in totals))))
    differ = _weld_notes(frame)
    if differ:
        sec.paragraphs.append("Vertex counts differ where the tools weld differently (gltfpack also merges "
                              "vertices that are not bit-identical): " + "; ".join(differ) + ".")
    if len(frame):
        among = (*data["profiles"], "bytes")
        sec.tables.append(Table("Per asset: triangles, vertices, predicted invocations per profile, bytes, validator",
                                frame, floatfmt="{:.0f}", best=Best("column", among=among, group="asset"),
                                fold=3 * 4))
    return sec


def _weld_notes(frame: pd.DataFrame) -> list[str]:
    if "vertices" not in frame:
        return []
    notes = []
    for asset, part in frame.groupby("asset", sort=False):
        v = part.set_index("file")["vertices"].dropna()
        if "ours" in v and "gltfpack" in v and int(v["ours"]) != int(v["gltfpack"]):
            notes.append(f"{asset} {int(v['ours']):,} ours, {int(v['gltfpack']):,} gltfpack")
    return notes
