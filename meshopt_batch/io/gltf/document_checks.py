"""Checking a parsed glTF 2.0 document's types, references and sizes before anything reads it.

:func:`validate_document` runs once, where the JSON is parsed
(:func:`~meshopt_batch.io.gltf.gltf_document.load_document`), so the readers and writers after it
can index the document without meeting a string where an object belongs.  It checks every
property they use ([1]_, the JSON schema of each object):

* types: the top-level arrays hold objects; ``asset`` is an object with a string
  ``version``; names, URIs and MIME types are strings; ``normalized`` is a boolean;
* the node hierarchy: disjoint strict trees (one parent at most, no cycle), scenes listing
  root nodes;
* references: every index (``scene``, ``scenes[].nodes``, ``nodes[].children/mesh/skin``,
  primitive ``attributes/indices/material/targets``, ``bufferViews[].buffer``, accessor and
  sparse ``bufferView``, image ``bufferView``, texture ``source/sampler``, skin
  ``inverseBindMatrices/joints/skeleton``, animation sampler ``input/output``, channel
  ``sampler`` and ``target.node``, ``EXT_mesh_gpu_instancing`` attributes) is a whole number
  inside its array;
* enumerations and ranges: primitive ``mode`` 0-6, accessor ``componentType`` and ``type``,
  sparse index component types, byte offsets and lengths >= 0, ``byteStride`` 4-252 and a
  multiple of 4, accessor ``count`` at most :data:`~meshopt_batch.support.limits.MAX_ELEMENTS`;
* numbers: node ``matrix`` (16), ``translation`` (3), ``rotation`` (4), ``scale`` (3) and
  ``weights``, accessor ``min``/``max``: finite and within float32's range
  (:data:`~meshopt_batch.support.limits.FLOAT32_MAX`), since positions are float32 and a larger
  factor turns them into infinities;
* memory: an accessor without a ``bufferView`` is all zeros of ``count`` elements (then
  sparse substitutions); that allocation must fit in the memory available.  The sum over
  every accessor a read materializes is checked by the reader before it allocates
  (:func:`~meshopt_batch.io.gltf.gltf_document.check_accessor_memory`).

A failure is one :class:`~meshopt_batch.io.format_common.Refusal` naming the JSON pointer and what
was expected (``/nodes/0/translation: expected an array of 3 numbers, got null``); the file's
name is put in front by :mod:`meshopt_batch.io`.

References
----------
.. [1] Khronos, glTF 2.0 specification and its JSON schema (``glTF.schema.json``,
   ``node.schema.json``, ``mesh.primitive.schema.json``, ``accessor.schema.json``,
   ``bufferView.schema.json``...); the Khronos glTF validator reports places as JSON
   pointers in the same way.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from ...support.errors import MeshError
from ...support.json_values import describe, pointer
from ...support.limits import FLOAT32_MAX, MAX_ELEMENTS, LimitError, check_memory
from ..format_common import Refusal, one_line
from .glb_container import GLB_MAGIC, parse_glb

__all__ = ["PRIMITIVE_MODES", "check_gltf_file", "validate_document"]

#: Top-level properties that are arrays of objects.
TOP_LEVEL_ARRAYS = ("accessors", "animations", "buffers", "bufferViews", "cameras", "images",
                    "materials", "meshes", "nodes", "samplers", "scenes", "skins", "textures")
#: POINTS, LINES, LINE_LOOP, LINE_STRIP, TRIANGLES, TRIANGLE_STRIP, TRIANGLE_FAN.
PRIMITIVE_MODES = range(7)
_COMPONENT_BYTES = {5120: 1, 5121: 1, 5122: 2, 5123: 2, 5125: 4, 5126: 4}
_TYPE_COMPONENTS = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT2": 4, "MAT3": 9, "MAT4": 16}
_SPARSE_INDEX_TYPES = (5121, 5123, 5125)
_NODE_VECTORS = (("matrix", 16), ("translation", 3), ("rotation", 4), ("scale", 3))


def _fail(where: str, expected: str, value: Any) -> Refusal:
    return Refusal(f"{where}: expected {expected}, got {describe(value)}")


class _Checker:
    """The checks, with the document's array lengths at hand for index checks."""

    def __init__(self, doc: dict):
        self.doc = doc
        self.sizes: dict[str, int] = {}

    # -- value checks --------------------------------------------------------------------
    def obj(self, value: Any, where: str) -> dict:
        if not isinstance(value, dict):
            raise _fail(where, "an object", value)
        return value

    def array(self, value: Any, where: str) -> list:
        if not isinstance(value, list):
            raise _fail(where, "an array", value)
        return value

    def string(self, value: Any, where: str) -> str:
        if not isinstance(value, str):
            raise _fail(where, "a string", value)
        return value

    def whole(self, value: Any, where: str, lo: int = 0, hi: int | None = None) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _fail(where, "a whole number", value)
        if value < lo:
            raise Refusal(f"{where}: expected at least {lo}, got {value}")
        if hi is not None and value > hi:
            raise Refusal(f"{where}: expected at most {hi:,}, got {value:,}")
        return value

    def index(self, value: Any, where: str, target: str, size: int | None = None) -> int:
        size = self.sizes[target] if size is None else size
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < size:
            span = f"0..{size - 1}" if size else "none exist"
            raise _fail(where, f"an index into {target} ({span})", value)
        return value

    def numbers(self, value: Any, where: str, n: int | None = None) -> list:
        what = f"an array of {n} numbers" if n is not None else "an array of numbers"
        if not isinstance(value, list) or (n is not None and len(value) != n):
            raise _fail(where, what, value)
        for i, x in enumerate(value):
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) \
                    or abs(x) > FLOAT32_MAX:
                raise _fail(f"{where}/{i}", "a finite number within float32's range", x)
        return value

    def optional(self, d: dict, key: str, check, where: str, *args):
        if key in d:
            check(d[key], f"{where}/{key}", *args)

    # -- the document --------------------------------------------------------------------
    def run(self) -> None:
        doc = self.doc
        asset = self.obj(doc["asset"], "/asset")
        if "version" not in asset:
            raise Refusal('/asset/version: missing (expected "2.0")')
        self.string(asset["version"], "/asset/version")
        for key in ("extensionsUsed", "extensionsRequired"):
            if key in doc:
                for i, name in enumerate(self.array(doc[key], f"/{key}")):
                    self.string(name, f"/{key}/{i}")
        for name in TOP_LEVEL_ARRAYS:
            if name in doc:
                for i, item in enumerate(self.array(doc[name], f"/{name}")):
                    self.obj(item, f"/{name}/{i}")
        self.sizes = {name: len(doc.get(name, [])) for name in TOP_LEVEL_ARRAYS}
        self.optional(doc, "scene", self.index, "", "scenes")
        for i, scene in enumerate(doc.get("scenes", [])):
            self.index_list(scene, "nodes", f"/scenes/{i}", "nodes")
        for i, node in enumerate(doc.get("nodes", [])):
            self.node(node, f"/nodes/{i}")
        self.hierarchy()
        for i, mesh in enumerate(doc.get("meshes", [])):
            self.mesh(mesh, f"/meshes/{i}")
        for i, buf in enumerate(doc.get("buffers", [])):
            self.optional(buf, "uri", self.string, f"/buffers/{i}")
            self.optional(buf, "byteLength", self.whole, f"/buffers/{i}")
        for i, view in enumerate(doc.get("bufferViews", [])):
            self.buffer_view(view, f"/bufferViews/{i}")
        for i, acc in enumerate(doc.get("accessors", [])):
            self.accessor(acc, f"/accessors/{i}")
        for i, image in enumerate(doc.get("images", [])):
            where = f"/images/{i}"
            self.optional(image, "uri", self.string, where)
            self.optional(image, "mimeType", self.string, where)
            self.optional(image, "bufferView", self.index, where, "bufferViews")
        for i, tex in enumerate(doc.get("textures", [])):
            self.optional(tex, "source", self.index, f"/textures/{i}", "images")
            self.optional(tex, "sampler", self.index, f"/textures/{i}", "samplers")
        for i, skin in enumerate(doc.get("skins", [])):
            where = f"/skins/{i}"
            self.optional(skin, "inverseBindMatrices", self.index, where, "accessors")
            self.optional(skin, "skeleton", self.index, where, "nodes")
            self.index_list(skin, "joints", where, "nodes")
        for i, anim in enumerate(doc.get("animations", [])):
            self.animation(anim, f"/animations/{i}")

    def index_list(self, d: dict, key: str, where: str, target: str) -> None:
        if key in d:
            for j, v in enumerate(self.array(d[key], f"{where}/{key}")):
                self.index(v, f"{where}/{key}/{j}", target)

    def index_map(self, value: Any, where: str, target: str) -> None:
        for key, v in self.obj(value, where).items():
            self.index(v, where + pointer(key), target)

    def hierarchy(self) -> None:
        """The nodes form disjoint strict trees (a node has at most one parent and is not its
        own ancestor) and a scene lists root nodes only."""
        nodes = self.doc.get("nodes", [])
        parent: dict[int, int] = {}
        for i, node in enumerate(nodes):
            for j, child in enumerate(node.get("children", [])):
                if child in parent or child == i:
                    whose = "itself" if child == i else f"already a child of node {parent[child]}"
                    raise Refusal(f"/nodes/{i}/children/{j}: node {child} is {whose} (the nodes must form "
                                  "disjoint trees)")
                parent[child] = i
        done: set[int] = set()
        for start in parent:
            path, i = [], start
            while i in parent and i not in done:
                if i in path:
                    raise Refusal(f"/nodes/{i}: node {i} is its own ancestor (the nodes must form disjoint trees)")
                path.append(i)
                i = parent[i]
            done.update(path)
        for s, scene in enumerate(self.doc.get("scenes", [])):
            for j, root in enumerate(scene.get("nodes", [])):
                if root in parent:
                    raise Refusal(f"/scenes/{s}/nodes/{j}: node {root} is not a root (a child of node "
                                  f"{parent[root]})")

    def node(self, node: dict, where: str) -> None:
        self.index_list(node, "children", where, "nodes")
        for key, target in (("mesh", "meshes"), ("skin", "skins"), ("camera", "cameras")):
            self.optional(node, key, self.index, where, target)
        self.optional(node, "name", self.string, where)
        for key, n in _NODE_VECTORS:
            self.optional(node, key, self.numbers, where, n)
        self.optional(node, "weights", self.numbers, where)
        if "extensions" in node:
            ext = self.obj(node["extensions"], f"{where}/extensions")
            if "EXT_mesh_gpu_instancing" in ext:
                inst = self.obj(ext["EXT_mesh_gpu_instancing"], f"{where}/extensions/EXT_mesh_gpu_instancing")
                self.optional(inst, "attributes", self.index_map,
                              f"{where}/extensions/EXT_mesh_gpu_instancing", "accessors")

    def mesh(self, mesh: dict, where: str) -> None:
        self.optional(mesh, "name", self.string, where)
        self.optional(mesh, "weights", self.numbers, where)
        for j, prim in enumerate(self.array(mesh.get("primitives", []), f"{where}/primitives")):
            pw = f"{where}/primitives/{j}"
            self.obj(prim, pw)
            self.optional(prim, "attributes", self.index_map, pw, "accessors")
            self.optional(prim, "indices", self.index, pw, "accessors")
            self.optional(prim, "material", self.index, pw, "materials")
            if "mode" in prim:
                mode = prim["mode"]
                if isinstance(mode, bool) or not isinstance(mode, int) or mode not in PRIMITIVE_MODES:
                    raise _fail(f"{pw}/mode", "a primitive mode 0-6 (points, lines, line loop, line "
                                "strip, triangles, triangle strip, triangle fan)", mode)
            if "targets" in prim:
                for k, target in enumerate(self.array(prim["targets"], f"{pw}/targets")):
                    self.index_map(target, f"{pw}/targets/{k}", "accessors")
            self.optional(prim, "extensions", self.obj, pw)

    def buffer_view(self, view: dict, where: str) -> None:
        if "buffer" not in view:
            raise Refusal(f"{where}/buffer: missing (expected an index into buffers)")
        self.index(view["buffer"], f"{where}/buffer", "buffers")
        if "byteLength" not in view:
            raise Refusal(f"{where}/byteLength: missing (expected a whole number)")
        self.whole(view["byteLength"], f"{where}/byteLength")
        self.optional(view, "byteOffset", self.whole, where)
        if "byteStride" in view:
            stride = self.whole(view["byteStride"], f"{where}/byteStride", 4, 252)
            if stride % 4:
                raise Refusal(f"{where}/byteStride: {stride} is not a multiple of 4")

    def accessor(self, acc: dict, where: str) -> None:
        for key in ("componentType", "count", "type"):
            if key not in acc:
                raise Refusal(f"{where}/{key}: missing")
        ctype = acc["componentType"]
        if isinstance(ctype, bool) or not isinstance(ctype, int) or ctype not in _COMPONENT_BYTES:
            raise _fail(f"{where}/componentType", "one of 5120, 5121, 5122, 5123, 5125, 5126", ctype)
        if not isinstance(acc["type"], str) or acc["type"] not in _TYPE_COMPONENTS:
            raise _fail(f"{where}/type", "one of " + ", ".join(_TYPE_COMPONENTS), acc["type"])
        count = self.whole(acc["count"], f"{where}/count", 0, MAX_ELEMENTS)
        self.optional(acc, "bufferView", self.index, where, "bufferViews")
        self.optional(acc, "byteOffset", self.whole, where)
        if "normalized" in acc and not isinstance(acc["normalized"], bool):
            raise _fail(f"{where}/normalized", "true or false", acc["normalized"])
        self.optional(acc, "min", self.numbers, where)
        self.optional(acc, "max", self.numbers, where)
        if "sparse" in acc:
            self.sparse(acc["sparse"], f"{where}/sparse", count)
        if "bufferView" not in acc:
            nbytes = count * _TYPE_COMPONENTS[acc["type"]] * _COMPONENT_BYTES[ctype]
            try:
                check_memory(nbytes, f"{where}: {count:,} elements without a bufferView")
            except LimitError as exc:
                raise Refusal(str(exc)) from None

    def sparse(self, value: Any, where: str, count: int) -> None:
        sparse = self.obj(value, where)
        if "count" not in sparse:
            raise Refusal(f"{where}/count: missing")
        self.whole(sparse["count"], f"{where}/count", 1, count)
        for part in ("indices", "values"):
            if part not in sparse:
                raise Refusal(f"{where}/{part}: missing")
            d = self.obj(sparse[part], f"{where}/{part}")
            if "bufferView" not in d:
                raise Refusal(f"{where}/{part}/bufferView: missing")
            self.index(d["bufferView"], f"{where}/{part}/bufferView", "bufferViews")
            self.optional(d, "byteOffset", self.whole, f"{where}/{part}")
        ctype = sparse["indices"].get("componentType")
        if isinstance(ctype, bool) or not isinstance(ctype, int) or ctype not in _SPARSE_INDEX_TYPES:
            raise _fail(f"{where}/indices/componentType", "5121, 5123 or 5125", ctype)

    def animation(self, anim: dict, where: str) -> None:
        samplers = self.array(anim.get("samplers", []), f"{where}/samplers")
        for j, s in enumerate(samplers):
            sw = f"{where}/samplers/{j}"
            self.obj(s, sw)
            for key in ("input", "output"):
                self.optional(s, key, self.index, sw, "accessors")
        for j, ch in enumerate(self.array(anim.get("channels", []), f"{where}/channels")):
            cw = f"{where}/channels/{j}"
            self.obj(ch, cw)
            self.optional(ch, "sampler", self.index, cw, f"{where}/samplers", len(samplers))
            if "target" in ch:
                target = self.obj(ch["target"], f"{cw}/target")
                self.optional(target, "node", self.index, f"{cw}/target", "nodes")


def check_gltf_file(path: str | os.PathLike) -> dict:
    """The validated JSON document of a ``.gltf``/``.glb`` file (for readers other than
    :mod:`meshopt_batch.io`, such as trimesh's, that do not check it).

    Raises
    ------
    MeshError
        One line naming the file: unreadable, not JSON, not a GLB, or refused by
        :func:`validate_document`.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
        doc = parse_glb(data)[0] if data[:4] == GLB_MAGIC else json.loads(data.decode("utf-8-sig"))
        validate_document(doc)
    except OSError as exc:
        raise MeshError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except Refusal as exc:
        raise MeshError(f"{path}: {one_line(exc)}") from None
    except (ValueError, RecursionError) as exc:        # JSON and UTF-8 errors are ValueErrors
        raise MeshError(f"{path}: not a readable glTF file ({one_line(exc)})") from None
    return doc


def validate_document(doc: Any) -> None:
    """Refuse a glTF JSON document whose types, references or sizes the readers cannot use.

    Raises
    ------
    Refusal
        One line: the JSON pointer and what was expected there (see the module docstring).
    """
    if not isinstance(doc, dict):
        raise Refusal(f"not a glTF document: the JSON is {describe(doc)}, expected an object")
    if "asset" not in doc:
        raise Refusal("not a glTF 2.0 document (no 'asset')")
    _Checker(doc).run()
