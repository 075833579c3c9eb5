"""``meshopt-batch optimize``: reorder a mesh's triangles for a GPU profile and write it.

Every index buffer of the file (each glTF triangle primitive) is optimized on its own, as a
GPU draws them.  The batch method may append vertex copies (the 16-bit boundary fix of paper
001); every attribute of a copied vertex is copied with its position, so the written mesh
renders the same image.  With a profile whose memory is direct-mapped (``llvmpipe``) the
vertices are also renumbered (:func:`~meshopt_batch.optimizers.renumber.renumber_for_direct_cache`).

The output format comes from the extension of ``-o`` (.obj, .ply, .glb, .gltf); a glTF
written from a glTF input keeps the input's structure (nodes, materials, ...).  The write is
atomic: on any error no output file is left behind.
"""

from __future__ import annotations

import json
from pathlib import Path

from meshopt_batch.asset import AssetOptions, optimize_file
from meshopt_batch.errors import MeshoptBatchError
from meshopt_batch.optimizers import DEFAULT_METHOD, get_method
from meshopt_batch.profiles import get_profile

from ..options import add_method, add_profile

DEFAULT_PROFILE = "nvidia_gl"


def add_parser(subparsers):
    p = subparsers.add_parser(
        "optimize", help="reorder triangles for a GPU profile and write the mesh",
        description="Reorder the triangles of MESH (each index buffer on its own) with the batch "
        "optimizer of paper 001 (Algorithm 2) or a classic method, print the predicted ASR before "
        "and after for the target profile, and write OUT (format from its extension).",
    )
    p.add_argument("mesh", help="OBJ, PLY, OFF, STL, glTF or GLB file")
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="output file: .obj, .ply, .glb or .gltf")
    add_method(p, multiple=False, default_help=DEFAULT_METHOD)
    add_profile(p, multiple=False, default_help=DEFAULT_PROFILE)
    p.add_argument("--no-distance", action="store_true",
                   help="batch: the faster variant without the face-distance term D (k_v = k_n = -3)")
    p.add_argument("--keep-16bit-boundaries", action="store_true",
                   help="batch: skip the 16-bit boundary fix (no vertex copies) on NVIDIA profiles")
    p.add_argument("--no-lookahead", action="store_true",
                   help="batch: emit only the queue's top triangle, as the paper's Algorithm 2 prints it "
                   "(no lookahead among two-vertex candidates, no small-component filling)")
    p.add_argument("--queue", choices=("fast", "fibheap"), default="fast",
                   help="batch: compiled bucket queue (default) or the fibheap package (slow reference)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args) -> int:
    method = get_method(args.method or DEFAULT_METHOD)
    prof = get_profile(args.profile or DEFAULT_PROFILE)
    out_path = Path(args.output)
    src_path = Path(args.mesh)
    options = {}
    if method.name == "batch":
        options = {"use_distance": not args.no_distance, "queue": args.queue}
        if args.keep_16bit_boundaries:
            options["fix_16bit"] = False
        if args.no_lookahead:
            options["lookahead"] = False
            options["fill_small"] = False
    elif args.no_distance or args.keep_16bit_boundaries or args.no_lookahead or args.queue != "fast":
        raise MeshoptBatchError("--no-distance, --keep-16bit-boundaries, --no-lookahead and --queue "
                                "apply to --method batch only")
    report = optimize_file(src_path, out_path, AssetOptions(method, prof, options))
    out = report.to_dict(primitives=len(report.primitives) > 1 or args.json)
    before, after, seconds = report.before, report.after, report.seconds
    sixteen = report.before_16bit is not None
    if args.json:
        print(json.dumps(out))
        return 0
    print(f"{src_path}: {out['triangles']} triangles, {out['vertices_before']} vertices"
          + (f" in {len(report.primitives)} index buffers" if len(report.primitives) > 1 else ""))
    print(f"method {method.name}, profile {prof.name}: optimized in {seconds:.2f} s")
    print(f"{'':<8}{'invocations':>12}{'ASR':>8}{'ATVR':>8}{'batches':>9}")
    for label, r in (("before", before), ("after", after)):
        print(f"{label:<8}{r['invocations']:>12}{r['asr']:>8.3f}{r['atvr']:>8.3f}{r['batches']:>9}")
    if sixteen:
        print(f"with the 2^16-boundary model ({prof.name}+16bit): before ASR "
              f"{out['before_16bit']['asr']:.3f}, after {out['after_16bit']['asr']:.3f}")
    if out["vertices_after"] != out["vertices_before"]:
        print(f"vertices: {out['vertices_before']} -> {out['vertices_after']} "
              "(copies appended by the 16-bit boundary fix)")
    print(f"wrote {out_path}")
    return 0
