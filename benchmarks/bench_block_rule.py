"""The 2^16 block rule of ``+16bit`` profiles, checked against this GPU draw by draw.

Paper 001 sec. 3.3 reports that NVIDIA's reuse "may not occur" in batches whose indices cross a
multiple of 2^16 and leaves the rule open.  This benchmark draws about 12,000 index buffers
built to tell candidate rules apart (:func:`gpu_probe.experiments.block_rule_buffers`):

* ``single_*``: one batch each (at most 14 or 32 triangles, at most 32 distinct vertices) from
  vertex pools in two or three 2^16 blocks, in adjacent blocks (just below and above 2^16 or
  2^17), in far blocks (0 and 3 * 2^16), and far apart inside one block (the control
  ``single_sameblock_far``); ``single_ctrl`` is ``single_2blocks`` moved 2^15 down (one block);
* ``multi_window``: 1 to 700 triangles over 32, 128 or 512 vertices centred on 2^16;
* ``multi_walk``: 50 to 3,000 triangles of a random walk across 2^16 (mesh-like locality).

It counts every draw's invocations and every referenced vertex's invocations on this machine's
GPU and prints, per group, how many draws ``nvidia_gl+16bit`` (an index in another block than
the index before it empties the look-back) and plain ``nvidia_gl`` predict exactly, totals and
per-vertex counts both.  ``--api wgpu [--adapter NAME]`` draws through WebGPU (Vulkan, Metal,
Direct3D 12) instead of OpenGL.  ``--results DIR`` writes ``<gpu>_block_rule_<seed>_<date>.npz``
(``<gpu>_<backend>_...`` through WebGPU; renderer, driver version, date, seed, per group the
totals and the per-vertex counts of each draw's referenced vertices in increasing vertex order);
the buffers come back from the seed.
``--check FILE`` runs the same comparison on such a file without a GPU.

Run: .venv/bin/python benchmarks/bench_block_rule.py [--seed 8] [--results results] [--api wgpu]
     .venv/bin/python benchmarks/bench_block_rule.py --check results/nvidia_block_rule_8_2026-11-25.npz
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_probe import _slug  # noqa: E402

from gpu_probe.counters import api_counter, renderer_record  # noqa: E402
from gpu_probe.experiments import block_rule_buffers  # noqa: E402
from meshopt_batch.model.prediction import predict  # noqa: E402
from meshopt_batch.support.files import atomic_write  # noqa: E402


def measure(groups, counter) -> dict[str, tuple[np.ndarray, list[np.ndarray]]]:
    """Totals and per-vertex counts (at each draw's referenced vertices) from ``counter``."""
    out = {}
    for name, bufs in groups.items():
        V = max(int(b.max()) for b in bufs) + 1
        totals, per_vertex = [], []
        step = max(1, int(2e7 // V))             # bound the (draws, V) per-vertex array
        for i in range(0, len(bufs), step):
            chunk = bufs[i:i + step]
            tot, per, q = counter.measure_many(chunk, V, per_vertex=True, with_query=True)
            if q is not None and not np.array_equal(q, tot):
                raise SystemExit(f"{name}: the pipeline-statistics query and the storage count disagree")
            totals.append(tot)
            per_vertex += [per[j, np.unique(b)] for j, b in enumerate(chunk)]
        out[name] = (np.concatenate(totals), per_vertex)
    return out


def compare(groups, measured) -> list[dict]:
    """Per group: draws, and draws predicted exactly (totals and per-vertex) per profile."""
    rows = []
    for name, bufs in groups.items():
        totals, per_vertex = measured[name]
        row = {"group": name, "draws": len(bufs)}
        for prof in ("nvidia_gl+16bit", "nvidia_gl"):
            exact = 0
            for b, t, pv in zip(bufs, totals, per_vertex, strict=True):
                p = predict(b.reshape(-1, 3), int(b.max()) + 1, profile=prof, per_vertex=True)
                exact += int(p.invocations == t and np.array_equal(p.shaded_per_vertex[np.unique(b)], pv))
            row[prof] = exact
        rows.append(row)
    return rows


def save(path: Path, renderer: str, version: str, date: str, seed: int, measured) -> None:
    arrays = {"renderer": np.array(renderer), "version": np.array(version), "date": np.array(date),
              "seed": np.array(seed)}
    for name, (totals, per_vertex) in measured.items():
        arrays[f"{name}__totals"] = np.asarray(totals, np.uint32)
        arrays[f"{name}__per_vertex"] = np.concatenate(per_vertex).astype(np.uint16)
        arrays[f"{name}__sizes"] = np.array([p.size for p in per_vertex], np.uint32)
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    atomic_write(path, buf.getvalue())


def load(path: Path):
    """``(renderer, date, seed, {group: (totals, [per-vertex counts per draw])})``; the GL
    version string is in the file as ``version``."""
    z = np.load(path)
    measured = {}
    for key in z.files:
        if key.endswith("__totals"):
            name = key.removesuffix("__totals")
            ends = np.cumsum(z[f"{name}__sizes"])
            measured[name] = (z[key].astype(np.int64),
                              np.split(z[f"{name}__per_vertex"].astype(np.int64), ends[:-1]))
    return str(z["renderer"]), str(z["date"]), int(z["seed"]), measured


def report(rows) -> None:
    df = pd.DataFrame(rows).set_index("group")
    print(df.to_string())
    print(f"nvidia_gl+16bit exact on {df['nvidia_gl+16bit'].sum():,} of {df.draws.sum():,} draws; "
          f"plain nvidia_gl on {df['nvidia_gl'].sum():,}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=8)
    ap.add_argument("--results", type=Path, metavar="DIR", help="write the measurements into DIR")
    ap.add_argument("--check", type=Path, metavar="FILE", help="compare a results file, no GPU")
    ap.add_argument("--api", choices=("gl", "wgpu"), default="gl",
                    help="draw through OpenGL (default) or WebGPU (Vulkan, Metal, Direct3D 12)")
    ap.add_argument("--adapter", metavar="NAME", help="with --api wgpu: which adapter")
    args = ap.parse_args(argv)
    if args.check:
        renderer, date, seed, measured = load(args.check)
        print(f"{args.check}: {renderer}, {date}, seed {seed}")
        report(compare(block_rule_buffers(seed), measured))
        return 0
    counter = api_counter(args.api, args.adapter)
    info = renderer_record(counter.info)
    date = datetime.now(UTC).strftime("%Y-%m-%d")
    groups = block_rule_buffers(args.seed)
    t0 = time.perf_counter()
    measured = measure(groups, counter)
    print(f"renderer: {info['renderer']} | {info['version']} | {date}; "
          f"{sum(map(len, groups.values())):,} draws in {time.perf_counter() - t0:.1f} s")
    report(compare(groups, measured))
    if args.results:
        args.results.mkdir(parents=True, exist_ok=True)
        save(args.results / f"{_slug(info['renderer'], info.get('backend'))}_block_rule_{args.seed}_{date}.npz",
             info["renderer"], info["version"], date, args.seed, measured)
    return 0


if __name__ == "__main__":
    sys.exit(main())
