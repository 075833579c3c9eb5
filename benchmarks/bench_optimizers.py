"""Classic optimizers (Hoppe, Tipsify, K-Cache, Forsyth) against meshoptimizer: time and memory.

Every optimizer runs in its own subprocess on ``bunny_sub2`` (1.1 M triangles, from
``../shared/meshes``; any shared mesh name or file path with ``--mesh``).  The subprocess
first compiles (numba, on a small grid) and loads the mesh, then alternates the optimizer and
the meshoptimizer function it is measured against, ``--repeat`` times each, and keeps the
best CPU time and best wall time of each, so every ratio compares two timings of the same run
on the same index buffer:

===========  ====================================================  ==================
ours         meshoptimizer counterpart                             budget (issue 3)
===========  ====================================================  ==================
tipsify      ``optimize_vertex_cache_fifo(cache_size=11)``         <= 3x its time
forsyth      ``optimize_vertex_cache``                             <= 3x its time
kcache       ``optimize_vertex_cache`` (for scale)                 < 60 s
hoppe        ``optimize_vertex_cache_strip`` (for scale)           < 60 s
===========  ====================================================  ==================

Also printed: peak resident memory added by the run (``ru_maxrss`` after the run minus before
it), as bytes per triangle -- with ``--scaling`` the same on ``bunny`` (69 k triangles), so
linear memory shows as a constant per-triangle figure -- and the nvidia_gl / amd ASR of the
result.  Ratios use CPU time (wall time is noisy on a shared machine; both are printed).

Run: .venv/bin/python benchmarks/bench_optimizers.py [--mesh bunny_sub2] [--repeat 5]
     [--scaling] [--check] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from meshopt_batch.files import atomic_write  # noqa: E402

# ours -> (method kwargs, meshoptimizer function, its kwargs)
PAIRS = {
    "tipsify": ({"cache_size": 11}, "optimize_vertex_cache_fifo", {"cache_size": 11}),
    "forsyth": ({}, "optimize_vertex_cache", {}),
    "kcache": ({}, "optimize_vertex_cache", {}),
    "hoppe": ({}, "optimize_vertex_cache_strip", {}),
}
RATIO_BUDGET = {"tipsify": 3.0, "forsyth": 3.0}
SECONDS_BUDGET = {"kcache": 60.0, "hoppe": 60.0}


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _one(mesh_arg: str, method: str, repeat: int) -> dict:
    import numpy as np

    import meshes
    from meshopt_batch.io import load_mesh
    from meshopt_batch.optimizers import optimize
    from meshopt_batch.reuse import predict

    path = Path(mesh_arg) if Path(mesh_arg).is_file() else meshes.shared_mesh_path(mesh_arg)
    if path is None:
        raise SystemExit(f"mesh {mesh_arg!r} not found (../shared/meshes absent?)")
    mesh = load_mesh(path)
    tris = np.ascontiguousarray(mesh.triangles, dtype=np.uint32)
    vcount = mesh.vertex_count
    ours_kw, mo_name, mo_kw = PAIRS[method]

    warm = meshes.grid(20, 20)
    optimize(np.ascontiguousarray(warm.triangles, dtype=np.uint32), warm.vertex_count, method=method, **ours_kw)
    predict(tris[:10], vcount, profile="nvidia_gl")
    predict(tris[:10], vcount, profile="amd")
    import meshoptimizer

    mo_func = getattr(meshoptimizer, mo_name)
    flat = tris.reshape(-1)
    dst = np.empty_like(flat)
    mo_func(dst, flat, flat.size, vcount, **mo_kw)

    # memory: the first run of ours, from a settled baseline
    base_rss = _rss_mb()
    t0, c0 = time.perf_counter(), time.process_time()
    out = optimize(tris, vcount, method=method, **ours_kw).triangles
    ours_wall = [time.perf_counter() - t0]
    ours_cpu = [time.process_time() - c0]
    peak_rss = _rss_mb()
    mo_wall, mo_cpu = [], []
    for rep in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        mo_func(dst, flat, flat.size, vcount, **mo_kw)
        mo_wall.append(time.perf_counter() - t0)
        mo_cpu.append(time.process_time() - c0)
        if rep + 1 < repeat:
            t0, c0 = time.perf_counter(), time.process_time()
            optimize(tris, vcount, method=method, **ours_kw)
            ours_wall.append(time.perf_counter() - t0)
            ours_cpu.append(time.process_time() - c0)
    mo_out = dst.reshape(-1, 3)
    res = {
        "method": method, "counterpart": mo_name, "mesh": path.stem, "triangles": int(len(tris)),
        "ours_cpu_s": min(ours_cpu), "ours_wall_s": min(ours_wall),
        "meshopt_cpu_s": min(mo_cpu), "meshopt_wall_s": min(mo_wall),
        "extra_peak_mb": max(0.0, peak_rss - base_rss),
    }
    res["ratio_cpu"] = res["ours_cpu_s"] / res["meshopt_cpu_s"] if res["meshopt_cpu_s"] > 0 else float("inf")
    res["ratio_wall"] = res["ours_wall_s"] / res["meshopt_wall_s"] if res["meshopt_wall_s"] > 0 else float("inf")
    res["bytes_per_triangle"] = res["extra_peak_mb"] * 1024 * 1024 / max(len(tris), 1)
    for prof in ("nvidia_gl", "amd"):
        res[f"asr_{prof}"] = predict(out, vcount, profile=prof).asr
        res[f"meshopt_asr_{prof}"] = predict(mo_out, vcount, profile=prof).asr
    return res


def _run_child(mesh: str, method: str, repeat: int) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--child", method, "--mesh", mesh, "--repeat", str(repeat)],
                          capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"{method}: child failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mesh", default="bunny_sub2")
    ap.add_argument("--methods", default="tipsify,forsyth,kcache,hoppe")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--scaling", action="store_true", help="also run on bunny (69 k triangles) for memory scaling")
    ap.add_argument("--check", action="store_true", help="exit 1 when a budget is missed")
    ap.add_argument("--json", metavar="FILE", help="write all figures as JSON")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(_one(args.mesh, args.child, args.repeat)))
        return 0

    import meshes

    if Path(args.mesh).is_file() is False and meshes.shared_mesh_path(args.mesh) is None:
        print(f"bench_optimizers: mesh {args.mesh!r} not available, skipped")
        return 0
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    mesh_list = [args.mesh] + (["bunny"] if args.scaling and args.mesh != "bunny" else [])
    results = []
    for mesh in mesh_list:
        for method in methods:
            results.append(_run_child(mesh, method, args.repeat))
    header = (f"{'mesh':<11}{'method':<9}{'vs meshoptimizer':<29}{'ours cpu':>9}{'theirs':>8}{'ratio':>7}"
              f"{'wall ratio':>11}{'peak +MB':>9}{'B/tri':>7}{'ASR nv':>8}{'(mo)':>7}{'ASR amd':>8}{'(mo)':>7}")
    print(header)
    failed = []
    for r in results:
        print(f"{r['mesh']:<11}{r['method']:<9}{r['counterpart']:<29}{r['ours_cpu_s']:>9.3f}{r['meshopt_cpu_s']:>8.3f}"
              f"{r['ratio_cpu']:>7.2f}{r['ratio_wall']:>11.2f}{r['extra_peak_mb']:>9.1f}{r['bytes_per_triangle']:>7.0f}"
              f"{r['asr_nvidia_gl']:>8.3f}{r['meshopt_asr_nvidia_gl']:>7.3f}{r['asr_amd']:>8.3f}"
              f"{r['meshopt_asr_amd']:>7.3f}")
        if r["mesh"] == Path(args.mesh).stem:
            m = r["method"]
            if m in RATIO_BUDGET and r["ratio_cpu"] > RATIO_BUDGET[m]:
                failed.append(f"{m}: {r['ratio_cpu']:.2f}x {r['counterpart']} (budget {RATIO_BUDGET[m]}x)")
            if m in SECONDS_BUDGET and r["ours_wall_s"] >= SECONDS_BUDGET[m]:
                failed.append(f"{m}: {r['ours_wall_s']:.1f} s (budget {SECONDS_BUDGET[m]} s)")
    if args.json:
        atomic_write(args.json, json.dumps(results, indent=2))
    if failed:
        print("budget missed: " + "; ".join(failed))
        return 1 if args.check else 0
    print("budgets met: tipsify and forsyth <= 3x meshoptimizer, kcache and hoppe < 60 s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
