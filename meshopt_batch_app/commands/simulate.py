"""``meshopt-batch simulate``: run a scene through the TBR pipeline model under techniques.

Per-technique totals and per-frame rows of the model's counters (vertex invocations,
fragments rasterized / shaded, overshading, tiles rendered / skipped, cycles, energy...), see
:mod:`pipeline_model.pipeline` and :mod:`pipeline_model.stats`.  ``--json`` prints one object::

    {"scene", "frames", "width", "height", "techniques": {NAME: {counters}},
     "per_frame": [{"technique", "frame", counters}], ...,
     "gl_check": {"renderer", "frames": [...]}}          # with --check-gl

``--images DIR`` writes every final frame as ``DIR/<technique>_<frame:04d>.png`` (lossless);
the files appear only when the whole run succeeded.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from meshopt_batch.support.errors import MeshoptBatchError
from meshopt_batch.support.files import atomic_path

from ..options import add_method, add_no_progress, add_profile, add_technique, split_values
from ..progress import wanted

#: The vertex-reuse profile of the geometry stage when none is given (Mali-like FIFO).
DEFAULT_PROFILE = "fifo:16"


def add_parser(subparsers):
    p = subparsers.add_parser(
        "simulate", help="run a scene through the tile-based GPU model (baseline, DR, oracle, VRO, EVR, RE, DSR)",
        description="Render SCENE (a shipped scene name, a JSON scene file or a glTF/GLB file) "
        "frame by frame on the TBR pipeline model and count the work of each technique.",
    )
    p.add_argument("scene", nargs="?", help="shipped scene name (see --list), scene .json, or .glb/.gltf")
    add_technique(p)
    p.add_argument("--frames", "-n", type=int, default=None, help="frames to run (default: the scene's)")
    p.add_argument("--first-frame", type=int, default=0, help="first frame number (default 0)")
    add_method(p, multiple=False, default_help="none (each mesh's own order); applied to every index buffer")
    add_profile(p, multiple=False, default_help=f"{DEFAULT_PROFILE} (Mali-like); for the vertex-shader count")
    p.add_argument("--width", type=int, default=None, help="screen width (default: the scene's, 1196)")
    p.add_argument("--height", type=int, default=None, help="screen height (default: the scene's, 768)")
    p.add_argument("--tile", type=int, default=16, help="tile size in pixels (default 16)")
    p.add_argument("--costs", metavar="FILE", default=None,
                   help="JSON overrides of the per-event cycle/energy cost table")
    p.add_argument("--images", metavar="DIR", default=None,
                   help="write every final frame as DIR/<technique>_<frame:04d>.png")
    p.add_argument("--csv", metavar="FILE", default=None, help="write the per-frame rows as CSV")
    p.add_argument("--check-gl", action="store_true",
                   help="also render each frame on the local OpenGL and compare coverage and early-Z counts")
    p.add_argument("--verify", action="store_true",
                   help="compare every exact technique's frames with the baseline's (image_diff_pixels)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--list", action="store_true", help="list the shipped scenes and the techniques")
    add_no_progress(p)
    p.set_defaults(func=run)


def _list(args) -> int:
    from pipeline_model.scene import load_scene, shipped_scenes  # lazy: the pipeline model loads only here
    from pipeline_model.techniques import available  # lazy: as above

    scenes = []
    for name in shipped_scenes():
        sc = load_scene(name)
        scenes.append({"name": name, "frames": sc.frames, "objects": len(sc.objects),
                       "description": sc.description})
    techs = available()
    if args.json:
        print(json.dumps({"scenes": scenes, "techniques": techs}))
        return 0
    print("shipped scenes:")
    for s in scenes:
        print(f"  {s['name']:<16}{s['frames']:>4} frames {s['objects']:>4} objects  {s['description']}")
    print("techniques: " + ", ".join(techs))
    return 0


def run(args) -> int:
    if args.list:
        return _list(args)
    if not args.scene:
        raise MeshoptBatchError("simulate: give a SCENE (a shipped scene name, a scene file) or --list")
    from meshopt_batch.support.limits import check_frames, check_screen_side, check_tile  # lazy: not for the parser
    from pipeline_model.pipeline import simulate  # lazy: the pipeline model loads only here

    check_frames(1 if args.frames is None else args.frames, args.first_frame, "--frames", "--first-frame")
    for value, option in ((args.width, "--width"), (args.height, "--height")):
        if value is not None:
            check_screen_side(value, option)
    check_tile(args.tile, "--tile")
    if args.csv:
        parent = Path(args.csv).parent
        if str(parent) and not parent.is_dir():
            raise MeshoptBatchError(f"--csv {args.csv}: folder {parent} does not exist")
    checks = []
    if args.check_gl:
        from ..glcheck import GLFrameCheck  # lazy: loads the GPU probe, only with --check-gl

        checks.append(GLFrameCheck())
    result = simulate(
        args.scene, split_values(args.technique) or ["baseline"], frames=args.frames,
        first_frame=args.first_frame, method=args.method, profile=args.profile or DEFAULT_PROFILE,
        width=args.width, height=args.height, tile=args.tile, costs=args.costs, images_dir=args.images,
        frame_checks=checks, check_images=args.verify,
        progress=wanted(args),
    )
    if args.csv:
        with atomic_path(args.csv) as tmp:
            result.per_frame.to_csv(tmp, index=False)
    if args.json:
        print(json.dumps(result.to_json()))
        return 0
    _print_human(result)
    return 0


def _print_human(result) -> None:
    out = sys.stdout
    print(f"{result.scene}: {result.frames} frames from {result.first_frame}, {result.width}x{result.height}, "
          f"tile {result.tile}, profile {result.profile}, optimizer {result.optimizer or 'none'}", file=out)
    if result.fallbacks:
        print("  absent meshes replaced by fallbacks: " + ", ".join(result.fallbacks), file=out)
    names = result.techniques
    base = result.technique_totals("baseline") if "baseline" in names else None
    cols = [("vertex inv.", "vertex_invocations", "{:>12,.0f}"),
            ("frag. rast.", "fragments_rasterized", "{:>13,.0f}"),
            ("frag. shaded", "fragments_shaded", "{:>13,.0f}"),
            ("overshade", "overshading", "{:>10.3f}"),
            ("tiles rend.", "tiles_rendered", "{:>12,.0f}"),
            ("skipped", "tiles_skipped", "{:>9,.0f}"),
            ("Mcycles", "cycles", "{:>10.2f}"),
            ("energy mJ", "energy", "{:>10.3f}")]
    head = f"{'technique':<10}" + "".join(f"{c[0]:>{len(c[2].format(0))}}" for c in cols)
    if base:
        head += f"{'speed-up':>10}{'energy':>8}"
    print(head, file=out)
    for name in names:
        t = result.technique_totals(name)
        line = f"{name:<10}"
        for _, key, fmt in cols:
            v = t.get(key, 0) or 0
            if key == "cycles":
                v = v / 1e6
            elif key == "energy":
                v = v / 1e6          # nJ -> mJ
            line += fmt.format(v)
        if base:
            sp = base["cycles"] / t["cycles"] if t.get("cycles") else 0.0
            en = t["energy"] / base["energy"] if base.get("energy") else 0.0
            line += f"{sp:>9.3f}x{en:>7.3f}x"
        print(line, file=out)
        extras = {k: v for k, v in t.items() if k in ("samples_per_pixel", "mssim_min",
                                                     "occlusion_prediction_accuracy",
                                                     "image_diff_pixels") and v is not None}
        cuts = t.get("mssim_after_cut")
        if isinstance(cuts, (list, tuple)) and cuts:
            # the first frame after a camera cut is not judged by DSR's MSSIM rule: shown apart
            extras["mssim_after_cut"] = " ".join(f"frame {int(f)}: {float(q):.4g}" for f, q in cuts)
        if extras:
            print("          " + ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
                                           for k, v in extras.items()), file=out)
    gl_check = result.checks.get("gl_check")
    if gl_check is not None:
        frames = gl_check["frames"]
        cov = sum(int(f.get("coverage_diff_pixels", 0)) for f in frames)
        sh = sum(int(f.get("shaded_diff_pixels", 0)) for f in frames)
        tm = sum(int(f.get("shaded_total_model", 0)) for f in frames)
        tg = sum(int(f.get("shaded_total_gl", 0)) for f in frames)
        print(f"GL check ({gl_check['renderer']}): {len(frames)} frames, coverage differs on {cov} "
              f"pixels, shaded count on {sh} pixels, shaded total model {tm:,} vs GL {tg:,}", file=out)
        for f in frames:
            for why in f.get("explanations", []) or []:
                print(f"  frame {f['frame']}: {why}", file=out)
    tm = result.timings
    print(f"wall {tm.get('total', 0):.1f} s ({tm.get('frames_per_second') or 0:.2f} frames/s; geometry "
          f"{tm.get('geometry', 0):.1f} s, binning {tm.get('binning', 0):.1f} s, raster "
          + ", ".join(f"{k} {v:.1f} s" for k, v in tm.get("raster", {}).items()) + ")", file=out)
