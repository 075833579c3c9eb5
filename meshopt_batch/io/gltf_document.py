"""The glTF 2.0 document: its JSON, its buffers, and the arrays its accessors describe.

A document is the parsed JSON as plain ``dict``/``list`` values plus the bytes of every
buffer (GLB BIN chunk, external ``.bin`` files, ``data:`` URIs).  Accessors are decoded into
numpy arrays: strided (interleaved) buffer views, sparse substitutions, normalized integers.

Why plain JSON and not ``pygltflib``
------------------------------------
``pygltflib`` (1.16.5) was evaluated as the document model.  Its dataclasses do not hold a
document as written: a round trip through ``GLTF2`` drops unknown properties (a node's
``"futureField"``, a buffer's ``"name"``) and empty ``"extras"``, adds defaults that were
absent (``byteOffset: 0``, ``normalized: false``, ``mode: 4``, ``texCoord: 0``,
``alphaMode``...), writes integers as floats (``min: [1]`` becomes ``[1.0]``) and invents an
``asset.generator``; on the 23 shared glTF files every one came back different (3 to 1,139
differences each).  Writing into a source's structure must keep everything it does not
replace, byte for byte where nothing changed, and the writer's next step (keeping shared
accessors shared and external buffers and images external, inventing nothing) needs exactly
the raw structure.  It also has no accessor decoding (strides, sparse, normalized values),
which is most of the code here, and its GLB parser gives no access to the chunks without
its model.  So the document stays the JSON as parsed, and no hand-written class mirrors the
schema.

References
----------
.. [1] Khronos, glTF 2.0 specification, "Accessors" (component and element types,
   ``byteStride``, sparse accessors), "Meshes" (attribute semantics) and the accessor's
   ``normalized`` property (integers read as ``c / (2^b - 1)`` unsigned,
   ``max(c / (2^(b-1) - 1), -1)`` signed).
"""

from __future__ import annotations

import json
import re
import urllib.parse
from pathlib import Path

import numpy as np

from .common import Refusal
from .glb import GLB_MAGIC, decode_data_uri, parse_glb
from .gltf_schema import validate_document

__all__ = [
    "COMPONENTS_OF_TYPE",
    "COMPONENT_DTYPES",
    "COMPONENT_TYPE_OF",
    "COMPRESSION_EXTENSIONS",
    "SEMANTIC_WIDTHS",
    "TYPE_OF_COMPONENTS",
    "attribute_array",
    "key_to_semantic",
    "load_document",
    "read_accessor",
    "semantic_to_key",
    "view_bytes",
]

#: numpy dtype of each accessor ``componentType``.
COMPONENT_DTYPES = {5120: np.int8, 5121: np.uint8, 5122: np.int16, 5123: np.uint16, 5125: np.uint32, 5126: np.float32}
COMPONENT_TYPE_OF = {np.dtype(v): k for k, v in COMPONENT_DTYPES.items()}
COMPONENTS_OF_TYPE = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT2": 4, "MAT3": 9, "MAT4": 16}
TYPE_OF_COMPONENTS = {1: "SCALAR", 2: "VEC2", 3: "VEC3", 4: "VEC4", 9: "MAT3", 16: "MAT4"}
#: Component counts the specification allows for each vertex attribute semantic.
SEMANTIC_WIDTHS = {"NORMAL": (3,), "TANGENT": (4,), "TEXCOORD": (2,), "COLOR": (3, 4),
                   "JOINTS": (4,), "WEIGHTS": (4,)}
#: Geometry compression extensions: files that require one are refused.
COMPRESSION_EXTENSIONS = {"KHR_draco_mesh_compression", "EXT_meshopt_compression", "KHR_meshopt_compression"}


def semantic_to_key(sem: str) -> str:
    """Attribute name of a glTF semantic: ``TEXCOORD_1`` -> ``uv1``, ``NORMAL`` -> ``normal``,
    ``_CUSTOM`` -> ``CUSTOM``."""
    m = re.fullmatch(r"(TEXCOORD|COLOR|JOINTS|WEIGHTS)_(\d+)", sem)
    if m:
        base = {"TEXCOORD": "uv", "COLOR": "color", "JOINTS": "joints", "WEIGHTS": "weights"}[m.group(1)]
        return base if m.group(2) == "0" else f"{base}{m.group(2)}"
    if sem in ("NORMAL", "TANGENT"):
        return sem.lower()
    if sem.startswith("_"):
        return sem[1:]
    return sem


def key_to_semantic(key: str) -> str:
    """glTF semantic of an attribute name (the inverse of :func:`semantic_to_key`); names
    without a semantic become application-specific ``_name``."""
    m = re.fullmatch(r"(uv|color|joints|weights)(\d*)", key)
    if m:
        base = {"uv": "TEXCOORD", "color": "COLOR", "joints": "JOINTS", "weights": "WEIGHTS"}[m.group(1)]
        return f"{base}_{m.group(2) or '0'}"
    if key in ("normal", "tangent"):
        return key.upper()
    return "_" + key


def load_document(data: bytes, path: Path) -> tuple[dict, list[bytes]]:
    """The glTF JSON and the bytes of every buffer (``path`` locates external buffers).

    Refuses GLB files with a bad header, versions other than 2.x, documents that require a
    geometry compression extension, and buffers that are missing or shorter than declared.
    """
    if data[:4] == GLB_MAGIC:
        doc, bin_chunk = parse_glb(data)
    else:
        if path.suffix.lower() == ".glb":
            raise Refusal("not a GLB file (bad magic)")
        doc, bin_chunk = json.loads(data.decode("utf-8-sig")), None
    validate_document(doc)
    if not isinstance(doc, dict) or "asset" not in doc:
        raise Refusal("not a glTF 2.0 document (no 'asset')")
    version = str(doc["asset"].get("version", ""))
    if not version.startswith("2."):
        raise Refusal(f"glTF version {version!r} is not supported (2.x is)")
    required = set(doc.get("extensionsRequired", []))
    bad = sorted(required & COMPRESSION_EXTENSIONS)
    if bad:
        raise Refusal(f"uses {', '.join(bad)} (compressed geometry), which is not supported")
    buffers = []
    for i, b in enumerate(doc.get("buffers", [])):
        uri = b.get("uri")
        if uri is None:
            if i != 0 or bin_chunk is None:
                raise Refusal(f"buffer {i} has no data")
            raw = bin_chunk
        elif uri.startswith("data:"):
            raw, _ = decode_data_uri(uri)
        else:
            bpath = path.parent / urllib.parse.unquote(uri)
            try:
                raw = bpath.read_bytes()
            except OSError:
                raise Refusal(f"buffer file {uri!r} is missing or unreadable") from None
        if len(raw) < int(b.get("byteLength", 0)):
            raise Refusal(f"buffer {i} has {len(raw)} bytes, {b.get('byteLength')} declared")
        buffers.append(raw)
    return doc, buffers


def view_bytes(doc: dict, buffers: list[bytes], view_index: int) -> tuple[memoryview, int | None]:
    """The bytes of a buffer view and its ``byteStride`` (None when absent)."""
    bv = doc["bufferViews"][view_index]
    raw = buffers[bv["buffer"]]
    start = int(bv.get("byteOffset", 0))
    end = start + int(bv["byteLength"])
    if end > len(raw):
        raise Refusal(f"bufferView {view_index} runs past the end of its buffer")
    return memoryview(raw)[start:end], bv.get("byteStride")


def _read_view_elements(doc, buffers, view_index, offset, count, dtype, ncomp, what):
    view, stride = view_bytes(doc, buffers, view_index)
    elem = np.dtype(dtype).itemsize * ncomp
    stride = int(stride or elem)
    if count and offset + stride * (count - 1) + elem > len(view):
        raise Refusal(f"{what} runs past the end of its bufferView")
    if count == 0:
        return np.zeros((0, ncomp), dtype)
    arr = np.ndarray((count, ncomp), dtype=np.dtype(dtype).newbyteorder("<"), buffer=view,
                     offset=offset, strides=(stride, np.dtype(dtype).itemsize))
    return np.array(arr, dtype=dtype)


def read_accessor(doc: dict, buffers: list[bytes], index: int) -> tuple[np.ndarray, dict]:
    """Accessor contents as ``(count, ncomp)`` in its stored component type."""
    try:
        acc = doc["accessors"][index]
    except (IndexError, TypeError):
        raise Refusal(f"accessor {index} does not exist") from None
    dtype = COMPONENT_DTYPES.get(acc["componentType"])
    if dtype is None:
        raise Refusal(f"accessor {index} has unknown componentType {acc['componentType']}")
    ncomp = COMPONENTS_OF_TYPE[acc["type"]]
    count = int(acc["count"])
    if "bufferView" in acc:
        out = _read_view_elements(doc, buffers, acc["bufferView"], int(acc.get("byteOffset", 0)),
                                  count, dtype, ncomp, f"accessor {index}")
    else:
        out = np.zeros((count, ncomp), dtype)
    sparse = acc.get("sparse")
    if sparse:
        n = int(sparse["count"])
        it = COMPONENT_DTYPES[sparse["indices"]["componentType"]]
        idx = _read_view_elements(doc, buffers, sparse["indices"]["bufferView"],
                                  int(sparse["indices"].get("byteOffset", 0)), n, it, 1,
                                  f"accessor {index} sparse indices").reshape(-1)
        vals = _read_view_elements(doc, buffers, sparse["values"]["bufferView"],
                                   int(sparse["values"].get("byteOffset", 0)), n, dtype, ncomp,
                                   f"accessor {index} sparse values")
        if n and int(idx.max()) >= count:
            raise Refusal(f"accessor {index} sparse index out of range")
        out[idx.astype(np.int64)] = vals
    return out, acc


def _denormalize(a: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "f":
        return a.astype(np.float32)
    info = np.iinfo(a.dtype)
    if info.min < 0:
        return np.maximum(a.astype(np.float32) / info.max, -1.0).astype(np.float32)
    return (a.astype(np.float32) / info.max).astype(np.float32)


def attribute_array(doc: dict, buffers: list[bytes], index: int, semantic: str) -> np.ndarray:
    """A vertex attribute accessor as a mesh attribute: positions float32, normalized integers
    as floats except colours (kept as stored) and joints; SCALAR accessors 1-D."""
    a, acc = read_accessor(doc, buffers, index)
    normalized = bool(acc.get("normalized", False))
    base = re.sub(r"_\d+$", "", semantic)
    if semantic == "POSITION" or base == "POSITION":
        a = _denormalize(a) if normalized else a.astype(np.float32)
    elif base == "COLOR" and a.dtype.kind in "iu":
        pass  # normalized integer colours are kept as stored (uint8 / uint16)
    elif base == "JOINTS":
        pass
    elif normalized:
        a = _denormalize(a)
    if acc["type"] == "SCALAR":
        a = a.reshape(-1)
    return a

