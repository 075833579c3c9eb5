"""Optimizing a whole mesh file: every index buffer of it, written back as one file.

:func:`optimize_file` is what ``meshopt-batch optimize MESH -o OUT`` runs and what a library
run (``optimize DIR -o OUTDIR``) runs for each file: load every index buffer (each glTF
triangle primitive on its own, as a GPU draws them), reorder each with the chosen method for
the target profile, and write the output atomically (a glTF written from a glTF keeps the
input's structure).  :class:`AssetOptions` holds the choices, already resolved into objects;
:class:`AssetReport` holds the figures the command prints.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from .errors import MeshoptBatchError
from .io import load_meshes, save_mesh
from .mesh import Mesh
from .optimizers import Method, optimize
from .profiles import Profile
from .reuse import predict

__all__ = ["AssetOptions", "AssetReport", "WRITABLE_SUFFIXES", "optimize_file", "optimize_meshes"]

#: Output formats :func:`optimize_file` writes.
WRITABLE_SUFFIXES = (".obj", ".ply", ".glb", ".gltf")


@dataclass(frozen=True)
class AssetOptions:
    """What to do with every index buffer of a file.

    Attributes
    ----------
    method : Method
        Triangle-order optimizer (:func:`meshopt_batch.optimizers.get_method`).
    profile : Profile
        Target GPU profile (:func:`meshopt_batch.profiles.get_profile`).
    method_params : dict
        Keyword options of the method (e.g. ``use_distance`` for ``batch``).
    """

    method: Method
    profile: Profile
    method_params: dict = field(default_factory=dict)


@dataclass
class AssetReport:
    """Figures of one optimized file (the ``optimize --json`` object, see :meth:`to_dict`)."""

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

    def to_dict(self, *, primitives: bool = True) -> dict:
        out = {"mesh": self.source, "output": self.output, "method": self.method, "profile": self.profile,
               "triangles": self.triangles, "vertices_before": self.vertices_before,
               "vertices_after": self.vertices_after, "before": self.before, "after": self.after,
               "seconds": self.seconds}
        if self.before_16bit is not None:
            out["before_16bit"] = self.before_16bit
            out["after_16bit"] = self.after_16bit
        if primitives:
            out["primitives"] = self.primitives
        return out


def totals(meshes: list[Mesh], profile: Profile) -> dict:
    """Predicted figures of a file's draws together under ``profile`` (paper 001, Algorithm 1)."""
    inv = batches = tris = verts = 0
    for mesh in meshes:
        pred = predict(mesh.triangles, mesh.vertex_count, profile=profile)
        inv += pred.invocations
        batches += pred.batches
        tris += pred.triangles
        verts += pred.vertices
    asr = inv / tris if tris else 0.0
    return {"profile": profile.name, "invocations": inv, "asr": asr, "acmr": asr,
            "atvr": inv / verts if verts else 0.0, "batches": batches}


def optimize_meshes(meshes: list[Mesh], options: AssetOptions) -> tuple[list[Mesh], list[dict]]:
    """Every index buffer optimized on its own; returns the new meshes and a record per buffer."""
    out, records = [], []
    for mesh in meshes:
        result = optimize(mesh.triangles, mesh.vertex_count, method=options.method,
                          profile=options.profile, **options.method_params)
        new = result.apply(mesh)
        record = {"name": mesh.name, "triangles": mesh.triangle_count, "vertices_before": mesh.vertex_count}
        if options.method.name == "batch":
            record["vertex_copies"] = int(result.stats.get("vertex_copies", 0))
            record["renumbered"] = bool(result.stats.get("renumbered", False))
        record["vertices_after"] = new.vertex_count
        out.append(new)
        records.append(record)
    return out, records


def optimize_file(source: str | Path, output: str | Path, options: AssetOptions) -> AssetReport:
    """Optimize every index buffer of ``source`` and write ``output`` (format from its suffix).

    Raises
    ------
    MeshoptBatchError
        An unreadable input, an unwritable output or a suffix that cannot be written (one line).
    """
    src_path, out_path = Path(source), Path(output)
    if out_path.suffix.lower() not in WRITABLE_SUFFIXES:
        raise MeshoptBatchError(f"{out_path}: cannot write {out_path.suffix or '(no extension)'!r}; "
                                "use .obj, .ply, .glb or .gltf")
    meshes = load_meshes(src_path)
    t0 = time.perf_counter()
    new_meshes, records = optimize_meshes(meshes, options)
    seconds = time.perf_counter() - t0
    prof = options.profile
    write_back = (src_path.suffix.lower() in (".glb", ".gltf") and out_path.suffix.lower() in (".glb", ".gltf"))
    save_mesh(new_meshes if len(new_meshes) > 1 else new_meshes[0], out_path,
              source=src_path if write_back else None)
    report = AssetReport(
        source=str(src_path), output=str(out_path), method=options.method.name, profile=prof.name,
        triangles=sum(m.triangle_count for m in meshes),
        vertices_before=sum(m.vertex_count for m in meshes),
        vertices_after=sum(m.vertex_count for m in new_meshes),
        before=totals(meshes, prof), after=totals(new_meshes, prof), seconds=seconds, primitives=records)
    if prof.memory in ("lookback", "lookback_dx") and not prof.boundary_16bit and any(
            m.vertex_count > (1 << 16) for m in meshes + new_meshes):
        p16 = prof.with_16bit_boundaries(True)
        report.before_16bit, report.after_16bit = totals(meshes, p16), totals(new_meshes, p16)
    return report
