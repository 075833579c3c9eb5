"""Frame-loop throughput of the pipeline model: 60 frames of city-unordered, baseline + DR + oracle.

The issue-6 target: the 60 frames with all three techniques in under 2 minutes on 2 cores.
The run is limited to 2 numba threads (and 2 CPUs where the OS lets us pin) before anything
compiles; a warm-up frame first loads or compiles the numba caches so the timing is the
steady state.  Prints wall time, frames/s and where the time goes (geometry, binning, raster
per technique, counters and the rest), plus the headline counters.

Run: .venv/bin/python benchmarks/bench_pipeline.py [SCENE] [FRAMES]
"""

import os
import sys
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "2")
try:
    os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:2])
except (AttributeError, OSError):
    pass

from pipeline_model.pipeline import simulate  # noqa: E402

TECHNIQUES = ["baseline", "dr", "oracle"]
TARGET_SECONDS = 120.0


def main():
    scene = sys.argv[1] if len(sys.argv) > 1 else "city-unordered"
    frames = int(sys.argv[2]) if len(sys.argv) > 2 else 60
    t0 = time.perf_counter()
    simulate(scene, TECHNIQUES, frames=1, progress=False)          # compile / load caches
    warm = time.perf_counter() - t0
    t0 = time.perf_counter()
    run = simulate(scene, TECHNIQUES, frames=frames, progress=False)
    wall = time.perf_counter() - t0
    tm = run.timings
    raster = sum(tm["raster"].values())
    other = wall - tm["geometry"] - tm["binning"] - raster
    print(f"{scene}: {frames} frames x {len(TECHNIQUES)} techniques at {run.width}x{run.height}, "
          f"{os.environ.get('NUMBA_NUM_THREADS')} threads (warm-up {warm:.1f} s)")
    print(f"  wall {wall:.1f} s  ->  {frames / wall:.2f} frames/s ({frames * len(TECHNIQUES) / wall:.2f} "
          f"technique-frames/s); target < {TARGET_SECONDS:.0f} s: {'OK' if wall < TARGET_SECONDS else 'MISSED'}")
    print(f"  geometry {tm['geometry']:.1f} s, binning {tm['binning']:.1f} s, raster "
          + ", ".join(f"{k} {v:.1f} s" for k, v in tm["raster"].items())
          + f", counters+rest {other:.1f} s")
    tot = {n: run.technique_totals(n) for n in TECHNIQUES}
    frag = sum(t["fragments_rasterized"] for t in tot.values())
    print(f"  raster throughput {frag / raster / 1e6:.1f} M fragments/s over all techniques")
    print(f"  {'technique':<10}{'overshading':>12}{'frag. shaded':>15}{'speed-up':>10}{'energy':>9}")
    b = tot["baseline"]
    for n, t in tot.items():
        print(f"  {n:<10}{t['overshading']:>12.3f}{t['fragments_shaded']:>15,}"
              f"{b['cycles'] / t['cycles']:>9.3f}x{t['energy'] / b['energy']:>8.3f}x")
    return 0 if wall < TARGET_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main())
