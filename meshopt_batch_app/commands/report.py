"""``meshopt-batch report``: compare, probe and simulate on the shipped meshes and scenes, written
as one self-contained HTML page (``index.html``) and a Markdown twin (``report.md``)."""

from __future__ import annotations

import argparse
import json
import sys


def add_parser(subparsers):
    p = subparsers.add_parser(
        "report", help="run compare, probe and simulate and write an HTML/Markdown report",
        description="Run the optimizer comparison on the procedural meshes and ../shared/meshes "
        "(or --meshes), the GPU probe on this machine, and every shipped scene with every "
        "technique for the original, Forsyth and batch triangle orders, with the model-vs-OpenGL "
        "check; write OUT/index.html (self-contained) and OUT/report.md with its PNG figures.",
    )
    p.add_argument("--out", "-o", default="report", metavar="DIR",
                   help="output folder (default: report)")
    p.add_argument("--quick", action="store_true",
                   help="fewer meshes (procedural + bunny), 4 frames per scene at half resolution, "
                   "smaller probe set: about a minute")
    p.add_argument("--meshes", nargs="+", metavar="PATH",
                   help="mesh files or folders to compare and probe instead of ../shared/meshes "
                   "(the procedural meshes are always included)")
    p.add_argument("--scenes", nargs="+", metavar="SCENE",
                   help="scenes to simulate (shipped names or scene files; default: every shipped scene)")
    p.add_argument("--frames", type=int, metavar="N", help="frames per scene (default: scope's)")
    p.add_argument("--scope", choices=("full", "quick", "smoke"), default=None,
                   help=argparse.SUPPRESS)   # smoke: the test suite's smallest inputs
    p.add_argument("--no-progress", action="store_true", help="no progress bars on stderr")
    p.add_argument("--json", action="store_true", help="print one JSON object (paths and timings)")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..report.build import build_report
    from ..report.scope import get_scope

    name = args.scope or ("quick" if args.quick else "full")
    scope = get_scope(name, meshes=args.meshes, scenes=args.scenes, frames=args.frames)
    if args.scenes:
        from pipeline_model.scene import load_scene

        for s in args.scenes:
            load_scene(s)                    # a bad scene fails before anything runs
    out = build_report(args.out, scope, progress=False if args.no_progress else None)
    summary = {"html": str(out["html"]), "markdown": str(out["markdown"]),
               "figures": [str(p) for p in out["figures"]], "data": [str(p) for p in out["data"]],
               "scope": scope.name,
               "seconds": round(out["seconds"], 2),
               "stages": {k: round(v, 2) for k, v in out["stages"].items()}}
    if args.json:
        print(json.dumps(summary))
    else:
        print(f"report written: {out['html']} and {out['markdown']} ({len(out['figures'])} figures, "
              f"{out['seconds']:.1f} s: " + ", ".join(f"{k} {v:.1f} s" for k, v in out["stages"].items())
              + ")", file=sys.stdout)
    return 0
