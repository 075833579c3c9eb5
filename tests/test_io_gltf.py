"""glTF 2.0 reading and writing: primitives, index types, sparse and interleaved accessors,
the scene graph (world space, mirrored nodes), writing back into a source's structure.

The reader is checked against a small glTF built here by hand (every accessor's bytes are
known), the writer by round trips and by reading its JSON, the shared Flight Helmet against
its counts.
"""

from __future__ import annotations

import base64
import json
import struct
import warnings
from pathlib import Path

import numpy as np
import pytest

import meshes
from meshopt_batch.geometry.mesh_record import Mesh
from meshopt_batch.io import load_draws, load_mesh, load_meshes, save_mesh
from meshopt_batch.io.gltf.gltf_document import load_document, read_accessor
from meshopt_batch.support.errors import MeshError


def assert_same(a: Mesh, b: Mesh, check_name=False):
    assert a.equals(b, check_name=check_name), (a, b)

def _pad4(b: bytes) -> bytes:
    return b + b"\0" * (-len(b) % 4)


def build_gltf(tmp_path: Path, binary: bool = True) -> Path:
    """A small glTF by hand: 2 meshes (one with 3 primitives: triangles with uint8 indices,
    a strip, lines), shared POSITION accessor, interleaved normals/uvs with byteStride,
    a sparse accessor, node hierarchy with transforms, a material with an embedded texture,
    an animation sampler and an unused accessor."""
    blobs: list[bytes] = []
    views: list[dict] = []
    accessors: list[dict] = []

    def view(raw: bytes, **extra) -> int:
        off = sum(len(b) for b in blobs)
        blobs.append(_pad4(raw))
        views.append({"buffer": 0, "byteOffset": off, "byteLength": len(raw), **extra})
        return len(views) - 1

    def accessor(**acc) -> int:
        accessors.append(acc)
        return len(accessors) - 1

    quad = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [2, 0, 0], [2, 1, 0]], np.float32)
    p_quad = accessor(bufferView=view(quad.tobytes(), target=34962), componentType=5126, count=6,
                      type="VEC3", min=quad.min(0).tolist(), max=quad.max(0).tolist())
    inter = np.zeros(6, dtype=[("n", "<f4", 3), ("uv", "<f4", 2)])
    inter["n"] = [0, 0, 1]
    inter["uv"] = quad[:, :2] / 2
    iv = view(inter.tobytes(), byteStride=20, target=34962)
    n_acc = accessor(bufferView=iv, componentType=5126, count=6, type="VEC3")
    uv_acc = accessor(bufferView=iv, byteOffset=12, componentType=5126, count=6, type="VEC2")
    idx8 = np.array([0, 1, 2, 0, 2, 3], np.uint8)
    i8 = accessor(bufferView=view(idx8.tobytes(), target=34963), componentType=5121, count=6, type="SCALAR")
    strip = np.array([1, 4, 2, 5], np.uint16)
    i_strip = accessor(bufferView=view(strip.tobytes()), componentType=5123, count=4, type="SCALAR")
    lines = np.array([0, 1, 1, 2], np.uint16)
    i_lines = accessor(bufferView=view(lines.tobytes()), componentType=5123, count=4, type="SCALAR")
    # second mesh: positions from a sparse accessor over zeros, uint32 indices
    sp_idx = np.array([1, 2], np.uint16)
    sp_val = np.array([[1, 0, 0], [0, 1, 0]], np.float32)
    p_tri = accessor(componentType=5126, count=3, type="VEC3", min=[0, 0, 0], max=[1, 1, 0],
                     sparse={"count": 2,
                             "indices": {"bufferView": view(sp_idx.tobytes()), "componentType": 5123},
                             "values": {"bufferView": view(sp_val.tobytes())}})
    i32 = accessor(bufferView=view(np.array([0, 1, 2], np.uint32).tobytes()), componentType=5125,
                   count=3, type="SCALAR")
    times = accessor(bufferView=view(np.array([0, 1], np.float32).tobytes()), componentType=5126,
                     count=2, type="SCALAR", min=[0], max=[1])
    rots = accessor(bufferView=view(np.array([[0, 0, 0, 1], [0, 1, 0, 0]], np.float32).tobytes()),
                    componentType=5126, count=2, type="VEC4")
    accessor(bufferView=view(b"\0" * 12), componentType=5126, count=1, type="VEC3")  # unused
    png = b"\x89PNG\r\n\x1a\n" + b"fake image payload"
    img_view = view(png)
    doc = {
        "asset": {"version": "2.0", "generator": "hand"},
        "extensionsUsed": ["KHR_materials_emissive_strength"],
        "scene": 0,
        "scenes": [{"nodes": [0]}],
        "nodes": [
            {"name": "root", "children": [1, 2], "translation": [0, 0, -5]},
            {"name": "quad_node", "mesh": 0, "scale": [2, 2, 2]},
            {"name": "tri_node", "mesh": 1, "rotation": [0, 0, 0.7071067811865476, 0.7071067811865476]},
        ],
        "meshes": [
            {"name": "Quad", "primitives": [
                {"attributes": {"POSITION": p_quad, "NORMAL": n_acc, "TEXCOORD_0": uv_acc},
                 "indices": i8, "material": 0},
                {"attributes": {"POSITION": p_quad}, "indices": i_strip, "mode": 5},
                {"attributes": {"POSITION": p_quad}, "indices": i_lines, "mode": 1},
            ]},
            {"name": "Tri", "primitives": [{"attributes": {"POSITION": p_tri}, "indices": i32}]},
        ],
        "materials": [{"name": "mat", "pbrMetallicRoughness": {"baseColorTexture": {"index": 0}},
                       "extensions": {"KHR_materials_emissive_strength": {"emissiveStrength": 2}}}],
        "textures": [{"source": 0}],
        "images": [{"bufferView": img_view, "mimeType": "image/png"}],
        "animations": [{"channels": [{"sampler": 0, "target": {"node": 2, "path": "rotation"}}],
                        "samplers": [{"input": times, "output": rots}]}],
        "accessors": accessors,
        "bufferViews": views,
    }
    bin_data = b"".join(blobs)
    if binary:
        doc["buffers"] = [{"byteLength": len(bin_data)}]
        js = _pad4(json.dumps(doc).encode()).replace(b"\0", b" ")
        body = struct.pack("<II", len(js), 0x4E4F534A) + js + struct.pack("<II", len(bin_data), 0x004E4942) + bin_data
        p = tmp_path / "hand.glb"
        p.write_bytes(struct.pack("<4sII", b"glTF", 2, 12 + len(body)) + body)
    else:
        (tmp_path / "hand data.bin").write_bytes(bin_data)
        doc["buffers"] = [{"byteLength": len(bin_data), "uri": "hand%20data.bin"}]
        p = tmp_path / "hand.gltf"
        p.write_text(json.dumps(doc))
    return p


def read_glb_json(path: Path) -> dict:
    data = path.read_bytes()
    jlen = struct.unpack("<I", data[12:16])[0]
    return json.loads(data[20 : 20 + jlen])


@pytest.mark.parametrize("binary", [True, False])
def test_gltf_reader_primitives_names_and_index_types(tmp_path, binary):
    p = build_gltf(tmp_path, binary)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ms = load_meshes(p)
    messages = [str(x.message) for x in w]
    assert messages == [f"{p}: 1 point/line primitive(s) skipped"]  # a strip converts silently
    assert [m.name for m in ms] == ["Quad[0]", "Quad[1]", "Tri"]
    quad, strip, tri = ms
    assert quad.triangles.tolist() == [[0, 1, 2], [0, 2, 3]]
    assert quad.index_dtype == np.uint16  # uint8 indices are read as 16-bit
    assert quad.attributes["normal"].tolist() == [[0, 0, 1]] * 6
    assert np.array_equal(quad.attributes["uv"], quad.positions[:, :2] / 2)
    assert strip.triangles.tolist() == [[1, 4, 2], [4, 5, 2]]  # strip winding alternates
    assert strip.meta["gltf_mode"] == 5 and "gltf_mode" not in quad.meta
    assert tri.index_dtype == np.uint32
    assert tri.positions.tolist() == [[0, 0, 0], [1, 0, 0], [0, 1, 0]]  # sparse applied
    assert (quad.meta["gltf_mesh"], quad.meta["gltf_primitive"], quad.meta["material"]) == (0, 0, 0)
    world = np.array(quad.meta["world_matrix"])
    assert np.allclose(world @ [1, 1, 0, 1], [2, 2, -5, 1])


def test_load_draws_notes_instead_of_warnings(tmp_path):
    p = build_gltf(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        meshes_, notes = load_draws(p)
    assert [m.name for m in meshes_] == ["Quad[0]", "Quad[1]", "Tri"]
    assert notes == ["1 point/line primitive(s) skipped"]


def test_load_draws_of_lines_only_gives_no_mesh_and_a_note(tmp_path):
    p = tmp_path / "lines.gltf"
    idx = np.array([0, 1, 1, 2], np.uint16).tobytes()
    pos = np.eye(3, dtype=np.float32).tobytes()
    uri = "data:application/octet-stream;base64," + base64.b64encode(pos + idx).decode()
    p.write_text(json.dumps({
        "asset": {"version": "2.0"}, "buffers": [{"byteLength": 44, "uri": uri}],
        "bufferViews": [{"buffer": 0, "byteLength": 36}, {"buffer": 0, "byteOffset": 36, "byteLength": 8}],
        "accessors": [{"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3",
                       "min": [0, 0, 0], "max": [1, 1, 1]},
                      {"bufferView": 1, "componentType": 5123, "count": 4, "type": "SCALAR"}],
        "meshes": [{"primitives": [{"attributes": {"POSITION": 0}, "indices": 1, "mode": 1}]}]}))
    assert load_draws(p) == ([], ["1 point/line primitive(s) skipped", "no triangle primitives"])
    with pytest.raises(MeshError, match="only point/line primitives"), pytest.warns(UserWarning, match="skipped"):
        load_meshes(p)


def test_load_mesh_of_gltf_is_the_whole_model_in_world_space(tmp_path):
    p = build_gltf(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        whole = load_mesh(p)
    assert whole.vertex_count == 6 + 6 + 3 and whole.triangle_count == 2 + 2 + 1
    assert [part[0] for part in whole.meta["parts"]] == ["Quad[0]", "Quad[1]", "Tri"]
    assert np.allclose(whole.positions[2], [2, 2, -5])  # scaled by 2, moved by the root
    assert np.allclose(whole.positions[13], [0, 1, -5], atol=1e-6)  # (1,0,0) turned 90 deg about z
    assert whole.meta["world_space"] is True and "gltf_mesh" not in whole.meta


def placed_triangle(tmp_path: Path, matrix, name: str) -> Path:
    """A one-triangle .glb whose node has the 4x4 ``matrix`` (normals and tangents along +z, +x)."""
    m = Mesh([[0, 0, 0], [1, 0, 0], [0, 2, 0]], [[0, 1, 2]], name=name,
             attributes={"normal": np.tile(np.float32([0, 0, 1]), (3, 1)),
                         "tangent": np.tile(np.float32([1, 0, 0, 1]), (3, 1))},
             meta={"world_matrix": np.asarray(matrix, float).tolist()})
    return save_mesh(m, tmp_path / f"{name}.glb")


def test_mirrored_node_reverses_the_winding_in_world_space(tmp_path):
    mirror = np.diag([-1.0, 1.0, 1.0, 1.0])
    mirror[:3, 3] = [5, 0, 0]
    p = placed_triangle(tmp_path, mirror, "mirrored")
    assert read_glb_json(p)["nodes"][0]["matrix"] == [-1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 5, 0, 0, 1]
    (local,) = load_meshes(p)
    assert local.triangles.tolist() == [[0, 1, 2]]  # object space: the file's order
    world = load_mesh(p)
    assert world.positions.tolist() == [[5, 0, 0], [4, 0, 0], [5, 2, 0]]
    assert world.triangles.tolist() == [[2, 1, 0]]  # the front face stays where a renderer shows it
    assert world.attributes["normal"].tolist() == [[0, 0, 1]] * 3
    assert world.attributes["tangent"][:, :3].tolist() == [[-1, 0, 0]] * 3
    assert world.meta["world_space"] is True and "gltf_mesh" not in world.meta
    p0, p1, p2 = world.positions[world.triangles[0]].astype(np.float64)
    assert np.cross(p1 - p0, p2 - p0).tolist() == [0, 0, 2]  # counter-clockwise about +z, as before
    turned = placed_triangle(tmp_path, np.diag([1.0, -1.0, -1.0, 1.0]), "turned")  # a rotation
    assert load_mesh(turned).triangles.tolist() == [[0, 1, 2]]


def test_singular_node_with_normals_is_refused_in_one_line(tmp_path):
    p = placed_triangle(tmp_path, np.diag([0.0, 1.0, 1.0, 1.0]), "flat")
    assert load_meshes(p)[0].meta["world_matrix"][0][0] == 0
    with pytest.raises(MeshError) as exc:
        load_mesh(p)
    assert str(exc.value) == f"{p}: flat: transform is singular (a zero scale): normals cannot follow it"


@pytest.mark.parametrize("binary", [True, False])
def test_gltf_write_back_keeps_structure(tmp_path, binary):
    import trimesh

    src = build_gltf(tmp_path, binary)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ms = load_meshes(src)
    quad, strip, tri = ms
    # an optimizer's output: reversed triangles and one appended vertex copy
    new_quad = quad.append_vertex_copies([2], triangles=[[0, 1, 6], [0, 2, 3]])
    out = save_mesh([new_quad, strip, tri.with_triangles(tri.triangles[:, ::-1])], tmp_path / "out.glb",
                    source=src)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        back = load_meshes(out)
    assert_same(back[0], new_quad, check_name=True)
    assert_same(back[1], strip, check_name=True)
    assert back[2].triangles.tolist() == [[2, 1, 0]]
    d0 = json.loads(src.read_text()) if not binary else read_glb_json(src)
    d1 = read_glb_json(out)
    for key in ("scene", "scenes", "nodes", "materials", "textures"):
        assert d1[key] == d0[key]
    assert [m["name"] for m in d1["meshes"]] == ["Quad", "Tri"]
    assert d1["meshes"][0]["primitives"][0]["material"] == 0
    assert d1["meshes"][0]["primitives"][2]["mode"] == 1  # the lines primitive is untouched
    assert d1["meshes"][0]["primitives"][1]["mode"] == 4  # the strip became a list
    assert "uri" not in d1["buffers"][0] and len(d1["buffers"]) == 1
    # nothing dangling, the unused accessor dropped, the animation still reads
    referenced = [v for m in d1["meshes"] for pr in m["primitives"] for v in
                  [*pr["attributes"].values(), pr["indices"]]]
    referenced += [v for s in d1["animations"][0]["samplers"] for v in (s["input"], s["output"])]
    assert sorted(set(referenced)) == list(range(len(d1["accessors"])))  # the unused one is gone
    for acc in d1["accessors"]:
        assert "bufferView" not in acc or acc["bufferView"] < len(d1["bufferViews"])
    sampler = d1["animations"][0]["samplers"][0]
    assert d1["accessors"][sampler["input"]]["max"] == [1]
    for bv in d1["bufferViews"]:
        assert bv["byteOffset"] % 4 == 0 and bv["byteOffset"] + bv["byteLength"] <= d1["buffers"][0]["byteLength"]
    # an independent reader sees the same geometry
    scene = trimesh.load(out, force="scene", process=False)
    assert sum(len(g.faces) for g in scene.geometry.values() if hasattr(g, "faces")) >= 3 + 1
    # unchanged meshes written back: the same document up to accessor numbers
    save_mesh(ms, tmp_path / "same.glb", source=src)
    d2 = read_glb_json(tmp_path / "same.glb")
    for key in ("scenes", "nodes", "materials", "textures"):
        assert d2[key] == d0[key]
    doc0, bufs0 = load_document(src.read_bytes(), src)
    doc2, bufs2 = load_document((tmp_path / "same.glb").read_bytes(), tmp_path / "same.glb")
    for k in ("input", "output"):
        a0 = read_accessor(doc0, bufs0, d0["animations"][0]["samplers"][0][k])[0]
        a2 = read_accessor(doc2, bufs2, d2["animations"][0]["samplers"][0][k])[0]
        assert np.array_equal(a0, a2)
    image = d2["images"][0]
    assert image["mimeType"] == "image/png"
    view = d2["bufferViews"][image["bufferView"]]
    assert bufs2[0][view["byteOffset"]:][:8] == b"\x89PNG\r\n\x1a\n"


def test_gltf_write_back_by_slot_subset_and_errors(tmp_path):
    src = build_gltf(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quad, strip, tri = load_meshes(src)
        save_mesh([tri.with_triangles([[0, 2, 1]])], tmp_path / "one.glb", source=src)
        back = load_meshes(tmp_path / "one.glb")
    assert back[2].triangles.tolist() == [[0, 2, 1]]
    assert_same(back[0], quad, check_name=True)
    plain = Mesh(tri.positions, tri.triangles)
    with pytest.raises(MeshError, match="3 triangle primitives, got 1"):
        save_mesh(plain, tmp_path / "x.glb", source=src)
    with pytest.raises(MeshError, match="keeps a glTF"):
        save_mesh(quad, tmp_path / "x.ply", source=src)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        whole = load_mesh(src)
    with pytest.raises(MeshError, match="load_meshes"):
        save_mesh(whole, tmp_path / "x.glb", source=src)
    assert not (tmp_path / "x.glb").exists() and not (tmp_path / "x.ply").exists()


def test_gltf_uv_origin_converted_between_formats(tmp_path):
    src = build_gltf(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quad = load_meshes(src)[0]
    save_mesh(quad, tmp_path / "q.obj")
    obj = load_mesh(tmp_path / "q.obj")
    assert np.allclose(obj.attributes["uv"][:, 1], 1 - quad.attributes["uv"][:, 1])
    save_mesh(obj, tmp_path / "q.glb")
    assert np.allclose(load_mesh(tmp_path / "q.glb").attributes["uv"], quad.attributes["uv"])


def test_gltf_custom_attributes_colours_and_morph_targets(tmp_path):
    rng = np.random.default_rng(5)
    V = 9
    m = Mesh(rng.normal(size=(V, 3)), rng.integers(0, V, (7, 3)), name="attrs",
             attributes={"color": rng.integers(0, 255, (V, 3)).astype(np.uint8),
                         "joints": rng.integers(0, 4, (V, 4)).astype(np.uint16),
                         "weights": rng.random((V, 4)).astype(np.float32),
                         "heat": rng.random(V).astype(np.float32),
                         "target0.POSITION": rng.normal(size=(V, 3)).astype(np.float32)})
    p = save_mesh(m, tmp_path / "attrs.glb")
    d = read_glb_json(p)
    prim = d["meshes"][0]["primitives"][0]
    assert set(prim["attributes"]) == {"POSITION", "COLOR_0", "JOINTS_0", "WEIGHTS_0", "_heat"}
    assert d["accessors"][prim["attributes"]["COLOR_0"]]["normalized"] is True
    assert d["bufferViews"][d["accessors"][prim["attributes"]["COLOR_0"]]["bufferView"]]["byteStride"] == 4
    assert prim["targets"] == [{"POSITION": prim["targets"][0]["POSITION"]}]
    r = load_mesh(p)
    assert set(r.attributes) == set(m.attributes)
    for k in m.attributes:
        assert np.array_equal(r.attributes[k], m.attributes[k]) or k == "uv"


# ---------------------------------------------------------------------- shared meshes
HELMET = [("GlassPlastic_low", 8136), ("LeatherParts_low", 21896), ("Lenses_low", 736),
          ("MetalParts_low", 20096), ("RubberWood_low", 43858)]


def test_shared_flight_helmet():
    p = meshes.shared_mesh_path("flight_helmet")
    if p is None:
        pytest.skip("shared meshes absent")
    ms = load_meshes(p)
    assert [(m.name, m.triangle_count) for m in ms] == HELMET
    assert all(m.index_dtype == np.uint16 for m in ms)
    assert sum(m.vertex_count for m in ms) == 60366
    whole = load_mesh(p)
    assert (whole.vertex_count, whole.triangle_count) == (60366, 94722)


def test_shared_flight_helmet_write_back(tmp_path):
    p = meshes.shared_mesh_path("flight_helmet")
    if p is None:
        pytest.skip("shared meshes absent")
    ms = load_meshes(p)
    new = [m.with_triangles(m.triangles[::-1]) for m in ms]
    out = save_mesh(new, tmp_path / "helmet.glb", source=p)
    back = load_meshes(out)
    assert all(a.equals(b) for a, b in zip(new, back, strict=True))
    assert read_glb_json(out)["nodes"] == read_glb_json(p)["nodes"]


def test_base64_embedded_gltf_buffer(tmp_path):
    m = meshes.icosphere(0)
    p = save_mesh(m, tmp_path / "e.gltf")
    doc = json.loads(p.read_text())
    assert doc["buffers"][0]["uri"].startswith("data:application/octet-stream;base64,")
    assert len(base64.b64decode(doc["buffers"][0]["uri"].split(",", 1)[1])) == doc["buffers"][0]["byteLength"]
    assert load_mesh(p).triangles.tolist() == m.triangles.tolist()
