"""Static batches (the scene format's ``merge`` meshes) and the shipped ``city-batched`` scene.

``city-batched`` is ``city-unordered`` with its buildings baked into one draw per material, as
engines' static batching submits static geometry: VRO can order only whole batches, EVR works
per primitive inside them (paper 003 sec. IV.A names geometry that occludes parts of its own
object as what defeats object-level sorting).
"""

import json

import numpy as np
import pytest

from pipeline_model.pipeline import simulate
from pipeline_model.scene import Scene, SceneError, builders, load_scene, resolve_mesh


def _box(**part):
    return {"mesh": {"shape": "box", "divisions": 2}, **part}


def test_merge_places_parts_in_listed_order():
    box = resolve_mesh({"shape": "box", "divisions": 2})
    m = resolve_mesh({"merge": [_box(position=[10, 0, 0]), _box(scale=[2, 3, 4], rotation=[0, 90, 0])]})
    n, v = box.triangle_count, box.vertex_count
    assert m.triangle_count == 2 * n and m.vertex_count == 2 * v
    assert np.array_equal(m.triangles[:n], box.triangles)
    assert np.array_equal(m.triangles[n:], box.triangles + v)
    assert np.allclose(m.positions[:v], box.positions + [10, 0, 0])
    # rotation by 90 degrees about y after scaling: x' = z * 4, z' = -x * 2
    p = box.positions.astype(np.float64)
    assert np.allclose(m.positions[v:], np.stack([4 * p[:, 2], 3 * p[:, 1], -2 * p[:, 0]], 1), atol=1e-6)
    assert np.allclose(np.linalg.norm(m.normals, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(m.uvs[:v], box.uvs)


def test_merge_keeps_outward_normals_and_winding_under_non_uniform_and_mirrored_scale():
    for scale in ([3, 1, 0.5], [-2, 1, 1]):
        m = resolve_mesh({"merge": [_box(scale=scale)]})
        p = m.positions.astype(np.float64)[m.triangles.astype(np.int64)]
        face_n = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
        outward = np.einsum("ij,ij->i", face_n, p.mean(axis=1))
        assert np.all(outward > 0), scale                     # counter-clockwise seen from outside
        vn = m.normals[m.triangles.astype(np.int64)].mean(axis=1)
        assert np.all(np.einsum("ij,ij->i", vn, face_n) > 0), scale


@pytest.mark.parametrize("spec, words", [
    ({"merge": []}, "non-empty list"),
    ({"merge": [{"position": [0, 0, 0]}]}, "missing 'mesh'"),
    ({"merge": [_box(colour=[1, 0, 0])]}, "unknown key 'colour'"),
    ({"merge": [_box(scale=0)]}, "singular"),
    ({"merge": [_box()], "shape": "box"}, "exactly one of"),
])
def test_merge_bad_specs_are_one_line_errors(spec, words):
    with pytest.raises(SceneError) as exc:
        resolve_mesh(spec, ctx="meshes.b")
    assert words in str(exc.value) and "\n" not in str(exc.value)


def test_city_batched_holds_every_building_once_within_the_16_bit_limit():
    plain = builders.build("city-unordered")
    batched = builders.build("city-batched")
    buildings = [o for o in plain["objects"] if o["name"].startswith("building-")]
    parts = [p for name, m in batched["meshes"].items() if name.startswith("static-batch-")
             for p in m["merge"]]
    key = lambda o: (tuple(o["position"]), tuple(o["scale"]))  # noqa: E731
    assert sorted(map(key, parts)) == sorted(map(key, buildings))
    sc = load_scene("city-batched")
    tri = {o.mesh: sc.mesh(o.mesh).triangle_count for o in sc.objects}
    others = [o for o in batched["objects"] if not o["name"].startswith("static-batch-")]
    assert len(others) == len(plain["objects"]) - len(buildings)
    n_batches = 0
    for name in tri:
        if name.startswith("static-batch-"):
            n_batches += 1
            assert sc.mesh(name).vertex_count <= builders.BATCH_MAX_VERTICES
    expect = sum(resolve_mesh(plain["meshes"][o["mesh"]]).triangle_count for o in buildings)
    assert sum(t for n, t in tri.items() if n.startswith("static-batch-")) == expect
    assert n_batches < len(buildings) // 10


def test_city_batched_draws_the_same_geometry_as_city_unordered():
    runs = [simulate(s, ["baseline"], frames=1, first_frame=12, width=320, height=208,
                     progress=False) for s in ("city-unordered", "city-batched")]
    a, b = (r.technique_totals("baseline") for r in runs)
    assert a["covered_pixels"] == b["covered_pixels"]
    assert a["vertex_invocations"] == b["vertex_invocations"]


def test_evr_is_closer_to_the_oracle_than_vro_on_city_batched():
    run = simulate("city-batched", ["baseline", "oracle", "vro", "evr"], frames=8, progress=False,
                   check_images=True)
    shaded = {t: run.technique_totals(t)["fragments_shaded"] for t in run.techniques}
    assert run.per_frame["image_diff_pixels"].sum() == 0
    assert shaded["oracle"] < shaded["evr"] < shaded["vro"] < shaded["baseline"]
    # 8 frames at 1196 x 768 (frame 0 learns only): EVR's excess over the oracle is about half VRO's
    assert shaded["evr"] - shaded["oracle"] < 0.6 * (shaded["vro"] - shaded["oracle"])


def test_city_batched_json_round_trips():
    d = builders.build("city-batched")
    sc = Scene.from_dict(json.loads(builders.dumps(d)))
    assert sc.name == "city-batched" and len(sc.objects) == len(d["objects"])
