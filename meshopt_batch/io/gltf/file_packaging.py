"""Packaging a glTF document and its buffers as output files, keeping external files external.

:func:`package_gltf` turns a document (as :class:`~.byte_patching.DocumentEditor` built it)
into the files to write:

* ``.glb``: one file.  Every buffer goes into the BIN chunk (buffer 0 first, each 4-byte
  aligned); images given as external files or ``data:`` URIs become buffer views, which
  the specification requires to carry a ``mimeType`` (taken from the image, its data URI, or
  its leading bytes).  An image a texture names as its core ``source`` that is not PNG or
  JPEG (a KTX2 file without ``KHR_texture_basisu``, as some exporters write) cannot carry its
  type there: it stays an external file, copied beside the output, with a note.
* ``.gltf``: a buffer that was an external file stays an external file of the same name
  next to the output (copied, or written when it changed); one that was a ``data:`` URI
  stays one; a GLB's BIN chunk becomes ``<output stem>.bin``.  External images are copied
  next to the output under their own relative names.  A changed buffer whose name would
  overwrite the source's own file (output beside its source) is written as
  ``<output stem>.bin`` instead.  A relative URI that leaves the source's folder (``../``)
  is not copied; the output refers to the same file by a relative path.
* ``embed=True`` (``.gltf``): every buffer and external image becomes a base64 ``data:`` URI
  in the JSON, one file.
* A buffer given as ``None`` is a meshopt fallback placeholder: it keeps its JSON entry
  (``byteLength``, its ``fallback`` mark) and has no data in any file; in a GLB it comes
  after the BIN chunk's buffer, and compressed views' stream references follow the merge.
  A GLB's fallback buffer with data in a file of its own (gltfpack ``-cf``) stays a file
  of its own, ``<output stem>.fallback.bin``.

The side files are checked before anything is written (:func:`check_targets`: no directory
in the way, folders writable), and :func:`write_file_set` writes a set all or nothing:
every file to a temporary beside it first, renamed into place only when all are written.
External files read here (images copied or embedded) must be regular files that fit in
memory (:func:`.glb_container.read_external`).

Nothing else is added: no ``mimeType`` on an image that stays a URI, no ``generator``, no
default values.  The JSON of a ``.gltf`` is indented like the source's (compact when the
source was on one line or a GLB), and non-ASCII text is kept as UTF-8.

References
----------
.. [1] Khronos, glTF 2.0 specification, "GLB File Format Specification", "Buffers and
   Buffer Views" (URIs relative to the glTF file, ``data:`` URIs), "Images" (``mimeType``
   required with ``bufferView``).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import posixpath
import struct
import urllib.parse
from collections.abc import Iterable, Sequence
from pathlib import Path

from ...support.errors import MeshoptBatchError
from ...support.files import atomic_path, output_folder, resolve_target
from ..format_common import Refusal
from .glb_container import CHUNK_BIN, CHUNK_JSON, GLB_MAGIC, MissingFile, decode_data_uri, image_mime, read_external
from .gltf_types import MESHOPT_EXTENSIONS

__all__ = ["CORE_IMAGE_TYPES", "check_targets", "json_indent", "local_uri", "package_gltf", "resource_files",
           "same_file", "write_file_set"]

#: Image types a texture's core ``source`` may name; others (KTX2, WebP) need an extension's source.
CORE_IMAGE_TYPES = ("image/png", "image/jpeg")

OCTET_STREAM = "data:application/octet-stream;base64,"


def json_indent(source_text: bytes | None) -> int | str | None:
    """The indentation of a source ``.gltf``'s JSON: spaces count, a tab, or None (compact)."""
    if not source_text or source_text[:4] == GLB_MAGIC:
        return None
    text = source_text.decode("utf-8-sig", errors="replace")
    lines = text.splitlines()
    for line in lines[1:]:
        stripped = line.lstrip(" \t")
        if stripped:
            lead = line[: len(line) - len(stripped)]
            if lead.startswith("\t"):
                return "\t"
            return len(lead) or None
    return None


def _dump(doc: dict, indent) -> bytes:
    if indent is None:
        return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return json.dumps(doc, indent=indent, ensure_ascii=False).encode("utf-8")


def local_uri(uri: str) -> str | None:
    """The relative file path of a URI inside the glTF's folder, or None (absolute, ``..``,
    another scheme)."""
    if uri.startswith("data:") or urllib.parse.urlparse(uri).scheme:
        return None
    rel = urllib.parse.unquote(uri)
    norm = posixpath.normpath(rel)
    if norm.startswith("../") or norm == ".." or posixpath.isabs(norm):
        return None
    return norm


def same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def resource_files(doc: dict, source: Path) -> list[Path]:
    """External files a ``.gltf`` refers to (buffers and images), as paths."""
    out = []
    for item in doc.get("buffers", []) + doc.get("images", []):
        uri = item.get("uri")
        if uri and not uri.startswith("data:"):
            out.append(source.parent / urllib.parse.unquote(uri))
    return out


def _read_image(uri: str, source: Path) -> tuple[bytes, str | None] | None:
    """An image's bytes and media type (None: its file is missing); a file that is not a
    regular file or does not fit in memory is refused (:func:`.glb_container.read_external`)."""
    if uri.startswith("data:"):
        return decode_data_uri(uri)
    try:
        return read_external(source, uri, "image file"), None
    except MissingFile:
        return None


def package_gltf(doc: dict, buffers: list[bytes | None], source: Path, output: Path, *, changed: list[bool],
                 source_bytes: bytes, embed: bool = False) -> tuple[bytes, list[tuple[Path, bytes]], list[str]]:
    """The bytes of ``output``, the side files to write with it (``(path, bytes)``), and notes.

    ``changed[i]``: buffer ``i`` differs from the source's (unchanged external buffers of a
    ``.gltf`` written beside its source are not written again).
    """
    indent = json_indent(source_bytes)
    if output.suffix.lower() == ".glb":
        return _as_glb(doc, buffers, source, output)
    return _as_gltf(doc, buffers, source, output, changed, indent, embed)


def check_targets(paths: Iterable[Path]) -> None:
    """Refuse output files that cannot be written where they go: a directory in the way, a
    file where a folder must be, a folder that cannot be written to.

    Called for the whole set (a ``.gltf`` and its companions) before any file is written,
    so a set that cannot be complete is refused without touching anything.

    Raises
    ------
    Refusal
        One line naming the output file and what is in its way.
    """
    for path in paths:
        if path.is_dir():
            raise Refusal(f"output file {path} is a directory")
        try:
            output_folder(path.parent, f"output file {path}: folder", create=False)
        except MeshoptBatchError as exc:
            raise Refusal(str(exc)) from None


def write_file_set(files: Sequence[tuple[Path, bytes]]) -> None:
    """Write files that must appear together (a ``.gltf`` and its companions): all or none.

    Every file is first written to a temporary beside its target
    (:func:`meshopt_batch.support.files.atomic_path`, the single-file mechanism); only when all are
    written are they renamed into place, the first listed last (list the main file first:
    it appears only once its companions are there).  When a write fails, every temporary is
    removed, the folders this call created are removed again, and no existing file is
    touched.  The targets are checked (:func:`check_targets`) before anything is written
    and again just before the renames; a rename that still fails (the folder changed in
    between) leaves the files renamed before it.  A target listed twice is written once
    (the first bytes).

    Raises
    ------
    Refusal
        A target that cannot be written (:func:`check_targets`).
    MeshoptBatchError
        A write failed (one line naming the file).
    """
    unique: dict[Path, tuple[Path, bytes]] = {}
    for path, raw in files:
        unique.setdefault(Path(os.path.abspath(resolve_target(path))), (path, raw))
    paths = [path for path, _ in unique.values()]
    check_targets(paths)
    created: list[Path] = []
    try:
        with contextlib.ExitStack() as stack:
            for path, raw in unique.values():
                created += _make_folders(path.parent)
                tmp = stack.enter_context(atomic_path(path))
                with open(tmp, "wb") as fh:
                    fh.write(raw)
            check_targets(paths)  # the renames happen as the stack closes, last listed first
    except BaseException:
        for folder in reversed(created):
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise


def _make_folders(folder: Path) -> list[Path]:
    """Create ``folder`` and its missing parents; the ones created, outermost first."""
    missing = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    for f in reversed(missing):
        try:
            f.mkdir()
        except FileExistsError:
            pass
        except OSError as exc:
            raise Refusal(f"cannot create folder {f}: {exc.strerror or exc}") from None
    return list(reversed(missing))


def _external_fallback(entry: dict) -> bool:
    """A meshopt fallback buffer with data in a file of its own (gltfpack ``-cf``)."""
    uri = entry.get("uri")
    ext = entry.get("extensions") if isinstance(entry.get("extensions"), dict) else {}
    return bool(uri) and not uri.startswith("data:") and any(
        isinstance(ext.get(n), dict) and ext[n].get("fallback") is True for n in MESHOPT_EXTENSIONS)


def _as_glb(doc: dict, buffers: list[bytes | None], source: Path,
            output: Path) -> tuple[bytes, list[tuple[Path, bytes]], list[str]]:
    views = doc.get("bufferViews", [])
    bin_data = bytearray()
    base: list[int | None] = []
    entries = doc.get("buffers") or [{}]
    files: list[tuple[Path, bytes]] = []
    for bi, raw in enumerate(buffers):
        if raw is None or _external_fallback(entries[bi]):
            base.append(None)
            if raw is not None:
                name = output.stem + (f"_{bi}" if files else "") + ".fallback.bin"
                entries[bi]["uri"] = urllib.parse.quote(name)
                files.append((output.parent / name, raw))
            continue
        bin_data += b"\x00" * (-len(bin_data) % 4)
        base.append(len(bin_data))
        bin_data += raw
    images = []
    notes: list[str] = []
    core = _core_sources(doc)
    for ii, im in enumerate(doc.get("images", [])):
        uri = im.get("uri")
        if uri is None:
            continue
        got = _read_image(uri, source)
        if got is None:
            continue  # a missing image keeps its uri (the source's own problem)
        raw, media = got
        mime = im.get("mimeType") or media or image_mime(uri, raw)
        if mime is None or (ii in core and mime not in CORE_IMAGE_TYPES):
            if not uri.startswith("data:"):
                _keep_image_file(im, uri, source, output.parent, files, notes)
            label = f"image {ii}" if uri.startswith("data:") else f"image {uri!r}"
            notes.append(f"{label} kept as it was: of unknown type" if mime is None else
                         f"{label} kept as a file reference: a texture's core source may not be "
                         f"{mime} once embedded (the input's own problem)")
            continue
        bin_data += b"\x00" * (-len(bin_data) % 4)
        images.append((im, {"buffer": 0, "byteOffset": len(bin_data), "byteLength": len(raw)}, mime))
        bin_data += raw
    real = [bi for bi, b in enumerate(base) if b is not None]
    placeholders = [bi for bi, b in enumerate(base) if b is None]
    merged = 1 if bin_data or real else 0
    number = {bi: 0 for bi in real} | {bi: merged + k for k, bi in enumerate(placeholders)}
    for view in views:
        _merge_reference(view, number, base)
        for name in MESHOPT_EXTENSIONS:
            ext = (view.get("extensions") or {}).get(name)
            if isinstance(ext, dict):
                _merge_reference(ext, number, base)
    for im, view, mime in images:
        views.append(view)
        im.pop("uri")
        im["bufferView"] = len(views) - 1
        im["mimeType"] = mime
    if views:
        doc["bufferViews"] = views
    if buffers or bin_data:
        first = []
        if merged:
            first = [{k: v for k, v in entries[real[0]].items() if k != "uri"} if real else {}]
            first[0]["byteLength"] = len(bin_data)
        doc["buffers"] = first + [entries[bi] for bi in placeholders]
    js = _dump(doc, None)
    js += b" " * (-len(js) % 4)
    chunks = [struct.pack("<II", len(js), CHUNK_JSON), js]
    if bin_data:
        bin_data += b"\x00" * (-len(bin_data) % 4)
        chunks += [struct.pack("<II", len(bin_data), CHUNK_BIN), bytes(bin_data)]
    body = b"".join(chunks)
    return struct.pack("<4sII", GLB_MAGIC, 2, 12 + len(body)) + body, files, notes


def _core_sources(doc: dict) -> set[int]:
    """Images that textures use as their core ``source`` (PNG or JPEG by the specification)."""
    return {int(t["source"]) for t in doc.get("textures", []) if "source" in t}


def _keep_image_file(im: dict, uri: str, source: Path, out_dir: Path, files: list, notes: list) -> None:
    """An external image stays a file: copied beside the output under its relative name, or
    referred to by a relative path when it lies outside the source's folder."""
    src_file = source.parent / urllib.parse.unquote(uri)
    rel = local_uri(uri)
    if rel is None:
        im["uri"] = _relative_uri(src_file, out_dir)
        return
    target = out_dir / rel
    if same_file(target, src_file):
        return
    try:
        files.append((target, read_external(source, uri, "image file")))
    except MissingFile:
        notes.append(f"image {uri!r} of the source is missing; its uri is kept")


def _merge_reference(obj: dict, number: dict[int, int], base: list[int | None]) -> None:
    """A ``buffer``/``byteOffset`` pair pointed into the merged BIN chunk (or a placeholder)."""
    bi = int(obj["buffer"])
    obj["buffer"] = number[bi]
    if base[bi]:
        obj["byteOffset"] = int(obj.get("byteOffset", 0)) + base[bi]


def _as_gltf(doc, buffers, source, output, changed, indent, embed):
    files: list[tuple[Path, bytes]] = []
    notes: list[str] = []
    out_dir = output.parent
    taken: set[Path] = set()
    for bi, (entry, raw) in enumerate(zip(doc.get("buffers", []), buffers, strict=True)):
        if raw is None:  # a fallback placeholder: no data anywhere
            entry.pop("uri", None)
            continue
        uri = entry.get("uri")
        if embed or (uri is not None and uri.startswith("data:") and changed[bi]):
            entry["uri"] = OCTET_STREAM + base64.b64encode(raw).decode("ascii")
            continue
        if uri is not None and uri.startswith("data:"):
            continue
        rel = local_uri(uri) if uri is not None else None
        target = out_dir / rel if rel is not None else None
        src_file = source.parent / urllib.parse.unquote(uri) if uri is not None else None
        if target is not None and same_file(target, src_file) and not changed[bi]:
            continue  # beside its source and unchanged: the same file serves both
        if target is None and uri is not None and not changed[bi]:
            entry["uri"] = _relative_uri(src_file, out_dir)
            continue
        if target is None or same_file(target, src_file) or target in taken:
            name = output.stem + (f"_{bi}" if bi else "") + ".bin"
            target = out_dir / name
            entry["uri"] = urllib.parse.quote(name)
        taken.add(target)
        files.append((target, raw))
    core = _core_sources(doc)
    for ii, im in enumerate(doc.get("images", [])):
        uri = im.get("uri")
        if uri is None or uri.startswith("data:"):
            continue
        if embed:
            got = _read_image(uri, source)
            mime = got and (im.get("mimeType") or image_mime(uri, got[0]))
            if got is not None and mime is not None and not (ii in core and mime not in CORE_IMAGE_TYPES):
                im["uri"] = f"data:{mime};base64," + base64.b64encode(got[0]).decode("ascii")
                continue
            notes.append(f"image {uri!r} kept as a file reference (missing, of unknown type, or a texture's "
                         f"core source that may not be {mime} once embedded)")
        _keep_image_file(im, uri, source, out_dir, files, notes)
    return _dump(doc, indent), files, notes


def _relative_uri(path: Path, out_dir: Path) -> str:
    try:
        rel = os.path.relpath(path.resolve(), out_dir.resolve())
    except ValueError:
        raise Refusal(f"cannot refer to {path} from {out_dir}") from None
    return urllib.parse.quote(Path(rel).as_posix())
