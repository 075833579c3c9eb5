"""KHR_draco_mesh_compression: Draco-compressed primitives decoded into plain accessors.

A primitive with this extension stores its indices and the attributes the extension lists
in one Draco bitstream (a buffer view); its accessors give count, type and component type
but no data ([1]_).  :func:`decode_draco_primitives` decodes each such buffer view once
with the Draco library (the ``DracoPy`` package), writes every decoded accessor into a
plain buffer view of the buffer that held the bitstream, drops the bitstream, and removes
the extension from the primitives and from ``extensionsUsed``/``extensionsRequired``.

The decoded data is what a Draco-aware loader draws ([1]_, "Conformance": the decoded
point order and faces are used as they come out of the decoder, each attribute found by
its unique id): point ``i`` of every attribute is vertex ``i``, face ``k`` is triangle
``k`` with its corners in the decoder's order.  Values are converted to the accessor's
component type (integers checked to fit); a vertex attribute whose element is not a
multiple of 4 bytes gets a padded ``byteStride`` (glTF aligns vertex elements to 4 bytes).
An accessor's ``min``/``max`` are set from the decoded values: an encoder writes the
bounds of its input, which its quantization may move (glTF-Transform's do).

Quantization also moves values out of the ranges glTF allows ([3]_): it rounds each
component to a grid over the largest component range, so a colour component can come back
above 1, and skin weights no longer sum to 1 (a small one may become 0 while its joint
stays).  Decoded values are brought back as the specification asks: float colours clamped
to [0, 1]; a vertex whose float weights are negative or sum further from 1 than float32
rounding allows (2e-7 per non-zero weight, the Khronos validator's allowance [4]_) rescaled
to sum to 1 (the largest weight takes the float32 remainder); a joint whose weight is 0
set to 0.  :class:`DracoDecoding` counts each kind for the user's note.

Draco's encoder does not keep a triangle order (its edgebreaker traversal sets its own),
so this tool never writes Draco: an optimized order would be undone.  ``optimize`` writes
Draco inputs with ``EXT_meshopt_compression`` instead (or plain with ``--no-compress``).

References
----------
.. [1] Khronos, ``KHR_draco_mesh_compression`` ("Decompressing", "Conformance": the
   ``attributes`` object maps semantics to Draco attribute unique ids; indices and
   attribute accessors of a compressed primitive need no ``bufferView``).
.. [2] Google, Draco 1.5 (``draco::Decoder``, the library ``DracoPy`` wraps).
.. [3] Khronos, glTF 2.0 specification, "Data Alignment" (vertex attribute elements on
   4-byte boundaries), "Buffers and Buffer Views" (``byteStride``, ``target``), "Meshes"
   (``COLOR_n`` float values in [0, 1]) and "Skinned Mesh Attributes" (weights not
   negative, a float vertex's weights summing to 1, unused joints 0).
.. [4] Khronos glTF-Validator 2.0.0-dev.3.10, ``ACCESSOR_NON_CLAMPED``,
   ``ACCESSOR_WEIGHTS_NON_NORMALIZED``, ``ACCESSOR_JOINTS_USED_ZERO_WEIGHT``.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass

import DracoPy
import numpy as np

from ...support.limits import LimitError, check_memory
from ..format_common import Refusal
from .gltf_types import COMPONENT_DTYPES, COMPONENTS_OF_TYPE, DRACO_EXTENSION

__all__ = ["DracoDecoding", "decode_draco_primitives"]

ARRAY_BUFFER = 34962
ELEMENT_ARRAY_BUFFER = 34963
#: How far from 1 a vertex's float32 weights may sum, per non-zero weight (float32 rounding).
WEIGHT_SUM_ROUNDING = 2e-7


@dataclass(frozen=True)
class DracoDecoding:
    """What decoding a file's Draco primitives did.

    Attributes
    ----------
    primitives : int
        Primitives decoded.
    colours_clamped : int
        Float ``COLOR_n`` components moved into [0, 1].
    weights_renormalized : int
        Vertices whose float weights were rescaled to sum to 1.
    joints_zeroed : int
        Joint indices with weight 0 set to 0.
    """

    primitives: int = 0
    colours_clamped: int = 0
    weights_renormalized: int = 0
    joints_zeroed: int = 0

    def describe(self) -> str:
        """``N KHR_draco_mesh_compression primitive(s) decoded`` and, in parentheses, the
        values brought back into glTF's ranges."""
        fixes = [f"{n:,} {what}" for n, what in (
            (self.colours_clamped, "colour component(s) clamped to [0, 1]"),
            (self.weights_renormalized, "vertices' skin weights renormalized to sum 1"),
            (self.joints_zeroed, "joint(s) with weight 0 set to 0")) if n]
        text = f"{self.primitives} {DRACO_EXTENSION} primitive(s) decoded"
        return text + (f" (values outside glTF's ranges brought back: {', '.join(fixes)})" if fixes else "")


def _draco_views(doc: dict) -> dict[int, list[tuple[int, int, dict]]]:
    """(mesh, primitive, extension object) of every Draco primitive, by bitstream view."""
    out: dict[int, list[tuple[int, int, dict]]] = {}
    n_views = len(doc.get("bufferViews", []))
    for mi, mesh in enumerate(doc.get("meshes", [])):
        for pi, prim in enumerate(mesh.get("primitives", [])):
            exts = prim.get("extensions")
            if exts is not None and not isinstance(exts, dict):
                raise Refusal(f"/meshes/{mi}/primitives/{pi}/extensions: expected an object, got {type(exts).__name__}")
            ext = (exts or {}).get(DRACO_EXTENSION)
            if ext is None:
                continue
            where = f"mesh {mi} primitive {pi}: {DRACO_EXTENSION}"
            if not isinstance(ext, dict):
                raise Refusal(f"{where}: expected an object")
            vi = ext.get("bufferView")
            if isinstance(vi, bool) or not isinstance(vi, int) or not 0 <= vi < n_views:
                raise Refusal(f"{where}: bufferView: expected an index into bufferViews, got {vi!r}")
            attrs = ext.get("attributes")
            if not isinstance(attrs, dict) or not all(
                    isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in attrs.values()):
                raise Refusal(f"{where}: attributes: expected an object of attribute ids")
            for sem in attrs:
                if sem not in prim.get("attributes", {}):
                    raise Refusal(f"{where}: attribute {sem} is not an attribute of the primitive")
            if int(prim.get("mode", 4)) not in (4, 5, 6):
                raise Refusal(f"{where}: mode {prim.get('mode')} is not a triangle mode")
            if "indices" not in prim:
                raise Refusal(f"{where}: the primitive has no indices accessor")
            out.setdefault(vi, []).append((mi, pi, ext))
    return out


def _decode(raw: bytes, vi: int):
    where = f"bufferView {vi}: {DRACO_EXTENSION}"
    try:
        check_memory(40 * len(raw) + (1 << 20), f"decoding a {len(raw):,}-byte Draco bitstream")
    except LimitError as exc:
        raise Refusal(f"{where}: {exc}") from None
    try:
        mesh = DracoPy.decode(bytes(raw))
    except Exception as exc:  # DracoPy raises its own exception types (and ValueError, RuntimeError)
        raise Refusal(f"{where}: the Draco bitstream does not decode ({type(exc).__name__}: {exc})") from None
    if not isinstance(mesh, DracoPy.DracoMesh):
        raise Refusal(f"{where}: the Draco bitstream holds a point cloud, not a mesh")
    return mesh


def _convert(values: np.ndarray, acc: dict, where: str) -> np.ndarray:
    """Decoded values in the accessor's component type (integers must fit)."""
    dtype = np.dtype(COMPONENT_DTYPES[acc["componentType"]])
    values = np.asarray(values)
    if dtype.kind == "f":
        return values.astype(np.float32)
    if values.dtype.kind == "f":
        if not np.array_equal(values, np.round(values)):
            raise Refusal(f"{where}: Draco decoded fractional values for an integer accessor")
    info = np.iinfo(dtype)
    if values.size and (values.min() < info.min or values.max() > info.max):
        raise Refusal(f"{where}: decoded values {values.min()}..{values.max()} do not fit {dtype.name}")
    return values.astype(dtype)


def _accessor_data(doc: dict, mesh, prim: dict, ext: dict, mi: int, pi: int) -> dict[int, tuple[np.ndarray, bool]]:
    """Accessor number -> (rows of its decoded data, whether it is a vertex attribute)."""
    where = f"mesh {mi} primitive {pi}: {DRACO_EXTENSION}"
    out: dict[int, tuple[np.ndarray, bool]] = {}
    faces = np.asarray(mesh.faces).reshape(-1)
    ia = int(prim["indices"])
    acc = doc["accessors"][ia]
    if acc.get("type") != "SCALAR" or int(acc["count"]) != faces.size:
        raise Refusal(f"{where}: indices accessor {ia} has count {acc['count']} ({acc.get('type')}), "
                      f"the bitstream {faces.size} indices")
    out[ia] = (_convert(faces, acc, f"{where}: indices accessor {ia}").reshape(-1, 1), False)
    points = int(np.asarray(mesh.points).reshape(-1, 3).shape[0]) if mesh.points is not None else 0
    for sem, uid in ext["attributes"].items():
        ai = int(prim["attributes"][sem])
        acc = doc["accessors"][ai]
        found = mesh.get_attribute_by_unique_id(int(uid))
        if found is None:
            raise Refusal(f"{where}: attribute {sem}: the bitstream has no attribute with id {uid}")
        data = np.asarray(found["data"])
        ncomp = COMPONENTS_OF_TYPE[acc["type"]]
        data = data.reshape(data.shape[0], -1) if data.ndim else data.reshape(0, ncomp)
        if data.shape != (int(acc["count"]), ncomp) or data.shape[0] != points:
            raise Refusal(f"{where}: attribute {sem} (id {uid}) decodes to {data.shape[0]} x {data.shape[1]} "
                          f"values, accessor {ai} is {acc['count']} x {ncomp}")
        out[ai] = (_convert(data, acc, f"{where}: attribute {sem}"), True)
    return out


def _clamp_colours(prim: dict, decoded: dict, done: set) -> int:
    """Float ``COLOR_n`` values of the primitive clamped to [0, 1]; how many moved."""
    moved = 0
    for sem, ai in prim["attributes"].items():
        if re.fullmatch(r"COLOR_\d+", sem) and ai in decoded and ai not in done and decoded[ai][0].dtype.kind == "f":
            rows = decoded[ai][0]
            fixed = np.clip(rows, np.float32(0), np.float32(1))
            moved += int(np.count_nonzero(fixed != rows))
            decoded[ai] = (fixed, True)
            done.add(ai)
    return moved


def _validator_sums(weights: np.ndarray) -> np.ndarray:
    """Each vertex's weights summed in float32, component by component over the sets, as
    the Khronos validator sums them ([4]_); ``weights`` is ``(V, sets, 4)`` float32."""
    total = np.zeros(weights.shape[0], np.float32)
    for c in range(weights.shape[2]):
        for s in range(weights.shape[1]):
            total = total + weights[:, s, c]
    return total


def _renormalize(weights: np.ndarray) -> tuple[np.ndarray, int]:
    """``(V, sets, 4)`` float32 weights with every vertex that is negative or off its sum
    rescaled to sum to 1 (see the module docstring); how many vertices were."""
    v = weights.shape[0]
    flat = weights.reshape(v, -1)
    nonzero = np.count_nonzero(flat > 0, axis=1)
    off = np.abs(_validator_sums(weights).astype(np.float64) - 1.0) > WEIGHT_SUM_ROUNDING * nonzero
    off |= (flat < 0).any(axis=1)
    positive = np.maximum(flat[off].astype(np.float64), 0.0)
    sums = positive.sum(axis=1)
    keep = sums > 0  # all zero: nothing to scale
    off[np.flatnonzero(off)[~keep]] = False
    scaled = (positive[keep] / sums[keep, None]).astype(np.float32)
    rows = np.arange(scaled.shape[0])
    big = np.argmax(scaled, axis=1)
    rest = scaled.astype(np.float64).sum(axis=1) - scaled[rows, big]
    scaled[rows, big] = (1.0 - rest).astype(np.float32)
    out = flat.copy()
    out[off] = scaled
    return out.reshape(weights.shape), int(off.sum())


def _skin_ranges(prim: dict, decoded: dict, done: set) -> tuple[int, int]:
    """The primitive's float weights renormalized and its zero-weight joints set to 0, when
    every ``WEIGHTS_n`` set was decoded here; (vertices renormalized, joints zeroed)."""
    attrs = prim["attributes"]
    sets = sorted(int(m.group(1)) for m in (re.fullmatch(r"WEIGHTS_(\d+)", s) for s in attrs) if m)
    ids = [attrs[f"WEIGHTS_{n}"] for n in sets]
    if not ids or any(a not in decoded or a in done or decoded[a][0].shape[1] != 4 for a in ids):
        return 0, 0
    renormalized = zeroed = 0
    if all(decoded[a][0].dtype == np.float32 for a in ids):
        fixed, renormalized = _renormalize(np.stack([decoded[a][0] for a in ids], axis=1))
        for s, a in enumerate(ids):
            decoded[a] = (np.ascontiguousarray(fixed[:, s, :]), True)
    for n, a in zip(sets, ids, strict=True):
        done.add(a)
        ji = attrs.get(f"JOINTS_{n}")
        if ji not in decoded or ji in done or decoded[ji][0].shape != decoded[a][0].shape:
            continue
        joints = decoded[ji][0].copy()
        unused = (decoded[a][0] == 0) & (joints != 0)
        joints[unused] = 0
        zeroed += int(unused.sum())
        decoded[ji] = (joints, True)
        done.add(ji)
    return renormalized, zeroed


def _rows_bytes(rows: np.ndarray, vertex: bool) -> tuple[bytes, int | None]:
    """The bytes of an accessor's rows, padded to a 4-byte stride for vertex attributes."""
    rows = np.ascontiguousarray(rows.astype(rows.dtype.newbyteorder("<")))
    flat = rows.view(np.uint8).reshape(rows.shape[0], -1)
    elem = flat.shape[1]
    if not vertex or elem % 4 == 0:
        return flat.tobytes(), None
    stride = elem + (-elem % 4)
    padded = np.zeros((flat.shape[0], stride), np.uint8)
    padded[:, :elem] = flat
    return padded.tobytes(), stride


def decode_draco_primitives(doc: dict, buffers: list[bytes]) -> tuple[dict, list[bytes], DracoDecoding]:
    """The document with every Draco primitive decoded into plain accessors (a copy; the
    input is not modified), its buffers, and what decoding did (:class:`DracoDecoding`)."""
    streams = _draco_views(doc)
    if not streams:
        return doc, buffers, DracoDecoding()
    doc = copy.deepcopy(doc)
    views = doc["bufferViews"]
    decoded: dict[int, tuple[np.ndarray, bool]] = {}
    count = clamped = renormalized = zeroed = 0
    done: set[int] = set()  # accessors brought into range already (shared by primitives)
    for vi, users in streams.items():
        bv = views[vi]
        raw = buffers[int(bv["buffer"])]
        start = int(bv.get("byteOffset", 0))
        if start + int(bv["byteLength"]) > len(raw):
            raise Refusal(f"bufferView {vi} runs past the end of its buffer")
        mesh = _decode(raw[start:start + int(bv["byteLength"])], vi)
        for mi, pi, ext in users:
            prim = doc["meshes"][mi]["primitives"][pi]
            decoded.update({ai: v for ai, v in _accessor_data(doc, mesh, prim, ext, mi, pi).items()
                            if ai not in done})
            clamped += _clamp_colours(prim, decoded, done)
            weights, joints = _skin_ranges(prim, decoded, done)
            renormalized, zeroed = renormalized + weights, zeroed + joints
            del prim["extensions"][DRACO_EXTENSION]
            if not prim["extensions"]:
                del prim["extensions"]
            count += 1
    free = sorted(streams)  # bitstream views, reused for decoded accessors (nothing else refers to them)
    placed: dict[int, list[tuple[int, bytes]]] = {}
    for ai, (rows, vertex) in sorted(decoded.items()):
        data, stride = _rows_bytes(rows, vertex)
        home = int(views[free[0]]["buffer"]) if free else int(views[min(streams)]["buffer"])
        entry = {"buffer": home, "byteLength": len(data), "target": ARRAY_BUFFER if vertex else ELEMENT_ARRAY_BUFFER}
        if stride is not None:
            entry["byteStride"] = stride
        if free:
            vi = free.pop(0)
            views[vi] = entry
        else:
            views.append(entry)
            vi = len(views) - 1
        acc = doc["accessors"][ai]
        acc["bufferView"] = vi
        acc.pop("byteOffset", None)
        if ("min" in acc or "max" in acc) and rows.size:  # bounds of the decoded (quantized) values
            cast = float if rows.dtype.kind == "f" else int
            acc["min"] = [cast(v) for v in rows.min(axis=0)]
            acc["max"] = [cast(v) for v in rows.max(axis=0)]
        placed.setdefault(home, []).append((vi, data))
    for vi in free:  # a bitstream shared by primitives whose accessors were filled already
        views[vi] = {"buffer": int(views[vi]["buffer"]), "byteLength": 1}
    out = list(buffers)
    for bi in sorted({int(views[vi]["buffer"]) for vi in streams} | set(placed)):
        out[bi] = _layout(doc, buffers[bi], bi, streams, dict((vi, d) for vi, d in placed.get(bi, [])))
        doc["buffers"][bi]["byteLength"] = len(out[bi])
    for key in ("extensionsUsed", "extensionsRequired"):
        if key in doc:
            doc[key] = [e for e in doc[key] if e != DRACO_EXTENSION]
            if not doc[key]:
                del doc[key]
    return doc, out, DracoDecoding(count, clamped, renormalized, zeroed)


def _layout(doc: dict, raw: bytes, bi: int, streams: dict, new: dict[int, bytes]) -> bytes:
    """Buffer ``bi`` laid out again: its other views copied (each keeping its offset modulo
    4), the decoded accessors' views after them (4-byte aligned), the bitstreams dropped."""
    out = bytearray()
    views = doc["bufferViews"]
    old = [vi for vi, v in enumerate(views) if int(v["buffer"]) == bi and vi not in new and vi not in streams]
    for vi in sorted(old, key=lambda v: (int(views[v].get("byteOffset", 0)), v)):
        start = int(views[vi].get("byteOffset", 0))
        data = raw[start:start + int(views[vi]["byteLength"])]
        pos = len(out) + (start - len(out)) % 4
        out += b"\x00" * (pos - len(out)) + data
        views[vi]["byteOffset"] = pos
    for vi, data in new.items():
        pos = len(out) + (-len(out)) % 4
        out += b"\x00" * (pos - len(out)) + data
        views[vi]["byteOffset"] = pos
    for vi in streams:
        if vi not in new and int(views[vi]["buffer"]) == bi and views[vi].get("byteLength") == 1:
            views[vi]["byteOffset"] = len(out)
            out += b"\x00"
    return bytes(out)
