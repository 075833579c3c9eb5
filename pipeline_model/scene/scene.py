"""The scene itself: layers, objects (draw calls) and the frames they make.

A :class:`Scene` is what an application submits to the GPU: every frame, an ordered list of
draw calls (:class:`Draw`: mesh + model matrix + render state) and the camera they are seen
through, gathered in a :class:`FrameSpec`.  The geometry stage
(:mod:`pipeline_model.geometry`) turns one :class:`FrameSpec` into a
:class:`~pipeline_model.frame.FrameGeometry`.  The JSON form is documented in
:mod:`pipeline_model.scene.schema`.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from meshopt_batch.geometry.mesh_record import Mesh
from meshopt_batch.support import limits
from meshopt_batch.support.files import atomic_write
from meshopt_batch.support.json_values import describe
from meshopt_batch.support.limits import MAX_FRAMES, MAX_SCREEN_SIDE, LimitError, check_scene_triangles

from .. import shapes
from .animation import Animation, model_matrix
from .camera import Camera
from .mesh_resolution import check_mesh_spec, resolve_mesh
from .schema import ORDERS, RenderState, SceneError, check_keys, choice, integer, string, vector, where

__all__ = ["Draw", "FrameSpec", "Layer", "Scene", "SceneObject"]


@dataclass(frozen=True)
class Layer:
    """A draw-order group: its objects are submitted together, in one order, through one camera.

    Attributes
    ----------
    name : str
        The layer's name (objects name their layer).
    order : str
        How its objects are submitted: one of :data:`ORDERS` (``listed``, sorted by distance
        either way, or one fixed shuffle).
    camera : Camera or None
        The layer's camera (None: the scene's).
    """

    name: str = "default"
    order: str = "listed"
    camera: Camera | None = None

    @classmethod
    def from_dict(cls, d: dict, ctx: str) -> Layer:
        """A layer from its scene-JSON form, checked.

        Parameters
        ----------
        d : dict
            A ``layers`` entry of a scene file.
        ctx : str
            Where it is in the file, for messages.

        Returns
        -------
        Layer
            The layer.

        Raises
        ------
        SceneError
            A key, value or reference that does not pass its checks, named by its place.
        """
        check_keys(d, ("name", "order", "camera"), ctx)
        if not isinstance(d.get("name"), str) or not d["name"]:
            raise SceneError(f"{ctx}.name: expected a non-empty string")
        order = choice(d.get("order", "listed"), where(ctx, "order"), ORDERS)
        cam = Camera.from_dict(d["camera"], where(ctx, "camera")) if "camera" in d else None
        return cls(d["name"], order, cam)

    def to_dict(self) -> dict:
        """The scene-JSON form.

        Returns
        -------
        dict
            The ``layers`` entry.
        """
        d: dict[str, Any] = {"name": self.name, "order": self.order}
        if self.camera is not None:
            d["camera"] = self.camera.to_dict()
        return d


@dataclass(frozen=True)
class SceneObject:
    """One draw call of the scene (drawn in every frame of its visible range).

    Attributes
    ----------
    name : str
        The object's name.
    mesh : str
        The name of its mesh in the scene's ``meshes`` (or a shape, ``shared:NAME``).
    object_id : int
        A number unique in the scene (VRO's graph nodes, per-object output).
    layer : str
        The layer it is submitted with.
    state : RenderState
        Its render state (depth test and write, blending, shading cost, colour).
    position, rotation, scale : tuple of float
        Its rest pose (rotation as Euler angles in degrees).
    animation : Animation
        How it moves.
    visible : tuple or None
        ``(first, last)`` frames it is drawn in (None: every frame).
    material : str or None
        The material its state starts from.
    state_overrides : dict or None
        The state keys the object sets over its material (kept for the JSON form).
    """

    name: str
    mesh: str
    object_id: int
    layer: str = "default"
    state: RenderState = RenderState()
    position: tuple = (0.0, 0.0, 0.0)
    rotation: tuple = (0.0, 0.0, 0.0)
    scale: tuple = (1.0, 1.0, 1.0)
    animation: Animation = Animation()
    visible: tuple | None = None
    material: str | None = None
    state_overrides: dict | None = field(default=None, compare=False)

    def transform(self, frame: int) -> np.ndarray:
        """The model matrix at one frame.

        Parameters
        ----------
        frame : int
            The frame.

        Returns
        -------
        numpy.ndarray
            ``(4, 4)`` object-to-world matrix.
        """
        return model_matrix(*self.animation.placement(frame, self.position, self.rotation, self.scale))

    def visible_at(self, frame: int) -> bool:
        """Whether the object is drawn in a frame.

        Parameters
        ----------
        frame : int
            The frame.

        Returns
        -------
        bool
            True inside its visible range.
        """
        return self.visible is None or self.visible[0] <= frame <= self.visible[1]

    def to_dict(self) -> dict:
        """The scene-JSON form.

        Returns
        -------
        dict
            The ``objects`` entry.
        """
        d: dict[str, Any] = {"name": self.name, "mesh": self.mesh, "object_id": self.object_id,
                             "layer": self.layer}
        if self.material is not None:
            d["material"] = self.material
            if self.state_overrides:
                d["state"] = copy.deepcopy(self.state_overrides)
        else:
            d["state"] = self.state.to_dict()
        d.update(position=list(self.position), rotation=list(self.rotation), scale=list(self.scale))
        if not self.animation.static:
            d["animation"] = self.animation.to_dict()
        if self.visible is not None:
            d["visible"] = list(self.visible)
        return d


@dataclass(frozen=True, eq=False)
class Draw:
    """One draw call of one frame.

    Attributes
    ----------
    index : int
        Its place in the frame's program order.
    object_id : int
        The scene object it draws.
    name : str
        The object's name.
    mesh_name : str
        The name of its mesh.
    mesh : Mesh
        The mesh drawn.
    model : numpy.ndarray
        ``(4, 4)`` object to world.
    view : numpy.ndarray
        ``(4, 4)`` world to eye.
    proj : numpy.ndarray
        ``(4, 4)`` eye to clip.
    state : RenderState
        Its render state.
    """

    index: int
    object_id: int
    name: str
    mesh_name: str
    mesh: Mesh
    model: np.ndarray       # (4, 4) object -> world
    view: np.ndarray        # (4, 4) world -> eye
    proj: np.ndarray        # (4, 4) eye -> clip
    state: RenderState


@dataclass(frozen=True, eq=False)
class FrameSpec:
    """What the application submits for one frame.

    Attributes
    ----------
    index : int
        The frame number.
    width, height : int
        The screen's size in pixels.
    draws : list of Draw
        The draw calls in program order.
    clear : tuple of float
        The clear colour.
    light_direction : tuple of float
        The direction of the scene's light.
    cut : bool
        The first frame after a camera cut (the scene's ``cuts``).
    """

    index: int
    width: int
    height: int
    draws: list
    clear: tuple
    light_direction: tuple
    cut: bool = False     # first frame after a camera cut (the scene's "cuts")


#: Name prefix of the meshes written inline in an object (``"mesh": {...}``).
_INLINE = "__inline_"
_SCENE_KEYS = ("name", "description", "frames", "width", "height", "clear", "seed", "light",
               "camera", "cuts", "meshes", "materials", "layers", "objects")


@dataclass(eq=False)
class Scene:
    """An animated scene: meshes, layers, objects (draw calls) and a camera.

    Attributes
    ----------
    name : str
        The scene's name.
    objects : list of SceneObject
        The draw calls, in listed order.
    meshes : dict
        Mesh name to its ``MESH`` entry (JSON-able).
    materials : dict of str to RenderState
        Named render states objects start from.
    layers : list of Layer
        The draw-order groups, submitted in this order.
    camera : Camera
        The scene's camera.
    frames : int
        Frames of the animation.
    width, height : int
        The screen's size in pixels.
    clear : tuple of float
        The clear colour.
    seed : int
        Seed of everything random in the scene (shuffled orders).
    light_direction : tuple of float
        The direction of the light.
    cuts : tuple of int
        Frames that start a new shot.
    description : str
        What the scene exercises.
    base_dir : Path or None
        The folder relative mesh files start from (the scene file's).
    source : str or None
        The file the scene was read from.
    fallbacks : list of str
        ``"KIND:NAME"`` of every absent mesh source replaced by its fallback.

    Raises
    ------
    SceneError
        Duplicate object ids or layer names, a layer without a camera, or too many
        triangles a frame.
    """

    name: str
    objects: list
    meshes: dict = field(default_factory=dict)           # name -> MESH spec (JSON-able)
    materials: dict = field(default_factory=dict)        # name -> RenderState
    layers: list = field(default_factory=lambda: [Layer()])
    camera: Camera = Camera()
    frames: int = 60
    width: int = 1196
    height: int = 768
    clear: tuple = (0.0, 0.0, 0.0)
    seed: int = 1
    light_direction: tuple = (0.4, 1.0, 0.3)
    cuts: tuple = ()                                     # frames that start a new shot
    description: str = ""
    base_dir: Path | None = None
    source: str | None = None
    fallbacks: list = field(default_factory=list)        # meshes that fell back (absent files)

    def __post_init__(self):
        self._mesh_cache: dict[str, Mesh] = {}
        self._check()

    # ------------------------------------------------------------ construction
    @classmethod
    def from_dict(cls, d: dict, base_dir: str | Path | None = None, source: str | None = None) -> Scene:
        """Build a scene from its JSON form.

        Parameters
        ----------
        d : dict
            The scene file's object (the format is documented in :mod:`.schema`).
        base_dir : str or Path, optional
            The folder relative mesh files start from.
        source : str, optional
            The file it was read from (names the scene when it has no ``name``).

        Returns
        -------
        Scene
            The scene, checked.

        Raises
        ------
        SceneError
            A key, value or reference that does not pass its checks, named by its place.
        """
        ctx = ""
        check_keys(d, _SCENE_KEYS, ctx)
        if "objects" not in d or not isinstance(d["objects"], list):
            raise SceneError("scene: 'objects' must be a list of draw calls")
        kw: dict[str, Any] = {"name": string(d["name"], "name") if "name" in d
                              else (source and Path(source).stem or "scene")}
        if "description" in d:
            kw["description"] = string(d["description"], "description")
        if "frames" in d:
            kw["frames"] = integer(d["frames"], "frames", 1, MAX_FRAMES)
        for k in ("width", "height"):
            if k in d:
                kw[k] = integer(d[k], k, 1, MAX_SCREEN_SIDE)
        if "clear" in d:
            kw["clear"] = vector(d["clear"], "clear", 3, 0.0, 1.0)
        if "seed" in d:
            kw["seed"] = integer(d["seed"], "seed", 0)
        if "light" in d:
            lt = check_keys(d["light"], ("direction",), "light")
            if "direction" in lt:
                kw["light_direction"] = vector(lt["direction"], "light.direction")
        if "camera" in d:
            kw["camera"] = Camera.from_dict(d["camera"], "camera")
        if "cuts" in d:
            if not isinstance(d["cuts"], list):
                raise SceneError("cuts: expected a list of frame numbers")
            kw["cuts"] = tuple(sorted({integer(c, f"cuts[{i}]", 1) for i, c in enumerate(d["cuts"])}))
        meshes = d.get("meshes", {})
        if not isinstance(meshes, dict):
            raise SceneError(f"meshes: expected an object of name -> mesh, got {describe(meshes)}")
        for name, spec in meshes.items():
            check_mesh_spec(spec, f"meshes.{name}")
        kw["meshes"] = copy.deepcopy(meshes)
        mats_raw = d.get("materials", {})
        check_keys(mats_raw, list(mats_raw) if isinstance(mats_raw, dict) else [], "materials")
        materials = {name: RenderState.from_dict(s, f"materials.{name}") for name, s in mats_raw.items()}
        kw["materials"] = materials
        if "layers" in d:
            if not isinstance(d["layers"], list) or not d["layers"]:
                raise SceneError("layers: expected a non-empty list")
            kw["layers"] = [Layer.from_dict(x, f"layers[{i}]") for i, x in enumerate(d["layers"])]
        layer_names = {ly.name for ly in kw.get("layers", [Layer()])}
        objects = []
        for i, o in enumerate(d["objects"]):
            oc = f"objects[{i}]"
            check_keys(o, ("name", "mesh", "layer", "material", "state", "position", "rotation",
                            "scale", "object_id", "visible", "animation"), oc)
            if "mesh" not in o:
                raise SceneError(f"{oc}: missing 'mesh'")
            mesh = o["mesh"]
            if not isinstance(mesh, str):
                check_mesh_spec(mesh, f"{oc}.mesh")
                # an inline mesh spec: register it under a generated name
                mname = f"{_INLINE}{i}"
                kw["meshes"][mname] = copy.deepcopy(mesh)
                mesh = mname
            elif mesh not in kw["meshes"] and not (mesh in shapes.SHAPES or mesh.startswith("shared:")):
                raise SceneError(f"{oc}.mesh: unknown mesh {mesh!r} (not in 'meshes' and not a shape)")
            layer = o.get("layer", "default" if "layers" not in d else kw["layers"][0].name)
            if not isinstance(layer, str) or layer not in layer_names:
                raise SceneError(f"{oc}.layer: unknown layer {layer!r}")
            base_state = None
            material = o.get("material")
            if material is not None:
                if not isinstance(material, str) or material not in materials:
                    raise SceneError(f"{oc}.material: unknown material {material!r}")
                base_state = materials[material]
            overrides = o.get("state")
            state = RenderState.from_dict(overrides or {}, f"{oc}.state", base_state)
            visible = None
            if "visible" in o:
                v = o["visible"]
                if not isinstance(v, list) or len(v) != 2:
                    raise SceneError(f"{oc}.visible: expected [first, last]")
                visible = (integer(v[0], f"{oc}.visible[0]", 0), integer(v[1], f"{oc}.visible[1]", 0))
            objects.append(SceneObject(
                name=string(o["name"], f"{oc}.name") if "name" in o else f"object-{i}",
                mesh=mesh,
                object_id=integer(o.get("object_id", i), f"{oc}.object_id", 0),
                layer=layer,
                state=state,
                position=vector(o.get("position", [0, 0, 0]), f"{oc}.position"),
                rotation=vector(o.get("rotation", [0, 0, 0]), f"{oc}.rotation"),
                scale=vector(o.get("scale", [1, 1, 1]), f"{oc}.scale"),
                animation=Animation.from_dict(o["animation"], f"{oc}.animation") if "animation" in o else Animation(),
                visible=visible,
                material=material,
                state_overrides=copy.deepcopy(overrides) if material is not None else None,
            ))
        kw["objects"] = objects
        return cls(**kw, base_dir=Path(base_dir) if base_dir else None, source=source)

    def _check(self):
        ids = [o.object_id for o in self.objects]
        if len(set(ids)) != len(ids):
            dup = sorted({i for i in ids if ids.count(i) > 1})[0]
            raise SceneError(f"objects: object_id {dup} used twice (ids must be unique)")
        names = [ly.name for ly in self.layers]
        if len(set(names)) != len(names):
            raise SceneError("layers: layer names must be unique")
        for ly in self.layers:
            if ly.camera is None and self.camera is None:
                raise SceneError(f"layers: {ly.name} has no camera")
        self._check_triangles()

    def _mesh_ctx(self, name: str) -> str:
        """Where the mesh ``name`` sits in the JSON form."""
        if name.startswith(_INLINE):
            return f"objects[{name[len(_INLINE):]}].mesh"
        return f"meshes.{name}" if name in self.meshes else f"mesh {name!r}"

    def _check_triangles(self) -> None:
        """Refuse, before any mesh is built, draw calls that would submit more than
        :data:`~meshopt_batch.support.limits.MAX_SCENE_TRIANGLES` triangles a frame (every object
        counts its mesh's triangles: the generators' sizes, a file mesh's once it is read)."""
        self._draws_per_mesh: dict[str, int] = {}
        for o in self.objects:
            self._draws_per_mesh[o.mesh] = self._draws_per_mesh.get(o.mesh, 0) + 1
        self._mesh_triangles = {name: check_mesh_spec(self.meshes.get(name, name), self._mesh_ctx(name))
                                for name in self._draws_per_mesh}
        self._refuse_triangles()

    def _refuse_triangles(self) -> None:
        """Refuse when the draw calls' triangles (as known now) are over the scene limit."""
        share = {n: self._draws_per_mesh[n] * t for n, t in self._mesh_triangles.items()}
        total = sum(share.values())
        if total <= limits.MAX_SCENE_TRIANGLES:
            return
        top = max(share, key=share.__getitem__)
        n = self._draws_per_mesh[top]
        try:
            check_scene_triangles(total, f"objects: {len(self.objects)} draw calls (the most from "
                                         f"{self._mesh_ctx(top)}: {self._mesh_triangles[top]:,} triangles "
                                         f"x {n} object{'s' if n != 1 else ''})")
        except LimitError as exc:
            raise SceneError(str(exc)) from None

    def to_dict(self) -> dict:
        """The JSON form (``Scene.from_dict(s.to_dict())`` renders the same frames).

        Returns
        -------
        dict
            The scene file's object.
        """
        d: dict[str, Any] = {"name": self.name}
        if self.description:
            d["description"] = self.description
        d.update(frames=self.frames, width=self.width, height=self.height, clear=list(self.clear),
                 seed=self.seed, light={"direction": list(self.light_direction)},
                 camera=self.camera.to_dict())
        if self.cuts:
            d["cuts"] = list(self.cuts)
        d.update(meshes=copy.deepcopy(self.meshes),
                 materials={k: v.to_dict() for k, v in self.materials.items()},
                 layers=[ly.to_dict() for ly in self.layers],
                 objects=[o.to_dict() for o in self.objects])
        return d

    def to_json(self, indent: int | None = 1) -> str:
        """The JSON form as text.

        Parameters
        ----------
        indent : int or None
            JSON indentation.

        Returns
        -------
        str
            The scene file's text.
        """
        return json.dumps(self.to_dict(), indent=indent)

    def save(self, path: str | Path) -> None:
        """Write the JSON form to a file, atomically.

        Parameters
        ----------
        path : str or Path
            The scene file to write.
        """
        atomic_write(path, self.to_json() + "\n")

    # ------------------------------------------------------------ meshes
    def mesh(self, name: str) -> Mesh:
        """The mesh an object refers to (built once, cached).

        Parameters
        ----------
        name : str
            An object's ``mesh``.

        Returns
        -------
        Mesh
            The mesh.

        Raises
        ------
        SceneError
            The mesh cannot be built, or makes the frame too large.
        """
        m = self._mesh_cache.get(name)
        if m is None:
            spec = self.meshes.get(name, name)
            ctx = f"objects[{name[len(_INLINE):]}].mesh" if name.startswith(_INLINE) else f"meshes.{name}"
            try:
                m = resolve_mesh(spec, self.base_dir, ctx, self.fallbacks)
                if name in self._mesh_triangles:     # a file mesh's size is known only now
                    self._mesh_triangles[name] = m.triangle_count
                    self._refuse_triangles()
            except SceneError as exc:
                raise SceneError(f"{Path(self.source).name}: {exc}" if self.source else str(exc)) from None
            self._mesh_cache[name] = m
        return m

    def load_meshes(self) -> dict[str, Mesh]:
        """Build every referenced mesh now (so absent files are known before frame 0).

        Returns
        -------
        dict of str to Mesh
            Each referenced mesh by name.
        """
        return {o.mesh: self.mesh(o.mesh) for o in self.objects}

    @cached_property
    def _bounds_corners(self) -> dict:
        out = {}
        for o in self.objects:
            b = self.mesh(o.mesh).bounds()
            out[o.mesh] = np.array([[b[i][0], b[j][1], b[k][2], 1.0]
                                    for i in (0, 1) for j in (0, 1) for k in (0, 1)])
        return out

    def _check_finite(self, k: int, obj: SceneObject, mvp: np.ndarray, index: int) -> None:
        """Refuse a draw whose clip-space bounds (float64) are not finite at frame ``index``:
        positions, scales, animation or camera too large for the pipeline's arithmetic."""
        with np.errstate(over="ignore", invalid="ignore"):
            clip = mvp @ self._bounds_corners[obj.mesh].T
        if not np.isfinite(clip).all():
            raise SceneError(f"objects[{k}] ({obj.name}) at frame {index}: its clip-space position is not "
                             "finite (position, scale, animation or camera values too large)")

    def _distance(self, model: np.ndarray, mesh: str, eye: np.ndarray) -> float:
        """Distance from the eye to the object's world-space bounding box (0 inside it)."""
        c = (model @ self._bounds_corners[mesh].T)[:3].T
        lo, hi = c.min(0), c.max(0)
        return float(np.linalg.norm(np.maximum(np.maximum(lo - eye, eye - hi), 0.0)))

    # ------------------------------------------------------------ frames
    def frame(self, index: int, width: int | None = None, height: int | None = None) -> FrameSpec:
        """The draw calls of one frame in program order.

        Parameters
        ----------
        index : int
            The frame.
        width, height : int, optional
            The screen's size (default: the scene's).

        Returns
        -------
        FrameSpec
            The frame's draws, clear colour, light and cut flag.

        Raises
        ------
        SceneError
            A draw whose clip-space position is not finite.
        """
        width = int(width or self.width)
        height = int(height or self.height)
        draws: list[Draw] = []
        cams: dict[int, tuple] = {}
        for li, layer in enumerate(self.layers):
            cam = layer.camera or self.camera
            key = id(cam)
            if key not in cams:
                cams[key] = cam.matrices(index, width, height)
            view, proj, eye = cams[key]
            members = [(k, o) for k, o in enumerate(self.objects)
                       if o.layer == layer.name and o.visible_at(index)]
            models = [o.transform(index) for _, o in members]
            for (k, o), model in zip(members, models, strict=True):
                self._check_finite(k, o, proj @ view @ model, index)
            order = list(range(len(members)))
            if layer.order in ("back-to-front", "front-to-back") and members:
                # distance from the eye to each object's world bounding box, as an engine's
                # sort would use; the stable sort keeps listed order on ties
                dist = np.array([self._distance(m, o.mesh, eye)
                                 for m, (_, o) in zip(models, members, strict=True)])
                key_ = -dist if layer.order == "back-to-front" else dist
                order = list(np.argsort(key_, kind="stable"))
            elif layer.order == "shuffle" and members:
                # one fixed permutation of the layer's objects (by listed index), every frame
                rng = np.random.default_rng(self.seed * 1000 + li)
                rank = {k: r for r, k in enumerate(rng.permutation(
                    [k for k, o in enumerate(self.objects) if o.layer == layer.name]))}
                order = sorted(range(len(members)), key=lambda j: rank[members[j][0]])
            for j in order:
                _, o = members[j]
                draws.append(Draw(len(draws), o.object_id, o.name, o.mesh, self.mesh(o.mesh),
                                  models[j], view, proj, o.state))
        return FrameSpec(index, width, height, draws, tuple(self.clear), tuple(self.light_direction),
                         cut=index in self.cuts)

    def __repr__(self) -> str:
        return (f"Scene({self.name!r}, {len(self.objects)} objects, {len(self.layers)} layers, "
                f"{self.frames} frames, {self.width}x{self.height})")
