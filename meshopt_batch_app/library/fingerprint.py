"""What a library file's result depends on, as one hash: the content cache's key.

The key of a file is the SHA-256 of

* the tool's version (:data:`meshopt_batch.__version__`),
* every field of the options, canonically (the method's name and target, its parameters,
  every field of each profile of the target: a profile given as a JSON file counts by its content),
* the output format (the output's extension),
* the SHA-256 of the file's bytes, and
* for a glTF document (``.gltf``, or a ``.glb`` whose JSON names outside files), each
  external buffer's and image's URI with the SHA-256 of its bytes (``missing`` when absent).

The file's name and folder are not part of it: the optimized bytes do not depend on them
(tested), so two copies of one asset share a key and the work is done once.  Two files
whose keys are equal get byte-identical outputs.

References
----------
.. [1] Khronos, glTF 2.0 specification, "URIs" (relative references resolved against the
   document's location; ``data:`` URIs embedded) and "GLB File Format Specification".
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import stat
import struct
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

from meshopt_batch import __version__
from meshopt_batch.assets.file_optimization import AssetOptions
from meshopt_batch.model.profiles import Profile
from meshopt_batch.model.targets import Target
from meshopt_batch.optimizers import Method

__all__ = ["Fingerprint", "cache_key", "external_uris", "fingerprint", "options_fingerprint", "sha256_file"]

_GLB_HEADER = struct.Struct("<4sII")
_CHUNK_HEADER = struct.Struct("<II")
_CHUNK_JSON = 0x4E4F534A


@dataclass(frozen=True)
class Fingerprint:
    """Hashes of one input and of the outside files it references.

    Attributes
    ----------
    sha256 : str
        Of the file's bytes.
    references : dict
        ``uri -> sha256`` (or ``"missing"``) of each external buffer and image, URI order.
    bytes : int
        The file's size plus its external files' sizes.
    document : dict or None
        A glTF file's JSON (read for the references; the memory estimate reads it too).
    """

    sha256: str
    references: dict = field(default_factory=dict)
    bytes: int = 0
    document: dict | None = field(default=None, compare=False, repr=False)


def sha256_file(path: str | os.PathLike) -> str:
    """SHA-256 of a file's bytes, read in chunks (hex)."""
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def external_uris(document: dict | None) -> list[str]:
    """The relative file URIs of a glTF document's buffers and images (decoded, sorted, unique)."""
    if not isinstance(document, dict):
        return []
    uris = set()
    for kind in ("buffers", "images"):
        items = document.get(kind)
        for item in items if isinstance(items, list) else []:
            uri = item.get("uri") if isinstance(item, dict) else None
            if isinstance(uri, str) and uri and not uri.startswith("data:") and "://" not in uri:
                uris.add(urllib.parse.unquote(uri))
    return sorted(uris)


def _glb_document(path: Path) -> dict | None:
    with open(path, "rb") as fh:
        head = fh.read(_GLB_HEADER.size + _CHUNK_HEADER.size)
        if len(head) < _GLB_HEADER.size + _CHUNK_HEADER.size:
            return None
        magic, _version, _length = _GLB_HEADER.unpack_from(head)
        chunk_length, chunk_type = _CHUNK_HEADER.unpack_from(head, _GLB_HEADER.size)
        if magic != b"glTF" or chunk_type != _CHUNK_JSON:
            return None
        body = fh.read(chunk_length)
    return _json_or_none(body)


def _json_or_none(data: bytes) -> dict | None:
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def document_of(path: Path) -> dict | None:
    """The JSON of a ``.gltf`` or ``.glb`` file (``None`` for other formats or unreadable JSON)."""
    suffix = path.suffix.lower()
    if suffix == ".gltf":
        return _json_or_none(path.read_bytes())
    if suffix == ".glb":
        return _glb_document(path)
    return None


def reference_hashes(folder: Path, uris: list[str]) -> tuple[dict, int]:
    """``uri -> sha256`` (``"missing"`` when unreadable or not a regular file: a FIFO would
    wait for a writer, a device never end) and the bytes read."""
    hashes, total = {}, 0
    for uri in uris:
        target = folder / uri
        hashes[uri] = "missing"
        with contextlib.suppress(OSError):
            info = target.stat()
            if stat.S_ISREG(info.st_mode):
                hashes[uri] = sha256_file(target)
                total += info.st_size
    return hashes, total


def fingerprint(path: str | os.PathLike) -> Fingerprint:
    """Hash a library file and the external files its glTF JSON references."""
    path = Path(path)
    digest = sha256_file(path)
    document = document_of(path)
    refs, ref_bytes = reference_hashes(path.parent, external_uris(document))
    return Fingerprint(digest, refs, path.stat().st_size + ref_bytes, document)


def options_fingerprint(options: AssetOptions) -> dict:
    """Every field of the options as plain, canonically ordered data (JSON-serialisable)."""
    out = {}
    for f in dataclasses.fields(options):
        value = getattr(options, f.name)
        if isinstance(value, Method):
            value = {"name": value.name, "target": value.target}
        elif isinstance(value, Profile):
            value = value.to_dict()
        elif isinstance(value, Target):
            value = {"name": value.name, "profiles": [p.to_dict() for p in value.profiles]}
        elif isinstance(value, dict):
            value = {k: value[k] for k in sorted(value)}
        out[f.name] = value
    return out


def cache_key(fp: Fingerprint, options: dict, output_suffix: str, version: str = __version__) -> str:
    """The content-cache key of one file (see the module docstring)."""
    payload = {"version": version, "options": options, "format": output_suffix.lower(),
               "sha256": fp.sha256, "references": fp.references}
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()
