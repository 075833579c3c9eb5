"""Small compressed glTF files built here with the codecs' own encoders (``meshopt`` for
EXT/KHR_meshopt_compression, ``DracoPy`` for KHR_draco_mesh_compression), every value known.

:func:`meshopt_sample` writes a grid mesh whose buffer views use every mode (ATTRIBUTES,
TRIANGLES, INDICES) and filter (NONE, OCTAHEDRAL, QUATERNION, EXPONENTIAL, and COLOR in
the KHR extension), with a fallback placeholder or a fallback with data; its second
primitive is a triangle strip and an animation's rotations use the quaternion filter.
:func:`draco_sample` writes the same grid as one Draco primitive.
"""

from __future__ import annotations

import base64
import json
import struct
from dataclasses import dataclass, field
from pathlib import Path

import DracoPy
import meshopt
import numpy as np

GLB_MAGIC = b"glTF"


@dataclass
class Grid:
    positions: np.ndarray  # (V, 3) float32
    normals: np.ndarray  # (V, 3) float32, unit
    uvs: np.ndarray  # (V, 2) float32
    colors: np.ndarray  # (V, 4) float32 in 0..1
    triangles: np.ndarray  # (T, 3) uint32
    strip: np.ndarray  # strip indices of the first row


def grid(n: int = 12) -> Grid:
    """An ``n`` x ``n`` vertex grid on a bumpy surface, its triangles in a shuffled order."""
    y, x = np.mgrid[0:n, 0:n].astype(np.float32)
    z = np.sin(x * 0.7) * np.cos(y * 0.5)
    pos = np.stack([x, y, z], axis=-1).reshape(-1, 3).astype(np.float32)
    nrm = np.stack([-0.7 * np.cos(x * 0.7) * np.cos(y * 0.5), 0.5 * np.sin(x * 0.7) * np.sin(y * 0.5),
                    np.ones_like(x)], axis=-1).reshape(-1, 3)
    nrm = (nrm / np.linalg.norm(nrm, axis=1, keepdims=True)).astype(np.float32)
    uv = (np.stack([x, y], axis=-1).reshape(-1, 2) / (n - 1)).astype(np.float32)
    col = np.concatenate([uv, 1 - uv[:, :1], np.ones_like(uv[:, :1])], axis=1).astype(np.float32)
    tris = []
    for r in range(n - 1):
        for c in range(n - 1):
            a = r * n + c
            tris += [[a, a + 1, a + n], [a + 1, a + n + 1, a + n]]
    strip = np.array([v for c in range(n) for v in (c + n, c)], np.uint16)
    order = np.random.default_rng(7).permutation(len(tris))  # an order worth optimizing
    return Grid(pos, nrm, uv, col, np.array(tris, np.uint32)[order], strip)


@dataclass
class _Builder:
    """Views appended to a plain fallback buffer and a stream buffer."""

    extension: str
    plain: bytearray = field(default_factory=bytearray)
    streams: bytearray = field(default_factory=bytearray)
    views: list = field(default_factory=list)

    def add(self, decoded: bytes, stream: bytes, *, mode: str, stride: int, filt: str = "NONE",
            target: int | None = None, byte_stride: int | None = None) -> int:
        self.plain += b"\x00" * (-len(self.plain) % 4)
        self.streams += b"\x00" * (-len(self.streams) % 4)
        ext = {"buffer": 0, "byteOffset": len(self.streams), "byteLength": len(stream), "byteStride": stride,
               "mode": mode, "count": len(decoded) // stride}
        if filt != "NONE":
            ext["filter"] = filt
        view = {"buffer": 1, "byteOffset": len(self.plain), "byteLength": len(decoded),
                "extensions": {self.extension: ext}}
        if target is not None:
            view["target"] = target
        if byte_stride is not None:
            view["byteStride"] = byte_stride
        self.plain += decoded
        self.streams += stream
        self.views.append(view)
        return len(self.views) - 1


def _filtered(rows: np.ndarray, filt: str) -> bytes:
    """What a decoder reads back from ``rows`` stored with ``filt`` (the library's decoder)."""
    stream = meshopt.encode_vertex_buffer_level(rows, 2, 0)
    return meshopt.decode_vertex_buffer(stream, rows.shape[0], rows.shape[1], filt).tobytes()


def meshopt_sample(path: Path, *, extension: str = "EXT_meshopt_compression", fallback: str = "placeholder",
                   version: int = 0) -> dict:
    """Write a meshopt-compressed ``.glb`` (or ``.gltf`` with an external fallback ``.bin``
    when ``fallback="data"``); returns what each accessor should read as."""
    g = grid()
    b = _Builder(extension)
    v = len(g.positions)

    def attributes(rows: np.ndarray, filt: str = "NONE", **kw) -> int:
        rows = np.ascontiguousarray(rows)
        stream = meshopt.encode_vertex_buffer_level(rows.view(np.uint8).reshape(rows.shape[0], -1), 2, version)
        decoded = rows.tobytes() if filt == "NONE" else _filtered(rows.view(np.uint8).reshape(rows.shape[0], -1), filt)
        return b.add(decoded, stream, mode="ATTRIBUTES", stride=rows.view(np.uint8).reshape(rows.shape[0], -1).shape[1],
                     filt=filt, **kw)

    pos_view = attributes(g.positions, target=34962)
    oct_rows = meshopt.encode_filter_oct(np.concatenate([g.normals, np.ones((v, 1), np.float32)], axis=1), 4, 8)
    nrm_view = attributes(oct_rows, "OCTAHEDRAL", target=34962, byte_stride=4)
    exp_rows = meshopt.encode_filter_exp(g.uvs, 15, "SharedVector")
    uv_view = attributes(exp_rows, "EXPONENTIAL", target=34962)
    tris = g.triangles.astype(np.uint16).reshape(-1)
    tri_stream = meshopt.encode_index_buffer(tris.astype(np.uint32))
    tri_decoded = meshopt.decode_index_buffer(tri_stream, tris.size, 2).tobytes()
    idx_view = b.add(tri_decoded, tri_stream, mode="TRIANGLES", stride=2, target=34963)
    strip_view = b.add(g.strip.tobytes(), meshopt.encode_index_sequence(g.strip.astype(np.uint32)),
                       mode="INDICES", stride=2, target=34963)
    angles = np.linspace(0, np.pi, 8, dtype=np.float32)
    quats = np.stack([np.zeros_like(angles), np.sin(angles / 2), np.zeros_like(angles), np.cos(angles / 2)], axis=1)
    quat_view = attributes(meshopt.encode_filter_quat(quats, 8, 12), "QUATERNION")
    time_view = attributes(np.linspace(0, 1, 8, dtype=np.float32).reshape(-1, 1))
    row = g.positions[:2 * int(np.sqrt(v))]
    row_view = attributes(row, target=34962)
    accessors = [
        {"bufferView": pos_view, "componentType": 5126, "count": v, "type": "VEC3",
         "min": g.positions.min(0).tolist(), "max": g.positions.max(0).tolist()},
        {"bufferView": nrm_view, "componentType": 5120, "normalized": True, "count": v, "type": "VEC3"},
        {"bufferView": uv_view, "componentType": 5126, "count": v, "type": "VEC2"},
        {"bufferView": idx_view, "componentType": 5123, "count": int(tris.size), "type": "SCALAR"},
        {"bufferView": strip_view, "componentType": 5123, "count": int(g.strip.size), "type": "SCALAR"},
        {"bufferView": time_view, "componentType": 5126, "count": 8, "type": "SCALAR", "min": [0.0], "max": [1.0]},
        {"bufferView": quat_view, "componentType": 5122, "normalized": True, "count": 8, "type": "VEC4"},
        {"bufferView": row_view, "componentType": 5126, "count": len(row), "type": "VEC3",
         "min": row.min(0).tolist(), "max": row.max(0).tolist()},
    ]
    attrs = {"POSITION": 0, "NORMAL": 1, "TEXCOORD_0": 2}
    if extension == "KHR_meshopt_compression":
        col_view = attributes(meshopt.encode_filter_color(g.colors, 4, 8), "COLOR", target=34962)
        accessors.append({"bufferView": col_view, "componentType": 5121, "normalized": True, "count": v,
                          "type": "VEC4"})
        attrs["COLOR_0"] = len(accessors) - 1
    doc = {
        "asset": {"version": "2.0"},
        "extensionsUsed": [extension, "KHR_mesh_quantization"],
        "extensionsRequired": [extension, "KHR_mesh_quantization"] if fallback == "placeholder" else [
            "KHR_mesh_quantization"],
        "scene": 0, "scenes": [{"nodes": [0]}], "nodes": [{"mesh": 0}],
        "meshes": [{"primitives": [{"attributes": attrs, "indices": 3},
                                   {"attributes": {"POSITION": 7}, "indices": 4, "mode": 5}]}],
        "animations": [{"channels": [{"sampler": 0, "target": {"node": 0, "path": "rotation"}}],
                        "samplers": [{"input": 5, "output": 6}]}],
        "accessors": accessors,
        "bufferViews": b.views,
    }
    fb_entry = {"byteLength": len(b.plain), "extensions": {extension: {"fallback": True}}}
    if fallback == "placeholder":
        doc["buffers"] = [{"byteLength": len(b.streams)}, fb_entry]
        path.write_bytes(glb(doc, bytes(b.streams)))
    else:
        fb_entry["uri"] = path.stem + ".fallback.bin"
        (path.parent / fb_entry["uri"]).write_bytes(bytes(b.plain))
        doc["buffers"] = [{"byteLength": len(b.streams), "uri": path.stem + ".streams.bin"}, fb_entry]
        (path.parent / doc["buffers"][0]["uri"]).write_bytes(bytes(b.streams))
        path.write_text(json.dumps(doc, indent=1))
    return {"grid": g, "doc": doc}


def glb(doc: dict, bin_data: bytes) -> bytes:
    """A GLB of ``doc`` with ``bin_data`` as its BIN chunk."""
    js = json.dumps(doc, separators=(",", ":")).encode()
    js += b" " * (-len(js) % 4)
    bin_data = bin_data + b"\x00" * (-len(bin_data) % 4)
    body = struct.pack("<I4s", len(js), b"JSON") + js + struct.pack("<I4s", len(bin_data), b"BIN\x00") + bin_data
    return struct.pack("<4sII", GLB_MAGIC, 2, 12 + len(body)) + body


def read_glb(path: Path) -> tuple[dict, bytes]:
    data = path.read_bytes()
    n = struct.unpack("<I", data[12:16])[0]
    doc = json.loads(data[20:20 + n])
    return doc, data[20 + n + 8:]


def draco_sample(path: Path, *, preserve_order: bool = True) -> Grid:
    """Write the grid as one Draco-compressed primitive (positions, normals, texture
    coordinates) in a ``.glb``; returns the grid."""
    g = grid()
    stream = DracoPy.encode(g.positions, g.triangles, quantization_bits=16, preserve_order=preserve_order,
                            normals=g.normals.astype(np.float64), tex_coord=g.uvs.astype(np.float64))
    mesh = DracoPy.decode(stream)
    ids = {a["attribute_type"]: a["unique_id"] for a in mesh.attributes}
    v, t = len(mesh.points), mesh.faces.size
    doc = {
        "asset": {"version": "2.0"},
        "extensionsUsed": ["KHR_draco_mesh_compression"], "extensionsRequired": ["KHR_draco_mesh_compression"],
        "scene": 0, "scenes": [{"nodes": [0]}], "nodes": [{"mesh": 0}],
        "meshes": [{"primitives": [{"attributes": {"POSITION": 0, "NORMAL": 1, "TEXCOORD_0": 2}, "indices": 3,
                                    "extensions": {"KHR_draco_mesh_compression": {
                                        "bufferView": 0, "attributes": {"POSITION": ids[0], "NORMAL": ids[1],
                                                                        "TEXCOORD_0": ids[3]}}}}]}],
        "accessors": [
            {"componentType": 5126, "count": v, "type": "VEC3", "min": mesh.points.min(0).tolist(),
             "max": mesh.points.max(0).tolist()},
            {"componentType": 5126, "count": v, "type": "VEC3"},
            {"componentType": 5126, "count": v, "type": "VEC2"},
            {"componentType": 5123, "count": t, "type": "SCALAR"},
        ],
        "bufferViews": [{"buffer": 0, "byteOffset": 0, "byteLength": len(stream)}],
        "buffers": [{"byteLength": len(stream)}],
    }
    path.write_bytes(glb(doc, stream))
    return g


def data_uri(raw: bytes) -> str:
    return "data:application/octet-stream;base64," + base64.b64encode(raw).decode()
