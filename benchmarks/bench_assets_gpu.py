"""Real glTF assets on a real GPU: measured vertex-shader invocations of the input, of
``meshopt-batch optimize`` and of ``gltfpack -noq``, draw by draw.

Two steps, because gltfpack (npm) and the GPU are often on different machines:

``prepare DIR``
    For every asset of :func:`bench_assets.assets`, write ``DIR/<asset>/input/`` (the asset's
    ``.gltf``/``.bin`` or ``.glb``; images are not needed), ``DIR/<asset>/ours/<name>.glb``
    (``meshopt-batch optimize`` with its defaults) and ``DIR/<asset>/gltfpack/<name>.glb``
    (``gltfpack -noq``, when installed by ``make setup``).
``measure DIR [--results RDIR]``
    On this machine's GPU (through OpenGL, or WebGPU with ``--api wgpu [--adapter NAME]``),
    count the invocations of every triangle draw of every file under ``DIR`` and predict them
    under ``nvidia_gl`` and ``nvidia_gl+16bit``.  Prints the totals per asset and variant; with
    ``--results`` writes ``<gpu>_assets_<date>.csv`` (``<gpu>_<backend>_assets_<date>.csv``
    through WebGPU; renderer string and date in every row).

gltfpack's welding is not always ours (it merges vertices whose attributes it rewrote), so
compare the variants where the ``vertices`` columns agree.

Run: .venv/bin/python benchmarks/bench_assets_gpu.py prepare DIR
     .venv/bin/python benchmarks/bench_assets_gpu.py measure DIR --results results [--api wgpu]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import warnings
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_assets  # noqa: E402
from bench_probe import _slug  # noqa: E402

from gpu_probe.corpus import load_draws  # noqa: E402
from gpu_probe.counters import api_counter, renderer_record  # noqa: E402
from meshopt_batch.model.prediction import predict  # noqa: E402
from meshopt_batch.support.errors import MeshoptBatchError  # noqa: E402
from meshopt_batch.support.files import atomic_write  # noqa: E402


def prepare(out: Path) -> None:
    for src in bench_assets.assets():
        asset = src.stem if src.parent.name == "meshes" else src.parent.name
        base = out / asset
        (base / "input").mkdir(parents=True, exist_ok=True)
        if src.suffix == ".glb":
            shutil.copy(src, base / "input" / src.name)
        else:
            for f in src.parent.iterdir():
                if f.suffix.lower() in (".gltf", ".bin"):
                    shutil.copy(f, base / "input" / f.name)
        runs = [("ours", [str(bench_assets.MESHOPT_BATCH), "optimize", str(src), "-o"])]
        if bench_assets.GLTFPACK.exists():
            runs.append(("gltfpack", [str(bench_assets.GLTFPACK), "-noq", "-i", str(src), "-o"]))
        for variant, cmd in runs:
            (base / variant).mkdir(exist_ok=True)
            proc = subprocess.run(cmd + [str(base / variant / f"{src.stem}.glb")], capture_output=True, text=True)
            if proc.returncode:
                print(f"{asset} {variant}: {(proc.stderr or proc.stdout).strip().splitlines()[-1:]}")
        print(f"prepared {asset}")


def measure(root: Path, results: Path | None, counter) -> None:
    info = renderer_record(counter.info)
    date = datetime.now(UTC).strftime("%Y-%m-%d")
    rows = []
    for path in sorted(root.glob("*/*/*")):
        if path.suffix not in (".gltf", ".glb"):
            continue
        asset, variant = path.parts[-3], path.parts[-2]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")      # point/line primitives are left out
                draws = load_draws(path)
        except MeshoptBatchError as exc:
            print(f"{asset} {variant}: {exc}")
            continue
        for k, d in enumerate(draws):
            tri = np.asarray(d.triangles)
            m = counter.measure(tri, d.vertex_count, d.index_dtype, per_vertex=False)
            rows.append({"renderer": info["renderer"], **{k: info[k] for k in ("backend",) if k in info},
                         "date": date, "asset": asset, "variant": variant,
                         "file": path.name, "draw": k, "name": d.name, "triangles": len(tri),
                         "vertices": d.vertex_count, "index_type": str(np.dtype(d.index_dtype)),
                         "measured": m.invocations, "counters_agree": m.agree,
                         **{p: predict(tri, d.vertex_count, profile=p).invocations
                            for p in ("nvidia_gl", "nvidia_gl+16bit")}})
    df = pd.DataFrame(rows)
    print(f"renderer: {info['renderer']} | {info['version']} | {date}")
    print(df.pivot_table(index="asset", columns="variant", values=["vertices", "measured"], aggfunc="sum")
          .to_string())
    exact = int((df["nvidia_gl+16bit"] == df["measured"]).sum())
    print(f"nvidia_gl+16bit predicts {exact} of {len(df)} draws exactly")
    if results is not None:
        results.mkdir(parents=True, exist_ok=True)
        atomic_write(results / f"{_slug(info['renderer'], info.get('backend'))}_assets_{date}.csv",
                     df.to_csv(index=False))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="step", required=True)
    sub.add_parser("prepare").add_argument("dir", type=Path)
    m = sub.add_parser("measure")
    m.add_argument("dir", type=Path)
    m.add_argument("--results", type=Path, metavar="RDIR")
    m.add_argument("--api", choices=("gl", "wgpu"), default="gl",
                   help="draw through OpenGL (default) or WebGPU (Vulkan, Metal, Direct3D 12)")
    m.add_argument("--adapter", metavar="NAME", help="with --api wgpu: which adapter")
    args = ap.parse_args(argv)
    if args.step == "prepare":
        prepare(args.dir)
    else:
        measure(args.dir, args.results, api_counter(args.api, args.adapter))
    return 0


if __name__ == "__main__":
    sys.exit(main())
