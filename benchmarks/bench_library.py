"""Library runs (``optimize DIR -o OUTDIR``): throughput, scaling, overhead, cache, Dask.

Builds a library of distinct procedural meshes (no two files share a cache key, so nothing
is copied instead of optimized) and measures, on this machine:

* the optimization itself: :func:`meshopt_batch.assets.file_optimization.optimize_file` on every file in this
  process, one after the other, after a warm-up (the baseline);
* files/s of a library run with 1 and 2 local workers, and the scaling efficiency
  ``t1 / (2 t2)``;
* the per-file overhead of a run beyond the optimization itself, ``(t1 - baseline) / N``,
  with and without the one-time start of the worker process (measured on its own);
* the same figures in CPU seconds (this process and its finished children, from
  ``getrusage``), which other processes on the cores change far less than wall time; and the
  balance of the largest-first schedule of the measured per-file times on 2 workers
  (``sum / (2 * makespan)``): on idle cores the 2-worker speed-up is about the CPU work ratio
  ``cpu1 / cpu2`` times that balance;
* a rerun over the unchanged library (everything ``cached``) as a fraction of the first run,
  in this process and through the command line (interpreter start included);
* the same run on a ``dask.distributed.LocalCluster`` of two worker processes on 127.0.0.1
  (cluster start-up reported apart) beside the local pool's time.

The machine's load average is printed with the figures: other processes on the cores
change every one of them.

Run: .venv/bin/python benchmarks/bench_library.py [--files N] [--scale K] [--no-dask]
"""

import argparse
import heapq
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import meshes
from meshopt_batch.assets.file_optimization import AssetOptions, optimize_file
from meshopt_batch.io import save_mesh
from meshopt_batch.model.profiles import get_profile
from meshopt_batch.optimizers import get_method
from meshopt_batch_app.library import LibrarySettings, optimize_library
from meshopt_batch_app.library.dispatch import Job
from meshopt_batch_app.library.local import LocalBackend
from meshopt_batch_app.library.worker import Task

OPTIONS = AssetOptions(get_method("batch"), get_profile("nvidia_gl"), {"use_distance": True, "queue": "fast"})


def make_library(root: Path, count: int, scale: int) -> list[Path]:
    rng = np.random.default_rng(15)
    paths = []
    for i in range(count):
        kind = i % 3
        if kind == 0:
            mesh = meshes.torus(scale * (60 + 12 * (i % 9)), scale * (40 + 4 * (i % 5)))
        elif kind == 1:
            mesh = meshes.uv_sphere(scale * (30 + 6 * (i % 7)), scale * (60 + 8 * (i % 6)))
        else:
            mesh = meshes.grid(scale * (50 + 10 * (i % 8)), scale * (40 + 6 * (i % 4)))
        mesh = mesh.with_triangles(np.asarray(mesh.triangles)[rng.permutation(mesh.triangle_count)])
        path = root / f"set{i % 4}" / f"part{i // 4}" / f"mesh{i:03d}.{('ply', 'obj', 'glb')[i % 3]}"
        path.parent.mkdir(parents=True, exist_ok=True)
        save_mesh(mesh, path)
        paths.append(path)
    return paths


def baseline(paths: list[Path], scratch: Path) -> float:
    optimize_file(paths[0], scratch / ("warm" + paths[0].suffix), OPTIONS)
    start = time.perf_counter()
    for i, p in enumerate(paths):
        optimize_file(p, scratch / f"b{i}{p.suffix}", OPTIONS)
    return time.perf_counter() - start


def worker_start(paths: list[Path], scratch: Path) -> float:
    """Seconds from starting a one-process pool to its first (tiny) result, less that file's step."""
    tiny = scratch / "tiny.ply"
    save_mesh(meshes.cube(), tiny)
    start = time.perf_counter()
    backend = LocalBackend(1)
    future = backend.submit(Job(0, Task("tiny.ply", str(tiny), str(scratch / "tiny_out.ply"), "tiny_out.ply",
                                        OPTIONS), 0))
    fields = backend.result(future)
    elapsed = time.perf_counter() - start - fields["seconds"]
    backend.close()
    return elapsed


def cpu_seconds() -> float:
    """CPU time of this process and of its children that have ended."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def timed_run(lib: Path, out: Path, **settings) -> tuple[float, object, float]:
    cpu, start = cpu_seconds(), time.perf_counter()
    result = optimize_library(lib, out, OPTIONS, LibrarySettings(progress=False, **settings))
    return time.perf_counter() - start, result, cpu_seconds() - cpu


def schedule_balance(seconds: list[float], workers: int) -> float:
    """``sum / (workers * makespan)`` of the largest-first schedule of ``seconds``."""
    loads = [0.0] * workers
    for s in sorted(seconds, reverse=True):
        heapq.heapreplace(loads, loads[0] + s)
    return sum(seconds) / (workers * max(loads))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=36)
    parser.add_argument("--scale", type=int, default=2, help="mesh resolution factor (triangles grow as its square)")
    parser.add_argument("--no-dask", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-library-") as tmp:
        tmp = Path(tmp)
        lib = tmp / "lib"
        paths = make_library(lib, args.files, args.scale)
        (tmp / "scratch").mkdir()
        print(f"library: {len(paths)} distinct files, {sum(p.stat().st_size for p in paths) / 1e6:.1f} MB; "
              f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores", flush=True)
        cpu = cpu_seconds()
        base = baseline(paths, tmp / "scratch")
        base_cpu, cpu = cpu_seconds() - cpu, cpu_seconds()
        start_s = worker_start(paths, tmp / "scratch")
        start_cpu = cpu_seconds() - cpu
        t1, r1, c1 = timed_run(lib, tmp / "out1", workers=1)
        t2, r2, c2 = timed_run(lib, tmp / "out2", workers=2)
        tc, rc, _ = timed_run(lib, tmp / "out2", workers=2)
        balance = schedule_balance([e["seconds"] for e in r1.entries], 2)
        assert r1.computed == r2.computed == len(paths) and rc.computed == 0, "library run did not optimize all"
        cli = [str(Path(sys.executable).parent / "meshopt-batch"), "optimize", str(lib), "-o", str(tmp / "out2"),
               "--no-progress"]
        start = time.perf_counter()
        subprocess.run(cli, check=True, stdout=subprocess.DEVNULL)
        tcli = time.perf_counter() - start
        n = len(paths)
        rows = [("optimization alone, in process (s)", f"{base:.2f}", f"{n / base:.2f} files/s"),
                ("worker process start (s)", f"{start_s:.2f}", ""),
                ("local run, 1 worker (s)", f"{t1:.2f}", f"{n / t1:.2f} files/s"),
                ("local run, 2 workers (s)", f"{t2:.2f}", f"{n / t2:.2f} files/s"),
                ("scaling efficiency on 2 workers", f"{100 * t1 / (2 * t2):.1f} %", "target >= 85 %"),
                ("overhead per file, start included (ms)", f"{1000 * (t1 - base) / n:.1f}", "target <= 50 ms"),
                ("overhead per file, start excluded (ms)", f"{1000 * (t1 - base - start_s) / n:.1f}", ""),
                ("CPU: optimization alone (s)", f"{base_cpu:.2f}", ""),
                ("CPU: worker process start (s)", f"{start_cpu:.2f}", ""),
                ("CPU: run, 1 worker / 2 workers (s)", f"{c1:.2f} / {c2:.2f}", f"work ratio {c1 / c2:.3f}"),
                ("CPU overhead per file, start included (ms)", f"{1000 * (c1 - base_cpu) / n:.1f}", "target <= 50 ms"),
                ("largest-first balance on 2 workers", f"{100 * balance:.1f} %", ""),
                ("speed-up estimate on 2 idle cores", f"{100 * balance * c1 / c2:.1f} %",
                 "efficiency = balance x CPU work ratio"),
                ("cached rerun, in process (s)", f"{tc:.3f}", f"{100 * tc / t2:.2f} % of the 2-worker run"),
                ("cached rerun, command line (s)", f"{tcli:.2f}", f"{100 * tcli / t2:.2f} % of the 2-worker run")]
        if not args.no_dask:
            import distributed  # lazy: only this part needs it

            start = time.perf_counter()
            with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                          dashboard_address=None) as cluster:
                up = time.perf_counter() - start
                td, rd, _ = timed_run(lib, tmp / "out3", scheduler=cluster.scheduler_address)
            rows += [("LocalCluster start (s)", f"{up:.2f}", ""),
                     ("LocalCluster run, 2 workers (s)", f"{td:.2f}",
                      f"{n / td:.2f} files/s; local pool {t2:.2f} s")]
            same = (tmp / "out2" / "manifest.jsonl").read_text().count("\n") == rd.manifest.read_text().count("\n")
            rows.append(("LocalCluster manifest lines equal local", str(same), ""))
        shutil.rmtree(tmp / "scratch")
    width = max(len(r[0]) for r in rows)
    for label, value, note in rows:
        print(f"{label:<{width}}  {value:>10}  {note}")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
