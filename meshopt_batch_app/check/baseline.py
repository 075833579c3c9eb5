"""Baselines: a manifest read back as the figures files had, and ``--write-baseline``.

A baseline is a manifest (:mod:`..library.manifest`), one JSON object per file:

* ``OUTDIR/manifest.jsonl`` of an earlier ``optimize DIR -o OUTDIR`` describes the files it
  wrote: each entry's ``output`` (relative to OUTDIR) with its ``after`` figures.  Entries of
  files that failed have no output and are left out.
* ``check --write-baseline FILE`` writes the checked files as they are: ``path`` and ``output``
  both the file's path relative to FILE's folder, ``before`` and ``after`` both its own figures.

Either way a baseline's paths are relative to its own folder, so a file is found in it by its
path relative to that folder, wherever the command runs.  The file's figure is read from
``after`` (:func:`.figures.file_figures` with ``own="after"``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from meshopt_batch.support.errors import MeshoptBatchError
from meshopt_batch.support.files import atomic_write

from ..library.manifest import dumps, valid_entry
from .figures import FileFigures, file_figures

__all__ = ["Baseline", "baseline_entry", "read_baseline", "relative_to", "write_baseline"]


def relative_to(path: Path, folder: Path) -> str | None:
    """``path`` (absolute) relative to ``folder`` with ``/`` separators, or None outside it."""
    try:
        return path.resolve().relative_to(folder).as_posix()
    except ValueError:
        return None


@dataclass(frozen=True)
class Baseline:
    """The entries of a baseline by path relative to its folder."""

    path: Path
    folder: Path
    entries: dict

    def figures(self, rel: str, names: tuple[str, ...]) -> FileFigures | None:
        entry = self.entries.get(rel)
        return None if entry is None else file_figures(entry, names, rel, own="after", reachable=None)

    def under(self, folder: Path) -> list[str]:
        """The baseline's paths that lie in ``folder`` (absolute, resolved)."""
        return [rel for rel in self.entries if (self.folder / rel).resolve().is_relative_to(folder)]


def read_baseline(path: str | os.PathLike, option: str = "--baseline") -> Baseline:
    """Read a baseline strictly: every line must be a manifest object.

    Raises
    ------
    MeshoptBatchError
        Missing or unreadable, or a line that is not a manifest object (its number named).
    """
    path = Path(path)
    try:
        lines = path.read_bytes().splitlines()
    except OSError as exc:
        raise MeshoptBatchError(f"{option} {path}: cannot read: {exc.strerror or exc}") from None
    entries = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            entry = None
        if not valid_entry(entry):
            raise MeshoptBatchError(f"{option} {path}: line {number} is not a manifest record (a baseline is "
                                    "OUTDIR/manifest.jsonl of optimize DIR, or a file check --write-baseline wrote)")
        if entry["status"] != "failed":
            entries[entry.get("output", entry["path"])] = entry
    return Baseline(path, path.resolve().parent, entries)


def _own(pairs: dict) -> dict:
    return {name: {"before": pair["before"], "after": pair["before"]} for name, pair in pairs.items()}


def baseline_entry(rel: str, fields: dict, sha256: str, key: str) -> dict:
    """A checked file's baseline object: its own figures (``before`` of ``fields``) as both sides."""
    entry = {"path": rel, "output": rel, "status": fields["status"], "input_sha256": sha256, "key": key,
             "bytes_in": fields.get("bytes_in", 0), "triangles": fields.get("triangles", 0),
             "vertices_before": fields.get("vertices_before", 0), "vertices_after": fields.get("vertices_before", 0),
             "invocations": _own(fields.get("invocations") or {}),
             "primitives": [{**p, "invocations": _own(p["invocations"])} for p in fields.get("primitives") or []]}
    if fields["status"] == "cached":
        entry["status"] = "ok"
    return entry


def write_baseline(path: str | os.PathLike, entries: list[dict]) -> Path:
    """Write ``entries`` (:func:`baseline_entry`) atomically, ordered by path."""
    return atomic_write(path, "".join(dumps(e) + "\n" for e in sorted(entries, key=lambda e: e["path"])))
