"""``meshopt-batch analyze``: predicted vertex-shader work of a mesh for each GPU profile.

``-p`` takes every target ``optimize`` takes (:func:`meshopt_batch.model.targets.get_target`):
``portable`` reports each of its profiles.  The core modules are imported when the command
runs, not with its parser (``meshopt-batch --help`` lists every command without them).
"""

from __future__ import annotations

import json

from ..options import add_profile, split_values
from .meshlets import add_analyze_option, analyze_rows, format_analyze


def add_parser(subparsers):
    p = subparsers.add_parser(
        "analyze", help="predict vertex-shader invocations, ASR, ACMR, ATVR and batches per profile",
        description="Predict vertex-shader work of MESH with the batch model of paper 001 "
        "(Algorithm 1) for each profile. A file with several index buffers (glTF primitives) "
        "is reported as the sum of its draws, and each draw on its own (--json: \"primitives\").",
    )
    p.add_argument("mesh", help="OBJ, PLY, OFF, STL, glTF or GLB file")
    add_profile(p, multiple=True, default_help="every built-in profile, and nvidia_gl+16bit when an index "
                "buffer addresses more than 2^16 vertices")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_analyze_option(p)
    p.add_argument("--overdraw", action="store_true",
                   help="also the overdraw of the draws in their order: shaded fragments / covered pixels "
                   "under early-Z on the project's raster, over 16 orthographic views at 256x256 (the 6 axis "
                   "views, then 10 seeded random ones; pipeline_model.overdraw)")
    p.set_defaults(func=run)


def _row(prof, invocations: int, batches: int, triangles: int, vertices: int) -> dict:
    asr = invocations / triangles if triangles else 0.0
    return {"profile": prof.name, "invocations": invocations, "asr": asr, "acmr": asr,
            "atvr": invocations / vertices if vertices else 0.0, "batches": batches}


def primitive_rows(meshes, profiles) -> list[dict]:
    """One record per index buffer (draw): name, glTF mesh and primitive numbers, triangles,
    vertices, and a result row per profile."""
    from meshopt_batch.model.prediction import predict  # lazy: the parser needs no core module

    out = []
    for i, mesh in enumerate(meshes):
        results = []
        for prof in profiles:
            pred = predict(mesh.triangles, mesh.vertex_count, profile=prof)
            results.append(_row(prof, pred.invocations, pred.batches, pred.triangles, pred.vertices))
            results[-1]["_vertices"] = pred.vertices
        out.append({"name": mesh.name, "mesh": int(mesh.meta.get("gltf_mesh", i)),
                    "primitive": int(mesh.meta.get("gltf_primitive", 0)), "triangles": mesh.triangle_count,
                    "vertices": mesh.vertex_count, "results": results})
    return out


def summed_rows(primitives, profiles) -> list[dict]:
    """The draws' predictions summed per profile (the file's figures)."""
    rows = []
    for k, prof in enumerate(profiles):
        parts = [p["results"][k] for p in primitives]
        rows.append(_row(prof, sum(r["invocations"] for r in parts), sum(r["batches"] for r in parts),
                         sum(p["triangles"] for p in primitives), sum(r["_vertices"] for r in parts)))
    for p in primitives:
        for r in p["results"]:
            del r["_vertices"]
    return rows


def analyze_meshes(meshes, profiles) -> list[dict]:
    """Sum the predictions of every index buffer (draw) for each profile (Profile objects)."""
    return summed_rows(primitive_rows(meshes, profiles), profiles)


def analyzed_profiles(target, vertex_counts: list[int]) -> list:
    """The profiles ``analyze`` reports: those of ``target`` (a
    :class:`~meshopt_batch.model.targets.Target`, from ``-p``), else (None) every built-in profile.

    When an index buffer addresses more than 2^16 vertices, the default and a target of several
    profiles also get the ``+16bit`` form of NVIDIA's look-back profiles (the 2^16 block rule,
    measured on an H100): the default adds ``nvidia_gl+16bit``, a target every form
    :meth:`~meshopt_batch.model.targets.Target.evaluation_profiles` judges such a buffer on.  A
    single named profile is reported as named.
    """
    from meshopt_batch.model.profiles import builtin_profile_names, get_profile  # lazy: the parser needs no core module
    from meshopt_batch.model.targets import BLOCK_16BIT, block_rule_form  # lazy: the parser needs no core module

    if target is not None and target.single:
        return list(target.profiles)
    profiles = list(target.profiles) if target is not None else [get_profile(s) for s in builtin_profile_names()]
    largest = max(vertex_counts, default=0)
    if largest > BLOCK_16BIT:
        names = {p.name for p in profiles}
        extra = [r for r in (block_rule_form(p, largest) for p in profiles) if r.name not in names]
        profiles += extra if target is not None else [r for r in extra if r.name == "nvidia_gl+16bit"]
    return profiles


def run(args) -> int:
    from meshopt_batch.geometry.mesh_record import concatenate  # lazy: the parser needs no core module
    from meshopt_batch.io import load_draws  # lazy: the parser needs no core module
    from meshopt_batch.model.targets import get_target  # lazy: the parser needs no core module

    named = split_values(args.profile)
    target = get_target(named) if named else None       # a bad name fails before the file is read
    meshes, notes = load_draws(args.mesh)
    profiles = analyzed_profiles(target, [m.vertex_count for m in meshes])
    primitives = primitive_rows(meshes, profiles)
    results = summed_rows(primitives, profiles)
    out = {"mesh": args.mesh, "triangles": sum(m.triangle_count for m in meshes),
           "vertices": sum(m.vertex_count for m in meshes), "results": results, "primitives": primitives}
    if notes:
        out["notes"] = notes
    if args.meshlets and meshes:
        out["meshlets"] = analyze_rows(meshes, args.meshlets)
    if args.overdraw and meshes:
        from pipeline_model.overdraw import mesh_overdraw  # lazy: the raster loads only for --overdraw

        out["overdraw"] = mesh_overdraw(meshes[0] if len(meshes) == 1 else concatenate(meshes)).overdraw
    if args.json:
        print(json.dumps(out))
        return 0
    print(f"{args.mesh}: {out['triangles']} triangles, {out['vertices']} vertices"
          + (f" in {len(meshes)} index buffers" if len(meshes) > 1 else ""))
    for note in notes:
        print(f"note: {note}")
    if not meshes:
        return 0
    print(f"{'profile':<16}{'invocations':>12}{'ASR':>8}{'ACMR':>8}{'ATVR':>8}{'batches':>9}")
    for r in results:
        print(f"{r['profile']:<16}{r['invocations']:>12}{r['asr']:>8.3f}{r['acmr']:>8.3f}"
              f"{r['atvr']:>8.3f}{r['batches']:>9}")
    if args.meshlets:
        print(format_analyze(out["meshlets"]))
    if "overdraw" in out:
        print(f"overdraw {out['overdraw']:.4f} (shaded fragments per covered pixel, early-Z, 16 views)")
    return 0
