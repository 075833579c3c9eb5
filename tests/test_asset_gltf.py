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
from meshopt_batch.assets.file_optimization import AssetOptions, optimize_file
from meshopt_batch.io import load_meshes
from meshopt_batch.io.gltf.draw_census import strip_fan_to_list
from meshopt_batch.io.gltf.file_packaging import resource_files
from meshopt_batch.io.gltf.gltf_document import load_document, read_accessor
from meshopt_batch.model.prediction import predict
from meshopt_batch.model.profiles import get_profile
from meshopt_batch.optimizers import get_method
from meshopt_batch.vertices.weld import vertex_records

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


def problems(report: dict) -> dict[str, int]:
    """Errors and warnings of a validator report, counted by code."""
    return {code: n for code, n in report["counts"].items() if report["severities"][code] <= 1}


@needs_assets
@pytest.mark.parametrize("src", ASSETS, ids=lambda p: p.name)
def test_shared_asset_output_passes_the_validator(tmp_path, src):
    reason = validator_missing()
    if reason:
        pytest.skip(reason)
    out = tmp_path / src.name
    optimize_file(src, out, options())
    before, after = validate([src, out])
    new = {code: n for code, n in problems(after).items() if n > problems(before).get(code, 0)}
    assert not new, f"{src.name}: new validator errors/warnings {new}"


def asset(folder: str, name: str) -> Path:
    path = SHARED_GLTF / folder / name
    if not path.is_file():
        pytest.skip(f"{path} is not present")
    return path


def test_fox_is_welded_indexed_and_beats_gltfpack(tmp_path):
    report = optimize_file(asset("Fox", "Fox.glb"), tmp_path / "fox.glb", options())
    (prim,) = report.primitives
    assert (report.vertices_before, report.vertices_after) == (1728, 434)
    assert (prim["welded"], prim["index_type_before"], prim["index_type_after"]) == (1294, "none", "uint16")
    assert (report.before["invocations"], report.after["invocations"]) == (1728, 525)
    assert report.after["asr"] <= 529 / 576  # gltfpack -noq 1.3: 529 invocations for the same 434 vertices
    assert report.bytes_after == 109504 < report.bytes_before == 162852


def test_shared_accessors_stay_shared_and_files_stay_external(tmp_path):
    src = asset("ClearCoatTest", "ClearCoatTest.gltf")
    out = tmp_path / "out" / "cc.gltf"
    out.parent.mkdir()
    report = optimize_file(src, out, options())
    doc_in, _ = read(src)
    doc_out, _ = read(out)
    assert len(doc_out["accessors"]) == len(doc_in["accessors"]) == 33
    assert len(doc_out["bufferViews"]) == len(doc_in["bufferViews"]) == 33
    assert doc_out["buffers"][0]["uri"] == "ClearCoatTest.bin"
    uses = [p["indices"] for m in doc_out["meshes"] for p in m["primitives"]]
    assert max(uses.count(a) for a in set(uses)) == 18
    assert sorted(Path(f).name for f in report.files) == sorted(
        ["ClearCoatTest.bin"] + [im["uri"] for im in doc_in["images"]])
    assert report.bytes_after == 263397 <= report.bytes_before == 264143
    assert report.after["invocations"] == 30276 < report.before["invocations"] == 41562


def test_output_beside_its_source_does_not_overwrite_the_source_buffer(tmp_path):
    src_dir = asset("ClearCoatTest", "ClearCoatTest.gltf").parent
    work = tmp_path / "cc"
    shutil.copytree(src_dir, work)
    original = (work / "ClearCoatTest.bin").read_bytes()
    report = optimize_file(work / "ClearCoatTest.gltf", work / "cc_opt.gltf", options())
    assert (work / "ClearCoatTest.bin").read_bytes() == original
    assert [Path(f).name for f in report.files] == ["cc_opt.bin"]  # the images are the same files
    assert read(work / "cc_opt.gltf")[0]["buffers"][0]["uri"] == "cc_opt.bin"


def test_ktx2_images_get_no_invented_mime_type(tmp_path):
    src = asset("AnisotropyBarnLamp", "AnisotropyBarnLamp.gltf")
    optimize_file(src, tmp_path / "lamp.gltf", options())
    images = read(tmp_path / "lamp.gltf")[0]["images"]
    assert images == read(src)[0]["images"] and not any("mimeType" in im for im in images)


@pytest.mark.parametrize("name,embed", [("lamp.glb", False), ("lamp.gltf", True)])
def test_ktx2_images_named_as_core_sources_stay_files_when_embedding(tmp_path, name, embed):
    """Embedded, such an image would need ``mimeType: image/ktx2``, which a core texture source
    may not have (the validator's TEXTURE_INVALID_IMAGE_MIME_TYPE error); the JPEG is embedded."""
    src = asset("AnisotropyBarnLamp", "AnisotropyBarnLamp.gltf")
    report = optimize_file(src, tmp_path / name, options(embed=embed))
    images = read(tmp_path / name)[0]["images"]
    ktx2 = [im for im in read(src)[0]["images"] if im["uri"].endswith(".ktx2")]
    assert [im for im in images if "uri" in im and not im["uri"].startswith("data:")] == ktx2
    assert all(im.get("mimeType") == "image/jpeg" if "bufferView" in im else im["uri"].startswith("data:image/jpeg;")
               for im in images if im not in ktx2)
    for im in ktx2:
        assert (tmp_path / im["uri"]).read_bytes() == (src.parent / im["uri"]).read_bytes()
        assert any(im["uri"] in note and "file reference" in note for note in report.notes)


def test_an_image_of_unknown_type_stays_a_file_copied_beside_a_glb(tmp_path):
    src_dir = tmp_path / "src"
    shutil.copytree(asset("SimpleMeshes", "SimpleMeshes.gltf").parent, src_dir)
    src = src_dir / "SimpleMeshes.gltf"
    doc = json.loads(src.read_text())
    doc.update(images=[{"uri": "odd.tex"}], textures=[{"source": 0}])
    src.write_text(json.dumps(doc))
    (src_dir / "odd.tex").write_bytes(b"\x01\x02 not an image format this tool knows")
    (tmp_path / "out").mkdir()
    report = optimize_file(src, tmp_path / "out" / "meshes.glb", options())
    assert read(tmp_path / "out" / "meshes.glb")[0]["images"] == [{"uri": "odd.tex"}]
    assert (tmp_path / "out" / "odd.tex").read_bytes() == (src_dir / "odd.tex").read_bytes()
    assert any("'odd.tex'" in note and "unknown type" in note for note in report.notes)


def test_embed_writes_one_self_contained_gltf(tmp_path):
    src = asset("FlightHelmet", "FlightHelmet.gltf")
    out = tmp_path / "helmet.gltf"
    report = optimize_file(src, out, options(embed=True))
    assert list(tmp_path.iterdir()) == [out] and report.files == [] and report.size_limit is None
    doc, _ = read(out)
    assert all(x["uri"].startswith("data:") for x in doc["buffers"] + doc["images"])
    assert [m.triangle_count for m in load_meshes(out)] == [m.triangle_count for m in load_meshes(src)]


def test_glb_to_gltf_puts_the_bin_chunk_in_a_file_beside_it(tmp_path):
    out = tmp_path / "fox.gltf"
    report = optimize_file(asset("Fox", "Fox.glb"), out, options())
    assert report.files == [str(tmp_path / "fox.bin")]
    assert read(out)[0]["buffers"][0]["uri"] == "fox.bin"


def test_lines_only_file_is_copied_through(tmp_path, capsys):
    from meshopt_batch_app.cli import main

    src = asset("PrimitiveMode08", "Mesh_PrimitiveMode_08.gltf")
    out = tmp_path / "lines.gltf"
    assert main(["optimize", str(src), "-o", str(out)]) == 0
    text = capsys.readouterr()
    assert text.err == ""
    assert "note: mesh 0 (mesh0) primitive 0: lines passed through unchanged" in text.out
    assert "note: no triangle primitives: the file is copied through" in text.out
    assert out.read_bytes() == src.read_bytes()
    copied = tmp_path / "Mesh_PrimitiveMode_08.bin"
    assert copied.read_bytes() == (src.parent / copied.name).read_bytes()
    assert main(["analyze", str(src), "--json", "-p", "nvidia_gl"]) == 0
    ana = json.loads(capsys.readouterr().out)
    assert (ana["triangles"], ana["primitives"], ana["results"][0]["invocations"]) == (0, [], 0)
    assert ana["notes"] == ["1 point/line primitive(s) skipped", "no triangle primitives"]


def test_unchanged_asset_is_copied_byte_for_byte(tmp_path):
    src = asset("TriangleWithoutIndices", "TriangleWithoutIndices.gltf")
    report = optimize_file(src, tmp_path / src.name, options())
    assert (tmp_path / src.name).read_bytes() == src.read_bytes()
    assert report.primitives[0]["index_type_after"] == "none"  # nothing welded: no index buffer added


def test_strip_keeps_its_mode_when_its_order_is_kept_and_warns_nothing(tmp_path):
    import warnings

    src = asset("PrimitiveMode11", "Mesh_PrimitiveMode_11.gltf")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report = optimize_file(src, tmp_path / "strip.gltf", options())
    (prim,) = report.primitives
    assert (prim["mode"], prim["order"], prim["index_type_before"], prim["index_type_after"]) == \
        ("triangle strip", "input", "uint32", "uint16")
    out_prim = read(tmp_path / "strip.gltf")[0]["meshes"][0]["primitives"][0]
    assert out_prim["mode"] == 5


def test_index_type_options(tmp_path):
    src = asset("PrimitiveMode11", "Mesh_PrimitiveMode_11.gltf")
    report = optimize_file(src, tmp_path / "keep.gltf", options(keep_index_type=True))
    assert report.primitives[0]["index_type_after"] == "uint32"
    report = optimize_file(asset("PrimitiveMode14", "Mesh_PrimitiveMode_14.gltf"), tmp_path / "u8.gltf", options())
    assert (report.primitives[0]["index_type_before"], report.primitives[0]["index_type_after"]) == ("uint8", "uint8")


def test_no_weld_and_keep_vertex_order_keep_the_vertex_data(tmp_path):
    src = asset("Fox", "Fox.glb")
    report = optimize_file(src, tmp_path / "fox.glb", options(weld=False))
    assert report.vertices_after == 1728 and report.after["invocations"] == 1728
    assert (tmp_path / "fox.glb").read_bytes() == src.read_bytes()  # nothing to gain: copied through
    src = asset("CesiumMan", "CesiumMan.glb")
    report = optimize_file(src, tmp_path / "man.glb", options(vertex_order=False))
    (prim,) = report.primitives
    assert prim["vertex_order"] == "kept"
    assert prim["fetch_gap_after"] == prim["fetch_gap_kept_order"] == pytest.approx(687.6, abs=0.05)
    doc_in, buf_in = read(src)
    doc_out, buf_out = read(tmp_path / "man.glb")
    for a in doc_in["meshes"][0]["primitives"][0]["attributes"].values():
        assert np.array_equal(read_accessor(doc_out, buf_out, a)[0], read_accessor(doc_in, buf_in, a)[0])


def test_optimize_json_reports_each_primitive(tmp_path, capsys):
    from meshopt_batch_app.cli import main

    src = asset("CesiumMan", "CesiumMan.glb")
    assert main(["optimize", str(src), "-o", str(tmp_path / "m.glb"), "--json", "-p", "nvidia_gl"]) == 0
    out = json.loads(capsys.readouterr().out)
    (prim,) = out["primitives"]
    assert prim["before"] == {"profile": "nvidia_gl", "invocations": 9727, "asr": 9727 / 4672, "batches": 309}
    assert prim["after"]["invocations"] == out["after"]["invocations"] == 4348
    assert (prim["fetch_gap_before"], prim["fetch_gap_after"]) == (1.0, 1.0)
    assert prim["fetch_gap_kept_order"] == pytest.approx(687.6, abs=0.05)
    assert out["size_limit"] >= out["bytes_after"]


def test_analyze_json_lists_every_primitive(capsys):
    from meshopt_batch_app.cli import main

    src = asset("ClearCoatTest", "ClearCoatTest.gltf")
    assert main(["analyze", str(src), "--json", "-p", "nvidia_gl", "-p", "amd"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["primitives"]) == 27
    first = out["primitives"][0]
    assert set(first) == {"name", "mesh", "primitive", "triangles", "vertices", "results"}
    assert [r["profile"] for r in first["results"]] == ["nvidia_gl", "amd"]
    for k in range(2):
        assert sum(p["results"][k]["invocations"] for p in out["primitives"]) == out["results"][k]["invocations"]
    assert out["results"][0]["invocations"] == 41562
