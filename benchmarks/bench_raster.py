"""Throughput of the raster model (binning + tile renderer) against llvmpipe on the same frames.

Builds the first frames of a shipped scene (default ``city-unordered``, 1196 x 768) with the
geometry stage, then times, frame by frame and in the same run:

* the model: ``bin_triangles`` + ``render_frame`` (baseline: program order, early-Z, shading),
  with tile rows on all numba threads and single-threaded;
* the same triangles drawn through moderngl on the local GL (llvmpipe; plain colour shader,
  per-draw depth state, glFinish and colour read-back), i.e. what a real renderer spends.

The three are timed in interleaved rounds (``--rounds``, best of each), so the ratios compare
timings taken under the same machine load.  Reports fragments rasterized / shaded per second
and frames per second, wall clock and process CPU time (llvmpipe's worker threads are in the
process CPU time, so the CPU ratio is fair on a busy machine), and the model / llvmpipe ratio
against issue 16's target of at most 1.2x (wall, both on all threads).

Run: .venv/bin/python benchmarks/bench_raster.py [--scene NAME] [--frames N] [--rounds 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numba  # noqa: E402

from pipeline_model.binning import bin_triangles  # noqa: E402
from pipeline_model.geometry import GeometryStage  # noqa: E402
from pipeline_model.raster import render_frame  # noqa: E402
from pipeline_model.scene import load_scene  # noqa: E402

TARGET_RATIO = 1.2


def scene_frames(name: str, n: int, width: int, height: int):
    sc = load_scene(name)
    sc.load_meshes()
    geom = GeometryStage()
    return [geom.process(sc.frame(i, width, height), tile=16) for i in range(n)]


def run_once(fn, frames):
    """Wall and CPU seconds for running fn over all frames, and its results."""
    w0, c0 = time.perf_counter(), time.process_time()
    out = [fn(f) for f in frames]
    return (time.perf_counter() - w0, time.process_time() - c0), out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scene", default="city-unordered")
    ap.add_argument("--frames", type=int, default=10)
    ap.add_argument("--width", type=int, default=1196)
    ap.add_argument("--height", type=int, default=768)
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (best of each)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)

    frames = scene_frames(a.scene, a.frames, a.width, a.height)
    n = len(frames)
    # warm-up: compile (or load the numba cache) outside the timings
    f0 = frames[0]
    render_frame(f0, bin_triangles(f0), parallel=True)
    render_frame(f0, bin_triangles(f0), parallel=False)

    def model(parallel):
        def run(f):
            t = bin_triangles(f)
            return render_frame(f, t, parallel=parallel).totals()
        return run

    gl_render = None
    gl = None
    try:
        # lazy: OpenGL (moderngl, a context) is optional; without it the model is timed alone
        from gpu_probe.gl_reference import GLImageRenderer, renderer

        r = GLImageRenderer()
        r.render(f0)  # warm-up: shader compile
        gl_render = lambda f: r.render(f, read=True)  # noqa: E731
        gl = {"renderer": renderer(),
              "lp_num_threads": os.environ.get("LP_NUM_THREADS", f"default ({os.cpu_count()} cores)")}
    except Exception as exc:  # no GL context: model figures only
        gl = {"error": str(exc)}
    best = {}
    tot = None
    for _ in range(a.rounds):
        for key, fn in (("parallel", model(True)), ("serial", model(False)), ("gl", gl_render)):
            if fn is None:
                continue
            (w, c), out = run_once(fn, frames)
            if key == "parallel":
                tot = out
            if w < best.get(key, (float("inf"),))[0]:
                best[key] = (w, c)
    (mw, mc), (sw, sc_) = best["parallel"], best["serial"]
    if "gl" in best:
        gw, gc = best["gl"]
        gl.update(wall_s=gw, cpu_s=gc, frames_per_s=n / gw)
    rast = sum(t["fragments_rasterized"] for t in tot)
    shaded = sum(t["fragments_shaded"] for t in tot)
    tris = sum(f.n_triangles for f in frames)

    out = {
        "scene": a.scene, "frames": n, "width": a.width, "height": a.height,
        "triangles_per_frame": tris / n,
        "fragments_rasterized_per_frame": rast / n, "fragments_shaded_per_frame": shaded / n,
        "model_parallel": {"threads": numba.get_num_threads(), "wall_s": mw, "cpu_s": mc,
                           "frames_per_s": n / mw, "fragments_per_s": rast / mw,
                           "shaded_per_s": shaded / mw},
        "model_serial": {"wall_s": sw, "cpu_s": sc_, "frames_per_s": n / sw,
                         "fragments_per_s": rast / sw, "shaded_per_s": shaded / sw},
        "llvmpipe": gl,
    }
    if "wall_s" in gl:
        out["ratio_wall"] = mw / gl["wall_s"]
        out["ratio_cpu"] = mc / gl["cpu_s"]
        out["ratio_serial_cpu"] = sc_ / gl["cpu_s"]
        out["target_ratio"] = TARGET_RATIO
        out["within_target"] = bool(out["ratio_wall"] <= TARGET_RATIO)
    try:
        out["load_average"] = os.getloadavg()[0]
    except OSError:
        pass
    if a.json:
        print(json.dumps(out, indent=1))
        return 0
    print(f"scene {a.scene}: {n} frames at {a.width}x{a.height}, {tris / n:,.0f} triangles, "
          f"{rast / n / 1e6:.2f} M fragments rasterized and {shaded / n / 1e6:.2f} M shaded per frame")
    mp, ms = out["model_parallel"], out["model_serial"]
    print(f"model ({mp['threads']} threads): {mp['frames_per_s']:6.2f} frames/s "
          f"{mp['fragments_per_s'] / 1e6:7.1f} M fragments/s  (wall {mw:.2f} s, cpu {mc:.2f} s)")
    print(f"model (1 thread)  : {ms['frames_per_s']:6.2f} frames/s "
          f"{ms['fragments_per_s'] / 1e6:7.1f} M fragments/s  (wall {sw:.2f} s, cpu {sc_:.2f} s)")
    if "wall_s" in gl:
        print(f"llvmpipe          : {gl['frames_per_s']:6.2f} frames/s "
              f"(wall {gl['wall_s']:.2f} s, cpu {gl['cpu_s']:.2f} s)  [{gl['renderer']}]")
        print(f"model / llvmpipe: wall {out['ratio_wall']:.2f}x, cpu {out['ratio_cpu']:.2f}x "
              f"(single-threaded model, cpu: {out['ratio_serial_cpu']:.2f}x); target <= "
              f"{TARGET_RATIO:.1f}x (wall): {'met' if out['within_target'] else 'NOT met'}")
    else:
        print(f"llvmpipe: unavailable ({gl.get('error')})")
    if "load_average" in out:
        print(f"(1-min load average during the run: {out['load_average']:.1f} on {os.cpu_count()} cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
