"""EXT_meshopt_compression and KHR_meshopt_compression: one buffer view's compressed stream.

A buffer view with one of these extensions keeps its plain layout (``buffer``,
``byteOffset``, ``byteLength`` of the *parent* view, the place its decoded bytes go) and
names a compressed stream in another buffer ([1]_, "Specifying compressed views"):
``count`` elements of ``byteStride`` bytes, a ``mode`` (``ATTRIBUTES`` for vertex and
other element data, ``TRIANGLES`` for triangle-list indices, ``INDICES`` for any other
index sequence) and, for ``ATTRIBUTES``, a ``filter`` applied after decoding
(``OCTAHEDRAL`` unit vectors, ``QUATERNION`` rotations, ``EXPONENTIAL`` floats, and in the
KHR extension ``COLOR``).  The parent's buffer may hold the same data uncompressed (a
*fallback* for loaders without the extension) or be a placeholder with no data at all.

:func:`stream_layout` checks a view's extension object against the specification's rules
(one :class:`~..format_common.Refusal` naming the buffer view and what is wrong);
:func:`decode_view` decodes a stream and :func:`encode_view` writes one;
:func:`decode_buffer_views` decodes every compressed view of a document into its parent
buffer, so everything downstream reads plain bytes.

The codec is meshoptimizer's own (release 1.3, through the ``meshopt`` package, whose
encoder reproduces the streams gltfpack 1.3 and glTF-Transform 4.5 write byte for byte).
The older ``meshoptimizer`` package (0.2.30a0) was not used: its C core predates the
``COLOR`` filter and the version-1 attribute codec that ``KHR_meshopt_compression`` files
use, its encoder version is a process-wide setting, and its ``decode_index_buffer`` writes
2-byte indices into a 4-byte array.

Re-encoding without loss
------------------------
The attribute codec and the index codecs are lossless on the bytes they are given, except
that the ``TRIANGLES`` codec may rotate a triangle's corners (winding kept).  A filter is
lossy (a filter encoder quantizes) and its decoders differ in the last bit (meshoptimizer's
C++ and JavaScript decoders give different octahedral normals for about 1.5% of
BrainStem's), but it works on each element alone: an element's value is a function of its
stored, unfiltered bytes.  So a filtered view is edited on those stored bytes
(:func:`stored_buffers`: the same buffers with every filtered view holding its elements
before the filter) and written again with the same filter: every decoder then reads every
moved, dropped or repeated element exactly as it read it in the input.

References
----------
.. [1] Khronos, ``KHR_meshopt_compression`` (release candidate) and its vendor form
   ``EXT_meshopt_compression``, "Specifying compressed views", "JSON schema updates"
   (the validity rules checked here), "Fallback buffers", Appendix A (bitstream versions:
   attribute streams start with ``0xa0``, or ``0xa1`` in the KHR extension only) and
   Appendix B (filters).
.. [2] A. Kapoulkine, meshoptimizer 1.3, ``meshopt_encodeVertexBufferLevel``,
   ``meshopt_decodeVertexBuffer``, ``meshopt_encodeIndexBuffer``, ``meshopt_encodeIndexSequence``
   and the filter decoders.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...support.limits import MAX_ELEMENTS, LimitError, check_memory
from ...support.meshoptimizer_bindings import codecs
from ..format_common import Refusal
from .gltf_types import MESHOPT_EXTENSIONS

__all__ = [
    "DecodedView",
    "FILTERS",
    "MODES",
    "StreamLayout",
    "decode_buffer_views",
    "decode_view",
    "encode_view",
    "meshopt_extension",
    "stored_buffers",
    "stream_layout",
]

MODES = ("ATTRIBUTES", "TRIANGLES", "INDICES")
FILTERS = ("NONE", "OCTAHEDRAL", "QUATERNION", "EXPONENTIAL", "COLOR")
#: First byte of an attribute stream: codec version 0 (both extensions) or 1 (KHR only).
ATTRIBUTE_HEADERS = {0xA0: 0, 0xA1: 1}
#: Attribute codec levels tried when a version-1 stream is written again (the smaller kept).
VERSION1_LEVELS = (3, 2)


@dataclass(frozen=True)
class StreamLayout:
    """A compressed view's extension object, checked.

    Attributes
    ----------
    extension : str
        ``EXT_meshopt_compression`` or ``KHR_meshopt_compression``.
    mode, filter : str
        As in the extension object (``filter`` ``"NONE"`` when absent).
    stride, count : int
        ``byteStride`` and ``count``: the decoded view holds ``count * stride`` bytes.
    buffer, offset, length : int
        Where the compressed stream is (``buffer``, ``byteOffset``, ``byteLength``).
    """

    extension: str
    mode: str
    filter: str
    stride: int
    count: int
    buffer: int
    offset: int
    length: int

    @property
    def unit(self) -> int:
        """Bytes that stay together in the decoded view: an element, or a triangle's three
        indices in ``TRIANGLES`` mode (the codec may rotate each triple)."""
        return 3 * self.stride if self.mode == "TRIANGLES" else self.stride


@dataclass(frozen=True, eq=False)
class DecodedView:
    """A compressed view as read: its layout, its stream, its decoded bytes and, for a
    filtered view, its elements before the filter (``(count, stride)`` uint8)."""

    layout: StreamLayout
    encoded: bytes
    data: bytes
    unfiltered: np.ndarray | None
    version: int | None


def meshopt_extension(view: dict) -> str | None:
    """The meshopt compression extension a buffer view uses, or None."""
    ext = view.get("extensions")
    if not isinstance(ext, dict):
        return None
    found = [name for name in MESHOPT_EXTENSIONS if name in ext]
    return found[0] if found else None


def _whole(value, where: str, lo: int, hi: int = MAX_ELEMENTS) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise Refusal(f"{where}: expected a whole number {lo}..{hi:,}, got {value!r}")
    return value


def stream_layout(doc: dict, view_index: int) -> StreamLayout | None:
    """The checked extension object of buffer view ``view_index`` (None: not compressed)."""
    view = doc["bufferViews"][view_index]
    name = meshopt_extension(view)
    if name is None:
        return None
    where = f"bufferView {view_index}: {name}"
    if all(n in view["extensions"] for n in MESHOPT_EXTENSIONS):
        raise Refusal(f"bufferView {view_index}: uses both EXT_meshopt_compression and KHR_meshopt_compression")
    ext = view["extensions"][name]
    if not isinstance(ext, dict):
        raise Refusal(f"{where}: expected an object, got {type(ext).__name__}")
    buffers = doc.get("buffers", [])
    buffer = _whole(ext.get("buffer"), f"{where}: buffer", 0, max(len(buffers) - 1, 0))
    if not buffers:
        raise Refusal(f"{where}: buffer {buffer} does not exist")
    offset = _whole(ext.get("byteOffset", 0), f"{where}: byteOffset", 0)
    length = _whole(ext.get("byteLength"), f"{where}: byteLength", 1)
    stride = _whole(ext.get("byteStride"), f"{where}: byteStride", 1, 256)
    count = _whole(ext.get("count"), f"{where}: count", 0)
    mode = ext.get("mode")
    if mode not in MODES:
        raise Refusal(f"{where}: mode {mode!r} is not one of {', '.join(MODES)}")
    filt = ext.get("filter", "NONE")
    allowed = FILTERS if name == "KHR_meshopt_compression" else FILTERS[:4]
    if filt not in allowed:
        raise Refusal(f"{where}: filter {filt!r} is not one of {', '.join(allowed)}")
    if int(view.get("byteLength", -1)) != stride * count:
        raise Refusal(f"{where}: byteStride {stride} x count {count} is {stride * count} bytes, "
                      f"the bufferView's byteLength is {view.get('byteLength')}")
    if mode == "ATTRIBUTES" and stride % 4:
        raise Refusal(f"{where}: byteStride {stride} is not a multiple of 4 (mode ATTRIBUTES)")
    if mode != "ATTRIBUTES":
        if stride not in (2, 4):
            raise Refusal(f"{where}: byteStride {stride} must be 2 or 4 (mode {mode})")
        if filt != "NONE":
            raise Refusal(f"{where}: filter {filt} is only allowed with mode ATTRIBUTES")
    if mode == "TRIANGLES" and count % 3:
        raise Refusal(f"{where}: count {count} is not a multiple of 3 (mode TRIANGLES)")
    if filt in ("OCTAHEDRAL", "COLOR") and stride not in (4, 8):
        raise Refusal(f"{where}: byteStride {stride} must be 4 or 8 (filter {filt})")
    if filt == "QUATERNION" and stride != 8:
        raise Refusal(f"{where}: byteStride {stride} must be 8 (filter QUATERNION)")
    return StreamLayout(name, mode, filt, stride, count, buffer, offset, length)


def decode_view(layout: StreamLayout, stream: bytes, view_index: int) -> DecodedView:
    """Decode one compressed view (``stream``: its ``byteLength`` bytes)."""
    where = f"bufferView {view_index}: {layout.extension}"
    size = layout.count * layout.stride
    try:
        check_memory(3 * size, f"decoding {size:,} bytes")
    except LimitError as exc:
        raise Refusal(f"{where}: {exc}") from None
    version = None
    if layout.count == 0:
        return DecodedView(layout, bytes(stream), b"", None, None)
    try:
        if layout.mode == "ATTRIBUTES":
            version = ATTRIBUTE_HEADERS.get(stream[0])
            if version is None or (version == 1 and layout.extension == "EXT_meshopt_compression"):
                raise Refusal(f"{where}: attribute stream header 0x{stream[0]:02x} is not valid here "
                              f"({'0xa0' if layout.extension.startswith('EXT') else '0xa0 or 0xa1'} expected)")
            unfiltered = None
            if layout.filter != "NONE":
                unfiltered = codecs.decode_vertex_buffer(stream, layout.count, layout.stride)
            rows = codecs.decode_vertex_buffer(stream, layout.count, layout.stride,
                                                None if layout.filter == "NONE" else layout.filter)
            data = rows.tobytes()
        elif layout.mode == "TRIANGLES":
            unfiltered, data = None, codecs.decode_index_buffer(stream, layout.count, layout.stride).tobytes()
        else:
            unfiltered, data = None, codecs.decode_index_sequence(stream, layout.count, layout.stride).tobytes()
    except ValueError as exc:
        raise Refusal(f"{where}: the {layout.mode} stream does not decode ({exc}; "
                      f"{layout.length} bytes for {layout.count} elements of {layout.stride})") from None
    return DecodedView(layout, bytes(stream), data, unfiltered, version)


def _encode_attributes(rows: np.ndarray, version: int) -> bytes:
    if version == 0:
        return codecs.encode_vertex_buffer_level(rows, 2, 0)
    return min((codecs.encode_vertex_buffer_level(rows, level, 1) for level in VERSION1_LEVELS), key=len)


def encode_view(stored: bytes, layout: StreamLayout, *, version: int | None = None,
                source: DecodedView | None = None) -> bytes:
    """The compressed stream of a view.

    Parameters
    ----------
    stored : bytes
        What the stream stores: the view's bytes, or for a filtered view its elements before
        the filter (:func:`stored_buffers`); a whole number of :attr:`StreamLayout.unit`.
    layout : StreamLayout
        Mode, filter, stride and extension to write (``count`` and the stream's place are
        not used).
    version : int, keyword-only
        Attribute codec version (0 or 1; default: the source stream's, else 0 for the EXT
        extension and 1 for KHR).  Version 1 is written at the smaller of levels 3 and 2.
    source : DecodedView, keyword-only
        The view as read: its stream is returned unchanged when ``stored`` is what it
        stored, in the same mode, filter, stride and extension.
    """
    stride = layout.stride
    if len(stored) % layout.unit:
        raise Refusal(f"{len(stored)} bytes is not a whole number of {layout.unit}-byte units ({layout.mode})")
    if source is not None and (source.layout.mode, source.layout.filter, source.layout.stride,
                               source.layout.extension) == (layout.mode, layout.filter, stride, layout.extension):
        before = source.data if source.unfiltered is None else source.unfiltered.tobytes()
        if before == stored:
            return source.encoded
    if layout.mode != "ATTRIBUTES":
        indices = np.frombuffer(stored, np.uint16 if stride == 2 else np.uint32)
        if layout.mode == "TRIANGLES":
            return codecs.encode_index_buffer(indices)
        return codecs.encode_index_sequence(indices)
    if version is None:
        version = source.version if source is not None and source.version is not None else (
            0 if layout.extension == "EXT_meshopt_compression" else 1)
    return _encode_attributes(np.frombuffer(stored, np.uint8).reshape(-1, stride), version)


def stored_buffers(buffers: list[bytes], doc: dict, views: dict[int, DecodedView]) -> list[bytes] | None:
    """``buffers`` with every filtered view holding its elements before the filter (what its
    stream stores); None when no view is filtered."""
    filtered = {vi: v for vi, v in views.items() if v.unfiltered is not None}
    if not filtered:
        return None
    out: list = list(buffers)
    for vi, got in filtered.items():
        view = doc["bufferViews"][vi]
        bi = int(view["buffer"])
        if not isinstance(out[bi], bytearray):
            out[bi] = bytearray(out[bi])
        start = int(view.get("byteOffset", 0))
        out[bi][start:start + len(got.data)] = got.unfiltered.tobytes()
    return [bytes(b) for b in out]


def decode_buffer_views(doc: dict, buffers: list[bytes | None]) -> tuple[list[bytes], dict[int, DecodedView]]:
    """Every compressed buffer view decoded into its parent buffer.

    Parameters
    ----------
    doc : dict
        The glTF JSON (schema-checked).
    buffers : list of bytes or None
        Each buffer's bytes as stored; ``None`` for a buffer without data (a fallback
        placeholder: only compressed views may refer to it).

    Returns
    -------
    buffers : list of bytes
        The same buffers with every compressed view's decoded bytes in place (placeholders
        become zero-filled buffers of their ``byteLength``).
    views : dict
        :class:`DecodedView` by buffer view number.
    """
    views = doc.get("bufferViews", [])
    for kind in ("buffers", "bufferViews"):
        for i, item in enumerate(doc.get(kind, [])):
            ext = item.get("extensions")
            if ext is not None and not isinstance(ext, dict):
                raise Refusal(f"/{kind}/{i}/extensions: expected an object, got {type(ext).__name__}")
            for name in MESHOPT_EXTENSIONS:
                if ext and name in ext and not isinstance(ext[name], dict):
                    raise Refusal(f"/{kind}/{i}/extensions/{name}: expected an object, got {type(ext[name]).__name__}")
    layouts = {vi: lay for vi in range(len(views)) if (lay := stream_layout(doc, vi)) is not None}
    for vi, view in enumerate(views):
        if buffers[int(view["buffer"])] is None and vi not in layouts:
            raise Refusal(f"bufferView {vi}: buffer {view['buffer']} has no data "
                          "(only compressed views may refer to a fallback buffer without data)")
    for bi, b in enumerate(doc.get("buffers", [])):
        ext = (b.get("extensions") or {})
        for name in MESHOPT_EXTENSIONS:
            if name in ext and not isinstance(ext[name].get("fallback", False), bool):
                raise Refusal(f"buffer {bi}: {name}: fallback must be true or false")
    missing = sum(int(doc["buffers"][i].get("byteLength", 0)) for i, raw in enumerate(buffers) if raw is None)
    try:
        check_memory(missing, "the fallback buffers of compressed views")
    except LimitError as exc:
        raise Refusal(str(exc)) from None
    out: list[bytes | bytearray] = list(buffers)
    decoded: dict[int, DecodedView] = {}
    for vi, lay in layouts.items():
        raw = buffers[lay.buffer]
        if raw is None:
            raise Refusal(f"bufferView {vi}: {lay.extension}: its stream's buffer {lay.buffer} has no data")
        if lay.offset + lay.length > len(raw):
            raise Refusal(f"bufferView {vi}: {lay.extension}: the stream (bytes {lay.offset}.."
                          f"{lay.offset + lay.length}) runs past the end of buffer {lay.buffer} ({len(raw)} bytes)")
        got = decode_view(lay, raw[lay.offset:lay.offset + lay.length], vi)
        parent = int(views[vi]["buffer"])
        start = int(views[vi].get("byteOffset", 0))
        target = out[parent]
        if not isinstance(target, bytearray):
            size = int(doc["buffers"][parent].get("byteLength", 0))
            target = bytearray(size) if target is None else bytearray(target)
            out[parent] = target
        if start + len(got.data) > len(target):
            raise Refusal(f"bufferView {vi} runs past the end of its buffer {parent}")
        target[start:start + len(got.data)] = got.data
        decoded[vi] = got
    sizes = [int(b.get("byteLength", 0)) for b in doc.get("buffers", [])]
    return [bytes(sizes[i]) if b is None else bytes(b) for i, b in enumerate(out)], decoded
