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

A ``shared`` or ``file`` mesh that is absent is replaced by the entry's ``fallback`` (default
a sphere) and named in the caller's ``fallbacks`` list; nothing else falls back (a
``library`` or ``shape`` name that does not exist is an error).  Every mesh leaves with
``normal`` and ``uv`` attributes (computed when the source has none).

:func:`check_mesh_spec` checks an entry, its fallbacks and merge parts whole before anything
is built: keys, types, generator parameters (names from the generator's signature, whole
numbers where the default is one) and the size a generator would make, which must stay
within :data:`~meshopt_batch.support.limits.MAX_GENERATED_TRIANGLES` (``{"library": "icosphere",
"subdiv": 12}`` would be 335 M triangles).  A ``merge`` is one generated mesh: its parts
together stay within the same limit, checked on the generators' sizes before anything is
built and again on each part's real size (a file's) as the batch is built.
:func:`check_mesh_spec` returns the triangles the entry would generate, which
:class:`~pipeline_model.scene.scene.Scene` adds up over its draw calls
(:data:`~meshopt_batch.support.limits.MAX_SCENE_TRIANGLES`).
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import numpy as np
import trimesh

import meshes
from meshopt_batch.geometry.mesh_record import Mesh, concatenate
from meshopt_batch.geometry.mesh_transform import transform_mesh
from meshopt_batch.io import load_mesh, load_meshes
from meshopt_batch.support.errors import MeshoptBatchError
from meshopt_batch.support.json_values import describe
from meshopt_batch.support.limits import LimitError, check_generated_triangles

from .. import shapes
from .animation import model_matrix
from .schema import SceneError, boolean, check_keys, integer, number, string, vector, where

__all__ = ["GENERATED_TRIANGLES", "LIBRARY_GENERATORS", "check_mesh_spec", "resolve_mesh"]

#: ``{"library": NAME, ...params}`` meshes: the :mod:`meshes` package's generators by name.
LIBRARY_GENERATORS = {
    "cube": meshes.cube,
    "grid": meshes.grid,
    "icosphere": meshes.icosphere,
    "random_soup": meshes.random_soup,
    "torus": meshes.torus,
    "uv_sphere": meshes.uv_sphere,
}


#: Triangles a generator makes (an upper bound) from its bound arguments.
GENERATED_TRIANGLES = {
    ("shape", "box"): lambda a: 4 * sum(x * y for x, y in ((a[0], a[1]), (a[1], a[2]), (a[0], a[2]))),
    ("shape", "plane"): lambda a: 2 * a[0] * a[1],
    ("shape", "quad"): lambda a: 2 * a[0] * a[1],
    ("shape", "sphere"): lambda a: 2 * a[0] * a[1],
    ("shape", "cylinder"): lambda a: 2 * a[0] * a[1] + 2 * a[0],
    ("shape", "cone"): lambda a: 2 * a[0],
    ("shape", "torus"): lambda a: 2 * a[0] * a[1],
    ("library", "cube"): lambda a: 12,
    ("library", "grid"): lambda a: 2 * a[0] * a[1],
    ("library", "icosphere"): lambda a: 20 * 4 ** min(a[0], 64),
    ("library", "random_soup"): lambda a: a[0],
    ("library", "torus"): lambda a: 2 * a[0] * a[1],
    ("library", "uv_sphere"): lambda a: 2 * a[0] * a[1],
}
#: What an absent ``shared`` or ``file`` mesh without a ``fallback`` becomes.
_DEFAULT_FALLBACK = {"shape": "sphere"}
_MODIFIERS = ("shuffle", "normalize", "mesh", "gltf_geometry", "fallback")
_SOURCES = ("shape", "library", "shared", "file", "merge")


def _as_dict(spec: Any, ctx: str) -> dict:
    """A ``MESH`` entry in its object form (a string is a shape, ``shared:NAME`` or a file)."""
    if isinstance(spec, str):
        if spec.startswith("shared:"):
            return {"shared": spec[len("shared:"):]}
        return {"shape": spec} if spec in shapes.SHAPES else {"file": spec}
    if not isinstance(spec, dict):
        raise SceneError(f"{ctx}: expected a shape name, a file name or a MESH object, got {describe(spec)}")
    return spec


def _generator(kind: str, name: Any, ctx: str):
    """``(table kind, generator)`` of a ``shape`` or ``library`` name (a library name may be a
    shape)."""
    if not isinstance(name, str):
        raise SceneError(f"{ctx}.{kind}: expected a name, got {describe(name)}")
    if kind == "library" and name in LIBRARY_GENERATORS:
        return "library", LIBRARY_GENERATORS[name]
    if name in shapes.SHAPES:
        return "shape", shapes.SHAPES[name]
    known = ", ".join(sorted(set(LIBRARY_GENERATORS) | set(shapes.SHAPES))) if kind == "library" \
        else ", ".join(shapes.SHAPES)
    raise SceneError(f"{ctx}.{kind}: unknown {kind} mesh {name!r} (known: {known})")


def _check_parameters(kind: str, name: str, generator, params: dict, ctx: str) -> int:
    """Parameter names, types and the size of the mesh they would make (returned: an upper
    bound on its triangles)."""
    signature = inspect.signature(generator)
    for key, value in params.items():
        pctx = where(ctx, key)
        if key not in signature.parameters:
            raise SceneError(f"{pctx}: unknown parameter of {kind} {name!r} (known: "
                             f"{', '.join(signature.parameters) or 'none'})")
        default = signature.parameters[key].default
        if isinstance(default, float):
            number(value, pctx)
        elif key == "divisions" and isinstance(value, list):
            vector(value, pctx, 3)
            for i, x in enumerate(value):
                integer(x, where(pctx, i))
        elif not (default is None and value is None):
            integer(value, pctx)
    bound = signature.bind(**params)
    bound.apply_defaults()
    counts = []
    for key, value in bound.arguments.items():
        default = signature.parameters[key].default
        if isinstance(value, list):
            counts += [max(1, int(x)) for x in value]
        elif value is None:
            counts.append(counts[0] if counts else 1)
        elif not isinstance(default, float):
            counts.append(max(1, int(value)))
    triangles = 0
    if key_counts := GENERATED_TRIANGLES.get((kind, name)):
        if name == "box" and len(counts) == 1:
            counts = counts * 3
        triangles = int(key_counts(counts))
        _check_triangles(triangles, f"{ctx}: {kind} {name!r}")
    return triangles


def _check_triangles(triangles: int, what: str) -> None:
    """:func:`~meshopt_batch.support.limits.check_generated_triangles` raising :class:`SceneError`."""
    try:
        check_generated_triangles(triangles, what)
    except LimitError as exc:
        raise SceneError(str(exc)) from None


def check_mesh_spec(spec: Any, ctx: str = "mesh") -> int:
    """Check a ``MESH`` entry (its fallbacks and merge parts too) without building anything.

    Returns
    -------
    int
        An upper bound on the triangles the entry generates: a shape's or generator's size,
        a merge's parts added up, a ``shared`` or ``file`` mesh's fallback (the file's own
        size is known only once it is read).

    Raises
    ------
    SceneError
        One line naming the place: a wrong type, an unknown key, shape, generator or
        parameter, or a generated mesh or merge over the size limit.
    """
    d = _as_dict(spec, ctx)
    kinds = [k for k in _SOURCES if k in d]
    if len(kinds) != 1:
        raise SceneError(f"{ctx}: give exactly one of shape, library, shared, file, merge")
    kind = kinds[0]
    if "shuffle" in d:
        integer(d["shuffle"], where(ctx, "shuffle"), 0)
    if "normalize" in d:
        boolean(d["normalize"], where(ctx, "normalize"))
    if "mesh" in d:
        integer(d["mesh"], where(ctx, "mesh"), 0)
    if "gltf_geometry" in d:
        string(d["gltf_geometry"], where(ctx, "gltf_geometry"))
    fallback_triangles = check_mesh_spec(d["fallback"], where(ctx, "fallback")) if "fallback" in d else None
    rest = {k: v for k, v in d.items() if k not in _MODIFIERS and k != kind}
    if kind in ("shape", "library"):
        table, generator = _generator(kind, d[kind], ctx)
        params = rest.pop("params", {})
        if not isinstance(params, dict):
            raise SceneError(f"{ctx}.params: expected an object, got {describe(params)}")
        return _check_parameters(table, d[kind], generator, {**params, **rest}, ctx)
    if rest:
        raise SceneError(f"{ctx}: unknown key {sorted(rest)[0]!r}")
    if kind in ("shared", "file"):
        string(d[kind], where(ctx, kind))
        return _DEFAULT_FALLBACK_TRIANGLES if fallback_triangles is None else fallback_triangles
    parts = d["merge"]
    if not isinstance(parts, list) or not parts:
        raise SceneError(f"{ctx}.merge: expected a non-empty list of parts, got {describe(parts)}")
    total = 0
    for i, part in enumerate(parts):
        pctx = where(where(ctx, "merge"), i)
        check_keys(part, ("mesh", "position", "rotation", "scale"), pctx)
        if "mesh" not in part:
            raise SceneError(f"{pctx}: missing 'mesh'")
        total += check_mesh_spec(part["mesh"], where(pctx, "mesh"))
        for key in ("position", "rotation"):
            if key in part:
                vector(part[key], where(pctx, key))
        if "scale" in part:
            vector(part["scale"], where(pctx, "scale"))
    _check_triangles(total, f"{where(ctx, 'merge')}: {len(parts)} parts together")
    return total


#: Triangles of :data:`_DEFAULT_FALLBACK`.
_DEFAULT_FALLBACK_TRIANGLES = check_mesh_spec(_DEFAULT_FALLBACK)


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

    Returns
    -------
    Mesh
        The mesh, its modifiers (``normalize``, ``shuffle``...) applied.

    Raises
    ------
    SceneError
        An entry that does not pass its checks, named by its place.
    """
    check_mesh_spec(spec, ctx)
    spec = dict(_as_dict(spec, ctx))
    shuffle = spec.pop("shuffle", None)
    normalize = spec.pop("normalize", False)
    which = spec.pop("mesh", None)
    geometry = spec.pop("gltf_geometry", None)
    fallback = spec.pop("fallback", _DEFAULT_FALLBACK)
    kind = next(k for k in _SOURCES if k in spec)
    if kind == "merge":
        mesh = _merge_parts(spec.pop("merge"), base_dir, where(ctx, "merge"), fallbacks)
        if normalize:
            mesh = _normalize(mesh)
        if shuffle is not None:
            mesh = shapes.shuffle_triangles(mesh, int(shuffle))
        return mesh
    src = spec.pop(kind)
    params = {**spec.pop("params", {}), **spec} if kind in ("shape", "library") else {}
    mesh: Mesh | None = None
    if kind == "shape":
        mesh = _shape(src, params, ctx)
    elif kind == "library":
        mesh = _library_mesh(src, params, ctx) if src in LIBRARY_GENERATORS else _shape(src, params, ctx)
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


def _library_mesh(name: str, params: dict, ctx: str) -> Mesh:
    """The :mod:`meshes` generator ``name`` run with ``params``."""
    generator = LIBRARY_GENERATORS[name]
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
    except MeshoptBatchError as exc:           # io's MeshError names the file and the problem
        raise SceneError(f"{ctx}: {exc}") from None
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
    try:
        return Mesh(np.asarray(g.vertices, np.float32), np.asarray(g.faces), name=geometry).validate(
            source=f"{path} [{geometry}]")
    except MeshoptBatchError as exc:           # trimesh reads what the file says, in range or not
        raise SceneError(f"{ctx}: {exc}") from None


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

    :func:`meshopt_batch.geometry.mesh_transform.transform_mesh` moves positions, normals (inverse
    transpose) and winding (reversed under a mirroring placement); uvs are kept.  The result
    is one index buffer, as an engine's static batching bakes many objects into one draw.
    """
    if not isinstance(parts, list) or not parts:
        raise SceneError(f"{ctx}: expected a non-empty list of parts")
    baked = []
    total = 0
    for i, part in enumerate(parts):
        pctx = where(ctx, i)
        part = check_keys(part, ("mesh", "position", "rotation", "scale"), pctx)
        if "mesh" not in part:
            raise SceneError(f"{pctx}: missing 'mesh'")
        m = resolve_mesh(part["mesh"], base_dir, where(pctx, "mesh"), fallbacks)
        total += m.triangle_count      # a file part's size is known only now
        _check_triangles(total, f"{ctx}: parts 0..{i} together")
        scale = part.get("scale", 1.0)
        scale = (number(scale, where(pctx, "scale")),) * 3 if not isinstance(scale, list) \
            else vector(scale, where(pctx, "scale"))
        mat = model_matrix(vector(part.get("position", [0, 0, 0]), where(pctx, "position")),
                           vector(part.get("rotation", [0, 0, 0]), where(pctx, "rotation")), scale)
        if abs(np.linalg.det(mat[:3, :3])) < 1e-12:
            raise SceneError(f"{pctx}: the placement is singular (a zero scale)")
        try:
            baked.append(transform_mesh(m, mat))
        except MeshoptBatchError as exc:       # positions out of float32's range
            raise SceneError(f"{pctx}: {exc}") from None
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
