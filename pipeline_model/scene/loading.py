"""Finding and loading scenes: shipped scene names, JSON files, glTF files and dicts.

The shipped scenes are the JSON files of ``meshes/scenes`` (:data:`meshes.SCENES_DIR`),
written by :mod:`pipeline_model.scene.builders`.
"""

from __future__ import annotations

import json
from pathlib import Path

import meshes

from .gltf import load_gltf_scene
from .scene import Scene
from .schema import SceneError

__all__ = ["load_scene", "shipped_scene_path", "shipped_scenes"]


def shipped_scenes() -> list[str]:
    """The names of the scenes shipped in ``meshes/scenes``.

    Returns
    -------
    list of str
        Sorted names (empty when the folder is absent).
    """
    d = meshes.SCENES_DIR
    return sorted(p.stem for p in d.glob("*.json")) if d.is_dir() else []


def shipped_scene_path(name: str) -> Path:
    """The JSON file of a shipped scene.

    Parameters
    ----------
    name : str
        The scene's name.

    Returns
    -------
    pathlib.Path
        ``meshes/scenes/NAME.json`` (it may not exist).
    """
    return meshes.SCENES_DIR / f"{name}.json"


def load_scene(spec: str | Path | dict | Scene) -> Scene:
    """A scene from a shipped scene's name, a JSON file, a glTF/GLB file, or a dict.

    Parameters
    ----------
    spec : str, Path, dict or Scene
        What to load (a Scene is returned as it is).

    Returns
    -------
    Scene
        The scene, checked.

    Raises
    ------
    SceneError
        No such file or shipped scene, or a scene that does not pass its checks.
    """
    if isinstance(spec, Scene):
        return spec
    if isinstance(spec, dict):
        return Scene.from_dict(spec)
    text = str(spec)
    path = Path(text).expanduser()
    if not path.is_file():
        shipped = shipped_scene_path(text)
        if shipped.is_file():
            path = shipped
        else:
            known = ", ".join(shipped_scenes()) or "none"
            raise SceneError(f"{text}: no such scene file or shipped scene (shipped: {known})")
    if path.suffix.lower() in (".glb", ".gltf"):
        return load_gltf_scene(path)
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise SceneError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    except UnicodeDecodeError:
        raise SceneError(f"{path}: not a text (JSON) scene file") from None
    try:
        return Scene.from_dict(data, base_dir=path.parent, source=str(path))
    except SceneError as exc:
        raise SceneError(f"{path.name}: {exc}") from None
