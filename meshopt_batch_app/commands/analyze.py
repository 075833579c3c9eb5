"""``meshopt-batch analyze``: predicted vertex-shader work of a mesh for each GPU profile."""

from __future__ import annotations

import json

from meshopt_batch.io import load_meshes
from meshopt_batch.profiles import builtin_profile_names, get_profile
from meshopt_batch.reuse import predict

from ..options import add_profile, split_values
from .meshlets import add_analyze_option, analyze_rows, format_analyze


def add_parser(subparsers):
    p = subparsers.add_parser(
        "analyze", help="predict vertex-shader invocations, ASR, ACMR, ATVR and batches per profile",
        description="Predict vertex-shader work of MESH with the batch model of paper 001 "
        "(Algorithm 1) for each profile. A file with several index buffers (glTF primitives) "
        "is reported as the sum of its draws.",
    )
    p.add_argument("mesh", help="OBJ, PLY, OFF, STL, glTF or GLB file")
    add_profile(p, multiple=True, default_help="every built-in profile")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_analyze_option(p)
    p.set_defaults(func=run)


def analyze_meshes(meshes, profiles) -> list[dict]:
    """Sum the predictions of every index buffer (draw) for each profile (Profile objects)."""
    rows = []
    for prof in profiles:
        total = {"invocations": 0, "batches": 0, "triangles": 0, "vertices": 0}
        for mesh in meshes:
            pred = predict(mesh.triangles, profile=prof, vertex_count=mesh.vertex_count)
            total["invocations"] += pred.invocations
            total["batches"] += pred.batches
            total["triangles"] += pred.triangles
            total["vertices"] += pred.vertices
        t, v = total["triangles"], total["vertices"]
        asr = total["invocations"] / t if t else 0.0
        rows.append({"profile": prof.name, "invocations": total["invocations"], "asr": asr,
                     "acmr": asr, "atvr": total["invocations"] / v if v else 0.0,
                     "batches": total["batches"]})
    return rows


def run(args) -> int:
    profiles = [get_profile(spec) for spec in split_values(args.profile) or builtin_profile_names()]
    meshes = load_meshes(args.mesh)
    results = analyze_meshes(meshes, profiles)
    out = {"mesh": args.mesh, "triangles": sum(m.triangle_count for m in meshes),
           "vertices": sum(m.vertex_count for m in meshes), "results": results}
    if len(meshes) > 1:
        out["primitives"] = [{"name": m.name, "triangles": m.triangle_count, "vertices": m.vertex_count}
                             for m in meshes]
    if args.meshlets and meshes:
        out["meshlets"] = analyze_rows(meshes, args.meshlets)
    if args.json:
        print(json.dumps(out))
        return 0
    print(f"{args.mesh}: {out['triangles']} triangles, {out['vertices']} vertices"
          + (f" in {len(meshes)} index buffers" if len(meshes) > 1 else ""))
    print(f"{'profile':<16}{'invocations':>12}{'ASR':>8}{'ACMR':>8}{'ATVR':>8}{'batches':>9}")
    for r in results:
        print(f"{r['profile']:<16}{r['invocations']:>12}{r['asr']:>8.3f}{r['acmr']:>8.3f}"
              f"{r['atvr']:>8.3f}{r['batches']:>9}")
    if args.meshlets:
        print(format_analyze(out["meshlets"]))
    return 0
