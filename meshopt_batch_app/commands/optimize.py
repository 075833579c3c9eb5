"""``meshopt-batch optimize``: weld, reorder and renumber a mesh's draws for a target of GPU profiles.

Every vertex buffer of the file is optimized with the index buffers drawn from it
(:func:`meshopt_batch.assets.file_optimization.optimize_file`): vertices equal by value welded (``--no-weld``;
``--weld-tolerance EPS`` also welds float noise),
each index buffer's triangles reordered for the target (``portable`` unless ``-p`` names
profiles) and kept in the input order unless the new order predicts no more invocations on
every profile of the target and fewer on one, vertices renumbered in first-use
order (``--keep-vertex-order``), the smallest index type (``--keep-index-type``),
degenerate triangles kept and counted (``--drop-degenerate``).  The batch method may append
vertex copies (the 16-bit boundary fix of paper 001); every attribute of a copied vertex is
copied with its position.

The output format comes from the extension of ``-o`` (.obj, .ply, .glb, .gltf); a glTF
written from a glTF keeps the input's document (only changed accessors rewritten, external
files kept external and copied beside the output, ``--embed`` for data URIs) and its
compression: meshopt-compressed views stay compressed, Draco is written with
``EXT_meshopt_compression`` (``--compress`` / ``--no-compress``,
:mod:`meshopt_batch.assets.gltf_delivery`).  Points and lines pass through; a file without
triangles is copied through.  Each file is written atomically.

On a terminal the vertex buffers done and the time so far are shown on stderr while a file is
optimized (:mod:`meshopt_batch_app.progress`; ``--no-progress``, as for a folder).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from meshopt_batch.support.errors import MeshoptBatchError

from ..library.command import add_library_arguments, optimize_directory, reject_directory_options
from ..library.memory import estimate_memory, estimate_triangles
from ..options import add_method, add_no_progress, add_profile, effort_work, split_values
from ..progress import Progress, wanted

#: The default method as the help text names it (:data:`meshopt_batch.optimizers.DEFAULT_METHOD`;
#: the parser is built without the core modules, a test keeps the two equal).
DEFAULT_METHOD_NAME = "batch"
#: The default ``--effort`` as the help text names it (:data:`meshopt_batch.optimizers.portable.tuning.
#: WINDOW_WORK` in millions; a test keeps the two equal).
DEFAULT_EFFORT = 6


def add_parser(subparsers):
    p = subparsers.add_parser(
        "optimize", help="weld, reorder and renumber a mesh's draws for a GPU profile and write it",
        description="Weld vertices equal by value, reorder the triangles of every index buffer of MESH "
        "with the batch optimizer of paper 001 (Algorithm 2) or a classic method (keeping the input "
        "order where that predicts no more invocations), renumber vertices in first-use order, print "
        "the predicted ASR before and after for the target profile, and write OUT (format from its "
        "extension; a glTF keeps its document, external files and sharing).",
    )
    p.add_argument("mesh", help="OBJ, PLY, OFF, STL, glTF or GLB file, or a folder of them (a library)")
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="output file: .obj, .ply, .glb or .gltf")
    add_method(p, multiple=False, default_help=DEFAULT_METHOD_NAME)
    add_profile(p, multiple=True, default_help="portable (nvidia_gl, nvidia_dx, amd, intel, llvmpipe at once; "
                "nvidia_gl for --overdraw, which optimizes for one profile); several profiles make one target: "
                "the order is never worse on any of them")
    p.add_argument("--no-distance", action="store_true",
                   help="batch: the faster variant without the face-distance term D (k_v = k_n = -3)")
    p.add_argument("--keep-16bit-boundaries", action="store_true",
                   help="batch: skip the 16-bit boundary fix (no vertex copies) on NVIDIA profiles")
    p.add_argument("--no-lookahead", action="store_true",
                   help="batch: emit only the queue's top triangle, as the paper's Algorithm 2 prints it "
                   "(no lookahead among two-vertex candidates, no small-component filling)")
    p.add_argument("--effort", type=float, default=None, metavar="M",
                   help="batch for several profiles (portable): the bound on the whole search for each index "
                   f"buffer, in millions of triangles simulated (default {DEFAULT_EFFORT}; less is faster, more "
                   "helps until the search converges; 0 keeps the best start without a search)")
    p.add_argument("--queue", choices=("fast", "fibheap"), default="fast",
                   help="batch: compiled bucket queue (default) or the fibheap package (slow reference)")
    p.add_argument("--overdraw", type=float, default=None, metavar="T",
                   help="batch, tipsify: overdraw-aware order (Sander et al. 2007): the order's clusters "
                   "drawn outward-facing first, predicting at most T times its invocations (e.g. 1.05)")
    p.add_argument("--no-weld", action="store_true",
                   help="keep duplicate vertices apart (and non-indexed primitives without indices)")
    p.add_argument("--keep-vertex-order", action="store_true",
                   help="do not renumber vertices in first-use (vertex-fetch) order")
    p.add_argument("--keep-index-type", action="store_true",
                   help="keep each index buffer's input index type (default: the smallest that fits)")
    p.add_argument("--drop-degenerate", action="store_true",
                   help="remove triangles with a repeated index (default: keep them; counted either way)")
    p.add_argument("--embed", action="store_true",
                   help=".gltf output: buffers and images as data: URIs (default: external files kept "
                   "external, copied beside the output)")
    squeeze = p.add_mutually_exclusive_group()
    squeeze.add_argument("--compress", dest="compress", action="store_const", const=True, default=None,
                         help="glTF output: compress every vertex, index and animation buffer view with "
                         "EXT_meshopt_compression, one view per kind of data (lossless; default: as the input came: "
                         "a meshopt-compressed input stays compressed, a Draco input is written with "
                         "EXT_meshopt_compression)")
    squeeze.add_argument("--no-compress", dest="compress", action="store_const", const=False,
                         help="glTF output: plain buffer views (a compressed or Draco input is decoded)")
    p.add_argument("--weld-tolerance", metavar="EPS", default=None,
                   help="also weld vertices whose float attributes other than POSITION and JOINTS differ by "
                   "at most EPS per component (default: only vertices equal by value)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_no_progress(p)
    add_library_arguments(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from meshopt_batch.assets.file_optimization import (  # lazy: the parser needs no core module
        AssetOptions,
        optimize_file,
    )
    from meshopt_batch.model.targets import get_target  # lazy: the parser needs no core module
    from meshopt_batch.optimizers import DEFAULT_METHOD, get_method  # lazy: the parser needs no core module
    from meshopt_batch.optimizers.overdraw_order import (  # lazy: the parser needs no core module
        check_threshold,
        overdraw_variant,
    )
    from meshopt_batch.support.limits import check_memory  # lazy: the parser needs no core module
    from meshopt_batch.vertices.weld import check_tolerance  # lazy: the parser needs no core module

    method = get_method(args.method or DEFAULT_METHOD)
    named = split_values(args.profile)
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
    if args.overdraw is not None:
        method = get_method(overdraw_variant(method.name))
        options["threshold"] = check_threshold(args.overdraw)
    target = get_target(named or method.default_profile)
    if args.effort is not None:
        if method.name != "batch" or len(target.profiles) < 2:
            raise MeshoptBatchError("--effort applies to --method batch with several profiles (a target such as "
                                    "portable)")
        options["window_work"] = effort_work(args.effort)
    tolerance = 0.0
    if args.weld_tolerance is not None:
        if args.no_weld:
            raise MeshoptBatchError("--weld-tolerance welds: it cannot go with --no-weld")
        tolerance = check_tolerance(args.weld_tolerance)
    asset_options = AssetOptions(method, target, options, weld=not args.no_weld,
                                 vertex_order=not args.keep_vertex_order, keep_index_type=args.keep_index_type,
                                 drop_degenerate=args.drop_degenerate, embed=args.embed, compress=args.compress,
                                 weld_tolerance=tolerance)
    if src_path.is_dir():
        return optimize_directory(args, asset_options)
    reject_directory_options(args)
    if args.compress is not None and out_path.suffix.lower() not in (".glb", ".gltf"):
        raise MeshoptBatchError("--compress and --no-compress apply to .glb/.gltf output only")
    if src_path.is_file():
        size = src_path.stat().st_size      # a header's count is believed only as far as the bytes go
        check_memory(estimate_memory(size, min(estimate_triangles(src_path), size // 2)), f"optimizing {src_path}")
    replaces_input = out_path.exists() and src_path.exists() and os.path.samefile(out_path, src_path)
    with Progress(f"optimize {src_path.name}", unit=" vertex buffers", enabled=wanted(args)) as bar:
        report = optimize_file(src_path, out_path, asset_options, progress=bar.done_of)
    if replaces_input:
        print(f"meshopt-batch: note: -o {out_path} is the input file: it was replaced atomically",
              file=sys.stderr)
    out = report.to_dict(primitives=len(report.primitives) > 1 or args.json)
    before, after, seconds = report.before, report.after, report.seconds
    sixteen = report.before_16bit is not None
    if args.json:
        print(json.dumps(out))
        return 0
    print(f"{src_path}: {out['triangles']} triangles, {out['vertices_before']} vertices"
          + (f" in {len(report.primitives)} index buffers" if len(report.primitives) > 1 else ""))
    if target.single:
        prof = target.first
        print(f"method {method.name}, profile {prof.name}: optimized in {seconds:.2f} s")
        print(f"{'':<8}{'invocations':>12}{'ASR':>8}{'ATVR':>8}{'batches':>9}")
        for label, r in (("before", before), ("after", after)):
            print(f"{label:<8}{r['invocations']:>12}{r['asr']:>8.3f}{r['atvr']:>8.3f}{r['batches']:>9}")
        if sixteen:
            print(f"with the 2^16-boundary model ({prof.name}+16bit): before ASR "
                  f"{out['before_16bit']['asr']:.3f}, after {out['after_16bit']['asr']:.3f}")
    else:
        print(f"method {method.name}, target {target.name}: optimized in {seconds:.2f} s")
        print_profiles(report)
    print_details(report)
    print(f"wrote {out_path}" + (f" (and {len(report.files)} external file(s))" if report.files else ""))
    return 0


def print_profiles(report) -> None:
    """Predicted invocations and ASR before and after on every profile of the target."""
    tris = max(report.triangles, 1)
    print(f"{'profile':<18}{'before':>12}{'after':>12}{'ASR before':>12}{'ASR after':>11}{'change':>9}")
    for name, pair in report.profiles.items():
        change = pair["after"] / pair["before"] - 1 if pair["before"] else 0.0
        print(f"{name:<18}{pair['before']:>12}{pair['after']:>12}{pair['before'] / tris:>12.3f}"
              f"{pair['after'] / tris:>11.3f}{change:>+9.1%}")


def print_details(report) -> None:
    """Welding, degenerate triangles, kept orders, vertex-fetch locality, size, and notes."""
    prims = report.primitives
    welded = sum(p.get("welded", 0) for p in {(p.get("mesh"), p["vertices_before"]): p for p in prims}.values())
    copies = sum(p.get("vertex_copies", 0) for p in prims)
    if report.vertices_after != report.vertices_before:
        why = ", ".join(w for w, n in (("welded", welded), ("16-bit boundary copies", copies)) if n)
        print(f"vertices: {report.vertices_before} -> {report.vertices_after}" + (f" ({why})" if why else ""))
    degenerate = sum(p.get("degenerate", 0) for p in prims)
    if degenerate:
        dropped = sum(p.get("degenerate_dropped", 0) for p in prims)
        print(f"degenerate triangles: {degenerate}" + (f", {dropped} dropped" if dropped else " (kept)"))
    kept = sum(1 for p in prims if p.get("order") == "input")
    if kept:
        print(f"{kept} of {len(prims)} index buffer(s) kept their input order (the optimized order "
              "predicted no fewer invocations)")
    gaps = [(p["fetch_gap_before"], p["fetch_gap_kept_order"], p["fetch_gap_after"]) for p in prims
            if p.get("fetch_gap_before") is not None]
    if gaps:
        before, kept, after = (sum(g[k] for g in gaps) / len(gaps) for k in range(3))
        print(f"vertex fetch: mean first-use gap {before:.1f} in, {after:.1f} out "
              f"({kept:.1f} with the new triangle order and the vertex order kept)")
    if report.bytes_before:
        limit = f" (limit {report.size_limit})" if report.size_limit is not None else ""
        print(f"size: {report.bytes_before} -> {report.bytes_after} bytes{limit}")
    for note in report.notes:
        print(f"note: {note}")
