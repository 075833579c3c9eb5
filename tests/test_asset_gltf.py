"""Asset-grade ``optimize`` on the real glTF assets of ``../shared/gltf`` (issue 14).

For every asset (and ``../shared/meshes/flight_helmet.glb``) the output must:

* pass the Khronos glTF validator with no error or warning the input did not have (needs
  node and the ``gltf-validator`` npm package, installed by ``make setup`` into
  ``.npm-tools/``; skipped with the reason otherwise);
* draw the same triangles: every triangle's tuple of per-corner attribute bytes (all
  attributes and morph-target deltas) is the input's, as a multiset, up to a rotation of
  each triangle's corners;
* keep the document's structure: scenes, nodes, skins, animations, materials, textures,
  images, cameras, extensions and every primitive's attributes, material and targets equal;
  accessors read by skins and animations untouched;
* be no bigger than the input plus 1% plus what the optimization adds (``size_limit``);
* predict, per primitive, at most the input's nvidia_gl invocations, and in total what
  ``analyze`` reads back from the written file.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from meshes import shared_mesh_path, shared_meshes_dir
from meshopt_batch.asset import AssetOptions, optimize_file
from meshopt_batch.io import load_meshes
from meshopt_batch.io.gltf_document import load_document, read_accessor
from meshopt_batch.io.gltf_draws import strip_fan_to_list
from meshopt_batch.io.gltf_output import resource_files
from meshopt_batch.optimizers import get_method
from meshopt_batch.profiles import get_profile
from meshopt_batch.reuse import predict
from meshopt_batch.weld import vertex_records

ROOT = Path(__file__).resolve().parent.parent
SHARED_GLTF = shared_meshes_dir().parent / "gltf"
VALIDATOR_SCRIPT = ROOT / "tests" / "gltf_validator.js"
NODE_MODULES = ROOT / ".npm-tools" / "node_modules"


def shared_assets() -> list[Path]:
    found = sorted(SHARED_GLTF.glob("*/*.gltf")) + sorted(SHARED_GLTF.glob("*/*.glb"))
    helmet = shared_mesh_path("flight_helmet.glb")
    return found + ([helmet] if helmet else [])


ASSETS = shared_assets()
needs_assets = pytest.mark.skipif(not ASSETS, reason="../shared/gltf is not present")


def validator_missing() -> str | None:
    if shutil.which("node") is None:
        return "node is not installed (the glTF validator runs on node)"
    if not (NODE_MODULES / "gltf-validator").is_dir():
        return "gltf-validator is not installed in .npm-tools/ (run `make setup` with npm present)"
    return None


def validate(paths: list[Path]) -> list[dict]:
    env = dict(os.environ, NODE_PATH=str(NODE_MODULES))
    proc = subprocess.run(["node", str(VALIDATOR_SCRIPT), *map(str, paths)], capture_output=True, text=True,
                          env=env, timeout=300, check=True)
    return [json.loads(line) for line in proc.stdout.splitlines()]


def options(**kw) -> AssetOptions:
    return AssetOptions(get_method("batch"), get_profile("nvidia_gl"), **kw)


def read(path: Path):
    return load_document(path.read_bytes(), path)


def corner_records(doc, buffers, prim) -> np.ndarray:
    """``(T, 3)`` void records: every corner's bytes over all attributes and targets."""
    arrays = [read_accessor(doc, buffers, prim["attributes"][k])[0] for k in sorted(prim["attributes"])]
    for target in prim.get("targets", []):
        arrays += [read_accessor(doc, buffers, target[k])[0] for k in sorted(target)]
    count = arrays[0].shape[0]
    records = vertex_records(arrays, count)
    if "indices" in prim:
        flat = read_accessor(doc, buffers, prim["indices"])[0].reshape(-1).astype(np.int64)
    else:
        flat = np.arange(count, dtype=np.int64)
    return records[strip_fan_to_list(flat, int(prim.get("mode", 4)))]


def same_triangles(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two ``(T, 3)`` corner-record arrays hold the same triangles as a multiset, each
    triangle up to a rotation of its corners (winding kept)."""
    if a.shape != b.shape:
        return False
    _, ids = np.unique(np.concatenate([a.reshape(-1), b.reshape(-1)]), return_inverse=True)
    ids = ids.reshape(-1, 3).astype(np.int64)
    base = int(ids.max()) + 1 if ids.size else 1
    rotations = np.stack([ids, np.roll(ids, -1, axis=1), np.roll(ids, -2, axis=1)], axis=1)
    keys = ((rotations[:, :, 0] * base + rotations[:, :, 1]) * base + rotations[:, :, 2]).min(axis=1)
    return np.array_equal(np.sort(keys[: a.shape[0]]), np.sort(keys[a.shape[0]:]))


def structure(doc: dict) -> dict:
    """The document without its binary layout and index data."""
    out = {k: v for k, v in doc.items() if k not in ("accessors", "bufferViews", "buffers")}
    out["meshes"] = [dict(m, primitives=[{k: v for k, v in p.items() if k not in ("indices", "mode")}
                                         for p in m.get("primitives", [])]) for m in doc.get("meshes", [])]
    return out


def non_draw_accessors(doc: dict) -> set[int]:
    out = set()
    for skin in doc.get("skins", []):
        if "inverseBindMatrices" in skin:
            out.add(int(skin["inverseBindMatrices"]))
    for anim in doc.get("animations", []):
        for s in anim.get("samplers", []):
            out.update(int(s[k]) for k in ("input", "output") if k in s)
    return out


def files_size(doc: dict, main: Path) -> int:
    return main.stat().st_size + sum(p.stat().st_size for p in {q.resolve() for q in resource_files(doc, main)})


def check_asset(src: Path, out: Path, report) -> None:
    doc_in, buf_in = read(src)
    doc_out, buf_out = read(out)
    assert structure(doc_out) == structure(doc_in)
    for a in non_draw_accessors(doc_in):
        assert doc_out["accessors"][a] == doc_in["accessors"][a]
        assert np.array_equal(read_accessor(doc_out, buf_out, a)[0], read_accessor(doc_in, buf_in, a)[0])
    for mi, mesh in enumerate(doc_in.get("meshes", [])):
        for pi, prim in enumerate(mesh["primitives"]):
            out_prim = doc_out["meshes"][mi]["primitives"][pi]
            if int(prim.get("mode", 4)) not in (4, 5, 6):
                assert out_prim == prim
                continue
            assert same_triangles(corner_records(doc_in, buf_in, prim), corner_records(doc_out, buf_out, out_prim)), \
                f"{src.name} mesh {mi} primitive {pi}"
    assert report.bytes_before == files_size(doc_in, src)
    assert report.bytes_after == files_size(doc_out, out)
    assert report.bytes_after <= report.size_limit
    for p in report.primitives:
        assert p["after"]["invocations"] <= p["before"]["invocations"], p["name"]
    drawn = load_meshes(out) if report.triangles else []
    assert sum(predict(m.triangles, m.vertex_count, profile="nvidia_gl").invocations for m in drawn) == \
        report.after["invocations"]


@needs_assets
@pytest.mark.parametrize("src", ASSETS, ids=lambda p: p.name)
def test_shared_asset_optimizes_losslessly(tmp_path, src):
    out = tmp_path / src.name
    report = optimize_file(src, out, options())
    check_asset(src, out, report)
