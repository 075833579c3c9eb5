"""One buffer view per kind of data, before ``--compress`` writes a plain document compressed.

meshoptimizer's codecs compress a stream of like elements best: its vertex codec encodes
each byte position of an element as deltas from the element before, and pays a header per
stream and an extension object per view in the JSON ([1]_, [2]_).  A document as exported
often stores unlike data in one view (positions followed by normals, texture coordinates
beside joint indices) and like data in many small views (one per primitive, one per
animation channel).  :func:`regroup_views` lays the accessors out again, without changing
any accessor's values, number or JSON other than ``bufferView`` and ``byteOffset``:

* every accessor stored alone in its bytes (not interleaved with another, not sparse data,
  not an image) moves to the view of its *kind*: a primitive's indices (by index type, and
  whether every primitive drawing it is a triangle list), a vertex attribute or morph
  target by semantic without its set number (``POSITION``, ``TEXCOORD``...), animation
  keys, animation values by the path they drive, inverse bind matrices, and the rest; and
  within a kind by component type and element type.  Vertex data keeps 4-byte aligned
  rows (``byteStride`` the element rounded up to 4, as the specification asks of vertex
  attributes sharing a view [3]_);
* accessors of one kind with the same bytes share them (animation channels that repeat one
  set of keys, primitives that repeat an index buffer);
* views holding interleaved attributes, sparse data or images stay as they are, and a
  document that names a buffer view anywhere else (an extension) is left untouched, since
  its references could not be followed.

This is what gltfpack does with the streams it writes; the values every accessor reads are
the same bytes as before.

References
----------
.. [1] Khronos, ``EXT_meshopt_compression``, "Compressing geometry data" (``ATTRIBUTES``
   mode encodes each byte of an element as a delta from the same byte of the element
   before).
.. [2] A. Kapoulkine, meshoptimizer, "Vertex/index buffer compression" and gltfpack
   (one stream per attribute kind).
.. [3] Khronos, glTF 2.0 specification, "Buffer Views" (two or more vertex attribute
   accessors in a view: ``byteStride`` defined) and "Data Alignment".
"""

from __future__ import annotations

import copy
import re

import numpy as np

from .byte_patching import ELEMENT_ARRAY_BUFFER, accessor_span, view_blocks
from .gltf_types import element_size

__all__ = ["ARRAY_BUFFER", "regroup_views"]

#: ``bufferView.target`` of vertex data.
ARRAY_BUFFER = 34962
_SET_NUMBER = re.compile(r"_\d+$")


def _kinds(doc: dict) -> dict[int, tuple]:
    """Accessor -> its kind (the first role found: indices, vertex data, animation, skin)."""
    kinds: dict[int, tuple] = {}
    index_lists: dict[int, bool] = {}
    for mesh in doc.get("meshes", []):
        for prim in mesh.get("primitives", []):
            if "indices" in prim:
                a = int(prim["indices"])
                ok = int(prim.get("mode", 4)) == 4 and int(doc["accessors"][a]["count"]) % 3 == 0
                index_lists[a] = index_lists.get(a, True) and ok
    for a, lists in index_lists.items():
        kinds[a] = ("indices", lists)
    for mesh in doc.get("meshes", []):
        for prim in mesh.get("primitives", []):
            for sem, a in prim.get("attributes", {}).items():
                kinds.setdefault(int(a), ("vertex", _SET_NUMBER.sub("", sem)))
            for target in prim.get("targets", []):
                for sem, a in target.items():
                    kinds.setdefault(int(a), ("morph", _SET_NUMBER.sub("", sem)))
    for anim in doc.get("animations", []):
        samplers = anim.get("samplers", [])
        paths = {int(ch["sampler"]): ch.get("target", {}).get("path", "") for ch in anim.get("channels", [])}
        for si, sampler in enumerate(samplers):
            kinds.setdefault(int(sampler["input"]), ("keys",))
            kinds.setdefault(int(sampler["output"]), ("values", paths.get(si, "")))
    for skin in doc.get("skins", []):
        if "inverseBindMatrices" in skin:
            kinds.setdefault(int(skin["inverseBindMatrices"]), ("skin",))
    return kinds


def _foreign_view_reference(doc: dict) -> bool:
    """Whether anything other than accessors and images names a buffer view."""
    def walk(node) -> bool:
        if isinstance(node, dict):
            return "bufferView" in node or any(walk(v) for v in node.values())
        if isinstance(node, list):
            return any(walk(v) for v in node)
        return False
    return any(walk(v) for k, v in doc.items() if k not in ("accessors", "images", "bufferViews"))


def _rows(acc: dict, view: dict, data: bytes) -> np.ndarray:
    """An accessor's elements as ``(count, element size)`` bytes."""
    start, _, stride, elem = accessor_span(acc, view)
    count = int(acc["count"])
    base = int(view.get("byteOffset", 0)) + start
    if count == 0:
        return np.zeros((0, elem), np.uint8)
    flat = np.frombuffer(data, np.uint8, count=stride * (count - 1) + elem, offset=base)
    return np.lib.stride_tricks.as_strided(flat, (count, elem), (stride, 1)).copy()


def regroup_views(doc: dict, buffers: list[bytes]) -> tuple[dict, list[bytes]]:
    """The document with one buffer view per kind of data (see the module docstring).

    Parameters
    ----------
    doc : dict
        A plain document (no compressed views); not modified.
    buffers : list of bytes
        Its buffers.

    Returns
    -------
    doc, buffers
        The new document and buffers; ``doc`` and ``buffers`` themselves when nothing moves.
    """
    views = doc.get("bufferViews", [])
    if not views or _foreign_view_reference(doc) or any(v.get("extensions") for v in views):
        return doc, buffers
    images = {int(im["bufferView"]) for im in doc.get("images", []) if "bufferView" in im}
    blocks = view_blocks(doc)
    movable = {vi for vi, bl in blocks.items()
               if vi not in images and all(len(b.accessors) == 1 and not b.foreign for b in bl)}
    if not movable:
        return doc, buffers
    accessors = doc["accessors"]
    kinds = _kinds(doc)
    groups: dict[tuple, list[int]] = {}
    for ai, acc in enumerate(accessors):
        if "bufferView" in acc and int(acc["bufferView"]) in movable:
            buffer = int(views[int(acc["bufferView"])]["buffer"])
            key = kinds.get(ai, ("other",)) + (int(acc["componentType"]), acc["type"], buffer)
            groups.setdefault(key, []).append(ai)

    out = copy.deepcopy(doc)
    out_views: list[dict] = []
    renumber: dict[int, int] = {}
    for vi, view in enumerate(views):  # the views that stay, in their order
        if vi not in movable:
            renumber[vi] = len(out_views)
            out_views.append(copy.deepcopy(view))
    chunks: dict[int, list[tuple[int, bytes]]] = {}  # buffer -> (new view, bytes)
    for vi in sorted(renumber):
        view = views[vi]
        start = int(view.get("byteOffset", 0))
        chunks.setdefault(int(view["buffer"]), []).append(
            (renumber[vi], buffers[int(view["buffer"])][start:start + int(view["byteLength"])]))
    for key, members in groups.items():
        vertex = key[0] in ("vertex", "morph")
        elem = element_size(accessors[members[0]])
        stride = -(-elem // 4) * 4 if vertex else elem
        if key[0] == "indices":  # a triangle list stays whole triangles for the TRIANGLES codec
            align = 3 * elem if key[1] else elem
        else:
            align = stride if stride % 4 == 0 else 4
        data = bytearray()
        placed: dict[bytes, int] = {}
        new_vi = len(out_views)
        for ai in members:
            acc = accessors[ai]
            view = views[int(acc["bufferView"])]
            rows = _rows(acc, view, buffers[int(view["buffer"])])
            if stride != elem:
                rows = np.pad(rows, ((0, 0), (0, stride - elem)))
            raw = rows.tobytes()
            if raw not in placed:
                data += bytes(-len(data) % align)
                placed[raw] = len(data)
                data += raw
            entry = out["accessors"][ai]
            entry["bufferView"] = new_vi
            if placed[raw]:
                entry["byteOffset"] = placed[raw]
            else:
                entry.pop("byteOffset", None)
        entry = {"buffer": key[-1], "byteLength": len(data)}
        if vertex:
            entry.update(byteStride=stride, target=ARRAY_BUFFER)
        elif key[0] == "indices":
            entry["target"] = ELEMENT_ARRAY_BUFFER
        out_views.append(entry)
        chunks.setdefault(key[-1], []).append((new_vi, bytes(data)))
    moved = {ai for members in groups.values() for ai in members}
    for ai, acc in enumerate(out["accessors"]):
        if "bufferView" in acc and ai not in moved:
            acc["bufferView"] = renumber[int(acc["bufferView"])]
        sparse = acc.get("sparse")
        if sparse:
            for part in ("indices", "values"):
                sparse[part]["bufferView"] = renumber[int(sparse[part]["bufferView"])]
    for im in out.get("images", []):
        if "bufferView" in im:
            im["bufferView"] = renumber[int(im["bufferView"])]
    out["bufferViews"] = out_views
    old_of = {new: old for old, new in renumber.items()}
    out_buffers = []
    for bi, raw in enumerate(buffers):
        laid = bytearray()
        for new_vi, part in chunks.get(bi, []):  # a view that stays keeps its offset modulo 4
            want = int(views[old_of[new_vi]].get("byteOffset", 0)) % 4 if new_vi in old_of else 0
            laid += bytes((want - len(laid)) % 4)
            out_views[new_vi]["byteOffset"] = len(laid)
            laid += part
        out_buffers.append(bytes(laid) if bi in chunks else raw)
        out["buffers"][bi]["byteLength"] = len(out_buffers[-1])
    return out, out_buffers

