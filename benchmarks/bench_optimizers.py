"""Classic optimizers (Hoppe, Tipsify, K-Cache, Forsyth) against meshoptimizer: time, memory, high valence.

Every optimizer runs in its own subprocess.  The subprocess first compiles (numba, on a small
grid) and loads the mesh (``bunny_sub2``, 1.1 M triangles, from ``../shared/meshes``; any
shared mesh name or file path with ``--mesh``), then alternates the optimizer and the
meshoptimizer function it is measured against, ``--repeat`` times each, and keeps the best
CPU time and best wall time of each, so every ratio compares two timings of the same run on
the same index buffer (issue 16's budgets):

===========  ====================================================  ==================
ours         meshoptimizer counterpart                             budget (CPU time)
===========  ====================================================  ==================
tipsify      ``optimize_vertex_cache_fifo(cache_size=11)``         <= 1.5x its time
forsyth      ``optimize_vertex_cache``                             <= 1.5x its time
kcache       ``optimize_vertex_cache``                             <= 2x its time
hoppe        ``optimize_vertex_cache_strip``                       <= 2x its time
===========  ====================================================  ==================

The same subprocess then times both on the generated inputs (``--inputs``):

* ``fan_10k``, ``fan_100k``: an open fan, every triangle around vertex 0;
* ``strip_1M``: one triangle strip of a million triangles (as a list);
* ``grid_1M``: :func:`meshes.grid` of 1000 x 500 quads;
* ``hub_1M``: a closed fan of a million triangles in shuffled order, one vertex shared by
  every triangle.

Budgets there: the 100k fan in under 2 s for tipsify, kcache and hoppe, and forsyth no slower
than ``optimize_vertex_cache`` on each fan.  meshoptimizer's ``optimize_vertex_cache`` and
``optimize_vertex_cache_strip`` are quadratic in a vertex's valence themselves (a 100k fan
takes them about 5 s): they run once on ``fan_100k`` and are left out on ``hub_1M`` (shown
as ``-``).

Also printed: peak resident memory added by the first run on the mesh (``ru_maxrss`` after
minus before), as bytes per triangle -- with ``--scaling`` the same on ``bunny`` (69 k
triangles), so linear memory shows as a constant per-triangle figure -- the nvidia_gl / amd
ASR of both results, and the machine's load average before and after (the figures are CPU
times of one process, but other processes on the cores still slow it down).

Run: .venv/bin/python benchmarks/bench_optimizers.py [--mesh bunny_sub2] [--repeat 5]
     [--inputs fan_10k,fan_100k,strip_1M,grid_1M,hub_1M|none] [--input-repeat 3]
     [--scaling] [--check] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import meshes  # noqa: E402
from meshopt_batch.io import load_mesh  # noqa: E402
from meshopt_batch.model.prediction import predict  # noqa: E402
from meshopt_batch.optimizers import optimize  # noqa: E402
from meshopt_batch.support.files import atomic_write  # noqa: E402

# ours -> (method kwargs, meshoptimizer function, its kwargs)
PAIRS = {
    "tipsify": ({"cache_size": 11}, "optimize_vertex_cache_fifo", {"cache_size": 11}),
    "forsyth": ({}, "optimize_vertex_cache", {}),
    "kcache": ({}, "optimize_vertex_cache", {}),
    "hoppe": ({}, "optimize_vertex_cache_strip", {}),
}
RATIO_BUDGET = {"tipsify": 1.5, "forsyth": 1.5, "kcache": 2.0, "hoppe": 2.0}
FAN_SECONDS = 2.0  # fan_100k, for the methods listed in FAN_SECONDS_METHODS
FAN_SECONDS_METHODS = ("tipsify", "kcache", "hoppe")
#: meshoptimizer functions whose time grows with the square of a vertex's valence
QUADRATIC_PEERS = ("optimize_vertex_cache", "optimize_vertex_cache_strip")


def fan(n: int, closed: bool = False) -> tuple[np.ndarray, int]:
    """``n`` triangles ``(0, i, i + 1)`` around vertex 0 (``closed``: the last meets the first)."""
    rim = np.arange(1, n + 1)
    nxt = rim % n + 1 if closed else rim + 1
    tris = np.stack([np.zeros(n, np.int64), rim, nxt], 1)
    return np.ascontiguousarray(tris, np.uint32), int(tris.max()) + 1


def strip(n: int) -> tuple[np.ndarray, int]:
    """A triangle strip of ``n`` triangles as a list, every other one flipped to keep the winding."""
    i = np.arange(n)
    even = np.stack([i, i + 1, i + 2], 1)
    odd = np.stack([i + 1, i, i + 2], 1)
    tris = np.where((i % 2 == 0)[:, None], even, odd)
    return np.ascontiguousarray(tris, np.uint32), n + 2


def hub(n: int, seed: int = 0) -> tuple[np.ndarray, int]:
    """A closed fan of ``n`` triangles in shuffled order: one vertex shared by all of them."""
    tris, vcount = fan(n, closed=True)
    return np.ascontiguousarray(tris[np.random.default_rng(seed).permutation(n)]), vcount


def grid(nx: int, ny: int) -> tuple[np.ndarray, int]:
    mesh = meshes.grid(nx, ny)
    return np.ascontiguousarray(mesh.triangles, np.uint32), mesh.vertex_count


INPUTS = {
    "fan_10k": lambda: fan(10_000),
    "fan_100k": lambda: fan(100_000),
    "strip_1M": lambda: strip(1_000_000),
    "grid_1M": lambda: grid(1000, 500),
    "hub_1M": lambda: hub(1_000_000),
}
#: the peer runs once above this valence and not at all above the second figure
QUADRATIC_ONCE_VALENCE = 20_000
QUADRATIC_SKIP_VALENCE = 200_000


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _timed(fn):
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return time.process_time() - c0, time.perf_counter() - t0, out


def _mesh_figures(mesh_arg: str, method: str, repeat: int, mo_func) -> dict:
    path = Path(mesh_arg) if Path(mesh_arg).is_file() else meshes.shared_mesh_path(mesh_arg)
    if path is None:
        raise SystemExit(f"mesh {mesh_arg!r} not found (../shared/meshes absent?)")
    mesh = load_mesh(path)
    tris = np.ascontiguousarray(mesh.triangles, dtype=np.uint32)
    vcount = mesh.vertex_count
    ours_kw, mo_name, mo_kw = PAIRS[method]
    predict(tris[:10], vcount, profile="nvidia_gl")
    predict(tris[:10], vcount, profile="amd")
    flat = tris.reshape(-1)
    dst = np.empty_like(flat)
    mo_func(dst, flat, flat.size, vcount, **mo_kw)

    def ours():
        return optimize(tris, vcount, method=method, **ours_kw).triangles

    def theirs():
        return mo_func(dst, flat, flat.size, vcount, **mo_kw)

    # memory: the first run of ours, from a settled baseline
    base_rss = _rss_mb()
    cpu, wall, out = _timed(ours)
    peak_rss = _rss_mb()
    ours_cpu, ours_wall, mo_cpu, mo_wall = [cpu], [wall], [], []
    for rep in range(repeat):
        cpu, wall, _ = _timed(theirs)
        mo_cpu.append(cpu)
        mo_wall.append(wall)
        if rep + 1 < repeat:
            cpu, wall, _ = _timed(ours)
            ours_cpu.append(cpu)
            ours_wall.append(wall)
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


def _input_figures(name: str, method: str, repeat: int, mo_func) -> dict:
    tris, vcount = INPUTS[name]()
    ours_kw, mo_name, mo_kw = PAIRS[method]
    valence = int(np.bincount(tris.reshape(-1), minlength=vcount).max())
    flat = tris.reshape(-1)
    dst = np.empty_like(flat)
    peer_runs = repeat
    if mo_name in QUADRATIC_PEERS and valence > QUADRATIC_SKIP_VALENCE:
        peer_runs = 0
    elif mo_name in QUADRATIC_PEERS and valence > QUADRATIC_ONCE_VALENCE:
        peer_runs = 1
    ours_cpu, mo_cpu = [], []
    for rep in range(repeat):
        ours_cpu.append(_timed(lambda: optimize(tris, vcount, method=method, **ours_kw))[0])
        if rep < peer_runs:
            mo_cpu.append(_timed(lambda: mo_func(dst, flat, flat.size, vcount, **mo_kw))[0])
    res = {"input": name, "method": method, "counterpart": mo_name, "triangles": int(len(tris)),
           "max_valence": valence, "ours_cpu_s": min(ours_cpu),
           "meshopt_cpu_s": min(mo_cpu) if mo_cpu else None}
    res["ratio_cpu"] = (res["ours_cpu_s"] / res["meshopt_cpu_s"]
                        if res["meshopt_cpu_s"] else None)
    return res


def _child(mesh_arg: str, method: str, repeat: int, inputs: list[str], input_repeat: int) -> dict:
    import meshoptimizer  # lazy: optional package (the compare extra)

    ours_kw, mo_name, _ = PAIRS[method]
    mo_func = getattr(meshoptimizer, mo_name)
    warm = meshes.grid(20, 20)
    optimize(np.ascontiguousarray(warm.triangles, dtype=np.uint32), warm.vertex_count, method=method, **ours_kw)
    figures = {"mesh": _mesh_figures(mesh_arg, method, repeat, mo_func) if mesh_arg else None}
    figures["inputs"] = [_input_figures(name, method, input_repeat, mo_func) for name in inputs]
    return figures


def _run_child(mesh: str, method: str, repeat: int, inputs: list[str], input_repeat: int) -> dict:
    cmd = [sys.executable, __file__, "--child", method, "--mesh", mesh, "--repeat", str(repeat),
           "--inputs", ",".join(inputs) or "none", "--input-repeat", str(input_repeat)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"{method}: child failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def _print_mesh_table(results: list[dict], main_mesh: str, failed: list[str]) -> None:
    print(f"{'mesh':<11}{'method':<9}{'vs meshoptimizer':<29}{'ours cpu':>9}{'theirs':>8}{'ratio':>7}"
          f"{'budget':>7}{'wall ratio':>11}{'peak +MB':>9}{'B/tri':>7}{'ASR nv':>8}{'(mo)':>7}{'ASR amd':>8}"
          f"{'(mo)':>7}")
    for r in results:
        m = r["method"]
        print(f"{r['mesh']:<11}{m:<9}{r['counterpart']:<29}{r['ours_cpu_s']:>9.3f}{r['meshopt_cpu_s']:>8.3f}"
              f"{r['ratio_cpu']:>7.2f}{RATIO_BUDGET[m]:>7.1f}{r['ratio_wall']:>11.2f}{r['extra_peak_mb']:>9.1f}"
              f"{r['bytes_per_triangle']:>7.0f}{r['asr_nvidia_gl']:>8.3f}{r['meshopt_asr_nvidia_gl']:>7.3f}"
              f"{r['asr_amd']:>8.3f}{r['meshopt_asr_amd']:>7.3f}")
        if r["mesh"] == main_mesh and r["ratio_cpu"] > RATIO_BUDGET[m]:
            failed.append(f"{m}: {r['ratio_cpu']:.2f}x {r['counterpart']} on {r['mesh']} (budget {RATIO_BUDGET[m]}x)")


def _print_input_table(rows: list[dict], failed: list[str]) -> None:
    print(f"\n{'input':<10}{'triangles':>10}{'valence':>9}  {'method':<9}{'vs meshoptimizer':<29}"
          f"{'ours cpu':>9}{'theirs':>9}{'ratio':>8}")
    for r in rows:
        theirs = f"{r['meshopt_cpu_s']:>9.3f}" if r["meshopt_cpu_s"] is not None else f"{'-':>9}"
        ratio = f"{r['ratio_cpu']:>8.2f}" if r["ratio_cpu"] is not None else f"{'-':>8}"
        print(f"{r['input']:<10}{r['triangles']:>10}{r['max_valence']:>9}  {r['method']:<9}{r['counterpart']:<29}"
              f"{r['ours_cpu_s']:>9.3f}{theirs}{ratio}")
        m = r["method"]
        if r["input"] == "fan_100k" and m in FAN_SECONDS_METHODS and r["ours_cpu_s"] >= FAN_SECONDS:
            failed.append(f"{m}: fan_100k {r['ours_cpu_s']:.2f} s (budget {FAN_SECONDS} s)")
        if r["input"].startswith("fan_") and m == "forsyth" and r["ratio_cpu"] is not None and r["ratio_cpu"] > 1.0:
            failed.append(f"forsyth: {r['input']} {r['ratio_cpu']:.2f}x optimize_vertex_cache (budget 1x)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mesh", default="bunny_sub2")
    ap.add_argument("--methods", default="tipsify,forsyth,kcache,hoppe")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--inputs", default=",".join(INPUTS),
                    help=f"generated inputs, comma-separated ({', '.join(INPUTS)}) or 'none'")
    ap.add_argument("--input-repeat", type=int, default=3)
    ap.add_argument("--scaling", action="store_true", help="also run on bunny (69 k triangles) for memory scaling")
    ap.add_argument("--check", action="store_true", help="exit 1 when a budget is missed")
    ap.add_argument("--json", metavar="FILE", help="write all figures as JSON")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    inputs = [] if args.inputs == "none" else [s.strip() for s in args.inputs.split(",") if s.strip()]
    unknown = [s for s in inputs if s not in INPUTS]
    if unknown:
        ap.error(f"unknown input(s) {', '.join(unknown)} (known: {', '.join(INPUTS)})")
    if args.child:
        print(json.dumps(_child(args.mesh, args.child, args.repeat, inputs, args.input_repeat)))
        return 0

    mesh_ok = Path(args.mesh).is_file() or meshes.shared_mesh_path(args.mesh) is not None
    if not mesh_ok:
        print(f"bench_optimizers: mesh {args.mesh!r} not available, only the generated inputs are timed")
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    mesh_list = ([args.mesh] if mesh_ok else []) + (["bunny"] if args.scaling and args.mesh != "bunny" else [])
    print(f"before: {_load()}")
    mesh_results, input_rows = [], []
    for method in methods:
        figures = _run_child(mesh_list[0] if mesh_list else "", method, args.repeat, inputs, args.input_repeat)
        if figures["mesh"]:
            mesh_results.append(figures["mesh"])
        input_rows.extend(figures["inputs"])
    for mesh in mesh_list[1:]:
        for method in methods:
            mesh_results.append(_run_child(mesh, method, args.repeat, [], args.input_repeat)["mesh"])
    after = _load()
    failed: list[str] = []
    if mesh_results:
        _print_mesh_table(mesh_results, Path(args.mesh).stem, failed)
    if input_rows:
        input_rows.sort(key=lambda r: (list(INPUTS).index(r["input"]), methods.index(r["method"])))
        _print_input_table(input_rows, failed)
    print(f"\nafter: {after}")
    if args.json:
        atomic_write(args.json, json.dumps({"meshes": mesh_results, "inputs": input_rows}, indent=2))
    if failed:
        print("budget missed: " + "; ".join(failed))
        return 1 if args.check else 0
    print("budgets met: tipsify, forsyth <= 1.5x and kcache, hoppe <= 2x their meshoptimizer counterparts; "
          "fan_100k < 2 s (tipsify, kcache, hoppe); forsyth <= optimize_vertex_cache on the fans")
    return 0


if __name__ == "__main__":
    sys.exit(main())
