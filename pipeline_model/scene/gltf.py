"""A scene from a glTF/GLB file: one draw per mesh node, an orbit camera around it.

Each node that holds a triangle mesh becomes one :class:`~pipeline_model.scene.scene.SceneObject`:
its mesh is the node's geometry in object space (read by name, see
:mod:`pipeline_model.scene.mesh_resolution`) and its world matrix becomes the object's
placement (:func:`~pipeline_model.scene.animation.placement_from_matrix`).

The document is checked first (:func:`meshopt_batch.io.gltf.document_checks.check_gltf_file`: types,
references, node transforms finite and within float32's range, with the JSON pointer of a
bad value), and a node whose world transform takes its mesh out of float32's range is
refused by name.

References
----------
.. [1] Khronos, glTF 2.0 specification, "Transformations": a node's local matrix (or
   ``T * R * S``) and its world matrix, the product along the node hierarchy.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import trimesh

from meshopt_batch.io.gltf.document_checks import check_gltf_file
from meshopt_batch.support.errors import MeshoptBatchError
from meshopt_batch.support.limits import FLOAT32_MAX

from .animation import placement_from_matrix
from .camera import Camera
from .scene import Scene, SceneObject
from .schema import RenderState, SceneError

__all__ = ["load_gltf_scene"]


def _object_name(graph, node: str, geometry: str) -> str:
    """A stable name for the draw of ``geometry`` at ``node``.

    trimesh turns a node whose mesh has several primitives into one child frame per primitive,
    named after the node with a random six-hex-digit suffix; such a draw is named
    ``NODE/GEOMETRY`` instead, so a scene's object names are the same in every run.
    """
    parent = graph.transforms.parents.get(node)
    if parent is not None and re.fullmatch(re.escape(str(parent)) + r"_[0-9a-f]{6}", str(node)):
        return f"{parent}/{geometry}"
    return str(node)


_GLTF_PALETTE = [(0.85, 0.35, 0.3), (0.3, 0.6, 0.85), (0.45, 0.75, 0.4), (0.9, 0.75, 0.35),
                 (0.7, 0.5, 0.8), (0.6, 0.6, 0.6)]


def load_gltf_scene(path: str | Path, frames: int = 60, camera: Camera | dict | None = None,
                    colour: str = "lit") -> Scene:
    """A scene from a glTF/GLB file.

    One object per mesh node (its world transform baked into the model matrix), lit flat
    colours, and an orbit camera around the bounds unless ``camera`` is given.

    Parameters
    ----------
    path : str or Path
        The ``.gltf`` or ``.glb`` file.
    frames : int
        Frames of the scene.
    camera : Camera or dict, optional
        The camera (a dict in the scene format); default an orbit around the bounds.
    colour : str
        The objects' colour function (a ``colour`` of the scene format's render state).

    Returns
    -------
    Scene
        The scene.

    Raises
    ------
    SceneError
        The file cannot be read as a glTF scene.
    """
    path = Path(path)
    try:
        check_gltf_file(path)
    except MeshoptBatchError as exc:
        raise SceneError(str(exc)) from None
    try:
        sc = trimesh.load(str(path), force="scene", process=False, maintain_order=True)
    except Exception as exc:  # noqa: BLE001 - trimesh's loaders raise assorted types on a broken file
        raise SceneError(f"{path}: cannot load glTF ({exc})") from None
    meshes: dict[str, Any] = {}
    objects: list[SceneObject] = []
    lo = np.full(3, np.inf)
    hi = np.full(3, -np.inf)
    for node in sc.graph.nodes_geometry:
        tf, gname = sc.graph[node]
        g = sc.geometry[gname]
        if not hasattr(g, "faces") or len(g.faces) == 0:
            continue
        tf = np.asarray(tf, np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            p = np.asarray(g.vertices, np.float64) @ tf[:3, :3].T + tf[:3, 3]
        if not (np.isfinite(tf).all() and np.isfinite(p).all() and np.abs(p).max(initial=0) <= FLOAT32_MAX):
            raise SceneError(f"{path}: node {node!r}: its world transform takes the mesh {gname!r} out of "
                             "float32's range (scales or translations too large)")
        lo, hi = np.minimum(lo, p.min(0)), np.maximum(hi, p.max(0))
        mname = f"{path.stem}:{gname}"
        # the mesh is the file's geometry in object space; the node transform becomes the
        # object's placement (translation, Euler rotation, scale)
        meshes[mname] = {"file": str(path.resolve()), "gltf_geometry": str(gname),
                         "fallback": {"shape": "box"}}
        pos, rot, scl = placement_from_matrix(tf)
        k = len(objects)
        state = RenderState(lit=True, colour_kind=colour, base=_GLTF_PALETTE[k % len(_GLTF_PALETTE)],
                            cull="none")
        objects.append(SceneObject(name=_object_name(sc.graph, node, gname), mesh=mname, object_id=k,
                                   state=state, position=pos, rotation=rot, scale=scl))
    if not objects:
        raise SceneError(f"{path}: no triangle meshes in the glTF scene")
    centre = (lo + hi) / 2
    radius = float(np.linalg.norm(hi - lo)) or 1.0
    if camera is None:
        cam = Camera(near=radius * 0.02, far=radius * 10,
                     orbit={"center": tuple(centre), "radius": radius * 1.1, "height": radius * 0.25,
                            "start": 0.0, "speed": 360.0 / max(frames, 1)})
    elif isinstance(camera, dict):
        cam = Camera.from_dict(camera)
    else:
        cam = camera
    return Scene(name=path.stem, objects=objects, meshes=meshes, camera=cam, frames=frames,
                 clear=(0.15, 0.15, 0.18), source=str(path), base_dir=path.parent)
