"""Start-up of the command line: ``meshopt-batch --help``, ``--version`` and ``analyze`` of a tiny
glTF (SimpleMeshes), each in a fresh process, warm (one untimed run first fills the OS's and
numba's caches).  Issue 48's goals: ``--help`` and ``--version`` at most 0.3 s, ``analyze`` at
most 0.5 s on an otherwise idle 2-core machine.  Peers measured in the same run: the bare
interpreter (``python -c pass``) and ``python -c "import numba"`` (what any command that runs a
compiled kernel pays first); the load average is printed before and after, since a loaded
machine shows in every wall time (the CPU time of each process, user and system, much less).

    python benchmarks/bench_startup.py [--runs N] [--imports]

``--imports`` also prints, for each command, the ten slowest top-level imports reported by
``python -X importtime`` (one extra run each).
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIMPLE = ROOT.parent / "shared" / "gltf" / "SimpleMeshes" / "SimpleMeshes.gltf"
#: Issue 48's goals, seconds (warm, fresh process).
GOALS = {"--help": 0.3, "--version": 0.3, "analyze SimpleMeshes": 0.5}


def _command() -> list[str]:
    """The console script beside this interpreter, as a user runs it; else ``python -m``."""
    script = Path(sys.executable).parent / "meshopt-batch"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "meshopt_batch_app"]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _time(argv: list[str], runs: int) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of ``runs`` fresh processes of ``argv`` (after one untimed run); a
    failed run stops the benchmark with its stderr."""
    walls, cpus = [], []
    for i in range(runs + 1):
        cpu0, t0 = _children_cpu(), time.perf_counter()
        proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        seconds, cpu = time.perf_counter() - t0, _children_cpu() - cpu0
        if proc.returncode != 0:
            sys.exit(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip()}")
        if i:
            walls.append(seconds)
            cpus.append(cpu)
    return walls, cpus


def _slowest_imports(argv: list[str], count: int = 10) -> list[tuple[float, str]]:
    """The ``count`` largest cumulative times of top-level imports (``-X importtime``)."""
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    found = []
    for line in proc.stderr.splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+(\d+) \| (\S.*)$", line)   # depth 0: no indent
        if m:
            found.append((int(m.group(1)) / 1e6, m.group(2)))
    return sorted(found, reverse=True)[:count]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7, help="timed runs of each command (default 7)")
    ap.add_argument("--imports", action="store_true", help="also the slowest imports of each command")
    args = ap.parse_args(argv)
    if not SIMPLE.is_file():
        sys.exit(f"{SIMPLE} not found (the shared glTF sample models)")
    cli = _command()
    cases = {"--help": cli + ["--help"], "--version": cli + ["--version"],
             "analyze SimpleMeshes": cli + ["analyze", str(SIMPLE)]}
    peers = {"python -c pass": [sys.executable, "-c", "pass"],
             "python -c 'import numba'": [sys.executable, "-c", "import numba"]}
    load_before = os.getloadavg()
    results = {name: _time(cmd, args.runs) for name, cmd in {**peers, **cases}.items()}
    load_after = os.getloadavg()
    bare = min(results["python -c pass"][0])
    print(f"start-up, {args.runs} fresh processes each after one untimed run ({' '.join(cli)}):")
    print(f"{'command':<28}{'min s':>8}{'median s':>10}{'CPU s':>8}{'x python':>10}{'goal s':>8}")
    for name, (walls, cpus) in results.items():
        best, mid = min(walls), statistics.median(walls)
        goal = GOALS.get(name)
        verdict = "" if goal is None else ("  met" if mid <= goal else "  MISSED (median)")
        print(f"{name:<28}{best:>8.3f}{mid:>10.3f}{statistics.median(cpus):>8.3f}{best / bare:>10.1f}"
              + (f"{goal:>8.1f}" if goal is not None else f"{'':>8}") + verdict)
    print(f"load average (1, 5, 15 min) {'/'.join(f'{v:.2f}' for v in load_before)} before, "
          f"{'/'.join(f'{v:.2f}' for v in load_after)} after, on {os.cpu_count()} CPUs")
    if args.imports:
        for name, cmd in cases.items():
            print(f"\nslowest top-level imports of {name} (cumulative s, -X importtime):")
            for seconds, module in _slowest_imports(cmd):
                print(f"  {seconds:7.3f}  {module}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
