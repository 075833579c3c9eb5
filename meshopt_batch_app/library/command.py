"""``meshopt-batch optimize DIR -o OUTDIR``: the library options and what the command prints.

The optimize command calls :func:`optimize_directory` when MESH is a folder; the options of
one file (``--method``, ``--profile``, the batch switches) apply to every file.  Exit code:
0 when every file is ``ok``, ``cached`` or ``passed-through``, 1 when any failed (each
failure is one line on stderr), 2 for bad arguments.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

from meshopt_batch.support.errors import MeshoptBatchError

from ..progress import wanted
from .memory import parse_size

if TYPE_CHECKING:
    from meshopt_batch.assets.file_optimization import AssetOptions

    from .runner import LibraryResult

__all__ = ["add_library_arguments", "optimize_directory", "reject_directory_options", "summary"]

_LIBRARY_OPTIONS = ("workers", "scheduler", "max_memory")


def add_library_arguments(parser) -> None:
    """The options that apply when MESH is a folder."""
    group = parser.add_argument_group("when MESH is a folder (a library: every mesh file under it)")
    group.add_argument("--workers", "-j", type=int, metavar="N",
                       help="worker processes (default: every core; with --scheduler, at most N files at once)")
    group.add_argument("--scheduler", metavar="ADDRESS",
                       help="run on the Dask cluster whose scheduler is at ADDRESS (tcp://HOST:PORT); "
                       "the workers must see DIR and OUTDIR at the same paths")
    group.add_argument("--max-memory", metavar="SIZE",
                       help="memory the files in flight may use together, e.g. 8G (default: 3/4 of the "
                       "available memory)")


def reject_directory_options(args) -> None:
    """Refuse the folder-only options for a single file."""
    given = [name for name in _LIBRARY_OPTIONS if getattr(args, name, None)]
    if given:
        names = ", ".join("--" + n.replace("_", "-") for n in given)
        raise MeshoptBatchError(f"{names}: only for a folder MESH (a library); {args.mesh} is a file")


def _totals(result: LibraryResult) -> dict:
    totals: dict[str, dict] = {}
    for entry in result.entries:
        for prof, pair in (entry.get("invocations") or {}).items():
            t = totals.setdefault(prof, {"before": 0, "after": 0})
            t["before"] += pair["before"]
            t["after"] += pair["after"]
    return totals


def summary(result: LibraryResult, source: str, out: str, scheduler: str | None) -> dict:
    """The ``--json`` object of a library run."""
    return {"library": source, "output": out, "manifest": str(result.manifest), "files": len(result.entries),
            "status": dict(sorted(result.counts.items())), "computed": result.computed,
            "workers": result.workers, "scheduler": scheduler, "invocations": _totals(result),
            "failed": [{"path": e["path"], "error": e.get("error", "")} for e in result.failed],
            "removed": result.removed, "seconds": round(result.seconds, 3)}


def optimize_directory(args, options: AssetOptions) -> int:
    """Run a library: every mesh file under ``args.mesh`` into ``args.output``."""
    from .runner import LibrarySettings, optimize_library  # lazy: only a directory needs the runner

    settings = LibrarySettings(workers=args.workers, scheduler=args.scheduler,
                               max_memory=parse_size(args.max_memory) if args.max_memory else None,
                               progress=wanted(args))
    result = optimize_library(args.mesh, args.output, options, settings)
    out = summary(result, args.mesh, args.output, args.scheduler)
    for entry in result.failed:
        error = entry.get("error", "")
        print(f"meshopt-batch: {error if error.startswith(entry['path']) else entry['path'] + ': ' + error}",
              file=sys.stderr)
    if args.json:
        print(json.dumps(out))
    else:
        counts = ", ".join(f"{n} {status}" for status, n in out["status"].items())
        how = (f"{out['computed']} optimized on {out['workers']} workers" if out["computed"]
               else "nothing to optimize")
        print(f"{out['files']} files: {counts} ({how}, {result.seconds:.1f} s)")
        if result.removed:
            print(f"removed {len(result.removed)} output files of inputs no longer in {args.mesh}")
        for prof, t in out["invocations"].items():
            saved = 1 - t["after"] / t["before"] if t["before"] else 0.0
            print(f"{prof}: {t['before']} -> {t['after']} vertex-shader invocations ({saved:.1%} fewer)")
        print(f"manifest: {result.manifest}")
    return 1 if result.failed else 0
