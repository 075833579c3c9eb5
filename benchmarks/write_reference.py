"""Write the stored reference the benchmarks compare the default order against.

For every row of ``bench_portable.py`` (the shared scans, the procedural meshes, every
``../shared/gltf`` primitive of at least 1,000 triangles) the predicted invocations on each
profile of ``portable`` of the order the default ``optimize`` writes and of meshoptimizer's
(:func:`meshopt_batch.evaluation.shipped_orders.compare_shipped`); for every asset of ``bench_assets.py`` the
invocations of the file the default ``optimize`` writes (summed over its draws).  It uses only
functions every release has had, so it runs on an older checkout: the files in
``benchmarks/reference/`` were written at the commit their name gives, with
``PYTHONPATH=<that checkout> python benchmarks/write_reference.py --out benchmarks/reference``.

Run: .venv/bin/python benchmarks/write_reference.py [--out DIR] [--only portable|assets]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def _commit(checkout: Path) -> str:
    run = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=checkout, capture_output=True, text=True)
    return run.stdout.strip() or "unknown"


def portable_rows() -> dict:
    import bench_portable

    from meshopt_batch.evaluation.shipped_orders import compare_shipped

    rows = {}
    for item in bench_portable._items(False):
        name = item[0].name if isinstance(item, list) else item.name
        res = compare_shipped([item], target="portable", orders=["meshoptimizer", "batch@portable"])
        df = res.results[res.results["profile"].isin(res.profiles)]
        rows[name] = {order: {r.profile: int(r.invocations) for r in df[df["order"] == label].itertuples()}
                      for order, label in (("portable", "batch@portable"), ("meshoptimizer", "meshoptimizer"))}
        print(f"  {name}", file=sys.stderr, flush=True)
    return rows


def asset_rows() -> dict:
    import bench_assets

    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for src in bench_assets.assets():
            out = Path(tmp) / src.parent.name / src.name
            out.parent.mkdir(parents=True, exist_ok=True)
            proc = subprocess.run([str(bench_assets.MESHOPT_BATCH), "optimize", str(src), "-o", str(out)],
                                  capture_output=True, text=True)
            if proc.returncode:
                continue
            figures = bench_assets.figures(out)
            rows[src.name] = {p: int(figures[p]) for p in bench_assets.PROFILES}
            print(f"  {src.name}", file=sys.stderr, flush=True)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(HERE / "reference"))
    ap.add_argument("--only", choices=("portable", "assets"))
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    import meshopt_batch

    checkout = Path(meshopt_batch.__file__).resolve().parents[1]
    commit = _commit(checkout)
    for kind, make in (("portable", portable_rows), ("assets", asset_rows)):
        if args.only in (None, kind):
            t0 = time.perf_counter()
            rows = make()
            path = out / f"{kind}_{commit}.json"
            path.write_text(json.dumps({"commit": commit, "kind": kind, "rows": rows}, indent=1) + "\n")
            print(f"wrote {path} ({len(rows)} rows, {time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
