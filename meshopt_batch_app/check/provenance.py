"""Files known to be ``optimize``'s own output: judged as what ``optimize`` reaches.

An asset that ``optimize`` wrote is optimized by definition, but running ``optimize`` on it again
is not guaranteed to leave it alone: from a good start the search can find an order somewhat
better still (the portable target's search does so by more than 1% on some assets).  So an
output is recognised by its bytes where ``check`` can know them, and judged as it is, without
running ``optimize`` again:

* ``check`` computes ``optimize``'s output of every file it judges (into a temporary folder)
  and keeps, beside the file's record, a record for that output under the key the output would
  have as an input (:func:`output_record`, :func:`output_key`): after ``optimize FILE -o FILE``,
  the fix ``check`` suggests, the next check of FILE finds it (``optimize`` is deterministic:
  equal inputs and options give byte-identical outputs);
* a baseline written by ``optimize DIR -o OUTDIR`` records each output's hash and figures, and
  its ``key`` says which options and tool version wrote it: an entry whose key is the key of its
  own input under ``check``'s options (recomputed from the entry's input hashes) vouches for the
  file in OUTDIR with its hash (:func:`manifest_outputs`).

A file whose bytes differ in any way is judged by running ``optimize`` on it, as any other.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from ..library.fingerprint import Fingerprint, cache_key

__all__ = ["PROVENANCE", "manifest_outputs", "output_key", "output_record"]

#: The ``provenance`` field of a record built by :func:`output_record`.
PROVENANCE = "optimize-output"


def _as_output(pairs: dict) -> dict:
    return {name: {"before": pair["after"], "after": pair["after"]} for name, pair in pairs.items()}


def output_record(fields: dict) -> dict | None:
    """The record of the file a worker wrote (its ``after`` figures on both sides), or None when
    the worker wrote no optimized output (a failure, a file passed through)."""
    if fields.get("status") not in ("ok", "cached") or "output_sha256" not in fields or "invocations" not in fields:
        return None
    record = {"status": "ok", "provenance": PROVENANCE, "triangles": fields.get("triangles", 0),
              "vertices_before": fields.get("vertices_after", 0), "vertices_after": fields.get("vertices_after", 0),
              "invocations": _as_output(fields["invocations"])}
    if "primitives" in fields:
        record["primitives"] = [{**p, "invocations": _as_output(p["invocations"])} for p in fields["primitives"]]
    return record


def output_key(fields: dict, options: dict, name: str) -> str:
    """The content-cache key the output described by ``fields`` has as an input named ``name``."""
    return cache_key(Fingerprint(fields["output_sha256"], dict(fields.get("output_references") or {})), options, name)


def manifest_outputs(entries, options: dict) -> dict[str, dict]:
    """``key -> record`` of the outputs an ``optimize DIR`` manifest vouches for under ``options``
    (:func:`..library.fingerprint.options_fingerprint`)."""
    out = {}
    for entry in entries:
        if not {"key", "input_sha256", "output_sha256", "output"} <= set(entry):
            continue
        name = PurePosixPath(entry["output"]).name
        written_with = cache_key(Fingerprint(entry["input_sha256"], dict(entry.get("references") or {})), options, name)
        record = output_record(entry) if written_with == entry["key"] else None
        if record is not None:
            out[output_key(entry, options, name)] = record
    return out
