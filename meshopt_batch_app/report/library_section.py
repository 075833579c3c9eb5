"""``meshopt-batch report --library OUTDIR``: what a library run did, from its manifest.

Tables (pandas): vertex-shader invocations before and after per profile (paper 001's
measure, Algorithm 1), files and bytes per status, the failures with their errors, and the
slowest files.  One figure: invocations per profile, and each file's saving against its
size.  Written as ``index.html`` and ``report.md`` (:mod:`.document`); the command prints
the tables too.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from meshopt_batch.support.errors import MeshoptBatchError

from ..library.manifest import MANIFEST_NAME, STATUSES, read_manifest
from .document import Figure, Section, Table, write_report
from .figures import new_figure

__all__ = ["library_frame", "library_report", "library_section", "library_tables", "run_library_report"]

SLOWEST = 10


def library_frame(out_dir: str | Path) -> pd.DataFrame:
    """One row per manifest entry (profile columns: ``before:<profile>``, ``after:<profile>``)."""
    path = Path(out_dir) / MANIFEST_NAME
    entries = read_manifest(path)
    if not entries:
        raise MeshoptBatchError(f"{path}: no manifest entries (run 'meshopt-batch optimize DIR -o {out_dir}' first)")
    rows = []
    for e in entries.values():
        row = {"path": e["path"], "status": e["status"], "error": e.get("error", ""),
               "triangles": e.get("triangles", 0), "bytes_in": e.get("bytes_in", 0),
               "bytes_out": e.get("bytes_out", 0), "seconds": e.get("seconds", 0.0)}
        for prof, pair in (e.get("invocations") or {}).items():
            row[f"before:{prof}"], row[f"after:{prof}"] = pair["before"], pair["after"]
        rows.append(row)
    return pd.DataFrame(rows).sort_values("path", kind="stable").reset_index(drop=True)


def _profiles(frame: pd.DataFrame) -> list[str]:
    return [c.split(":", 1)[1] for c in frame.columns if c.startswith("before:")]


def library_tables(frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """``invocations``, ``status``, ``failures`` and ``slowest`` tables of a library frame."""
    inv = []
    for prof in _profiles(frame):
        done = frame[frame[f"before:{prof}"].notna()]
        before, after = int(done[f"before:{prof}"].sum()), int(done[f"after:{prof}"].sum())
        inv.append({"profile": prof, "files": len(done), "before": before, "after": after,
                    "saved": before - after, "saved %": 100.0 * (before - after) / before if before else 0.0})
    status = (frame.groupby("status").agg(files=("path", "size"), bytes_in=("bytes_in", "sum"),
                                          bytes_out=("bytes_out", "sum"))
              .reindex([s for s in STATUSES if s in set(frame["status"])]).reset_index())
    failures = frame.loc[frame["status"] == "failed", ["path", "error"]].reset_index(drop=True)
    slowest = (frame.sort_values(["seconds", "path"], ascending=[False, True], kind="stable")
               .head(SLOWEST)[["path", "status", "triangles", "seconds"]].reset_index(drop=True))
    return {"invocations": pd.DataFrame(inv, columns=["profile", "files", "before", "after", "saved", "saved %"]),
            "status": status, "failures": failures, "slowest": slowest}


def _figure(frame: pd.DataFrame, tables: dict) -> Figure:
    fig, (left, right) = new_figure(1, 2, width=10, height=3.6)
    inv = tables["invocations"]
    x = np.arange(len(inv))
    left.bar(x - 0.2, inv["before"], 0.4, label="before")
    left.bar(x + 0.2, inv["after"], 0.4, label="after")
    left.set_xticks(x, inv["profile"])
    left.set_ylabel("vertex-shader invocations")
    left.legend()
    profiles = _profiles(frame)
    if profiles:
        prof = profiles[0]
        done = frame[frame[f"before:{prof}"].fillna(0) > 0]
        saved = 1 - done[f"after:{prof}"] / done[f"before:{prof}"]
        right.scatter(done["triangles"].clip(lower=1), 100 * saved, s=12)
        right.set_xscale("log")
        right.set_title(prof, fontsize=10)
    right.set_xlabel("triangles")
    right.set_ylabel("invocations saved (%)")
    return Figure("library_invocations", fig, "Left: vertex-shader invocations of the whole library before and "
                  "after, per profile. Right: each optimized file's saving against its triangle count.")


def library_section(out_dir: str | Path) -> tuple[Section, dict]:
    """The report section of one library output folder, and its tables."""
    frame = library_frame(out_dir)
    tables = library_tables(frame)
    counts = ", ".join(f"{int(n)} {s}" for s, n in zip(tables["status"]["status"], tables["status"]["files"],
                                                         strict=True))
    sec = Section("library", f"Library {out_dir}", [f"{len(frame)} files: {counts}."])
    sec.tables += [Table("Invocations per profile", tables["invocations"], "{:.1f}"),
                   Table("Files and bytes per status", tables["status"]),
                   Table("Failures", tables["failures"]),
                   Table(f"Slowest {SLOWEST} files", tables["slowest"], "{:.3f}")]
    sec.figures.append(_figure(frame, tables))
    return sec, tables


def library_report(out_dir: str | Path, report_dir: str | Path) -> dict:
    """Write the library report of ``out_dir`` into ``report_dir``; the paths and tables."""
    sec, tables = library_section(out_dir)
    written = write_report([sec], report_dir, "meshopt-batch library report",
                           [f"Summary of {Path(out_dir) / MANIFEST_NAME}."])
    return {**written, "tables": tables}


def run_library_report(args) -> int:
    """``report --library OUTDIR``: write the report, print the tables (or one JSON object)."""
    out = library_report(args.library, args.out)
    tables = out["tables"]
    if args.json:
        print(json.dumps({"html": str(out["html"]), "markdown": str(out["markdown"]),
                          "figures": [str(p) for p in out["figures"]],
                          **{name: json.loads(t.to_json(orient="records")) for name, t in tables.items()}}))
        return 0
    with pd.option_context("display.width", 160, "display.max_colwidth", 80):
        for name, table in tables.items():
            if len(table):
                print(f"{name}:\n{table.to_string(index=False)}\n")
    print(f"report written: {out['html']} and {out['markdown']}", file=sys.stdout)
    return 0
