"""``meshopt-batch compare``: paper 001 Table 1/2-style comparison of triangle-order optimizers."""

from __future__ import annotations

import sys

from meshopt_batch.errors import MeshoptBatchError


def add_parser(subparsers):
    p = subparsers.add_parser(
        "compare", help="compare optimizers: ASR per mesh, method and profile (paper 001 Tables 1-2)",
        description="Optimize every MESH once with every method, time it, and predict the ASR "
        "(vertex-shader invocations per triangle) of each result on every profile. Prints one "
        "table per profile (rows meshes; columns the original order, each method and the ideal "
        "'perfect' reuse = referenced vertices / triangles; '*' marks the best method) and the "
        "optimizer run times. A file with several index buffers (glTF primitives) is optimized "
        "primitive by primitive and reported as the sum of its draws. Profile-aware methods "
        "(batch) are optimized for each profile they are evaluated on.",
    )
    p.add_argument("meshes", nargs="+", metavar="MESH", help="OBJ, PLY, OFF, STL, glTF or GLB files")
    p.add_argument("--methods", "-m", nargs="+", metavar="M",
                   help="methods (space or comma separated): original, hoppe, kcache, tipsify, forsyth, "
                   "batch, meshoptimizer, meshoptimizer_fifo, meshoptimizer_strip; NAME:N sets a cache "
                   "size (tipsify:14). Default: all available")
    p.add_argument("--profiles", "-p", nargs="+", metavar="P",
                   help="profiles (space or comma separated): nvidia_gl, nvidia_dx, amd, intel, llvmpipe, "
                   "fifo:N, lru:N, '+16bit' variants, profile JSON files. Default: nvidia_gl amd intel")
    p.add_argument("--csv", metavar="FILE", help="also write the tidy table (one row per mesh, profile "
                   "and method) as CSV")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress lines on stderr")
    p.set_defaults(func=run)


def _split(values):
    if not values:
        return None
    out = [v.strip() for item in values for v in item.split(",") if v.strip()]
    return out or None


def run(args) -> int:
    from meshopt_batch.compare import compare
    from meshopt_batch.profiles import get_profile

    profiles = _split(args.profiles)
    for spec in profiles or []:
        get_profile(spec)
    methods = _split(args.methods)
    if args.csv:
        from pathlib import Path

        parent = Path(args.csv).resolve().parent
        if not parent.is_dir():
            raise MeshoptBatchError(f"{args.csv}: folder {parent} does not exist")
    progress = None
    if not args.quiet and not args.json and sys.stderr.isatty():
        def progress(msg):
            print(f"  {msg}", file=sys.stderr, flush=True)
    result = compare(args.meshes, methods, profiles, progress=progress)
    if args.csv:
        result.to_csv(args.csv)
    if args.json:
        print(result.to_json())
    else:
        print(result.to_text())
        if args.csv:
            print(f"\ntidy table written to {args.csv}")
    return 0
