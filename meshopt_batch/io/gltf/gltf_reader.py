"""Reading glTF 2.0 geometry: one :class:`Mesh` per triangle primitive, and the scene graph
that places each one.

Every triangle primitive (mode 4, and strips/fans converted to lists, which loses nothing
and is noted in ``meta["gltf_mode"]``) is its own mesh with its own index buffer, named after
its mesh (``name[p]`` when the mesh has several primitives), positions in the mesh's local
space; ``uint8`` indices are read as ``uint16``.  Points and lines are skipped (a warning,
or a note in the caller's ``notes`` list).  ``meta`` records the mesh and
primitive numbers, the material, the world matrix of the first node of the default scene
using the mesh, and that texture coordinates have their origin at the top left.

:func:`to_world_space` bakes that world matrix into the vertices with
:func:`meshopt_batch.geometry.mesh_transform.transform_mesh`, ``keep_facing=True``: a node whose world
matrix mirrors (negative determinant) is drawn with its winding reversed ([1]_, "Meshes"),
so baking the mirror into the positions reverses each triangle's corners to keep its front
face where the file's renderer shows it.

Node matrices are composed here (``T * R * S``, [1]_ "Transformations") from the stored
quaternion as it is.  ``trimesh.transformations.quaternion_matrix`` was not used: it
renormalises the quaternion, and five of the shared glTF files store rotations off unit
length by up to 4.4e-6 (BrainStem), so every vertex that
:func:`meshopt_batch.io.load_mesh` bakes would move (world-matrix entries by up to 1.8e-5
in AnimatedMorphCube, scaled by 100) and even Fox's would change in the last bits.

References
----------
.. [1] Khronos, glTF 2.0 specification, "Transformations" (node matrix or TRS, ``T * R *
   S``, column-major ``matrix``), "Meshes" (primitive modes; a world transform with a
   negative determinant reverses the winding), "Scenes" (the default scene's root nodes).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from ...geometry.mesh_record import Mesh
from ...geometry.mesh_transform import transform_mesh
from ...support.errors import MeshError
from ..format_common import UV_TOP_LEFT, Refusal
from .draw_census import TRIANGLE_MODES, strip_fan_to_list
from .gltf_document import (
    attribute_array,
    check_accessor_memory,
    load_document,
    primitive_accessors,
    read_accessor,
    semantic_to_key,
)

__all__ = ["node_matrix", "read_gltf", "to_world_space", "triangle_slots", "world_matrices"]

def node_matrix(node: dict) -> np.ndarray:
    """The 4x4 local transform of a glTF node: its ``matrix``, else ``T * R * S``."""
    if "matrix" in node:
        return np.array(node["matrix"], dtype=np.float64).reshape(4, 4).T
    t = np.array(node.get("translation", [0, 0, 0]), dtype=np.float64)
    x, y, z, w = np.array(node.get("rotation", [0, 0, 0, 1]), dtype=np.float64)
    s = np.array(node.get("scale", [1, 1, 1]), dtype=np.float64)
    r = np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])
    m = np.eye(4)
    m[:3, :3] = r * s[None, :]
    m[:3, 3] = t
    return m


def world_matrices(doc: dict) -> dict[int, np.ndarray]:
    """World matrix of every node reached from the default scene (or every root)."""
    nodes = doc.get("nodes", [])
    scenes = doc.get("scenes", [])
    if scenes:
        roots = list(scenes[int(doc.get("scene", 0))].get("nodes", []))
    else:
        children = {c for n in nodes for c in n.get("children", [])}
        roots = [i for i in range(len(nodes)) if i not in children]
    out: dict[int, np.ndarray] = {}
    stack = [(r, np.eye(4)) for r in reversed(roots)]
    while stack:
        i, parent = stack.pop()
        if i in out:
            continue
        out[i] = parent @ node_matrix(nodes[i])
        stack.extend((c, out[i]) for c in reversed(nodes[i].get("children", [])))
    return out


def triangle_slots(doc: dict, path: Path, warn: bool = True, notes: list | None = None) -> list[tuple[int, int]]:
    """(mesh, primitive) of every triangle primitive, in file order; skipped point/line
    primitives are warned about, or counted in ``notes`` when a list is given."""
    slots = []
    skipped = 0
    for mi, mesh in enumerate(doc.get("meshes", [])):
        for pi, prim in enumerate(mesh.get("primitives", [])):
            if int(prim.get("mode", 4)) in TRIANGLE_MODES:
                slots.append((mi, pi))
            else:
                skipped += 1
    if skipped and notes is not None:
        notes.append(f"{skipped} point/line primitive(s) skipped")
    elif skipped and warn:
        warnings.warn(f"{path}: {skipped} point/line primitive(s) skipped", stacklevel=4)
    return slots


def read_gltf(data: bytes, path: Path, notes: list | None = None) -> list[Mesh]:
    """One mesh per triangle primitive of a ``.gltf``/``.glb`` file, in file order.

    With a ``notes`` list, skipped point/line primitives are noted there (not warned) and a
    file whose primitives are all points or lines gives no mesh instead of a refusal.  The
    arrays every primitive reads are checked against the memory available first
    (:func:`~.gltf_document.check_accessor_memory`).
    """
    doc, buffers = load_document(data, path)
    slots = triangle_slots(doc, path, notes=notes)
    if not slots and notes is not None and any(m.get("primitives") for m in doc.get("meshes", [])):
        return []
    if not slots:
        if any(m.get("primitives") for m in doc.get("meshes", [])):
            raise Refusal("no triangles: only point/line primitives")
        raise Refusal("empty: the glTF has no meshes")
    # every primitive reads its accessors anew (one mesh each): their sum must fit in memory
    accessors = primitive_accessors(doc["meshes"][mi]["primitives"][pi] for mi, pi in slots)
    check_accessor_memory(doc, *accessors, f"{len(slots):,} triangle primitive(s)")
    world = world_matrices(doc)
    users: dict[int, list[int]] = {}
    for ni, node in enumerate(doc.get("nodes", [])):
        if "mesh" in node:
            users.setdefault(int(node["mesh"]), []).append(ni)
    per_mesh = {mi: sum(1 for s in slots if s[0] == mi) for mi, _ in slots}
    out = []
    for mi, pi in slots:
        gmesh = doc["meshes"][mi]
        prim = gmesh["primitives"][pi]
        base = gmesh.get("name") or next(
            (doc["nodes"][n].get("name") for n in users.get(mi, []) if doc["nodes"][n].get("name")), None
        ) or f"mesh{mi}"
        name = f"{base}[{pi}]" if per_mesh[mi] > 1 else base
        where = f"mesh {mi} ({base}) primitive {pi}"
        attrs_ref = prim.get("attributes", {})
        if "POSITION" not in attrs_ref:
            raise Refusal(f"{where} has no POSITION")
        try:
            positions = attribute_array(doc, buffers, attrs_ref["POSITION"], "POSITION")
            V = positions.shape[0]
            attrs = {}
            for sem, ai in attrs_ref.items():
                if sem == "POSITION":
                    continue
                a = attribute_array(doc, buffers, ai, sem)
                if a.shape[0] != V:
                    raise Refusal(f"attribute {sem} has {a.shape[0]} elements for {V} vertices")
                attrs[semantic_to_key(sem)] = a
            for ti, target in enumerate(prim.get("targets", [])):
                for sem, ai in target.items():
                    attrs[f"target{ti}.{sem}"] = attribute_array(doc, buffers, ai, sem)
            if "indices" in prim:
                idx, acc = read_accessor(doc, buffers, prim["indices"])
                if acc["type"] != "SCALAR" or idx.dtype.kind != "u":
                    raise Refusal("index accessor is not an unsigned integer SCALAR")
                index_dtype = np.uint32 if idx.dtype == np.uint32 else np.uint16
                idx = idx.reshape(-1)
            else:
                idx = np.arange(V, dtype=np.uint32)
                index_dtype = np.uint32
        except Refusal as exc:
            raise Refusal(f"{where}: {exc}") from None
        mode = int(prim.get("mode", 4))
        try:
            tris = strip_fan_to_list(idx, mode)
        except Refusal as exc:
            raise Refusal(f"{where}: {exc}") from None
        if tris.size and int(tris.max()) >= V:
            raise Refusal(f"{where}: index {int(tris.max())} out of range (the primitive has {V} vertices)")
        meta = {
            "source": str(path),
            "gltf_mesh": mi,
            "gltf_primitive": pi,
            "uv_origin": UV_TOP_LEFT,
        }
        if "material" in prim:
            meta["material"] = prim["material"]
        if mode != 4:
            meta["gltf_mode"] = mode
        nodes = users.get(mi, [])
        placed = [n for n in nodes if n in world]
        if placed:
            meta["world_matrix"] = world[placed[0]].tolist()
        out.append(Mesh(positions, tris, name=name, attributes=attrs, index_dtype=index_dtype, meta=meta))
    return out



def to_world_space(mesh: Mesh) -> Mesh:
    """A mesh from :func:`read_gltf` moved by ``meta["world_matrix"]`` (positions, normals,
    tangents; winding reversed under a mirror); ``meta`` then says ``world_space`` and no
    longer names the glTF slot.  Meshes without a world matrix, or whose matrix is exactly
    the identity, are returned unchanged.
    """
    m = mesh.meta.get("world_matrix")
    if m is None:
        return mesh
    m = np.asarray(m, dtype=np.float64)
    if np.array_equal(m, np.eye(4)):
        return mesh
    try:
        moved = transform_mesh(mesh, m, keep_facing=True)
    except MeshError as exc:
        raise Refusal(f"{mesh.name}: {exc}") from None
    meta = {k: v for k, v in mesh.meta.items() if k not in ("world_matrix", "gltf_mesh", "gltf_primitive")}
    meta["world_space"] = True
    return moved.replace(meta=meta)
