"""Reading and writing meshes without ever changing vertex or triangle order.

Order is what this library measures, so every format has a small direct reader that keeps
the file's vertex and face order exactly: trimesh's loaders regroup faces by polygon size,
split quads differently and may split vertices by UV, so they are only used by the tests as
a cross-check where they agree.

One module per format, each a ``read_<format>(data, path) -> list[Mesh]`` and, where the
format is written, a ``write_<format>(meshes, path) -> bytes``; :data:`READERS` and
:data:`WRITERS` map file suffixes to them.  A new format is one module and one line in each
table.

==========================  ==================================================  =========
module                      format                                              written
==========================  ==================================================  =========
:mod:`.obj`                 Wavefront OBJ                                       yes
:mod:`.ply`                 PLY ascii, binary little/big endian                 binary LE
:mod:`.off`                 OFF (ascii)                                         no
:mod:`.stl`                 STL ascii and binary                                no
:mod:`.gltf`                glTF 2.0 ``.gltf`` (external or embedded buffers)   yes
                            and ``.glb``, EXT/KHR_meshopt_compression (read
                            and written) and KHR_draco_mesh_compression (read
                            only); one module per step (see :mod:`.gltf`)
==========================  ==================================================  =========

What the readers do:

* Polygons with more than three corners are fan-triangulated in place,
  ``(v0, v1, v2), (v0, v2, v3), ...``, with a warning naming the file.
* Degenerate triangles are kept.  Unreferenced vertices are kept.
* Refused with :class:`~meshopt_batch.support.errors.MeshError` (one line naming the file and the
  problem): unknown or unreadable formats, empty meshes, point clouds, files with lines
  only, NaN/inf positions, indices out of range.
* OBJ: a position used with several different ``vt``/``vn`` combinations keeps its index
  for the first combination met; every other combination becomes a copy appended after
  the file's vertices (a warning says how many).  Vertex colours (``v x y z r g b``) are
  read.  STL has no index buffer: its ``3T`` corners are ``3T`` vertices, nothing merged.
* glTF: every triangle primitive is its own :class:`Mesh` (its own index buffer), named
  after its mesh (``name[p]`` when the mesh has several primitives), positions in the
  mesh's local space; the index accessor type is kept (uint8 is read as uint16).
  Triangle strips and fans are converted to lists (``meta["gltf_mode"]`` says which);
  points/lines primitives are skipped (warning; :func:`load_draws` returns a note
  instead).  ``meta`` records the mesh/primitive numbers, material, the world matrix of
  the first node using the mesh, and that texture coordinates have their origin
  at the top left (glTF's convention; OBJ and PLY use the bottom left, and the writers
  flip ``v`` when a mesh goes from one convention to the other).

:func:`load_mesh` returns one mesh: for a glTF with several triangle primitives, the
primitives are placed with their node transforms and concatenated (vertex buffers
appended, indices offset; ``meta["parts"]`` says where each one went).  Use
:func:`load_meshes` to keep one index buffer per draw, as a GPU sees them.

:func:`save_mesh` writes atomically (:func:`meshopt_batch.support.files.atomic_write`): on any
error no output file is left and an existing file is untouched.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Callable, Sequence
from pathlib import Path

from ..geometry.mesh_record import Mesh, concatenate
from ..support.errors import MeshError, MeshoptBatchError
from ..support.files import atomic_write
from .format_common import UV_TOP_LEFT, Refusal, one_line
from .gltf.gltf_reader import read_gltf, to_world_space
from .gltf.gltf_writer import write_gltf
from .gltf.source_rewriting import write_gltf_into_source
from .obj import read_obj, write_obj
from .off import read_off
from .ply import read_ply, write_ply
from .stl import read_stl

__all__ = ["LOAD_FORMATS", "READERS", "SAVE_FORMATS", "UV_TOP_LEFT", "WRITERS", "WRITE_BACK_FORMATS",
           "load_draws", "load_mesh", "load_meshes", "save_mesh"]

#: Reader of each file suffix: ``(file bytes, path) -> meshes in file order``.
READERS: dict[str, Callable[[bytes, Path], list[Mesh]]] = {
    ".obj": read_obj,
    ".ply": read_ply,
    ".off": read_off,
    ".stl": read_stl,
    ".gltf": read_gltf,
    ".glb": read_gltf,
}
#: Writer of each file suffix: ``(meshes, path) -> file bytes``.
WRITERS: dict[str, Callable[[list[Mesh], Path], bytes]] = {
    ".obj": write_obj,
    ".ply": write_ply,
    ".glb": write_gltf,
    ".gltf": write_gltf,
}
#: Suffixes whose writer can keep a source file's structure (``save_mesh(..., source=)``).
WRITE_BACK_FORMATS = (".glb", ".gltf")

LOAD_FORMATS = tuple(READERS)
SAVE_FORMATS = tuple(WRITERS)

# What a reader raises on bytes it cannot make sense of (a "not a readable ..." refusal).
_MALFORMED = (ValueError, IndexError, KeyError, TypeError, struct.error, UnicodeDecodeError,
              OverflowError, json.JSONDecodeError)


def load_meshes(path: str | os.PathLike) -> list[Mesh]:
    """Every mesh (index buffer) in a file, in file order.

    Parameters
    ----------
    path : str or os.PathLike
        A mesh file; its suffix names the format (:data:`LOAD_FORMATS`).

    Returns
    -------
    list of Mesh
        One mesh for OBJ, PLY, OFF and STL, one per triangle primitive for glTF, each with
        the file's vertex and triangle order.

    Raises
    ------
    MeshError
        The file cannot be used (unknown format, unreadable, empty, malformed, invalid
        contents); the message names the file.
    """
    return _load(Path(path), None)


def load_draws(path: str | os.PathLike) -> tuple[list[Mesh], list[str]]:
    """Every mesh (index buffer) in a file, and one-line notes on what was skipped.

    As :func:`load_meshes`, except that a glTF's point/line primitives are noted (no
    warning) and a glTF with point/line primitives only gives no mesh and a note instead of
    an error.

    Parameters
    ----------
    path : str or os.PathLike
        A mesh file; its suffix names the format (:data:`LOAD_FORMATS`).

    Returns
    -------
    meshes : list of Mesh
        The file's triangle meshes, in file order (possibly none).
    notes : list of str
        One line per thing skipped (``"no triangle primitives"`` when there is no mesh).

    Raises
    ------
    MeshError
        The file cannot be used; the message names the file.
    """
    notes: list[str] = []
    meshes = _load(Path(path), notes)
    if not meshes:
        notes.append("no triangle primitives")
    return meshes, notes


def _load(path: Path, notes: list | None) -> list[Mesh]:
    ext = path.suffix.lower()
    if ext not in READERS:
        raise MeshError(
            f"{path}: unknown mesh format {ext or '(no extension)'!r}; "
            f"readable: {', '.join(LOAD_FORMATS)}"
        )
    if not path.is_file():
        raise MeshError(f"{path}: no such file" if not path.exists() else f"{path}: not a file")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise MeshError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if not data:
        raise MeshError(f"{path}: empty file")
    try:
        meshes = read_gltf(data, path, notes) if READERS[ext] is read_gltf else READERS[ext](data, path)
    except MeshError:
        raise
    except Refusal as exc:
        raise MeshError(f"{path}: {one_line(exc)}") from None
    except _MALFORMED as exc:
        raise MeshError(f"{path}: not a readable {ext[1:].upper()} file ({one_line(exc)})") from None
    for m in meshes:
        m.validate(source=f"{path}" + (f" [{m.name}]" if len(meshes) > 1 else ""))
    return meshes


def load_mesh(path: str | os.PathLike) -> Mesh:
    """The one mesh of a file.

    A glTF is returned as its whole model in world space: every triangle primitive is
    moved by the world transform of the first node using its mesh and, when there are
    several, they are concatenated into one vertex and one index buffer
    (``meta["parts"]`` lists each part's triangle and vertex ranges).  Use
    :func:`load_meshes` for one index buffer per draw, as a GPU sees them, and to write
    meshes back into the file's structure with ``save_mesh(..., source=)``.

    Parameters
    ----------
    path : str or os.PathLike
        A mesh file; its suffix names the format (:data:`LOAD_FORMATS`).

    Returns
    -------
    Mesh
        The file's mesh, vertex and triangle order as stored.

    Raises
    ------
    MeshError
        The file cannot be used; the message names the file.
    """
    try:
        meshes = [to_world_space(m) for m in load_meshes(path)]
    except Refusal as exc:
        raise MeshError(f"{path}: {one_line(exc)}") from None
    if len(meshes) == 1:
        return meshes[0]
    whole = concatenate(meshes, name=Path(path).stem)
    meta = dict(whole.meta, source=str(path), world_space=True)
    if meshes[0].meta.get("uv_origin"):
        meta["uv_origin"] = meshes[0].meta["uv_origin"]
    return whole.replace(meta=meta)


def save_mesh(
    mesh_or_list: Mesh | Sequence[Mesh],
    path: str | os.PathLike,
    source: str | os.PathLike | None = None,
) -> Path:
    """Write one mesh or a list of meshes; the format comes from the extension.

    * ``.ply`` (binary little endian): one mesh; a list is concatenated (warning).
    * ``.obj``: one ``o`` group per mesh, indices offset.
    * ``.glb`` / ``.gltf``: one node, mesh and primitive per mesh; with ``source=`` an
      original ``.glb``/``.gltf``, the file's structure is kept (scenes, nodes, meshes,
      primitive slots, names, transforms, materials, textures, animations) and only the
      index and vertex attribute accessors of the primitives are replaced.  Meshes that
      carry ``meta`` from :func:`load_meshes` of that file go back to their own slot (a
      subset may be given); others fill the triangle primitives in order.

    Normals, texture coordinates, colours and other per-vertex attributes are written.
    Indices are 16-bit where the mesh's ``index_dtype`` is uint16 and every index fits
    (glTF reserves 0xFFFF, so there the largest 16-bit index is 65534), else 32-bit.
    The write is atomic: on any error no output file is left and an existing one is untouched.

    Parameters
    ----------
    mesh_or_list : Mesh or sequence of Mesh
        What to write.
    path : str or os.PathLike
        The output file; its suffix names the format (:data:`SAVE_FORMATS`).
    source : str or os.PathLike, optional
        A ``.glb``/``.gltf`` whose structure the output keeps (glTF outputs only).

    Returns
    -------
    pathlib.Path
        The path written.

    Raises
    ------
    MeshError
        An unknown suffix, nothing to save, an invalid mesh, ``source`` with a format that
        cannot keep it, or a failed write; the message names the file.
    """
    path = Path(path)
    meshes = [mesh_or_list] if isinstance(mesh_or_list, Mesh) else list(mesh_or_list)
    ext = path.suffix.lower()
    if ext not in WRITERS:
        raise MeshError(f"{path}: cannot save {ext or '(no extension)'!r}; writable: {', '.join(SAVE_FORMATS)}")
    if not meshes or not all(isinstance(m, Mesh) for m in meshes):
        raise MeshError(f"{path}: nothing to save (expected a Mesh or a list of Mesh)")
    for m in meshes:
        m.validate(source=f"{path} [{m.name}]" if m.name else str(path))
    if source is not None and ext not in WRITE_BACK_FORMATS:
        raise MeshError(f"{path}: source= keeps a glTF file's structure; save to .glb or .gltf")
    try:
        if source is not None:
            data = write_gltf_into_source(meshes, path, Path(source))
        else:
            data = WRITERS[ext](meshes, path)
    except MeshError:
        raise
    except Refusal as exc:
        raise MeshError(f"{path}: {one_line(exc)}") from None
    try:
        atomic_write(path, data)
    except MeshError:
        raise
    except MeshoptBatchError as exc:
        raise MeshError(str(exc)) from None
    return path
