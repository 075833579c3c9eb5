"""Patching a glTF document's binary data in place: accessors keep their numbers, buffer views
and buffers keep their identity, only changed bytes move.

An optimized asset differs from its source in a few accessors: vertex accessors whose rows
were welded or renumbered, index accessors with a new order or a smaller index type, and
new index accessors for primitives that had none.  :class:`DocumentEditor` records those
changes and :meth:`DocumentEditor.build` lays out again only the buffer views and buffers
that hold them:

* Inside a buffer view, accessors whose byte ranges overlap form a *block* (interleaved
  attributes sharing a ``byteStride`` are one block; consecutive accessors are one block
  each).  A vertex accessor is changed by *gathering rows*: new element ``k`` is old element
  ``source[k]``, and for an interleaved block every attribute of the row moves together, so
  the interleaving, the stride and the padding bytes stay as they were.  An index accessor
  gets new contents (and maybe a new ``componentType``).  Untouched blocks are copied.
* A changed view's blocks are written one after the other; every block keeps its start
  offset modulo 4 (so every element keeps its alignment), and a block with new contents
  starts 4-byte aligned.  Bytes of a changed view that no accessor covers are dropped.  A
  view given a *unit* (a meshopt-compressed view: its element, or three indices in
  ``TRIANGLES`` mode) keeps each block's start modulo the unit instead, starts new contents
  on a whole unit and ends on one, so its elements stay whole for the codec.
* A buffer none of whose views changed keeps its bytes exactly.  Otherwise its views are
  laid out again in their old order, each keeping its offset modulo 4; bytes no view
  covers are dropped.  New views (new index accessors) go at the end of the buffer that
  holds the primitive's positions.

So accessors, buffer views and buffers shared in the source stay shared, nothing is
duplicated, and everything the editor was not asked to change keeps its JSON and bytes.

References
----------
.. [1] Khronos, glTF 2.0 specification, "Buffers and Buffer Views", "Accessors" (an
   element's offset is a multiple of its component size; vertex attribute elements and
   strides are 4-byte aligned), "Data Alignment", and the accessor ``min``/``max`` rules.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np

from ..format_common import Refusal
from .gltf_document import COMPONENT_DTYPES, COMPONENT_TYPE_OF, COMPONENTS_OF_TYPE

__all__ = ["Block", "DocumentEditor", "ELEMENT_ARRAY_BUFFER", "accessor_span", "view_blocks"]

#: ``bufferView.target`` of index data.
ELEMENT_ARRAY_BUFFER = 34963


def accessor_span(acc: dict, view: dict) -> tuple[int, int, int, int]:
    """(start, end, row stride, element size) of an accessor's bytes inside its buffer view."""
    elem = np.dtype(COMPONENT_DTYPES[acc["componentType"]]).itemsize * COMPONENTS_OF_TYPE[acc["type"]]
    stride = int(view.get("byteStride") or elem)
    start = int(acc.get("byteOffset", 0))
    count = int(acc["count"])
    end = start + (stride * (count - 1) + elem if count else 0)
    return start, end, stride, elem


@dataclass
class Block:
    """Accessors of one buffer view whose byte ranges overlap (an interleaved group, or one
    accessor).  ``regular``: every member has the same stride and count and starts within one
    stride of ``start``, so the block is ``count`` rows of ``stride`` bytes."""

    start: int
    end: int
    accessors: list = field(default_factory=list)
    regular: bool = True
    stride: int = 0
    count: int = 0
    foreign: bool = False  # holds sparse data or overlaps something that is not an accessor


def view_blocks(doc: dict) -> dict[int, list[Block]]:
    """The blocks of every buffer view that accessors (or sparse data) use, by start offset."""
    views = doc.get("bufferViews", [])
    spans: dict[int, list[tuple[int, int, int | None, int, int]]] = {}
    for ai, acc in enumerate(doc.get("accessors", [])):
        if "bufferView" in acc:
            vi = int(acc["bufferView"])
            start, end, stride, _ = accessor_span(acc, views[vi])
            spans.setdefault(vi, []).append((start, end, ai, stride, int(acc["count"])))
        sparse = acc.get("sparse")
        if sparse:
            n = int(sparse["count"])
            isize = np.dtype(COMPONENT_DTYPES[sparse["indices"]["componentType"]]).itemsize
            vsize = np.dtype(COMPONENT_DTYPES[acc["componentType"]]).itemsize * COMPONENTS_OF_TYPE[acc["type"]]
            for part, size in ((sparse["indices"], isize), (sparse["values"], vsize)):
                off = int(part.get("byteOffset", 0))
                spans.setdefault(int(part["bufferView"]), []).append((off, off + n * size, None, size, n))
    out: dict[int, list[Block]] = {}
    for vi, items in spans.items():
        items.sort(key=lambda s: (s[0], s[1]))
        blocks: list[Block] = []
        for start, end, ai, stride, count in items:
            if blocks and start < blocks[-1].end:
                b = blocks[-1]
                b.end = max(b.end, end)
            else:
                b = Block(start, end, stride=stride, count=count)
                blocks.append(b)
            if ai is None:
                b.foreign = True
            else:
                b.accessors.append(ai)
            if stride != b.stride or count != b.count or start >= b.start + max(b.stride, 1):
                b.regular = False
        out[vi] = blocks
    return out


class DocumentEditor:
    """Changes to a document's accessors, applied by :meth:`build` (see the module docstring).

    Parameters
    ----------
    doc : dict
        The source JSON (not modified; :meth:`build` works on a deep copy).
    buffers : list of bytes
        The source buffers' bytes.
    """

    def __init__(self, doc: dict, buffers: list[bytes], *, units: dict[int, int] | None = None):
        self.source_doc = doc
        self.source_buffers = buffers
        self.units = dict(units or {})
        self.doc = copy.deepcopy(doc)
        self.blocks = view_blocks(doc)
        self._gathers: dict[int, np.ndarray] = {}
        self._contents: dict[int, np.ndarray] = {}
        self._new: list[tuple[int, np.ndarray, int]] = []

    def replayed(self, buffers: list[bytes]) -> DocumentEditor:
        """The same changes over other bytes of the same layout (the stored form of filtered
        compressed views, :func:`.meshopt_streams.stored_buffers`): :meth:`build` then lays
        them out at the same offsets.  Call before :meth:`build`."""
        twin = DocumentEditor(self.source_doc, buffers, units=self.units)
        twin.doc = copy.deepcopy(self.doc)
        twin._gathers, twin._contents, twin._new = dict(self._gathers), dict(self._contents), list(self._new)
        return twin

    @property
    def changed(self) -> bool:
        """Whether any accessor or primitive was changed."""
        return bool(self._gathers or self._contents or self._new) or self.doc != self.source_doc

    def block_of(self, accessor: int) -> Block | None:
        """The block holding an accessor (None for an accessor without a buffer view)."""
        acc = self.source_doc["accessors"][accessor]
        if "bufferView" not in acc:
            return None
        return next(b for b in self.blocks[int(acc["bufferView"])] if accessor in b.accessors)

    def gather(self, accessor: int, source: np.ndarray) -> None:
        """Vertex accessor: new element ``k`` is old element ``source[k]`` (its whole block,
        which must be regular and hold only accessors gathered the same way)."""
        self._gathers[accessor] = np.asarray(source, np.int64)

    def replace(self, accessor: int, values: np.ndarray) -> None:
        """Index accessor: new flat contents; the component type follows ``values.dtype``."""
        self._contents[accessor] = np.ascontiguousarray(values).reshape(-1)

    def add_indices(self, values: np.ndarray, buffer: int) -> int:
        """A new index accessor over a new buffer view at the end of ``buffer``; its number."""
        values = np.ascontiguousarray(values).reshape(-1)
        views = self.doc.setdefault("bufferViews", [])
        accs = self.doc.setdefault("accessors", [])
        views.append({"buffer": int(buffer), "byteOffset": 0, "byteLength": int(values.nbytes),
                      "target": ELEMENT_ARRAY_BUFFER})
        accs.append({"bufferView": len(views) - 1, "componentType": COMPONENT_TYPE_OF[values.dtype],
                     "count": int(values.size), "type": "SCALAR"})
        self._new.append((len(views) - 1, values, int(buffer)))
        return len(accs) - 1

    # ------------------------------------------------------------------ layout
    def _view_source(self, vi: int) -> bytes:
        view = self.source_doc["bufferViews"][vi]
        raw = self.source_buffers[int(view["buffer"])]
        start = int(view.get("byteOffset", 0))
        return raw[start:start + int(view["byteLength"])]

    def _block_bytes(self, vi: int, block: Block, old: bytes) -> tuple[bytes, int | None]:
        """(new bytes of a block, required start residue mod 4 or None to keep the old one)."""
        accs = self.doc["accessors"]
        gathered = [a for a in block.accessors if a in self._gathers]
        replaced = [a for a in block.accessors if a in self._contents]
        if not gathered and not replaced:
            return old[block.start:block.end], None
        if replaced:
            if len(block.accessors) != 1 or block.foreign:
                raise Refusal(f"index accessor {replaced[0]} shares its bytes with other data")
            a = replaced[0]
            values = self._contents[a]
            acc = accs[a]
            acc["componentType"] = COMPONENT_TYPE_OF[values.dtype]
            acc["count"] = int(values.size)
            if "min" in acc and values.size:
                acc["min"], acc["max"] = [int(values.min())], [int(values.max())]
            return values.astype(values.dtype.newbyteorder("<"), copy=False).tobytes(), 0
        source = self._gathers[gathered[0]]
        if (len(gathered) != len(block.accessors) or block.foreign or not block.regular
                or any(not np.array_equal(self._gathers[a], source) for a in gathered)):
            raise Refusal(f"vertex accessor {gathered[0]} shares its rows with data renumbered otherwise")
        stride = block.stride
        rows = np.zeros(block.count * stride, np.uint8)
        chunk = np.frombuffer(old[block.start:block.end], np.uint8)
        rows[:chunk.size] = chunk
        out = rows.reshape(block.count, stride)[source]
        for a in gathered:
            accs[a]["count"] = int(source.size)
        return out.tobytes(), None

    def _build_view(self, vi: int) -> bytes:
        old = self._view_source(vi)
        view = self.source_doc["bufferViews"][vi]
        base = int(view.get("byteOffset", 0)) % 4
        unit = self.units.get(vi)
        out = bytearray()
        accs = self.doc["accessors"]
        for block in self.blocks.get(vi, []):
            data, residue = self._block_bytes(vi, block, old)
            if unit is None:
                want = (base + block.start) % 4 if residue is None else 0
                pos = len(out) + (want - base - len(out)) % 4
            else:  # a compressed view: elements (index triples) stay whole and aligned
                want = block.start % unit if residue is None else 0
                pos = len(out) + (want - len(out)) % unit
            out += b"\x00" * (pos - len(out)) + data
            for a in block.accessors:
                src_acc = self.source_doc["accessors"][a]
                offset = pos + int(src_acc.get("byteOffset", 0)) - block.start
                if offset or "byteOffset" in src_acc:
                    accs[a]["byteOffset"] = offset
        if unit is not None:
            out += b"\x00" * (-len(out) % unit)
        return bytes(out)

    def build(self) -> tuple[dict, list[bytes]]:
        """The changed document and its buffers' bytes."""
        touched = {int(self.source_doc["accessors"][a]["bufferView"]) for a in (*self._gathers, *self._contents)}
        new_views = {vi: self._build_view(vi) for vi in sorted(touched)}
        views = self.doc.get("bufferViews", [])
        n_old = len(self.source_doc.get("bufferViews", []))
        for vi, data in new_views.items():
            views[vi]["byteLength"] = len(data)
        appended: dict[int, list[tuple[int, bytes]]] = {}
        for vi, values, buffer in self._new:
            appended.setdefault(buffer, []).append((vi, values.astype(values.dtype.newbyteorder("<")).tobytes()))
        out_buffers = []
        for bi, raw in enumerate(self.source_buffers):
            mine = [vi for vi in range(n_old) if int(views[vi]["buffer"]) == bi]
            if not any(vi in new_views for vi in mine) and bi not in appended:
                out_buffers.append(raw)
                continue
            out_buffers.append(self._layout_buffer(raw, mine, new_views, appended.get(bi, [])))
            self.doc["buffers"][bi]["byteLength"] = len(out_buffers[-1])
        return self.doc, out_buffers

    def _layout_buffer(self, raw: bytes, mine: list[int], new_views: dict[int, bytes],
                       appended: list[tuple[int, bytes]]) -> bytes:
        src_views = self.source_doc["bufferViews"]
        views = self.doc["bufferViews"]
        order = sorted(mine, key=lambda vi: (int(src_views[vi].get("byteOffset", 0)), vi))
        out = bytearray()
        i = 0
        while i < len(order):
            group = [order[i]]
            end = int(src_views[order[i]].get("byteOffset", 0)) + int(src_views[order[i]]["byteLength"])
            while i + 1 < len(order) and int(src_views[order[i + 1]].get("byteOffset", 0)) < end:
                i += 1
                group.append(order[i])
                end = max(end, int(src_views[order[i]].get("byteOffset", 0)) + int(src_views[order[i]]["byteLength"]))
            i += 1
            start = int(src_views[group[0]].get("byteOffset", 0))
            if not any(vi in new_views for vi in group):
                pos = len(out) + (start - len(out)) % 4
                out += b"\x00" * (pos - len(out)) + raw[start:end]
                for vi in group:
                    self._set_offset(vi, pos + int(src_views[vi].get("byteOffset", 0)) - start)
                continue
            for vi in group:  # views aliasing a changed view each get their own bytes
                data = new_views.get(vi)
                if data is None:
                    s = int(src_views[vi].get("byteOffset", 0))
                    data = raw[s:s + int(src_views[vi]["byteLength"])]
                want = int(src_views[vi].get("byteOffset", 0)) % 4
                pos = len(out) + (want - len(out)) % 4
                out += b"\x00" * (pos - len(out)) + data
                self._set_offset(vi, pos)
        for vi, data in appended:
            pos = len(out) + (-len(out)) % 4
            out += b"\x00" * (pos - len(out)) + data
            views[vi]["byteOffset"] = pos
        return bytes(out)

    def _set_offset(self, vi: int, offset: int) -> None:
        view = self.doc["bufferViews"][vi]
        if offset or "byteOffset" in self.source_doc["bufferViews"][vi]:
            view["byteOffset"] = offset
