"""What ``optimize`` reaches on a file, kept per user so that an unchanged library is judged at once.

The key of a file is the library runner's content-cache key (:func:`..library.fingerprint.cache_key`:
the tool's version, every option, the output format, the file's bytes and its external files'),
so a file is recomputed exactly when ``optimize DIR`` would redo it.  The value is the worker's
record of the file (:func:`..library.worker.optimize_one`) without what belongs to the temporary
output it wrote: its hashes and size.  Failures are kept too (a file that cannot be read fails
again with the same key), except those of a worker that died (memory, a crash), retried.

One small JSON file per key, ``CACHE/<first two hex digits>/<key>.json``, written atomically:
runs that share the folder (a CI cache, two terminals) never see half a record.  ``CACHE`` is
``--cache DIR``, else ``$XDG_CACHE_HOME/meshopt-batch/check``, else
``~/.cache/meshopt-batch/check``; an unwritable folder only means nothing is kept.  Delete the
folder to empty the cache; records are a few kilobytes each.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from meshopt_batch.support.errors import MeshoptBatchError
from meshopt_batch.support.files import atomic_write

from ..library.manifest import valid_entry

__all__ = ["ResultCache", "default_folder"]

#: Fields of a worker's record that describe its temporary output, not the file checked.
OUTPUT_FIELDS = ("output_sha256", "output_references", "bytes_out")


def default_folder() -> Path:
    """``$XDG_CACHE_HOME/meshopt-batch/check`` (or under ``~/.cache``)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "meshopt-batch" / "check"


class ResultCache:
    """Records by key in ``folder`` (``None``: a cache that keeps nothing, ``--no-cache``)."""

    def __init__(self, folder: Path | None):
        self.folder = folder

    def _file(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict | None:
        """The record of ``key``, or None (absent, unreadable, or not a valid record)."""
        if self.folder is None:
            return None
        try:
            fields = json.loads(self._file(key).read_bytes())
        except (OSError, ValueError):
            return None
        return fields if valid_entry({**fields, "path": "x"} if isinstance(fields, dict) else None) else None

    def put(self, key: str, fields: dict) -> None:
        """Keep a record (not a worker's death); an unwritable folder keeps nothing."""
        if self.folder is None or fields.get("transient"):
            return
        record = {k: v for k, v in fields.items() if k not in OUTPUT_FIELDS}
        with contextlib.suppress(OSError, MeshoptBatchError):
            self._file(key).parent.mkdir(parents=True, exist_ok=True)
            atomic_write(self._file(key), json.dumps(record, sort_keys=True, separators=(",", ":")))
