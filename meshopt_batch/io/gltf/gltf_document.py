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
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ...support.limits import LimitError, check_memory, format_bytes
from ..format_common import Refusal
from .document_checks import validate_document
from .draco_decoding import DracoDecoding, decode_draco_primitives
from .glb_container import GLB_MAGIC, decode_data_uri, parse_glb, read_external
from .gltf_types import (
    COMPONENT_DTYPES,
    COMPONENT_TYPE_OF,
    COMPONENTS_OF_TYPE,
    COMPRESSION_EXTENSIONS,
    TYPE_OF_COMPONENTS,
)
from .meshopt_streams import DecodedView, decode_buffer_views

__all__ = [
    "COMPONENTS_OF_TYPE",
    "COMPONENT_DTYPES",
    "COMPONENT_TYPE_OF",
    "COMPRESSION_EXTENSIONS",
    "GltfFile",
    "READ_COPIES",
    "SEMANTIC_WIDTHS",
    "TYPE_OF_COMPONENTS",
    "attribute_array",
    "check_accessor_memory",
    "key_to_semantic",
    "load_document",
    "primitive_accessors",
    "read_accessor",
    "read_document",
    "semantic_to_key",
    "view_bytes",
]

#: Component counts the specification allows for each vertex attribute semantic.
SEMANTIC_WIDTHS = {"NORMAL": (3,), "TANGENT": (4,), "TEXCOORD": (2,), "COLOR": (3, 4),
                   "JOINTS": (4,), "WEIGHTS": (4,)}


#: Peak bytes reading an accessor holds per byte of the array it gives (its float32 form,
#: int64 for indices): the stored copy, the conversion, the mesh built from them.  Measured
#: 1.2-2.0 with ``load_meshes`` (positions; positions and indices; positions and normalized
#: int16 normals); rounded up.
READ_COPIES = 3


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


@dataclass(eq=False)
class GltfFile:
    """A glTF file as read: the document and buffers every reader works on, and what the
    file stored compressed.

    Attributes
    ----------
    doc : dict
        The JSON; Draco primitives are decoded into plain accessors (:mod:`.draco_decoding`),
        meshopt-compressed buffer views keep their extension objects.
    buffers : list of bytes
        Every buffer's bytes with each compressed view's decoded bytes in place
        (:func:`.meshopt_streams.decode_buffer_views`).
    stored : list of bytes or None
        The buffers as the file stores them (None: a fallback buffer without data).
    streams : dict
        The compressed buffer views as read (:class:`.meshopt_streams.DecodedView` by number).
    draco_primitives : int
        Primitives decoded from ``KHR_draco_mesh_compression``.
    draco : DracoDecoding
        What that decoding did (values brought back into glTF's ranges).
    """

    doc: dict
    buffers: list
    stored: list
    streams: dict[int, DecodedView] = field(default_factory=dict)
    draco_primitives: int = 0
    draco: DracoDecoding = DracoDecoding()


def load_document(data: bytes, path: Path) -> tuple[dict, list[bytes]]:
    """The glTF JSON and the bytes of every buffer, compressed data decoded
    (:func:`read_document`; ``path`` locates external buffers)."""
    got = read_document(data, path)
    return got.doc, got.buffers


def read_document(data: bytes, path: Path) -> GltfFile:
    """Read a ``.gltf``/``.glb``: JSON, buffers, and every compressed buffer view and Draco
    primitive decoded.

    Refuses GLB files with a bad header, versions other than 2.x, and buffers that are
    missing or shorter than declared; a buffer file must be a regular file and only its
    ``byteLength`` bytes are read (:func:`.glb_container.read_external`); the buffer files and the
    arrays of the triangle primitives' accessors must fit in the memory available
    (:func:`check_accessor_memory`), checked before anything is read.  A corrupt compressed
    view or Draco bitstream is refused naming its buffer view.  A buffer without data (no
    ``uri``, not the GLB binary chunk) is a fallback placeholder: only compressed views may
    refer to it.
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
    check_accessor_memory(doc, *_triangle_accessors(doc), "the triangle primitives' accessors")
    _check_buffer_files(doc)
    stored: list[bytes | None] = []
    for i, b in enumerate(doc.get("buffers", [])):
        uri = b.get("uri")
        if uri is None:
            stored.append(bin_chunk if i == 0 and bin_chunk is not None else None)
            continue
        if uri.startswith("data:"):
            raw, _ = decode_data_uri(uri)
        else:  # a regular file, only its declared bytes (read_external)
            raw = read_external(path, uri, f"buffer {i} file", b.get("byteLength"))
        if len(raw) < int(b.get("byteLength", 0)):
            raise Refusal(f"buffer {i} has {len(raw)} bytes, {b.get('byteLength')} declared")
        stored.append(raw)
    if stored and stored[0] is not None and doc["buffers"][0].get("uri") is None \
            and len(stored[0]) < int(doc["buffers"][0].get("byteLength", 0)):
        raise Refusal(f"buffer 0 has {len(stored[0])} bytes, {doc['buffers'][0].get('byteLength')} declared")
    buffers, streams = decode_buffer_views(doc, stored)
    doc, buffers, draco = decode_draco_primitives(doc, buffers)
    return GltfFile(doc, buffers, stored, streams, draco.primitives, draco)


def _check_buffer_files(doc: dict) -> None:
    """Refuse external buffer files whose declared bytes together exceed the memory available
    (each is checked again as it is read)."""
    files = [(b["uri"], int(b.get("byteLength", 0))) for b in doc.get("buffers", [])
             if b.get("uri") is not None and not b["uri"].startswith("data:")]
    if len(files) > 1:
        total = sum(n for _, n in files)
        uri, most = max(files, key=lambda f: f[1])
        try:
            check_memory(total, f"reading {len(files)} buffer files ({total:,} bytes declared; "
                                f"the largest, {uri!r}, {most:,})")
        except LimitError as exc:
            raise Refusal(str(exc)) from None


def primitive_accessors(primitives) -> tuple[list[int], list[int]]:
    """The attribute (and morph target) accessors and the index accessors that ``primitives``
    read, once per primitive (a shared accessor is repeated)."""
    attrs: list[int] = []
    indices: list[int] = []
    for prim in primitives:
        attrs += [int(a) for a in prim.get("attributes", {}).values()]
        attrs += [int(a) for t in prim.get("targets", []) for a in t.values()]
        if "indices" in prim:
            indices.append(int(prim["indices"]))
    return attrs, indices


def _triangle_accessors(doc: dict) -> tuple[list[int], list[int]]:
    """The accessors of the document's triangle primitives (triangles, strips, fans), each once."""
    attrs, indices = primitive_accessors(prim for mesh in doc.get("meshes", []) for prim in mesh.get("primitives", [])
                                         if int(prim.get("mode", 4)) in (4, 5, 6))
    return sorted(set(attrs)), sorted(set(indices))


def _array_bytes(doc: dict, acc: dict, index: bool) -> int:
    """Bytes of an accessor's array as the readers give it: float32 (or its stored type when
    wider) per component, int64 per index; with its sparse indices and values.  An accessor
    in a buffer view counts at most the elements the view holds (the reader refuses more)."""
    ncomp = COMPONENTS_OF_TYPE[acc["type"]]
    size = np.dtype(COMPONENT_DTYPES[acc["componentType"]]).itemsize
    per = 8 if index else ncomp * max(size, 4)
    count = int(acc["count"])
    if "bufferView" in acc:
        view = doc["bufferViews"][acc["bufferView"]]
        stride = int(view.get("byteStride") or ncomp * size)
        room = int(view["byteLength"]) - int(acc.get("byteOffset", 0))
        count = min(count, max(0, room // stride + 1))
    n = count * per
    if acc.get("sparse"):
        n += int(acc["sparse"]["count"]) * (8 + ncomp * size)
    return n


def check_accessor_memory(doc: dict, attributes: Iterable[int], indices: Iterable[int], what: str) -> None:
    """Refuse reading the ``attributes`` and ``indices`` accessors (a number repeated is read
    again) when their arrays, :data:`READ_COPIES` times, exceed the memory available.

    An accessor without a ``bufferView`` is ``count`` zeros however small the file is, and
    one buffer view can back many accessors, so the declared sizes are summed before any
    array is allocated.  ``doc`` must have passed :func:`.document_checks.validate_document`.

    Raises
    ------
    Refusal
        One line: ``what``, the bytes needed, the largest accessor and the memory available.
    """
    accs = doc.get("accessors", [])
    sizes = [(_array_bytes(doc, accs[a], False), a) for a in attributes]
    sizes += [(_array_bytes(doc, accs[a], True), a) for a in indices]
    if not sizes:
        return
    total = sum(n for n, _ in sizes)
    most, a = max(sizes)
    acc = accs[a]
    form = f"in bufferView {acc['bufferView']}" if "bufferView" in acc else "without a bufferView"
    try:
        check_memory(READ_COPIES * total,
                     f"reading {what} ({format_bytes(total)} of arrays, {READ_COPIES} copies; the largest, "
                     f"/accessors/{a}, {int(acc['count']):,} {acc['type']} elements {form})")
    except LimitError as exc:
        raise Refusal(str(exc)) from None


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

