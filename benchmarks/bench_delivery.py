"""Compressed delivery: bytes and predicted invocations of the packers' outputs, before and
after ``meshopt-batch optimize`` (issue 30).

For every asset of ``../shared/gltf``, each pipeline is run as a user runs it (a fresh
process per command):

==============================  =========================================================
pipeline                        commands
==============================  =========================================================
``gltfpack -c``                 ``gltfpack -i A -o P -c``
``gltfpack -c + optimize``      ... then ``meshopt-batch optimize P -o O``
``gltfpack -cc``                ``gltfpack -i A -o P -cc``
``gltfpack -cc + optimize``     ... then ``meshopt-batch optimize P -o O``
``gltf-transform meshopt``      ``gltf-transform meshopt A P``
``... + optimize``              ... then ``meshopt-batch optimize P -o O``
``gltf-transform draco``        ``gltf-transform draco A P``
``... + optimize``              ... then ``meshopt-batch optimize P -o O`` (written with
                                EXT_meshopt_compression: Draco would undo the order)
``gltfpack -c -noq``            ``gltfpack -i A -o P -c -noq``
``optimize --compress``         ``meshopt-batch optimize A -o O.glb --compress``
==============================  =========================================================

Each file's bytes count the file and every external file it refers to; invocations are
predicted (paper 001, Algorithm 1) on every profile of the portable target (issue 29's
``meshopt_batch.model.targets``; nvidia_gl alone where that module is absent), from the indices
as a decoder reads them.  The done-when lines check, per asset: after each packer,
``optimize`` is at most 1.02x the packer's bytes (Draco excepted) and no primitive predicts
more on any profile; ``optimize --compress`` is at most 1.05x ``gltfpack -c -noq``.

Needs ``make setup``'s npm tools (gltfpack, gltf-transform in ``.npm-tools/``).

Run: .venv/bin/python benchmarks/bench_delivery.py [--assets DIR] [--per-asset] [--check] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from meshopt_batch.io.gltf.draw_census import strip_fan_to_list  # noqa: E402
from meshopt_batch.io.gltf.file_packaging import resource_files  # noqa: E402
from meshopt_batch.io.gltf.gltf_document import read_accessor, read_document  # noqa: E402
from meshopt_batch.model.prediction import predict  # noqa: E402

NODE_MODULES = ROOT / ".npm-tools" / "node_modules"
BIN = NODE_MODULES / ".bin"
MESHOPT_BATCH = Path(sys.executable).parent / "meshopt-batch"
PACKERS = {
    "gltfpack -c": lambda a, p: [str(BIN / "gltfpack"), "-i", str(a), "-o", str(p), "-c"],
    "gltfpack -cc": lambda a, p: [str(BIN / "gltfpack"), "-i", str(a), "-o", str(p), "-cc"],
    "gltf-transform meshopt": lambda a, p: [str(BIN / "gltf-transform"), "meshopt", str(a), str(p)],
    "gltf-transform draco": lambda a, p: [str(BIN / "gltf-transform"), "draco", str(a), str(p)],
}
NOQ = "gltfpack -c -noq"
SIZE_RATIO, COMPRESS_RATIO = 1.02, 1.05


def target_profiles():
    """The profiles of the portable target (one place: issue 29's targets module)."""
    try:
        from meshopt_batch.model.targets import get_target  # lazy: present once the portable target has landed
    except ImportError:
        from meshopt_batch.model.profiles import get_profile  # lazy: the single profile before it
        return [get_profile("nvidia_gl")]
    return list(get_target("portable").profiles)


def files_size(path: Path) -> int:
    got = read_document(path.read_bytes(), path)
    return path.stat().st_size + sum(p.stat().st_size for p in {q.resolve() for q in resource_files(got.doc, path)})


def draws(path: Path) -> dict:
    """(mesh, primitive) -> (triangles as decoded, vertex count)."""
    got = read_document(path.read_bytes(), path)
    doc, out = got.doc, {}
    for mi, mesh in enumerate(doc.get("meshes", [])):
        for pi, prim in enumerate(mesh.get("primitives", [])):
            if int(prim.get("mode", 4)) not in (4, 5, 6) or "POSITION" not in prim.get("attributes", {}):
                continue
            count = int(doc["accessors"][prim["attributes"]["POSITION"]]["count"])
            flat = (read_accessor(doc, got.buffers, prim["indices"])[0].reshape(-1).astype(np.int64)
                    if "indices" in prim else np.arange(count, dtype=np.int64))
            out[(mi, pi)] = (strip_fan_to_list(flat, int(prim.get("mode", 4))), count)
    return out


def invocations(found: dict, profiles) -> dict:
    """Per (mesh, primitive), invocations per profile."""
    return {k: {p.name: predict(t, n, profile=p).invocations for p in profiles} for k, (t, n) in found.items()}


def run(cmd: list[str]) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, NODE_PATH=str(NODE_MODULES)))
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {proc.stderr.strip()[-500:]}")


def measure(asset: Path, work: Path, profiles) -> dict:
    """Bytes and per-primitive invocations of every pipeline for one asset."""
    out = {}
    for name, command in PACKERS.items():
        packed = work / f"{asset.stem}.{name.replace(' ', '_')}.glb"
        run(command(asset, packed))
        optimized = work / f"{asset.stem}.{name.replace(' ', '_')}.opt.glb"
        run([str(MESHOPT_BATCH), "optimize", str(packed), "-o", str(optimized), "--json"])
        for label, path in ((name, packed), (f"{name} + optimize", optimized)):
            out[label] = {"bytes": files_size(path), "draws": invocations(draws(path), profiles)}
    noq = work / f"{asset.stem}.noq.glb"
    run(PACKERS["gltfpack -c"](asset, noq)[:-1] + ["-c", "-noq"])
    ours = work / f"{asset.stem}.compress.glb"
    run([str(MESHOPT_BATCH), "optimize", str(asset), "-o", str(ours), "--compress", "--json"])
    out[NOQ] = {"bytes": files_size(noq), "draws": invocations(draws(noq), profiles)}
    out["optimize --compress"] = {"bytes": files_size(ours), "draws": invocations(draws(ours), profiles)}
    out["input"] = {"bytes": files_size(asset), "draws": invocations(draws(asset), profiles)}
    return out


def totals(result: dict, profiles) -> dict:
    return {"bytes": result["bytes"], **{p.name: sum(d[p.name] for d in result["draws"].values()) for p in profiles}}


def failures(asset: str, res: dict, profiles) -> list[str]:
    """The done-when of issue 30 that this asset misses (one line each)."""
    out = []
    for name in PACKERS:
        before, after = res[name], res[f"{name} + optimize"]
        if "draco" not in name and after["bytes"] > SIZE_RATIO * before["bytes"]:
            out.append(f"{asset}: {name} + optimize is {after['bytes'] / before['bytes']:.3f}x the packer's bytes")
        for key, figs in before["draws"].items():
            for p in profiles:
                if after["draws"][key][p.name] > figs[p.name]:
                    out.append(f"{asset}: {name} + optimize: mesh {key[0]} primitive {key[1]} predicts "
                               f"{after['draws'][key][p.name]} > {figs[p.name]} on {p.name}")
    ratio = res["optimize --compress"]["bytes"] / res[NOQ]["bytes"]
    if ratio > COMPRESS_RATIO:
        out.append(f"{asset}: optimize --compress is {ratio:.3f}x {NOQ}'s bytes")
    return out


def table(rows: list[tuple[str, dict]], profiles) -> str:
    head = "| pipeline | bytes | " + " | ".join(p.name for p in profiles) + " |"
    line = "|---|---:|" + "---:|" * len(profiles)
    body = [f"| {name} | {t['bytes']:,} | " + " | ".join(f"{t[p.name]:,}" for p in profiles) + " |"
            for name, t in rows]
    return "\n".join([head, line, *body])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--assets", type=Path, default=ROOT.parent / "shared" / "gltf")
    ap.add_argument("--per-asset", action="store_true", help="also print one table per asset")
    ap.add_argument("--check", action="store_true", help="exit 1 when a done-when line fails")
    ap.add_argument("--json", type=Path, help="write every figure as JSON")
    args = ap.parse_args(argv)
    for tool in ("gltfpack", "gltf-transform"):
        if not (BIN / tool).exists():
            print(f"{tool} is not installed in .npm-tools/ (run `make setup` with npm present)")
            return 2
    profiles = target_profiles()
    assets = sorted(args.assets.glob("*/*.gltf")) + sorted(args.assets.glob("*/*.glb"))
    results, missed = {}, []
    with tempfile.TemporaryDirectory(prefix="bench-delivery-") as tmp:
        for asset in assets:
            work = Path(tmp) / asset.stem
            work.mkdir()
            results[asset.name] = measure(asset, work, profiles)
            missed += failures(asset.name, results[asset.name], profiles)
    order = ["input", NOQ, "optimize --compress"] + [n for name in PACKERS for n in (name, f"{name} + optimize")]
    summed = {name: {k: sum(totals(results[a][name], profiles)[k] for a in results)
                     for k in ["bytes"] + [p.name for p in profiles]} for name in order}
    print(f"{len(results)} assets of {args.assets}; invocations predicted on {', '.join(p.name for p in profiles)}\n")
    print(table([(name, summed[name]) for name in order], profiles))
    if args.per_asset:
        for asset, res in results.items():
            print(f"\n{asset}\n" + table([(name, totals(res[name], profiles)) for name in order], profiles))
    print()
    for line in missed:
        print(f"missed: {line}")
    print(f"done-when: {'met' if not missed else f'{len(missed)} line(s) missed'} "
          f"(packers + optimize <= {SIZE_RATIO}x bytes, Draco excepted, no primitive worse on any profile; "
          f"optimize --compress <= {COMPRESS_RATIO}x {NOQ})")
    if args.json:
        args.json.write_text(json.dumps({a: {n: {"bytes": r["bytes"], "draws": {f"{k[0]}/{k[1]}": v for k, v in
                                                                                   r["draws"].items()}}
                                              for n, r in res.items()} for a, res in results.items()}, indent=1))
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
