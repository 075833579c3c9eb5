"""Optimizing a glTF asset in its own structure: only changed accessors are rewritten.

:func:`optimize_gltf` reads the document (:mod:`meshopt_batch.io.gltf_document`), groups its
triangle primitives by shared vertex data (:func:`meshopt_batch.io.gltf_draws.census`),
optimizes every vertex set with its index buffers
(:func:`meshopt_batch.vertex_set.optimize_vertex_set`: weld, triangle order, vertex-fetch
order, never worse than the input for the target profile), patches the document
(:class:`meshopt_batch.io.gltf_layout.DocumentEditor`) and packages the files
(:func:`meshopt_batch.io.gltf_output.package_gltf`).

Per index buffer:

* the index type is the smallest that holds every index (uint16 up to 65,534, uint32 above;
  glTF reserves the largest value of a type for primitive restart), a uint8 input staying
  uint8 where it fits; ``keep_index_type`` keeps the input's (widened only if it no longer
  fits);
* a strip or fan stays a strip or fan when its triangle order is kept (its indices are
  renumbered with the vertices), and becomes a list (``mode`` 4) when a new order wins;
* a non-indexed primitive gets an index buffer when its vertices were welded or reordered,
  and stays non-indexed otherwise (an index buffer would then add bytes and save nothing).

Point and line primitives, and everything else in the document, pass through unchanged.  A
document with no triangle primitive, or where nothing changes, is copied through byte for
byte (with its external files when written elsewhere).

The output size rule checked by the tests and stated per asset (``size_limit``): the output
files together (the main file and every external buffer and image it refers to) are at most
1% larger than the input's, plus what the optimization strictly adds: the bytes of new
index buffers, strips/fans grown into lists, vertex copies, and 256 bytes of JSON for each
new accessor and buffer view.

References
----------
.. [1] Khronos, glTF 2.0 specification, "Meshes" (indices: "the maximum possible value for
   the component type ... MUST NOT be used"; modes), "Accessors".
"""

from __future__ import annotations

import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .errors import MeshError
from .files import atomic_write
from .io.common import Refusal, one_line
from .io.gltf_document import COMPONENT_DTYPES, load_document, read_accessor
from .io.gltf_draws import IndexBuffer, VertexSet, census
from .io.gltf_layout import DocumentEditor, accessor_span
from .io.gltf_output import local_uri, package_gltf, resource_files, same_file
from .profiles import Profile
from .reuse import Prediction, predict
from .vertex_set import BufferOutcome, SetOptions, SetOutcome, optimize_vertex_set
from .weld import vertex_records

__all__ = ["GltfResult", "JSON_PER_NEW_OBJECT", "index_dtype", "optimize_gltf"]

#: JSON bytes the size rule grants for each new accessor with its buffer view.
JSON_PER_NEW_OBJECT = 256
MODE_NAMES = {4: "triangles", 5: "triangle strip", 6: "triangle fan"}


@dataclass
class GltfResult:
    """What :func:`optimize_gltf` did: per-draw records, totals and the files written."""

    draws: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    before: list = field(default_factory=list)  # Prediction per draw, input
    after: list = field(default_factory=list)  # Prediction per draw, output
    vertices_before: list = field(default_factory=list)
    vertices_after: list = field(default_factory=list)
    files: list = field(default_factory=list)
    bytes_before: int = 0
    bytes_after: int = 0
    added_bytes: int = 0
    seconds: float = 0.0


def index_dtype(max_index: int, stored: np.dtype | None, keep: bool) -> np.dtype:
    """The index type to write for indices up to ``max_index`` (see the module docstring)."""
    fits = [np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.uint32)]
    if keep and stored is not None:
        fits = fits[fits.index(np.dtype(stored)):]
    elif stored is None or np.dtype(stored) != np.uint8:
        fits = fits[1:]
    for dt in fits:
        if max_index < np.iinfo(dt).max:
            return dt
    raise MeshError(f"index {max_index} does not fit 32 bits")


def _prediction(tris: np.ndarray, vertex_count: int, profile: Profile) -> Prediction:
    # int64 as the optimizer's buffers: one compiled kernel serves every buffer of the file
    return predict(np.asarray(tris, np.int64), vertex_count, profile=profile)


def _position_buffer(doc: dict, vset: VertexSet) -> int:
    acc = doc["accessors"][int(vset.attributes["POSITION"])]
    return int(doc["bufferViews"][int(acc["bufferView"])]["buffer"]) if "bufferView" in acc else 0


def _row_bytes(doc: dict, vset: VertexSet) -> int:
    total = 0
    for a in vset.accessors:
        acc = doc["accessors"][a]
        total += accessor_span(dict(acc, count=1), doc["bufferViews"][int(acc["bufferView"])])[3]
    return total


def _new_flat(buf: IndexBuffer, out: BufferOutcome, outcome: SetOutcome, old_flat: np.ndarray | None,
              vertex_count: int) -> tuple[np.ndarray, int]:
    """(indices to store, mode) of an index buffer after optimization."""
    if buf.mode != 4 and out.order == "input" and out.dropped == 0:
        flat = np.arange(vertex_count, dtype=np.int64) if old_flat is None else old_flat
        return (flat if outcome.remap is None else outcome.remap[flat]), buf.mode
    return np.asarray(out.triangles, np.int64).reshape(-1), 4


def _write_buffer(editor: DocumentEditor, doc: dict, vset: VertexSet, buf: IndexBuffer, out: BufferOutcome,
                  outcome: SetOutcome, vertex_count: int, keep_index_type: bool) -> tuple[str, str, int]:
    """Store one optimized index buffer; (index type in, index type out, bytes added)."""
    stored = None
    if buf.accessor is not None:
        stored = np.dtype(COMPONENT_DTYPES[doc["accessors"][buf.accessor]["componentType"]])
    old_flat = None if buf.accessor is None else buf.flat(doc, editor.source_buffers)
    type_in = "none" if stored is None else stored.name
    if buf.accessor is None and outcome.source is None and out.order == "input" and out.dropped == 0:
        return type_in, type_in, 0
    flat, mode = _new_flat(buf, out, outcome, old_flat, vertex_count)
    dtype = index_dtype(int(flat.max()) if flat.size else 0, stored, keep_index_type)
    values = flat.astype(dtype)
    added = 0
    if buf.accessor is None:
        new = editor.add_indices(values, _position_buffer(doc, vset))
        added = values.nbytes + JSON_PER_NEW_OBJECT
    elif np.array_equal(values, old_flat) and dtype == stored:
        return type_in, type_in, 0
    else:
        editor.replace(buf.accessor, values)
        new = buf.accessor
        added = max(0, values.nbytes - old_flat.size * stored.itemsize)
    for d in buf.draws:
        prim = editor.doc["meshes"][d.mesh]["primitives"][d.primitive]
        prim["indices"] = new
        if mode != buf.mode:
            prim["mode"] = mode
    return type_in, dtype.name, added


def _mesh_names(doc: dict) -> dict[int, str]:
    """A mesh's name, else the name of the first node that uses it."""
    names: dict[int, str] = {}
    for node in doc.get("nodes", []):
        if "mesh" in node and node.get("name"):
            names.setdefault(int(node["mesh"]), node["name"])
    for mi, mesh in enumerate(doc.get("meshes", [])):
        if mesh.get("name"):
            names[mi] = mesh["name"]
    return names


def _draw_record(draw, buf: IndexBuffer, out: BufferOutcome | None, outcome: SetOutcome | None, vset: VertexSet,
                 before: Prediction, after: Prediction, types: tuple[str, str], profile: Profile,
                 extra: dict) -> dict:
    rec = {"name": draw.name, "mesh": draw.mesh, "primitive": draw.primitive,
           "mode": MODE_NAMES[buf.mode], "triangles": before.triangles,
           "vertices_before": outcome.vertices_before if outcome else None,
           "vertices_after": outcome.vertices_after if outcome else None}
    rec["before"] = {"profile": profile.name, "invocations": before.invocations, "asr": before.asr,
                     "batches": before.batches}
    rec["after"] = {"profile": profile.name, "invocations": after.invocations, "asr": after.asr,
                    "batches": after.batches}
    rec["order"] = out.order if out else "input"
    locked = buf.locked or vset.locked
    rec["vertex_order"] = f"kept: {locked}" if locked else outcome.vertex_order
    rec["welded"] = outcome.merged if outcome else 0
    rec["fetch_gap_before"] = outcome.fetch_gap_before if outcome else None
    rec["fetch_gap_after"] = outcome.fetch_gap_after if outcome else None
    rec["fetch_gap_kept_order"] = outcome.fetch_gap_kept_order if outcome else None
    rec["index_type_before"], rec["index_type_after"] = types
    rec["degenerate"] = out.degenerate_before if out else 0
    rec["degenerate_dropped"] = out.dropped if out else 0
    rec.update(extra)
    return rec


def _files_size(doc: dict, main: Path, main_size: int, written: dict[Path, int]) -> int:
    total = main_size
    seen: set[Path] = set()
    for p in resource_files(doc, main):
        key = p.resolve()
        if key in seen:
            continue
        seen.add(key)
        if p in written:
            total += written[p]
        elif p.is_file():
            total += p.stat().st_size
    return total


def optimize_gltf(source: Path, output: Path, options) -> GltfResult:
    """Optimize every triangle primitive of a ``.gltf``/``.glb`` and write ``output``
    (``.gltf`` or ``.glb``).  ``options`` is an :class:`meshopt_batch.asset.AssetOptions`."""
    try:
        data = source.read_bytes()
    except OSError as exc:
        raise MeshError(f"{source}: cannot read: {exc.strerror or exc}") from None
    try:
        doc, buffers = load_document(data, source)
        editor, result = _optimize_document(doc, buffers, options)
        return _write(editor, doc, buffers, data, source, output, options, result)
    except Refusal as exc:
        raise MeshError(f"{source}: {one_line(exc)}") from None
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        if isinstance(exc, MeshError):
            raise
        raise MeshError(f"{source}: not a readable glTF file ({one_line(exc)})") from None


def _optimize_document(doc: dict, buffers: list[bytes], options) -> tuple[DocumentEditor, GltfResult]:
    sets, notes = census(doc, _mesh_names(doc))
    result = GltfResult(notes=list(notes))
    if not sets:
        result.notes.append("no triangle primitives: the file is copied through")
    set_options = SetOptions(options.method, options.profile, dict(options.method_params), weld=options.weld,
                             vertex_order=options.vertex_order, drop_degenerate=options.drop_degenerate)
    prof = options.profile
    editor = DocumentEditor(doc, buffers)
    t0 = time.perf_counter()
    for vset in sets:
        count = vset.vertex_count(doc)
        free = [b for b in vset.buffers if not b.locked]
        tris = [b.triangles(doc, buffers, count) for b in free]
        vertex_ops = vset.locked is None
        records = None
        if vertex_ops and options.weld:
            records = vertex_records([read_accessor(doc, buffers, a)[0] for a in vset.accessors], count)
        positions = (read_accessor(doc, buffers, int(vset.attributes["POSITION"]))[0]
                     if options.method.uses_positions else None)
        outcome = optimize_vertex_set(records, tris, count, set_options, vertex_ops=vertex_ops, positions=positions)
        if outcome.source is not None:
            for a in vset.accessors:
                editor.gather(a, outcome.source)
            result.added_bytes += outcome.copies * _row_bytes(doc, vset)
        by_buffer = {id(b): (o, t) for b, o, t in zip(free, outcome.buffers, tris, strict=True)}
        for buf in vset.buffers:
            out, tri_in = by_buffer.get(id(buf), (None, None))
            if out is None:
                tri_in = buf.triangles(doc, buffers, count)
                types = ("locked", "locked")
                p_in = p_out = _prediction(tri_in, count, prof)
            else:
                t_in, t_out, added = _write_buffer(editor, doc, vset, buf, out, outcome, count, options.keep_index_type)
                types = (t_in, t_out)
                result.added_bytes += added
                p_in = _prediction(tri_in, count, prof)
                p_out = _prediction(out.triangles, outcome.vertices_after, prof)
            extra = {}
            if out is not None and options.method.name == "batch":
                extra = {"vertex_copies": outcome.copies, "renumbered": outcome.source is not None}
            for d in buf.draws:
                result.draws.append(_draw_record(d, buf, out, outcome if out else None, vset, p_in, p_out,
                                                 types, prof, extra))
                result.before.append(p_in)
                result.after.append(p_out)
                result.vertices_before.append(count)
                result.vertices_after.append(outcome.vertices_after if out is not None else count)
    perm = sorted(range(len(result.draws)), key=lambda i: (result.draws[i]["mesh"], result.draws[i]["primitive"]))
    for name in ("draws", "before", "after", "vertices_before", "vertices_after"):
        setattr(result, name, [getattr(result, name)[i] for i in perm])
    result.seconds = time.perf_counter() - t0
    for vset in sets:
        if vset.locked:
            result.notes.append(f"{vset.draws[0].name}: vertex order kept ({vset.locked})")
    return editor, result


def _copy_through(doc: dict, data: bytes, source: Path, output: Path) -> list[tuple[Path, bytes]] | None:
    """Side files of a byte-for-byte copy of a ``.gltf`` (None: a URI leaves its folder)."""
    files = []
    for item in doc.get("buffers", []) + doc.get("images", []):
        uri = item.get("uri")
        if not uri or uri.startswith("data:"):
            continue
        rel = local_uri(uri)
        if rel is None:
            return None
        src_file = source.parent / urllib.parse.unquote(uri)
        target = output.parent / rel
        if not same_file(src_file, target) and src_file.is_file():
            files.append((target, src_file.read_bytes()))
    return files


def _write(editor: DocumentEditor, doc: dict, buffers: list[bytes], data: bytes, source: Path, output: Path,
           options, result: GltfResult) -> GltfResult:
    if not output.parent.is_dir():
        raise MeshError(f"{output}: directory {output.parent} does not exist")
    same_kind = source.suffix.lower() == output.suffix.lower()
    side = None
    if not editor.changed and same_kind and not options.embed:
        side = _copy_through(doc, data, source, output) if output.suffix.lower() == ".gltf" else []
    if side is not None:
        main, out_doc = data, doc
    else:
        new_doc, new_buffers = editor.build()
        changed = [a is not b for a, b in zip(new_buffers, buffers, strict=True)]
        main, side, notes = package_gltf(new_doc, new_buffers, source, output, changed=changed,
                                         source_bytes=data, embed=options.embed)
        result.notes += notes
        out_doc = new_doc
    for path, raw in side:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, raw)
    atomic_write(output, main)
    result.files = [str(p) for p, _ in side]
    result.bytes_before = _files_size(doc, source, len(data), {})
    result.bytes_after = _files_size(out_doc, output, len(main), {p: len(r) for p, r in side})
    return result
