"""EXT/KHR_meshopt_compression and KHR_draco_mesh_compression on reading, writing and refusing
(issue 30), on files built here with the codecs' own encoders (``tests/compressed_samples.py``).

* Every mode (ATTRIBUTES, TRIANGLES, INDICES) and filter (NONE, OCTAHEDRAL, QUATERNION,
  EXPONENTIAL, COLOR) decodes to what the encoder was given: exactly without a filter,
  within the filter's quantization with one; with a fallback placeholder and with a
  fallback buffer holding data.
* A stream is copied byte for byte when its data did not change and encoded again (same
  mode, filter, codec version) when it did; the output reads back as the input's triangles.
* A corrupt stream or extension object is one refusal naming the buffer view.
"""

from __future__ import annotations

import json

import meshopt
import numpy as np
import pytest
from compressed_samples import draco_sample, glb, meshopt_sample, read_glb

from meshopt_batch.assets.file_optimization import AssetOptions, optimize_file
from meshopt_batch.io import load_meshes, save_mesh
from meshopt_batch.io.format_common import Refusal
from meshopt_batch.io.gltf.compressed_views import JSON_PER_STREAM, compression_plan
from meshopt_batch.io.gltf.draw_census import strip_fan_to_list
from meshopt_batch.io.gltf.gltf_document import read_accessor, read_document
from meshopt_batch.io.gltf.meshopt_streams import StreamLayout, encode_view
from meshopt_batch.io.gltf.stream_grouping import regroup_views
from meshopt_batch.model.profiles import get_profile
from meshopt_batch.optimizers import get_method
from meshopt_batch.support.errors import MeshError

EXT, KHR = "EXT_meshopt_compression", "KHR_meshopt_compression"


def options(**kw) -> AssetOptions:
    return AssetOptions(get_method("batch"), get_profile("nvidia_gl"), **kw)


def read(path):
    return read_document(path.read_bytes(), path)


def corner_keys(got, prim) -> list:
    """Every triangle as its corners' bytes over all attributes, rotated to its smallest
    corner first, sorted: equal for the same triangles up to rotation."""
    doc, buffers = got.doc, got.buffers
    columns = []
    for a in prim["attributes"].values():
        values = read_accessor(doc, buffers, a)[0]
        columns.append(np.ascontiguousarray(values).view(np.uint8).reshape(len(values), -1))
    rows = np.concatenate(columns, axis=1)
    flat = read_accessor(doc, buffers, prim["indices"])[0].reshape(-1).astype(np.int64)
    corners = [[bytes(rows[v]) for v in t] for t in strip_fan_to_list(flat, int(prim.get("mode", 4)))]
    return sorted(min(tuple(t[r:] + t[:r]) for r in range(3)) for t in corners)


def same_triangles_up_to_rotation(a: np.ndarray, b: np.ndarray) -> bool:
    rot = lambda t: np.stack([np.roll(t, -r, axis=1) for r in range(3)], axis=1)  # noqa: E731
    key = lambda t: np.sort([min(map(tuple, r)) for r in rot(np.asarray(t).reshape(-1, 3))], axis=0)  # noqa: E731
    return a.size == b.size and np.array_equal(key(a), key(b))


@pytest.mark.parametrize("extension,version", [(EXT, 0), (KHR, 0), (KHR, 1)])
@pytest.mark.parametrize("fallback", ["placeholder", "data"])
def test_every_mode_and_filter_decodes_to_what_was_encoded(tmp_path, extension, version, fallback):
    path = tmp_path / ("s.glb" if fallback == "placeholder" else "s.gltf")
    sample = meshopt_sample(path, extension=extension, fallback=fallback, version=version)
    g = sample["grid"]
    got = read(path)
    assert len(got.streams) == (9 if extension == KHR else 8)
    doc, buffers = got.doc, got.buffers
    assert np.array_equal(read_accessor(doc, buffers, 0)[0], g.positions)  # ATTRIBUTES, NONE: exact
    normals = read_accessor(doc, buffers, 1)[0].astype(np.float64) / 127
    assert np.abs(normals - g.normals).max() < 0.02  # OCTAHEDRAL, 8 bits
    assert np.abs(read_accessor(doc, buffers, 2)[0] - g.uvs).max() < 1e-4  # EXPONENTIAL, 15-bit mantissa
    tris = read_accessor(doc, buffers, 3)[0].reshape(-1, 3)
    assert same_triangles_up_to_rotation(tris, g.triangles)  # TRIANGLES: order kept, corners may rotate
    assert np.array_equal(tris.reshape(-1)[:30], meshopt.decode_index_buffer(
        meshopt.encode_index_buffer(g.triangles.reshape(-1)), g.triangles.size, 4)[:30])
    assert np.array_equal(read_accessor(doc, buffers, 4)[0].reshape(-1), g.strip)  # INDICES: exact
    quats = read_accessor(doc, buffers, 6)[0].astype(np.float64) / 32767
    angles = np.linspace(0, np.pi, 8)
    assert np.abs(quats[:, 1] - np.sin(angles / 2)).max() < 2e-3  # QUATERNION, 12 bits
    if extension == KHR:
        colors = read_accessor(doc, buffers, 8)[0].astype(np.float64) / 255
        assert np.abs(colors - g.colors).max() < 0.02  # COLOR, 8 bits
    (mesh, strip) = load_meshes(path)
    assert mesh.triangle_count == len(g.triangles) and strip.meta["gltf_mode"] == 5


def test_a_stream_whose_data_did_not_change_is_copied_byte_for_byte(tmp_path):
    path = tmp_path / "s.glb"
    meshopt_sample(path, extension=KHR, version=1)
    got = read(path)
    for vi, view in got.streams.items():
        stored = view.data if view.unfiltered is None else view.unfiltered.tobytes()
        assert encode_view(stored, view.layout, source=view) == view.encoded, vi
    positions = got.streams[0]
    moved = np.frombuffer(positions.data, np.uint8).reshape(-1, 12)[::-1].tobytes()
    again = encode_view(moved, positions.layout, source=positions)
    assert again != positions.encoded and again[0] == 0xA1  # KHR version 1 stays version 1
    assert meshopt.decode_vertex_buffer(again, positions.layout.count, 12).tobytes() == moved


def test_encode_view_refuses_a_partial_unit():
    with pytest.raises(Refusal, match="not a whole number of 6-byte units"):
        encode_view(bytes(8), StreamLayout(EXT, "TRIANGLES", "NONE", 2, 4, 0, 0, 0))


@pytest.mark.parametrize("extension", [EXT, KHR])
def test_optimized_output_keeps_extension_modes_filters_and_fallback(tmp_path, extension):
    src = tmp_path / "s.glb"
    meshopt_sample(src, extension=extension, version=1 if extension == KHR else 0)
    out = tmp_path / "o.glb"
    report = optimize_file(src, out, options())
    doc, _ = read_glb(out)
    doc_in, _ = read_glb(src)
    layout = lambda d: sorted((v["extensions"][extension]["mode"], v["extensions"][extension].get("filter", "NONE"),  # noqa: E731
                               v["extensions"][extension]["byteStride"]) for v in d["bufferViews"] if "extensions" in v)
    assert layout(doc) == layout(doc_in)
    assert doc["extensionsRequired"] == doc_in["extensionsRequired"]
    placeholder = [b for b in doc["buffers"] if "uri" not in b and b.get("extensions")]
    assert placeholder == [{"byteLength": placeholder[0]["byteLength"], "extensions": {extension: {"fallback": True}}}]
    assert report.after["invocations"] < report.before["invocations"]
    got_in, got_out = read(src), read(out)
    for prim_in, prim_out in zip(got_in.doc["meshes"][0]["primitives"], got_out.doc["meshes"][0]["primitives"],
                                 strict=True):
        assert corner_keys(got_in, prim_in) == corner_keys(got_out, prim_out)
    animation_view = got_in.doc["accessors"][6]["bufferView"]
    assert got_out.streams[animation_view].encoded == got_in.streams[animation_view].encoded


def test_fallback_with_data_stays_a_file_of_its_own(tmp_path):
    src = tmp_path / "s.gltf"
    meshopt_sample(src, fallback="data")
    out = tmp_path / "out" / "o.glb"
    out.parent.mkdir()
    optimize_file(src, out, options())
    doc, _ = read_glb(out)
    (fallback,) = [b for b in doc["buffers"] if b.get("uri")]
    assert fallback["uri"] == "o.fallback.bin" and (out.parent / "o.fallback.bin").stat().st_size == \
        fallback["byteLength"]
    assert EXT not in doc.get("extensionsRequired", [])
    got, got_in = read(out), read(src)
    for a, b in zip(got_in.doc["meshes"][0]["primitives"], got.doc["meshes"][0]["primitives"], strict=True):
        assert corner_keys(got_in, a) == corner_keys(got, b)


def test_no_compress_writes_plain_data_and_compress_writes_ext(tmp_path):
    src = tmp_path / "s.glb"
    meshopt_sample(src, extension=KHR, version=1)
    plain = tmp_path / "plain.glb"
    report = optimize_file(src, plain, options(compress=False))
    doc, _ = read_glb(plain)
    assert "extensionsRequired" not in doc or KHR not in doc["extensionsRequired"]
    assert not any("extensions" in v for v in doc["bufferViews"]) and len(doc["buffers"]) == 1
    assert report.size_limit is None and any("--no-compress" in n for n in report.notes)
    again = tmp_path / "again.glb"
    optimize_file(plain, again, options(compress=True))
    doc2, _ = read_glb(again)
    modes = sorted(v["extensions"][EXT]["mode"] for v in doc2["bufferViews"] if "extensions" in v)
    assert modes.count("TRIANGLES") == 1 and "ATTRIBUTES" in modes
    got_plain = read(plain)
    plan = compression_plan(got_plain.doc, kept={})
    view_of = lambda a: got_plain.doc["accessors"][a]["bufferView"]  # noqa: E731
    assert plan[view_of(4)].mode == "INDICES" and plan[view_of(3)].mode == "TRIANGLES"  # the strip, the list
    grouped, grouped_buffers = regroup_views(got_plain.doc, got_plain.buffers)  # what --compress lays out
    assert len(grouped["bufferViews"]) == len(doc2["bufferViews"])
    layout = [(v["extensions"][EXT]["mode"], v["extensions"][EXT]["byteStride"]) if "extensions" in v else None
              for v in doc2["bufferViews"]]
    assert layout == [("ATTRIBUTES", 12), None, ("ATTRIBUTES", 8), ("TRIANGLES", 2), None, None, None, None]
    for vi, lay in compression_plan(grouped, kept={}).items():  # a view left plain would not pay for it
        view = grouped["bufferViews"][vi]
        raw = grouped_buffers[view["buffer"]][view.get("byteOffset", 0):][:view["byteLength"]]
        raw += bytes(-len(raw) % lay.unit)
        compressed = doc2["bufferViews"][vi].get("extensions") is not None
        assert compressed == (len(encode_view(raw, lay)) + JSON_PER_STREAM < len(raw)), vi
    assert EXT in doc2["extensionsRequired"]
    assert doc2["buffers"][-1]["extensions"] == {EXT: {"fallback": True}} and "uri" not in doc2["buffers"][-1]
    a, b = read(plain), read(again)
    for ai in range(len(a.doc["accessors"])):
        if ai == 3:
            continue  # the triangle list: its corners may rotate in the TRIANGLES codec
        assert np.array_equal(read_accessor(a.doc, a.buffers, ai)[0], read_accessor(b.doc, b.buffers, ai)[0]), ai
    assert same_triangles_up_to_rotation(read_accessor(a.doc, a.buffers, 3)[0], read_accessor(b.doc, b.buffers, 3)[0])


def test_meshes_written_back_into_a_compressed_source_come_out_plain(tmp_path):
    src = tmp_path / "s.glb"
    meshopt_sample(src, extension=KHR, version=1)
    meshes = load_meshes(src)
    out = tmp_path / "w.glb"
    save_mesh(meshes, out, source=src)
    doc, _ = read_glb(out)
    assert "meshopt" not in json.dumps(doc) and len(doc["buffers"]) == 1
    for a, b in zip(meshes, load_meshes(out), strict=True):
        assert np.array_equal(a.triangles, b.triangles) and np.array_equal(a.positions, b.positions)


def test_draco_is_decoded_and_written_with_meshopt_compression(tmp_path):
    src = tmp_path / "d.glb"
    g = draco_sample(src)
    got = read(src)
    assert got.draco_primitives == 1 and "extensionsUsed" not in got.doc
    (mesh,) = load_meshes(src)
    assert np.array_equal(mesh.triangles, g.triangles)  # preserve_order: Draco's order is the input's
    assert np.abs(mesh.positions - g.positions).max() < 1e-3
    out = tmp_path / "o.glb"
    report = optimize_file(src, out, options())
    assert any("KHR_draco_mesh_compression primitive(s) decoded and written with EXT_meshopt_compression" in n
               for n in report.notes)
    doc, _ = read_glb(out)
    assert doc["extensionsRequired"] == [EXT] and "KHR_draco_mesh_compression" not in json.dumps(doc)
    plain = tmp_path / "p.glb"
    optimize_file(src, plain, options(compress=False))
    assert "extensions" not in json.dumps(read_glb(plain)[0]["bufferViews"])


# ------------------------------------------------------------------------------------ refusals
def _rewrite(path, change):
    doc, bin_data = read_glb(path)
    change(doc, bin_data)
    path.write_bytes(glb(doc, bin_data if not isinstance(bin_data, bytearray) else bytes(bin_data)))


def _ext(doc, vi=0):
    return doc["bufferViews"][vi]["extensions"][EXT]


CORRUPTIONS = {
    "truncated": (lambda d, b: _ext(d).__setitem__("byteLength", _ext(d)["byteLength"] - 9),
                  "bufferView 0: EXT_meshopt_compression: the ATTRIBUTES stream does not decode"),
    "past the end": (lambda d, b: _ext(d).__setitem__("byteOffset", len(b)),
                     "bufferView 0: EXT_meshopt_compression: the stream (bytes"),
    "byteStride": (lambda d, b: _ext(d).__setitem__("byteStride", 6),
                   "bufferView 0: EXT_meshopt_compression: byteStride 6 x count"),
    "count": (lambda d, b: _ext(d).__setitem__("count", _ext(d)["count"] + 1),
              "bufferView 0: EXT_meshopt_compression: byteStride 12 x count 145"),
    "mode": (lambda d, b: _ext(d).__setitem__("mode", "VERTICES"),
             "bufferView 0: EXT_meshopt_compression: mode 'VERTICES' is not one of"),
    "filter": (lambda d, b: _ext(d).__setitem__("filter", "COLOR"),
               "bufferView 0: EXT_meshopt_compression: filter 'COLOR' is not one of"),
    "filter stride": (lambda d, b: _ext(d).__setitem__("filter", "QUATERNION"),
                      "bufferView 0: EXT_meshopt_compression: byteStride 12 must be 8 (filter QUATERNION)"),
    "decoder": (lambda d, b: b.__setitem__(_ext(d, 3)["byteOffset"], 0x00),
                "bufferView 3: EXT_meshopt_compression: the TRIANGLES stream does not decode"),
    "header": (lambda d, b: b.__setitem__(_ext(d)["byteOffset"], 0xA1),
               "bufferView 0: EXT_meshopt_compression: attribute stream header 0xa1 is not valid here"),
    "placeholder": (lambda d, b: d["bufferViews"][0].pop("extensions"),
                    "bufferView 0: buffer 1 has no data"),
}


@pytest.mark.parametrize("case", sorted(CORRUPTIONS))
def test_corrupt_compressed_view_is_one_refusal_naming_the_view(tmp_path, case, capsys):
    from meshopt_batch_app.cli import main
    src = tmp_path / "s.glb"
    meshopt_sample(src)
    change, message = CORRUPTIONS[case]
    doc, bin_data = read_glb(src)
    bin_data = bytearray(bin_data)
    change(doc, bin_data)
    src.write_bytes(glb(doc, bytes(bin_data)))
    with pytest.raises(MeshError) as refused:
        optimize_file(src, tmp_path / "o.glb", options())
    assert str(refused.value).startswith(f"{src}: {message}")
    assert main(["optimize", str(src), "-o", str(tmp_path / "o.glb")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and "Traceback" not in err[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.glb"]


@pytest.mark.parametrize("cut", ["header", "half", "middle"])
def test_corrupt_draco_bitstream_is_one_refusal_naming_the_view(tmp_path, capsys, cut):
    from meshopt_batch_app.cli import main
    src = tmp_path / "d.glb"
    draco_sample(src)
    doc, bin_data = read_glb(src)
    bad = bytearray(bin_data)
    if cut == "header":
        bad[0:5] = b"XXXXX"
    elif cut == "half":
        bad = bad[:len(bad) // 2]
        doc["buffers"][0]["byteLength"] = doc["bufferViews"][0]["byteLength"] = len(bad)
    else:
        bad[10:60] = bytes(50)
    src.write_bytes(glb(doc, bytes(bad)))
    assert main(["optimize", str(src), "-o", str(tmp_path / "o.glb")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{src}: bufferView 0: KHR_draco_mesh_compression: the Draco bitstream" in err[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.glb"]
