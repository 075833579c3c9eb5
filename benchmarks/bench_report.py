"""Wall time of ``meshopt-batch report --scope quick`` (issue 16's target: under 30 s on 2
cores) and, with ``--full``, of the full report (target: under 5 minutes), with the time of
each stage (the shipped-order table, the real assets beside gltfpack and the real-GPU files
included), the CPU time of the process and its workers and the machine's load average before and after (the
targets are for an otherwise idle 2-core machine; a loaded one shows in the load average).

    python benchmarks/bench_report.py [--full] [--out DIR]
"""

import argparse
import os
import resource
import sys
import tempfile
import time

from meshopt_batch_app.report import build_report, get_scope

TARGET = {"quick": 30.0, "full": 300.0}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    name = "full" if args.full else "quick"
    out = args.out or tempfile.mkdtemp(prefix="bench-report-")
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    res = build_report(out, get_scope(name), progress=False)
    wall = time.perf_counter() - t0
    cpu = sum(ru.ru_utime + ru.ru_stime for ru in (resource.getrusage(resource.RUSAGE_SELF),
                                                    resource.getrusage(resource.RUSAGE_CHILDREN)))
    print(f"report --{name}: {wall:.1f} s wall, {cpu:.1f} s CPU on {os.cpu_count()} CPUs "
          f"(target {TARGET[name]:.0f} s): " + ", ".join(f"{k} {v:.1f} s" for k, v in res["stages"].items()))
    print(f"  {len(res['figures'])} figures in {out}; "
          + ("within target" if wall <= TARGET[name] else "OVER TARGET (a loaded machine counts too)"))
    after = os.getloadavg()
    print("  load average (1, 5, 15 min) " + "/".join(f"{v:.2f}" for v in load_before) + " before, "
          + "/".join(f"{v:.2f}" for v in after) + " after")
    return 0


if __name__ == "__main__":
    sys.exit(main())
