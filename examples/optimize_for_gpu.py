"""Build step: reorder a mesh's triangles for a target GPU and write it out.

    python examples/optimize_for_gpu.py INPUT.ply OUTPUT.glb [--profile nvidia_gl]

Tries the batch optimizer of paper 001 and Forsyth's (TomF) order, keeps whichever the
profile's batch model predicts to shade fewer vertices, and saves the mesh with that index
order (vertex attributes travel with their vertices). Exits non-zero on bad input, so a
build system stops.
"""

import argparse
import sys

from meshopt_batch import load_mesh, predict, save_mesh
from meshopt_batch.optimizers import optimize
from meshopt_batch.support.errors import MeshoptBatchError


def best_order(mesh, profile, methods=("batch", "forsyth")):
    """(method, new mesh, ASR) of the method with the lowest predicted ASR on ``profile``."""
    best = None
    for method in methods:
        res = optimize(mesh.triangles, mesh.vertex_count, method=method, profile=profile)
        if res.vertex_remap is None:
            out = mesh.with_triangles(res.triangles)
        else:   # the batch optimizer's 16-bit boundary fix appended vertex copies
            out = mesh.with_vertices(res.vertex_remap, res.triangles)
        asr = predict(out.triangles, profile=profile, vertex_count=out.vertex_count).asr
        if best is None or asr < best[2]:
            best = (method, out, asr)
    return best


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--profile", default="nvidia_gl", help="nvidia_gl, nvidia_dx, amd, intel, llvmpipe, fifo:N, lru:N")
    args = ap.parse_args(argv)
    try:
        mesh = load_mesh(args.input)
        before = predict(mesh.triangles, profile=args.profile, vertex_count=mesh.vertex_count).asr
        method, out, after = best_order(mesh, args.profile)
        save_mesh(out, args.output)
    except MeshoptBatchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"{args.input}: {mesh.triangle_count} triangles, ASR on {args.profile} "
          f"{before:.3f} -> {after:.3f} with {method}; wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
