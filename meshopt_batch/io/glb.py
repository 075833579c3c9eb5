"""The glTF container: GLB chunks, ``data:`` URIs, and a document with one binary buffer
packed as ``.glb`` or ``.gltf`` bytes.

References
----------
.. [1] Khronos, glTF 2.0 specification, "GLB File Format Specification" (12-byte header,
   4-byte aligned JSON and BIN chunks, the JSON padded with spaces, BIN with zeros) and
   "Buffers and Buffer Views" (buffers given as base64 ``data:`` URIs).
"""

from __future__ import annotations

import base64
import json
import struct
import urllib.parse
from pathlib import Path

from .common import Refusal

__all__ = ["CHUNK_BIN", "CHUNK_JSON", "GLB_MAGIC", "decode_data_uri", "image_mime", "parse_glb", "serialize_gltf"]

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
