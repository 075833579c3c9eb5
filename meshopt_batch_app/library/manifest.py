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
``warnings``, ``copied_from`` (an equal-keyed file whose output was copied), ``primitives``
(one object per draw, :func:`primitive_fields`) and ``seconds`` (wall time of the file's step;
the only field that differs between two equal runs).  An entry without ``primitives`` (written
before the field existed) is still valid.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
from pathlib import Path

from meshopt_batch.support.files import atomic_write

__all__ = ["MANIFEST_NAME", "STATUSES", "ManifestWriter", "dumps", "primitive_fields", "read_manifest", "valid_entry",
           "write_manifest"]

MANIFEST_NAME = "manifest.jsonl"
STATUSES = ("ok", "cached", "failed", "passed-through")


def dumps(entry: dict) -> str:
    """One manifest line (no newline): sorted keys, no spaces."""
    return json.dumps(entry, sort_keys=True, separators=(",", ":"))


_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_COUNTS = ("triangles", "vertices_before", "vertices_after", "bytes_in", "bytes_out")


def _relative(text) -> bool:
    """A path relative to DIR or OUTDIR that stays inside it (POSIX separators)."""
    return (isinstance(text, str) and text != "" and "\\" not in text and "\0" not in text
            and not posixpath.isabs(text) and ".." not in text.split("/"))


def _count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _hashes(value) -> bool:
    """URI -> SHA-256 (or ``"missing"``, a file that could not be read)."""
    return isinstance(value, dict) and all(
        isinstance(uri, str) and isinstance(sha, str) and (sha == "missing" or _SHA256.match(sha))
        for uri, sha in value.items())


def primitive_fields(records: list[dict]) -> list[dict]:
    """The ``primitives`` field from an :class:`~meshopt_batch.assets.file_optimization.AssetReport`'s per-draw
    records, in their order: ``mesh`` and ``primitive`` (glTF indices; 0 for other formats),
    ``name``, ``triangles`` and ``invocations`` (profile, as judged, -> ``before``/``after``)."""
    return [{"mesh": int(r.get("mesh", 0)), "primitive": int(r.get("primitive", 0)), "name": str(r.get("name") or ""),
             "triangles": int(r.get("triangles", 0)),
             "invocations": {name: {"before": int(pair["before"]), "after": int(pair["after"])}
                             for name, pair in (r.get("profiles") or {}).items()}} for r in records]


def _pairs(value) -> bool:
    """Profile -> integer ``before`` and ``after``."""
    return isinstance(value, dict) and all(
        isinstance(pair, dict) and _count(pair.get("before")) and _count(pair.get("after")) for pair in value.values())


def _primitives(value) -> bool:
    return isinstance(value, list) and all(
        isinstance(p, dict) and _count(p.get("mesh")) and _count(p.get("primitive")) and _count(p.get("triangles"))
        and isinstance(p.get("name", ""), str) and _pairs(p.get("invocations")) for p in value)


def valid_entry(entry) -> bool:
    """Whether a manifest object has the fields a run and the report read, each of its type:
    paths relative and inside their folder, hashes as SHA-256, counts non-negative integers,
    ``invocations`` (and each of ``primitives``') profile -> integer ``before`` and ``after``."""
    if not (isinstance(entry, dict) and _relative(entry.get("path")) and entry.get("status") in STATUSES):
        return False
    if "output" in entry and not _relative(entry["output"]):
        return False
    for key in ("input_sha256", "output_sha256", "key"):
        if key in entry and not (isinstance(entry[key], str) and _SHA256.match(entry[key])):
            return False
    if any(key in entry and not _hashes(entry[key]) for key in ("references", "output_references")):
        return False
    if any(key in entry and not _count(entry[key]) for key in _COUNTS):
        return False
    if not _pairs(entry.get("invocations", {})) or not _primitives(entry.get("primitives", [])):
        return False
    warnings = entry.get("warnings", [])
    return (isinstance(warnings, list) and all(isinstance(w, str) for w in warnings)
            and all(isinstance(entry.get(key, ""), str) for key in ("error", "copied_from"))
            and isinstance(entry.get("seconds", 0), (int, float)) and not isinstance(entry.get("seconds", 0), bool))


def read_manifest(path: str | os.PathLike) -> dict[str, dict]:
    """``path -> entry`` of a manifest (the last line of a path wins; a line that does not parse
    or whose object is not :func:`valid_entry` is skipped, so its file is done again)."""
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
        if valid_entry(entry):
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
