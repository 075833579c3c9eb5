"""One file's step of a library run, as a worker process (local or Dask) executes it.

:func:`optimize_one` calls :func:`meshopt_batch.assets.file_optimization.optimize_file` and turns its report,
or its error, into the file's manifest fields.  It never raises for a bad file: one failing
file must not stop the others, so every exception becomes a ``failed`` entry with a
one-line error.  Warnings (a strip converted, a primitive skipped) are kept in the entry
instead of reaching the worker's stderr.  Paths in messages are written relative to DIR
and OUTDIR, so a run's manifest does not depend on where the folders are mounted.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import signal
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

from meshopt_batch.assets.file_optimization import AssetOptions, optimize_file
from meshopt_batch.support.errors import MeshoptBatchError

from .fingerprint import document_of, external_uris, reference_hashes, sha256_file
from .manifest import primitive_fields

__all__ = ["Task", "die_with_parent", "one_line", "optimize_one", "output_fields"]

_PR_SET_PDEATHSIG = 1
ERROR_MAX_CHARS = 300


@dataclass(frozen=True)
class Task:
    """What a worker needs for one file (picklable; paths absolute)."""

    path: str
    source: str
    output: str
    output_rel: str
    options: AssetOptions


def one_line(text: str, task: Task) -> str:
    """A message on one line, paths relative, at most :data:`ERROR_MAX_CHARS` characters."""
    text = str(text).replace(task.source, task.path).replace(task.output, task.output_rel)
    text = " ".join(text.split())
    return text if len(text) <= ERROR_MAX_CHARS else text[: ERROR_MAX_CHARS - 3] + "..."


def output_fields(output: Path) -> dict:
    """``output_sha256``, ``output_references`` (a ``.gltf``'s neighbours) and ``bytes_out``."""
    refs, ref_bytes = reference_hashes(output.parent, external_uris(document_of(output)))
    fields = {"output_sha256": sha256_file(output), "bytes_out": output.stat().st_size + ref_bytes}
    if refs:
        fields["output_references"] = refs
    return fields


def _report_fields(report) -> dict:
    prof = report.profile
    invocations = {prof: {"before": report.before["invocations"], "after": report.after["invocations"]}}
    invocations.update({name: dict(pair) for name, pair in report.profiles.items()})
    if report.before_16bit is not None:
        invocations[report.before_16bit["profile"]] = {"before": report.before_16bit["invocations"],
                                                       "after": report.after_16bit["invocations"]}
    return {"status": "ok" if report.triangles else "passed-through", "invocations": invocations,
            "triangles": report.triangles, "vertices_before": report.vertices_before,
            "vertices_after": report.vertices_after, "primitives": primitive_fields(report.primitives)}


def optimize_one(task: Task) -> dict:
    """Optimize ``task.source`` into ``task.output``; the entry's fields this step knows."""
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            report = optimize_file(task.source, task.output, task.options)
            fields = _report_fields(report)
            fields.update(output_fields(Path(task.output)))
        except MeshoptBatchError as exc:
            fields = {"status": "failed", "error": one_line(str(exc), task)}
        # anything else fails the file too, named by its type: one file never stops the run
        except Exception as exc:  # noqa: BLE001
            fields = {"status": "failed", "error": one_line(f"{type(exc).__name__}: {exc}", task)}
    notes = sorted({one_line(str(w.message), task) for w in caught})
    if notes:
        fields["warnings"] = notes
    fields["seconds"] = round(time.perf_counter() - start, 4)
    return fields


def die_with_parent() -> None:
    """Worker initializer: the kernel kills this process when its parent dies (Linux).

    A coordinator killed with ``kill -9`` then leaves no worker writing into OUTDIR while the
    next run starts.  Elsewhere a no-op.
    """
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
