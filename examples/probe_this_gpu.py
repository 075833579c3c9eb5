"""Measure this machine's GPU and fit a batch profile for it (paper 001 sec. 3.3-3.4).

    python examples/probe_this_gpu.py [MESH] [--save my-gpu.json]

Runs the batch-identification experiments through OpenGL (Mesa's llvmpipe without a GPU),
fits MAX_SIZE / MAX_UNIQUES / the memory module, and checks the fitted profile against a
fresh measurement of MESH (or of a procedural sphere). The saved profile works anywhere a
profile name does, e.g. ``meshopt-batch analyze bunny.ply --profile my-gpu.json``.
"""

import argparse
import json
import sys

from gpu_probe import gl_info, measure_invocations, run_experiments
from gpu_probe.fit import fit
from meshopt_batch import load_mesh, predict
from meshopt_batch.errors import MeshoptBatchError


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mesh", nargs="?", help="mesh to check the profile on (default: an icosphere)")
    ap.add_argument("--save", metavar="FILE", help="write the fitted profile as JSON")
    ap.add_argument("--random", type=int, default=60, help="random index buffers to verify on")
    args = ap.parse_args(argv)
    try:
        info = gl_info()
    except MeshoptBatchError as exc:          # no OpenGL here: the message says what to install
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"GPU: {info['renderer']} ({info['version']})")

    suite = run_experiments()
    result = fit(suite, name="this-gpu", random_count=args.random)
    p = result.profile
    print(f"fitted: MAX_SIZE {p.max_size}, MAX_UNIQUES {p.max_uniques}, memory {p.memory} {p.memory_size}")
    for line in result.reasons:
        print("  " + line)

    if args.mesh:
        mesh = load_mesh(args.mesh)
    else:
        import meshes

        mesh = meshes.icosphere(4)
    measured = measure_invocations(mesh.triangles, mesh.vertex_count)
    predicted = predict(mesh.triangles, profile=p, vertex_count=mesh.vertex_count)
    print(f"{mesh.name}: measured {measured.invocations} invocations (ASR {measured.asr:.4f}), "
          f"predicted {predicted.invocations} (ASR {predicted.asr:.4f})")
    if args.save:
        with open(args.save, "w") as fh:
            json.dump(p.to_dict(), fh, indent=2)
        print(f"wrote {args.save}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
