"""``meshopt-batch check`` on a library: first run, cached rerun, beside a cached ``optimize DIR`` rerun.

Issue 50's goal: a check of a folder whose files are unchanged since the last run takes at most
the time of a cached ``optimize DIR`` rerun of the same folder.  On a copy of a library
(default ``../shared/gltf``) this measures, through the command line (interpreter start
included):

* ``optimize DIR -o OUT`` once (its first run, for scale), then its cached rerun;
* ``check DIR`` with an empty cache (what ``optimize`` reaches is computed), then its
  cached rerun, alternated with the ``optimize`` reruns ``--repeat`` times;
* ``check OUT --baseline OUT/manifest.jsonl`` first and cached.

It prints each time (min and median wall seconds), the ratio of the cached check to the cached
optimize rerun (the goal: at most 1), and the load average before and after.

Run: .venv/bin/python benchmarks/bench_check.py [--library DIR] [-p TARGET] [--repeat N]
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMAND = [str(Path(sys.executable).parent / "meshopt-batch")]


def timed(argv: list[str], codes=(0,)) -> float:
    start = time.perf_counter()
    proc = subprocess.run(COMMAND + argv, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode not in codes:
        sys.exit(f"{' '.join(argv)}: exit {proc.returncode}: {proc.stderr.strip()}")
    return seconds


def load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", default=str(ROOT.parent / "shared" / "gltf"))
    parser.add_argument("-p", "--profile", default="portable")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"load before: {load()} ({os.cpu_count()} cores)")
    with tempfile.TemporaryDirectory() as tmp:
        lib, out, cache = Path(tmp) / "lib", Path(tmp) / "out", Path(tmp) / "cache"
        shutil.copytree(args.library, lib)
        target = ["-p", args.profile]
        first_opt = timed(["optimize", str(lib), "-o", str(out), *target, "--no-progress"])
        first_check = timed(["check", str(lib), *target, "--cache", str(cache)], codes=(0, 1))
        opt, chk = [], []
        for _ in range(args.repeat):
            opt.append(timed(["optimize", str(lib), "-o", str(out), *target, "--no-progress"]))
            chk.append(timed(["check", str(lib), *target, "--cache", str(cache)], codes=(0, 1)))
        base = ["check", str(out), *target, "--baseline", str(out / "manifest.jsonl"), "--cache", str(cache)]
        first_out = timed(base, codes=(0, 1))
        again_out = [timed(base, codes=(0, 1)) for _ in range(args.repeat)]
    files = sum(1 for _ in Path(args.library).rglob("*") if _.suffix.lower() in (".gltf", ".glb", ".obj", ".ply"))
    print(f"library {args.library} ({files} mesh files), target {args.profile}")
    print(f"{'run':<44}{'min s':>8}{'median s':>10}")
    rows = [("optimize DIR -o OUT, first", [first_opt]), ("check DIR, empty cache", [first_check]),
            ("optimize DIR -o OUT, cached rerun", opt), ("check DIR, cached rerun", chk),
            ("check OUT --baseline manifest, first", [first_out]), ("check OUT --baseline manifest, cached", again_out)]
    for name, times in rows:
        print(f"{name:<44}{min(times):>8.2f}{statistics.median(times):>10.2f}")
    ratio = statistics.median(chk) / statistics.median(opt)
    print(f"cached check / cached optimize rerun (medians): {ratio:.2f} (goal: at most 1)")
    print(f"load after: {load()}")


if __name__ == "__main__":
    main()
