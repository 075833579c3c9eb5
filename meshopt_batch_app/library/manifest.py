"""``OUTDIR/manifest.jsonl``: one JSON object per input file, kept safe across crashes.

While a run goes, each finished file's object is appended as one line and flushed to disk
(``fsync``) before the next, so a crash loses nothing already written; at most the last line
is cut short, and a reader skips a line that does not parse.  At the end the file is
rewritten atomically with one line per input, ordered by ``path``, keys sorted, no spaces.

Fields of an object (:data:`STATUSES` for ``status``): ``path`` (relative to DIR), ``output``
(relative to OUTDIR), ``status``, ``error`` (one line, ``failed`` only), ``input_sha256``,
``references`` (a glTF's external files: URI -> SHA-256), ``output_sha256``,
``output_references`` (the external files next to a ``.gltf`` output), ``key`` (the content
cache's, :mod:`.fingerprint`), ``invocations`` (profile -> ``before``/``after``),
``triangles``, ``vertices_before``, ``vertices_after``, ``bytes_in``, ``bytes_out``,
``warnings``, ``copied_from`` (an equal-keyed file whose output was copied) and ``seconds``
(wall time of the file's step; the only field that differs between two equal runs).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from meshopt_batch.files import atomic_write

__all__ = ["MANIFEST_NAME", "STATUSES", "ManifestWriter", "dumps", "read_manifest", "write_manifest"]

MANIFEST_NAME = "manifest.jsonl"
STATUSES = ("ok", "cached", "failed", "passed-through")


def dumps(entry: dict) -> str:
    """One manifest line (no newline): sorted keys, no spaces."""
    return json.dumps(entry, sort_keys=True, separators=(",", ":"))


def read_manifest(path: str | os.PathLike) -> dict[str, dict]:
    """``path -> entry`` of a manifest (the last line of a path wins; broken lines skipped)."""
    entries: dict[str, dict] = {}
    try:
        with open(path, "rb") as fh:
            lines = fh.read().splitlines()
    except FileNotFoundError:
        return entries
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("path"), str) and entry.get("status") in STATUSES:
            entries[entry["path"]] = entry
    return entries


def write_manifest(path: str | os.PathLike, entries) -> Path:
    """Rewrite the manifest atomically: one line per entry, ordered by ``path``."""
    lines = [dumps(e) + "\n" for e in sorted(entries, key=lambda e: e["path"])]
    return atomic_write(path, "".join(lines))


class ManifestWriter:
    """Appends entries to a manifest, each line on disk before :meth:`append` returns."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._fh = open(self.path, "ab")  # noqa: SIM115 -- held for the run, closed by close()

    def append(self, entry: dict) -> None:
        self._fh.write((dumps(entry) + "\n").encode())
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        self._fh.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
