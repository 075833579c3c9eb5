"""Optimizing a whole mesh file: every index buffer of it, written back as one asset.

:func:`optimize_file` is what ``meshopt-batch optimize MESH -o OUT`` runs and what a library
run (``optimize DIR -o OUTDIR``) runs for each file.  Every vertex buffer of the file is
optimized with the index buffers drawn from it (:func:`meshopt_batch.vertices.vertex_set.optimize_vertex_set`):
vertices equal by value welded, each index buffer reordered by the chosen method for the
target (``portable`` unless a profile is named: :mod:`meshopt_batch.model.targets`) and kept in its
input order unless the new order predicts fewer invocations (on every profile of the
target), vertices renumbered in first-use order where no index-keyed reuse rule objects.
The output is written atomically:

* a glTF written from a glTF keeps the input's document: only the changed accessors are
  rewritten, shared data stays shared, external files stay external
  (:mod:`meshopt_batch.assets.gltf_optimization`);
* any other combination goes through :func:`meshopt_batch.io.load_meshes` and
  :func:`meshopt_batch.io.save_mesh` (one mesh per index buffer).

:class:`AssetOptions` holds the choices, already resolved into objects (:func:`asset_options`
resolves names); :class:`AssetReport` holds the figures the command prints.  From Python::

    from meshopt_batch import optimize_file
    report = optimize_file("in.glb", "out.glb")                       # portable target
    report = optimize_file("in.glb", "out.glb", profile="nvidia_gl")  # one GPU family
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..geometry.mesh_record import Mesh
from ..io import load_meshes, save_mesh
from ..model.prediction import Prediction, predict
from ..model.profiles import Profile
from ..model.targets import Target, get_target
from ..optimizers import DEFAULT_METHOD, DEFAULT_PROFILE, Method, get_method
from ..support.errors import MeshoptBatchError
from ..vertices.vertex_set import SetOptions, optimize_vertex_set
from ..vertices.weld import weld_records
from .gltf_optimization import optimize_gltf

__all__ = ["AssetOptions", "AssetReport", "WRITABLE_SUFFIXES", "asset_options", "optimize_file", "optimize_meshes"]

#: Output formats :func:`optimize_file` writes.
WRITABLE_SUFFIXES = (".obj", ".ply", ".glb", ".gltf")
GLTF_SUFFIXES = (".glb", ".gltf")
#: The output may be this much larger than the input, on top of what the optimization adds.
SIZE_TOLERANCE = 0.01


@dataclass(frozen=True)
class AssetOptions:
    """What to do with every index buffer of a file.

    Attributes
    ----------
    method : Method
        Triangle-order optimizer (:func:`meshopt_batch.optimizers.get_method`).
    target : Target
        The profiles the orders are made for (:func:`meshopt_batch.model.targets.get_target`).
    method_params : dict
        Keyword options of the method (e.g. ``use_distance`` for ``batch``).
    weld : bool
        Merge vertices equal by value (:func:`meshopt_batch.vertices.weld.weld_records`); non-indexed
        primitives get an index buffer (``--no-weld``).
    vertex_order : bool
        Renumber vertices in first-use order (``--keep-vertex-order`` turns it off).
    keep_index_type : bool
        Keep each index buffer's input index type instead of the smallest that fits.
    drop_degenerate : bool
        Remove triangles with a repeated index (counted either way).
    embed : bool
        ``.gltf`` output: buffers and images as ``data:`` URIs instead of external files.
    compress : bool or None
        glTF output (other formats ignore it): None writes what came in (a meshopt-compressed
        input compressed the same way, a Draco input with ``EXT_meshopt_compression``, a
        plain input plain); True also compresses the rest with ``EXT_meshopt_compression``
        (``--compress``); False writes plain data (``--no-compress``).  See
        :mod:`meshopt_batch.assets.gltf_delivery`.
    weld_tolerance : float
        Also weld vertices whose float attributes other than positions and joints differ by
        at most this much per component (``--weld-tolerance``; 0: by value only).
    """

    method: Method
    target: Target
    method_params: dict = field(default_factory=dict)
    weld: bool = True
    vertex_order: bool = True
    keep_index_type: bool = False
    drop_degenerate: bool = False
    embed: bool = False
    compress: bool | None = None
    weld_tolerance: float = 0.0

    def __post_init__(self):
        if not isinstance(self.target, Target):   # a Profile (one GPU family) is a target too
            object.__setattr__(self, "target", get_target(self.target))


@dataclass
class AssetReport:
    """Figures of one optimized file (the ``optimize --json`` object, see :meth:`to_dict`).

    Attributes
    ----------
    source, output : str
        The input and output paths.
    method : str
        The optimization method.
    profile : str
        The target's first profile, which ``before`` and ``after`` are given for.
    triangles : int
        Triangles in the file.
    vertices_before, vertices_after : int
        Vertices in the input and in the output (welding and copies change them).
    before, after : dict
        Predicted figures of the file's draws together on ``profile`` (invocations, ASR,
        ACMR, ATVR, batches).
    seconds : float
        Time taken.
    primitives : list of dict
        One record per draw (index buffer, glTF primitive): its predicted invocations before
        and after on ``profile`` and on each profile of the target.
    before_16bit, after_16bit : dict or None
        The same figures under NVIDIA's 2^16 block rule, where a buffer passes 2^16 vertices.
    notes : list of str
        One line per thing passed through or kept.
    files : list
        The files written (the output and its external files).
    bytes_before, bytes_after : int
        The input's and the output's files together (external buffers and images included).
    size_limit : int or None
        The most the output may take: 1% above the input plus what the optimization adds.
    target : str
        The target's name.
    profiles : dict
        The file's invocations per profile of the target, ``{"before": .., "after": ..}``.
    """

    source: str
    output: str
    method: str
    profile: str
    triangles: int
    vertices_before: int
    vertices_after: int
    before: dict
    after: dict
    seconds: float
    primitives: list
    before_16bit: dict | None = None
    after_16bit: dict | None = None
    notes: list = field(default_factory=list)
    files: list = field(default_factory=list)
    bytes_before: int = 0
    bytes_after: int = 0
    size_limit: int | None = None
    target: str = ""
    profiles: dict = field(default_factory=dict)

    def to_dict(self, *, primitives: bool = True) -> dict:
        """The report as the JSON object ``optimize --json`` prints.

        Parameters
        ----------
        primitives : bool, keyword-only
            Include the per-draw records.

        Returns
        -------
        dict
            The figures by name.
        """
        out = {"mesh": self.source, "output": self.output, "method": self.method, "profile": self.profile,
               "target": self.target or self.profile, "triangles": self.triangles,
               "vertices_before": self.vertices_before, "vertices_after": self.vertices_after,
               "before": self.before, "after": self.after, "profiles": self.profiles, "seconds": self.seconds}
        if self.before_16bit is not None:
            out["before_16bit"] = self.before_16bit
            out["after_16bit"] = self.after_16bit
        if primitives:
            out["primitives"] = self.primitives
        out["notes"] = self.notes
        out["files"] = self.files
        out["bytes_before"] = self.bytes_before
        out["bytes_after"] = self.bytes_after
        out["size_limit"] = self.size_limit
        return out


def summed(predictions: list[Prediction], profile: Profile) -> dict:
    """Predicted figures of a file's draws together (paper 001, Algorithm 1, summed)."""
    inv = sum(p.invocations for p in predictions)
    tris = sum(p.triangles for p in predictions)
    verts = sum(p.vertices for p in predictions)
    asr = inv / tris if tris else 0.0
    return {"profile": profile.name, "invocations": inv, "asr": asr, "acmr": asr,
            "atvr": inv / verts if verts else 0.0, "batches": sum(p.batches for p in predictions)}


def totals(meshes: list[Mesh], profile: Profile) -> dict:
    """Predicted figures of a file's draws together under ``profile`` (paper 001, Algorithm 1)."""
    return summed([predict(m.triangles, m.vertex_count, profile=profile) for m in meshes], profile)


def profile_totals(records: list[dict]) -> dict:
    """A file's invocations per profile of the target, before and after, summed over its draws."""
    out: dict = {}
    for rec in records:
        for name, pair in rec.get("profiles", {}).items():
            t = out.setdefault(name, {"before": 0, "after": 0})
            t["before"] += pair["before"]
            t["after"] += pair["after"]
    return out


def _set_options(options: AssetOptions) -> SetOptions:
    return SetOptions(options.method, options.target, dict(options.method_params), weld=options.weld,
                      vertex_order=options.vertex_order, drop_degenerate=options.drop_degenerate)


def optimize_meshes(meshes: list[Mesh], options: AssetOptions, progress=None) -> tuple[list[Mesh], list[dict]]:
    """Every mesh (one vertex buffer, one index buffer) optimized on its own; returns the new
    meshes and a record per mesh (``progress``: see :func:`optimize_file`)."""
    out, records = [], []
    prof = options.target.first
    if progress is not None:
        progress(0, len(meshes))
    for mesh in meshes:
        records_in = None
        if options.weld:
            keys = sorted(mesh.attributes)
            records_in = weld_records([mesh.positions] + [mesh.attributes[k] for k in keys], mesh.vertex_count,
                                      tolerant=[False] + [not k.startswith("joints") for k in keys],
                                      tolerance=options.weld_tolerance)
        outcome = optimize_vertex_set(records_in, [mesh.triangles], mesh.vertex_count, _set_options(options),
                                      positions=mesh.positions)
        buf = outcome.buffers[0]
        if outcome.source is None:
            new = mesh.with_triangles(buf.triangles)
        else:
            new = mesh.with_vertices(outcome.source, buf.triangles)
        if not options.keep_index_type:
            new = new.replace(index_dtype=np.uint16 if new.vertex_count <= 0xFFFF else np.uint32)
        record = {"name": mesh.name, "mesh": int(mesh.meta.get("gltf_mesh", 0)),
                  "primitive": int(mesh.meta.get("gltf_primitive", 0)), "triangles": mesh.triangle_count,
                  "vertices_before": mesh.vertex_count}
        if options.method.name == "batch":
            record["vertex_copies"] = outcome.copies
            record["renumbered"] = outcome.source is not None
        record["vertices_after"] = new.vertex_count
        record["before"] = {"profile": prof.name, "invocations": buf.before,
                            "asr": buf.before / mesh.triangle_count if mesh.triangle_count else 0.0}
        record["after"] = {"profile": prof.name, "invocations": buf.after,
                           "asr": buf.after / new.triangle_count if new.triangle_count else 0.0}
        record["profiles"] = {name: {"before": b, "after": a} for (name, b), a in
                              zip(buf.before_all.items(), buf.after_all.values(), strict=True)}
        record.update(order=buf.order, vertex_order=outcome.vertex_order, welded=outcome.merged,
                      fetch_gap_before=outcome.fetch_gap_before, fetch_gap_after=outcome.fetch_gap_after,
                      fetch_gap_kept_order=outcome.fetch_gap_kept_order,
                      degenerate=buf.degenerate_before, degenerate_dropped=buf.dropped)
        out.append(new)
        records.append(record)
        if progress is not None:
            progress(len(out), len(meshes))
    return out, records


def _optimize_mesh_file(src_path: Path, out_path: Path, options: AssetOptions, progress=None) -> AssetReport:
    meshes = load_meshes(src_path)
    t0 = time.perf_counter()
    new_meshes, records = optimize_meshes(meshes, options, progress)
    seconds = time.perf_counter() - t0
    prof = options.target.first
    save_mesh(new_meshes if len(new_meshes) > 1 else new_meshes[0], out_path)
    report = AssetReport(
        source=str(src_path), output=str(out_path), method=options.method.name, profile=prof.name,
        target=options.target.name, profiles=profile_totals(records),
        triangles=sum(m.triangle_count for m in meshes),
        vertices_before=sum(m.vertex_count for m in meshes),
        vertices_after=sum(m.vertex_count for m in new_meshes),
        before=totals(meshes, prof), after=totals(new_meshes, prof), seconds=seconds, primitives=records,
        bytes_before=src_path.stat().st_size, bytes_after=out_path.stat().st_size)
    _add_16bit(report, options.target, [(m.triangles, m.vertex_count) for m in meshes],
               [(m.triangles, m.vertex_count) for m in new_meshes])
    return report


def _add_16bit(report: AssetReport, target: Target, before: list, after: list) -> None:
    """The 2^16-boundary totals of an NVIDIA look-back profile once a buffer exceeds 2^16
    vertices (a target of several profiles judges them so in ``profiles`` already)."""
    prof = target.first
    if target.single and prof.memory in ("lookback", "lookback_dx") and not prof.boundary_16bit and any(
            v > (1 << 16) for _, v in before + after):
        p16 = prof.with_16bit_boundaries(True)
        report.before_16bit = summed([predict(t, v, profile=p16) for t, v in before], p16)
        report.after_16bit = summed([predict(t, v, profile=p16) for t, v in after], p16)


def _optimize_gltf_file(src_path: Path, out_path: Path, options: AssetOptions, progress=None) -> AssetReport:
    res = optimize_gltf(src_path, out_path, options, progress)
    prof = options.target.first
    report = AssetReport(
        source=str(src_path), output=str(out_path), method=options.method.name, profile=prof.name,
        target=options.target.name, profiles=profile_totals(res.draws),
        triangles=sum(p.triangles for p in res.before), vertices_before=sum(res.vertices_before),
        vertices_after=sum(res.vertices_after), before=summed(res.before, prof), after=summed(res.after, prof),
        seconds=res.seconds, primitives=res.draws, notes=res.notes, files=res.files,
        bytes_before=res.bytes_before, bytes_after=res.bytes_after,
        size_limit=res.size_budget if res.size_budget is not None else None if options.embed or res.converted
        else int(res.bytes_before * (1 + SIZE_TOLERANCE)) + res.added_bytes)
    if any(v > (1 << 16) for v in res.vertices_before + res.vertices_after):
        report.notes.append("buffers over 2^16 vertices: see before_16bit/after_16bit")
    return report


def asset_options(*, method: str | Method = DEFAULT_METHOD, profile=DEFAULT_PROFILE, method_params=None,
                  **choices) -> AssetOptions:
    """:class:`AssetOptions` from names: ``method`` and ``profile`` (a profile, ``"portable"``
    or a set such as ``"nvidia_gl,amd"``) resolved once here; ``choices`` are the other fields
    (``weld``, ``vertex_order``, ``keep_index_type``, ``drop_degenerate``, ``embed``...).

    Raises
    ------
    MeshoptBatchError
        An unknown method, profile or option.
    """
    unknown = set(choices) - (set(AssetOptions.__dataclass_fields__) - {"method", "target", "method_params"})
    if unknown:
        raise MeshoptBatchError(f"unknown option(s) {sorted(unknown)} (known: "
                                f"{', '.join(sorted(set(AssetOptions.__dataclass_fields__) - {'target'}))}, profile)")
    return AssetOptions(get_method(method), get_target(profile), dict(method_params or {}), **choices)


def optimize_file(source: str | Path, output: str | Path, options: AssetOptions | None = None, *,
                  progress=None, **choices) -> AssetReport:
    """Optimize every index buffer of ``source`` and write ``output`` (format from its suffix).

    Parameters
    ----------
    source, output : str or Path
        Input and output files (OBJ, PLY, OFF, STL, glTF, GLB in; OBJ, PLY, glTF, GLB out).
    options : AssetOptions, optional
        Every choice, resolved (the command line builds one); or give them by keyword.
    progress : callable, keyword-only, optional
        Called as ``progress(done, total)``: the vertex buffers optimized so far and their
        number, before the first and after each (a command line's progress bar).
    **choices
        Without ``options``: :func:`asset_options`' keywords, e.g. ``profile="nvidia_gl"``
        (default ``"portable"``), ``method="batch"``, ``weld=False``.

    Returns
    -------
    AssetReport
        Predicted invocations before and after (``profiles``: per profile of the target),
        vertices, bytes, notes, per-draw records.

    Raises
    ------
    MeshoptBatchError
        An unreadable input, an unwritable output or a suffix that cannot be written (one line).

    Examples
    --------
    >>> from meshopt_batch import optimize_file
    >>> report = optimize_file("DamagedHelmet.glb", "shipped.glb")     # doctest: +SKIP
    >>> amd = report.profiles["amd"]                                  # doctest: +SKIP
    >>> amd["after"] <= amd["before"]                                 # doctest: +SKIP
    True
    """
    if options is None:
        options = asset_options(**choices)
    elif choices:
        raise MeshoptBatchError("give optimize_file either an AssetOptions or keyword options, not both")
    src_path, out_path = Path(source), Path(output)
    if out_path.suffix.lower() not in WRITABLE_SUFFIXES:
        raise MeshoptBatchError(f"{out_path}: cannot write {out_path.suffix or '(no extension)'!r}; "
                                "use .obj, .ply, .glb or .gltf")
    if options.embed and out_path.suffix.lower() != ".gltf":
        raise MeshoptBatchError("--embed applies to .gltf output only (a .glb is always one file)")
    if src_path.suffix.lower() in GLTF_SUFFIXES and out_path.suffix.lower() in GLTF_SUFFIXES:
        if not src_path.is_file():
            raise MeshoptBatchError(f"{src_path}: no such file" if not src_path.exists() else f"{src_path}: not a file")
        return _optimize_gltf_file(src_path, out_path, options, progress)
    return _optimize_mesh_file(src_path, out_path, options, progress)
