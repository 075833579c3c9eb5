"""``meshopt-batch compare``: paper 001 Table 1/2-style comparison of triangle-order optimizers.

``-p`` takes every target ``optimize`` takes (:func:`meshopt_batch.model.targets.get_target`;
``portable`` stands for its five profiles).  On a terminal a count of the optimizer runs
and the one under way are shown on stderr (:mod:`meshopt_batch_app.progress`).
"""

from __future__ import annotations

from pathlib import Path

from meshopt_batch.support.errors import MeshoptBatchError

from ..options import add_method, add_no_progress, add_profile, split_values
from ..progress import Progress, wanted
from .meshlets import add_compare_option, run_compare

#: The profiles compared when ``-p`` is not given, as the help text names them
#: (:data:`meshopt_batch.evaluation.method_comparison.DEFAULT_PROFILES`; a test keeps the two equal).
DEFAULT_PROFILE_NAMES = ("nvidia_gl", "amd", "intel")


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
    add_method(p, multiple=True, default_help="every available method")
    add_profile(p, multiple=True, default_help=" ".join(DEFAULT_PROFILE_NAMES) + ", and nvidia_gl+16bit when an index "
                "buffer addresses more than 2^16 vertices")
    p.add_argument("--csv", metavar="FILE", help="also write the tidy table (one row per mesh, profile "
                   "and method) as CSV")
    p.add_argument("--shipped", action="store_true",
                   help="one order shipped to every GPU: the orders optimize writes for each single profile of "
                   "the target (-p, default portable) and for the target, the input and the classic methods, "
                   "each judged on every profile as a ratio to meshoptimizer's order, with a worst column and "
                   "index-codec bits per triangle")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_no_progress(p, quiet=True)
    add_compare_option(p)
    p.set_defaults(func=run)


def _check_csv(args) -> None:
    """Refuse a ``--csv`` in a folder that does not exist (before any work)."""
    if args.csv:
        parent = Path(args.csv).resolve().parent
        if not parent.is_dir():
            raise MeshoptBatchError(f"{args.csv}: folder {parent} does not exist")


def run(args) -> int:
    if args.meshlets:
        return run_compare(args)
    if args.shipped:
        return run_shipped(args)
    from meshopt_batch.evaluation.method_comparison import compare  # lazy: the parser needs no core module
    from meshopt_batch.model.targets import get_target  # lazy: the parser needs no core module

    profiles = split_values(args.profile)
    if profiles:
        get_target(profiles)                  # a bad name fails before any work (compare takes the names)
    methods = split_values(args.method)
    _check_csv(args)
    with Progress("compare", unit=" runs", enabled=wanted(args)) as bar:
        result = compare(args.meshes, methods, profiles, progress=bar.step)
    if args.csv:
        result.to_csv(args.csv)
    if args.json:
        print(result.to_json())
    else:
        print(result.to_text())
        if args.csv:
            print(f"\ntidy table written to {args.csv}")
    return 0


def run_shipped(args) -> int:
    """``compare --shipped``: every written order judged on every profile of the target."""
    from meshopt_batch.evaluation.shipped_orders import compare_shipped  # lazy: the parser needs no core module
    from meshopt_batch.model.targets import get_target  # lazy: the parser needs no core module

    target = get_target(split_values(args.profile) or "portable")
    methods = split_values(args.method)
    orders = None
    if methods:
        orders = ["input", "meshoptimizer"] + [m if "@" in m or m != "batch" else f"batch@{target.name}"
                                               for m in methods]
    _check_csv(args)
    with Progress("compare --shipped", unit=" runs", enabled=wanted(args)) as bar:
        result = compare_shipped(args.meshes, target=target, orders=orders, progress=bar.step)
    if args.csv:
        result.to_csv(args.csv)
    print(result.to_json() if args.json else result.to_text())
    return 0
