"""Which buffer views of an output go out meshopt-compressed, and the buffers that hold them.

An optimized document comes out of :class:`~.byte_patching.DocumentEditor` as plain buffer
views.  :func:`compression_plan` says how each view is written and :func:`pack_streams`
writes it so ([1]_):

* **as it came in** (the default for a compressed input): every view the input stored
  compressed keeps its extension (EXT or KHR), mode, filter and stride; its stream is
  copied byte for byte when its stored bytes did not change, else encoded again
  (:func:`.meshopt_streams.encode_view`).  New index buffers of such a file are compressed
  too.  Its fallback buffers stay what they were: a placeholder without data stays one
  (its ``byteLength`` what the views need), a fallback with data gets the new data;
* **compressed** (``--compress``, and a Draco input): with ``EXT_meshopt_compression``,
  lossless, no quantization and no filter, each kind of data in a view of its own
  (:func:`.stream_grouping.regroup_views`, called before the plan).  A view read as indices only (primitives'
  ``indices``) with 2- or 4-byte indices is ``TRIANGLES`` when every primitive drawing it is
  a triangle list (each accessor a whole number of triangles on a triangle boundary),
  else ``INDICES``; every other view of accessors (vertex attributes, morph targets,
  animation keys and values, skin matrices, sparse data) is ``ATTRIBUTES`` with the
  view's ``byteStride``, or its accessors' element size when they share one that is a
  multiple of 4, else 4.  Image data, views nothing reads and 1-byte indices stay plain,
  and so does a view whose stream and extension object would not be smaller than its data.  The plain views' data goes
  into a new fallback placeholder (``{"fallback": true}``, no data) and the extension is
  required;
* **plain** (``--no-compress``): no view is compressed; fallback placeholders get their data.

Streams are appended to the buffer that held the input's streams (buffer 0 otherwise),
each 4-byte aligned, after that buffer's plain views.  A ``TRIANGLES`` stream that was
encoded again is decoded at once: the codec may rotate a triangle's corners, and what the
file draws (its fallback data, the predictions made from it) is the decoded order.

References
----------
.. [1] Khronos, ``KHR_meshopt_compression`` / ``EXT_meshopt_compression``, "Specifying
   compressed views", "Fallback buffers" (a placeholder buffer has no ``uri``; in a GLB it
   has index 1 or above; without fallback data the extension is required) and
   "Compressing geometry data" (modes for vertex and index data).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np

from ...support.meshoptimizer_bindings import codecs
from .gltf_types import COMPONENT_DTYPES, MESHOPT_EXTENSIONS, element_size
from .meshopt_streams import DecodedView, StreamLayout, encode_view, meshopt_extension

__all__ = ["DEFAULT_EXTENSION", "Packed", "compression_plan", "index_view_units", "pack_streams"]


#: What ``--compress`` writes: the extension every current loader with meshopt support reads.
DEFAULT_EXTENSION = "EXT_meshopt_compression"
#: Alignment of index accessors in a view ``--compress`` may store: a triangle of 2- or 4-byte indices.
INDEX_UNIT = 12
#: JSON bytes a view's extension object takes (``{"EXT_meshopt_compression":{"buffer":0,...}}``):
#: a view is compressed anew only when its stream saves more than this.
JSON_PER_STREAM = 140


@dataclass
class Packed:
    """A packed document: ``buffers`` as written (None: a placeholder without data),
    ``decoded`` every buffer's bytes as a decoder reads them, ``streams`` the views written
    compressed, ``reencoded`` those whose stream changed."""

    doc: dict
    buffers: list
    decoded: list
    streams: dict = field(default_factory=dict)
    reencoded: set = field(default_factory=set)


def _users(doc: dict) -> dict[int, list[tuple[int, str]]]:
    """Buffer view -> (accessor, role) of every accessor part stored in it; role ``index``
    for a primitive's indices, ``data`` otherwise."""
    index_of = set()
    for mesh in doc.get("meshes", []):
        for prim in mesh.get("primitives", []):
            if "indices" in prim:
                index_of.add(int(prim["indices"]))
    out: dict[int, list[tuple[int, str]]] = {}
    for ai, acc in enumerate(doc.get("accessors", [])):
        if "bufferView" in acc:
            out.setdefault(int(acc["bufferView"]), []).append((ai, "index" if ai in index_of else "data"))
        sparse = acc.get("sparse")
        if sparse:
            for part in ("indices", "values"):
                out.setdefault(int(sparse[part]["bufferView"]), []).append((ai, "sparse"))
    return out


def _index_modes(doc: dict) -> dict[int, set[int]]:
    modes: dict[int, set[int]] = {}
    for mesh in doc.get("meshes", []):
        for prim in mesh.get("primitives", []):
            if "indices" in prim:
                modes.setdefault(int(prim["indices"]), set()).add(int(prim.get("mode", 4)))
    return modes


def index_view_units(doc: dict) -> dict[int, int]:
    """Views that hold primitives' indices only: the alignment that keeps each accessor on a
    triangle boundary whatever index size it ends up with (for the layout of ``--compress``)."""
    return {vi: INDEX_UNIT for vi, users in _users(doc).items() if all(role == "index" for _, role in users)}


def _choose(doc: dict, vi: int, users: list[tuple[int, str]], modes: dict[int, set[int]],
            extension: str) -> StreamLayout | None:
    view = doc["bufferViews"][vi]
    accs = doc["accessors"]
    if all(role == "index" for _, role in users):
        sizes = {np.dtype(COMPONENT_DTYPES[accs[a]["componentType"]]).itemsize for a, _ in users}
        if len(sizes) != 1 or next(iter(sizes)) not in (2, 4):
            return None
        stride = sizes.pop()
        lists = all(modes.get(a, {4}) == {4} and int(accs[a]["count"]) % 3 == 0
                    and int(accs[a].get("byteOffset", 0)) % (3 * stride) == 0 for a, _ in users)
        aligned = all(int(accs[a].get("byteOffset", 0)) % stride == 0 for a, _ in users)
        if not aligned:
            return None
        return StreamLayout(extension, "TRIANGLES" if lists else "INDICES", "NONE", stride, 0, 0, 0, 0)
    stride = view.get("byteStride")
    if stride is None:
        sizes = {element_size(accs[a]) for a, role in users if role != "sparse"}
        offsets_ok = all(int(accs[a].get("byteOffset", 0)) % max(element_size(accs[a]), 1) == 0 for a, _ in users)
        stride = sizes.pop() if len(sizes) == 1 and offsets_ok and not any(r == "sparse" for _, r in users) else 4
        if stride % 4 or stride > 256:
            stride = 4
    return StreamLayout(extension, "ATTRIBUTES", "NONE", int(stride), 0, 0, 0, 0)


def compression_plan(doc: dict, *, kept: dict[int, StreamLayout], candidates=None,
                     extension: str = DEFAULT_EXTENSION, exact=frozenset()) -> dict[int, StreamLayout]:
    """How each buffer view of ``doc`` is written (views absent: plain).

    Parameters
    ----------
    doc : dict
        The output document (after layout).
    kept : dict, keyword-only
        Views the input stored compressed, with their layouts: written the same way.
    candidates : set of int, keyword-only
        The other views to compress where it pays (the module docstring says how); None:
        every view.
    extension : str, keyword-only
        The extension for views compressed anew.
    exact : set of int or None, keyword-only
        Index views compressed anew that must keep every index in place: ``INDICES`` mode
        instead of ``TRIANGLES`` (None: all of them).
    """
    plan = dict(kept)
    images = {int(im["bufferView"]) for im in doc.get("images", []) if "bufferView" in im}
    modes = _index_modes(doc)
    for vi, users in _users(doc).items():
        if vi in plan or vi in images or (candidates is not None and vi not in candidates):
            continue
        if any(n not in MESHOPT_EXTENSIONS for n in (doc["bufferViews"][vi].get("extensions") or {})):
            continue
        choice = _choose(doc, vi, users, modes, extension)
        if choice is not None and choice.mode == "TRIANGLES" and (exact is None or vi in exact):
            choice = StreamLayout(extension, "INDICES", "NONE", choice.stride, 0, 0, 0, 0)
        if choice is not None:
            plan[vi] = choice
    return plan


def _view_bytes(doc: dict, buffers: list, vi: int) -> bytes:
    view = doc["bufferViews"][vi]
    start = int(view.get("byteOffset", 0))
    return buffers[int(view["buffer"])][start:start + int(view["byteLength"])]


def _lay_out(doc: dict, members: list[int], data: dict[int, bytes]) -> tuple[bytearray, dict[int, int]]:
    """Views one after the other in their old order, each keeping its offset modulo 4."""
    views = doc["bufferViews"]
    out = bytearray()
    offsets = {}
    for vi in sorted(members, key=lambda v: (int(views[v].get("byteOffset", 0)), v)):
        want = int(views[vi].get("byteOffset", 0)) % 4
        pos = len(out) + (want - len(out)) % 4
        out += b"\x00" * (pos - len(out)) + data[vi]
        offsets[vi] = pos
    return out, offsets


def pack_streams(doc: dict, buffers: list[bytes], plan: dict[int, StreamLayout], *,
                 stored: list[bytes] | None = None, placeholders: set[int] = frozenset(),
                 sources: dict[int, DecodedView] | None = None, stream_buffer: int | None = None) -> Packed:
    """Write ``plan``'s views compressed and lay out the buffers (see the module docstring).

    Parameters
    ----------
    doc, buffers : dict, list of bytes
        The plain output document and its buffers (not modified).
    plan : dict
        :func:`compression_plan`.
    stored : list of bytes, keyword-only
        ``buffers`` with filtered views in their stored form (:func:`.meshopt_streams.stored_buffers`).
    placeholders : set of int, keyword-only
        Buffers the input had without data (fallback placeholders).
    sources : dict, keyword-only
        The input's compressed views (:class:`.meshopt_streams.DecodedView`), for unchanged streams.
    stream_buffer : int, keyword-only
        The buffer that holds the streams (default: the input's, else 0).
    """
    doc = copy.deepcopy(doc)
    views = doc.get("bufferViews", [])
    sources = sources or {}
    decoded = [bytearray(b) for b in buffers]
    streams: dict[int, bytes] = {}
    layouts: dict[int, StreamLayout] = {}
    plain_of: dict[int, bytes] = {}
    reencoded = set()
    for vi in sorted(plan):
        lay = plan[vi]
        raw = _view_bytes(doc, stored if stored is not None and lay.filter != "NONE" else buffers, vi)
        plain = _view_bytes(doc, buffers, vi)
        pad = -len(raw) % lay.unit
        raw, plain = raw + bytes(pad), plain + bytes(pad)
        stream = encode_view(raw, lay, source=sources.get(vi))
        if vi not in sources and len(stream) + JSON_PER_STREAM >= len(raw):
            continue  # compressing this view saves nothing once its extension object is counted
        if lay.mode == "TRIANGLES" and not (vi in sources and stream == sources[vi].encoded):
            plain = codecs.decode_index_buffer(stream, len(plain) // lay.stride, lay.stride).tobytes()
        if vi not in sources or stream != sources[vi].encoded:
            reencoded.add(vi)
        streams[vi], layouts[vi], plain_of[vi] = stream, lay, plain
    fallback_buffers = {int(views[vi]["buffer"]) for vi in sources if vi < len(views)}
    moving = [vi for vi in streams if int(views[vi]["buffer"]) not in fallback_buffers]
    fallback_new = None
    if moving:
        home = min(placeholders, default=None)
        if home is None:
            doc["buffers"].append({"byteLength": 0})
            decoded.append(bytearray())
            home = fallback_new = len(doc["buffers"]) - 1
        for vi in moving:
            views[vi]["buffer"] = home
    target = stream_buffer if stream_buffer is not None else next(
        (s.layout.buffer for s in sources.values()), 0)
    empty_placeholders = set(placeholders) | ({fallback_new} if fallback_new is not None else set())
    # a placeholder stays one only while every view in it is compressed
    members: dict[int, list[int]] = {}
    for vi, view in enumerate(views):
        members.setdefault(int(view["buffer"]), []).append(vi)
    empty = {bi for bi in empty_placeholders if all(vi in streams for vi in members.get(bi, []))}
    out_buffers: list = []
    for bi in range(len(doc["buffers"])):
        mine = members.get(bi, [])
        data = {vi: plain_of.get(vi) if vi in plain_of else _view_bytes(doc, buffers, vi) for vi in mine}
        laid, offsets = _lay_out(doc, mine, data)
        for vi, pos in offsets.items():
            views[vi]["byteOffset"] = pos
            views[vi]["byteLength"] = len(data[vi])
        decoded[bi] = bytes(laid)
        if bi in empty:
            out_buffers.append(None)
            doc["buffers"][bi]["byteLength"] = max(len(laid), 1)
            continue
        if bi == target:
            for vi in sorted(streams):
                laid += b"\x00" * (-len(laid) % 4)
                lay = layouts[vi]
                ext = _extension_object(views[vi], lay, target, len(laid), streams[vi], len(plain_of[vi]))
                views[vi].setdefault("extensions", {})[lay.extension] = ext
                laid += streams[vi]
        out_buffers.append(bytes(laid))
        doc["buffers"][bi]["byteLength"] = len(laid)
    for vi, view in enumerate(views):
        if vi not in streams:
            _drop_meshopt(view)
        elif any(n != layouts[vi].extension and n in view.get("extensions", {}) for n in MESHOPT_EXTENSIONS):
            for n in MESHOPT_EXTENSIONS:
                if n != layouts[vi].extension:
                    view["extensions"].pop(n, None)
    parents = {int(views[vi]["buffer"]) for vi in streams}
    _mark_buffers(doc, empty, parents, {layouts[vi].extension for vi in streams})
    keep = [bi for bi in range(len(doc["buffers"])) if members.get(bi) or bi == target and out_buffers[bi]]
    doc, out_buffers, decoded = _drop_buffers(doc, out_buffers, decoded, keep)
    return Packed(doc, out_buffers, [bytes(d) for d in decoded], set(streams), reencoded)


def _extension_object(view: dict, lay: StreamLayout, buffer: int, offset: int, stream: bytes, plain: int) -> dict:
    """The view's extension object, the input's own updated when it had one."""
    ext = dict((view.get("extensions") or {}).get(lay.extension) or {})
    ext.update(buffer=buffer, byteOffset=offset, byteLength=len(stream), byteStride=lay.stride,
               mode=lay.mode, count=plain // lay.stride)
    if lay.filter != "NONE":
        ext["filter"] = lay.filter
    else:
        ext.pop("filter", None)
    return ext


def _drop_meshopt(view: dict) -> None:
    ext = view.get("extensions")
    if isinstance(ext, dict):
        for name in MESHOPT_EXTENSIONS:
            ext.pop(name, None)
        if not ext:
            view.pop("extensions")


def _mark_buffers(doc: dict, empty: set[int], parents: set[int], used: set[str]) -> None:
    """Fallback marks on placeholders and on fallbacks with data (``parents``: the buffers of
    compressed views), none elsewhere; and the extension lists."""
    for bi, entry in enumerate(doc["buffers"]):
        ext = entry.get("extensions") if isinstance(entry.get("extensions"), dict) else None
        if bi in empty or bi in parents:
            if bi in empty:
                entry.pop("uri", None)
            name = next((n for n in MESHOPT_EXTENSIONS if ext and n in ext), None) or (
                sorted(used)[0] if used else DEFAULT_EXTENSION)
            entry.setdefault("extensions", {}).setdefault(name, {"fallback": True})
        elif ext is not None:
            for name in MESHOPT_EXTENSIONS:
                ext.pop(name, None)
            if not ext:
                entry.pop("extensions")
    for key in ("extensionsUsed", "extensionsRequired"):
        add = sorted(used) if key == "extensionsUsed" or empty else []
        had = doc.get(key, [])
        names = [n for n in had if n not in MESHOPT_EXTENSIONS or n in add] + [n for n in add if n not in had]
        if names:
            doc[key] = names
        else:
            doc.pop(key, None)


def _drop_buffers(doc: dict, buffers: list, decoded: list, keep: list[int]):
    """Remove buffers no view uses any more, renumbering the references to the others."""
    if len(keep) == len(doc["buffers"]):
        return doc, buffers, decoded
    new = {old: i for i, old in enumerate(keep)}
    doc["buffers"] = [doc["buffers"][i] for i in keep]
    for view in doc.get("bufferViews", []):
        view["buffer"] = new[int(view["buffer"])]
        name = meshopt_extension(view)
        if name is not None:
            view["extensions"][name]["buffer"] = new[int(view["extensions"][name]["buffer"])]
    return doc, [buffers[i] for i in keep], [decoded[i] for i in keep]
