"""Optimizing a glTF asset in its own structure: only changed accessors are rewritten.

:func:`optimize_gltf` reads the document (:mod:`meshopt_batch.io.gltf.gltf_document`), groups its
triangle primitives by shared vertex data (:func:`meshopt_batch.io.gltf.draw_census.census`),
optimizes every vertex set with its index buffers
(:func:`meshopt_batch.vertices.vertex_set.optimize_vertex_set`: weld, triangle order, vertex-fetch
order, never worse than the input on any profile of the target), patches the document
(:class:`meshopt_batch.io.gltf.byte_patching.DocumentEditor`) and packages the files
(:func:`meshopt_batch.io.gltf.file_packaging.package_gltf`).

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

import contextlib
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..io.format_common import Refusal, one_line
from ..io.gltf.byte_patching import DocumentEditor, accessor_span
from ..io.gltf.draw_census import IndexBuffer, VertexSet, census, strip_fan_to_list
from ..io.gltf.file_packaging import local_uri, package_gltf, resource_files, same_file, write_file_set
from ..io.gltf.glb_container import MissingFile, read_external
from ..io.gltf.gltf_document import COMPONENT_DTYPES, GltfFile, read_accessor, read_document
from ..model.prediction import Prediction, predict
from ..model.profiles import Profile
from ..model.targets import Target
from ..support.errors import MeshError
from ..support.parallel import in_parallel
from ..vertices.vertex_set import BufferOutcome, SetOptions, SetOutcome, judged, optimize_vertex_set
from . import gltf_delivery as delivery

__all__ = ["GltfResult", "JSON_PER_NEW_OBJECT", "index_dtype", "optimize_gltf"]

#: JSON bytes the size rule grants for each new accessor with its buffer view.
JSON_PER_NEW_OBJECT = 256
#: Packings tried to fit a compressed input's size budget before every vertex set keeps its input form.
BUDGET_ROUNDS = 4
#: Why a vertex set kept its input form under the size budget.
FROZEN = "compressed size budget"
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
    converted: bool = False  # written in another form than it came (compressed / plain)
    set_costs: list = field(default_factory=list)  # (vertex set, invocations saved, stream bytes added)
    draw_sets: list = field(default_factory=list)  # the vertex set of each draw
    size_budget: int | None = None  # a compressed input's budget (asset_delivery.SIZE_BUDGET)
    rotated: dict = field(default_factory=dict)  # draw -> its re-encoded TRIANGLES view (corners may rotate)


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
    return predict(tris, vertex_count, profile=profile)


def _by_profile(target: Target, before: list[int], after: list[int], count_out: int) -> dict:
    """Per profile of the target (named as judged: ``+16bit`` over 2^16 vertices), the draw's
    invocations before and after."""
    return {q.name: {"before": b, "after": a}
            for q, b, a in zip(target.evaluation_profiles(count_out), before, after, strict=True)}


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
                  outcome: SetOutcome, vertex_count: int, keep_index_type: bool, *,
                  fixed: bool = False) -> tuple[str, str, int]:
    """Store one optimized index buffer; (index type in, index type out, bytes added).  A
    ``fixed`` index type (a view kept compressed) cannot widen."""
    stored = None
    if buf.accessor is not None:
        stored = np.dtype(COMPONENT_DTYPES[doc["accessors"][buf.accessor]["componentType"]])
    old_flat = None if buf.accessor is None else buf.flat(doc, editor.source_buffers)
    type_in = "none" if stored is None else stored.name
    if buf.accessor is None and outcome.source is None and out.order == "input" and out.dropped == 0:
        return type_in, type_in, 0
    flat, mode = _new_flat(buf, out, outcome, old_flat, vertex_count)
    dtype = index_dtype(int(flat.max()) if flat.size else 0, stored, keep_index_type)
    if fixed and stored is not None and dtype != stored:
        raise Refusal(f"index accessor {buf.accessor}: the new indices need {dtype.name}, its compressed "
                      f"bufferView stores {stored.name} (use --no-compress)")
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
                 extra: dict, by_profile: dict | None = None) -> dict:
    rec = {"name": draw.name, "mesh": draw.mesh, "primitive": draw.primitive,
           "mode": MODE_NAMES[buf.mode], "triangles": before.triangles,
           "vertices_before": outcome.vertices_before if outcome else None,
           "vertices_after": outcome.vertices_after if outcome else None}
    rec["before"] = {"profile": profile.name, "invocations": before.invocations, "asr": before.asr,
                     "batches": before.batches}
    rec["after"] = {"profile": profile.name, "invocations": after.invocations, "asr": after.asr,
                    "batches": after.batches}
    if by_profile is not None:
        rec["profiles"] = by_profile
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


def optimize_gltf(source: Path, output: Path, options, progress=None) -> GltfResult:
    """Optimize every triangle primitive of a ``.gltf``/``.glb`` and write ``output``
    (``.gltf`` or ``.glb``).  ``options`` is an :class:`~.file_optimization.AssetOptions`;
    ``progress(done, total)`` is told of each vertex set (:func:`~.file_optimization.optimize_file`)."""
    try:
        data = source.read_bytes()
    except OSError as exc:
        raise MeshError(f"{source}: cannot read: {exc.strerror or exc}") from None
    try:
        got = read_document(data, source)
        form = delivery.output_form(got, getattr(options, "compress", None))
        budget = delivery.size_budget(got, form, _files_size(got.doc, source, len(data), {}))
        frozen: set[int] = set()
        exact: set[int] = set()
        memo: dict = {}
        for _ in range(BUDGET_ROUNDS):
            editor, result = _optimize_document(got.doc, got.buffers, options, got=got, form=form, frozen=frozen,
                                                costs=budget is not None, progress=progress, memo=memo)
            written = _package(editor, got, data, source, output, options, result, form, exact)
            worse = [i for i, rec in enumerate(result.draws) if _predicts_more(rec)]  # rotated by the codec
            if not worse and (budget is None or written.size <= budget):
                break
            stuck = [i for i in worse if result.draw_sets[i] in frozen]
            exact |= {result.rotated[i] for i in stuck if i in result.rotated}  # its input order, stored exactly
            more = {result.draw_sets[i] for i in worse} - frozen
            if not worse:
                more = delivery.sets_to_keep(result.set_costs, written.size - budget, frozen)
            frozen |= more or ({k for k, _, _ in result.set_costs} - frozen)
        else:  # still over: every vertex set as it came, index views stored exactly
            editor, result = _optimize_document(got.doc, got.buffers, options, got=got, form=form, frozen=None)
            written = _package(editor, got, data, source, output, options, result, form, None)
        result.size_budget = budget
        if frozen:
            result.notes.append(f"{len(frozen)} vertex set(s) kept their input order and vertices: the optimized "
                                f"ones compressed worse than the input's, over the size budget of "
                                f"{delivery.SIZE_BUDGET:g}x the input, or predicted more once decoded")
        return _store(written, result)
    except Refusal as exc:
        raise MeshError(f"{source}: {one_line(exc)}") from None
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        if isinstance(exc, MeshError):
            raise
        raise MeshError(f"{source}: not a readable glTF file ({one_line(exc)})") from None


def _optimize_document(doc: dict, buffers: list[bytes], options, *, got: GltfFile, form: delivery.OutputForm,
                       frozen: set[int] | None = frozenset(), costs: bool = False, progress=None,
                       memo: dict | None = None) -> tuple[DocumentEditor, GltfResult]:
    """Optimize every vertex set but the ``frozen`` ones (None: freeze all); with ``costs``,
    record each optimized set's bytes added to the compressed streams (``set_costs``).  The sets
    are ordered independently, on the machine's cores (:func:`meshopt_batch.support.parallel.in_parallel`),
    then written one after another; ``memo`` keeps each set's outcome for a later call."""
    memo = {} if memo is None else memo
    sets, notes = census(doc, _mesh_names(doc))
    result = GltfResult(notes=list(notes))
    if not sets:
        result.notes.append("no triangle primitives: the file is copied through")
    target = options.target
    set_options = SetOptions(options.method, target, dict(options.method_params), weld=options.weld,
                             vertex_order=options.vertex_order, drop_degenerate=options.drop_degenerate)
    prof = target.first
    editor = DocumentEditor(doc, buffers, units=delivery.editor_units(got, form))
    fixed = {b.accessor for v in sets for b in v.buffers if delivery.fixed_index_type(got, form, b.accessor)}
    stored = delivery.stored_form(got) if options.weld or costs else None
    t0 = time.perf_counter()
    if progress is not None:
        progress(0, len(sets))
    for k, vset in enumerate(sets):
        if frozen is None or k in frozen:
            vset.locked = vset.locked or FROZEN
            for b in vset.buffers:
                b.locked = b.locked or FROZEN

    def order(k: int) -> tuple:
        """Set ``k``'s free index buffers, their triangles and its outcome (kept in ``memo``)."""
        vset = sets[k]
        count = vset.vertex_count(doc)
        free = [b for b in vset.buffers if not b.locked]
        tris = [b.triangles(doc, buffers, count) for b in free]
        key = (k, vset.locked, tuple(i for i, b in enumerate(vset.buffers) if not b.locked))
        if key not in memo:
            vertex_ops = vset.locked is None
            records = None
            if vertex_ops and options.weld:
                records = delivery.weld_keys(got, vset, count, tolerance=getattr(options, "weld_tolerance", 0.0),
                                             stored=stored)
            positions = (read_accessor(doc, buffers, int(vset.attributes["POSITION"]))[0]
                         if options.method.uses_positions else None)
            memo[key] = optimize_vertex_set(records, tris, count, set_options, vertex_ops=vertex_ops,
                                            positions=positions)
        if progress is not None:
            with lock:
                done.append(k)
                progress(len(done), len(sets))
        return free, tris, memo[key]

    lock, done = threading.Lock(), []
    ordered = in_parallel(order, range(len(sets)))
    for k, vset in enumerate(sets):
        count = vset.vertex_count(doc)
        free, tris, outcome = ordered[k]
        if outcome.source is not None:
            for a in vset.accessors:
                editor.gather(a, outcome.source)
            result.added_bytes += outcome.copies * _row_bytes(doc, vset)
        by_buffer = {id(b): (o, t) for b, o, t in zip(free, outcome.buffers, tris, strict=True)}
        if costs and free:
            cost = delivery.set_cost(got, stored, vset, outcome.source, tris, [o.triangles for o in outcome.buffers])
            gain = sum(len(b.draws) * (o.before - o.after) for b, o in zip(free, outcome.buffers, strict=True))
            result.set_costs.append((k, gain, cost))
        for buf in vset.buffers:
            out, tri_in = by_buffer.get(id(buf), (None, None))
            if out is None:
                tri_in = buf.triangles(doc, buffers, count)
                types = ("locked", "locked")
                p_in = p_out = _prediction(tri_in, count, prof)
                every = _by_profile(target, judged(tri_in, count, target), judged(tri_in, count, target), count)
            else:
                keep_type = options.keep_index_type or buf.accessor in fixed
                t_in, t_out, added = _write_buffer(editor, doc, vset, buf, out, outcome, count, keep_type,
                                                   fixed=buf.accessor in fixed)
                types = (t_in, t_out)
                result.added_bytes += added
                p_in = _prediction(tri_in, count, prof)
                p_out = _prediction(out.triangles, outcome.vertices_after, prof)
                every = _by_profile(target, list(out.before_all.values()), list(out.after_all.values()),
                                    outcome.vertices_after)
            extra = {}
            if out is not None and options.method.name == "batch":
                extra = {"vertex_copies": outcome.copies, "renumbered": outcome.source is not None}
            for d in buf.draws:
                result.draws.append(_draw_record(d, buf, out, outcome if out else None, vset, p_in, p_out,
                                                 types, prof, extra, every))
                result.before.append(p_in)
                result.after.append(p_out)
                result.vertices_before.append(count)
                result.vertices_after.append(outcome.vertices_after if out is not None else count)
                result.draw_sets.append(k)
    perm = sorted(range(len(result.draws)), key=lambda i: (result.draws[i]["mesh"], result.draws[i]["primitive"]))
    for name in ("draws", "before", "after", "vertices_before", "vertices_after", "draw_sets"):
        setattr(result, name, [getattr(result, name)[i] for i in perm])
    result.seconds = time.perf_counter() - t0
    for vset in sets:
        if vset.locked and vset.locked != FROZEN:
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
        if not same_file(src_file, target):
            with contextlib.suppress(MissingFile):      # a missing file stays missing, as in the source
                files.append((target, read_external(source, uri, "external file")))
    return files


def _measure_decoded(packed, result: GltfResult, options) -> None:
    """Predictions of the draws whose indices went into a re-encoded ``TRIANGLES`` stream, from
    the decoded indices (the codec may rotate a triangle's corners)."""
    if not packed.reencoded:
        return
    doc = packed.doc
    for i, rec in enumerate(result.draws):
        prim = doc["meshes"][rec["mesh"]]["primitives"][rec["primitive"]]
        if "indices" not in prim:
            continue
        view = doc["accessors"][int(prim["indices"])].get("bufferView")
        if view is None or int(view) not in packed.reencoded:
            continue
        result.rotated[i] = int(view)
        flat = read_accessor(doc, packed.decoded, int(prim["indices"]))[0].reshape(-1).astype(np.int64)
        tris = strip_fan_to_list(flat, int(prim.get("mode", 4)))
        got = _prediction(tris, result.vertices_after[i], options.target.first)
        result.after[i] = got
        rec["after"] = {"profile": options.target.first.name, "invocations": got.invocations, "asr": got.asr,
                        "batches": got.batches}
        count = result.vertices_after[i]
        for p, inv in zip(options.target.evaluation_profiles(count), judged(tris, count, options.target), strict=True):
            rec["profiles"][p.name]["after"] = inv


def _predicts_more(rec: dict) -> bool:
    """Whether a draw's record predicts more invocations after than before, on any profile."""
    figures = list((rec.get("profiles") or {}).values()) or [
        {"before": rec["before"]["invocations"], "after": rec["after"]["invocations"]}]
    return any(f["after"] > f["before"] for f in figures)


def _changed_buffers(doc: dict, buffers: list, got: GltfFile) -> list[bool]:
    """Per output buffer: not the bytes of the input's buffer of the same URI."""
    before = {b.get("uri"): raw for b, raw in zip(got.doc.get("buffers", []), got.stored, strict=True)
              if b.get("uri") and raw is not None}
    return [raw is None or before.get(entry.get("uri")) != raw
            for entry, raw in zip(doc.get("buffers", []), buffers, strict=True)]


@dataclass
class _Written:
    """An output packaged but not yet stored: the main file, its side files, its document."""

    output: Path
    main: bytes
    side: list
    doc: dict
    size: int


def _package(editor: DocumentEditor, got: GltfFile, data: bytes, source: Path, output: Path,
             options, result: GltfResult, form: delivery.OutputForm, exact: set[int] | None) -> _Written:
    """Package the output (not stored yet); ``exact``: views compressed anew that must keep
    their triangles' corners as they are (``INDICES`` mode; None: every one)."""
    if not output.parent.is_dir():
        raise MeshError(f"{output}: directory {output.parent} does not exist")
    doc = got.doc
    same_kind = source.suffix.lower() == output.suffix.lower()
    side = None
    if not editor.changed and same_kind and not options.embed and not form.changed and form.new != "all":
        side = _copy_through(doc, data, source, output)
    if side is not None:
        main, out_doc = data, doc
    else:
        packed = delivery.deliver(editor, got, form, exact=exact)
        _measure_decoded(packed, result, options)
        changed = _changed_buffers(packed.doc, packed.buffers, got)
        main, side, notes = package_gltf(packed.doc, packed.buffers, source, output, changed=changed,
                                         source_bytes=data, embed=options.embed)
        result.notes += notes
        out_doc = packed.doc
        if form.new == "all" and not packed.streams:
            form = delivery.OutputForm(form.keep, form.new, form.extension, False, delivery.written_plain_note(got))
    result.files = [str(p) for p, _ in side]
    result.converted = form.changed
    if form.note:
        result.notes.append(form.note)
    result.bytes_before = _files_size(doc, source, len(data), {})
    result.bytes_after = _files_size(out_doc, output, len(main), {p: len(r) for p, r in side})
    return _Written(output, main, side, out_doc, result.bytes_after)


def _store(written: _Written, result: GltfResult) -> GltfResult:
    """Write the main file and its side files all or none (:func:`..io.gltf.file_packaging.write_file_set`:
    the main file appears last, once its side files are there)."""
    write_file_set([(written.output, written.main), *written.side])
    return result
