"""Wall time of ``meshopt-batch report --scope quick`` (target: under 30 s on 2 cores) and, with
``--full``, of the full report (``make report``; target: under 5 minutes), against its target,
with each stage's time and the machine's load.

Stages on the worker processes overlap each other and this process's (compare, meshlets,
probe): each is printed with when it ran (seconds from the report's start), its wall span
(first job's start to last job's end), its jobs' wall time added up and its CPU time, so that
a stage's figure can be read apart from the others' (the shipped table and the assets are the
portable optimizer's; simulate is the pipeline model's), and the CPU times apart from the
machine's other load.  The load average (1, 5, 15 min) is printed before and after, and the
CPU time of this process and its workers: the targets are for an otherwise idle 2-core
machine, and another program's load shows there.  The first line is the summary a README
quotes.

``--markdown FILE`` writes the same as Markdown (the summary line, then the stages as a table):
the documentation's benchmark page shows it and the README quotes its first line.

Run: .venv/bin/python benchmarks/bench_report.py [--full] [--out DIR] [--markdown FILE]
"""

import argparse
import multiprocessing
import os
import resource
import sys
import tempfile
import time

from meshopt_batch_app.cli import one_blas_thread

one_blas_thread()  # as `meshopt-batch report` (make report) runs, before numpy loads

from meshopt_batch_app.report import build_report, get_scope  # noqa: E402

TARGET = {"quick": 30.0, "full": 300.0}


def _load() -> str:
    return "/".join(f"{v:.2f}" for v in os.getloadavg())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="the full report (make report) instead of the quick one")
    ap.add_argument("--out", default=None, help="report folder (default: a new temporary folder)")
    ap.add_argument("--markdown", default=None, metavar="FILE", help="also write the figures as Markdown to FILE")
    args = ap.parse_args(argv)
    name = "full" if args.full else "quick"
    out = args.out or tempfile.mkdtemp(prefix="bench-report-")
    load_before = _load()
    t0 = time.perf_counter()
    res = build_report(out, get_scope(name), progress=False)
    wall = time.perf_counter() - t0
    load_after = _load()
    for worker in multiprocessing.active_children():     # ended, not yet waited for: their CPU counts
        worker.join()
    cpu = sum(ru.ru_utime + ru.ru_stime for ru in (resource.getrusage(resource.RUSAGE_SELF),
                                                    resource.getrusage(resource.RUSAGE_CHILDREN)))
    verdict = "within" if wall <= TARGET[name] else "OVER"
    summary = (f"report --scope {name}: {wall:.0f} s on {os.cpu_count()} cores, {verdict} its {TARGET[name]:.0f} s "
               f"target (load average {load_before} before, {load_after} after)")
    cpu_line = (f"{cpu:.0f} s CPU in this process and its {res['workers']} worker process(es); "
                f"{len(res['figures'])} figures")
    rows = []
    for stage, seconds in res["stages"].items():
        base = stage.split(" (", 1)[0]
        start, end = res["timeline"][base]
        rows.append((stage, start, end, seconds, res["jobs"].get(base), res["cpu"][base]))
    print(summary)
    print(f"  {cpu_line} in {out}")
    print("  stage                              from s   to s  wall s  jobs' s   CPU s")
    for stage, start, end, seconds, jobs, stage_cpu in rows:
        jobs = f"{jobs:8.1f}" if jobs is not None else " " * 8
        print(f"  {stage:34s} {start:6.1f} {end:6.1f} {seconds:7.1f} {jobs} {stage_cpu:7.1f}")
    if args.markdown:
        lines = [summary + ".", "", cpu_line + ".", "",
                 "| stage | from s | to s | wall s | jobs' s | CPU s |", "|---|---:|---:|---:|---:|---:|"]
        lines += [f"| {stage} | {start:.1f} | {end:.1f} | {seconds:.1f} | "
                  f"{'' if jobs is None else f'{jobs:.1f}'} | {stage_cpu:.1f} |"
                  for stage, start, end, seconds, jobs, stage_cpu in rows]
        with open(args.markdown, "w") as fh:
            fh.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
