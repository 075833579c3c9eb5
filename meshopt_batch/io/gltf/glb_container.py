"""The glTF container: GLB chunks, ``data:`` URIs, and a document with one binary buffer
packed as ``.glb`` or ``.gltf`` bytes, and the external files a ``.gltf``'s URIs name.

An external buffer or image file is read by :func:`read_external`: it is opened without
blocking and must be a regular file (a FIFO would wait for a writer forever, ``/dev/zero``
never ends, a directory has no bytes), only the bytes a buffer declares are read, and what
is read must fit in the memory available (:func:`meshopt_batch.support.limits.check_memory`) before
anything is allocated.  A URI is taken relative to the glTF's folder; absolute paths and
``../`` are read as the file names them (the specification allows relative URIs only, and
files written that way are kept readable).

References
----------
.. [1] Khronos, glTF 2.0 specification, "GLB File Format Specification" (12-byte header,
   4-byte aligned JSON and BIN chunks, the JSON padded with spaces, BIN with zeros) and
   "Buffers and Buffer Views" (buffers given as base64 ``data:`` URIs).
"""

from __future__ import annotations

import base64
import json
import os
import stat
import struct
import urllib.parse
from pathlib import Path

from ...support.limits import LimitError, check_memory
from ..format_common import Refusal

__all__ = ["CHUNK_BIN", "CHUNK_JSON", "GLB_MAGIC", "MissingFile", "decode_data_uri", "external_path", "image_mime",
           "parse_glb", "read_external", "serialize_gltf"]

GLB_MAGIC = b"glTF"
CHUNK_JSON = 0x4E4F534A
CHUNK_BIN = 0x004E4942


def parse_glb(data: bytes) -> tuple[dict, bytes | None]:
    """The JSON document and the BIN chunk (None when absent) of a GLB file."""
    if len(data) < 20:
        raise Refusal("truncated GLB (no header)")
    magic, version, length = struct.unpack("<4sII", data[:12])
    if magic != GLB_MAGIC:
        raise Refusal("not a GLB file (bad magic)")
    if version != 2:
        raise Refusal(f"glTF version {version} is not supported (2 is)")
    if length > len(data):
        raise Refusal(f"truncated GLB ({len(data)} of {length} bytes)")
    pos = 12
    doc = None
    bin_chunk = None
    while pos + 8 <= length:
        clen, ctype = struct.unpack("<II", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + clen]
        if len(body) < clen:
            raise Refusal("truncated GLB chunk")
        if ctype == CHUNK_JSON and doc is None:
            doc = json.loads(body.decode("utf-8"))
        elif ctype == CHUNK_BIN and bin_chunk is None:
            bin_chunk = bytes(body)
        pos += 8 + clen + (-clen % 4 if ctype not in (CHUNK_JSON, CHUNK_BIN) else 0)
    if doc is None:
        raise Refusal("GLB has no JSON chunk")
    return doc, bin_chunk


def decode_data_uri(uri: str) -> tuple[bytes, str | None]:
    """Contents and media type of a ``data:`` URI."""
    head, _, payload = uri.partition(",")
    raw = base64.b64decode(payload) if head.endswith(";base64") else urllib.parse.unquote_to_bytes(payload)
    return raw, head[5:].split(";")[0] or None


class MissingFile(Refusal):
    """An external file that does not exist or cannot be opened (callers may keep its URI)."""


#: What a path that is not a regular file is, by its ``stat`` mode.
_FILE_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
               (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
               (stat.S_ISSOCK, "a socket"))


def external_path(source: Path, uri: str) -> Path:
    """The file a (non-``data:``) URI of the glTF file ``source`` names."""
    return source.parent / urllib.parse.unquote(uri)


def read_external(source: Path, uri: str, what: str, length: int | None = None) -> bytes:
    """The bytes of the external file that ``uri`` of the glTF file ``source`` names.

    Parameters
    ----------
    source : Path
        The ``.gltf``/``.glb`` file; the URI is relative to its folder.
    uri : str
        The ``uri`` as the document writes it (percent-encoded).
    what : str
        What the file is for the messages, such as ``"buffer 0 file"`` or ``"image file"``.
    length : int, optional
        Read only the first ``length`` bytes (a buffer's ``byteLength``); the file must have
        at least that many.  None: the whole file.

    Raises
    ------
    MissingFile
        The file does not exist or cannot be opened (one line naming the URI).
    Refusal
        Not a regular file, shorter than ``length``, or more bytes than the memory available.
    """
    label = f"{what} {uri!r}"
    path = external_path(source, uri)
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError as exc:
        raise MissingFile(f"{label} is missing or unreadable ({exc.strerror or exc})") from None
    try:
        mode = os.fstat(fd)
        if not stat.S_ISREG(mode.st_mode):
            kind = next((k for test, k in _FILE_KINDS if test(mode.st_mode)), "not a file")
            raise Refusal(f"{label} is {kind}, not a regular file")
        fh = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with fh:
        size = mode.st_size
        if length is not None and size < length:
            raise Refusal(f"{label} has {size:,} bytes, {length:,} declared (byteLength)")
        want = size if length is None else length
        try:
            check_memory(want, f"reading {label} ({want:,} bytes)")
        except LimitError as exc:
            raise Refusal(str(exc)) from None
        try:
            raw = fh.read(want)
        except OSError as exc:
            raise MissingFile(f"{label} is unreadable ({exc.strerror or exc})") from None
    if len(raw) < want:  # it shrank since fstat
        raise Refusal(f"{label} has {len(raw):,} bytes, {want:,} expected")
    return raw


def serialize_gltf(doc: dict, bin_data: bytes, path: Path) -> bytes:
    """``doc`` with ``bin_data`` as its only buffer, as the bytes of a ``.gltf`` (buffer
    embedded as a base64 ``data:`` URI, JSON indented) or a ``.glb`` (``path``'s suffix).

    ``doc["buffers"]`` is replaced (removed when ``bin_data`` is empty).
    """
    if bin_data:
        doc["buffers"] = [{"byteLength": len(bin_data)}]
    else:
        doc.pop("buffers", None)
    if path.suffix.lower() == ".gltf":
        if bin_data:
            doc["buffers"][0]["uri"] = "data:application/octet-stream;base64," + base64.b64encode(bin_data).decode()
        return json.dumps(doc, indent=1).encode("utf-8")
    js = json.dumps(doc, separators=(",", ":")).encode("utf-8")
    js += b" " * (-len(js) % 4)
    out = [struct.pack("<II", len(js), CHUNK_JSON), js]
    if bin_data:
        out += [struct.pack("<II", len(bin_data), CHUNK_BIN), bin_data]
    body = b"".join(out)
    return struct.pack("<4sII", GLB_MAGIC, 2, 12 + len(body)) + body


def image_mime(uri: str, raw: bytes) -> str | None:
    """Media type from an image's leading bytes (PNG, JPEG, WebP, KTX2), else None."""
    if raw[:8] == b"\x89PNG\r\n\x1a\n":
        return "image/png"
    if raw[:3] == b"\xff\xd8\xff":
        return "image/jpeg"
    if raw[:4] == b"RIFF" and raw[8:12] == b"WEBP":
        return "image/webp"
    if raw[:12] == b"\xabKTX 20\xbb\r\n\x1a\n":
        return "image/ktx2"
    return None
