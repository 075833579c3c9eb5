"""``meshopt-batch probe``: measure real vertex-shader invocations on this machine's GPU.

Prints the renderer, the measured invocations / ASR of MESH next to every profile's
prediction, and with ``--experiments`` / ``--fit`` the batch-identification experiments of
paper 001 sec. 3.3 (raw step positions) and the profile fitted from them.  ``--api wgpu``
draws through WebGPU (Vulkan, Metal or Direct3D 12; ``--adapter NAME`` picks the adapter)
instead of OpenGL; ``--counter MODULE:FUNCTION`` takes the counts from a function.  The counter
is resolved here, once, and passed inward (see :mod:`gpu_probe.counters`).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from meshopt_batch.support.errors import MeshoptBatchError
from meshopt_batch.support.files import atomic_write

from ..options import add_profile, split_values


def add_parser(subparsers):
    p = subparsers.add_parser(
        "probe", help="measure vertex-shader invocations on this GPU; find its batching rules",
        description="Measure the vertex-shader invocations of MESH on this machine's GPU "
        "(headless OpenGL through moderngl/EGL, Mesa llvmpipe without a GPU; or --api wgpu: "
        "WebGPU over Vulkan, Metal or Direct3D 12, Mesa lavapipe without a GPU) and compare "
        "with every profile's prediction. --experiments runs the batch-identification "
        "experiments of paper 001 sec. 3.3; --fit turns them into a profile and checks it.",
    )
    p.add_argument("mesh", nargs="?", help="mesh to measure (OBJ, PLY, OFF, STL, glTF, GLB)")
    p.add_argument("--api", choices=("gl", "wgpu"), default="gl",
                   help="draw through OpenGL (gl, default) or WebGPU (wgpu: Vulkan, Metal or "
                   "Direct3D 12 through the wgpu package)")
    p.add_argument("--adapter", metavar="NAME",
                   help="with --api wgpu: the adapter whose name, backend and driver contain "
                   "every word of NAME (e.g. nvidia, 'llvmpipe vulkan'); default the best one")
    p.add_argument("--counter", metavar="MODULE:FUNCTION",
                   help="count invocations with FUNCTION(indices, vertex_count) -> per-vertex "
                   "counts instead of this GPU's OpenGL; MODULE may be a .py file "
                   "(e.g. gpu_probe.simulated:nvidia_gl, ./my_counter.py:count)")
    add_profile(p, multiple=True, default_help="every built-in profile and nvidia_gl+16bit")
    p.add_argument("--experiments", action="store_true",
                   help="run the sec. 3.3 experiments and report their step positions")
    p.add_argument("--fit", action="store_true",
                   help="fit a profile from the experiments and verify it (implies "
                   "--experiments)")
    p.add_argument("--name", default="fitted", help="name of the fitted profile")
    p.add_argument("--save-profile", metavar="FILE",
                   help="write the fitted profile as JSON (implies --fit); usable as "
                   "--profile FILE")
    p.add_argument("--raw", metavar="FILE",
                   help="write every raw measurement of the experiments (JSON)")
    p.add_argument("--waves", action="store_true",
                   help="also capture which vertices each subgroup/wave shaded (sec. 3.2)")
    p.add_argument("--index-type", choices=("auto", "uint16", "uint32"), default="auto",
                   help="index type to draw MESH with (auto: the file's, uint32 if too small)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def _index_dtype(choice, draw):
    import numpy as np  # lazy: the parser needs no core module

    if choice == "uint16":
        if draw.vertex_count > 65536:
            raise MeshoptBatchError(f"{draw.name}: {draw.vertex_count} vertices do not fit "
                                    "16-bit indices")
        return np.uint16
    if choice == "uint32":
        return np.uint32
    return draw.index_dtype if draw.vertex_count <= 65536 else np.uint32


def probe_mesh(path, profiles, index_type="auto", waves=False, counter=None) -> dict:
    """Measure every draw of ``path`` with ``counter`` (default OpenGL) and predict it with
    ``profiles``."""
    import numpy as np  # lazy: the probe loads only for this command

    from gpu_probe.corpus import load_draws  # lazy: as above
    from gpu_probe.counters import capture_waves_through, gl_counter  # lazy: as above
    from meshopt_batch.model.prediction import predict  # lazy: as above
    from meshopt_batch.model.profiles import get_profile  # lazy: as above

    counter = gl_counter() if counter is None else counter

    draws = load_draws(path)
    profs = [get_profile(p) for p in profiles]
    meas, per_draw = [], []
    tot = {"invocations": 0, "triangles": 0, "vertices": 0, "referenced": 0}
    preds = {p.name: 0 for p in profs}
    methods = set()
    agree = True
    wave_info = []
    for d in draws:
        tri = np.array(d.triangles, dtype=np.uint32)
        m = counter.measure(tri, d.vertex_count, _index_dtype(index_type, d))
        meas.append(m)
        methods.add(m.method)
        agree &= m.agree
        tot["invocations"] += m.invocations
        tot["triangles"] += m.triangles
        tot["vertices"] += d.vertex_count
        tot["referenced"] += m.referenced_vertices or 0
        row = {"name": d.name, "triangles": m.triangles, "vertices": d.vertex_count,
               "index_type": m.index_type, "invocations": m.invocations, "asr": m.asr,
               "method": m.method, "seconds": round(m.seconds, 4)}
        for p in profs:
            inv = predict(tri, d.vertex_count, profile=p).invocations
            preds[p.name] += inv
            row.setdefault("predicted", {})[p.name] = int(inv)
        per_draw.append(row)
        if waves:
            w = capture_waves_through(counter, tri, d.vertex_count, _index_dtype(index_type, d))
            wave_info.append({"draw": d.name, **w.to_dict(limit=16)})
    T = tot["triangles"]
    asr = tot["invocations"] / T if T else 0.0
    out = {
        "mesh": str(path), "triangles": T, "vertices": tot["vertices"],
        "measured": {
            "invocations": tot["invocations"], "asr": asr,
            "atvr": tot["invocations"] / tot["referenced"] if tot["referenced"] else None,
            "method": " / ".join(sorted(methods)), "counters_agree": bool(agree),
            "ssbo_invocations": sum(m.ssbo_invocations or 0 for m in meas),
            "query_invocations": (sum(m.query_invocations for m in meas)
                                  if all(m.query_invocations is not None for m in meas)
                                  else None),
        },
        "predictions": [
            {"profile": p.name, "invocations": int(preds[p.name]),
             "asr": preds[p.name] / T if T else 0.0,
             "error_asr": (preds[p.name] - tot["invocations"]) / T if T else 0.0,
             "exact": preds[p.name] == tot["invocations"]}
            for p in profs
        ],
    }
    if len(draws) > 1:
        out["draws"] = per_draw
    if waves:
        out["waves"] = wave_info
    return out


def run(args) -> int:
    from gpu_probe.context import gl_info  # lazy: the probe loads only for this command
    from gpu_probe.counters import api_counter, renderer_record, resolve_counter  # lazy: as above
    from gpu_probe.experiments import run_experiments  # lazy: as above
    from gpu_probe.profile_fit import fit  # lazy: as above
    from gpu_probe.waves import subgroup_support  # lazy: as above
    from meshopt_batch.model.profiles import builtin_profile_names  # lazy: as above
    from meshopt_batch.model.targets import get_target  # lazy: as above

    t0 = time.perf_counter()
    if args.save_profile:
        args.fit = True
    if args.fit:
        args.experiments = True
    if args.raw and not args.experiments:
        raise MeshoptBatchError("--raw needs --experiments or --fit")
    if args.waves and args.counter:
        raise MeshoptBatchError("--waves captures waves on a GPU (OpenGL, or --api wgpu), not through --counter")
    if args.counter and (args.api != "gl" or args.adapter):
        raise MeshoptBatchError("--counter replaces the GPU: drop --api/--adapter")
    if args.adapter and args.api != "wgpu":
        raise MeshoptBatchError("--adapter picks a WebGPU adapter: add --api wgpu")
    profiles = list(get_target(split_values(args.profile) or [*builtin_profile_names(), "nvidia_gl+16bit"]).profiles)
    if args.mesh and not Path(args.mesh).exists():
        raise MeshoptBatchError(f"{args.mesh}: no such file")
    if args.counter:
        counter = resolve_counter(args.counter)
    elif args.api == "wgpu":
        counter = api_counter("wgpu", args.adapter)  # one-line error without an adapter
    else:
        counter = None                                 # OpenGL, created on first use
    info = counter.info if counter is not None else {**gl_info(), "api": "gl"}  # one line without GL
    out = {**renderer_record(info),
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if args.counter:
        out["counter"] = args.counter
    if args.mesh:
        out.update(probe_mesh(args.mesh, profiles, args.index_type, args.waves, counter))
    suite = None
    if args.experiments:
        suite = run_experiments(counter)
        out["experiments"] = {
            name: {"steps": e.steps[:32], "derived": e.derived, "draws": len(e.totals),
                   "seconds": round(e.seconds, 3)}
            for name, e in suite.experiments.items()
        }
        out["experiments_seconds"] = round(suite.seconds, 3)
    not_saved = None
    if args.fit:
        meshes = [args.mesh] if args.mesh else []
        res = fit(suite, counter=counter, name=args.name, meshes=meshes)
        out["fitted_profile"] = res.profile.to_dict() if res.fits else None
        out["fit"] = {"exact": res.exact, "reasons": res.reasons,
                      "reproduction_mismatches": sum(v["mismatches"]
                                                     for v in res.reproduction.values()),
                      "reproduction_draws": sum(v["draws"] for v in res.reproduction.values()),
                      "verification": (res.verification.summary()
                                       if res.verification is not None else None)}
        if not res.fits:
            out["fit"]["fits"] = False
            out["fit"]["closest"] = {**res.profile.to_dict(), "error": res.error()}
            not_saved = ("no known memory kind fits these counts (closest: "
                         f"{res.profile.memory} {res.profile.memory_size}, off on "
                         f"{res.error()['mismatches']} of {res.error()['draws']} experiment draws)")
    if args.raw:
        atomic_write(args.raw, json.dumps(suite.to_dict()) + "\n")
    if args.save_profile and not_saved is None:
        atomic_write(args.save_profile, json.dumps(out["fitted_profile"], indent=2) + "\n")
    if not args.mesh and not args.experiments and not args.counter:
        out["pipeline_statistics"] = info["pipeline_statistics"]
        if args.api == "wgpu":
            from gpu_probe.wgpu_counter import adapter_records  # lazy: only this summary lists them

            out["adapters"] = adapter_records()
        else:
            route, reason = subgroup_support()
            out["subgroups"] = {"supported": route is not None, "extension": route or "",
                                "reason": reason}
    out["seconds"] = round(time.perf_counter() - t0, 3)
    if args.json:
        print(json.dumps(out))
    else:
        _print_human(out)
    if args.save_profile and not_saved is not None:
        print(f"meshopt-batch probe: {args.save_profile} not written: {not_saved}", file=sys.stderr)
        return 1
    return 0


def _print_human(out: dict) -> None:
    if "counter" in out:
        print(f"counter: {out['counter']}" + (f" ({out['version']})" if out["version"] else ""))
    elif out.get("api") == "wgpu":
        print(f"renderer: {out['renderer']} ({out['vendor']}; {out['version']})")
    else:
        print(f"renderer: {out['renderer']} ({out['vendor']}; OpenGL {out['version']})")
    if "pipeline_statistics" in out:
        print("pipeline-statistics query: " + ("yes" if out["pipeline_statistics"] else "no"))
    if "subgroups" in out:
        s = out["subgroups"]
        print("subgroup capture: " + (f"yes ({s['extension']})" if s["supported"]
                                      else f"unsupported: {s['reason']}"))
    for a in out.get("adapters", []):
        print(f"adapter: {a['adapter']}, driver {a['driver']}: storage counter "
              f"{'yes' if a['storage_counter'] else 'no'}, pipeline statistics "
              f"{'yes' if a['pipeline_statistics'] else 'no'}, wave capture "
              f"{'yes' if a['subgroup_vertex'] else 'no (no subgroup-vertex)'}")
    if "measured" in out:
        m = out["measured"]
        print(f"{out['mesh']}: {out['triangles']} triangles, {out['vertices']} vertices")
        print(f"measured: {m['invocations']} invocations, ASR {m['asr']:.4f} "
              f"(counted by {m['method']}"
              + ("" if m["counters_agree"] else "; COUNTERS DISAGREE") + ")")
        print(f"{'profile':<18}{'predicted':>11}{'ASR':>9}{'error':>9}")
        for r in out["predictions"]:
            mark = "  exact" if r["exact"] else ""
            print(f"{r['profile']:<18}{r['invocations']:>11}{r['asr']:>9.4f}"
                  f"{r['error_asr']:>+9.4f}{mark}")
        for w in out.get("waves", []):
            if w["supported"]:
                print(f"waves ({w['draw']}): {w['wave_count']} waves of up to "
                      f"{w['subgroup_size']} lanes via {w['extension']}, "
                      f"{w['partial_wave_count']} of them partial")
            else:
                print(f"waves: unsupported: {w['reason']}")
    if "experiments" in out:
        print(f"experiments ({out['experiments_seconds']:.1f} s): step positions")
        for name, e in out["experiments"].items():
            steps = e["steps"][:8]
            more = " ..." if len(e["steps"]) > 8 else ""
            derived = ", ".join(f"{k}={v}" for k, v in e["derived"].items()
                                if not isinstance(v, (list, dict)))
            print(f"  {name:<15} steps {steps}{more}  {derived}")
    if "fit" in out:
        f = out["fit"]
        p = out["fitted_profile"] or f["closest"]
        what = "fitted profile" if out["fitted_profile"] else "no known memory kind fits; closest"
        print(f"{what} '{p['name']}': max_size={p['max_size']} "
              f"max_uniques={p['max_uniques']} memory={p['memory']} {p['memory_size']}"
              + (" +16bit" if p["boundary_16bit"] else ""))
        for r in f["reasons"]:
            print(f"  {r}")
        print(f"  reproduces {f['reproduction_draws'] - f['reproduction_mismatches']}/"
              f"{f['reproduction_draws']} experiment draws exactly")
        v = f["verification"]
        if v:
            print(f"  verification: {v['cases'] - v['mismatches']}/{v['cases']} cases exact, "
                  f"MSE(ASR) {v['mse_asr']:.3g}, max error {v['max_abs_error']} invocations")
