"""``meshopt-batch report``: compare, probe and simulate on the shipped meshes and scenes, written
as one self-contained HTML page (``index.html``) and a Markdown twin (``report.md``)."""

from __future__ import annotations

import json
import sys

from meshopt_batch.support.files import output_folder

from ..options import split_values
from ..progress import wanted


def add_parser(subparsers):
    p = subparsers.add_parser(
        "report", help="run compare, probe and simulate and write an HTML/Markdown report",
        description="Open with a verdict (which triangle order to ship for each GPU and for all of "
        "them), then run the optimizer comparison on the procedural meshes and ../shared/meshes "
        "(or --mesh), real glTF assets beside gltfpack, the committed real-GPU measurements, the GPU "
        "probe on this machine, and every shipped scene with every technique for the original, "
        "Forsyth and batch triangle orders, with the model-vs-OpenGL check; write OUT/index.html "
        "(self-contained) and OUT/report.md with its PNG figures.",
    )
    p.add_argument("--out", "-o", default="report", metavar="DIR",
                   help="output folder (default: report)")
    p.add_argument("--scope", choices=("full", "quick", "smoke"), default="full",
                   help="full (default); quick: fewer meshes (procedural + bunny), 4 frames per scene "
                   "at half resolution, smaller probe set, under 30 s on 2 cores; smoke: the test suite's "
                   "smallest inputs")
    p.add_argument("--mesh", action="append", dest="mesh", metavar="PATH",
                   help="mesh file or folder to compare and probe instead of ../shared/meshes "
                   "(repeatable, or comma-separated; the procedural meshes are always included)")
    p.add_argument("--scene", action="append", dest="scene", metavar="SCENE",
                   help="scene to simulate (repeatable, or comma-separated; shipped names or scene "
                   "files; default: every shipped scene)")
    p.add_argument("--frames", "-n", type=int, metavar="N", help="frames per scene (default: scope's)")
    p.add_argument("--assets", metavar="DIR",
                   help="glTF assets for the real-assets section, optimized beside gltfpack (default: "
                   "../shared/gltf when present; the quick scope takes a few small ones)")
    p.add_argument("--results", metavar="DIR",
                   help="measured GPU results for the real-GPU section (default: the repository's results/)")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress on stderr (shown only when stdout and stderr are terminals: a line as each "
                   "stage starts and ends, a bar of the jobs done with the stages running and the elapsed time)")
    p.add_argument("--json", action="store_true", help="print one JSON object (paths and timings)")
    p.add_argument("--library", metavar="OUTDIR",
                   help="instead: summarise the manifest of 'optimize DIR -o OUTDIR' (invocations saved per "
                   "profile, bytes, failures, slowest files) into --out")
    p.set_defaults(func=run)


def run(args) -> int:
    if args.library:
        from ..report.library_section import run_library_report  # lazy: the report's libraries load only here

        return run_library_report(args)
    from meshopt_batch.support.limits import check_frames  # lazy: not for the parser (meshopt-batch --help)
    from pipeline_model.scene import load_scene  # lazy: the report's libraries load only here

    from ..report.build import build_report  # lazy: as above
    from ..report.scope import get_scope  # lazy: as above

    if args.frames is not None:
        check_frames(args.frames, 0, "--frames")
    meshes, scenes = split_values(args.mesh), split_values(args.scene)
    scope = get_scope(args.scope, meshes=meshes, scenes=scenes, frames=args.frames, assets=args.assets,
                      results=args.results)
    for s in scenes or []:
        load_scene(s)                    # a bad scene fails before anything runs
    output_folder(args.out, "--out", create=False)     # and a folder it could not write
    out = build_report(args.out, scope, progress=wanted(args))
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
