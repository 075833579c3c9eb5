"""Wall time of ``meshopt-batch report --quick`` (target: under 2 minutes on 2 cores) and, with
``--full``, of the full report (target: under 15 minutes), with the time of each stage.

    python benchmarks/bench_report.py [--full] [--out DIR]
"""

import argparse
import os
import resource
import sys
import tempfile
import time

from meshopt_batch_app.report import build_report, get_scope

TARGET = {"quick": 120.0, "full": 900.0}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    name = "full" if args.full else "quick"
    out = args.out or tempfile.mkdtemp(prefix="bench-report-")
    t0 = time.perf_counter()
    res = build_report(out, get_scope(name), progress=False)
    wall = time.perf_counter() - t0
    ru = resource.getrusage(resource.RUSAGE_SELF)
    cpu = ru.ru_utime + ru.ru_stime
    print(f"report --{name}: {wall:.1f} s wall, {cpu:.1f} s CPU on {os.cpu_count()} CPUs "
          f"(target {TARGET[name]:.0f} s): " + ", ".join(f"{k} {v:.1f} s" for k, v in res["stages"].items()))
    print(f"  {len(res['figures'])} figures in {out}; "
          + ("within target" if wall <= TARGET[name] else "OVER TARGET (a loaded machine counts too)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
