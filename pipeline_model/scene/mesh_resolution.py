"""The mesh a scene's ``MESH`` entry describes: shapes, generators, shared meshes, files and
static batches.

A ``MESH`` entry (see :mod:`pipeline_model.scene.schema`) names one source:

* ``shape``: a :mod:`pipeline_model.shapes` shape;
* ``library``: a procedural generator of the :mod:`meshes` package (:data:`LIBRARY_GENERATORS`);
* ``shared``: a scanned mesh of ``../shared/meshes`` (:func:`meshes.shared_mesh_path`), which
  is not shipped with the project;
* ``file``: a mesh file, read in file order by :mod:`meshopt_batch.io` (a glTF geometry by
  name through trimesh, for :func:`~pipeline_model.scene.gltf.load_gltf_scene`);
* ``merge``: a static batch, the parts placed and baked into one index buffer.

A ``shared`` or ``file`` mesh that is absent, or a ``library`` name with no generator, is
replaced by the entry's ``fallback`` (default a sphere) and named in the caller's
``fallbacks`` list; nothing else falls back silently.  Every mesh leaves with ``normal`` and
``uv`` attributes (computed when the source has none).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import trimesh

import meshes
from meshopt_batch.errors import MeshoptBatchError
from meshopt_batch.io import load_mesh, load_meshes
from meshopt_batch.mesh import Mesh, concatenate
from meshopt_batch.transform import transform_mesh

from .. import shapes
from .animation import model_matrix
from .schema import SceneError, check_keys, integer, number, vector, where

__all__ = ["LIBRARY_GENERATORS", "resolve_mesh"]

#: ``{"library": NAME, ...params}`` meshes: the :mod:`meshes` package's generators by name.
LIBRARY_GENERATORS = {
    "cube": meshes.cube,
    "grid": meshes.grid,
    "icosphere": meshes.icosphere,
    "random_soup": meshes.random_soup,
    "torus": meshes.torus,
    "uv_sphere": meshes.uv_sphere,
}


def resolve_mesh(spec: Any, base_dir: Path | None = None, ctx: str = "mesh",
                 fallbacks: list | None = None) -> Mesh:
    """Build the mesh a scene's ``MESH`` entry describes.

    Parameters
    ----------
    spec : str or dict
        A shape name, ``"shared:NAME"``, a file path, or a ``MESH`` object.
    base_dir : Path, optional
        Folder that relative ``file`` paths start from (the scene file's).
    ctx : str
        Where the entry sits in the scene, for error messages.
    fallbacks : list, optional
        Receives ``"KIND:NAME"`` for every absent source replaced by its fallback.
    """
    if isinstance(spec, str):
        if spec.startswith("shared:"):
            spec = {"shared": spec[len("shared:"):]}
        elif spec in shapes.SHAPES:
            spec = {"shape": spec}
        else:
            spec = {"file": spec}
    if not isinstance(spec, dict):
        raise SceneError(f"{ctx}: expected a shape name or an object, got {spec!r}")
    spec = dict(spec)
    shuffle = spec.pop("shuffle", None)
    normalize = spec.pop("normalize", False)
    which = spec.pop("mesh", None)
    geometry = spec.pop("gltf_geometry", None)
    fallback = spec.pop("fallback", {"shape": "sphere"})
    kinds = [k for k in ("shape", "library", "shared", "file", "merge") if k in spec]
    if len(kinds) != 1:
        raise SceneError(f"{ctx}: give exactly one of shape, library, shared, file, merge")
    kind = kinds[0]
    if kind == "merge":
        parts = spec.pop("merge")
        if spec:
            raise SceneError(f"{ctx}: unknown key {sorted(spec)[0]!r}")
        mesh = _merge_parts(parts, base_dir, where(ctx, "merge"), fallbacks)
        if normalize:
            mesh = _normalize(mesh)
        if shuffle is not None:
            mesh = shapes.shuffle_triangles(mesh, integer(shuffle, where(ctx, "shuffle"), 0))
        return mesh
    src = spec.pop(kind)
    params = spec.pop("params", {})
    if kind in ("shape", "library"):
        params = {**params, **spec}
        spec = {}
    if spec:
        raise SceneError(f"{ctx}: unknown key {sorted(spec)[0]!r}")
    if not isinstance(params, dict):
        raise SceneError(f"{ctx}.params: expected an object")
    mesh: Mesh | None = None
    if kind == "shape":
        mesh = _shape(src, params, ctx)
    elif kind == "library":
        mesh = _library_mesh(src, params, ctx)
        if mesh is None and src in shapes.SHAPES:
            mesh = _shape(src, params, ctx)
        if mesh is None:
            if fallbacks is not None:
                fallbacks.append(f"library:{src}")
            return resolve_mesh(fallback, base_dir, where(ctx, "fallback"), fallbacks)
    else:
        if kind == "shared":
            path = meshes.shared_mesh_path(str(src))
        else:
            path = Path(str(src)).expanduser()
            if not path.is_absolute() and base_dir is not None:
                path = base_dir / path
            path = path if path.is_file() else None
        if path is None:
            if fallbacks is not None:
                fallbacks.append(f"{kind}:{src}")
            m = resolve_mesh(fallback, base_dir, where(ctx, "fallback"), fallbacks)
            return m if not normalize else _normalize(m)
        if geometry is not None:
            mesh = _gltf_geometry(path, str(geometry), ctx)
        else:
            mesh = _load_mesh_file(path, None if which is None else integer(which, where(ctx, "mesh"), 0),
                                   ctx)
    mesh = _finish_mesh(mesh)
    if normalize:
        mesh = _normalize(mesh)
    if shuffle is not None:
        mesh = shapes.shuffle_triangles(mesh, integer(shuffle, where(ctx, "shuffle"), 0))
    return mesh


def _shape(name: str, params: dict, ctx: str) -> Mesh:
    """The :mod:`pipeline_model.shapes` shape ``name`` built with ``params``."""
    try:
        return shapes.make_shape(name, **params)
    except ValueError as exc:
        raise SceneError(f"{ctx}: {exc}") from None


def _library_mesh(name: str, params: dict, ctx: str) -> Mesh | None:
    """The :mod:`meshes` generator ``name`` run with ``params``; None when there is none."""
    generator = LIBRARY_GENERATORS.get(name)
    if generator is None:
        return None
    try:
        return generator(**params)
    except (TypeError, ValueError) as exc:     # an unknown or out-of-range parameter
        raise SceneError(f"{ctx}: library mesh {name!r}: {exc}") from None


def _load_mesh_file(path: Path, which: int | None, ctx: str) -> Mesh:
    """A mesh file in file order (:mod:`meshopt_batch.io`): index buffer ``which`` in object
    space, or the whole model (a glTF's primitives moved to world space and concatenated)."""
    try:
        if which is None:
            return load_mesh(path)
        parts = load_meshes(path)
    except MeshoptBatchError as exc:           # io's MeshError: a broken file is a user error
        raise SceneError(f"{ctx}: cannot load {path}: {exc}") from None
    if not 0 <= which < len(parts):
        raise SceneError(f"{path}: mesh index {which} out of range ({len(parts)} meshes)")
    return parts[which]


def _gltf_geometry(path: Path, geometry: str, ctx: str) -> Mesh:
    """The geometry named ``geometry`` of a glTF scene, in its own (object) space."""
    try:
        scene = trimesh.load(str(path), force="scene", process=False, maintain_order=True)
    except Exception as exc:  # noqa: BLE001 - trimesh's loaders raise assorted types on a broken file
        raise SceneError(f"{ctx}: cannot load {path}: {exc}") from None
    if geometry not in scene.geometry:
        raise SceneError(f"{path}: no geometry named {geometry!r}")
    g = scene.geometry[geometry]
    return Mesh(np.asarray(g.vertices, np.float32), np.asarray(g.faces), name=geometry)


def _finish_mesh(m: Mesh) -> Mesh:
    """Make sure a mesh has normals and uvs (computed when the source has none)."""
    attrs = dict(m.attributes)
    if "normal" not in attrs:
        attrs["normal"] = shapes.vertex_normals(m.positions, m.triangles)
    if "uv" not in attrs:
        attrs["uv"] = shapes.planar_uv(m.positions)
    return Mesh(m.positions, m.triangles, name=m.name, attributes={"normal": attrs["normal"],
                                                                     "uv": attrs["uv"]},
                meta=dict(m.meta))


def _merge_parts(parts: Any, base_dir: Path | None, ctx: str, fallbacks: list | None) -> Mesh:
    """A static batch: every part's mesh moved to its placement and appended in listed order.

    :func:`meshopt_batch.transform.transform_mesh` moves positions, normals (inverse
    transpose) and winding (reversed under a mirroring placement); uvs are kept.  The result
    is one index buffer, as an engine's static batching bakes many objects into one draw.
    """
    if not isinstance(parts, list) or not parts:
        raise SceneError(f"{ctx}: expected a non-empty list of parts")
    baked = []
    for i, part in enumerate(parts):
        pctx = where(ctx, i)
        part = check_keys(part, ("mesh", "position", "rotation", "scale"), pctx)
        if "mesh" not in part:
            raise SceneError(f"{pctx}: missing 'mesh'")
        m = resolve_mesh(part["mesh"], base_dir, where(pctx, "mesh"), fallbacks)
        scale = part.get("scale", 1.0)
        scale = (number(scale, where(pctx, "scale")),) * 3 if not isinstance(scale, list) \
            else vector(scale, where(pctx, "scale"))
        mat = model_matrix(vector(part.get("position", [0, 0, 0]), where(pctx, "position")),
                           vector(part.get("rotation", [0, 0, 0]), where(pctx, "rotation")), scale)
        if abs(np.linalg.det(mat[:3, :3])) < 1e-12:
            raise SceneError(f"{pctx}: the placement is singular (a zero scale)")
        baked.append(transform_mesh(m, mat))
    merged = concatenate(baked, name="merge")
    return _finish_mesh(Mesh(merged.positions, merged.triangles.astype(np.uint32), name="merge",
                             attributes=dict(merged.attributes)))


def _normalize(m: Mesh) -> Mesh:
    """Centre x and z on 0, the base on y = 0, the largest extent 1 (used vertices only)."""
    p = m.positions.astype(np.float64)
    if len(p) == 0:
        return m
    used = np.unique(m.triangles.ravel()) if m.triangle_count else np.arange(len(p))
    lo, hi = p[used].min(0), p[used].max(0)
    ext = float(np.max(hi - lo)) or 1.0
    c = np.array([(lo[0] + hi[0]) / 2, lo[1], (lo[2] + hi[2]) / 2])
    return Mesh(((p - c) / ext).astype(np.float32), m.triangles, name=m.name,
                attributes=dict(m.attributes), meta=dict(m.meta))
