"""Meshlet builders against meshoptimizer's ``buildMeshlets``: figures and time in one run.

For every mesh (default: the issue's set, bunny, dragon_100k, happy_buddha_100k,
armadillo_86k and the two trees from ``../shared/meshes``) and limit pair (default 64/126 and
64/64) the script builds meshlets with ours (``batch``, with and without the cone weight) and
with meshoptimizer (via ``almeshopt``, cone weight 0 and 0.25), after compiling on a small
grid, keeps the best of ``--repeat`` wall times of each builder, and prints meshlets, vertices
per triangle, meshlets culled by cone per view (64 seeded random views) and time.

Issue 19's bar, checked with ``--check`` (exit 1 when missed): at cone weight 0 ours emits at
most as many vertices per triangle as meshoptimizer with at most 2 % more meshlets; at cone
weight 0.25 ours culls at least as many meshlets by cone as meshoptimizer at its 0.25.

Run: .venv/bin/python benchmarks/bench_meshlets.py [--mesh NAME ...] [--limits 64/126,64/64]
     [--repeat 3] [--check] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import meshes  # noqa: E402
from meshopt_batch.io import load_mesh  # noqa: E402
from meshopt_batch.meshlets import analyze_meshlets, build_meshlets  # noqa: E402
from meshopt_batch.meshlets.meshoptimizer_meshlets import MISSING_REASON  # noqa: E402
from meshopt_batch.meshlets.meshoptimizer_meshlets import available as peer_available  # noqa: E402
from meshopt_batch.support.files import atomic_write  # noqa: E402

DEFAULT_MESHES = ("bunny", "dragon_100k", "happy_buddha_100k", "armadillo_86k", "tree", "tree_quaternius_birch8")
BUILDERS = (("batch", 0.0), ("batch", 0.25), ("meshoptimizer", 0.0), ("meshoptimizer", 0.25))


def _timed(mesh, method, cone, max_v, max_t, repeat):
    best, result = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = build_meshlets(mesh.triangles, mesh.positions, max_vertices=max_v, max_triangles=max_t,
                                method=method, cone_weight=cone)
        best = min(best, time.perf_counter() - t0)
    return result, best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mesh", action="append", help="shared mesh name or file (repeatable)")
    ap.add_argument("--limits", default="64/126,64/64", help="comma-separated V/T pairs")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--check", action="store_true", help="exit 1 when issue 19's bar is missed")
    ap.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = ap.parse_args(argv)
    if not peer_available():
        print(f"skipped: {MISSING_REASON}")
        return 0
    limits = [tuple(int(x) for x in pair.split("/")) for pair in args.limits.split(",")]
    warm = meshes.grid(8, 8)
    for method, cone in BUILDERS:
        build_meshlets(warm.triangles, warm.positions, max_vertices=16, max_triangles=16, method=method,
                       cone_weight=cone)
    rows, failures = [], []
    print(f"{'mesh':<24}{'limits':>8} {'builder':<26}{'meshlets':>9}{'vert/tri':>10}{'cone#':>8}"
          f"{'seconds':>9}")
    for name in args.mesh or DEFAULT_MESHES:
        path = Path(name) if Path(name).is_file() else meshes.shared_mesh_path(name)
        if path is None:
            print(f"{name}: not found in {meshes.shared_meshes_dir()}, skipped")
            continue
        mesh = load_mesh(path)
        for max_v, max_t in limits:
            got = {}
            for method, cone in BUILDERS:
                res, seconds = _timed(mesh, method, cone, max_v, max_t, args.repeat)
                a = analyze_meshlets(res, mesh.positions)
                label = f"{method} cone {cone:g}" if cone else method
                row = {"mesh": path.stem, "limits": f"{max_v}/{max_t}", "builder": label, "meshlets": a.meshlets,
                       "vertices_per_triangle": a.vertices_per_triangle,
                       "cone_culled_meshlets": a.cone_culled * a.meshlets, "seconds": seconds}
                rows.append(row)
                got[(method, cone)] = row
                print(f"{path.stem:<24}{row['limits']:>8} {label:<26}{a.meshlets:>9}"
                      f"{a.vertices_per_triangle:>10.4f}{row['cone_culled_meshlets']:>8.1f}{seconds:>9.3f}")
            ours, peer = got[("batch", 0.0)], got[("meshoptimizer", 0.0)]
            if ours["vertices_per_triangle"] > peer["vertices_per_triangle"]:
                failures.append(f"{path.stem} {max_v}/{max_t}: vertices per triangle "
                                f"{ours['vertices_per_triangle']:.4f} > {peer['vertices_per_triangle']:.4f}")
            if ours["meshlets"] > 1.02 * peer["meshlets"]:
                failures.append(f"{path.stem} {max_v}/{max_t}: {ours['meshlets']} meshlets > 1.02 x "
                                f"{peer['meshlets']}")
            cone_ours, cone_peer = got[("batch", 0.25)], got[("meshoptimizer", 0.25)]
            if cone_ours["cone_culled_meshlets"] < cone_peer["cone_culled_meshlets"]:
                failures.append(f"{path.stem} {max_v}/{max_t}: cone culls {cone_ours['cone_culled_meshlets']:.1f}"
                                f" < {cone_peer['cone_culled_meshlets']:.1f}")
    if args.json:
        atomic_write(args.json, json.dumps(rows, indent=1))
    print("\nissue 19 bar: " + ("met on every mesh and limit pair" if not failures else "MISSED: "
                                + "; ".join(failures)))
    return 1 if (args.check and failures) else 0


if __name__ == "__main__":
    sys.exit(main())
