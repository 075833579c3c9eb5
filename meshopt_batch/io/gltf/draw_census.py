"""What a glTF document draws: its triangle primitives grouped by the vertex data they share,
and what an optimizer may change in each group.

A *vertex set* is the vertex data of one or more triangle primitives with exactly the same
attribute and morph-target accessors (ClearCoatTest draws 18 primitives from one set); an
*index buffer* of a set is one index accessor (or, for non-indexed primitives, the set's
vertices in order) with its primitive mode, drawn by one or more primitives.  Welding and
renumbering a set changes every index buffer of it the same way, so a set is optimized as
a whole (:func:`meshopt_batch.vertices.vertex_set.optimize_vertex_set`).

A set keeps its vertex order (``locked`` says why) when its accessors are also read by
something a renumbering would break: another primitive with other attributes, a point or
line primitive, a skin, an animation, an instancing extension; when one is sparse or has no
buffer view; when its bytes are interleaved with data of something else; or when a
primitive of it carries an extension this module does not know to be harmless.  An index
buffer is left exactly as it is when its accessor is also drawn with another mode, from
another set, or by a point/line primitive (its set then keeps its vertex order too).

References
----------
.. [1] Khronos, glTF 2.0 specification, "Meshes" (primitive attributes, indices, modes and
   morph targets), "Skins", "Animations".
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..format_common import Refusal
from .byte_patching import Block, view_blocks
from .gltf_document import read_accessor

__all__ = ["Draw", "IndexBuffer", "TRIANGLE_MODES", "VertexSet", "census", "strip_fan_to_list"]

#: Primitive modes that hold triangles: list, strip, fan.
TRIANGLE_MODES = (4, 5, 6)
MODE_NAMES = {0: "points", 1: "lines", 2: "line loop", 3: "line strip", 4: "triangles", 5: "triangle strip",
              6: "triangle fan"}
#: Primitive extensions that refer to no accessor.
HARMLESS_PRIMITIVE_EXTENSIONS = frozenset({"KHR_materials_variants"})


@dataclass
class Draw:
    """One triangle primitive: ``doc["meshes"][mesh]["primitives"][primitive]``."""

    mesh: int
    primitive: int
    mode: int
    name: str


@dataclass
class IndexBuffer:
    """An index accessor (``None``: non-indexed) drawn with ``mode`` by ``draws``."""

    accessor: int | None
    mode: int
    draws: list = field(default_factory=list)
    locked: str | None = None

    def triangles(self, doc: dict, buffers: list[bytes], vertex_count: int) -> np.ndarray:
        """The triangle list it draws, ``(T, 3)`` int64 (strips and fans converted)."""
        if self.accessor is None:
            flat = np.arange(vertex_count, dtype=np.int64)
        else:
            flat = self.flat(doc, buffers)
        tris = strip_fan_to_list(flat, self.mode)
        if tris.size and int(tris.max()) >= vertex_count:
            raise Refusal(f"index {int(tris.max())} of accessor {self.accessor} is out of range "
                          f"(the primitive has {vertex_count} vertices)")
        return tris

    def flat(self, doc: dict, buffers: list[bytes]) -> np.ndarray:
        """The stored indices, flat int64."""
        idx, acc = read_accessor(doc, buffers, self.accessor)
        if acc["type"] != "SCALAR" or idx.dtype.kind != "u":
            raise Refusal(f"index accessor {self.accessor} is not an unsigned integer SCALAR")
        return idx.reshape(-1).astype(np.int64)


@dataclass
class VertexSet:
    """Vertex data shared by triangle primitives, and every index buffer drawn from it."""

    attributes: dict
    targets: list
    draws: list = field(default_factory=list)
    buffers: list = field(default_factory=list)
    locked: str | None = None

    @property
    def accessors(self) -> list[int]:
        """The attribute accessors (``attributes`` order), then each morph target's."""
        out = [int(a) for a in self.attributes.values()]
        for t in self.targets:
            out += [int(a) for a in t.values()]
        return out

    def vertex_count(self, doc: dict) -> int:
        return int(doc["accessors"][int(self.attributes["POSITION"])]["count"])


def strip_fan_to_list(flat: np.ndarray, mode: int) -> np.ndarray:
    """Triangle list of indices drawn as a list (4), strip (5, winding alternating) or fan (6)."""
    if mode == 4:
        if flat.size % 3:
            raise Refusal(f"{flat.size} indices is not a multiple of 3")
        return flat.reshape(-1, 3)
    n = flat.size - 2
    if n <= 0:
        return np.zeros((0, 3), np.int64)
    i = np.arange(n)
    if mode == 5:  # strip: {v_i, v_{i+(1+i%2)}, v_{i+(2-i%2)}}
        return np.stack([flat[i], flat[i + 1 + i % 2], flat[i + 2 - i % 2]], axis=1)
    return np.stack([flat[i + 1], flat[i + 2], np.full(n, flat[0])], axis=1)  # fan


def _other_users(doc: dict) -> dict[int, set[str]]:
    """Accessors read by something other than a primitive: what reads them."""
    users: dict[int, set[str]] = {}
    for skin in doc.get("skins", []):
        if "inverseBindMatrices" in skin:
            users.setdefault(int(skin["inverseBindMatrices"]), set()).add("a skin")
    for anim in doc.get("animations", []):
        for s in anim.get("samplers", []):
            for k in ("input", "output"):
                if k in s:
                    users.setdefault(int(s[k]), set()).add("an animation")
    for node in doc.get("nodes", []):
        for a in node.get("extensions", {}).get("EXT_mesh_gpu_instancing", {}).get("attributes", {}).values():
            users.setdefault(int(a), set()).add("instancing")
    return users


def census(doc: dict, names: dict[int, str] | None = None) -> tuple[list[VertexSet], list[str]]:
    """The vertex sets of a document, and a note per point/line primitive passed through."""
    sets: dict[tuple, VertexSet] = {}
    notes: list[str] = []
    index_users: dict[int, set[tuple]] = {}
    vertex_users: dict[int, set[tuple]] = {}
    others = _other_users(doc)
    for mi, mesh in enumerate(doc.get("meshes", [])):
        base = (names or {}).get(mi) or mesh.get("name") or f"mesh{mi}"
        prims = mesh.get("primitives", [])
        for pi, prim in enumerate(prims):
            mode = int(prim.get("mode", 4))
            attrs = prim.get("attributes", {})
            targets = prim.get("targets", [])
            key = (tuple(sorted((k, int(v)) for k, v in attrs.items())),
                   tuple(tuple(sorted((k, int(v)) for k, v in t.items())) for t in targets))
            accessors = [int(v) for v in attrs.values()] + [int(v) for t in targets for v in t.values()]
            if mode not in TRIANGLE_MODES or "POSITION" not in attrs:
                what = MODE_NAMES.get(mode, f"mode {mode}")
                notes.append(f"mesh {mi} ({base}) primitive {pi}: {what} passed through unchanged")
                for a in accessors:
                    vertex_users.setdefault(a, set()).add(("other",))
                if "indices" in prim:
                    index_users.setdefault(int(prim["indices"]), set()).add(("other",))
                continue
            vset = sets.get(key)
            if vset is None:
                vset = sets[key] = VertexSet(dict(attrs), [dict(t) for t in targets])
            draw = Draw(mi, pi, mode, f"{base}[{pi}]" if len(prims) > 1 else base)
            vset.draws.append(draw)
            ia = int(prim["indices"]) if "indices" in prim else None
            buf = next((b for b in vset.buffers if b.accessor == ia and b.mode == mode), None)
            if buf is None:
                buf = IndexBuffer(ia, mode)
                vset.buffers.append(buf)
            buf.draws.append(draw)
            if ia is not None:
                index_users.setdefault(ia, set()).add((key, mode))
            for a in accessors:
                vertex_users.setdefault(a, set()).add(key)
            extra = set(prim.get("extensions", {})) - HARMLESS_PRIMITIVE_EXTENSIONS
            if extra:
                vset.locked = f"primitive extension {sorted(extra)[0]}"
    blocks = view_blocks(doc)
    block_of = {a: b for bl in blocks.values() for b in bl for a in b.accessors}
    for key, vset in sets.items():
        for buf in vset.buffers:
            if buf.accessor is None:
                continue
            acc = doc["accessors"][buf.accessor]
            if len(index_users[buf.accessor]) > 1 or buf.accessor in vertex_users or buf.accessor in others:
                buf.locked = "index accessor also used elsewhere"
            elif "sparse" in acc or "bufferView" not in acc or not _alone(block_of.get(buf.accessor)):
                buf.locked = "index accessor is sparse or shares its bytes"
            if buf.locked:
                vset.locked = vset.locked or buf.locked
        if vset.locked:
            continue
        vset.locked = _vertex_lock(doc, vset, key, vertex_users, index_users, others, block_of)
    return list(sets.values()), notes


def _alone(block: Block | None) -> bool:
    return block is not None and len(block.accessors) == 1 and not block.foreign


def _vertex_lock(doc, vset: VertexSet, key, vertex_users, index_users, others, block_of) -> str | None:
    """Why ``vset``'s vertex order must be kept, or None."""
    accessors = set(vset.accessors)
    count = vset.vertex_count(doc)
    for a in vset.accessors:
        acc = doc["accessors"][a]
        if vertex_users[a] != {key} or a in index_users:
            return "vertex accessors shared with other primitives"
        if a in others:
            return f"vertex accessor also read by {sorted(others[a])[0]}"
        if "sparse" in acc or "bufferView" not in acc:
            return "sparse vertex accessor"
        if int(acc["count"]) != count:
            return "attribute counts differ"
        block = block_of.get(a)
        if block is None or block.foreign or not block.regular or not set(block.accessors) <= accessors:
            return "vertex data interleaved with other data"
    return None
