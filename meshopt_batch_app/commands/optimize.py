"""``meshopt-batch optimize``: reorder a mesh's triangles for a GPU profile and write it.

Every index buffer of the file (each glTF triangle primitive) is optimized on its own, as a
GPU draws them.  The batch method may append vertex copies (the 16-bit boundary fix of paper
001); every attribute of a copied vertex is copied with its position, so the written mesh
renders the same image.  With a profile whose memory is direct-mapped (``llvmpipe``) the
vertices are also renumbered (:func:`~meshopt_batch.optimizers.renumber.renumber_for_direct_cache`).

The output format comes from the extension of ``-o`` (.obj, .ply, .glb, .gltf); a glTF
written from a glTF input keeps the input's structure (nodes, materials, ...).  The write is
atomic: on any error no output file is left behind.
"""

from __future__ import annotations

import json
import time
from pathlib import Path


from meshopt_batch.errors import MeshoptBatchError
from meshopt_batch.io import load_meshes, save_mesh
from meshopt_batch.optimizers import DEFAULT_METHOD, get_method, optimize
from meshopt_batch.profiles import get_profile
from meshopt_batch.reuse import predict

from ..options import add_method, add_profile

DEFAULT_PROFILE = "nvidia_gl"


def add_parser(subparsers):
    p = subparsers.add_parser(
        "optimize", help="reorder triangles for a GPU profile and write the mesh",
        description="Reorder the triangles of MESH (each index buffer on its own) with the batch "
        "optimizer of paper 001 (Algorithm 2) or a classic method, print the predicted ASR before "
        "and after for the target profile, and write OUT (format from its extension).",
    )
    p.add_argument("mesh", help="OBJ, PLY, OFF, STL, glTF or GLB file")
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="output file: .obj, .ply, .glb or .gltf")
    add_method(p, multiple=False, default_help=DEFAULT_METHOD)
    add_profile(p, multiple=False, default_help=DEFAULT_PROFILE)
    p.add_argument("--no-distance", action="store_true",
                   help="batch: the faster variant without the face-distance term D (k_v = k_n = -3)")
    p.add_argument("--keep-16bit-boundaries", action="store_true",
                   help="batch: skip the 16-bit boundary fix (no vertex copies) on NVIDIA profiles")
    p.add_argument("--no-lookahead", action="store_true",
                   help="batch: emit only the queue's top triangle, as the paper's Algorithm 2 prints it "
                   "(no lookahead among two-vertex candidates, no small-component filling)")
    p.add_argument("--queue", choices=("fast", "fibheap"), default="fast",
                   help="batch: compiled bucket queue (default) or the fibheap package (slow reference)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def _totals(meshes, profile) -> dict:
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


def optimize_one(mesh, method, profile, **params):
    """Optimize one :class:`~meshopt_batch.mesh.Mesh`; returns ``(new_mesh, info)``."""
    result = optimize(mesh.triangles, mesh.vertex_count, method=method, profile=profile, **params)
    out = result.apply(mesh)
    info = {"name": mesh.name, "triangles": mesh.triangle_count, "vertices_before": mesh.vertex_count}
    if method.name == "batch":
        info["vertex_copies"] = int(result.stats.get("vertex_copies", 0))
        info["renumbered"] = bool(result.stats.get("renumbered", False))
    info["vertices_after"] = out.vertex_count
    return out, info


def run(args) -> int:
    method = get_method(args.method or DEFAULT_METHOD)
    prof = get_profile(args.profile or DEFAULT_PROFILE)
    out_path = Path(args.output)
    src_path = Path(args.mesh)
    if out_path.suffix.lower() not in (".obj", ".ply", ".glb", ".gltf"):
        raise MeshoptBatchError(f"{out_path}: cannot write {out_path.suffix or '(no extension)'!r}; "
                                "use .obj, .ply, .glb or .gltf")
    options = {}
    if method.name == "batch":
        options = {"use_distance": not args.no_distance, "queue": args.queue}
        if args.keep_16bit_boundaries:
            options["fix_16bit"] = False
        if args.no_lookahead:
            options["lookahead"] = False
            options["fill_small"] = False
    elif args.no_distance or args.keep_16bit_boundaries or args.no_lookahead or args.queue != "fast":
        raise MeshoptBatchError("--no-distance, --keep-16bit-boundaries, --no-lookahead and --queue "
                                "apply to --method batch only")
    meshes = load_meshes(src_path)
    t0 = time.perf_counter()
    results = [optimize_one(m, method, prof, **options) for m in meshes]
    seconds = time.perf_counter() - t0
    new_meshes = [r[0] for r in results]
    before = _totals(meshes, prof)
    after = _totals(new_meshes, prof)
    source = src_path if (src_path.suffix.lower() in (".glb", ".gltf")
                          and out_path.suffix.lower() in (".glb", ".gltf")) else None
    save_mesh(new_meshes if len(new_meshes) > 1 else new_meshes[0], out_path, source=source)
    out = {
        "mesh": str(src_path), "output": str(out_path), "method": method.name, "profile": prof.name,
        "triangles": sum(m.triangle_count for m in meshes),
        "vertices_before": sum(m.vertex_count for m in meshes),
        "vertices_after": sum(m.vertex_count for m in new_meshes),
        "before": before, "after": after, "seconds": seconds,
    }
    sixteen = prof.memory in ("lookback", "lookback_dx") and not prof.boundary_16bit and any(
        m.vertex_count > (1 << 16) for m in meshes + new_meshes)
    if sixteen:
        p16 = prof.with_16bit_boundaries(True)
        out["before_16bit"] = _totals(meshes, p16)
        out["after_16bit"] = _totals(new_meshes, p16)
    if len(meshes) > 1 or args.json:
        out["primitives"] = [info for _, info in results]
    if args.json:
        print(json.dumps(out))
        return 0
    print(f"{src_path}: {out['triangles']} triangles, {out['vertices_before']} vertices"
          + (f" in {len(meshes)} index buffers" if len(meshes) > 1 else ""))
    print(f"method {method.name}, profile {prof.name}: optimized in {seconds:.2f} s")
    print(f"{'':<8}{'invocations':>12}{'ASR':>8}{'ATVR':>8}{'batches':>9}")
    for label, r in (("before", before), ("after", after)):
        print(f"{label:<8}{r['invocations']:>12}{r['asr']:>8.3f}{r['atvr']:>8.3f}{r['batches']:>9}")
    if sixteen:
        print(f"with the 2^16-boundary model ({prof.name}+16bit): before ASR "
              f"{out['before_16bit']['asr']:.3f}, after {out['after_16bit']['asr']:.3f}")
    if out["vertices_after"] != out["vertices_before"]:
        print(f"vertices: {out['vertices_before']} -> {out['vertices_after']} "
              "(copies appended by the 16-bit boundary fix)")
    print(f"wrote {out_path}")
    return 0
