"""``meshopt-batch optimize`` beside ``gltfpack -noq`` on real glTF assets (issue 14).

For every asset of ``../shared/gltf`` and ``../shared/meshes/flight_helmet.glb``: predicted
vertex-shader invocations (paper 001, Algorithm 1) under nvidia_gl and amd of the input, of
our output and of gltfpack's, their vertex counts (gltfpack's welding is not always ours:
it rewrites attribute values, e.g. renormalised normals and 8-bit weights, and then merges
vertices that were not bit-identical), output bytes (the output file and every external file
it refers to) and the time of each command line (a fresh process each, start-up included):
wall seconds and CPU seconds (user + system of the child), the latter being what a shared,
loaded machine still measures faithfully.

``same-weld`` is the like-for-like comparison with gltfpack's triangle order: meshoptimizer's
``optimize_vertex_cache`` (what gltfpack runs) applied to *our* welded index buffers, under
nvidia_gl.  The last line checks the done-when of issue 14: our nvidia_gl total at most
gltfpack's where the welding is the same (equal vertex counts), never above the input on
any primitive; assets where the same-weld figure is lower are listed as notes.

Needs gltfpack from ``make setup`` (``.npm-tools/``; the gltfpack columns are left empty
without it) and the optional ``meshoptimizer`` package for the same-weld column.

Run: .venv/bin/python benchmarks/bench_assets.py [--json OUT.json]
"""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from meshes import shared_mesh_path, shared_meshes_dir  # noqa: E402
from meshopt_batch.files import atomic_write  # noqa: E402
from meshopt_batch.io import load_draws  # noqa: E402
from meshopt_batch.io.gltf_document import load_document  # noqa: E402
from meshopt_batch.io.gltf_output import resource_files  # noqa: E402
from meshopt_batch.optimizers import get_method, optimize  # noqa: E402
from meshopt_batch.reuse import predict  # noqa: E402

GLTFPACK = ROOT / ".npm-tools" / "node_modules" / ".bin" / "gltfpack"
MESHOPT_BATCH = Path(sys.executable).parent / "meshopt-batch"
PROFILES = ("nvidia_gl", "amd")


def assets() -> list[Path]:
    root = shared_meshes_dir().parent / "gltf"
    found = sorted(root.glob("*/*.gltf")) + sorted(root.glob("*/*.glb"))
    helmet = shared_mesh_path("flight_helmet.glb")
    return found + ([helmet] if helmet else [])


def files_size(path: Path) -> int:
    doc, _ = load_document(path.read_bytes(), path)
    return path.stat().st_size + sum(p.stat().st_size for p in {q.resolve() for q in resource_files(doc, path)})


def figures(path: Path) -> dict:
    """Predicted invocations per profile, triangles and vertices of a file's draws."""
    meshes, _ = load_draws(path)
    out = {p: sum(predict(m.triangles, m.vertex_count, profile=p).invocations for m in meshes) for p in PROFILES}
    out["triangles"] = sum(m.triangle_count for m in meshes)
    out["vertices"] = sum(m.vertex_count for m in meshes)
    return out


def timed(cmd: list[str]) -> tuple[tuple[float, float], subprocess.CompletedProcess]:
    """((wall seconds, child CPU seconds), the finished process)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return (wall, cpu), proc


def same_weld(path: Path) -> int | None:
    """nvidia_gl invocations of meshoptimizer's vertex-cache order on our welded buffers."""
    method = get_method("meshoptimizer")
    if not method.available:
        return None
    meshes, _ = load_draws(path)
    total = 0
    for m in meshes:
        tris = optimize(m.triangles, m.vertex_count, method=method).triangles
        total += predict(tris, m.vertex_count, profile="nvidia_gl").invocations
    return total


def run_asset(src: Path, work: Path) -> dict:
    row = {"asset": src.name, "input": figures(src), "input_bytes": files_size(src)}
    ours_dir = work / "ours" / src.parent.name
    ours_dir.mkdir(parents=True)
    ours = ours_dir / src.name
    took, proc = timed([str(MESHOPT_BATCH), "optimize", str(src), "-o", str(ours), "--json"])
    if proc.returncode:
        row["ours_error"] = proc.stderr.strip()
        return row
    report = json.loads(proc.stdout)
    row.update(ours=figures(ours), ours_bytes=files_size(ours), ours_seconds=took,
               size_limit=report["size_limit"],
               worse_primitives=[p["name"] for p in report["primitives"]
                                 if p["after"]["invocations"] > p["before"]["invocations"]])
    row["same_weld"] = same_weld(ours)
    if GLTFPACK.exists() and row["input"]["triangles"]:
        gp_dir = work / "gltfpack" / src.parent.name
        gp_dir.mkdir(parents=True)
        gp = gp_dir / (src.stem + ".glb")
        took, proc = timed([str(GLTFPACK), "-noq", "-i", str(src), "-o", str(gp)])
        if proc.returncode or not gp.exists():
            row["gltfpack_error"] = (proc.stderr or proc.stdout).strip().splitlines()[-1:]
        else:
            row.update(gltfpack=figures(gp), gltfpack_bytes=files_size(gp), gltfpack_seconds=took)
    return row


def cell(row: dict, key: str, field: str) -> str:
    part = row.get(key)
    return "" if part is None else str(part[field])


def seconds(row: dict, key: str) -> str:
    wall, cpu = row.get(key, (0.0, 0.0))
    return f"{wall:.2f}/{cpu:.2f}"


def table(rows: list[dict]) -> str:
    head = ("| asset | tris | V in/ours/gp | nvidia_gl in | ours | gltfpack | same-weld | amd in | ours | gltfpack "
            "| bytes in | ours (limit) | gltfpack | s ours wall/cpu | s gltfpack wall/cpu |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        verts = "/".join(cell(r, k, "vertices") for k in ("input", "ours", "gltfpack"))
        lines.append(
            f"| {r['asset']} | {r['input']['triangles']} | {verts} | {cell(r, 'input', 'nvidia_gl')} "
            f"| {cell(r, 'ours', 'nvidia_gl')} | {cell(r, 'gltfpack', 'nvidia_gl')} | {r.get('same_weld') or ''} "
            f"| {cell(r, 'input', 'amd')} | {cell(r, 'ours', 'amd')} | {cell(r, 'gltfpack', 'amd')} "
            f"| {r['input_bytes']} | {r.get('ours_bytes', '')} ({r.get('size_limit', '')}) "
            f"| {r.get('gltfpack_bytes', '')} | {seconds(r, 'ours_seconds')} | {seconds(r, 'gltfpack_seconds')} |")
    return "\n".join(lines)


def verdict(rows: list[dict]) -> list[str]:
    problems = []
    for r in rows:
        if "ours_error" in r:
            problems.append(f"{r['asset']}: optimize failed: {r['ours_error']}")
            continue
        if r["worse_primitives"]:
            problems.append(f"{r['asset']}: primitives worse than the input: {r['worse_primitives']}")
        if r["ours_bytes"] > r["size_limit"]:
            problems.append(f"{r['asset']}: {r['ours_bytes']} bytes over the limit {r['size_limit']}")
        gp = r.get("gltfpack")
        if gp and gp["vertices"] == r["ours"]["vertices"] and r["ours"]["nvidia_gl"] > gp["nvidia_gl"]:
            problems.append(f"{r['asset']}: nvidia_gl {r['ours']['nvidia_gl']} > gltfpack {gp['nvidia_gl']} "
                            "with the same welding")
    return problems


def same_weld_notes(rows: list[dict]) -> list[str]:
    """Assets where meshoptimizer's order on our welding predicts fewer nvidia_gl invocations."""
    return [f"note: {r['asset']}: nvidia_gl {r['ours']['nvidia_gl']} > {r['same_weld']} of meshoptimizer's "
            "order on our welding" for r in rows
            if "ours" in r and r.get("same_weld") is not None and r["ours"]["nvidia_gl"] > r["same_weld"]]


def main() -> int:
    out_json = Path(sys.argv[sys.argv.index("--json") + 1]) if "--json" in sys.argv else None
    found = assets()
    if not found:
        print("no assets: ../shared/gltf is not present")
        return 0
    if not GLTFPACK.exists():
        print("gltfpack not installed (make setup with npm present): its columns stay empty")
    work = Path(tempfile.mkdtemp(prefix="bench_assets_"))
    try:
        rows = [run_asset(src, work) for src in found]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(table(rows))
    problems = verdict(rows)
    print("\n".join(problems) if problems else
          "done-when holds: every asset optimized, no primitive worse than the input, sizes within the "
          "limit, nvidia_gl at most gltfpack's wherever the welding is the same")
    for note in same_weld_notes(rows):
        print(note)
    if out_json:
        atomic_write(out_json, json.dumps(rows, indent=1))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
