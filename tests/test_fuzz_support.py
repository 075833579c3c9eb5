"""Helpers of the fuzz and hardening tests (no tests here): the command line run in-process
with its exit code and output, the contract every run must keep, one small file of every
mesh format, and the base documents (glTF, scene, profile) the fuzz tests mutate.

The contract (issue 17): exit 0 or 2; never a traceback; on 2 exactly one stderr line,
``meshopt-batch: error: ...``; on 0 every stderr line is ``meshopt-batch: ...`` (a one-line
warning or note); no file left behind but the outputs of a run that succeeded, and never a
temporary file.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import math
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from hypothesis import strategies as st

from meshopt_batch.geometry.mesh_record import Mesh
from meshopt_batch.io import save_mesh
from meshopt_batch_app.cli import main


@dataclass
class Run:
    code: int
    out: str
    err: str

    @property
    def err_lines(self) -> list[str]:
        return self.err.splitlines()


def run_cli(*argv) -> Run:
    """``meshopt-batch ARGV`` in this process: exit code, stdout, stderr (argparse's exit too)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
    return Run(code, out.getvalue(), err.getvalue())


def check_contract(run: Run, folder: Path, inputs: set[str], outputs: set[str] = frozenset()) -> None:
    """The promises of every run (see the module docstring); ``inputs`` are the names that were
    in ``folder`` before, ``outputs`` the files a successful run must have written there."""
    context = f"exit {run.code}, stderr {run.err!r}"
    assert run.code in (0, 2), context
    assert "Traceback" not in run.err and "Traceback" not in run.out, context
    lines = run.err_lines
    if run.code == 2:
        assert len(lines) == 1 and lines[0].startswith("meshopt-batch"), context
        assert ": error: " in lines[0], context
    else:
        assert all(line.startswith("meshopt-batch: ") for line in lines), context
        assert not any("RuntimeWarning" in line for line in lines), context
    present = {p.name for p in folder.iterdir()}
    assert not [n for n in present if "meshopt-batch-" in n or n.endswith((".tmp", ".part"))], present
    expected = set(inputs) | (set(outputs) if run.code == 0 else set())
    assert present == expected, (present, expected, context)


# ----------------------------------------------------------------------------- sample files
def quad_mesh() -> Mesh:
    """Two triangles sharing an edge, with normals and texture coordinates."""
    pos = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0.5]], np.float32)
    return Mesh(pos, np.array([[0, 1, 2], [2, 1, 3]], np.uint32), name="quad",
                attributes={"normal": np.tile(np.float32([0, 0, 1]), (4, 1)),
                            "uv": np.array([[0, 0], [1, 0], [0, 1], [1, 1]], np.float32)})


def _ply_ascii() -> bytes:
    return (b"ply\nformat ascii 1.0\ncomment fuzz\nelement vertex 4\nproperty float x\n"
            b"property float y\nproperty float z\nelement face 2\nproperty list uchar int vertex_indices\n"
            b"end_header\n0 0 0\n1.5 0 0\n0 1.25 0\n1 1 0.5\n3 0 1 2\n3 2 1 3\n")


def _ply_binary(endian: str) -> bytes:
    fmt = "binary_little_endian" if endian == "<" else "binary_big_endian"
    head = (f"ply\nformat {fmt} 1.0\nelement vertex 4\nproperty float x\nproperty float y\n"
            "property float z\nelement face 2\nproperty list uchar int vertex_indices\nend_header\n").encode()
    verts = struct.pack(endian + "12f", 0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 1, 0.5)
    faces = struct.pack(endian + "B3i", 3, 0, 1, 2) + struct.pack(endian + "B3i", 3, 2, 1, 3)
    return head + verts + faces


def _off() -> bytes:
    return b"OFF\n# fuzz\n4 2 0\n0 0 0\n1.5 0 0\n0 1.25 0\n1 1 0.5\n3 0 1 2\n3 2 1 3\n"


def _stl_ascii() -> bytes:
    facet = ("facet normal 0 0 1\n outer loop\n  vertex {} {} {}\n  vertex {} {} {}\n  vertex {} {} {}\n"
             " endloop\nendfacet\n")
    return ("solid fuzz\n" + facet.format(0, 0, 0, 1.5, 0, 0, 0, 1.25, 0)
            + facet.format(0, 1.25, 0, 1.5, 0, 0, 1, 1, 0.5) + "endsolid fuzz\n").encode()


def _stl_binary() -> bytes:
    rec = [struct.pack("<12fH", 0, 0, 1, 0, 0, 0, 1.5, 0, 0, 0, 1.25, 0, 0),
           struct.pack("<12fH", 0, 0, 1, 0, 1.25, 0, 1.5, 0, 0, 1, 1, 0.5, 0)]
    return b"fuzz binary stl".ljust(80, b" ") + struct.pack("<I", 2) + b"".join(rec)


def sample_files(folder: Path) -> dict[str, Path]:
    """One small file of every readable format (and form) in ``folder``, by a short name."""
    files = {
        "ply_ascii.ply": _ply_ascii(), "ply_le.ply": _ply_binary("<"), "ply_be.ply": _ply_binary(">"),
        "off.off": _off(), "stl_ascii.stl": _stl_ascii(), "stl_binary.stl": _stl_binary(),
        "gltf.gltf": json.dumps(gltf_document(), indent=1).encode() + b"\n",
    }
    out = {}
    for name, data in files.items():
        (folder / name).write_bytes(data)
        out[name] = folder / name
    out["obj.obj"] = save_mesh(quad_mesh(), folder / "obj.obj")
    out["glb.glb"] = save_mesh(quad_mesh(), folder / "glb.glb")
    return out


# ----------------------------------------------------------------------------- base documents
def gltf_document() -> dict:
    """A small glTF using most of what the readers look at: a scene with a node hierarchy
    (TRS, matrix, children), two meshes (one with a triangle and a line primitive), indices,
    normals, texture coordinates, a morph target, a sparse accessor and a material; one
    embedded buffer."""
    pos = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0.5]], np.float32)
    nrm = np.tile(np.float32([0, 0, 1]), (4, 1))
    uv = np.array([[0, 0], [1, 0], [0, 1], [1, 1]], np.float32)
    idx = np.array([0, 1, 2, 2, 1, 3], np.uint16)
    sparse_idx = np.array([1], np.uint16)
    sparse_val = np.float32([[0, 0, 0.25]])
    chunks = [pos.tobytes(), nrm.tobytes(), uv.tobytes(), idx.tobytes(), sparse_idx.tobytes() + b"\0\0",
              sparse_val.tobytes()]
    views, offset = [], 0
    for c in chunks:
        views.append({"buffer": 0, "byteOffset": offset, "byteLength": len(c)})
        offset += len(c)
    data = b"".join(chunks)
    views[4]["byteLength"] = 2
    vec3 = {"componentType": 5126, "count": 4, "type": "VEC3"}
    return {
        "asset": {"version": "2.0", "generator": "fuzz"},
        "scene": 0,
        "scenes": [{"nodes": [0]}],
        "nodes": [
            {"name": "root", "children": [1, 2], "translation": [0, 0, -1], "rotation": [0, 0, 0, 1],
             "scale": [1, 2, 1]},
            {"name": "left", "mesh": 0, "matrix": [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 2, 0, 0, 1]},
            {"name": "right", "mesh": 1, "translation": [-2, 0, 0]},
        ],
        "meshes": [
            {"name": "quad", "weights": [0.5],
             "primitives": [{"attributes": {"POSITION": 0, "NORMAL": 1, "TEXCOORD_0": 2}, "indices": 3,
                             "material": 0, "mode": 4, "targets": [{"POSITION": 4}]}]},
            {"name": "mixed",
             "primitives": [{"attributes": {"POSITION": 0}, "indices": 3},
                            {"attributes": {"POSITION": 0}, "mode": 1}]},
        ],
        "materials": [{"name": "m"}],
        "accessors": [
            {**vec3, "bufferView": 0, "min": [0, 0, 0], "max": [1, 1, 0.5]},
            {**vec3, "bufferView": 1},
            {"bufferView": 2, "componentType": 5126, "count": 4, "type": "VEC2"},
            {"bufferView": 3, "componentType": 5123, "count": 6, "type": "SCALAR"},
            {**vec3, "sparse": {"count": 1, "indices": {"bufferView": 4, "componentType": 5123},
                                "values": {"bufferView": 5}}},
        ],
        "bufferViews": views,
        "buffers": [{"byteLength": len(data),
                     "uri": "data:application/octet-stream;base64," + base64.b64encode(data).decode()}],
    }


def scene_document() -> dict:
    """A small scene using most of the JSON format: generated, merged, inline and absent
    meshes, a material, two layers (one a screen-space HUD), keyframes, spin, oscillation,
    a camera cut."""
    return {
        "name": "fuzz", "description": "fuzz base", "frames": 2, "width": 32, "height": 24,
        "clear": [0.1, 0.1, 0.15], "seed": 3, "light": {"direction": [0.4, 1, 0.3]},
        "camera": {"eye": [0, 2, 6], "target": [0, 0, 0], "fovy": 60, "near": 0.1, "far": 50},
        "cuts": [1],
        "meshes": {
            "ball": {"library": "icosphere", "subdiv": 1, "shuffle": 2},
            "crate": {"shape": "box", "divisions": 2},
            "pile": {"merge": [{"mesh": "box", "position": [1, 0, 0]},
                               {"mesh": {"shape": "cone", "segments": 6}, "scale": 0.5}]},
            "scan": {"shared": "no-such-mesh", "normalize": True,
                     "fallback": {"shape": "sphere", "segments": 8, "rings": 4}},
        },
        "materials": {"glass": {"blend": True, "alpha": 0.5,
                                "colour": {"kind": "checker", "base": [1, 0, 0], "second": [0, 0, 1],
                                           "frequency": 4}}},
        "layers": [{"name": "world", "order": "front-to-back"},
                   {"name": "hud", "order": "listed", "camera": {"projection": "screen", "size": [320, 200]}}],
        "objects": [
            {"name": "a", "mesh": "ball", "layer": "world",
             "animation": {"spin": [0, 5, 0], "keyframes": [{"frame": 0, "position": [0, 0, 0]},
                                                            {"frame": 2, "position": [1, 0, 0]}]}},
            {"name": "b", "mesh": "crate", "layer": "world", "material": "glass", "state": {"cull": "none"},
             "scale": [1, 2, 1], "visible": [0, 1]},
            {"name": "c", "mesh": "pile", "layer": "world", "rotation": [0, 45, 0],
             "animation": {"oscillate": {"axis": [0, 1, 0], "amplitude": 0.5, "period": 10}}},
            {"name": "d", "mesh": "scan", "layer": "world", "object_id": 9,
             "state": {"lit": True, "colour": [0.2, 0.8, 0.2]}},
            {"name": "hud", "mesh": {"shape": "quad"}, "layer": "hud", "position": [10, 10, 0.5], "scale": 20,
             "state": {"depth_test": False}},
        ],
    }


def profile_document() -> dict:
    """A profile JSON as ``probe --save-profile`` writes it."""
    return {"name": "fuzzgpu", "max_size": 96, "max_uniques": 32, "memory": "lookback", "memory_size": 42,
            "boundary_16bit": False, "description": "fuzz", "source": "test"}


# ----------------------------------------------------------------------------- mutations
_SPECIAL_NUMBERS = [0, 1, -1, 3, 7, 255, 2**16, 2**31, 2**32, 2**53 + 1, 2**64, -2**63, 10**30,
                    0.5, -0.0, 1e-300, 3.5e38, 1e39, -1e39, 1e308, math.inf, -math.inf, math.nan]
json_scalars = st.one_of(
    st.none(), st.booleans(), st.sampled_from(_SPECIAL_NUMBERS), st.integers(-1000, 1000),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=6),
    st.sampled_from(["", "2.0", "box", "icosphere", "SCALAR", "VEC3", "POSITION", "data:,", "a/b"]))
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=6)


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, prefix + (i,))


def _get(doc, path):
    for key in path:
        doc = doc[key]
    return doc


def mutate(doc, data, max_mutations: int = 3):
    """``doc`` after 1..``max_mutations`` random edits drawn from ``data``: a value replaced
    (by any JSON value, a special number, the value wrapped in a list or turned into a
    string), a key or element removed, an unknown key added, a number nudged."""
    for _ in range(data.draw(st.integers(1, max_mutations), label="mutations")):
        paths = list(_paths(doc))
        path = data.draw(st.sampled_from(paths), label="path")
        op = data.draw(st.sampled_from(["replace", "replace", "delete", "add", "wrap", "string", "nudge"]),
                       label="op")
        if not path:
            if op == "replace":
                doc = data.draw(json_values, label="root")
            continue
        parent, key = _get(doc, path[:-1]), path[-1]
        value = parent[key]
        if op == "replace":
            parent[key] = data.draw(json_values, label="value")
        elif op == "delete":
            del parent[key]
        elif op == "add" and isinstance(value, dict):
            value[data.draw(st.text(max_size=5), label="key")] = data.draw(json_values, label="value")
        elif op == "add" and isinstance(value, list):
            value.append(data.draw(json_values, label="value"))
        elif op == "wrap":
            parent[key] = [value]
        elif op == "string":
            parent[key] = json.dumps(value, allow_nan=True)
        elif op == "nudge" and isinstance(value, (int, float)) and not isinstance(value, bool):
            parent[key] = data.draw(st.sampled_from([value + 1, value - 1, -value, value * 1000,
                                                     value * 1e30, value / 3]), label="nudged")
    return doc
