"""``meshopt-batch meshlets``: cut a mesh into meshlets for mesh-shader GPUs, and the meshlet
figures of ``analyze --meshlets`` and ``compare --meshlets``.

The ``.npz`` written holds meshoptimizer's layout over all primitives of the file, one after
the other: ``meshlets`` (M, 4) uint32 (vertex offset, triangle offset in bytes, vertex count,
triangle count; offsets into the file-wide arrays), ``meshlet_vertices`` uint32 (vertex ids in
the meshlet's own primitive's vertex buffer), ``meshlet_triangles`` uint8 (3 local indices per
triangle), the bounds ``center``, ``radius``, ``cone_apex``, ``cone_axis``, ``cone_cutoff``
(float32, in the primitive's own space), ``meshlet_primitive`` (M,) uint32 (which primitive),
``primitive_name``, ``primitive_gltf`` (P, 2) int32 (glTF mesh and primitive index, -1 for
other formats), ``max_vertices``, ``max_triangles``, ``method`` and ``cone_weight``.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

from meshopt_batch.support.errors import MeshoptBatchError

from ..options import split_values

#: The builders' names as the help text gives them (:data:`meshopt_batch.meshlets.METHODS`;
#: the parser is built without the core modules, a test keeps the two equal).
METHOD_NAMES = ("batch", "greedy", "meshoptimizer")

__all__ = ["add_parser", "run", "add_analyze_option", "analyze_rows", "format_rows", "add_compare_option",
           "run_compare"]

_COLUMNS = (("meshlets", "meshlets", "{:d}"), ("vertices_per_triangle", "vert/tri", "{:.4f}"),
            ("vertex_fill", "v-fill", "{:.3f}"), ("triangle_fill", "t-fill", "{:.3f}"),
            ("vertex_duplication", "dup", "{:.3f}"), ("cone_culled", "cone", "{:.4f}"),
            ("cone_culled_meshlets", "cone#", "{:.1f}"), ("frustum_culled", "frustum", "{:.4f}"),
            ("lane_occupancy", "lanes", "{:.3f}"), ("seconds", "seconds", "{:.3f}"))


def add_parser(subparsers):
    p = subparsers.add_parser(
        "meshlets", help="cut MESH into meshlets for mesh-shader GPUs (meshoptimizer's layout, .npz)",
        description="Build meshlets of at most --max-vertices vertices and --max-triangles triangles "
        "(NVIDIA recommends 64/126, AMD equal limits such as 64/64, meshoptimizer 64/96) and write "
        "them, with per-meshlet bounding spheres and normal cones, to OUT.npz in meshoptimizer's "
        "layout. A glTF file is cut primitive by primitive; meshlet_primitive says which primitive "
        "each meshlet belongs to.",
    )
    p.add_argument("mesh", help="OBJ, PLY, OFF, STL, glTF or GLB file")
    p.add_argument("-o", "--output", required=True, metavar="OUT.npz", help="output file (.npz)")
    _add_limits(p)
    p.add_argument("--method", "-m", default="batch", metavar="M",
                   help=f"builder: {', '.join(METHOD_NAMES)} (meshoptimizer needs the optional almeshopt "
                   "package); default: batch")
    p.add_argument("--cone-weight", type=float, default=0.0, metavar="W",
                   help="0..1: weight of normal-cone tightness (batch, meshoptimizer); default 0")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def _add_limits(p):
    p.add_argument("--max-vertices", type=int, default=64, metavar="V", help="3..256; default 64")
    p.add_argument("--max-triangles", type=int, default=126, metavar="T", help="1..512; default 126")


def _primitive_info(mesh, index: int) -> dict:
    meta = mesh.meta or {}
    return {"index": index, "name": mesh.name or f"primitive {index}",
            "gltf_mesh": meta.get("gltf_mesh"), "gltf_primitive": meta.get("gltf_primitive"),
            "triangles": mesh.triangle_count, "vertices": mesh.vertex_count}


def _npz_arrays(results, bounds, prims, args) -> dict:
    import numpy as np  # lazy: the parser needs no core module

    meshlets, mverts, mtris, owner = [], [], [], []
    v_base = t_base = 0
    for i, res in enumerate(results):
        ml = res.meshlets.astype(np.int64)
        ml[:, 0] += v_base
        ml[:, 1] += t_base
        meshlets.append(ml)
        mverts.append(res.meshlet_vertices)
        mtris.append(res.meshlet_triangles)
        owner.append(np.full(res.meshlet_count, i, np.uint32))
        v_base += res.meshlet_vertices.shape[0]
        t_base += res.meshlet_triangles.shape[0]
    out = {"meshlets": np.concatenate(meshlets).reshape(-1, 4).astype(np.uint32),
           "meshlet_vertices": np.concatenate(mverts).astype(np.uint32),
           "meshlet_triangles": np.concatenate(mtris).astype(np.uint8),
           "meshlet_primitive": np.concatenate(owner).astype(np.uint32)}
    for name in ("center", "radius", "cone_apex", "cone_axis", "cone_cutoff"):
        out[name] = np.concatenate([getattr(b, name) for b in bounds]).astype(np.float32)
    out["primitive_name"] = np.array([p["name"] for p in prims], dtype=str)
    out["primitive_gltf"] = np.array([[-1 if p["gltf_mesh"] is None else p["gltf_mesh"],
                                       -1 if p["gltf_primitive"] is None else p["gltf_primitive"]]
                                      for p in prims], np.int32).reshape(-1, 2)
    out["max_vertices"] = np.int32(args.max_vertices)
    out["max_triangles"] = np.int32(args.max_triangles)
    out["method"] = np.array(args.method)
    out["cone_weight"] = np.float32(args.cone_weight)
    return out


def write_npz(path, arrays: dict) -> None:
    """An uncompressed ``.npz`` (what :func:`numpy.savez` writes) with fixed member timestamps,
    so the same meshlets give the same bytes; written atomically."""
    import numpy as np  # lazy: the parser needs no core module

    from meshopt_batch.support.files import atomic_path  # lazy: the parser needs no core module

    with atomic_path(path) as tmp, zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED) as zf:
        for name, value in arrays.items():
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.asanyarray(value), allow_pickle=False)
            zf.writestr(zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0)), buf.getvalue())


def run(args) -> int:
    from meshopt_batch.io import load_meshes  # lazy: the parser needs no core module
    from meshopt_batch.meshlets import (  # lazy: the parser needs no core module
        METHODS,
        analyze_meshlets,
        build_meshlets,
        combine_analyses,
        meshlet_bounds,
    )

    if args.method not in METHODS:
        raise MeshoptBatchError(f"unknown meshlet method {args.method!r} (known: {', '.join(METHODS)})")
    if not str(args.output).endswith(".npz"):
        raise MeshoptBatchError(f"{args.output}: the output must be a .npz file")
    meshes = load_meshes(args.mesh)
    results, bounds, parts, prims = [], [], [], []
    first = 0
    for i, mesh in enumerate(meshes):
        res = build_meshlets(mesh.triangles, mesh.positions, max_vertices=args.max_vertices,
                             max_triangles=args.max_triangles, method=args.method, cone_weight=args.cone_weight)
        b = meshlet_bounds(res, mesh.positions)
        results.append(res)
        bounds.append(b)
        parts.append(analyze_meshlets(res, mesh.positions, bounds=b))
        prims.append({**_primitive_info(mesh, i), "first_meshlet": first, "meshlets": res.meshlet_count})
        first += res.meshlet_count
    write_npz(args.output, _npz_arrays(results, bounds, prims, args))
    figures = combine_analyses(parts)
    out = {"mesh": args.mesh, "output": str(args.output), "method": args.method,
           "cone_weight": float(args.cone_weight), **figures.to_dict(),
           "seconds": sum(r.stats.get("seconds", 0.0) for r in results), "primitives": prims}
    if args.json:
        print(json.dumps(out))
        return 0
    print(f"{args.mesh}: {figures.triangles} triangles in {figures.meshlets} meshlets "
          f"({args.method}, {args.max_vertices}/{args.max_triangles}"
          + (f", cone weight {args.cone_weight:g}" if args.cone_weight else "") + f") -> {args.output}")
    if len(prims) > 1:
        for p in prims:
            print(f"  primitive {p['index']} {p['name']}: {p['meshlets']} meshlets from {p['first_meshlet']}")
    print(format_rows([{"builder": args.method, **figures.to_dict(), "seconds": out["seconds"],
                        "cone_culled_meshlets": figures.cone_culled * figures.meshlets}]))
    return 0


# ------------------------------------------------------------------ analyze --meshlets
def _parse_limits(text: str) -> tuple[int, int]:
    try:
        v, t = (int(x) for x in str(text).split("/"))
    except ValueError:
        raise MeshoptBatchError(f"--meshlets takes limits as V/T (e.g. 64/126), got {text!r}") from None
    return v, t


def add_analyze_option(p) -> None:
    """``analyze --meshlets [V/T]``: the meshlet figures of every builder at one limit pair."""
    p.add_argument("--meshlets", nargs="?", const="64/126", default=None, metavar="V/T",
                   help="also print meshlet figures (meshlets, vertices per triangle, fill, duplication, "
                   "cone and frustum culling over 64 seeded random views, lane occupancy) of every "
                   "available builder for limits V/T (default 64/126)")


def analyze_rows(meshes, limits: str) -> dict:
    """``{"limits", "rows", "skipped"}`` for ``analyze --meshlets`` (a file's primitives combined)."""
    from meshopt_batch.meshlets import METHODS, meshoptimizer_meshlets  # lazy: the parser needs no core module
    from meshopt_batch.meshlets.meshlet_comparison import meshlet_figures  # lazy: the parser needs no core module

    max_v, max_t = _parse_limits(limits)
    rows, skipped = [], {}
    for method in METHODS:
        if method == "meshoptimizer" and not meshoptimizer_meshlets.available():
            skipped[method] = meshoptimizer_meshlets.MISSING_REASON
            continue
        figures, seconds, _ = meshlet_figures(meshes, method=method, max_vertices=max_v, max_triangles=max_t)
        rows.append({"builder": method, **figures.to_dict(), "seconds": seconds,
                     "cone_culled_meshlets": figures.cone_culled * figures.meshlets})
    return {"limits": f"{max_v}/{max_t}", "rows": rows, "skipped": skipped}


def format_rows(rows: list[dict], title: str | None = None) -> str:
    """A fixed-width table of meshlet figures, one row per builder (skipped ones say why)."""
    head = f"{'builder':<24}" + "".join(f"{label:>10}" for _, label, _ in _COLUMNS)
    lines = ([title] if title else []) + [head]
    for r in rows:
        if "skipped" in r:
            lines.append(f"{r['builder']:<24}  skipped: {r['skipped']}")
            continue
        lines.append(f"{r['builder']:<24}" + "".join(f"{fmt.format(r[key]):>10}" for key, _, fmt in _COLUMNS))
    return "\n".join(lines)


def format_analyze(block: dict) -> str:
    rows = block["rows"] + [{"builder": m, "skipped": why} for m, why in block["skipped"].items()]
    return format_rows(rows, f"meshlets {block['limits']} (cone/frustum: fraction culled over "
                             f"{rows[0].get('views', 64)} seeded random views; cone#: meshlets per view)")


# ------------------------------------------------------------------ compare --meshlets
def add_compare_option(p) -> None:
    """``compare --meshlets``: the meshlet builders side by side instead of triangle orders."""
    p.add_argument("--meshlets", action="store_true",
                   help="compare meshlet builders instead (batch, batch cone 0.25, greedy, meshoptimizer "
                   "and meshoptimizer cone 0.25 at 64/126, 64/64, 128/128 and 64/96); --method picks builders")


def run_compare(args) -> int:
    """``compare --meshlets``: one table per mesh and limits; ``--json`` prints the rows."""
    from meshopt_batch.io import load_meshes  # lazy: the parser needs no core module
    from meshopt_batch.meshlets import METHODS  # lazy: the parser needs no core module
    from meshopt_batch.meshlets.meshlet_comparison import (  # lazy: the parser needs no core module
        COMPARE_BUILDERS,
        COMPARE_LIMITS,
        builder_label,
        compare_meshlets,
    )

    names = split_values(args.method)
    builders = COMPARE_BUILDERS
    if names:
        unknown = sorted(set(names) - set(METHODS))
        if unknown:
            raise MeshoptBatchError(f"unknown meshlet method(s) {unknown} (known: {', '.join(METHODS)})")
        builders = tuple(b for b in COMPARE_BUILDERS if b[0] in names)
    meshes = {}
    for path in args.meshes:
        meshes[Path(path).name if Path(path).name not in meshes else str(path)] = load_meshes(path)
    rows = compare_meshlets(meshes, limits=COMPARE_LIMITS, builders=builders)
    if args.json:
        print(json.dumps({"limits": [f"{v}/{t}" for v, t in COMPARE_LIMITS],
                          "builders": [builder_label(m, w) for m, w in builders], "rows": rows}))
        return 0
    blocks = []
    for name in meshes:
        tris = sum(m.triangle_count for m in meshes[name])
        for v, t in COMPARE_LIMITS:
            part = [r for r in rows if r["mesh"] == name and r["limits"] == f"{v}/{t}"]
            blocks.append(format_rows(part, f"{name} ({tris} triangles), limits {v}/{t}"))
    print("\n\n".join(blocks))
    print("\ncone/frustum: fraction of meshlets culled, mean over 64 seeded random views; cone#: meshlets "
          "culled by cone per view; lanes: occupancy of one meshlet per workgroup of max(V, T) lanes")
    return 0
