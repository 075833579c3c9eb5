"""A file's figures and each primitive's, read from a manifest-style record.

A record is what a library worker returns for one file (:func:`..library.worker.optimize_one`)
and what ``OUTDIR/manifest.jsonl`` holds per file (:mod:`..library.manifest`): per profile
``before`` (the input's own order) and ``after`` (what ``optimize`` wrote), for the file
(``invocations``) and for each draw (``primitives``).  :func:`file_figures` reads one side of a
record as the file's *own* figure and, optionally, the other as the *reachable* one.

Profiles are named as the target names them (``-p``): a figure recorded under the 2^16-rule
form of an NVIDIA profile (``nvidia_gl+16bit``, how a buffer over 2^16 vertices is judged)
counts for ``nvidia_gl``.  A file's figure per profile is the sum over its draws, so a
primitive drawn twice counts twice, as the GPU runs it twice.

A primitive is identified within its file by its mesh name (a glTF primitive's index removed)
and its triangle count, in file order: :func:`match_primitives` pairs the primitives of two
versions of a file by the longest matching sequence (:class:`difflib.SequenceMatcher`), so a
primitive removed in the middle of a mesh is reported as removed, not as every later one
changed; a primitive whose triangle count changed in place stays paired.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

__all__ = ["FileFigures", "PrimitiveFigures", "file_figures", "match_primitives", "profile_figures"]

_GLTF_SUFFIXES = (".gltf", ".glb")
_INDEX = re.compile(r"\[\d+\]$")
_BLOCK_RULE = "+16bit"


@dataclass(frozen=True)
class PrimitiveFigures:
    """One draw of a file.

    Attributes
    ----------
    label : str
        How messages name it: ``mesh 0 primitive 3 (Body)`` for glTF, the mesh's name or
        ``mesh 2`` for other formats.
    signature : tuple
        What :func:`match_primitives` compares: mesh name without index, triangles.
    triangles : int
    own, reachable : dict
        Profile -> predicted invocations (``reachable`` empty when the record has none).
    """

    label: str
    signature: tuple
    triangles: int
    own: dict
    reachable: dict = field(default_factory=dict)


@dataclass(frozen=True)
class FileFigures:
    """A file's figures: totals, per profile, and its primitives.

    Attributes
    ----------
    status : str
        The record's: ``ok``, ``cached``, ``passed-through`` (no triangles) or ``failed``.
    triangles, vertices, bytes : int
        Triangles drawn, vertices as ``optimize`` counts them (each draw's vertex buffer),
        bytes of the file and its external files.
    own, reachable : dict
        Profile -> invocations of the file's draws together.
    primitives : list of PrimitiveFigures
        Empty for a record written before manifests had them.
    error : str
        A failed record's one-line reason.
    """

    status: str
    triangles: int = 0
    vertices: int = 0
    bytes: int = 0
    own: dict = field(default_factory=dict)
    reachable: dict = field(default_factory=dict)
    primitives: list = field(default_factory=list)
    error: str = ""


def profile_figures(pairs: dict, side: str, names: tuple[str, ...]) -> dict:
    """``side`` (``before`` or ``after``) of ``pairs`` (profile -> before/after) per profile of
    ``names``: its own key, else its 2^16-rule form's; profiles of neither are left out."""
    out = {}
    for name in names:
        pair = pairs.get(name) or pairs.get(name + _BLOCK_RULE)
        if pair is not None:
            out[name] = int(pair[side])
    return out


def _summed(figures: list[dict]) -> dict:
    total: dict = {}
    for fig in figures:
        for name, value in fig.items():
            total[name] = total.get(name, 0) + value
    return total


def _label(rec: dict, index: int, gltf: bool) -> str:
    name = rec.get("name") or ""
    if gltf:
        return f"mesh {rec['mesh']} primitive {rec['primitive']}" + (f" ({name})" if name else "")
    return name or f"mesh {index}"


def file_figures(record: dict, names: tuple[str, ...], path: str, *, own: str = "before",
                 reachable: str | None = "after") -> FileFigures:
    """The figures of one file from its record.

    Parameters
    ----------
    record : dict
        A manifest entry or a worker's fields.
    names : tuple of str
        The target's profile names.
    path : str
        The file's name (its suffix tells glTF's primitive labels from other formats').
    own, reachable : str
        Which side of each ``before``/``after`` pair is the file's own figure and which the
        reachable one (``None``: none).  A baseline written by ``optimize DIR`` describes the
        output: ``own="after"``.

    Returns
    -------
    FileFigures
    """
    gltf = path.lower().endswith(_GLTF_SUFFIXES)
    prims = []
    for i, rec in enumerate(record.get("primitives") or []):
        pairs = rec.get("invocations") or {}
        prims.append(PrimitiveFigures(
            _label(rec, i, gltf), (_INDEX.sub("", rec.get("name") or ""), int(rec.get("triangles", 0))),
            int(rec.get("triangles", 0)), profile_figures(pairs, own, names),
            profile_figures(pairs, reachable, names) if reachable else {}))
    if "primitives" in record:
        own_total = _summed([p.own for p in prims])
        reach_total = _summed([p.reachable for p in prims]) if reachable else {}
    else:  # a record without per-draw figures (written before manifests had them)
        pairs = record.get("invocations") or {}
        own_total = profile_figures(pairs, own, names)
        reach_total = profile_figures(pairs, reachable, names) if reachable else {}
    vertices = record.get("vertices_after" if own == "after" else "vertices_before", 0)
    return FileFigures(record.get("status", "ok"), int(record.get("triangles", 0)), int(vertices or 0),
                       int(record.get("bytes_in", 0)), own_total, reach_total, prims, record.get("error", ""))


def match_primitives(old: list[PrimitiveFigures], new: list[PrimitiveFigures]) -> tuple[list, list, list]:
    """Pair two versions' primitives: ``(pairs, removed, added)``.

    ``pairs`` holds ``(old, new)`` of the longest matching runs of equal signatures (mesh name,
    triangles), and of runs edited in place (as many primitives, the same mesh names, other
    triangle counts); ``removed`` the old primitives left over, ``added`` the new ones.
    """
    matcher = difflib.SequenceMatcher(None, [p.signature for p in old], [p.signature for p in new], autojunk=False)
    pairs, removed, added = [], [], []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            pairs += list(zip(old[i1:i2], new[j1:j2], strict=True))
            continue
        before, after = old[i1:i2], new[j1:j2]
        same_meshes = len(before) == len(after) and all(
            a.signature[0] == b.signature[0] for a, b in zip(before, after, strict=True))
        if same_meshes:
            pairs += list(zip(before, after, strict=True))  # edited in place: same meshes, new triangle counts
        else:
            removed += before
            added += after
    return pairs, removed, added
