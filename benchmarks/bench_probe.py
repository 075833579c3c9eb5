"""GPU probe: how fast it measures, and what llvmpipe-aware ordering buys, on this machine.

Prints
* the experiment suite's wall time (budget 120 s) and the fitted profile;
* probing the 1.1 M-triangle ``bunny_sub2`` end to end (load, measure, predict every
  built-in profile; budget 30 s) and the raw counting throughput;
* the measured ASR of the bunny in meshoptimizer's order, renumbered by first use
  (meshoptimizer's ``optimize_vertex_fetch``, the peer), by :func:`renumber_for_direct_cache`
  and by :func:`optimize_for_direct_cache`, with ratios against meshoptimizer.

With ``--simulated`` it needs no GPU: it runs the experiments and the blind fit against every
simulated GPU of :mod:`gpu_probe.simulated` and prints what was found, the reproduction of the
experiment draws and the verification on 200 random buffers and the small shared meshes in
three orders.  ``--counter MODULE:FUNCTION`` runs the experiment part against any counter.

With ``--optimizers`` it measures, on this GPU, every optimizer's order of every shared mesh
(as each method returns it, and renumbered by first use as meshoptimizer's
``optimize_vertex_fetch`` / gltfpack do afterwards), next to the ``nvidia_gl`` and
``nvidia_gl+16bit`` predictions, with each method's ratio to meshoptimizer's measured ASR.

With ``--waves`` it captures which vertices each wave (subgroup) shaded (paper 001 sec. 3.2)
for the small shared meshes in three orders and counts the waves whose shaded vertices equal
those of one batch of the fitted profile's Algorithm 1 (as multisets: waves run concurrently,
so their order is not the batches' order).  On a GPU that shades each batch in one wave, every
wave should equal a batch.

``--api wgpu`` measures through WebGPU (Vulkan, Metal or Direct3D 12; ``--adapter NAME`` picks
the adapter) instead of OpenGL; the files are then named ``<gpu>_<backend>_*`` (e.g.
``llvmpipe_vulkan_experiments_<date>.json``) and their records name the API, backend, adapter
and driver.  ``--waves`` through WebGPU needs an adapter with ``subgroup-vertex``.

With ``--results DIR`` it also writes the raw results, each with the renderer string and
the date: ``<gpu>_experiments_<date>.json`` (every experiment draw's measured invocations,
the fitted profile and its verification), ``<gpu>_accuracy_<date>.csv`` /
``<gpu>_mse_<date>.csv`` / ``<gpu>_accuracy_<date>.png`` (predicted vs measured ASR per
profile, paper 001 Fig. 2), ``<gpu>_renumber_<date>.json`` and, with ``--optimizers``,
``<gpu>_optimizers_<date>.csv`` and, with ``--waves``, ``<gpu>_waves_<date>.csv``.

Run: .venv/bin/python benchmarks/bench_probe.py [--results results] [--api gl|wgpu] [--adapter NAME]
     [--simulated] [--optimizers] [--waves]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpu_probe import simulated  # noqa: E402
from gpu_probe.accuracy import accuracy_table, mse_by_order, mse_table, plot_accuracy  # noqa: E402
from gpu_probe.context import GLUnavailableError  # noqa: E402
from gpu_probe.corpus import _cache, load_draws, optimize_order, ordered, shared_meshes_dir  # noqa: E402
from gpu_probe.counters import (  # noqa: E402
    FunctionCounter,
    api_counter,
    capture_waves_through,
    renderer_record,
    resolve_counter,
)
from gpu_probe.experiments import run_experiments  # noqa: E402
from gpu_probe.profile_fit import fit  # noqa: E402
from meshes import shared_mesh_path  # noqa: E402
from meshopt_batch.model.prediction import predict  # noqa: E402
from meshopt_batch.model.profiles import builtin_profile_names, get_profile  # noqa: E402
from meshopt_batch.optimizers import get_method, optimize  # noqa: E402
from meshopt_batch.optimizers.renumber import (  # noqa: E402
    optimize_for_direct_cache,
    renumber_first_use,
    renumber_for_direct_cache,
    segment_lower_bound,
)
from meshopt_batch.support.errors import MeshoptBatchError  # noqa: E402
from meshopt_batch.support.files import atomic_write  # noqa: E402
from meshopt_batch_app.commands.probe import probe_mesh  # noqa: E402

SMALL_MESHES = ("tree_quaternius_birch8.ply", "dragon_res3.ply", "flight_helmet.glb")


def _slug(renderer: str, backend: str | None = None) -> str:
    first = re.split(r"[\s(]", renderer.strip(), maxsplit=1)[0].lower()
    slug = re.sub(r"[^a-z0-9]+", "", first) or "gpu"
    return f"{slug}_{re.sub(r'[^a-z0-9]+', '', backend.lower())}" if backend else slug


def bench_experiments(counter=None):
    suite = run_experiments(counter)
    res = fit(suite, counter=counter, name=_slug(suite.renderer), meshes=[], random_count=120)
    draws = sum(len(e.totals) for e in suite.experiments.values())
    print(f"experiments: {len(suite.experiments)} experiments, {draws} draws in "
          f"{suite.seconds:.2f} s (budget 120 s: {suite.seconds / 120:.3f} of it)")
    p = res.profile
    print(f"fitted: max_size={p.max_size} max_uniques={p.max_uniques} memory={p.memory} "
          f"{p.memory_size}; exact={res.exact} "
          f"({len(res.verification.rows)} random buffers)")
    return suite, res


def bench_simulated():
    """The blind fit against every simulated GPU: what it found and how exactly it predicts."""
    meshes = [p for p in (shared_mesh_path(n) for n in SMALL_MESHES) if p is not None]
    print(f"{'simulated GPU':<16}{'seconds':>8}  {'fitted profile':<32}{'experiment draws':>17}"
          f"{'verification':>13}")
    for name, fn in simulated.SIMULATED.items():
        t0 = time.perf_counter()
        res = fit(counter=FunctionCounter(fn, name), name=name, meshes=meshes, random_count=200)
        p, v, e = res.profile, res.verification.summary(), res.error()
        found = (f"{p.max_size}/{p.max_uniques} {p.memory} {p.memory_size}" + (" +16bit" if p.boundary_16bit else "")
                 + ("" if res.fits else " (closest)"))
        print(f"{name:<16}{time.perf_counter() - t0:>8.1f}  {found:<32}"
              f"{e['draws'] - e['mismatches']:>8}/{e['draws']:<8}{v['cases'] - v['mismatches']:>6}/{v['cases']:<6}")


def bench_large(meshes_dir, counter):
    path = meshes_dir / "bunny_sub2.ply" if meshes_dir else None
    if path is None or not path.exists():
        print("large mesh: bunny_sub2.ply not found, skipped")
        return None
    _cache.clear()
    t0 = time.perf_counter()
    out = probe_mesh(path, [*builtin_profile_names(), "nvidia_gl+16bit"], counter=counter)
    dt = time.perf_counter() - t0
    d = load_draws(path)[0]
    tri = np.array(d.triangles)
    best = min(counter.measure(tri, d.vertex_count, per_vertex=False).seconds for _ in range(3))
    print(f"probe of {out['triangles']:,} triangles: {dt:.2f} s end to end (budget 30 s: "
          f"{dt / 30:.3f} of it); counting alone {best * 1e3:.0f} ms = "
          f"{tri.size / best / 1e6:.1f} M indices/s; measured ASR {out['measured']['asr']:.4f}")
    return {"triangles": out["triangles"], "seconds_end_to_end": dt, "seconds_counting": best,
            "measured": out["measured"], "predictions": out["predictions"]}


def bench_renumber(meshes_dir, counter, names=("bunny.ply",)):
    rows = []
    if meshes_dir is None:
        print("renumbering: shared meshes not found, skipped")
        return rows
    print(f"{'mesh':<22}{'original':>9}{'meshopt':>9}{'+first-use':>11}{'+renumber':>10}"
          f"{'+segments':>10}{'vs meshopt':>11}{'seconds':>8}")
    for name in names:
        path = meshes_dir / name
        if not path.exists():
            continue
        for d in load_draws(path):
            V = d.vertex_count
            tri = np.array(d.triangles)
            opt, how = optimize_order(tri, V)

            def asr(t, V=V, dtype=d.index_dtype):
                return counter.measure(t, V, dtype, per_vertex=False).asr

            fu, _ = renumber_first_use(opt, V)
            rn, _ = renumber_for_direct_cache(opt, V)
            t0 = time.perf_counter()
            best, _ = optimize_for_direct_cache(opt, V)
            secs = time.perf_counter() - t0
            r = {"mesh": d.name, "triangles": d.triangle_count, "optimizer": how,
                 "original": asr(tri), "meshopt": asr(opt), "meshopt+first_use": asr(fu),
                 "meshopt+renumber": asr(rn), "meshopt+segments+renumber": asr(best),
                 "renumber_lower_bound": segment_lower_bound(opt) / d.triangle_count,
                 "seconds": secs}
            rows.append(r)
            print(f"{d.name[:21]:<22}{r['original']:>9.4f}{r['meshopt']:>9.4f}"
                  f"{r['meshopt+first_use']:>11.4f}{r['meshopt+renumber']:>10.4f}"
                  f"{r['meshopt+segments+renumber']:>10.4f}"
                  f"{r['meshopt+segments+renumber'] / r['meshopt']:>10.3f}x{secs:>8.2f}")
    return rows


OPTIMIZERS = (("original", "original", None), ("meshoptimizer", "meshoptimizer", None),
              ("tipsify", "tipsify", None), ("forsyth", "forsyth", None), ("kcache", "kcache", None),
              ("hoppe", "hoppe", None), ("batch", "batch", "nvidia_gl"), ("portable", "batch", "portable"))
"""(label, method, target): ``batch`` is the order for ``nvidia_gl`` (the default before the
``portable`` target), ``portable`` the default order for assets."""


def bench_optimizers(meshes_dir, counter):
    """Measured ASR of every optimizer's order on this GPU (pandas table, one row per order)."""
    profiles = {p: get_profile(p) for p in ("nvidia_gl", "nvidia_gl+16bit")}
    rows = []
    paths = sorted(meshes_dir.glob("*.ply")) + sorted(meshes_dir.glob("*.glb")) if meshes_dir else []
    for path in paths:
        for d in load_draws(path):
            tri = np.array(d.triangles)
            for name, method_name, target in OPTIMIZERS:
                method = get_method(method_name)
                if not method.available:
                    continue
                t0 = time.perf_counter()
                res = optimize(tri, d.vertex_count, method=method, profile=target)
                secs = time.perf_counter() - t0
                V = len(res.vertex_remap) if res.vertex_remap is not None else d.vertex_count
                first_use, _ = renumber_first_use(np.asarray(res.triangles, np.uint32), V)
                for numbering, t in (("as returned", np.asarray(res.triangles)), ("first use", first_use)):
                    m = counter.measure(t, V, per_vertex=False)
                    row = {"mesh": d.name, "triangles": d.triangle_count, "vertices": V,
                           "method": name, "numbering": numbering, "measured": m.invocations,
                           "measured_asr": m.invocations / d.triangle_count, "seconds": secs}
                    for p, prof in profiles.items():
                        row[f"{p}_asr"] = predict(t, V, profile=prof).invocations / d.triangle_count
                    rows.append(row)
    df = pd.DataFrame(rows)
    if len(df):
        peer = df[df.method == "meshoptimizer"].set_index(["mesh", "numbering"]).measured_asr
        df["vs_meshoptimizer"] = [r.measured_asr / peer.get((r.mesh, r.numbering), np.nan)
                                  for r in df.itertuples()]
        table = df.pivot_table(index=["mesh", "numbering"], columns="method", values="measured_asr",
                               sort=False)
        print("measured ASR on this GPU, per optimizer (columns) and vertex numbering:")
        print(table.round(4).to_string())
    return df


WAVE_MESHES = ("tree_quaternius_birch8.ply", "bunny.ply", "dragon_res3.ply", "tree.ply", "flight_helmet.glb")


def bench_waves(profile, counter=None):
    """Waves against the batches of ``profile`` (pandas table, one row per draw and order),
    captured through ``counter``'s API (default OpenGL)."""
    rows = []
    for path in (p for p in (shared_mesh_path(n) for n in WAVE_MESHES) if p is not None):
        for d in load_draws(path):
            for order in ("original", "shuffled", "optimized"):
                tri = ordered(d, order, 0)
                w = capture_waves_through(counter, tri, d.vertex_count, d.index_dtype)
                if not w.supported:
                    print(f"waves: {w.reason}")
                    return pd.DataFrame()
                p = predict(tri, d.vertex_count, profile=profile, return_batches=True)
                ends = [*p.batch_starts[1:], len(tri)]
                batches = Counter()
                for a, b in zip(p.batch_starts, ends, strict=True):
                    q = predict(tri[a:b], d.vertex_count, profile=profile, per_vertex=True)
                    batches[tuple(np.repeat(np.arange(d.vertex_count), q.shaded_per_vertex).tolist())] += 1
                waves = Counter(tuple(sorted(x.tolist())) for x in w.waves)
                rows.append({"mesh": d.name, "order": order, "triangles": len(tri), "profile": profile.name,
                             "batches": len(ends), "waves": len(w.waves), "subgroup_size": w.subgroup_size,
                             "waves_equal_to_a_batch": sum((waves & batches).values()),
                             "invocations_model": p.invocations, "invocations_waves": w.invocations})
    df = pd.DataFrame(rows)
    print(f"waves equal to one batch of {profile.name}: {df.waves_equal_to_a_batch.sum():,} of "
          f"{df.waves.sum():,} waves ({len(df)} draws x orders); batches {df.batches.sum():,}")
    return df


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", metavar="DIR", help="write raw results into DIR")
    ap.add_argument("--all-meshes", action="store_true",
                    help="renumbering table for every shared mesh (default: bunny)")
    ap.add_argument("--simulated", action="store_true",
                    help="blind fit against every simulated GPU (no GPU needed)")
    ap.add_argument("--optimizers", action="store_true",
                    help="measure every optimizer's order of every shared mesh on this GPU")
    ap.add_argument("--waves", action="store_true",
                    help="compare the waves the GPU ran with the fitted profile's batches")
    ap.add_argument("--counter", metavar="MODULE:FUNCTION",
                    help="run the experiments and the fit against this counter only")
    ap.add_argument("--api", choices=("gl", "wgpu"), default="gl",
                    help="draw through OpenGL (default) or WebGPU (Vulkan, Metal, Direct3D 12)")
    ap.add_argument("--adapter", metavar="NAME", help="with --api wgpu: which adapter")
    args = ap.parse_args(argv)
    if args.simulated:
        bench_simulated()
        return 0
    if args.counter:
        bench_experiments(resolve_counter(args.counter))
        return 0
    try:
        counter = api_counter(args.api, args.adapter)
    except GLUnavailableError:
        print("bench_probe: no OpenGL context; skipped")
        return 0
    except MeshoptBatchError as exc:
        print(f"bench_probe: {exc}", file=sys.stderr)
        return 2
    rec = renderer_record(counter.info)
    date = datetime.now(UTC).strftime("%Y-%m-%d")
    print(" | ".join(str(v) for v in rec.values()) + f" | {date}")
    meshes_dir = shared_meshes_dir()
    suite, res = bench_experiments(counter)
    large = bench_large(meshes_dir, counter)
    names = ("bunny.ply",)
    if args.all_meshes and meshes_dir is not None:
        names = tuple(p.name for p in sorted(meshes_dir.glob("*.ply")))
    ren = bench_renumber(meshes_dir, counter, names)
    opt = bench_optimizers(meshes_dir, counter) if args.optimizers else None
    waves = bench_waves(res.profile, counter) if args.waves else None
    if args.results:
        out = Path(args.results)
        out.mkdir(parents=True, exist_ok=True)
        slug = _slug(rec["renderer"], rec.get("backend"))
        head = {**rec, "date": date}
        atomic_write(out / f"{slug}_experiments_{date}.json", json.dumps(
            {**head, "experiments": suite.to_dict(), "fit": res.to_dict(),
             "verification_rows": res.verification.rows if res.verification else []},
        ) + "\n")
        if meshes_dir is not None:
            df = accuracy_table(counter=counter)
            df.insert(0, "date", date)
            if rec.get("api") == "wgpu":
                for k in ("driver", "backend", "api"):
                    df.insert(1, k, rec[k])
            atomic_write(out / f"{slug}_accuracy_{date}.csv", df.to_csv(index=False))
            mse = mse_table(df)
            mse.insert(0, "renderer", rec["renderer"])
            mse.insert(1, "date", date)
            atomic_write(out / f"{slug}_mse_{date}.csv", mse.to_csv())
            atomic_write(out / f"{slug}_mse_by_order_{date}.csv", mse_by_order(df).to_csv())
            plot_accuracy(df, out / f"{slug}_accuracy_{date}.png")
            print("MSE of predicted ASR (best 8):")
            print(mse.head(8)[["mse", "max_abs_error", "exact_cases", "cases"]].to_string())
        atomic_write(out / f"{slug}_renumber_{date}.json", json.dumps(
            {**head, "large_probe": large, "rows": ren}, indent=1, default=float) + "\n")
        if opt is not None and len(opt):
            opt.insert(0, "renderer", rec["renderer"])
            opt.insert(1, "date", date)
            atomic_write(out / f"{slug}_optimizers_{date}.csv", opt.to_csv(index=False))
        if waves is not None and len(waves):
            waves.insert(0, "renderer", rec["renderer"])
            waves.insert(1, "date", date)
            atomic_write(out / f"{slug}_waves_{date}.csv", waves.to_csv(index=False))
        print(f"results written to {out}/{slug}_*_{date}.*")
    return 0


if __name__ == "__main__":
    sys.exit(main())
