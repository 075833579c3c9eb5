"""Throughput of the Algorithm 1 predictor on the 1.1 M-triangle bunny_sub2 mesh.

Prints indices per second per profile, the peak extra memory (it must stay O(vertices)) and
the speed-up over the plain-Python reference transcription of Algorithm 1 used by the tests,
measured in the same run on a prefix of the same mesh.

Run: .venv/bin/python benchmarks/bench_predict.py [MESH]
"""

import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from meshes import shared_mesh_path  # noqa: E402
from meshopt_batch.io import load_mesh  # noqa: E402
from meshopt_batch.profiles import get_profile  # noqa: E402
from meshopt_batch.reuse import predict  # noqa: E402
from reference_batching import reference_predict  # noqa: E402

PROFILES = ["nvidia_gl", "nvidia_dx", "amd", "intel", "llvmpipe", "fifo:16", "lru:32", "nvidia_gl+16bit"]


def best_of(fn, repeat=3):
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def main():
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else shared_mesh_path("bunny_sub2.ply")
    if path is None or not Path(path).exists():
        print("bunny_sub2.ply not found (../shared/meshes); pass a mesh path")
        return 0
    mesh = load_mesh(path)
    tris = mesh.triangles
    prefix = tris[:20000]
    rows = []
    for name in PROFILES:
        try:
            profile = get_profile(name)
        except Exception as exc:  # llvmpipe exists only once the probe has fitted it
            print(f"skip {name}: {exc}")
            continue
        predict(tris[:64], profile=profile)  # compile / load the cache
        seconds, pred = best_of(lambda: predict(tris, profile=profile, vertex_count=mesh.vertex_count))
        tracemalloc.start()
        predict(tris, profile=profile, vertex_count=mesh.vertex_count)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        ref_start = time.perf_counter()
        reference_predict(prefix.ravel().tolist(), profile)
        ref_rate = prefix.size / (time.perf_counter() - ref_start)
        rate = tris.size / seconds
        rows.append({"profile": name, "asr": round(pred.asr, 4), "batches": pred.batches,
                     "seconds": round(seconds, 4), "M indices/s": round(rate / 1e6, 1),
                     "peak MiB": round(peak / 2**20, 1), "vs reference": f"{rate / ref_rate:.0f}x"})
    print(f"{path.name}: {mesh.triangle_count} triangles, {tris.size} indices, {mesh.vertex_count} vertices")
    print(pd.DataFrame(rows).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
