"""Writing meshes back into the structure of a source glTF.

With ``save_mesh(meshes, path, source=original)`` the output keeps the source's scenes,
nodes, meshes, primitive slots, names, transforms, materials, textures, animations,
extensions and extras; only the index and vertex attribute accessors of the written
primitives are replaced.  Meshes whose ``meta`` names a slot (from
:func:`meshopt_batch.io.load_meshes` of that file) go back to their own slot, a subset may
be given; meshes without one fill the triangle primitives in file order.

This is the :class:`~meshopt_batch.geometry.mesh_record.Mesh`-level writer of ``save_mesh(source=)``;
``meshopt-batch optimize`` does not use it but patches the source document in place
(:mod:`meshopt_batch.assets.gltf_optimization`, :mod:`.byte_patching`, :mod:`.file_packaging`), which keeps
external files external and shared data shared.  Here the output is self-contained: every
old buffer view is copied into one new buffer, external and ``data:`` images become buffer
views, and when every extension used is known not to refer to accessors or buffer views,
those that nothing uses any more are dropped.
Geometry-compression extensions of a rewritten primitive are removed (they would hold the
old geometry), and a meshopt-compressed source is written decoded (plain views in the one
new buffer).

References
----------
.. [1] Khronos, glTF 2.0 specification, "Meshes" (primitives, morph targets and the mesh's
   default ``weights``), "Images" (an image is a ``uri`` or a ``bufferView`` with its
   ``mimeType``).
"""

from __future__ import annotations

import copy
import re
import struct
import warnings
from pathlib import Path
from typing import Any

from ...geometry.mesh_record import Mesh
from ..format_common import Refusal, one_line
from .glb_container import MissingFile, decode_data_uri, image_mime, read_external, serialize_gltf
from .gltf_document import COMPRESSION_EXTENSIONS, load_document, view_bytes
from .gltf_reader import triangle_slots
from .gltf_types import MESHOPT_EXTENSIONS
from .gltf_writer import BinaryBuilder, primitive_accessors

__all__ = ["write_gltf_into_source"]

# Extensions known not to refer to accessors or buffer views: with only these in a file,
# accessors and buffer views that nothing uses any more are dropped on save.
_SAFE_EXT = re.compile(
    r"KHR_materials_\w+|KHR_texture_transform|KHR_lights_punctual|KHR_mesh_quantization|"
    r"KHR_texture_basisu|EXT_texture_webp|EXT_texture_avif|KHR_materials_variants|"
    r"KHR_animation_pointer|KHR_xmp_json_ld|EXT_mesh_gpu_instancing"
)


def write_gltf_into_source(meshes: list[Mesh], path: Path, source: Path) -> bytes:
    """The bytes of ``path`` (``.glb``/``.gltf``): ``source``'s document with the triangle
    primitives the meshes belong to rewritten from them."""
    doc, buffers = _read_source(source)
    wanted = _slots_of(meshes, doc, path, source)
    doc = copy.deepcopy(doc)
    n_old_acc = len(doc.get("accessors", []))
    builder = BinaryBuilder(doc)
    _copy_views(doc, buffers, builder)
    _embed_images(doc, builder, path, source)
    for m, (mi, pi) in zip(meshes, wanted, strict=True):
        _replace_primitive(doc, mi, pi, m, builder, path)
    used_ext = set(doc.get("extensionsUsed", []))
    if all(_SAFE_EXT.fullmatch(e) for e in used_ext):
        _drop_unused(doc, n_old_acc)
    bin_data = builder.bytes()
    if doc.get("bufferViews"):
        bin_data = _compact_views(doc, bin_data)
    return serialize_gltf(doc, bin_data, path)


def _read_source(source: Path) -> tuple[dict, list[bytes]]:
    try:
        data = source.read_bytes()
    except OSError as exc:
        raise Refusal(f"source {source}: cannot read: {exc.strerror or exc}") from None
    try:
        return load_document(data, source)
    except Refusal as exc:
        raise Refusal(f"source {source}: {exc}") from None
    except (ValueError, KeyError, TypeError, struct.error, UnicodeDecodeError) as exc:
        raise Refusal(f"source {source}: not a readable glTF ({one_line(exc)})") from None


def _slots_of(meshes: list[Mesh], doc: dict, path: Path, source: Path) -> list[tuple[int, int]]:
    """The (mesh, primitive) each mesh is written to: its own (``meta``) or file order."""
    slots = triangle_slots(doc, source, warn=False)
    for m in meshes:
        if m.meta.get("world_space") or m.meta.get("parts"):
            raise Refusal(f"mesh {m.name!r} is a merged or world-space model (load_mesh); "
                          "use load_meshes to write primitives back into a glTF's structure")
    by_meta = all(m.meta.get("gltf_mesh") is not None and m.meta.get("gltf_primitive") is not None
                  for m in meshes)
    if not by_meta:
        if len(meshes) != len(slots):
            raise Refusal(f"source {source} has {len(slots)} triangle primitives, got {len(meshes)} meshes")
        return slots
    wanted = [(int(m.meta["gltf_mesh"]), int(m.meta["gltf_primitive"])) for m in meshes]
    if any(w not in slots for w in wanted):
        raise Refusal(f"the meshes' glTF slots do not exist in source {source}")
    if len(set(wanted)) != len(wanted):
        raise Refusal("two meshes are for the same glTF primitive")
    if any(m.meta.get("source") not in (None, str(source)) for m in meshes):
        warnings.warn(f"{path}: meshes were loaded from another file than source {source}; "
                      "placed by their mesh/primitive numbers", stacklevel=4)
    return wanted


def _copy_views(doc: dict, buffers: list[bytes], builder: BinaryBuilder) -> None:
    """Every old buffer view copied into the one new buffer, keeping its number; compressed
    views are copied decoded (the one new buffer is plain)."""
    old_views = doc.get("bufferViews", [])
    doc["bufferViews"] = []
    for i, bv in enumerate(old_views):
        view, _ = view_bytes({"bufferViews": old_views}, buffers, i)
        extra = {k: v for k, v in bv.items() if k not in ("buffer", "byteOffset", "byteLength", "byteStride", "target")}
        ext = {k: v for k, v in (extra.pop("extensions", None) or {}).items() if k not in MESHOPT_EXTENSIONS}
        if ext:
            extra["extensions"] = ext
        builder.add_view(view, target=bv.get("target"), stride=bv.get("byteStride"), extra=extra)
    for key in ("extensionsUsed", "extensionsRequired"):
        if key in doc:
            doc[key] = [e for e in doc[key] if e not in MESHOPT_EXTENSIONS]
            if not doc[key]:
                del doc[key]


def _embed_images(doc: dict, builder: BinaryBuilder, path: Path, source: Path) -> None:
    """Images given by a ``uri`` (file or ``data:``) become buffer views; a missing file or
    an unknown image type keeps its ``uri`` (warning).  A file that is not a regular file or
    does not fit in memory is refused (:func:`.glb_container.read_external`)."""
    for im in doc.get("images", []):
        uri = im.get("uri")
        if uri is None:
            continue
        try:
            if uri.startswith("data:"):
                raw, mime = decode_data_uri(uri)
            else:  # a regular file that fits in memory, or a refusal (read_external)
                raw = read_external(source, uri, f"source {source}: image file")
                mime = None
        except MissingFile:
            warnings.warn(f"{path}: image {uri!r} of source {source} is missing; its uri is kept", stacklevel=4)
            continue
        mime = mime or image_mime(uri, raw)
        if mime is None:
            warnings.warn(f"{path}: image {uri!r}: unknown image type; its uri is kept", stacklevel=4)
            continue
        im.pop("uri")
        im["bufferView"] = builder.add_view(raw)
        im["mimeType"] = mime


def _replace_primitive(doc: dict, mi: int, pi: int, mesh: Mesh, builder: BinaryBuilder, path: Path) -> None:
    """Primitive ``pi`` of mesh ``mi`` rewritten from ``mesh``: new accessors, a triangle
    list, no compressed copy of the old geometry, morph targets as the mesh has them."""
    prim = doc["meshes"][mi]["primitives"][pi]
    attrs, indices, targets = primitive_accessors(mesh, builder, path)
    prim["attributes"] = attrs
    prim["indices"] = indices
    for ext in COMPRESSION_EXTENSIONS:
        prim.get("extensions", {}).pop(ext, None)
    if prim.get("extensions") == {}:
        prim.pop("extensions")
    if "mode" in prim:
        prim["mode"] = 4
    if targets or "targets" in prim:
        old_targets = prim.get("targets", [])
        if len(targets) != len(old_targets) and old_targets:
            warnings.warn(f"{path}: {doc['meshes'][mi].get('name', mi)} primitive {pi}: "
                          f"morph targets replaced ({len(old_targets)} -> {len(targets)})", stacklevel=4)
        if targets:
            prim["targets"] = targets
        else:
            prim.pop("targets", None)
            doc["meshes"][mi].pop("weights", None)


def _accessor_refs(doc: dict) -> list[tuple[Any, Any]]:
    """(container, key) of every place an accessor index is stored."""
    refs = []
    for mesh in doc.get("meshes", []):
        for prim in mesh.get("primitives", []):
            refs += [(prim["attributes"], k) for k in prim.get("attributes", {})]
            if "indices" in prim:
                refs.append((prim, "indices"))
            for t in prim.get("targets", []):
                refs += [(t, k) for k in t]
    for skin in doc.get("skins", []):
        if "inverseBindMatrices" in skin:
            refs.append((skin, "inverseBindMatrices"))
    for anim in doc.get("animations", []):
        for s in anim.get("samplers", []):
            refs += [(s, k) for k in ("input", "output") if k in s]
    for node in doc.get("nodes", []):
        inst = node.get("extensions", {}).get("EXT_mesh_gpu_instancing", {}).get("attributes", {})
        refs += [(inst, k) for k in inst]
    return refs


def _drop_unused(doc: dict, n_old_acc: int) -> None:
    """Remove accessors and buffer views that nothing refers to any more; renumber."""
    refs = _accessor_refs(doc)
    used = {int(c[k]) for c, k in refs}
    accs = doc.get("accessors", [])
    keep = [i for i in range(len(accs)) if i in used or i >= n_old_acc]
    remap = {old: new for new, old in enumerate(keep)}
    doc["accessors"] = [accs[i] for i in keep]
    for c, k in refs:
        c[k] = remap[int(c[k])]
    view_refs = []
    for acc in doc["accessors"]:
        if "bufferView" in acc:
            view_refs.append((acc, "bufferView"))
        sp = acc.get("sparse")
        if sp:
            view_refs += [(sp["indices"], "bufferView"), (sp["values"], "bufferView")]
    view_refs += [(im, "bufferView") for im in doc.get("images", []) if "bufferView" in im]
    used_v = {int(c[k]) for c, k in view_refs}
    views = doc.get("bufferViews", [])
    keep_v = [i for i in range(len(views)) if i in used_v]
    vmap = {old: new for new, old in enumerate(keep_v)}
    doc["bufferViews"] = [views[i] for i in keep_v]
    for c, k in view_refs:
        c[k] = vmap[int(c[k])]
    if not doc["accessors"]:
        doc.pop("accessors")


def _compact_views(doc: dict, data: bytes) -> bytes:
    """Rebuild the binary buffer holding only the views still listed (4-byte aligned)."""
    out = bytearray()
    for bv in doc["bufferViews"]:
        start = bv["byteOffset"]
        chunk = data[start : start + bv["byteLength"]]
        out += b"\x00" * (-len(out) % 4)
        bv["byteOffset"] = len(out)
        out += chunk
    out += b"\x00" * (-len(out) % 4)
    return bytes(out)


