"""Scenes: the JSON format (round trip, errors), cameras, animation, orders, mesh fallbacks,
glTF scenes, and the shipped scene files."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from meshopt_batch_app.cli import main as cli_main
from pipeline_model import shapes
from pipeline_model.geometry import GeometryStage
from pipeline_model.scene import (
    Camera,
    Scene,
    SceneError,
    builders,
    load_gltf_scene,
    load_scene,
    resolve_mesh,
    shipped_scene_path,
    shipped_scenes,
)
from pipeline_model.scene.animation import euler_matrix, model_matrix, placement_from_matrix

SHIPPED = ("city-unordered", "city-ordered", "city-batched", "hud-over-3d", "sprites-2d",
           "low-frequency")


def _scene(objects, **kw):
    d = {"name": "t", "camera": {"eye": [0, 0, 10], "target": [0, 0, 0], "near": 1, "far": 100},
         "objects": objects}
    d.update(kw)
    return Scene.from_dict(d)


# ----------------------------------------------------------------------------- shipped scenes
def test_shipped_scenes_listed():
    assert set(SHIPPED) <= set(shipped_scenes())


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_files_match_builders(name):
    text = shipped_scene_path(name).read_text()
    assert text == builders.dumps(builders.build(name)), \
        f"meshes/scenes/{name}.json is stale: run python -m pipeline_model.scene.builders"


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_scene_round_trip(name):
    sc = load_scene(name)
    d = sc.to_dict()
    again = Scene.from_dict(json.loads(json.dumps(d)), base_dir=sc.base_dir)
    assert again.to_dict() == d
    # the same frames: identical draw lists and identical geometry
    g1, g2 = GeometryStage(), GeometryStage()
    for f in (0, 17):
        a, b = sc.frame(f, 320, 208), again.frame(f, 320, 208)
        assert [x.object_id for x in a.draws] == [x.object_id for x in b.draws]
        fa, fb = g1.process(a), g2.process(b)
        fa.validate()
        assert np.array_equal(fa.xy, fb.xy) and np.array_equal(fa.z, fb.z)
        assert np.array_equal(fa.colour_params, fb.colour_params)


def test_round_trip_of_every_feature(tmp_path):
    d = {
        "name": "all", "description": "x", "frames": 7, "width": 64, "height": 48,
        "clear": [0.1, 0.2, 0.3], "seed": 4, "light": {"direction": [0, 1, 0]},
        "camera": {"projection": "perspective", "fovy": 50, "near": 0.5, "far": 50,
                   "path": [{"frame": 0, "eye": [0, 1, 9], "target": [0, 0, 0]},
                            {"frame": 6, "eye": [1, 2, 8], "fovy": 40}],
                   "velocity": [0.1, 0, 0]},
        "meshes": {"b": {"shape": "box", "divisions": 2, "shuffle": 3}, "s": "sphere"},
        "materials": {"glass": {"blend": True, "alpha": 0.5, "depth_write": False}},
        "layers": [{"name": "w", "order": "back-to-front"}, {"name": "o", "order": "shuffle"},
                   {"name": "hud", "camera": {"projection": "screen", "size": [64, 48]}}],
        "objects": [
            {"name": "a", "mesh": "b", "layer": "w", "position": [1, 0, 0], "scale": 2,
             "state": {"lit": True, "cull": "none", "shader_cost": 2.5,
                       "colour": {"kind": "checker", "base": [1, 0, 0], "second": [0, 0, 1], "frequency": 4}},
             "animation": {"spin": [0, 3, 0], "keyframes": [{"frame": 0, "position": [0, 0, 0]},
                                                            {"frame": 5, "position": [2, 0, 0]}]}},
            {"name": "g", "mesh": "s", "layer": "o", "material": "glass", "state": {"alpha": 0.25},
             "visible": [2, 5], "animation": {"oscillate": {"axis": [0, 1, 0], "amplitude": 1, "period": 10}}},
            {"name": "h", "mesh": {"shape": "quad"}, "layer": "hud", "position": [32, 24, 0],
             "scale": [10, 10, 1], "state": {"depth_test": False, "depth_write": False, "cull": "none"}},
        ],
    }
    sc = Scene.from_dict(d)
    text = sc.to_json()
    again = Scene.from_dict(json.loads(text))
    assert again.to_dict() == sc.to_dict()
    p = tmp_path / "s.json"
    sc.save(p)
    assert load_scene(p).to_dict() == sc.to_dict()
    assert sc.objects[1].state.alpha == 0.25 and sc.objects[1].state.blend  # material + override
    assert [len(sc.frame(f).draws) for f in range(7)] == [2, 2, 3, 3, 3, 3, 2]


# ----------------------------------------------------------------------------- errors
@pytest.mark.parametrize("doc, words", [
    ({"objects": [{"mesh": "box", "colour": [1, 0, 0]}]}, "unknown key 'colour'"),
    ({"objects": [{"name": "x"}]}, "missing 'mesh'"),
    ({"objects": [{"mesh": "nosuchmesh"}]}, "unknown mesh"),
    ({"objects": [{"mesh": "box", "state": {"alpha": 2}}]}, "alpha"),
    ({"objects": [{"mesh": "box", "layer": "hud"}]}, "unknown layer"),
    ({"objects": [{"mesh": "box", "object_id": 1}, {"mesh": "box", "object_id": 1}]}, "used twice"),
    ({"objects": "box"}, "'objects' must be a list"),
    ({"camera": {"near": 0}, "objects": []}, "near"),
    ({"layers": [{"name": "a", "order": "random"}], "objects": []}, "order"),
])
def test_bad_scene_dicts(doc, words):
    with pytest.raises(SceneError, match=words.replace("(", r"\(")):
        Scene.from_dict(doc)


def test_bad_scene_file_cli_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"objects": [{"mesh": "box", "state": {"cull": "sideways"}}]}')
    assert cli_main(["simulate", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("meshopt-batch: error: bad.json: objects[0].state.cull")
    broken = tmp_path / "broken.json"
    broken.write_text('{"objects": [')
    assert cli_main(["simulate", str(broken)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not valid JSON" in err[0]
    assert cli_main(["simulate", "no-such-scene"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "city-unordered" in err[0]


# ----------------------------------------------------------------------------- cameras, motion
def test_perspective_camera_centres_target():
    cam = Camera(eye=(3, 4, 5), target=(1, -1, 0.5))
    view, proj, eye = cam.matrices(0, 200, 100)
    c = proj @ view @ np.array([1, -1, 0.5, 1.0])
    assert abs(c[0] / c[3]) < 1e-12 and abs(c[1] / c[3]) < 1e-12
    assert np.allclose(eye, (3, 4, 5))


def test_screen_camera_is_pixels():
    sc = _scene([{"mesh": "quad", "position": [40.5, 10.25, 0.5], "scale": [16, 8, 1],
                  "state": {"cull": "none"}}], camera={"projection": "screen"})
    fr = GeometryStage().process(sc.frame(0, 100, 60))
    xs, ys = fr.xy[..., 0], fr.xy[..., 1]
    assert xs.min() == 32.5 and xs.max() == 48.5 and ys.min() == 6.25 and ys.max() == 14.25
    assert np.all(fr.z == 0.5)
    # a logical size scales to the real screen
    sc2 = _scene([{"mesh": "quad", "position": [50, 30, 0], "scale": [100, 60, 1], "state": {"cull": "none"}}],
                 camera={"projection": "screen", "size": [100, 60]})
    fr2 = GeometryStage().process(sc2.frame(0, 200, 120))
    assert fr2.xy[..., 0].min() == 0 and fr2.xy[..., 0].max() == 200 and fr2.xy[..., 1].max() == 120


def test_animation_keyframes_velocity_spin():
    sc = _scene([{"mesh": "box", "animation": {"keyframes": [{"frame": 0, "position": [0, 0, 0]},
                                                             {"frame": 10, "position": [10, 0, 0]}],
                                               "velocity": [0, 1, 0], "spin": [0, 90, 0]}}])
    o = sc.objects[0]
    m = o.transform(5)
    assert np.allclose(m[:3, 3], [5, 5, 0])
    assert np.allclose(m[:3, :3] @ [1, 0, 0], [math.cos(math.radians(450)), 0, -math.sin(math.radians(450))])
    assert np.allclose(o.transform(20)[:3, 3], [10, 20, 0])   # clamped keyframes + velocity


def test_rotation_is_rz_ry_rx_in_degrees():
    rx, ry, rz = (math.radians(a) for a in (10, 20, 30))
    Rx = np.array([[1, 0, 0], [0, math.cos(rx), -math.sin(rx)], [0, math.sin(rx), math.cos(rx)]])
    Ry = np.array([[math.cos(ry), 0, math.sin(ry)], [0, 1, 0], [-math.sin(ry), 0, math.cos(ry)]])
    Rz = np.array([[math.cos(rz), -math.sin(rz), 0], [math.sin(rz), math.cos(rz), 0], [0, 0, 1]])
    assert np.allclose(euler_matrix((10, 20, 30)), Rz @ Ry @ Rx, rtol=0, atol=1e-15)
    c = math.cos(math.radians(90))
    assert model_matrix((1, 2, 3), (0, 90, 0), (2, 2, 2)).tolist() == [
        [2 * c, 0, 2, 1], [0, 2, 0, 2], [-2, 0, 2 * c, 3], [0, 0, 0, 1]]


def test_rotation_about_one_axis_has_no_negative_zeros():
    # the shipped scenes turn objects about y only: their matrices keep the bits they had
    # when the rotation was the product of three axis matrices (every zero is +0.0)
    for axis in range(3):
        for a in np.arange(-720, 721, 7.5):
            r = euler_matrix(np.roll([float(a), 0.0, 0.0], axis))
            assert not np.signbit(r[r == 0]).any(), (axis, a)


@pytest.mark.parametrize("rotation, scale", [((10, 20, 30), (1, 2, 3)), ((0, -45, 170), (-1, 2, 3)),
                                             ((80, 0, 0), (0.5, 0.5, 0.5))])
def test_placement_from_matrix_inverts_model_matrix(rotation, scale):
    m = model_matrix((4, -5, 6), rotation, scale)
    pos, rot, scl = placement_from_matrix(m)
    assert pos == (4.0, -5.0, 6.0)
    assert np.allclose(model_matrix(pos, rot, scl), m, rtol=0, atol=1e-14)
    sign = -1 if np.prod(scale) < 0 else 1          # a mirroring matrix: three negative scales
    assert np.allclose(scl, sign * np.abs(scale), rtol=0, atol=1e-14)


def test_placement_of_a_zero_scaled_node_keeps_its_position():
    m = model_matrix((1, 2, 3), (0, 30, 0), (0, 0, 0))
    assert placement_from_matrix(m) == ((1.0, 2.0, 3.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0))


def test_orders_per_frame():
    objs = [{"mesh": "box", "position": [0, 0, -z]} for z in (5, 1, 9, 3)]
    far = _scene(objs, layers=[{"name": "w", "order": "back-to-front"}])
    near = _scene(objs, layers=[{"name": "w", "order": "front-to-back"}])
    shuf = _scene(objs, layers=[{"name": "w", "order": "shuffle"}])
    listed = _scene(objs)
    assert [d.object_id for d in far.frame(0).draws] == [2, 0, 3, 1]
    assert [d.object_id for d in near.frame(0).draws] == [1, 3, 0, 2]
    assert [d.object_id for d in listed.frame(0).draws] == [0, 1, 2, 3]
    s0 = [d.object_id for d in shuf.frame(0).draws]
    assert sorted(s0) == [0, 1, 2, 3] and s0 == [d.object_id for d in shuf.frame(9).draws]


# ----------------------------------------------------------------------------- meshes
def test_shapes_are_outward_ccw():
    for name in shapes.SHAPES:
        m = shapes.make_shape(name)
        p = m.positions.astype(float)
        t = m.triangles.astype(int)
        fn = np.cross(p[t[:, 1]] - p[t[:, 0]], p[t[:, 2]] - p[t[:, 0]])
        vn = m.attributes["normal"][t].mean(axis=1)
        assert np.all((fn * vn).sum(1) > 0), name


def test_library_meshes_and_their_errors():
    assert resolve_mesh({"library": "icosphere", "subdiv": 1}).triangle_count == 80
    assert resolve_mesh({"library": "torus", "n_major": 5, "n_minor": 3}).triangle_count == 30
    for spec, words in (({"library": "icosphere", "subdiv": -1}, ": library mesh 'icosphere': icosphere needs"),
                        ({"library": "torus", "spokes": 3}, ".spokes: unknown parameter of library 'torus'"),
                        ({"library": "teapot", "fallback": "box"}, ".library: unknown library mesh 'teapot'")):
        with pytest.raises(SceneError) as exc:
            resolve_mesh(spec, ctx="meshes.b", fallbacks=[])
        assert str(exc.value).startswith("meshes.b" + words) and "\n" not in str(exc.value)


def test_meshes_package_does_not_import_the_pipeline_model():
    code = ("import sys, meshes; print(sorted({m.split('.')[0] for m in sys.modules}"
            " & {'pipeline_model', 'gpu_probe', 'meshopt_batch_app'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_absent_shared_mesh_falls_back(monkeypatch, tmp_path):
    monkeypatch.setenv("MESHOPT_BATCH_SHARED_MESHES", str(tmp_path))
    sc = _scene([{"mesh": "statue"}], meshes={"statue": {"shared": "bunny", "normalize": True,
                                                        "fallback": {"shape": "torus"}}})
    m = sc.mesh("statue")
    assert m.triangle_count == shapes.torus().triangle_count
    assert sc.fallbacks == ["shared:bunny"]


def test_shared_mesh_used_when_present():
    from meshes import shared_mesh_path

    if shared_mesh_path("bunny") is None:
        pytest.skip("../shared/meshes not present")
    sc = load_scene("city-unordered")
    m = sc.mesh("statue")
    assert m.triangle_count == 69451 and "shared:bunny" not in sc.fallbacks


def test_gltf_scene(tmp_path):
    import trimesh

    a = trimesh.creation.box(extents=(1, 1, 1))
    b = trimesh.creation.icosphere(subdivisions=1)
    s = trimesh.Scene()
    s.add_geometry(a, node_name="crate", geom_name="crate_geom",
                   transform=trimesh.transformations.translation_matrix([2, 0, 0]))
    s.add_geometry(b, node_name="ball", geom_name="ball_geom")
    path = tmp_path / "two.glb"
    s.export(str(path))
    sc = load_scene(path)
    assert len(sc.objects) == 2
    fr = GeometryStage().process(sc.frame(0, 160, 120))
    assert fr.n_triangles > 0
    assert fr.triangles_in.sum() == len(a.faces) + len(b.faces)
    again = Scene.from_dict(json.loads(sc.to_json()))
    fr2 = GeometryStage().process(again.frame(0, 160, 120))
    assert np.array_equal(fr.xy, fr2.xy)
    assert load_gltf_scene(path, frames=5).frames == 5


def test_gltf_scene_object_names_are_stable_for_multi_primitive_nodes(tmp_path):
    import base64

    pos = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 0, 1], [0, 1, 1]], np.float32)
    doc = {
        "asset": {"version": "2.0"}, "scene": 0, "scenes": [{"nodes": [0, 1]}],
        "nodes": [{"name": "statue", "mesh": 0}, {"mesh": 1, "translation": [3, 0, 0]}],
        "meshes": [{"name": "parts", "primitives": [{"attributes": {"POSITION": 0}},
                                                     {"attributes": {"POSITION": 1}}]},
                   {"name": "single", "primitives": [{"attributes": {"POSITION": 0}}]}],
        "accessors": [{"bufferView": 0, "byteOffset": o, "componentType": 5126, "count": 3, "type": "VEC3",
                       "min": pos[i:i + 3].min(0).tolist(), "max": pos[i:i + 3].max(0).tolist()}
                      for i, o in ((0, 0), (3, 36))],
        "bufferViews": [{"buffer": 0, "byteLength": pos.nbytes}],
        "buffers": [{"byteLength": pos.nbytes,
                     "uri": "data:application/octet-stream;base64," + base64.b64encode(pos.tobytes()).decode()}],
    }
    path = tmp_path / "parts.gltf"
    path.write_text(json.dumps(doc))
    names = [o.name for o in load_gltf_scene(path).objects]
    assert names == [o.name for o in load_gltf_scene(path).objects]  # trimesh's suffixes are random
    assert len(names) == 3 and len(set(names)) == 3
    assert [n for n in names if n.startswith("statue/")] == sorted(n for n in names if n.startswith("statue/"))
    assert sum(n.startswith("statue/") for n in names) == 2 and "1" in names


def test_flight_helmet_scene_if_present():
    from meshes import shared_mesh_path

    p = shared_mesh_path("flight_helmet")
    if p is None:
        pytest.skip("../shared/meshes not present")
    sc = load_scene(p)
    fr = GeometryStage().process(sc.frame(0, 320, 240))
    assert int(fr.triangles_in.sum()) == 94722 and fr.n_triangles > 1000


# ----------------------------------------------------------------------------- camera cuts
def test_cuts_flag_frames_and_round_trip():
    sc = _scene([{"mesh": "box"}], cuts=[5, 2])
    assert sc.cuts == (2, 5)
    assert [sc.frame(i).cut for i in range(7)] == [False, False, True, False, False, True, False]
    again = Scene.from_dict(json.loads(sc.to_json()))
    assert again.cuts == (2, 5)
    assert not any(_scene([{"mesh": "box"}]).frame(i).cut for i in range(3))
    for bad in ([0], "3", [1.5]):
        with pytest.raises(SceneError, match="cuts"):
            _scene([{"mesh": "box"}], cuts=bad)


def test_hud_over_3d_has_a_camera_cut():
    sc = load_scene("hud-over-3d")
    assert sc.cuts == (30,)
    jump = np.linalg.norm(sc.camera.placement(30)[0] - sc.camera.placement(29)[0])
    step = np.linalg.norm(sc.camera.placement(29)[0] - sc.camera.placement(28)[0])
    assert jump > 20 * step


def test_box_divisions_per_axis():
    b = shapes.box([2, 5, 3])
    assert b.triangle_count == 2 * 2 * (2 * 5 + 5 * 3 + 2 * 3)
    assert np.allclose(b.positions.min(0), -0.5) and np.allclose(b.positions.max(0), 0.5)
    # every triangle faces outwards (CCW seen from outside)
    p = b.positions[b.triangles].astype(np.float64)
    n = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
    assert np.all(np.einsum("ij,ij->i", n, p.mean(1)) > 0)
    same = shapes.box(3)
    assert np.array_equal(shapes.box([3, 3, 3]).triangles, same.triangles)
