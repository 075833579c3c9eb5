"""Compressed delivery of an optimized glTF: what stays compressed, what gets compressed, and
the vertex keys the weld compares.

:func:`meshopt_batch.assets.gltf_optimization.optimize_gltf` asks this module four things:

* :func:`output_form`: how the file goes out.  ``compress=None`` (the default) writes what
  came in: a meshopt-compressed input comes out compressed with the same extension, modes
  and filters (new index buffers compressed too), a plain input plain, and a Draco input
  (``KHR_draco_mesh_compression``, decoded on reading) with ``EXT_meshopt_compression``,
  since Draco's encoder would not keep the optimized triangle order.  ``compress=True``
  (``--compress``) also compresses every other view (:mod:`meshopt_batch.io.gltf.compressed_views`
  says which mode each gets), after moving a plain or Draco input's accessors to one view
  per kind of data (:mod:`meshopt_batch.io.gltf.stream_grouping`); ``compress=False``
  (``--no-compress``) writes plain data;
* :func:`editor_units`: the alignment that keeps a compressed view's elements whole;
* :func:`weld_keys`: each vertex's key for the weld (:func:`meshopt_batch.vertices.weld.weld_records`):
  float attributes by value, normalized integers by value (``-128`` and ``-127`` are both
  ``-1.0`` in a signed byte), a filtered compressed attribute by its stored bytes (its
  decoders differ in the last bit, so only equal stored bytes are equal everywhere), and
  under ``weld_tolerance`` the float attributes other than positions and joints within it;
* :func:`deliver`: the output document and buffers, compressed as the form says, and the
  re-encoded ``TRIANGLES`` views (their decoded order is what the file draws).

References
----------
.. [1] Khronos, ``EXT_meshopt_compression`` / ``KHR_meshopt_compression``,
   ``KHR_draco_mesh_compression``, ``KHR_mesh_quantization``; glTF 2.0 specification,
   "Accessors" (normalized integers).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..io.gltf.byte_patching import DocumentEditor
from ..io.gltf.compressed_views import DEFAULT_EXTENSION, Packed, compression_plan, index_view_units, pack_streams
from ..io.gltf.draw_census import VertexSet
from ..io.gltf.gltf_document import GltfFile, read_accessor
from ..io.gltf.meshopt_streams import stored_buffers
from ..io.gltf.stream_grouping import regroup_views
from ..support.meshoptimizer_bindings import codecs
from ..vertices.weld import weld_records

__all__ = ["OutputForm", "SIZE_BUDGET", "deliver", "editor_units", "fixed_index_type", "output_form", "set_cost",
           "sets_to_keep", "size_budget", "weld_keys"]

#: A compressed input comes out at most this much larger (whole files): the optimized orders
#: may compress worse than the packer's; the vertex sets that save the fewest predicted
#: invocations per byte then keep their input form until the file fits.
SIZE_BUDGET = 1.02


@dataclass(frozen=True)
class OutputForm:
    """How a glTF goes out: ``keep`` the input's compressed views, compress ``new`` views
    (``"all"``, ``"new"``: views the optimization added, or ``"none"``) with ``extension``;
    ``changed``: the form differs from the input's (so the size rule does not apply);
    ``note``: a line for the report, or None."""

    keep: bool
    new: str
    extension: str
    changed: bool
    note: str | None = None


def output_form(got: GltfFile, compress: bool | None) -> OutputForm:
    """The output form for ``compress`` (None: as the input came; see the module docstring)."""
    compressed = bool(got.streams)
    extension = next((s.layout.extension for s in got.streams.values()), DEFAULT_EXTENSION)
    if compress is False:
        note = "written without compression (--no-compress)" if compressed or got.draco_primitives else None
        if got.draco_primitives:
            note = f"{got.draco.describe()} and {note}"
        return OutputForm(False, "none", extension, compressed or bool(got.draco_primitives), note)
    if got.draco_primitives:
        return OutputForm(True, "all", extension, True,
                          f"{got.draco.describe()} and written with "
                          f"{extension} (Draco's encoder would not keep the triangle order; --no-compress: plain)")
    if compress:
        return OutputForm(True, "all", extension, not compressed,
                          None if compressed else f"compressed with {extension} (--compress)")
    return OutputForm(True, "new" if compressed else "none", extension, False)


def written_plain_note(got: GltfFile) -> str:
    """The note when no buffer view comes out smaller compressed and the file goes out plain
    (a Draco input's names its decoding)."""
    if got.draco_primitives:
        return f"{got.draco.describe()} and written plain (no buffer view comes out smaller compressed)"
    return "--compress: no buffer view comes out smaller compressed; written plain"


def editor_units(got: GltfFile, form: OutputForm) -> dict[int, int]:
    """Buffer view -> the unit its layout keeps whole (compressed views; see
    :class:`meshopt_batch.io.gltf.byte_patching.DocumentEditor`)."""
    units = {}
    if form.new == "all":
        units.update(index_view_units(got.doc))
    if form.keep:
        units.update({vi: s.layout.unit for vi, s in got.streams.items()})
    return units


def fixed_index_type(got: GltfFile, form: OutputForm, accessor: int | None) -> bool:
    """Whether an index accessor keeps its type: it lives in a view kept compressed, whose
    stride is its index size."""
    if accessor is None or not form.keep:
        return False
    view = got.doc["accessors"][accessor].get("bufferView")
    return view is not None and int(view) in got.streams


def _tolerant(semantic: str) -> bool:
    return semantic != "POSITION" and not re.fullmatch(r"JOINTS_\d+", semantic)


def weld_keys(got: GltfFile, vset: VertexSet, count: int, *, tolerance: float = 0.0,
              stored: list[bytes] | None = None) -> np.ndarray:
    """Each vertex's weld record over every attribute of ``vset`` (see the module docstring)."""
    doc, buffers = got.doc, got.buffers
    semantics = list(vset.attributes) + [s for t in vset.targets for s in t]
    columns, tolerant = [], []
    for sem, a in zip(semantics, vset.accessors, strict=True):
        values, acc = read_accessor(doc, buffers, a)
        view = acc.get("bufferView")
        stream = got.streams.get(int(view)) if view is not None else None
        if stream is not None and stream.unfiltered is not None and stored is not None:
            raw, _ = read_accessor(doc, stored, a)
            columns.append(np.ascontiguousarray(raw).view(np.uint8).reshape(count, -1))
            tolerant.append(False)
            continue
        if acc.get("normalized") and values.dtype.kind in "iu":
            info = np.iinfo(values.dtype)
            if tolerance and _tolerant(sem):
                values = np.maximum(values.astype(np.float64) / info.max, -1.0)
            elif info.min < 0:
                values = np.maximum(values, -info.max)  # the most negative integer reads as -1.0 too
        columns.append(values)
        tolerant.append(_tolerant(sem))
    return weld_records(columns, count, tolerant=tolerant, tolerance=tolerance)


def stored_form(got: GltfFile) -> list[bytes] | None:
    """The buffers with filtered compressed views in their stored form (None: no filter)."""
    return stored_buffers(got.buffers, got.doc, got.streams)


def deliver(editor: DocumentEditor, got: GltfFile, form: OutputForm, *, exact: set[int] | None = frozenset()) -> Packed:
    """The output document and buffers in ``form`` (placeholders as None).  Index views in
    ``exact`` (None: all) that are compressed anew use ``INDICES`` mode, which keeps every
    index where it is: ``TRIANGLES`` may rotate a triangle's corners, and a kept input order
    must predict exactly what it did."""
    stored = stored_form(got) if form.keep else None
    twin = editor.replayed(stored) if stored is not None else None
    doc, buffers = editor.build()
    if form.new == "all" and not got.streams:
        doc, buffers = regroup_views(doc, buffers)
    stored_out = twin.build()[1] if twin is not None else None
    kept = {vi: s.layout for vi, s in got.streams.items()} if form.keep else {}
    n_source = len(got.doc.get("bufferViews", []))
    candidates = None if form.new == "all" else (
        set(range(n_source, len(doc.get("bufferViews", [])))) if form.new == "new" else set())
    plan = compression_plan(doc, kept=kept, candidates=candidates, extension=form.extension, exact=exact)
    placeholders = {i for i, raw in enumerate(got.stored) if raw is None}
    if not plan and not got.streams:
        return Packed(doc, buffers, buffers)
    return pack_streams(doc, buffers, plan, stored=stored_out, placeholders=placeholders,
                        sources=got.streams if form.keep else {})


def size_budget(got: GltfFile, form: OutputForm, bytes_before: int) -> int | None:
    """The most bytes a compressed input may come out as (:data:`SIZE_BUDGET`), or None
    when no budget applies (a plain input, or one written in another form)."""
    if not (form.keep and got.streams) or form.changed or form.new == "all":
        return None
    return int(bytes_before * SIZE_BUDGET)


def _encoded_rows(rows: np.ndarray, version: int) -> int:
    flat = np.ascontiguousarray(rows).view(np.uint8).reshape(rows.shape[0], -1)
    if flat.shape[0] == 0:
        return 0
    if flat.shape[1] % 4:
        flat = np.pad(flat, ((0, 0), (0, -flat.shape[1] % 4)))
    return len(codecs.encode_vertex_buffer_level(flat, 2, version))


def _encoded_indices(triangles: np.ndarray) -> int:
    flat = np.asarray(triangles, np.int64).reshape(-1)
    return len(codecs.encode_index_buffer(flat.astype(np.uint32))) if flat.size else 0


def set_cost(got: GltfFile, stored: list[bytes] | None, vset: VertexSet, source: np.ndarray | None,
             inputs: list[np.ndarray], outputs: list[np.ndarray]) -> int:
    """Bytes an optimized vertex set adds to the compressed streams, estimated by encoding its
    vertex rows and index buffers alone, as they were and as they are now (the streams
    themselves hold many sets; the sum of the parts tracks the whole within a few per cent)."""
    cost = 0
    for a in vset.accessors:
        rows, acc = read_accessor(got.doc, stored or got.buffers, a)
        view = acc.get("bufferView")
        stream = got.streams.get(int(view)) if view is not None else None
        if stream is None or source is None:
            continue
        version = stream.version or 0
        cost += _encoded_rows(rows[source], version) - _encoded_rows(rows, version)
    for before, after in zip(inputs, outputs, strict=True):
        cost += _encoded_indices(after) - _encoded_indices(before)
    return cost


def sets_to_keep(costs: list[tuple[int, int, int]], excess: int, kept: set[int]) -> set[int]:
    """Vertex sets to keep in their input form so the file shrinks by about ``excess`` bytes:
    those that save the fewest predicted invocations per byte they add, first.

    ``costs`` holds ``(set, invocations saved, bytes added)`` per optimized set."""
    out = set()
    for k, _gain, cost in sorted((c for c in costs if c[2] > 0 and c[0] not in kept),
                                key=lambda c: (c[1] / c[2], c[0])):
        if excess <= 0:
            break
        out.add(k)
        excess -= cost
    return out
