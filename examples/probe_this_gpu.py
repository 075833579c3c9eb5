"""Measure this machine's GPU and fit a batch profile for it (paper 001 sec. 3.3-3.4).

    python examples/probe_this_gpu.py [MESH] [--save my-gpu.json] [--counter MODULE:FUNCTION]

Runs the batch-identification experiments through OpenGL (Mesa's llvmpipe without a GPU),
fits MAX_SIZE / MAX_UNIQUES / the memory module, and checks the fitted profile against a
fresh measurement of MESH (or of a procedural sphere). The saved profile works anywhere a
profile name does, e.g. ``meshopt-batch analyze bunny.ply --profile my-gpu.json``.

``--counter`` takes the counts from a function instead (``FUNCTION(indices, vertex_count)``
returning per-vertex invocations), e.g. ``gpu_probe.simulated:mali_valhall``.
"""

import argparse
import json
import sys

import meshes
from gpu_probe import gl_info, resolve_counter, run_experiments
from gpu_probe.profile_fit import fit
from meshopt_batch import load_mesh, predict
from meshopt_batch.support.errors import MeshoptBatchError
from meshopt_batch.support.files import atomic_write


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mesh", nargs="?", help="mesh to check the profile on (default: an icosphere)")
    ap.add_argument("--save", metavar="FILE", help="write the fitted profile as JSON")
    ap.add_argument("--random", type=int, default=60, help="random index buffers to verify on")
    ap.add_argument("--counter", metavar="MODULE:FUNCTION", help="count with this function, not OpenGL")
    args = ap.parse_args(argv)
    try:
        counter = resolve_counter(args.counter)   # OpenGL when no --counter is given
        info = counter.info if args.counter else gl_info()
    except MeshoptBatchError as exc:          # no OpenGL here: the message says what to install
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"GPU: {info['renderer']} ({info['version']})")

    suite = run_experiments(counter)
    result = fit(suite, counter=counter, name="this-gpu", random_count=args.random)
    p = result.profile
    head = "fitted" if result.fits else "no known kind fits; closest"
    print(f"{head}: MAX_SIZE {p.max_size}, MAX_UNIQUES {p.max_uniques}, memory {p.memory} {p.memory_size}")
    for line in result.reasons:
        print("  " + line)

    mesh = load_mesh(args.mesh) if args.mesh else meshes.icosphere(4)
    measured = counter.measure(mesh.triangles, mesh.vertex_count, per_vertex=False)
    predicted = predict(mesh.triangles, mesh.vertex_count, profile=p)
    print(f"{mesh.name}: measured {measured.invocations} invocations (ASR {measured.asr:.4f}), "
          f"predicted {predicted.invocations} (ASR {predicted.asr:.4f})")
    if args.save and result.fits:
        atomic_write(args.save, json.dumps(p.to_dict(), indent=2) + "\n")
        print(f"wrote {args.save}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
