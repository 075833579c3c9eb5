"""Evaluate an animated scene on the tile-based GPU model with VRO, EVR, RE and DSR.

    python examples/evaluate_scene.py [SCENE] [--frames 20] [--method forsyth]

SCENE is a shipped scene name (``meshopt-batch simulate --list``), a scene JSON or a glTF file.
Prints, per technique, the overshading, the tiles skipped, the sampling rate and the speed-up
and energy over the baseline -- the figures papers 000, 003 and 004 report.
"""

import argparse
import sys

from meshopt_batch.support.errors import MeshoptBatchError
from pipeline_model.pipeline import simulate

TECHNIQUES = ["baseline", "dr", "vro", "evr", "re", "evr+re", "dsr"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scene", nargs="?", default="city-unordered")
    ap.add_argument("--frames", type=int, default=20)
    ap.add_argument("--method", "-m", default=None, help="mesh optimizer for every index buffer (forsyth, batch, ...)")
    ap.add_argument("--size", type=int, nargs=2, metavar=("W", "H"), default=(None, None))
    args = ap.parse_args(argv)
    try:
        run = simulate(args.scene, TECHNIQUES, frames=args.frames, method=args.method,
                       width=args.size[0], height=args.size[1])
    except MeshoptBatchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    t = run.totals
    base = t.loc["baseline"]
    print(f"{run.scene}: {run.frames} frames at {run.width}x{run.height}, optimizer {run.optimizer or 'none'}")
    print(f"{'technique':<10}{'overshading':>12}{'tiles skipped':>15}{'samples/px':>12}{'speed-up':>10}{'energy':>8}")
    for name in run.techniques:
        r = t.loc[name]
        tiles = r["tiles_rendered"] + r["tiles_skipped"]
        spp = r.get("samples_per_pixel")
        spp = f"{spp:.3f}" if spp == spp and spp is not None else "1"
        print(f"{name:<10}{r['overshading']:>12.3f}{100 * r['tiles_skipped'] / tiles:>14.1f}%{spp:>12}"
              f"{base['cycles'] / r['cycles']:>9.3f}x{r['energy'] / base['energy']:>7.3f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
