"""``regroup_views``: one buffer view per kind of data before ``--compress``; every accessor
reads the same values, interleaved, sparse and image data stay where they were."""

from __future__ import annotations

import numpy as np

from meshopt_batch.io.gltf.gltf_document import read_accessor
from meshopt_batch.io.gltf.stream_grouping import ARRAY_BUFFER, regroup_views


def _document():
    """Positions then normals in one view, two index buffers (one triangle each) in another,
    two animations whose samplers repeat the same keys in views of their own, an interleaved
    view, quantized positions (6-byte elements) and an image."""
    pos = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32)
    nrm = np.array([[0, 0, 1]] * 3, np.float32)
    idx = np.array([0, 1, 2, 2, 1, 0], np.uint16)
    keys = np.array([0.0, 0.5, 1.0], np.float32)
    vals = np.arange(9, dtype=np.float32).reshape(3, 3)
    inter = np.arange(3 * 6, dtype=np.float32).reshape(3, 6)  # two VEC3 interleaved, stride 24
    qpos = np.array([[0, 0, 0, 0], [65535, 0, 0, 0], [0, 65535, 0, 0]], np.uint16)  # stride 8, element 6
    image = b"\x89PNG fake image bytes"
    parts = [pos.tobytes() + nrm.tobytes(), idx.tobytes(), keys.tobytes(), keys.tobytes(), vals.tobytes(),
             inter.tobytes(), qpos.tobytes(), image]
    blob, views = b"", []
    for i, part in enumerate(parts):
        blob += bytes(-len(blob) % 4)
        view = {"buffer": 0, "byteOffset": len(blob), "byteLength": len(part)}
        if i == 5:
            view["byteStride"] = 24
        if i == 6:
            view["byteStride"] = 8
        views.append(view)
        blob += part
    f, u16 = 5126, 5123
    accessors = [
        {"bufferView": 0, "componentType": f, "count": 3, "type": "VEC3", "min": [0, 0, 0], "max": [1, 1, 0]},
        {"bufferView": 0, "byteOffset": 36, "componentType": f, "count": 3, "type": "VEC3"},
        {"bufferView": 1, "componentType": u16, "count": 3, "type": "SCALAR"},
        {"bufferView": 1, "byteOffset": 6, "componentType": u16, "count": 3, "type": "SCALAR"},
        {"bufferView": 2, "componentType": f, "count": 3, "type": "SCALAR", "min": [0], "max": [1]},
        {"bufferView": 3, "componentType": f, "count": 3, "type": "SCALAR", "min": [0], "max": [1]},
        {"bufferView": 4, "componentType": f, "count": 3, "type": "VEC3"},
        {"bufferView": 5, "componentType": f, "count": 3, "type": "VEC3", "min": [0, 1, 2], "max": [12, 13, 14]},
        {"bufferView": 5, "byteOffset": 12, "componentType": f, "count": 3, "type": "VEC3"},
        {"bufferView": 6, "componentType": u16, "count": 3, "type": "VEC3", "min": [0, 0, 0],
         "max": [65535, 65535, 0]},
    ]
    doc = {
        "asset": {"version": "2.0"},
        "buffers": [{"byteLength": len(blob)}],
        "bufferViews": views,
        "accessors": accessors,
        "images": [{"bufferView": 7, "mimeType": "image/png"}],
        "meshes": [{"primitives": [
            {"attributes": {"POSITION": 0, "NORMAL": 1}, "indices": 2},
            {"attributes": {"POSITION": 7, "NORMAL": 8}, "indices": 3},
            {"attributes": {"POSITION": 9}},
        ]}],
        "nodes": [{"mesh": 0}],
        "animations": [{"samplers": [{"input": keys, "output": 6}],
                        "channels": [{"sampler": 0, "target": {"node": 0, "path": path}}]}
                       for keys, path in ((4, "translation"), (5, "scale"))],
    }
    return doc, [blob]


def _values(doc, buffers):
    return [read_accessor(doc, buffers, i)[0].tolist() for i in range(len(doc["accessors"]))]


def test_every_accessor_reads_the_same_values_from_views_of_its_kind():
    doc, buffers = _document()
    new, new_buffers = regroup_views(doc, buffers)
    assert _values(new, new_buffers) == _values(doc, buffers)
    acc, views = new["accessors"], new["bufferViews"]
    # positions and normals apart, each kind in one view with 4-byte rows for vertex data
    assert acc[0]["bufferView"] != acc[1]["bufferView"]
    for a in (0, 1, 9):
        assert views[acc[a]["bufferView"]]["target"] == ARRAY_BUFFER
    assert views[acc[9]["bufferView"]]["byteStride"] == 8
    assert views[acc[0]["bufferView"]]["byteStride"] == 12
    # both index buffers in one view, each on a whole triangle of 2-byte indices
    assert acc[2]["bufferView"] == acc[3]["bufferView"] and acc[3]["byteOffset"] % 6 == 0
    assert "byteStride" not in views[acc[2]["bufferView"]]
    # the repeated keys stored once; min and max and the rest of the JSON as they were
    assert (acc[4]["bufferView"], acc[4].get("byteOffset", 0)) == (acc[5]["bufferView"], acc[5].get("byteOffset", 0))
    assert acc[4]["min"] == [0] and acc[0]["max"] == [1, 1, 0]
    assert new["meshes"] == doc["meshes"] and new["animations"] == doc["animations"]
    # interleaved attributes and the image keep their views and bytes
    inter = views[acc[7]["bufferView"]]
    assert acc[7]["bufferView"] == acc[8]["bufferView"] and inter["byteStride"] == 24 and acc[8]["byteOffset"] == 12
    image = views[new["images"][0]["bufferView"]]
    start = image["byteOffset"]
    assert new_buffers[0][start:start + image["byteLength"]] == b"\x89PNG fake image bytes"
    assert new["buffers"][0]["byteLength"] == len(new_buffers[0])
    # the quantized positions moved to a view of their own with their stride
    assert len(views) == 8  # pos, nrm, indices, keys, values, qpos + interleaved + image
    assert all(v["byteOffset"] % 4 == 0 for v in views)


def test_a_document_naming_a_view_elsewhere_is_left_as_it_is():
    doc, buffers = _document()
    doc["meshes"][0]["primitives"][0]["extensions"] = {"VENDOR_thing": {"bufferView": 1}}
    new, new_buffers = regroup_views(doc, buffers)
    assert new is doc and new_buffers is buffers


def test_a_primitive_that_is_not_a_triangle_list_keeps_its_indices_on_index_boundaries():
    doc, buffers = _document()
    doc["meshes"][0]["primitives"][1]["mode"] = 5  # a strip: its indices are not whole triangles
    new, new_buffers = regroup_views(doc, buffers)
    assert _values(new, new_buffers) == _values(doc, buffers)
    lists = new["accessors"][2]["bufferView"]
    strip = new["accessors"][3]["bufferView"]
    assert lists != strip  # a triangle list and a strip are different kinds of index data
