"""Writing glTF 2.0: vertex attributes and indices as accessors, and a new document holding
given meshes.

Attribute names map to semantics (``uv1`` -> ``TEXCOORD_1``, ``normal`` -> ``NORMAL``; any
other name becomes the application-specific ``_name``), arrays to the component types the
specification allows for them (normals, tangents, texture coordinates and weights as
float32; uint8/uint16 colours normalized; other integers widened to float32 with a warning
if that loses precision).  Texture coordinates are written with their origin at the top
left, flipped when the mesh came from OBJ or PLY.  Indices are 16-bit where the mesh's
index type is 16-bit and no index is 0xFFFF (reserved for primitive restart [1]_).

Writing into an existing document's structure is :mod:`.source_rewriting`.

References
----------
.. [1] Khronos, glTF 2.0 specification, "Meshes" (attribute semantics, their accessor types
   and component types; the largest index value of the index type is not used) and
   "Data Alignment" (vertex attribute elements and strides aligned to 4 bytes).
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np

from ...geometry.mesh_record import Mesh
from ..format_common import UV_TOP_LEFT, flip_uv, is_uv_key
from .glb_container import serialize_gltf
from .gltf_document import COMPONENT_TYPE_OF, SEMANTIC_WIDTHS, TYPE_OF_COMPONENTS, key_to_semantic

__all__ = ["BinaryBuilder", "primitive_accessors", "write_gltf"]

#: ``bufferView.target`` values: vertex attributes, indices.
ARRAY_BUFFER = 34962
ELEMENT_ARRAY_BUFFER = 34963


class BinaryBuilder:
    """Accumulates buffer views into one binary buffer (4-byte aligned) and appends their
    ``bufferViews`` and ``accessors`` entries to ``doc``."""

    def __init__(self, doc: dict):
        self.doc = doc
        self.chunks: list[bytes] = []
        self.size = 0

    def add_view(self, raw: bytes, target: int | None = None, stride: int | None = None,
                 extra: dict | None = None) -> int:
        """Append ``raw`` as a new buffer view (``extra``: further properties); its index."""
        pad = -self.size % 4
        if pad:
            self.chunks.append(b"\x00" * pad)
            self.size += pad
        view = {"buffer": 0, "byteOffset": self.size, "byteLength": len(raw)}
        if stride:
            view["byteStride"] = stride
        if target:
            view["target"] = target
        if extra:
            view.update(extra)
        self.chunks.append(bytes(raw))
        self.size += len(raw)
        views = self.doc.setdefault("bufferViews", [])
        views.append(view)
        return len(views) - 1

    def add_accessor(self, a: np.ndarray, *, indices: bool = False, normalized: bool = False,
                     minmax: bool = False, target: int | None = None) -> int:
        """Append ``a`` (rows are elements) as a new accessor over a new view; its index.

        Vertex data whose element size is not a multiple of 4 gets a padded ``byteStride``.
        """
        a = np.ascontiguousarray(a)
        ncomp = 1 if a.ndim == 1 else int(a.shape[1])
        comp = np.dtype(a.dtype).newbyteorder("<")
        elem = comp.itemsize * ncomp
        stride = None
        raw = a.astype(comp, copy=False).tobytes()
        if not indices and elem % 4:
            stride = elem + (-elem % 4)
            padded = np.zeros((a.shape[0], stride), np.uint8)
            padded[:, :elem] = np.frombuffer(raw, np.uint8).reshape(a.shape[0], elem)
            raw = padded.tobytes()
        view = self.add_view(raw, target=target, stride=stride)
        acc = {"bufferView": view, "componentType": COMPONENT_TYPE_OF[np.dtype(a.dtype)],
               "count": int(a.shape[0]), "type": TYPE_OF_COMPONENTS[ncomp]}
        if normalized:
            acc["normalized"] = True
        if minmax and a.shape[0]:
            lo = a.reshape(a.shape[0], -1).min(axis=0)
            hi = a.reshape(a.shape[0], -1).max(axis=0)
            cast = float if a.dtype.kind == "f" else int
            acc["min"] = [cast(v) for v in lo]
            acc["max"] = [cast(v) for v in hi]
        accs = self.doc.setdefault("accessors", [])
        accs.append(acc)
        return len(accs) - 1

    def bytes(self) -> bytes:
        """The buffer: every view, zero-padded to a multiple of 4 bytes."""
        data = b"".join(self.chunks)
        return data + b"\x00" * (-len(data) % 4)


def _gltf_attribute(key: str, a: np.ndarray, path: Path) -> tuple[str, np.ndarray, bool] | None:
    """(semantic, array in a glTF-legal type, normalized) or None (dropped with a warning)."""
    sem = key_to_semantic(key)
    base = re.sub(r"_\d+$", "", sem)
    a2 = a.reshape(a.shape[0], -1) if a.ndim > 2 else a
    ncomp = 1 if a2.ndim == 1 else a2.shape[1]
    if a2.ndim == 1 or ncomp not in SEMANTIC_WIDTHS.get(base, (ncomp,)):
        sem, base = "_" + key, "_" + key  # not the semantic's shape: a custom attribute
    if ncomp not in TYPE_OF_COMPONENTS or (ncomp in (9, 16) and a2.dtype.kind != "f") or a2.dtype.kind not in "biuf":
        warnings.warn(f"{path}: attribute {key!r} {a.shape} {a.dtype} cannot be stored in glTF; dropped",
                      stacklevel=4)
        return None
    normalized = False
    if base == "COLOR" and a2.dtype in (np.uint8, np.uint16) and ncomp in (3, 4):
        normalized = True
    elif base == "JOINTS" and a2.dtype in (np.uint8, np.uint16):
        pass
    elif base in ("NORMAL", "TANGENT", "TEXCOORD", "COLOR", "WEIGHTS") or a2.dtype.kind == "f":
        a2 = a2.astype(np.float32)
    elif a2.dtype == np.bool_:
        a2 = a2.astype(np.uint8)
    elif a2.dtype not in (np.int8, np.uint8, np.int16, np.uint16):
        f = a2.astype(np.float32)
        if not np.array_equal(f.astype(a2.dtype), a2):
            warnings.warn(f"{path}: attribute {key!r} ({a2.dtype}) stored as float32 loses precision",
                          stacklevel=4)
        a2 = f
    return sem, a2, normalized


def _index_array(mesh: Mesh) -> np.ndarray:
    """Flat indices, 16-bit where the mesh asks for it and every index fits."""
    tris = mesh.triangles.reshape(-1)
    # glTF reserves the largest value of the index type (primitive restart).
    if mesh.index_dtype == np.uint16 and tris.size and int(tris.max()) < 0xFFFF:
        return tris.astype(np.uint16)
    if mesh.index_dtype == np.uint16 and not tris.size:
        return tris.astype(np.uint16)
    return tris.astype(np.uint32)


def primitive_accessors(mesh: Mesh, builder: BinaryBuilder, path: Path) -> tuple[dict, int, list[dict]]:
    """Add a mesh's accessors; return (attributes, indices accessor, targets)."""
    attrs = dict(mesh.attributes)
    if mesh.meta.get("uv_origin") != UV_TOP_LEFT:
        attrs = flip_uv(attrs, [k for k in attrs if is_uv_key(k)])
    out = {"POSITION": builder.add_accessor(mesh.positions, minmax=True, target=ARRAY_BUFFER)}
    targets: dict[int, dict] = {}
    for key, a in attrs.items():
        m = re.fullmatch(r"target(\d+)\.(\w+)", key)
        if m:
            targets.setdefault(int(m.group(1)), {})[m.group(2)] = builder.add_accessor(
                np.asarray(a, np.float32), minmax=m.group(2) == "POSITION", target=ARRAY_BUFFER)
            continue
        got = _gltf_attribute(key, a, path)
        if got is None:
            continue
        sem, arr, norm = got
        out[sem] = builder.add_accessor(arr, normalized=norm, target=ARRAY_BUFFER)
    indices = builder.add_accessor(_index_array(mesh), indices=True, target=ELEMENT_ARRAY_BUFFER)
    tlist = [targets[i] for i in sorted(targets)]
    return out, indices, tlist


def write_gltf(meshes: list[Mesh], path: Path) -> bytes:
    """A new ``.glb``/``.gltf`` (``path``'s suffix): one node, mesh and primitive per mesh,
    the node's matrix from ``meta["world_matrix"]`` when it is not the identity."""
    doc: dict = {"asset": {"version": "2.0", "generator": "meshopt-batch"}, "scene": 0,
                 "scenes": [{"nodes": list(range(len(meshes)))}], "nodes": [], "meshes": []}
    builder = BinaryBuilder(doc)
    for i, m in enumerate(meshes):
        attrs, indices, targets = primitive_accessors(m, builder, path)
        prim = {"attributes": attrs, "indices": indices, "mode": 4}
        if targets:
            prim["targets"] = targets
        name = m.name or f"mesh{i}"
        doc["meshes"].append({"name": name, "primitives": [prim]})
        node = {"mesh": i, "name": name}
        wm = m.meta.get("world_matrix")
        if wm is not None and not np.array_equal(np.asarray(wm, float), np.eye(4)):
            node["matrix"] = [float(v) for v in np.asarray(wm, float).T.reshape(-1)]
        doc["nodes"].append(node)
    return serialize_gltf(doc, builder.bytes(), path)


