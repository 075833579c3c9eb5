"""The mesh files of a library folder, and where each one's output goes.

A library is a folder tree.  Every file whose extension is a mesh format (:data:`MESH_SUFFIXES`,
any letter case) is an input; everything else (textures, ``.bin`` buffers, notes) is left
alone: a ``.gltf``'s external files travel with it when the file itself is optimized.  The
output of ``DIR/a/b.ply`` is ``OUTDIR/a/b.ply``.  A format the optimizer cannot write
(``.off``, ``.stl``) is written as PLY beside it: ``a/b.stl`` gives ``a/b.ply``, or
``a/b.stl.ply`` when ``a/b.ply`` is an input of its own.

Symbolic links to files are followed; links to folders are not (a cycle cannot loop the
walk).  The temporaries of interrupted atomic writes (``.<name>.meshopt-batch-*.tmp``) are
never inputs, and neither is anything under OUTDIR when OUTDIR lies inside DIR.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from meshopt_batch.assets.file_optimization import WRITABLE_SUFFIXES
from meshopt_batch.support.errors import MeshoptBatchError
from meshopt_batch.support.files import TEMP_MARK

__all__ = ["MESH_SUFFIXES", "LibraryFile", "check_folders", "discover", "is_temporary"]

#: Extensions of the files a library run optimizes.
MESH_SUFFIXES = (".obj", ".ply", ".off", ".stl", ".gltf", ".glb")
#: Format written for an input whose own format cannot be written.
FALLBACK_SUFFIX = ".ply"


@dataclass(frozen=True)
class LibraryFile:
    """One input of a library run.

    Attributes
    ----------
    path : str
        Relative to the library folder, ``/``-separated (the manifest's ``path``).
    output : str
        Relative to the output folder, ``/``-separated.
    size : int
        Bytes of the file itself (external files not counted).
    """

    path: str
    output: str
    size: int


def is_temporary(name: str) -> bool:
    """True for the name of an atomic write's temporary (:mod:`meshopt_batch.support.files`)."""
    return name.startswith(".") and TEMP_MARK in name and name.endswith(".tmp")


def check_folders(source: Path, out: Path) -> None:
    """Refuse a library folder that is missing, or an output folder that could hold inputs.

    Raises
    ------
    MeshoptBatchError
        DIR is not a folder, OUTDIR is DIR, or DIR lies inside OUTDIR (outputs would land
        on or among the inputs).
    """
    if not source.is_dir():
        raise MeshoptBatchError(f"{source}: not a folder")
    if out.exists() and not out.is_dir():
        raise MeshoptBatchError(f"{out}: exists and is not a folder")
    src, dst = source.resolve(), out.resolve()
    if src == dst or dst in src.parents:
        raise MeshoptBatchError(f"{out}: the output folder must not be {source} or contain it")


def _mesh_paths(root: Path, exclude: Path | None) -> list[str]:
    found = []
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        if exclude is not None:
            dirs[:] = [d for d in dirs if (here / d).resolve() != exclude]
        dirs.sort()
        for name in sorted(files):
            if is_temporary(name) or Path(name).suffix.lower() not in MESH_SUFFIXES:
                continue
            if (here / name).is_file():
                found.append((here / name).relative_to(root).as_posix())
    return sorted(found)


def _output_names(paths: list[str]) -> dict[str, str]:
    kept = {p for p in paths if PurePosixPath(p).suffix.lower() in WRITABLE_SUFFIXES}
    names = {p: p for p in kept}
    for p in paths:
        if p in kept:
            continue
        candidate = str(PurePosixPath(p).with_suffix(FALLBACK_SUFFIX))
        names[p] = candidate if candidate not in kept else p + FALLBACK_SUFFIX
    return names


def discover(root: str | os.PathLike, out: str | os.PathLike | None = None) -> list[LibraryFile]:
    """Every mesh file under ``root`` (sorted by relative path) with its output name.

    ``out`` (the output folder) is skipped when it lies inside ``root``.
    """
    root = Path(root)
    exclude = Path(out).resolve() if out is not None else None
    paths = _mesh_paths(root, exclude)
    names = _output_names(paths)
    return [LibraryFile(p, names[p], (root / p).stat().st_size) for p in paths]
