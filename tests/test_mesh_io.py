"""Mesh record, order-preserving I/O, and the procedural meshes.

Every reader is checked against the raw contents of a small file written here by hand
(the order must be exactly the file's), every refusal against a tiny bad file, every writer
by a save/load round trip, and the shared meshes against the counts of their MANIFEST.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import meshes
from meshopt_batch import io
from meshopt_batch.geometry.mesh_record import Mesh, concatenate, fit_index_dtype
from meshopt_batch.io import load_mesh, load_meshes, save_mesh
from meshopt_batch.support.errors import MeshError


# ----------------------------------------------------------------------------- helpers
def rich_mesh(V=40, T=70, seed=0, index_dtype=np.uint32, name="rich") -> Mesh:
    rng = np.random.default_rng(seed)
    return Mesh(
        rng.normal(size=(V, 3)).astype(np.float32),
        rng.integers(0, V, size=(T, 3)),
        name=name,
        attributes={
            "normal": rng.normal(size=(V, 3)).astype(np.float32),
            "uv": rng.random((V, 2)).astype(np.float32),
            "color": rng.integers(0, 256, size=(V, 4)).astype(np.uint8),
            "weight": rng.random(V).astype(np.float32),
            "ids": rng.integers(-100, 100, size=(V, 3)).astype(np.int16),
        },
        index_dtype=index_dtype,
    )


def assert_same(a: Mesh, b: Mesh, check_name=False):
    assert a.equals(b, check_name=check_name), (a, b)


def one_line_error(excinfo, path: Path):
    msg = str(excinfo.value)
    assert str(path) in msg
    assert "\n" not in msg
    return msg


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


# ------------------------------------------------------------------------- Mesh record
def test_mesh_normalises_dtypes_and_is_read_only():
    m = Mesh([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.array([[0, 1, 2]], np.int64), name="t")
    assert m.positions.dtype == np.float32 and m.positions.flags.c_contiguous
    assert m.triangles.dtype == np.uint32 and m.triangles.flags.c_contiguous
    assert m.vertex_count == 3 and m.triangle_count == 1 and m.index_dtype == np.uint32
    with pytest.raises(ValueError):
        m.positions[0, 0] = 5
    src = np.zeros((3, 3), np.float32)
    Mesh(src, [[0, 1, 2]])
    assert src.flags.writeable  # the caller's array keeps its flags


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(positions=np.zeros((3, 2)), triangles=[[0, 1, 2]]),
        dict(positions=np.zeros((3, 3)), triangles=[[0, 1]]),
        dict(positions=np.zeros((3, 3)), triangles=[[0, 1, -2]]),
        dict(positions=np.zeros((3, 3)), triangles=[[0, 1, 2.5]]),
        dict(positions=np.zeros((3, 3)), triangles=[[0, 1, 2]], attributes={"normal": np.zeros((2, 3))}),
        dict(positions=np.zeros((3, 3)), triangles=[[0, 1, 2]], index_dtype=np.int32),
    ],
)
def test_mesh_construction_refuses_bad_shapes(kwargs):
    with pytest.raises(MeshError):
        Mesh(**kwargs)


def test_validate_refusals():
    ok = Mesh(np.zeros((3, 3)), [[0, 1, 2]], name="ok")
    assert ok.validate() is ok
    with pytest.raises(MeshError, match="NaN or infinite"):
        Mesh([[0, 0, 0], [np.nan, 0, 0], [0, 1, 0]], [[0, 1, 2]]).validate()
    with pytest.raises(MeshError, match="only 3 vertices"):
        Mesh(np.zeros((3, 3)), [[0, 1, 3]]).validate()
    with pytest.raises(MeshError, match="no triangles"):
        Mesh(np.zeros((3, 3)), np.zeros((0, 3))).validate()
    with pytest.raises(MeshError, match="empty"):
        Mesh(np.zeros((0, 3)), np.zeros((0, 3))).validate()
    with pytest.raises(MeshError, match="uint16"):
        Mesh(np.zeros((70000, 3)), [[0, 1, 2]], index_dtype=np.uint16).validate()


def test_degenerates_are_kept_and_counted():
    m = Mesh(np.zeros((4, 3)), [[0, 1, 2], [0, 0, 1], [1, 2, 1], [3, 3, 3], [1, 2, 3]])
    assert m.degenerate_count == 3
    assert m.degenerate_mask.tolist() == [False, True, True, True, False]


def test_with_triangles_and_vertex_copies_carry_every_attribute():
    m = rich_mesh(V=10, T=12, index_dtype=np.uint16)
    r = m.with_triangles(m.triangles[::-1])
    assert np.array_equal(r.triangles, m.triangles[::-1]) and r.positions is m.positions
    with pytest.raises(MeshError):
        m.with_triangles([[0, 1, 10]])
    grown = m.append_vertex_copies([3, 7], triangles=np.vstack([m.triangles, [[10, 11, 0]]]))
    assert grown.vertex_count == 12 and grown.triangle_count == 13
    for key, a in m.attributes.items():
        assert np.array_equal(grown.attributes[key][:10], a)
        assert np.array_equal(grown.attributes[key][10:], a[[3, 7]])
    assert np.array_equal(grown.positions[10:], m.positions[[3, 7]])
    assert grown.index_dtype == np.uint16
    gathered = m.with_vertices([2, 1, 0], triangles=[[0, 1, 2]])
    assert np.array_equal(gathered.attributes["uv"], m.attributes["uv"][[2, 1, 0]])
    with pytest.raises(MeshError):
        m.with_vertices([2, 1, 0])  # old triangles need the old vertices first


def test_index_dtype_grows_past_16_bits():
    m = Mesh(np.zeros((65536, 3)), [[0, 1, 65535]], index_dtype=np.uint16)
    assert m.validate().index_dtype == np.uint16
    big = m.append_vertex_copies([0])
    assert big.vertex_count == 65537 and big.index_dtype == np.uint32
    assert fit_index_dtype(np.uint16, 65536) == np.uint16
    assert fit_index_dtype(np.uint16, 65537) == np.uint32
    assert fit_index_dtype(np.uint32, 3) == np.uint32


def test_concatenate_offsets_indices_and_records_parts():
    a, b = meshes.cube(), meshes.grid(2, 1)
    c = concatenate([a, b], name="both")
    assert c.vertex_count == 24 + 6 and c.triangle_count == 12 + 4
    assert np.array_equal(c.triangles[12:], b.triangles + 24)
    assert c.meta["parts"] == [("cube", 0, 12, 0, 24), ("grid_2x1", 12, 16, 24, 30)]
    assert set(c.attributes) == {"normal", "uv"}


# ----------------------------------------------------------------- readers: exact order
def test_obj_exact_order_and_fan_triangulation(tmp_path):
    p = write(tmp_path / "quads.obj", """# a comment
o thing
v 0 0 0
v 1 0 0
v 1 1 0
v 0 1 0
v 2 0.5 0
v 9 9 9
usemtl m
f 1 2 3 4
f 3 4 1
f 2 5 3 4 1
f -6 -5 -4
""")
    with pytest.warns(UserWarning, match=r"quads\.obj.*fan-triangulated"):
        m = load_mesh(p)
    assert m.vertex_count == 6  # the unreferenced vertex is kept
    assert m.positions[5].tolist() == [9, 9, 9]
    assert m.triangles.tolist() == [
        [0, 1, 2], [0, 2, 3],  # quad
        [2, 3, 0],  # triangle, corners as written
        [1, 4, 2], [1, 2, 3], [1, 3, 0],  # pentagon fan from its first corner
        [0, 1, 2],  # relative indices
    ]
    assert m.index_dtype == np.uint32 and m.name == "quads"


def test_obj_uv_normals_and_vertex_splits(tmp_path):
    p = write(tmp_path / "uv.obj", """v 0 0 0
v 1 0 0
v 0 1 0
v 1 1 0
vt 0 0
vt 1 0
vt 0 1
vt 1 1
vt 0.5 0.5
vn 0 0 1
f 1/1/1 2/2/1 3/3/1
f 2/2/1 4/4/1 3/3/1
f 3/5/1 4/4/1 1/1/1
""")
    with pytest.warns(UserWarning, match=r"uv\.obj.*1 vertex copies"):
        m = load_mesh(p)
    # vertex 3 (index 2) meets a second uv: a copy is appended after the file's 4 vertices
    assert m.vertex_count == 5
    assert m.triangles.tolist() == [[0, 1, 2], [1, 3, 2], [4, 3, 0]]
    assert np.array_equal(m.positions[4], m.positions[2])
    assert m.attributes["uv"].tolist() == [[0, 0], [1, 0], [0, 1], [1, 1], [0.5, 0.5]]
    assert (m.attributes["normal"] == [0, 0, 1]).all()


def test_obj_unreferenced_vertices_keep_their_attributes(tmp_path):
    m = Mesh(np.arange(12).reshape(4, 3), [[0, 1, 2]], attributes={
        "normal": np.eye(4, 3, dtype=np.float32), "uv": np.arange(8, dtype=np.float32).reshape(4, 2)})
    assert_same(load_mesh(save_mesh(m, tmp_path / "u.obj")), m)


def test_obj_vertex_colours(tmp_path):
    p = write(tmp_path / "c.obj", "v 0 0 0 1 0 0\nv 1 0 0 0 1 0\nv 0 1 0 0 0 1\nf 1 2 3\n")
    m = load_mesh(p)
    assert m.attributes["color"].tolist() == [[1, 0, 0], [0, 1, 0], [0, 0, 1]]


def ply_binary(path: Path, positions, faces, endian="<", index_type="uint", extra_header=""):
    head = [
        "ply", f"format binary_{'little' if endian == '<' else 'big'}_endian 1.0",
        "comment hand made", f"element vertex {len(positions)}",
        "property float x", "property float y", "property float z",
        f"element face {len(faces)}", f"property list uchar {index_type} vertex_indices",
    ]
    if extra_header:
        head.append(extra_header)
    head.append("end_header")
    body = b"".join(struct.pack(endian + "3f", *p) for p in positions)
    code = {"uint": "I", "int": "i", "ushort": "H"}[index_type]
    for f in faces:
        body += struct.pack(endian + "B" + code * len(f), len(f), *f)
    path.write_bytes(("\n".join(head) + "\n").encode() + body)
    return path


@pytest.mark.parametrize("endian", ["<", ">"])
@pytest.mark.parametrize("index_type", ["uint", "int", "ushort"])
def test_ply_binary_exact_order(tmp_path, endian, index_type):
    rng = np.random.default_rng(1)
    pos = rng.normal(size=(30, 3)).astype(np.float32)
    faces = rng.integers(0, 30, size=(50, 3)).tolist()
    p = ply_binary(tmp_path / "b.ply", pos.tolist(), faces, endian, index_type)
    m = load_mesh(p)
    assert np.array_equal(m.positions, pos)
    assert m.triangles.tolist() == faces
    assert m.index_dtype == (np.uint16 if index_type == "ushort" else np.uint32)


def test_ply_binary_mixed_polygons_fan_in_place(tmp_path):
    pos = [[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [2, 2, 0]]
    p = ply_binary(tmp_path / "mixed.ply", pos, [[0, 1, 2, 3], [4, 2, 1], [0, 1, 2, 3, 4]])
    with pytest.warns(UserWarning, match=r"mixed\.ply.*fan-triangulated"):
        m = load_mesh(p)
    assert m.triangles.tolist() == [[0, 1, 2], [0, 2, 3], [4, 2, 1], [0, 1, 2], [0, 2, 3], [0, 3, 4]]


def test_ply_ascii_with_attributes_and_extra_elements(tmp_path):
    p = write(tmp_path / "a.ply", """ply
format ascii 1.0
comment colours, normals, uvs and a custom property
element vertex 4
property float x
property float y
property float z
property float nx
property float ny
property float nz
property float s
property float t
property uchar red
property uchar green
property uchar blue
property float quality
element face 3
property list uchar int vertex_indices
element edge 1
property int vertex1
property int vertex2
end_header
0 0 0 0 0 1 0 0 255 0 0 0.5
1 0 0 0 0 1 1 0 0 255 0 0.25
1 1 0 0 0 1 1 1 0 0 255 1
0 1 0 0 0 1 0 1 10 20 30 2
3 0 1 2
4 0 2 3 1
3 3 3 2
0 1
""")
    with pytest.warns(UserWarning, match="fan-triangulated"):
        m = load_mesh(p)
    assert m.triangles.tolist() == [[0, 1, 2], [0, 2, 3], [0, 3, 1], [3, 3, 2]]
    assert m.degenerate_count == 1
    assert m.attributes["color"].dtype == np.uint8
    assert m.attributes["color"][3].tolist() == [10, 20, 30]
    assert m.attributes["uv"].tolist() == [[0, 0], [1, 0], [1, 1], [0, 1]]
    assert m.attributes["quality"].tolist() == [0.5, 0.25, 1, 2]
    assert (m.attributes["normal"] == [0, 0, 1]).all()


def test_off_exact_order(tmp_path):
    p = write(tmp_path / "m.off", """OFF
# comment
5 3 0
0 0 0
1 0 0
1 1 0
0 1 0
3 3 3
4 0 1 2 3
3 4 2 1
3 1 1 1
""")
    with pytest.warns(UserWarning, match=r"m\.off.*fan-triangulated"):
        m = load_mesh(p)
    assert m.vertex_count == 5
    assert m.triangles.tolist() == [[0, 1, 2], [0, 2, 3], [4, 2, 1], [1, 1, 1]]
    assert m.degenerate_count == 1


def test_stl_ascii_and_binary_keep_every_corner(tmp_path):
    tri = np.array([[[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[1, 0, 0], [1, 1, 0], [0, 1, 0]]], np.float32)
    text = "solid s\n" + "".join(
        "facet normal 0 0 1\nouter loop\n" + "".join(f"vertex {x} {y} {z}\n" for x, y, z in t)
        + "endloop\nendfacet\n" for t in tri) + "endsolid s\n"
    a = load_mesh(write(tmp_path / "a.stl", text))
    binary = b"\0" * 80 + struct.pack("<I", 2) + b"".join(
        struct.pack("<3f", 0, 0, 1) + t.tobytes() + b"\0\0" for t in tri)
    (tmp_path / "b.stl").write_bytes(binary)
    b = load_mesh(tmp_path / "b.stl")
    for m in (a, b):
        assert m.vertex_count == 6  # nothing merged
        assert np.array_equal(m.positions, tri.reshape(-1, 3))
        assert m.triangles.tolist() == [[0, 1, 2], [3, 4, 5]]


def test_readers_agree_with_trimesh_where_trimesh_keeps_order(tmp_path):
    import trimesh

    m = rich_mesh(V=60, T=100, seed=3)
    save_mesh(m, tmp_path / "r.ply")
    t = trimesh.load(tmp_path / "r.ply", process=False, maintain_order=True)
    assert np.array_equal(np.asarray(t.vertices, np.float32), m.positions)
    assert np.array_equal(t.faces, m.triangles)


# ------------------------------------------------------------------------------ refusals
REFUSALS = {
    "points.ply": ("ply\nformat ascii 1.0\nelement vertex 2\nproperty float x\nproperty float y\n"
                   "property float z\nend_header\n0 0 0\n1 1 1\n", "point cloud"),
    "nofaces.ply": ("ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\n"
                    "property float z\nelement face 0\nproperty list uchar int vertex_indices\n"
                    "end_header\n0 0 0\n", "point cloud"),
    "lines.obj": ("v 0 0 0\nv 1 0 0\nl 1 2\n", "lines only"),
    "cloud.obj": ("v 0 0 0\nv 1 0 0\n", "point cloud"),
    "empty.obj": ("# nothing here\n", "empty"),
    "nan.obj": ("v 0 0 0\nv nan 0 0\nv 0 1 0\nf 1 2 3\n", "NaN or infinite"),
    "inf.off": ("OFF\n3 1 0\n0 0 0\ninf 0 0\n0 1 0\n3 0 1 2\n", "NaN or infinite"),
    "range.obj": ("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 4\n",
                  "vertex index 4 out of range (the file has 3 vertices, numbered from 1)"),
    "fraction.ply": ("ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n"
                     "property float z\nelement face 1\nproperty list uchar float vertex_indices\n"
                     "end_header\n0 0 0\n1 0 0\n0 1 0\n3 0 1.5 2\n", "not a whole vertex index (1.5)"),
    "zero.obj": ("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 0 1 2\n", "index 0"),
    "range.ply": ("ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n"
                  "property float z\nelement face 1\nproperty list uchar int vertex_indices\n"
                  "end_header\n0 0 0\n1 0 0\n0 1 0\n3 0 1 3\n", "out of range"),
    "neg.ply": ("ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n"
                "property float z\nelement face 1\nproperty list uchar int vertex_indices\n"
                "end_header\n0 0 0\n1 0 0\n0 1 0\n3 0 -1 2\n", "out of range"),
    "range.off": ("OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 7\n", "out of range"),
    "lines.off": ("OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n2 0 1\n", "lines/points only"),
    "garbage.ply": ("this is not a ply file\n", "not a PLY"),
    "garbage.off": ("hello\n", "not an OFF"),
    "garbage.glb": ("definitely not binary gltf", "not a GLB"),
    "garbage.gltf": ("{not json", "not a readable GLTF"),
    "nomesh.gltf": ('{"asset": {"version": "2.0"}}', "no meshes"),
    "v1.gltf": ('{"asset": {"version": "1.0"}}', "not supported"),
    "noheader.ply": ("ply\nformat ascii 1.0\nelement vertex 1\n", "end_header"),
    "short.off": ("OFF\n4 1 0\n0 0 0\n1 0 0\n", "ends after"),
    "unknown.xyz": ("0 0 0\n", "unknown mesh format"),
    "empty.stl": ("", "empty file"),
}


@pytest.mark.parametrize("name", sorted(REFUSALS))
def test_refusals_name_the_file_and_the_problem(tmp_path, name):
    text, problem = REFUSALS[name]
    p = write(tmp_path / name, text)
    with pytest.raises(MeshError) as exc:
        load_meshes(p)
    assert problem in one_line_error(exc, p)


def test_refusal_of_truncated_binary_ply(tmp_path):
    p = ply_binary(tmp_path / "cut.ply", [[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 2]] * 3)
    p.write_bytes(p.read_bytes()[:-5])
    with pytest.raises(MeshError) as exc:
        load_mesh(p)
    assert "ends inside" in one_line_error(exc, p)


def test_refusal_of_missing_file_and_directory(tmp_path):
    with pytest.raises(MeshError) as exc:
        load_mesh(tmp_path / "absent.ply")
    assert "no such file" in one_line_error(exc, tmp_path / "absent.ply")
    (tmp_path / "dir.obj").mkdir()
    with pytest.raises(MeshError, match="not a file"):
        load_mesh(tmp_path / "dir.obj")


def test_refusal_is_a_value_error_for_the_cli(tmp_path):
    with pytest.raises(ValueError):
        load_mesh(write(tmp_path / "x.obj", "v 0 0 0\n"))


# ---------------------------------------------------------------------------- round trips
@pytest.mark.parametrize("ext", ["ply", "obj", "glb", "gltf"])
@pytest.mark.parametrize("index_dtype", [np.uint16, np.uint32])
def test_round_trip_every_format(tmp_path, ext, index_dtype):
    m = rich_mesh(index_dtype=index_dtype)
    p = save_mesh(m, tmp_path / f"out.{ext}")
    r = load_mesh(p)
    if ext in ("ply", "obj"):
        assert_same(r, m)
    else:
        # glTF keeps texture coordinates with their origin at the top left: v is flipped,
        # and flipped back when the mesh goes to a bottom-left format again
        assert r.name == m.name and r.meta["uv_origin"] == "top-left"
        assert np.allclose(1 - r.attributes["uv"][:, 1], m.attributes["uv"][:, 1], atol=1e-7)
        assert_same(r.replace(attributes={k: a for k, a in r.attributes.items() if k != "uv"}),
                    m.replace(attributes={k: a for k, a in m.attributes.items() if k != "uv"}))
        back = load_mesh(save_mesh(r, tmp_path / "back.ply"))
        assert np.allclose(back.attributes["uv"], m.attributes["uv"], atol=1e-7)
    assert r.index_dtype == index_dtype
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".")]  # no temp files left


def test_written_glb_reads_the_same_in_trimesh(tmp_path):
    import trimesh

    m = rich_mesh(V=30, T=50, seed=7)
    scene = trimesh.load(save_mesh(m, tmp_path / "t.glb"), force="scene", process=False)
    (g,) = scene.geometry.values()
    assert np.array_equal(np.asarray(g.vertices, np.float32), m.positions)
    assert np.array_equal(g.faces, m.triangles)
    assert np.allclose(g.vertex_normals, m.attributes["normal"])


def test_round_trip_procedural_meshes_exactly(tmp_path):
    for m in (meshes.cube(), meshes.icosphere(1), meshes.torus(6, 4), meshes.uv_sphere(3, 5)):
        for ext in ("ply", "obj", "glb"):
            p = save_mesh(m, tmp_path / f"{m.name}.{ext}")
            r = load_mesh(p)
            if ext == "glb":
                save_mesh(r, tmp_path / "again.glb")
                r2 = load_mesh(tmp_path / "again.glb")
                assert_same(r2, r, check_name=True)
                continue
            assert_same(r, m)


def test_sixteen_bit_index_written_only_when_it_fits(tmp_path):
    m = Mesh(np.zeros((65536, 3)), [[0, 1, 65535]], index_dtype=np.uint16)
    assert load_mesh(save_mesh(m, tmp_path / "a.ply")).index_dtype == np.uint16
    assert load_mesh(save_mesh(m, tmp_path / "a.obj")).index_dtype == np.uint16
    # glTF reserves 0xFFFF (primitive restart): 32-bit there
    assert load_mesh(save_mesh(m, tmp_path / "a.glb")).index_dtype == np.uint32
    small = Mesh(np.zeros((3, 3)), [[0, 1, 2]], index_dtype=np.uint16)
    assert load_mesh(save_mesh(small, tmp_path / "s.glb")).index_dtype == np.uint16
    assert load_mesh(save_mesh(small.replace(index_dtype=np.uint32), tmp_path / "s32.ply")).index_dtype == np.uint32


def test_obj_list_writes_groups_and_ply_list_concatenates(tmp_path):
    parts = [meshes.cube(), meshes.grid(1, 1)]
    save_mesh(parts, tmp_path / "two.obj")
    text = (tmp_path / "two.obj").read_text()
    assert "o cube" in text and "o grid_1x1" in text
    both = load_mesh(tmp_path / "two.obj")
    assert_same(both, concatenate(parts))
    with pytest.warns(UserWarning, match="concatenated"):
        save_mesh(parts, tmp_path / "two.ply")
    assert_same(load_mesh(tmp_path / "two.ply"), concatenate(parts))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    V=st.integers(1, 40),
    T=st.integers(1, 60),
    seed=st.integers(0, 2**32 - 1),
    ext=st.sampled_from(["ply", "obj", "glb"]),
    with_attrs=st.booleans(),
    sixteen=st.booleans(),
)
def test_round_trip_property(tmp_path, V, T, seed, ext, with_attrs, sixteen):
    rng = np.random.default_rng(seed)
    pos = (rng.normal(size=(V, 3)) * 10.0 ** rng.integers(-6, 6)).astype(np.float32)
    attrs = {}
    if with_attrs:
        attrs = {"normal": rng.normal(size=(V, 3)).astype(np.float32),
                 "temperature": rng.normal(size=V).astype(np.float32)}
    m = Mesh(pos, rng.integers(0, V, size=(T, 3)), name="p", attributes=attrs,
             index_dtype=np.uint16 if sixteen else np.uint32)
    r = load_mesh(save_mesh(m, tmp_path / f"prop.{ext}"))
    assert r.equals(m, check_name=False)


# ------------------------------------------------------------------------- atomic writes
def test_format_tables():
    assert io.LOAD_FORMATS == (".obj", ".ply", ".off", ".stl", ".gltf", ".glb")
    assert io.SAVE_FORMATS == (".obj", ".ply", ".glb", ".gltf")
    assert set(io.READERS) == set(io.LOAD_FORMATS) and set(io.WRITERS) == set(io.SAVE_FORMATS)


def test_save_through_a_symlink_replaces_the_linked_file(tmp_path):
    real = tmp_path / "real.ply"
    real.write_bytes(b"old")
    (tmp_path / "link.ply").symlink_to(real)
    save_mesh(meshes.cube(), tmp_path / "link.ply")
    assert (tmp_path / "link.ply").is_symlink()
    assert load_mesh(real).equals(meshes.cube(), check_name=False)
    assert sorted(os.listdir(tmp_path)) == ["link.ply", "real.ply"]


def test_failed_save_leaves_nothing_and_keeps_the_old_file(tmp_path):
    bad = Mesh(np.zeros((3, 3)), [[0, 1, 2]], attributes={"tag": np.array(["a", "b", "c"])})
    target = tmp_path / "keep.ply"
    with pytest.raises(MeshError) as exc:
        save_mesh(bad, target)
    one_line_error(exc, target)
    assert os.listdir(tmp_path) == []
    target.write_bytes(b"old")
    with pytest.raises(MeshError):
        save_mesh(bad, target)
    assert target.read_bytes() == b"old" and os.listdir(tmp_path) == ["keep.ply"]
    invalid = Mesh(np.full((3, 3), np.nan), [[0, 1, 2]])
    with pytest.raises(MeshError, match="NaN"):
        save_mesh(invalid, tmp_path / "nan.obj")
    with pytest.raises(MeshError, match="cannot save"):
        save_mesh(meshes.cube(), tmp_path / "cube.stl")
    missing = tmp_path / "no" / "such" / "dir.ply"
    with pytest.raises(MeshError, match="does not exist") as exc:
        save_mesh(meshes.cube(), missing)
    assert one_line_error(exc, missing) == f"{missing}: directory {missing.parent} does not exist"
    (tmp_path / "taken.ply").mkdir()
    with pytest.raises(MeshError, match="cannot write: Is a directory") as exc:
        save_mesh(meshes.cube(), tmp_path / "taken.ply")
    one_line_error(exc, tmp_path / "taken.ply")
    assert sorted(os.listdir(tmp_path)) == ["keep.ply", "taken.ply"]
    assert os.listdir(tmp_path / "taken.ply") == []


# ---------------------------------------------------------------------- shared meshes
MANIFEST = {
    "bunny.ply": (35947, 69451),
    "happy_buddha_100k.ply": (49950, 100000),
    "dragon_100k.ply": (50000, 100000),
    "dragon_res3.ply": (22998, 47794),
    "armadillo_86k.ply": (43243, 86482),
    "tree.ply": (77300, 62142),
    "tree_quaternius_birch8.ply": (1581, 2506),
    "bunny_sub2.ply": (557164, 1111216),
}


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_shared_ply_counts(name):
    p = meshes.shared_mesh_path(name)
    if p is None:
        pytest.skip(f"{name} not in {meshes.shared_meshes_dir()}")
    m = load_mesh(p)
    assert (m.vertex_count, m.triangle_count) == MANIFEST[name]
    assert m.index_dtype == np.uint32


def test_shared_ply_matches_a_raw_read():
    p = meshes.shared_mesh_path("tree_quaternius_birch8")
    if p is None:
        pytest.skip("shared meshes absent")
    data = p.read_bytes()
    start = data.index(b"end_header\n") + len(b"end_header\n")
    V, T = MANIFEST[p.name]
    pos = np.frombuffer(data, "<f4", V * 3, start).reshape(V, 3)
    faces = np.frombuffer(data, np.dtype([("n", "u1"), ("i", "<u4", 3)]), T, start + V * 12)
    m = load_mesh(p)
    assert (faces["n"] == 3).all()
    assert np.array_equal(m.positions, pos) and np.array_equal(m.triangles, faces["i"])


# ------------------------------------------------------------------- finder and generators
def test_shared_mesh_finder_env_override(tmp_path, monkeypatch):
    monkeypatch.setenv("MESHOPT_BATCH_SHARED_MESHES", str(tmp_path))
    assert meshes.shared_meshes_dir() == tmp_path
    assert meshes.shared_meshes() == [] and meshes.shared_mesh_path("bunny") is None
    save_mesh(meshes.cube(), tmp_path / "bunny.ply")
    (tmp_path / "MANIFEST.md").write_text("x")
    assert meshes.shared_mesh_path("bunny") == tmp_path / "bunny.ply"
    assert meshes.shared_mesh_path("bunny.ply") == tmp_path / "bunny.ply"
    assert meshes.shared_meshes() == [tmp_path / "bunny.ply"]
    monkeypatch.setenv("MESHOPT_BATCH_SHARED_MESHES", str(tmp_path / "absent"))
    assert meshes.shared_meshes() == [] and meshes.shared_mesh_path("bunny") is None


GENERATED = [
    (lambda: meshes.grid(5, 3), 6 * 4, 2 * 5 * 3),
    (lambda: meshes.uv_sphere(6, 10), 5 * 11 + 20, 2 * 10 * 5),
    (lambda: meshes.icosphere(2), 162, 320),
    (lambda: meshes.torus(12, 6), 72, 144),
    (lambda: meshes.cube(), 24, 12),
    (lambda: meshes.random_soup(50, seed=3), 150, 50),
]


@pytest.mark.parametrize("make,V,T", GENERATED)
def test_generators_counts_orientation_determinism(make, V, T):
    m = make().validate()
    assert (m.vertex_count, m.triangle_count) == (V, T)
    assert m.degenerate_count == 0
    assert set(m.attributes) == {"normal", "uv"}
    assert np.allclose(np.linalg.norm(m.attributes["normal"], axis=1), 1, atol=1e-6)
    p = m.positions.astype(np.float64)
    t = m.triangles
    face_n = np.cross(p[t[:, 1]] - p[t[:, 0]], p[t[:, 2]] - p[t[:, 0]])
    vert_n = m.attributes["normal"][t].astype(np.float64).sum(axis=1)
    assert (np.einsum("ij,ij->i", face_n, vert_n) > 0).all()  # CCW seen from the normal side
    assert make().equals(m, check_name=True)


def test_closed_generators_are_closed():
    for m in (meshes.icosphere(1), meshes.torus(8, 5)):
        edges = np.sort(m.triangles[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2), axis=1)
        _, counts = np.unique(edges, axis=0, return_counts=True)
        assert (counts == 2).all()


def test_random_soup_shares_no_vertex_and_depends_on_seed():
    a, b = meshes.random_soup(20, seed=1), meshes.random_soup(20, seed=2)
    assert np.array_equal(a.triangles.reshape(-1), np.arange(60))
    assert not np.array_equal(a.positions, b.positions)
