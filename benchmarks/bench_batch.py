"""Batch optimizer (paper 001, Algorithm 2) speed and memory against meshoptimizer.

On ``bunny_sub2`` (1.1 M triangles, from ``../shared/meshes``) every variant runs in its own
subprocess, which also times ``meshoptimizer.optimize_vertex_cache`` on the same index buffer
(best of 5), so each ratio compares two timings of the same run.  Printed per variant: wall
and CPU seconds (first call excluded: numba's compile is warmed up on a small mesh), the
ratio to meshoptimizer (CPU time; wall time is noisy on a shared machine), the process's peak
resident memory, and the nvidia_gl ASR (plain and with the 2^16-boundary model).

Budgets (issue 4): the variant without D at most 15x and the full variant at most 40x
meshoptimizer's time; peak memory under 2 GB.  ``--check`` exits 1 when one is missed.

Run: .venv/bin/python benchmarks/bench_batch.py [--mesh bunny_sub2] [--check] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from meshopt_batch.files import atomic_write  # noqa: E402

VARIANTS = {
    "full": {},
    "no-D": {"use_distance": False},
    "full, top only (paper)": {"lookahead": False},
    "no-D, top only (paper)": {"use_distance": False, "lookahead": False},
}
BUDGET = {"full": 40.0, "no-D": 15.0}
MEMORY_BUDGET_MB = 2048


def _one(mesh_name: str, variant: str) -> dict:
    import meshoptimizer

    import meshes
    from meshopt_batch.io import load_mesh
    from meshopt_batch.optimizers.batch import optimize_batch
    from meshopt_batch.reuse import predict

    path = meshes.shared_mesh_path(mesh_name)
    mesh = load_mesh(path)
    tris = np.ascontiguousarray(mesh.triangles, dtype=np.uint32)
    V = mesh.vertex_count
    opts = VARIANTS[variant]
    warm = meshes.grid(20, 20)
    optimize_batch(warm.triangles, warm.vertex_count, **opts)        # compile / load the cache
    predict(tris[:10], V, profile="nvidia_gl")
    predict(tris[:10], V, profile="nvidia_gl+16bit")
    flat = tris.reshape(-1)
    dst = np.empty_like(flat)
    mo_wall, mo_cpu = [], []
    for _ in range(5):
        w, c = time.perf_counter(), time.process_time()
        meshoptimizer.optimize_vertex_cache(dst, flat, flat.size, V)
        mo_wall.append(time.perf_counter() - w)
        mo_cpu.append(time.process_time() - c)
    mo_asr = predict(dst.reshape(-1, 3), V, profile="nvidia_gl").asr
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    w, c = time.perf_counter(), time.process_time()
    res = optimize_batch(tris, V, **opts)
    wall, cpu = time.perf_counter() - w, time.process_time() - c
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    n = len(res.vertex_remap)
    return {
        "mesh": mesh_name, "variant": variant, "triangles": int(len(tris)), "vertices": V,
        "wall_s": wall, "cpu_s": cpu, "meshopt_wall_s": min(mo_wall), "meshopt_cpu_s": min(mo_cpu),
        "ratio_cpu": cpu / min(mo_cpu), "ratio_wall": wall / min(mo_wall),
        "peak_rss_mb": peak, "rss_before_mb": rss_before,
        "asr": res.stats["asr"], "asr_16bit": predict(res.triangles, n, profile="nvidia_gl+16bit").asr,
        "vertex_copies": res.stats["vertex_copies"], "meshopt_asr": mo_asr,
        "triangles_per_s": len(tris) / wall,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mesh", default="bunny_sub2")
    ap.add_argument("--check", action="store_true", help="exit 1 when a budget is missed")
    ap.add_argument("--json", help="write the rows to this file")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(_one(args.mesh, args.one)))
        return 0
    import meshes

    if meshes.shared_mesh_path(args.mesh) is None:
        print(f"bench_batch: {args.mesh} not found in {meshes.shared_meshes_dir()}; skipped")
        return 0
    rows = []
    for variant in VARIANTS:
        proc = subprocess.run([sys.executable, __file__, "--mesh", args.mesh, "--one", variant],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            print(proc.stderr, file=sys.stderr)
            return 1
        rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    r0 = rows[0]
    print(f"{args.mesh}: {r0['triangles']} triangles, {r0['vertices']} vertices; "
          f"meshoptimizer.optimize_vertex_cache {r0['meshopt_cpu_s']:.3f} s CPU, "
          f"nvidia_gl ASR {r0['meshopt_asr']:.4f}")
    print(f"{'variant':<24}{'wall s':>8}{'CPU s':>8}{'x meshopt':>10}{'budget':>8}{'peak MB':>9}"
          f"{'ASR':>8}{'ASR+16':>8}{'copies':>9}")
    ok = True
    for r in rows:
        budget = BUDGET.get(r["variant"])
        within = budget is None or r["ratio_cpu"] <= budget
        ok &= within and r["peak_rss_mb"] < MEMORY_BUDGET_MB
        print(f"{r['variant']:<24}{r['wall_s']:>8.2f}{r['cpu_s']:>8.2f}{r['ratio_cpu']:>10.1f}"
              f"{(f'{budget:.0f}x' if budget else '-'):>8}{r['peak_rss_mb']:>9.0f}{r['asr']:>8.4f}"
              f"{r['asr_16bit']:>8.4f}{r['vertex_copies']:>9}")
    if args.json:
        atomic_write(args.json, json.dumps(rows, indent=2))
    print("budgets met" if ok else "BUDGET MISSED")
    return 1 if (args.check and not ok) else 0


if __name__ == "__main__":
    sys.exit(main())
