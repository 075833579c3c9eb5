"""Animated scenes for the pipeline model: draw calls per frame, render state, cameras.

A scene is what an application submits to the GPU: every frame, an ordered list of draw
calls (mesh + model matrix + render state) and the camera they are seen through.  Scenes are
data: a declarative JSON format, a glTF/GLB file with an orbit camera, or Python (build the
dataclasses).  Everything is deterministic: the same file gives the same frames on every
machine.

Modules, one topic each:

=====================  ========================================================================
``schema``             the JSON format (documented there), its validation helpers,
                       :class:`SceneError`, :class:`RenderState`
``animation``          model matrix, keyframes, :class:`Animation`
``camera``             view and projection matrices, :class:`Camera`
``mesh_resolution``    the mesh a ``MESH`` entry names (:func:`resolve_mesh`): shapes,
                       generators, shared meshes, files, static batches
``scene``              :class:`Scene`, :class:`Layer`, :class:`SceneObject`, :class:`Draw`,
                       :class:`FrameSpec`
``gltf``               :func:`load_gltf_scene`
``loading``            :func:`load_scene`, the shipped scenes of ``meshes/scenes``
``builders``           the generator of the shipped scene files
                       (``python -m pipeline_model.scene.builders``; not imported here)
=====================  ========================================================================
"""

from meshes import shared_meshes_dir

from .animation import Animation
from .camera import Camera
from .gltf import load_gltf_scene
from .loading import load_scene, shipped_scene_path, shipped_scenes
from .mesh_resolution import resolve_mesh
from .scene import Draw, FrameSpec, Layer, Scene, SceneObject
from .schema import COLOUR_KIND_CODES, ORDERS, RenderState, SceneError

__all__ = [
    "COLOUR_KIND_CODES", "ORDERS", "Animation", "Camera", "Draw", "FrameSpec", "Layer",
    "RenderState", "Scene", "SceneError", "SceneObject", "load_gltf_scene", "load_scene",
    "resolve_mesh", "shared_meshes_dir", "shipped_scene_path", "shipped_scenes",
]
