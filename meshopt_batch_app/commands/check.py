"""``meshopt-batch check PATH...``: judge assets without writing them, for CI and pre-commit.

Three kinds of rule, per file and per primitive (:mod:`meshopt_batch_app.check`):

* *unoptimized*: the file's order predicts more than ``1 + S`` times the invocations that
  ``optimize`` (the same options: ``-p``, ``--effort``) reaches on it, on some profile of the
  target (:mod:`~meshopt_batch_app.check.judge`);
* *regression* (``--baseline MANIFEST``): a profile's ASR above the baseline's by more than
  ``S``, or a file or primitive gone or added (:mod:`~meshopt_batch_app.check.baseline`);
* *budget* (``--budget FILE``): TOML rules by glob (:mod:`~meshopt_batch_app.check.budget`).

What ``optimize`` reaches on a file comes from a per-user content cache or is computed by the
library's worker into a temporary folder (:mod:`~meshopt_batch_app.check.collect`); the output
says which, for how many files, and how long it took.  Exit code: 0 when everything holds, 1
when something is violated, 2 for bad input (a bad option, budget or baseline, a file that
cannot be read: one line each on stderr).
"""

from __future__ import annotations

import json
import math
import shlex
import sys
from pathlib import Path

from meshopt_batch.support.errors import MeshoptBatchError

from ..options import add_no_progress, add_profile, effort_work, split_values
from ..progress import wanted

#: The slack (``--slack``) unless given: 1%.
DEFAULT_SLACK = 0.01


def add_parser(subparsers):
    p = subparsers.add_parser(
        "check", help="judge assets without writing them: unoptimized orders, regressions, budgets (for CI)",
        description="Judge mesh files and folders without writing them: exit 1 when a file's triangle order "
        "predicts more than (1 + S) times the vertex-shader invocations that optimize reaches on it on some "
        "profile of the target, when a profile is worse than a baseline by more than S or a file or primitive "
        "is gone or added, or when a budget rule is broken; 0 when everything holds; 2 for bad input.")
    p.add_argument("paths", nargs="+", metavar="PATH", help="mesh files (OBJ, PLY, OFF, STL, glTF, GLB) or folders "
                   "of them (every mesh file below, as optimize DIR finds them)")
    add_profile(p, multiple=True, default_help="portable, as optimize; check with the target the assets were "
                "optimized for")
    p.add_argument("--slack", default=None, metavar="S",
                   help=f"how much over a limit still holds, as a fraction (default {DEFAULT_SLACK:g}: 1%%)")
    p.add_argument("--baseline", metavar="MANIFEST",
                   help="judge regressions against OUTDIR/manifest.jsonl of an earlier optimize DIR (it describes "
                   "the files in OUTDIR) or a file written by --write-baseline; its paths are relative to its folder")
    p.add_argument("--write-baseline", metavar="FILE",
                   help="write the checked files' figures to FILE as a baseline (entries of other files already "
                   "in FILE are kept; files gone from a checked folder are dropped)")
    p.add_argument("--budget", metavar="FILE",
                   help="TOML budget rules by glob ([[rule]] glob = \"characters/**\", max_triangles, max_vertices, "
                   "max_bytes, max_asr, max_acmr), globs relative to FILE's folder")
    p.add_argument("--effort", type=float, default=None, metavar="M",
                   help="what optimize --effort M reaches (batch, several profiles); 0 is a fast estimate: the "
                   "best start without a search, which optimize's default search can only improve")
    p.add_argument("--junit", metavar="FILE", help="write a JUnit XML report: one test case per file")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    cache = p.add_mutually_exclusive_group()
    cache.add_argument("--cache", metavar="DIR",
                       help="where what optimize reaches on each file is kept (default: "
                       "$XDG_CACHE_HOME/meshopt-batch/check or ~/.cache/meshopt-batch/check)")
    cache.add_argument("--no-cache", action="store_true", help="neither read nor keep cached figures")
    p.add_argument("--workers", "-j", type=int, metavar="N",
                   help="worker processes for the files not in the cache (default: every core)")
    add_no_progress(p)
    p.set_defaults(func=run)


def _slack(text) -> float:
    if text is None:
        return DEFAULT_SLACK
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (0 <= value < math.inf):
        raise MeshoptBatchError(f"--slack {text}: expected a fraction of at least 0, e.g. 0.01 for 1%")
    return value


def _writable_parent(option: str, path: str | None) -> None:
    if path is not None and not Path(path).absolute().parent.is_dir():
        raise MeshoptBatchError(f"{option} {path}: folder {Path(path).absolute().parent} does not exist")


def _options(args):
    """The AssetOptions ``optimize`` builds for the same ``-p`` and ``--effort``."""
    from meshopt_batch.assets.file_optimization import AssetOptions  # lazy: the parser needs no core module
    from meshopt_batch.model.targets import get_target  # lazy: the parser needs no core module
    from meshopt_batch.optimizers import DEFAULT_METHOD, get_method  # lazy: the parser needs no core module

    method = get_method(DEFAULT_METHOD)
    target = get_target(split_values(args.profile) or method.default_profile)
    params = {"use_distance": True, "queue": "fast"} if method.name == "batch" else {}
    if args.effort is not None:
        if method.name != "batch" or len(target.profiles) < 2:
            raise MeshoptBatchError("--effort applies to a target of several profiles (such as portable)")
        params["window_work"] = effort_work(args.effort)
    return AssetOptions(method, target, params)


def _fixes(args, target, baseline_path: str | None):
    from ..check.judge import Fixes  # lazy: the parser needs no core module

    target_arg = "" if target.name == "portable" else f" -p {shlex.quote(target.name)}"
    paths = " ".join(shlex.quote(p) for p in args.paths) if len(args.paths) <= 3 else "PATH..."
    accept = (f"accept: meshopt-batch check {paths}{target_arg} --write-baseline {shlex.quote(baseline_path)}"
              if baseline_path else "")
    return Fixes("meshopt-batch optimize {file} -o {file}" + target_arg, accept)


def _how(args, options, stats, cache) -> str:
    """One line: how the reachable figures were found and what it took."""
    effort = ("a fast estimate: optimize --effort 0 (the best start, no search; the default search may reach "
              "further)" if args.effort == 0 else
              f"what optimize --effort {args.effort:g} reaches" if args.effort is not None else
              "what optimize reaches")
    what = f"reachable figures: {effort} (method {options.method.name}, target {options.target.name})"
    parts = []
    if stats.computed:
        parts.append(f"computed for {stats.computed} file(s) in {stats.seconds:.1f} s on {stats.workers} worker(s)")
    if stats.cached:
        known = f", {stats.outputs} of them known as optimize's own output" if stats.outputs else ""
        parts.append(f"{stats.cached} from the cache ({cache.folder}{known})")
    if stats.vouched:
        parts.append(f"{stats.vouched} known as optimize's own output from the baseline")
    return what + ": " + ("; ".join(parts) if parts else "no file to judge")


def _shown(path: Path) -> str:
    """A path outside the checked files (a baseline's), relative to here where it can be."""
    try:
        return path.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return str(path)


def run(args) -> int:
    from ..check import baseline as baselines  # lazy: the parser needs no core module
    from ..check.budget import read_budget  # lazy: the parser needs no core module
    from ..check.cache import ResultCache, default_folder  # lazy: the parser needs no core module
    from ..check.collect import collect, compute, find_files  # lazy: the parser needs no core module
    from ..check.figures import file_figures  # lazy: the parser needs no core module
    from ..check.judge import Violation, regressions, unoptimized  # lazy: the parser needs no core module
    from ..check.output import junit_xml, table  # lazy: the parser needs no core module
    from ..check.provenance import manifest_outputs  # lazy: the parser needs no core module
    from ..library.fingerprint import options_fingerprint  # lazy: the parser needs no core module

    slack = _slack(args.slack)
    if args.workers is not None and args.workers < 1:
        raise MeshoptBatchError(f"--workers {args.workers}: must be at least 1")
    options = _options(args)
    names = tuple(p.name for p in options.target.profiles)
    budget = read_budget(args.budget, names) if args.budget else None
    base = baselines.read_baseline(args.baseline) if args.baseline else None
    vouched = manifest_outputs(base.entries.values(), options_fingerprint(options)) if base is not None else {}
    _writable_parent("--junit", args.junit)
    _writable_parent("--write-baseline", args.write_baseline)
    files, folders = find_files(args.paths)
    new_base = Path(args.write_baseline).absolute() if args.write_baseline else None
    if new_base is not None:
        outside = [f.display for f in files if baselines.relative_to(f.path, new_base.resolve().parent) is None]
        if outside:
            raise MeshoptBatchError(f"--write-baseline {args.write_baseline}: {outside[0]} is not in its folder "
                                    "(a baseline's paths are relative to its folder)")
    cache = ResultCache(None if args.no_cache else Path(args.cache) if args.cache else default_folder())
    collect(files, options, cache, vouched)
    stats = compute(files, options, cache, workers=args.workers, progress=wanted(args))
    fixes = _fixes(args, options.target, args.baseline or args.write_baseline)

    violations: list[Violation] = []
    reports, errors = [], []
    for item in files:
        figs = file_figures(item.fields, names, item.display)
        found: list[Violation] = []
        if figs.status == "failed":
            errors.append(figs.error or f"{item.display}: failed")
        else:
            found += unoptimized(item.display, figs, slack, fixes)
            if base is not None:
                rel = baselines.relative_to(item.path, base.folder)
                then = base.figures(rel, names) if rel is not None else None
                if then is None:
                    found.append(Violation("added", item.display, "", "", "triangles", figs.triangles, None, None,
                                           f"{item.display}: not in the baseline {args.baseline}", fixes.accept))
                else:
                    found += regressions(item.display, figs, then, slack, fixes)
            if budget is not None:
                found += budget.violations(item.display, item.path, figs, slack, fixes)
        violations += found
        reports.append({"item": item, "figs": figs, "violations": found})
    gone = []
    if base is not None:
        checked = {baselines.relative_to(f.path, base.folder) for f in files}
        for rel in sorted({rel for folder in folders for rel in base.under(folder)} - checked):
            shown = _shown(base.folder / rel)
            gone.append(Violation("removed", shown, "", "", "triangles", 0, None, None,
                                  f"{shown}: in the baseline {args.baseline}, not among the checked files",
                                  fixes.accept))
    violations += gone
    for line in errors:
        print(f"meshopt-batch: {line}", file=sys.stderr)
    code = 2 if errors else 1 if violations else 0
    how = _how(args, options, stats, cache)

    if args.junit:
        cases = [{"name": r["item"].display, "violations": r["violations"],
                  "error": r["figs"].error if r["figs"].status == "failed" else "",
                  "seconds": r["item"].fields.get("seconds", 0.0) if not r["item"].cached else 0.0} for r in reports]
        cases += [{"name": v.file, "violations": [v]} for v in gone]
        junit_xml(args.junit, cases, {"target": options.target.name, "slack": slack, "reachable": how},
                  stats.seconds)
    if new_base is not None:
        if errors:
            raise MeshoptBatchError(f"--write-baseline {args.write_baseline}: not written, a file could not be read")
        _write_baseline(new_base, files, folders, baselines)
    if args.json:
        print(json.dumps(_json(reports, violations, options, slack, how, stats, args, code)))
        return code
    for line in table(violations):
        print(line)
    print(how)
    print(f"checked {len(files)} file(s), target {options.target.name}, slack {slack:g}: {_verdict(violations)}"
          + (f"; {len(errors)} could not be read" if errors else ""))
    if new_base is not None:
        print(f"wrote baseline {args.write_baseline}")
    return code


def _verdict(violations) -> str:
    """``everything holds``, or how many files break each kind of rule."""
    if not violations:
        return "everything holds"
    from ..check.judge import KINDS  # lazy: the parser needs no core module

    kinds = {}
    for v in violations:
        kinds.setdefault(v.kind, set()).add(v.file)
    files = len({v.file for v in violations})
    return f"{files} file(s) do not hold (" + ", ".join(f"{k}: {len(kinds[k])}" for k in KINDS if k in kinds) + ")"


def _write_baseline(path: Path, files, folders, baselines) -> None:
    """The checked files' entries, and the entries already in ``path`` of files not checked now."""
    folder = path.resolve().parent
    kept = {}
    if path.is_file():
        old = baselines.read_baseline(path, "--write-baseline")
        dropped = {rel for f in folders for rel in old.under(f)}
        kept = {rel: e for rel, e in old.entries.items() if rel not in dropped}
    for item in files:
        rel = baselines.relative_to(item.path, folder)
        kept[rel] = baselines.baseline_entry(rel, item.fields, item.fp.sha256, item.key)
    baselines.write_baseline(path, list(kept.values()))


def _json(reports, violations, options, slack, how, stats, args, code) -> dict:
    files = []
    for r in reports:
        figs, item = r["figs"], r["item"]
        profiles = {name: {"invocations": own, "asr": own / figs.triangles if figs.triangles else 0.0,
                           "reachable": figs.reachable.get(name)} for name, own in figs.own.items()}
        files.append({"file": item.display, "status": figs.status, "cached": item.cached,
                      "optimize_output": ("baseline" if item.vouched else "cache") if item.fields.get("provenance")
                      else None,
                      "triangles": figs.triangles, "vertices": figs.vertices, "bytes": figs.bytes,
                      "profiles": profiles, "primitives": len(figs.primitives),
                      "error": figs.error if figs.status == "failed" else None,
                      "violations": len(r["violations"])})
    return {"target": options.target.name, "profiles": [p.name for p in options.target.profiles], "slack": slack,
            "baseline": args.baseline, "budget": args.budget, "files": files,
            "violations": [v.to_dict() for v in violations],
            "reachable": {"how": how, "computed": stats.computed, "cached": stats.cached, "vouched": stats.vouched,
                          "outputs": stats.outputs,
                          "seconds": round(stats.seconds, 3), "workers": stats.workers},
            "exit": code}
