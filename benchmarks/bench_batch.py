"""Batch optimizer (paper 001, Algorithm 2) speed and memory against meshoptimizer.

On ``bunny_sub2`` (1.1 M triangles, from ``../shared/meshes``) every variant runs in its own
subprocess, which times ``meshoptimizer.optimize_vertex_cache`` on the same index buffer in
the same process, interleaved with ours (``--rounds`` rounds, the best of each), so each
ratio compares two timings of the same run on the same machine load.  Printed per variant:
CPU seconds (numba's compile is warmed up first), the ratio to meshoptimizer's CPU time
(wall time is noisy on a shared machine), memory, and the nvidia_gl ASR (plain and with the
2^16-boundary model).

Memory: the process's peak resident set is reset (``/proc/self/clear_refs``) just before one
call; *own* is that call's peak minus the resident set before it (what the optimizer adds, in
bytes per triangle), *total* the process's whole peak (Python, numba and the loaded mesh
included, about 200 MB before the call).

Then the high-valence and regular inputs of issue 16 (generated, as in
``bench_optimizers.py``): open fans of 8k, 16k and 100k triangles, ``hub_1M`` (a closed fan of a
million shuffled triangles: one vertex shared by all), a million-triangle strip and grid;
ours in both variants, meshoptimizer's time beside it where it finishes (its vertex cache
optimizer is quadratic in a vertex's valence: run once up to 20k, not on ``hub_1M``).

Budgets (issue 16): full at most 6x and no-D at most 4x meshoptimizer's CPU time, the
optimizer's own peak at most 200 bytes per triangle, ``fan_100k`` under 2 s.  ``--check``
exits 1 when one is missed.

Run: .venv/bin/python benchmarks/bench_batch.py [--mesh bunny_sub2] [--rounds 3] [--check]
     [--inputs fan_8k,fan_16k,fan_100k,hub_1M,strip_1M,grid_1M|none] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_optimizers import INPUTS, fan  # noqa: E402

import meshes  # noqa: E402
from meshopt_batch.io import load_mesh  # noqa: E402
from meshopt_batch.model.prediction import predict  # noqa: E402
from meshopt_batch.optimizers.batch import optimize_batch  # noqa: E402

VARIANTS = {
    "full": {},
    "no-D": {"use_distance": False},
    "full, top only (paper)": {"lookahead": False},
    "no-D, top only (paper)": {"use_distance": False, "lookahead": False},
}
BUDGET = {"full": 6.0, "no-D": 4.0}
BYTES_PER_TRIANGLE = 200
FAN_SECONDS = 2.0
#: meshoptimizer's optimize_vertex_cache is quadratic in valence: once up to here, then skipped
PEER_MAX_VALENCE = 20_000


def _status_mb(key: str) -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key):
                return int(line.split()[1]) / 1024
    return float("nan")


def _peak_of(fn):
    """``(result, rss before MB, peak MB)`` of one call, the peak reset just before it."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass
    before = _status_mb("VmRSS:")
    out = fn()
    return out, before, _status_mb("VmHWM:")


def _one(mesh_name: str, variant: str, rounds: int) -> dict:
    import meshoptimizer  # lazy: the optional peer (almeshopt / meshoptimizer)

    mesh = load_mesh(meshes.shared_mesh_path(mesh_name))
    tris = np.ascontiguousarray(mesh.triangles, dtype=np.uint32)
    V = mesh.vertex_count
    opts = VARIANTS[variant]
    warm = meshes.grid(20, 20)
    optimize_batch(warm.triangles, warm.vertex_count, **opts)        # compile / load the cache
    optimize_batch(tris[:1000], V, **opts)
    predict(tris[:10], V, profile="nvidia_gl+16bit")
    flat = tris.reshape(-1)
    dst = np.empty_like(flat)
    res, rss_before, peak = _peak_of(lambda: optimize_batch(tris, V, **opts))
    ours, peer = [], []
    for _ in range(rounds):
        c = time.process_time()
        meshoptimizer.optimize_vertex_cache(dst, flat, flat.size, V)
        peer.append(time.process_time() - c)
        c = time.process_time()
        optimize_batch(tris, V, **opts)
        ours.append(time.process_time() - c)
    n = len(res.vertex_remap)
    cpu, mo = min(ours), min(peer)
    return {
        "mesh": mesh_name, "variant": variant, "triangles": int(len(tris)), "vertices": V,
        "cpu_s": cpu, "meshopt_cpu_s": mo, "ratio_cpu": cpu / mo, "rounds": rounds,
        "own_peak_mb": peak - rss_before, "total_peak_mb": peak, "rss_before_mb": rss_before,
        "own_bytes_per_triangle": (peak - rss_before) * 2**20 / len(tris),
        "total_bytes_per_triangle": peak * 2**20 / len(tris),
        "asr": res.stats["asr"], "asr_16bit": predict(res.triangles, n, profile="nvidia_gl+16bit").asr,
        "vertex_copies": res.stats["vertex_copies"],
        "meshopt_asr": predict(dst.reshape(-1, 3), V, profile="nvidia_gl").asr,
    }


def _inputs(names: list[str]) -> list[dict]:
    """Fans, hub, strip and grid: ours (both variants) and meshoptimizer's CPU time and ASR."""
    import meshoptimizer  # lazy: the optional peer (almeshopt / meshoptimizer)

    gens = {**INPUTS, "fan_8k": lambda: fan(8_000), "fan_16k": lambda: fan(16_000)}
    optimize_batch(*fan(100))
    optimize_batch(*fan(100), use_distance=False)
    rows = []
    for name in names:
        tris, V = gens[name]()
        row = {"input": name, "triangles": int(len(tris)),
               "max_valence": int(np.bincount(tris.reshape(-1).astype(np.int64)).max())}
        for label, opts in (("full", {}), ("no-D", {"use_distance": False})):
            c = time.process_time()
            res = optimize_batch(tris, V, **opts)
            row[f"{label}_cpu_s"] = time.process_time() - c
            row[f"{label}_asr"] = res.stats["asr"]
        if row["max_valence"] <= PEER_MAX_VALENCE or name == "fan_100k":
            flat = tris.reshape(-1)
            dst = np.empty_like(flat)
            c = time.process_time()
            meshoptimizer.optimize_vertex_cache(dst, flat, flat.size, V)
            row["meshopt_cpu_s"] = time.process_time() - c
            row["meshopt_asr"] = predict(dst.reshape(-1, 3), V, profile="nvidia_gl").asr
        rows.append(row)
    return rows


def _load() -> float:
    return os.getloadavg()[0]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mesh", default="bunny_sub2")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved timing rounds (best of each)")
    ap.add_argument("--inputs", default="fan_8k,fan_16k,fan_100k,hub_1M,strip_1M,grid_1M",
                    help="generated inputs after the mesh ('none': skip)")
    ap.add_argument("--check", action="store_true", help="exit 1 when a budget is missed")
    ap.add_argument("--json", help="write the rows to this file")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--only-inputs", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    names = [] if args.inputs == "none" else [s for s in args.inputs.split(",") if s]
    if args.one:
        print(json.dumps(_one(args.mesh, args.one, args.rounds)))
        return 0
    if args.only_inputs:
        print(json.dumps(_inputs(names)))
        return 0
    load_before = _load()
    rows, ok = [], True
    if meshes.shared_mesh_path(args.mesh) is None:
        print(f"bench_batch: {args.mesh} not found in {meshes.shared_meshes_dir()}; mesh rows skipped")
    else:
        for variant in VARIANTS:
            proc = subprocess.run([sys.executable, __file__, "--mesh", args.mesh, "--rounds",
                                   str(args.rounds), "--one", variant], capture_output=True, text=True)
            if proc.returncode != 0:
                print(proc.stderr, file=sys.stderr)
                return 1
            rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        r0 = rows[0]
        print(f"{args.mesh}: {r0['triangles']:,} triangles, {r0['vertices']:,} vertices; "
              f"meshoptimizer.optimize_vertex_cache {r0['meshopt_cpu_s']:.3f} s CPU "
              f"(best of {args.rounds}, interleaved with ours), nvidia_gl ASR {r0['meshopt_asr']:.4f}")
        print(f"{'variant':<24}{'CPU s':>7}{'x meshopt':>10}{'budget':>8}{'own MB':>8}{'own B/tri':>10}"
              f"{'total MB':>9}{'ASR':>8}{'ASR+16':>8}{'copies':>9}")
        for r in rows:
            budget = BUDGET.get(r["variant"])
            within = budget is None or r["ratio_cpu"] <= budget
            ok &= within and r["own_bytes_per_triangle"] <= BYTES_PER_TRIANGLE
            print(f"{r['variant']:<24}{r['cpu_s']:>7.2f}{r['ratio_cpu']:>10.2f}"
                  f"{(f'{budget:.0f}x' if budget else '-'):>8}{r['own_peak_mb']:>8.0f}"
                  f"{r['own_bytes_per_triangle']:>10.0f}{r['total_peak_mb']:>9.0f}{r['asr']:>8.4f}"
                  f"{r['asr_16bit']:>8.4f}{r['vertex_copies']:>9}")
        print(f"memory budget: the optimizer's own peak <= {BYTES_PER_TRIANGLE} bytes per triangle "
              f"(the process held {r0['rss_before_mb']:.0f} MB before the call)")
    inputs = []
    if names:
        proc = subprocess.run([sys.executable, __file__, "--only-inputs", "--inputs", ",".join(names)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            print(proc.stderr, file=sys.stderr)
            return 1
        inputs = json.loads(proc.stdout.strip().splitlines()[-1])
        print(f"\n{'input':<10}{'triangles':>11}{'valence':>11}{'full s':>8}{'no-D s':>8}{'meshopt s':>10}"
              f"{'ASR':>8}{'no-D ASR':>9}{'meshopt ASR':>12}")
        for r in inputs:
            mo = f"{r['meshopt_cpu_s']:.2f}" if "meshopt_cpu_s" in r else "-"
            moa = f"{r['meshopt_asr']:.4f}" if "meshopt_asr" in r else "-"
            print(f"{r['input']:<10}{r['triangles']:>11,}{r['max_valence']:>11,}{r['full_cpu_s']:>8.2f}"
                  f"{r['no-D_cpu_s']:>8.2f}{mo:>10}{r['full_asr']:>8.4f}{r['no-D_asr']:>9.4f}{moa:>12}")
            if r["input"] == "fan_100k":
                ok &= max(r["full_cpu_s"], r["no-D_cpu_s"]) < FAN_SECONDS
        print(f"fan budget: fan_100k under {FAN_SECONDS:.0f} s in both variants; meshoptimizer skipped "
              f"above valence {PEER_MAX_VALENCE:,} (quadratic) except on fan_100k")
    print(f"load average (1 min) {load_before:.2f} before, {_load():.2f} after, on {os.cpu_count()} CPUs")
    if args.json:
        Path(args.json).write_text(json.dumps({"mesh": rows, "inputs": inputs}, indent=2))
    print("budgets met" if ok else "BUDGET MISSED")
    return 1 if (args.check and not ok) else 0


if __name__ == "__main__":
    sys.exit(main())
