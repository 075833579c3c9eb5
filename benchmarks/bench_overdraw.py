"""Overdraw-aware triangle orders (issue 20): overdraw and predicted invocations per order,
beside meshoptimizer's ``optimize_overdraw`` measured in the same run.

For every mesh (default: ``bunny``, ``dragon_100k``, ``happy_buddha_100k`` from
``../shared/meshes`` when present, and the statues scene's fallback knot, always) and every
order, the benchmark prints:

* ``inv``: vertex-shader invocations predicted for ``--profile`` (default ``nvidia_gl``;
  paper 001, Algorithm 1), and ``ASR`` (invocations per triangle);
* ``overdraw``: shaded fragments / covered pixels with early-Z in the order, over the views
  of :func:`pipeline_model.overdraw.mesh_overdraw` (16 orthographic views at 256 x 256: the six
  axis views, then ten seeded random ones), on the project's raster;
* ``seconds``: the optimizer's wall time (the order's own, from the mesh's file order).

Orders: the file's (``original``), Forsyth, paper 001's ``batch``, ``batch+overdraw`` and
``tipsify+overdraw`` at ``--threshold`` (default 1.05), meshoptimizer's
``optimize_vertex_cache`` and its ``optimize_overdraw`` (threshold 1.05) on that order.  The
last line per mesh states the issue's check: ``batch+overdraw`` has at most meshoptimizer's
overdraw and fewer invocations.

Run: .venv/bin/python benchmarks/bench_overdraw.py [--mesh NAME_OR_PATH ...] [--profile P]
     [--threshold T] [--views N] [--json FILE]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import meshes  # noqa: E402
from meshopt_batch.io import load_mesh  # noqa: E402
from meshopt_batch.model.prediction import predict  # noqa: E402
from meshopt_batch.optimizers import optimize  # noqa: E402
from meshopt_batch.support.files import atomic_write  # noqa: E402
from pipeline_model.overdraw import mesh_overdraw  # noqa: E402
from pipeline_model.scene import resolve_mesh  # noqa: E402
from pipeline_model.scene.builders import _folded_knot  # noqa: E402

DEFAULT_MESHES = ("bunny", "dragon_100k", "happy_buddha_100k")
ORDERS = ("original", "forsyth", "batch", "batch+overdraw", "tipsify+overdraw", "meshoptimizer",
          "meshoptimizer_overdraw")


def _load(name: str):
    if name == "knot":
        return resolve_mesh(_folded_knot(0))
    path = Path(name) if Path(name).is_file() else meshes.shared_mesh_path(name)
    return None if path is None else load_mesh(path)


def measure(mesh, profile: str, threshold: float, views: int) -> list[dict]:
    rows = []
    have_peer = importlib.util.find_spec("meshoptimizer") is not None
    for order in ORDERS:
        if order.startswith("meshoptimizer") and not have_peer:
            continue
        params = {"threshold": threshold} if order.endswith("+overdraw") else {}
        t0 = time.perf_counter()
        res = optimize(mesh.triangles, mesh.vertex_count, method=order, profile=profile,
                       positions=mesh.positions, **params)
        seconds = time.perf_counter() - t0
        out = res.apply(mesh)
        inv = predict(out.triangles, out.vertex_count, profile=profile).invocations
        od = mesh_overdraw(out, views=views)
        rows.append({"order": order, "invocations": int(inv), "asr": inv / mesh.triangle_count,
                     "overdraw": od.overdraw, "seconds": seconds,
                     "level": res.stats.get("level"), "clusters": res.stats.get("clusters")})
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mesh", nargs="+", default=[*DEFAULT_MESHES, "knot"],
                    help="shared mesh names, mesh files, or 'knot' (default: %(default)s)")
    ap.add_argument("--profile", default="nvidia_gl")
    ap.add_argument("--threshold", type=float, default=1.05)
    ap.add_argument("--views", type=int, default=16)
    ap.add_argument("--json", default=None, help="also write the rows as JSON")
    args = ap.parse_args(argv)
    report, ok = {}, True
    for name in args.mesh:
        mesh = _load(name)
        if mesh is None:
            print(f"{name}: not found (../shared/meshes absent?), skipped")
            continue
        rows = measure(mesh, args.profile, args.threshold, args.views)
        report[name] = rows
        print(f"\n{name}: {mesh.triangle_count:,} triangles, profile {args.profile}, threshold {args.threshold}, "
              f"{args.views} views")
        print(f"{'order':<24}{'inv':>9}{'ASR':>8}{'overdraw':>10}{'seconds':>9}  clusters")
        for r in rows:
            clusters = f"{r['clusters']} ({r['level']})" if r["clusters"] else ""
            print(f"{r['order']:<24}{r['invocations']:>9}{r['asr']:>8.4f}{r['overdraw']:>10.4f}"
                  f"{r['seconds']:>9.2f}  {clusters}")
        by = {r["order"]: r for r in rows}
        if "meshoptimizer_overdraw" in by:
            ours, peer = by["batch+overdraw"], by["meshoptimizer_overdraw"]
            good = ours["overdraw"] <= peer["overdraw"] and ours["invocations"] < peer["invocations"]
            ok &= good
            print(f"check: batch+overdraw overdraw {ours['overdraw']:.4f} <= meshoptimizer {peer['overdraw']:.4f} "
                  f"and invocations {ours['invocations']} < {peer['invocations']}: {'yes' if good else 'NO'}")
    if args.json:
        atomic_write(args.json, json.dumps(report, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
