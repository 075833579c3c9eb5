"""Reading and writing meshes without ever changing vertex or triangle order.

Order is what this library measures, so every format has a small direct reader here that
keeps the file's vertex and face order exactly: trimesh's loaders regroup faces by
polygon size, split quads differently and may split vertices by UV, so they are only used
by the tests as a cross-check where they agree.

Formats read: OBJ, PLY (ascii, binary little/big endian), OFF, STL (ascii, binary),
glTF 2.0 (``.gltf`` with external or embedded buffers, and ``.glb``).  Formats written:
OBJ, PLY (binary little endian), GLB and ``.gltf`` (buffers embedded).

What the readers do:

* Polygons with more than three corners are fan-triangulated in place,
  ``(v0, v1, v2), (v0, v2, v3), ...``, with a warning naming the file.
* Degenerate triangles are kept.  Unreferenced vertices are kept.
* Refused with :class:`~meshopt_batch.errors.MeshError` (one line naming the file and the
  problem): unknown or unreadable formats, empty meshes, point clouds, files with lines
  only, NaN/inf positions, indices out of range.
* OBJ: a position used with several different ``vt``/``vn`` combinations keeps its index
  for the first combination met; every other combination becomes a copy appended after
  the file's vertices (a warning says how many).  Vertex colours (``v x y z r g b``) are
  read.  STL has no index buffer: its ``3T`` corners are ``3T`` vertices, nothing merged.
* glTF: every triangle primitive is its own :class:`Mesh` (its own index buffer), named
  after its mesh (``name[p]`` when the mesh has several primitives), positions in the
  mesh's local space; the index accessor type is kept (uint8 is read as uint16).
  Triangle strips and fans are converted to lists (warning); points/lines primitives are
  skipped (warning).  ``meta`` records the mesh/primitive numbers, material, the world
  matrix of the first node using the mesh, and that texture coordinates have their origin
  at the top left (glTF's convention; OBJ and PLY use the bottom left, and the writers
  flip ``v`` when a mesh goes from one convention to the other).

:func:`load_mesh` returns one mesh: for a glTF with several triangle primitives, the
primitives are placed with their node transforms and concatenated (vertex buffers
appended, indices offset; ``meta["parts"]`` says where each one went).  Use
:func:`load_meshes` to keep one index buffer per draw, as a GPU sees them.

:func:`save_mesh` writes atomically (a temporary file in the target directory, then
``os.replace``): on any error no output file is left and an existing file is untouched.
"""

from __future__ import annotations

import base64
import copy
import json
import os
import re
import struct
import tempfile
import urllib.parse
import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .errors import MeshError
from .mesh import ATTR_COLOR, ATTR_NORMAL, ATTR_UV, Mesh, concatenate, fit_index_dtype

__all__ = ["LOAD_FORMATS", "SAVE_FORMATS", "load_mesh", "load_meshes", "save_mesh"]

LOAD_FORMATS = (".obj", ".ply", ".off", ".stl", ".gltf", ".glb")
SAVE_FORMATS = (".obj", ".ply", ".glb", ".gltf")

UV_TOP_LEFT = "top-left"  # meta["uv_origin"] of meshes read from glTF


class _Refuse(Exception):
    """Raised inside readers/writers with a message; becomes MeshError('<file>: <message>')."""


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


# =========================================================================== public API
def load_meshes(path: str | os.PathLike) -> list[Mesh]:
    """Every mesh (index buffer) in a file, in file order.

    Returns one mesh for OBJ, PLY, OFF and STL, and one per triangle primitive for glTF.
    Raises :class:`MeshError` naming the file when it cannot be used.
    """
    path = Path(path)
    ext = path.suffix.lower()
    if ext not in _READERS:
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
        meshes = _READERS[ext](data, path)
    except MeshError:
        raise
    except _Refuse as exc:
        raise MeshError(f"{path}: {_one_line(exc)}") from None
    except (ValueError, IndexError, KeyError, TypeError, struct.error, UnicodeDecodeError,
            OverflowError, json.JSONDecodeError) as exc:
        raise MeshError(f"{path}: not a readable {ext[1:].upper()} file ({_one_line(exc)})") from None
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
    """
    meshes = [_apply_world_matrix(m) for m in load_meshes(path)]
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
    The write is atomic.  Returns the path written.
    """
    path = Path(path)
    meshes = [mesh_or_list] if isinstance(mesh_or_list, Mesh) else list(mesh_or_list)
    ext = path.suffix.lower()
    if ext not in _WRITERS:
        raise MeshError(f"{path}: cannot save {ext or '(no extension)'!r}; writable: {', '.join(SAVE_FORMATS)}")
    if not meshes or not all(isinstance(m, Mesh) for m in meshes):
        raise MeshError(f"{path}: nothing to save (expected a Mesh or a list of Mesh)")
    for m in meshes:
        m.validate(source=f"{path} [{m.name}]" if m.name else str(path))
    if source is not None and ext not in (".glb", ".gltf"):
        raise MeshError(f"{path}: source= keeps a glTF file's structure; save to .glb or .gltf")
    try:
        if ext in (".glb", ".gltf"):
            data = _write_gltf(meshes, path, Path(source) if source is not None else None)
        else:
            data = _WRITERS[ext](meshes, path)
    except MeshError:
        raise
    except _Refuse as exc:
        raise MeshError(f"{path}: {_one_line(exc)}") from None
    _atomic_write(path, data)
    return path


def _atomic_write(path: Path, data: bytes) -> None:
    directory = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=directory)
    except OSError as exc:
        raise MeshError(f"{path}: cannot write: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise MeshError(f"{path}: cannot write: {exc.strerror or exc}") from None
        raise


# ====================================================================== shared helpers
def _fan_triangles(sizes: np.ndarray, corners: np.ndarray) -> np.ndarray:
    """Fan-triangulate polygons given by ``sizes`` (>= 3 each) over the flat ``corners``."""
    sizes = np.asarray(sizes, dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    ntri = sizes - 2
    first = np.repeat(starts, ntri)
    # k = 1..n-2 within each polygon
    k = np.arange(int(ntri.sum()), dtype=np.int64) - np.repeat(np.cumsum(ntri) - ntri, ntri) + 1
    corners = np.asarray(corners)
    return np.stack([corners[first], corners[first + k], corners[first + k + 1]], axis=1)


def _polygons_to_triangles(sizes: np.ndarray, corners: np.ndarray, path: Path) -> np.ndarray:
    """Triangles from polygon lists; warns about fans and dropped lines/points."""
    sizes = np.asarray(sizes, dtype=np.int64)
    small = sizes < 3
    if small.any():
        if small.all():
            raise _Refuse(f"no triangles: all {sizes.size} faces have fewer than 3 corners (lines/points only)")
        warnings.warn(f"{path}: {int(small.sum())} face(s) with fewer than 3 corners ignored", stacklevel=4)
        keep = np.repeat(~small, sizes)
        corners = np.asarray(corners)[keep]
        sizes = sizes[~small]
    if sizes.size and (sizes == 3).all():
        return np.asarray(corners).reshape(-1, 3)
    if sizes.size:
        warnings.warn(
            f"{path}: {int((sizes > 3).sum())} polygon(s) with more than 3 corners were "
            f"fan-triangulated (v0,v1,v2),(v0,v2,v3),...",
            stacklevel=4,
        )
    return _fan_triangles(sizes, corners)


def _check_indices(tris: np.ndarray, nverts: int, what: str = "vertex") -> None:
    if tris.size == 0:
        return
    lo, hi = int(tris.min()), int(tris.max())
    if lo < 0 or hi >= nverts:
        bad = lo if lo < 0 else hi
        raise _Refuse(f"{what} index {bad} out of range (the file has {nverts} vertices)")


def _uv_flip(attrs: dict[str, np.ndarray], keys: Iterable[str]) -> dict[str, np.ndarray]:
    out = dict(attrs)
    for k in keys:
        uv = np.array(out[k], dtype=np.float32 if out[k].dtype.kind != "f" else out[k].dtype)
        if uv.ndim == 2 and uv.shape[1] >= 2:
            uv[:, 1] = 1 - uv[:, 1]
            out[k] = uv
    return out


def _is_uv_key(k: str) -> bool:
    return re.fullmatch(r"uv\d*", k) is not None


def _bottom_left_attributes(mesh: Mesh) -> dict[str, np.ndarray]:
    """Attributes with texture coordinates in OBJ/PLY convention (origin bottom left)."""
    if mesh.meta.get("uv_origin") == UV_TOP_LEFT:
        return _uv_flip(dict(mesh.attributes), [k for k in mesh.attributes if _is_uv_key(k)])
    return dict(mesh.attributes)


# =============================================================================== PLY
_PLY_TYPES = {
    "char": "i1", "int8": "i1", "uchar": "u1", "uint8": "u1",
    "short": "i2", "int16": "i2", "ushort": "u2", "uint16": "u2",
    "int": "i4", "int32": "i4", "uint": "u4", "uint32": "u4",
    "float": "f4", "float32": "f4", "double": "f8", "float64": "f8",
}
_PLY_NAMES = {"i1": "char", "u1": "uchar", "i2": "short", "u2": "ushort",
              "i4": "int", "u4": "uint", "f4": "float", "f8": "double"}
_PLY_UV_PAIRS = (("s", "t"), ("u", "v"), ("texture_u", "texture_v"), ("texture_s", "texture_t"))


def _ply_header(data: bytes) -> tuple[str, list[dict], int]:
    if not data.startswith(b"ply"):
        raise _Refuse("not a PLY file (no 'ply' magic)")
    end = re.search(rb"end_header[ \t]*\r?\n", data)
    if end is None:
        raise _Refuse("PLY header has no end_header")
    header = data[: end.start()].decode("ascii", errors="replace").splitlines()
    fmt = None
    elements: list[dict] = []
    for line in header[1:]:
        tok = line.split()
        if not tok or tok[0] in ("comment", "obj_info"):
            continue
        if tok[0] == "format":
            fmt = tok[1]
        elif tok[0] == "element":
            elements.append({"name": tok[1], "count": int(tok[2]), "props": []})
        elif tok[0] == "property":
            if not elements:
                raise _Refuse("PLY property before any element")
            if tok[1] == "list":
                elements[-1]["props"].append((tok[4], _PLY_TYPES[tok[2]], _PLY_TYPES[tok[3]]))
            else:
                elements[-1]["props"].append((tok[2], _PLY_TYPES[tok[1]], None))
        else:
            raise _Refuse(f"unexpected PLY header line {line.strip()!r}")
    if fmt not in ("ascii", "binary_little_endian", "binary_big_endian"):
        raise _Refuse(f"unknown PLY format {fmt!r}")
    return fmt, elements, end.end()


def _ply_read_binary_element(buf: memoryview, pos: int, el: dict, endian: str) -> tuple[dict, int]:
    """Columns of one binary element; list properties give (sizes, flat values)."""
    count = el["count"]
    props = el["props"]
    if all(p[2] is None for p in props):
        dt = np.dtype([(f"p{i}", endian + p[1]) for i, p in enumerate(props)])
        need = dt.itemsize * count
        if pos + need > len(buf):
            raise _Refuse(f"PLY data ends inside element {el['name']!r}")
        rec = np.frombuffer(buf, dtype=dt, count=count, offset=pos)
        return {p[0]: rec[f"p{i}"] for i, p in enumerate(props)}, pos + need
    # Fast path: every list has the same length as the first record's.
    sizes0: list[int] = []
    off = pos
    for name, t, lt in props:
        if lt is None:
            off += np.dtype(t).itemsize
        else:
            if off + np.dtype(t).itemsize > len(buf):
                raise _Refuse(f"PLY data ends inside element {el['name']!r}")
            n = int(np.frombuffer(buf, dtype=endian + t, count=1, offset=off)[0]) if count else 0
            sizes0.append(n)
            off += np.dtype(t).itemsize + n * np.dtype(lt).itemsize
    fields = []
    li = 0
    for i, (name, t, lt) in enumerate(props):
        if lt is None:
            fields.append((f"p{i}", endian + t))
        else:
            fields.append((f"n{i}", endian + t))
            if sizes0[li]:
                fields.append((f"p{i}", endian + lt, (sizes0[li],)))
            li += 1
    dt = np.dtype(fields)
    if pos + dt.itemsize * count <= len(buf) and count:
        rec = np.frombuffer(buf, dtype=dt, count=count, offset=pos)
        uniform = all(
            (rec[f"n{i}"] == rec[f"n{i}"][0]).all() for i, p in enumerate(props) if p[2] is not None
        )
        if uniform:
            cols: dict = {}
            for i, (name, t, lt) in enumerate(props):
                if lt is None:
                    cols[name] = rec[f"p{i}"]
                else:
                    n = int(rec[f"n{i}"][0])
                    vals = rec[f"p{i}"].reshape(count, -1) if n else np.zeros((count, 0), lt)
                    cols[name] = (np.full(count, n, np.int64), vals.reshape(-1))
            return cols, pos + dt.itemsize * count
    if len(props) == 1:  # one list of varying length (n-gon faces): walk the counts only
        name, t, lt = props[0]
        value, end = _ply_walk_list(buf, pos, count, np.dtype(endian + t), np.dtype(endian + lt), el["name"])
        return {name: value}, end
    # Slow path: lists of varying length with other properties, one record at a time.
    sizes: dict[str, list[int]] = {p[0]: [] for p in props if p[2] is not None}
    chunks: dict[str, list[np.ndarray]] = {p[0]: [] for p in props if p[2] is not None}
    scalars: dict[str, list] = {p[0]: [] for p in props if p[2] is None}
    readers = []
    for name, t, lt in props:
        readers.append((name, np.dtype(endian + t), np.dtype(endian + lt) if lt else None))
    for _ in range(count):
        for name, tdt, ldt in readers:
            if pos + tdt.itemsize > len(buf):
                raise _Refuse(f"PLY data ends inside element {el['name']!r}")
            v = np.frombuffer(buf, dtype=tdt, count=1, offset=pos)[0]
            pos += tdt.itemsize
            if ldt is None:
                scalars[name].append(v)
            else:
                n = int(v)
                if n < 0 or pos + n * ldt.itemsize > len(buf):
                    raise _Refuse(f"PLY data ends inside element {el['name']!r}")
                chunks[name].append(np.frombuffer(buf, dtype=ldt, count=n, offset=pos))
                sizes[name].append(n)
                pos += n * ldt.itemsize
    cols = {}
    for name, t, lt in props:
        if lt is None:
            cols[name] = np.asarray(scalars[name], dtype=endian + t)
        else:
            flat = np.concatenate(chunks[name]) if chunks[name] else np.zeros(0, lt)
            cols[name] = (np.asarray(sizes[name], np.int64), flat)
    return cols, pos


def _ply_walk_list(buf: memoryview, pos: int, count: int, tdt: np.dtype, ldt: np.dtype, what: str):
    """(sizes, flat values) of ``count`` binary records holding one list each."""
    cs, isz = tdt.itemsize, ldt.itemsize
    order = "big" if tdt.byteorder == ">" else "little"
    sizes = np.empty(count, np.int64)
    starts = np.empty(count, np.int64)
    end = len(buf)
    off = pos
    for i in range(count):
        if off + cs > end:
            raise _Refuse(f"PLY data ends inside element {what!r}")
        n = buf[off] if cs == 1 else int.from_bytes(buf[off : off + cs], order, signed=tdt.kind == "i")
        if n < 0:
            raise _Refuse(f"negative list length in element {what!r}")
        sizes[i] = n
        starts[i] = off + cs
        off += cs + n * isz
    if off > end:
        raise _Refuse(f"PLY data ends inside element {what!r}")
    within = np.arange(int(sizes.sum()), dtype=np.int64) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    byte_at = np.repeat(starts, sizes) + within * isz
    raw = np.frombuffer(buf, np.uint8)[byte_at[:, None] + np.arange(isz)]
    return (sizes, raw.reshape(-1).view(ldt)), off


def _ply_read_ascii_element(tokens: list[bytes], pos: int, el: dict) -> tuple[dict, int]:
    count = el["count"]
    props = el["props"]
    if all(p[2] is None for p in props):
        k = len(props)
        if pos + k * count > len(tokens):
            raise _Refuse(f"PLY data ends inside element {el['name']!r}")
        block = np.array(tokens[pos : pos + k * count], dtype=np.float64).reshape(count, k)
        cols = {p[0]: block[:, i].astype(p[1]) for i, p in enumerate(props)}
        return cols, pos + k * count
    # Fast path: uniform record length (e.g. every face "3 a b c").
    n_first = []
    off = pos
    for name, t, lt in props:
        if lt is None:
            off += 1
        else:
            n = int(tokens[off]) if count else 0
            n_first.append(n)
            off += 1 + n
    rec_len = off - pos
    if count and pos + rec_len * count <= len(tokens):
        block = np.array(tokens[pos : pos + rec_len * count], dtype=np.float64).reshape(count, rec_len)
        col = 0
        ok = True
        li = 0
        for name, t, lt in props:
            if lt is not None:
                if not (block[:, col] == n_first[li]).all():
                    ok = False
                    break
                col += 1 + n_first[li]
                li += 1
            else:
                col += 1
        if ok:
            cols = {}
            col = 0
            li = 0
            for name, t, lt in props:
                if lt is None:
                    cols[name] = block[:, col].astype(t)
                    col += 1
                else:
                    n = n_first[li]
                    vals = block[:, col + 1 : col + 1 + n]
                    cols[name] = (np.full(count, n, np.int64), vals.astype(lt).reshape(-1))
                    col += 1 + n
                    li += 1
            return cols, pos + rec_len * count
    sizes: dict[str, list[int]] = {p[0]: [] for p in props if p[2] is not None}
    flat: dict[str, list] = {p[0]: [] for p in props if p[2] is not None}
    scalars: dict[str, list] = {p[0]: [] for p in props if p[2] is None}
    for _ in range(count):
        for name, t, lt in props:
            if lt is None:
                scalars[name].append(float(tokens[pos]))
                pos += 1
            else:
                n = int(tokens[pos])
                sizes[name].append(n)
                flat[name].extend(tokens[pos + 1 : pos + 1 + n])
                if pos + 1 + n > len(tokens):
                    raise _Refuse(f"PLY data ends inside element {el['name']!r}")
                pos += 1 + n
    cols = {}
    for name, t, lt in props:
        if lt is None:
            cols[name] = np.asarray(scalars[name], dtype=np.float64).astype(t)
        else:
            cols[name] = (
                np.asarray(sizes[name], np.int64),
                np.asarray(np.array(flat[name], dtype=np.float64), dtype=lt),
            )
    return cols, pos


def _ply_vertex_attributes(cols: dict, order: list[str], path: Path) -> dict[str, np.ndarray]:
    used = {"x", "y", "z"}
    attrs: dict[str, np.ndarray] = {}

    def take(key: str, names: Sequence[str]) -> None:
        arrs = [cols[n] for n in names]
        dt = np.result_type(*[a.dtype for a in arrs])
        attrs[key] = np.stack([a.astype(dt) for a in arrs], axis=1)
        used.update(names)

    if all(n in cols for n in ("nx", "ny", "nz")):
        take(ATTR_NORMAL, ("nx", "ny", "nz"))
    for pair in _PLY_UV_PAIRS:
        if all(n in cols for n in pair):
            take(ATTR_UV, pair)
            break
    if all(n in cols for n in ("red", "green", "blue")):
        take(ATTR_COLOR, ("red", "green", "blue", "alpha") if "alpha" in cols else ("red", "green", "blue"))
    # name_0, name_1, ... name_{k-1} (k >= 2, consecutive) form one (V, k) attribute
    rest = [n for n in order if n not in used]
    i = 0
    while i < len(rest):
        m = re.fullmatch(r"(.+)_0", rest[i])
        if m:
            base = m.group(1)
            j = i
            while j < len(rest) and rest[j] == f"{base}_{j - i}":
                j += 1
            if j - i >= 2 and base not in attrs and base not in cols:
                take(base, rest[i:j])
                i = j
                continue
        if rest[i] not in attrs:
            attrs[rest[i]] = np.asarray(cols[rest[i]])
        i += 1
    return {k: np.ascontiguousarray(v.astype(v.dtype.newbyteorder("="))) for k, v in attrs.items()}


def _read_ply(data: bytes, path: Path) -> list[Mesh]:
    fmt, elements, start = _ply_header(data)
    names = [e["name"] for e in elements]
    if "vertex" not in names:
        raise _Refuse("PLY file has no vertex element")
    endian = "<" if fmt == "binary_little_endian" else ">"
    tokens = data[start:].split() if fmt == "ascii" else None
    buf = memoryview(data)
    pos = start if tokens is None else 0
    cols_by_el: dict[str, tuple[dict, list]] = {}
    for el in elements:
        if "vertex" in cols_by_el and "face" in cols_by_el:
            break
        if tokens is None:
            cols, pos = _ply_read_binary_element(buf, pos, el, endian)
        else:
            cols, pos = _ply_read_ascii_element(tokens, pos, el)
        cols_by_el[el["name"]] = (cols, [p[0] for p in el["props"]])
    vcols, vorder = cols_by_el["vertex"]
    vcount = elements[names.index("vertex")]["count"]
    if vcount == 0:
        raise _Refuse("empty mesh (0 vertices)")
    if not all(n in vcols for n in ("x", "y", "z")):
        raise _Refuse("PLY vertex element has no x, y, z properties")
    positions = np.stack([vcols[n].astype(np.float32) for n in ("x", "y", "z")], axis=1)
    attrs = _ply_vertex_attributes(vcols, vorder, path)
    face = cols_by_el.get("face")
    if face is None or elements[names.index("face")]["count"] == 0:
        raise _Refuse(f"no faces: a point cloud ({vcount} vertices)")
    fcols, forder = face
    key = next((k for k in ("vertex_indices", "vertex_index") if k in fcols and isinstance(fcols[k], tuple)), None)
    if key is None:
        raise _Refuse("PLY face element has no vertex_indices list")
    ignored = [k for k in forder if k != key]
    if ignored:
        warnings.warn(f"{path}: per-face PLY properties ignored: {', '.join(ignored)}", stacklevel=3)
    ltype = next(p[2] for p in elements[names.index("face")]["props"] if p[0] == key)
    sizes, flat = fcols[key]
    flat = np.asarray(flat).astype(np.int64)
    _check_indices(flat, vcount)
    tris = _polygons_to_triangles(sizes, flat, path)
    index_dtype = np.uint16 if np.dtype(ltype).itemsize <= 2 else np.uint32
    return [Mesh(positions, tris, name=path.stem, attributes=attrs, index_dtype=index_dtype,
                 meta={"source": str(path)})]


def _ply_columns(mesh: Mesh) -> list[tuple[str, np.ndarray]]:
    """(property name, 1-D array) in write order for the vertex element."""
    attrs = _bottom_left_attributes(mesh)
    cols = [(n, mesh.positions[:, i]) for i, n in enumerate("xyz")]
    special = {ATTR_NORMAL: ("nx", "ny", "nz"), ATTR_UV: ("s", "t"),
               ATTR_COLOR: ("red", "green", "blue", "alpha")}
    for key, a in attrs.items():
        a = _ply_dtype(key, a)
        a2 = a.reshape(a.shape[0], -1)
        names = special.get(key)
        if names is not None and a2.shape[1] <= len(names) and a.ndim == 2:
            cols += [(names[i], a2[:, i]) for i in range(a2.shape[1])]
        elif a.ndim == 1:
            cols.append((key, a))
        else:
            cols += [(f"{key}_{i}", a2[:, i]) for i in range(a2.shape[1])]
    return cols


def _ply_dtype(key: str, a: np.ndarray) -> np.ndarray:
    if a.dtype == np.bool_:
        return a.astype(np.uint8)
    if a.dtype.kind in "iu" and a.dtype.itemsize > 4:
        info = np.iinfo(np.int32)
        if a.size and (a.min() < info.min or a.max() > info.max):
            return a.astype(np.float64)
        return a.astype(np.int32)
    if a.dtype.kind == "f" and a.dtype.itemsize not in (4, 8):
        return a.astype(np.float32)
    if a.dtype.kind not in "iuf":
        raise _Refuse(f"attribute {key!r} of dtype {a.dtype} cannot be written to PLY")
    return a


def _write_ply(meshes: list[Mesh], path: Path) -> bytes:
    if len(meshes) > 1:
        warnings.warn(f"{path}: PLY holds one mesh; {len(meshes)} meshes were concatenated", stacklevel=3)
    mesh = _one_mesh(meshes)
    for name in mesh.attributes:
        if not re.fullmatch(r"\S+", name):
            raise _Refuse(f"attribute name {name!r} cannot be a PLY property name")
    cols = _ply_columns(mesh)
    V, T = mesh.vertex_count, mesh.triangle_count
    idx = fit_index_dtype(mesh.index_dtype, V)
    head = ["ply", "format binary_little_endian 1.0", "comment written by meshopt-batch",
            f"element vertex {V}"]
    vdt = np.dtype([(n, "<" + a.dtype.str[1:]) for n, a in cols])
    head += [f"property {_PLY_NAMES[a.dtype.str[1:]]} {n}" for n, a in cols]
    head += [f"element face {T}", f"property list uchar {_PLY_NAMES[idx.str[1:]]} vertex_indices",
             "end_header"]
    vrec = np.empty(V, dtype=vdt)
    for n, a in cols:
        vrec[n] = a
    frec = np.empty(T, dtype=np.dtype([("n", "u1"), ("i", "<" + idx.str[1:], (3,))]))
    frec["n"] = 3
    frec["i"] = mesh.triangles
    return ("\n".join(head) + "\n").encode("ascii") + vrec.tobytes() + frec.tobytes()


# =============================================================================== OBJ
_OBJ_EXT = "# meshopt-batch"


def _parse_numbers(tokens: list[str], dtype) -> np.ndarray:
    """Numbers from text tokens (fast C parser; any bad token raises ValueError)."""
    if not tokens:
        return np.zeros(0, dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        out = np.fromstring(" ".join(tokens), dtype=dtype, sep=" ")
    if out.size != len(tokens):
        bad = next((t for t in tokens if not re.fullmatch(r"[-+0-9.eEinfatyINFATY]+", t)), tokens[0])
        raise ValueError(f"not a number: {bad!r}")
    return out


def _obj_rows(rows: list[str]) -> tuple[list[str], list[int]]:
    """All tokens of the rows and the number of tokens of each row."""
    tokens = " ".join(rows).split()
    widths = [r.count(" ") + 1 for r in rows]  # exact for single-spaced rows...
    if sum(widths) != len(tokens):  # ...else count properly
        widths = [len(r.split()) for r in rows]
    return tokens, widths


def _obj_table(tokens: list[str], widths: list[int], k: int) -> np.ndarray:
    """``(rows, k)`` float64: the first ``k`` numbers of each row (missing ones are 0)."""
    flat = _parse_numbers(tokens, np.float64)
    w = np.asarray(widths, np.int64)
    if w.size and (w == k).all():
        return flat.reshape(-1, k)
    starts = np.concatenate([[0], np.cumsum(w)[:-1]]).astype(np.int64)
    cols = np.arange(k)
    out = np.zeros((w.size, k))
    ok = cols[None, :] < w[:, None]
    out[ok] = flat[(starts[:, None] + cols[None, :])[ok]]
    return out


def _obj_corners(corners: list[str], sizes: np.ndarray, relative: dict) -> tuple[np.ndarray, ...]:
    """0-based (v, vt, vn) of every face corner (-1: none) from tokens ``v``, ``v/vt``,
    ``v//vn`` or ``v/vt/vn``; negative (relative) indices resolved by ``relative``."""
    n = len(corners)
    joined = " ".join(corners)
    fields = None
    if "/" not in joined:
        fields = _parse_numbers(corners, np.int64).reshape(n, 1)
    else:
        norm = joined.replace("//", "/0/")
        slashes = norm.count("/")
        for k in (1, 2):
            if slashes == k * n:
                toks = norm.replace("/", " ").split()
                if len(toks) == (k + 1) * n:
                    fields = _parse_numbers(toks, np.int64).reshape(n, k + 1)
                break
        if fields is None:  # corners of different forms: one at a time
            fields = np.zeros((n, 3), np.int64)
            for i, c in enumerate(corners):
                for j, f in enumerate(c.split("/")[:3]):
                    fields[i, j] = int(f) if f else 0
    if fields.shape[1] < 3:
        fields = np.concatenate([fields, np.zeros((n, 3 - fields.shape[1]), np.int64)], axis=1)
    if (fields[:, 0] == 0).any():
        raise _Refuse("OBJ vertex index 0 (indices start at 1)")
    out = np.where(fields > 0, fields - 1, -1)
    if relative and (fields < 0).any():
        counts = np.zeros((len(sizes), 3), np.int64)
        faces = np.fromiter(relative.keys(), np.int64, len(relative))
        counts[faces] = np.array(list(relative.values()), np.int64)
        per_corner = np.repeat(counts, sizes, axis=0)
        out = np.where(fields < 0, per_corner + fields, out)
        if (out[fields < 0] < 0).any():
            raise _Refuse("relative OBJ index points before the first element")
    return out[:, 0], out[:, 1], out[:, 2]


def _read_obj(data: bytes, path: Path) -> list[Mesh]:
    text = data.decode("utf-8", errors="replace")
    if "\x00" in text[:4096]:
        raise _Refuse("not a text OBJ file (binary data)")
    if "\\\n" in text or "\\\r\n" in text:
        text = re.sub(r"\\\r?\n", " ", text)
    text = text.replace("\t", " ")
    rows: dict[str, list[str]] = {"v": [], "vt": [], "vn": [], "f": []}
    v_rows, f_rows = rows["v"], rows["f"]
    relative: dict[int, tuple[int, int, int]] = {}  # face -> (#v, #vt, #vn) before it
    ext_decl: dict[str, tuple[str, str, int]] = {}
    ext_rows: dict[str, list[str]] = {}
    index_dtype = np.uint32
    n_lines = 0
    for line in text.splitlines():
        head = line[:2]
        if head == "f ":
            if "-" in line:
                relative[len(f_rows)] = (len(v_rows), len(rows["vt"]), len(rows["vn"]))
            f_rows.append(line[2:])
        elif head == "v ":
            v_rows.append(line[2:])
        elif not line or line[0] == "#":
            if line.startswith("#@"):
                tag, _, rest = line[2:].partition(" ")
                if tag in ext_rows:
                    ext_rows[tag].append(rest)
            elif line.startswith(_OBJ_EXT):
                tok = line[len(_OBJ_EXT):].split()
                if len(tok) == 2 and tok[0] == "index_dtype" and tok[1] in ("uint16", "uint32"):
                    index_dtype = np.dtype(tok[1])
                elif len(tok) >= 5 and tok[0] == "attribute":
                    ext_decl[tok[1]] = (" ".join(tok[4:]), tok[2], int(tok[3]))
                    ext_rows[tok[1]] = []
        else:
            key, _, rest = line.strip().partition(" ")
            if key == "f" and "-" in rest:
                relative[len(f_rows)] = (len(v_rows), len(rows["vt"]), len(rows["vn"]))
            if key in rows:
                rows[key].append(rest)
            elif key == "l":
                n_lines += 1
    v_tok, v_width = _obj_rows(v_rows)
    vt_tok, vt_width = _obj_rows(rows["vt"])
    vn_tok, vn_width = _obj_rows(rows["vn"])
    corners, sizes = _obj_rows(f_rows)
    if not v_width:
        raise _Refuse("empty mesh (no 'v' vertices)")
    if not sizes:
        what = "lines only" if n_lines else "a point cloud"
        raise _Refuse(f"no faces: {what} ({len(v_width)} vertices)")
    if min(v_width) < 3:
        raise _Refuse("an OBJ 'v' line has fewer than 3 coordinates")
    w = v_width[0] if len(set(v_width)) == 1 else 3  # mixed widths: x y z only
    vals = _obj_table(v_tok, v_width, w)
    positions = vals[:, :3].astype(np.float32)
    V = positions.shape[0]
    per_vertex: dict[str, np.ndarray] = {}
    if w in (6, 7):
        per_vertex[ATTR_COLOR] = vals[:, w - 3 :].astype(np.float32)
    cv_a, cvt_a, cvn_a = _obj_corners(corners, np.asarray(sizes), relative)
    _check_indices(cv_a, V)
    _check_indices(cvt_a[cvt_a >= 0], len(vt_width), "texture coordinate")
    _check_indices(cvn_a[cvn_a >= 0], len(vn_width), "normal")
    has_vt = bool((cvt_a >= 0).any())
    has_vn = bool((cvn_a >= 0).any())
    vertex_of_corner = cv_a
    source = np.arange(V, dtype=np.int64)  # source `v` record of each output vertex
    corner_vt = np.full(V, -1, np.int64)
    corner_vn = np.full(V, -1, np.int64)
    if has_vt or has_vn:
        combo = np.stack([cv_a, cvt_a, cvn_a], axis=1)
        uniq_v, first = np.unique(cv_a, return_index=True)
        corner_vt[uniq_v] = cvt_a[first]
        corner_vn[uniq_v] = cvn_a[first]
        # Vertices no face uses get no vt/vn from the faces; when every face corner uses the
        # same number for v, vt and vn (as writers of per-vertex data do), so do they.
        unused = np.ones(V, bool)
        unused[uniq_v] = False
        if unused.any():
            for corner, attr_of, n_rows in ((cvt_a, corner_vt, len(vt_width)), (cvn_a, corner_vn, len(vn_width))):
                if n_rows == V and np.array_equal(corner, cv_a):
                    attr_of[unused] = np.flatnonzero(unused)
        mismatch = (cvt_a != corner_vt[cv_a]) | (cvn_a != corner_vn[cv_a])
        if mismatch.any():
            extra = combo[mismatch]
            uniq, first_e, inv = np.unique(extra, axis=0, return_index=True, return_inverse=True)
            rank = np.empty(len(uniq), np.int64)
            rank[np.argsort(first_e, kind="stable")] = np.arange(len(uniq))
            vertex_of_corner = cv_a.copy()
            vertex_of_corner[mismatch] = V + rank[inv.reshape(-1)]
            ordered = uniq[np.argsort(first_e, kind="stable")]
            source = np.concatenate([source, ordered[:, 0]])
            corner_vt = np.concatenate([corner_vt, ordered[:, 1]])
            corner_vn = np.concatenate([corner_vn, ordered[:, 2]])
            warnings.warn(
                f"{path}: {len(uniq)} vertex copies appended after the {V} OBJ vertices "
                f"(positions used with several texture coordinates/normals)",
                stacklevel=3,
            )
    attrs: dict[str, np.ndarray] = {}
    if has_vn:
        vn = _obj_table(vn_tok, vn_width, 3).astype(np.float32)
        nrm = np.zeros((source.size, 3), np.float32)
        ok = corner_vn >= 0
        nrm[ok] = vn[corner_vn[ok]]
        attrs[ATTR_NORMAL] = nrm
    if has_vt:
        vt = _obj_table(vt_tok, vt_width, 2).astype(np.float32)
        uv = np.zeros((source.size, 2), np.float32)
        ok = corner_vt >= 0
        uv[ok] = vt[corner_vt[ok]]
        attrs[ATTR_UV] = uv
    for key, a in per_vertex.items():
        attrs[key] = a[source]
    for tag, (name, dt, ncomp) in ext_decl.items():
        rows = ext_rows[tag]
        if len(rows) != V:
            warnings.warn(f"{path}: attribute {name!r} has {len(rows)} rows for {V} vertices; ignored", stacklevel=3)
            continue
        dtype = np.dtype(dt)
        arr = _parse_numbers(" ".join(rows).split(), np.float64 if dtype.kind == "f" else np.int64)
        arr = arr.astype(dtype).reshape((V, ncomp) if ncomp else V)
        attrs[name] = arr[source]
    tris = _polygons_to_triangles(np.asarray(sizes), vertex_of_corner, path)
    return [Mesh(positions[source], tris, name=path.stem, attributes=attrs,
                 index_dtype=fit_index_dtype(index_dtype, source.size), meta={"source": str(path)})]


def _fmt_rows(prefix: str, a: np.ndarray, fmt: str) -> str:
    """Lines ``prefix v0 v1 ...`` for each row of ``a`` (one big %-format, fast)."""
    a = np.asarray(a)
    if a.ndim == 1:
        a = a[:, None]
    if a.shape[0] == 0:
        return ""
    line = prefix + " ".join([fmt] * a.shape[1]) + "\n"
    return (line * a.shape[0]) % tuple(a.reshape(-1).tolist())


def _write_obj(meshes: list[Mesh], path: Path) -> bytes:
    whole = _one_mesh(meshes)
    V = whole.vertex_count
    attrs = _bottom_left_attributes(whole)
    out = ["# written by meshopt-batch\n"]
    if fit_index_dtype(whole.index_dtype, V) == np.uint16:
        out.append(f"{_OBJ_EXT} index_dtype uint16\n")
    # normal / uv / colour go to vn / vt / v lines; whatever those lines cannot hold
    # exactly (other dtypes, alpha, other attributes) also goes to "#@" comment lines.
    standard, ext = {}, {}
    for key, a in attrs.items():
        if a.dtype.kind not in "biuf":
            raise _Refuse(f"attribute {key!r} of dtype {a.dtype} cannot be written to OBJ")
        width = {ATTR_NORMAL: (3,), ATTR_UV: (2,), ATTR_COLOR: (3, 4)}.get(key, ())
        if a.ndim == 2 and a.shape[1] in width:
            standard[key] = a
            if a.dtype == np.float32 and a.shape[1] != 4:
                continue
        ext[key] = a
    for i, (key, a) in enumerate(ext.items()):
        ncomp = 0 if a.ndim == 1 else int(np.prod(a.shape[1:]))
        dt = np.dtype(np.uint8) if a.dtype == np.bool_ else a.dtype
        out.append(f"{_OBJ_EXT} attribute a{i} {dt.name} {ncomp} {key}\n")
    fmt = lambda a: "%.17g" if a.dtype == np.float64 else "%.9g"
    v = whole.positions.astype(np.float64)
    color = standard.get(ATTR_COLOR)
    if color is not None:
        c = color[:, :3].astype(np.float64)
        if color.dtype.kind in "iu":
            c = c / float(np.iinfo(color.dtype).max)
        v = np.concatenate([v, c], axis=1)
    out.append(_fmt_rows("v ", v, "%.9g"))
    if ATTR_UV in standard:
        out.append(_fmt_rows("vt ", standard[ATTR_UV].astype(np.float64), fmt(standard[ATTR_UV])))
    if ATTR_NORMAL in standard:
        out.append(_fmt_rows("vn ", standard[ATTR_NORMAL].astype(np.float64), fmt(standard[ATTR_NORMAL])))
    for i, (key, a) in enumerate(ext.items()):
        rows = a.reshape(V, -1)
        if a.dtype.kind == "f":
            out.append(_fmt_rows(f"#@a{i} ", rows.astype(np.float64), fmt(a)))
        else:
            out.append(_fmt_rows(f"#@a{i} ", rows.astype(np.int64), "%d"))
    has_uv, has_n = ATTR_UV in standard, ATTR_NORMAL in standard
    reps = 1 + has_uv + has_n
    corner = "/".join(["%d"] * reps) if has_uv else "%d//%d" if has_n else "%d"
    t1 = whole.triangles.astype(np.int64) + 1
    bounds = np.cumsum([0] + [m.triangle_count for m in meshes])
    for mi, m in enumerate(meshes):
        if len(meshes) > 1:
            out.append(f"o {m.name or f'mesh{mi}'}\n")
        block = np.repeat(t1[bounds[mi] : bounds[mi + 1]].reshape(-1), reps).reshape(-1, 3 * reps)
        out.append(_fmt_corners(block, corner))
    return "".join(out).encode("utf-8")


def _fmt_corners(block: np.ndarray, corner: str) -> str:
    if block.shape[0] == 0:
        return ""
    line = "f " + " ".join([corner] * 3) + "\n"
    return (line * block.shape[0]) % tuple(block.reshape(-1).tolist())


def _one_mesh(meshes: list[Mesh]) -> Mesh:
    """The meshes concatenated, keeping the texture-coordinate convention of the first."""
    if len(meshes) == 1:
        return meshes[0]
    whole = concatenate(meshes)
    if meshes[0].meta.get("uv_origin"):
        whole = whole.replace(meta=dict(whole.meta, uv_origin=meshes[0].meta["uv_origin"]))
    return whole


# =============================================================================== OFF
def _read_off(data: bytes, path: Path) -> list[Mesh]:
    text = data.decode("utf-8", errors="replace")
    lines = []
    for raw in text.splitlines():
        s = raw.split("#", 1)[0].strip()
        if s:
            lines.append(s)
    if not lines:
        raise _Refuse("empty file")
    head = lines[0].split()
    m = re.fullmatch(r"(ST)?(C)?(N)?(4)?(n)?OFF", head[0])
    if m is None:
        raise _Refuse("not an OFF file (no OFF header)")
    if m.group(4) or m.group(5):
        raise _Refuse(f"{head[0]} (4-D / n-D OFF) is not supported")
    if len(head) > 1 and head[1].upper() == "BINARY":
        raise _Refuse("binary OFF is not supported")
    rest = head[1:]
    li = 1
    if len(rest) < 2:
        rest = lines[1].split()
        li = 2
    nv, nf = int(rest[0]), int(rest[1])
    if nv == 0:
        raise _Refuse("empty mesh (0 vertices)")
    vlines = lines[li : li + nv]
    if len(vlines) < nv:
        raise _Refuse(f"OFF file ends after {len(vlines)} of {nv} vertices")
    vrows = [ln.split() for ln in vlines]
    width = {len(r) for r in vrows}
    if min(width) < 3:
        raise _Refuse("an OFF vertex line has fewer than 3 coordinates")
    attrs: dict[str, np.ndarray] = {}
    if len(width) == 1:
        vals = np.array(vrows, dtype=np.float64)
        col = 3
        if m.group(3) and vals.shape[1] >= col + 3:
            attrs[ATTR_NORMAL] = vals[:, col : col + 3].astype(np.float32)
            col += 3
        ncol = vals.shape[1] - col - (2 if m.group(1) else 0)
        if m.group(2) and ncol in (3, 4):
            c = vals[:, col : col + ncol]
            is_int = all("." not in t and "e" not in t.lower() for t in vrows[0][col : col + ncol])
            attrs[ATTR_COLOR] = c.astype(np.uint8) if is_int and c.max() > 1 else c.astype(np.float32)
            col += ncol
        if m.group(1) and vals.shape[1] >= col + 2:
            attrs[ATTR_UV] = vals[:, col : col + 2].astype(np.float32)
        positions = vals[:, :3].astype(np.float32)
    else:
        positions = np.array([r[:3] for r in vrows], dtype=np.float64).astype(np.float32)
    flines = lines[li + nv : li + nv + nf]
    if len(flines) < nf:
        raise _Refuse(f"OFF file ends after {len(flines)} of {nf} faces")
    if nf == 0:
        raise _Refuse(f"no faces: a point cloud ({nv} vertices)")
    sizes = np.empty(nf, np.int64)
    corners: list[str] = []
    for i, ln in enumerate(flines):
        tok = ln.split()
        n = int(tok[0])
        if len(tok) < 1 + n:
            raise _Refuse(f"OFF face {i} lists {n} corners but has {len(tok) - 1} numbers")
        sizes[i] = n
        corners.extend(tok[1 : 1 + n])
    flat = np.array(corners, dtype=np.int64)
    _check_indices(flat, nv)
    tris = _polygons_to_triangles(sizes, flat, path)
    return [Mesh(positions, tris, name=path.stem, attributes=attrs, meta={"source": str(path)})]


# =============================================================================== STL
def _read_stl(data: bytes, path: Path) -> list[Mesh]:
    binary = True
    if data[:5].lower() == b"solid":
        n = struct.unpack("<I", data[80:84])[0] if len(data) >= 84 else -1
        if not (len(data) >= 84 and 84 + 50 * n == len(data)):
            binary = False
    if binary:
        if len(data) < 84:
            raise _Refuse("not an STL file (too short)")
        n = struct.unpack("<I", data[80:84])[0]
        if len(data) < 84 + 50 * n:
            raise _Refuse(f"binary STL declares {n} triangles but is only {len(data)} bytes")
        rec = np.frombuffer(data, dtype=np.dtype([("n", "<f4", 3), ("v", "<f4", (3, 3)), ("a", "<u2")]),
                            count=n, offset=84)
        positions = rec["v"].reshape(-1, 3).astype(np.float32)
    else:
        text = data.decode("ascii", errors="replace")
        nums = re.findall(r"^\s*vertex\s+(\S+)\s+(\S+)\s+(\S+)", text, flags=re.MULTILINE | re.IGNORECASE)
        if len(nums) % 3:
            raise _Refuse("ASCII STL has a facet without 3 vertices")
        positions = np.array(nums, dtype=np.float64).astype(np.float32).reshape(-1, 3)
    if positions.shape[0] == 0:
        raise _Refuse("empty mesh (no facets)")
    tris = np.arange(positions.shape[0], dtype=np.uint32).reshape(-1, 3)
    return [Mesh(positions, tris, name=path.stem, meta={"source": str(path)})]


# ============================================================================== glTF
_GLB_MAGIC = b"glTF"
_CHUNK_JSON = 0x4E4F534A
_CHUNK_BIN = 0x004E4942
_COMPONENT = {5120: np.int8, 5121: np.uint8, 5122: np.int16, 5123: np.uint16, 5125: np.uint32, 5126: np.float32}
_COMPONENT_OF = {np.dtype(v): k for k, v in _COMPONENT.items()}
_NCOMP = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT2": 4, "MAT3": 9, "MAT4": 16}
_TYPE_OF = {1: "SCALAR", 2: "VEC2", 3: "VEC3", 4: "VEC4", 9: "MAT3", 16: "MAT4"}
_SEMANTIC_WIDTHS = {"NORMAL": (3,), "TANGENT": (4,), "TEXCOORD": (2,), "COLOR": (3, 4),
                    "JOINTS": (4,), "WEIGHTS": (4,)}
_UNSUPPORTED_EXT = {"KHR_draco_mesh_compression", "EXT_meshopt_compression", "KHR_meshopt_compression"}
# Extensions known not to refer to accessors or buffer views: with only these in a file,
# accessors and buffer views that nothing uses any more are dropped on save.
_SAFE_EXT = re.compile(
    r"KHR_materials_\w+|KHR_texture_transform|KHR_lights_punctual|KHR_mesh_quantization|"
    r"KHR_texture_basisu|EXT_texture_webp|EXT_texture_avif|KHR_materials_variants|"
    r"KHR_animation_pointer|KHR_xmp_json_ld|EXT_mesh_gpu_instancing"
)


def _semantic_to_key(sem: str) -> str:
    m = re.fullmatch(r"(TEXCOORD|COLOR|JOINTS|WEIGHTS)_(\d+)", sem)
    if m:
        base = {"TEXCOORD": "uv", "COLOR": "color", "JOINTS": "joints", "WEIGHTS": "weights"}[m.group(1)]
        return base if m.group(2) == "0" else f"{base}{m.group(2)}"
    if sem in ("NORMAL", "TANGENT"):
        return sem.lower()
    if sem.startswith("_"):
        return sem[1:]
    return sem


def _key_to_semantic(key: str) -> str:
    m = re.fullmatch(r"(uv|color|joints|weights)(\d*)", key)
    if m:
        base = {"uv": "TEXCOORD", "color": "COLOR", "joints": "JOINTS", "weights": "WEIGHTS"}[m.group(1)]
        return f"{base}_{m.group(2) or '0'}"
    if key in ("normal", "tangent"):
        return key.upper()
    return "_" + key


def _parse_glb(data: bytes) -> tuple[dict, bytes | None]:
    if len(data) < 20:
        raise _Refuse("truncated GLB (no header)")
    magic, version, length = struct.unpack("<4sII", data[:12])
    if magic != _GLB_MAGIC:
        raise _Refuse("not a GLB file (bad magic)")
    if version != 2:
        raise _Refuse(f"glTF version {version} is not supported (2 is)")
    if length > len(data):
        raise _Refuse(f"truncated GLB ({len(data)} of {length} bytes)")
    pos = 12
    doc = None
    bin_chunk = None
    while pos + 8 <= length:
        clen, ctype = struct.unpack("<II", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + clen]
        if len(body) < clen:
            raise _Refuse("truncated GLB chunk")
        if ctype == _CHUNK_JSON and doc is None:
            doc = json.loads(body.decode("utf-8"))
        elif ctype == _CHUNK_BIN and bin_chunk is None:
            bin_chunk = bytes(body)
        pos += 8 + clen + (-clen % 4 if ctype not in (_CHUNK_JSON, _CHUNK_BIN) else 0)
    if doc is None:
        raise _Refuse("GLB has no JSON chunk")
    return doc, bin_chunk


def _data_uri(uri: str) -> tuple[bytes, str | None]:
    """Contents and media type of a ``data:`` URI."""
    head, _, payload = uri.partition(",")
    raw = base64.b64decode(payload) if head.endswith(";base64") else urllib.parse.unquote_to_bytes(payload)
    return raw, head[5:].split(";")[0] or None


def _load_gltf_document(data: bytes, path: Path) -> tuple[dict, list[bytes]]:
    """The glTF JSON and the bytes of every buffer."""
    if data[:4] == _GLB_MAGIC:
        doc, bin_chunk = _parse_glb(data)
    else:
        if path.suffix.lower() == ".glb":
            raise _Refuse("not a GLB file (bad magic)")
        doc, bin_chunk = json.loads(data.decode("utf-8-sig")), None
    if not isinstance(doc, dict) or "asset" not in doc:
        raise _Refuse("not a glTF 2.0 document (no 'asset')")
    version = str(doc["asset"].get("version", ""))
    if not version.startswith("2."):
        raise _Refuse(f"glTF version {version!r} is not supported (2.x is)")
    required = set(doc.get("extensionsRequired", []))
    bad = sorted(required & _UNSUPPORTED_EXT)
    if bad:
        raise _Refuse(f"uses {', '.join(bad)} (compressed geometry), which is not supported")
    buffers = []
    for i, b in enumerate(doc.get("buffers", [])):
        uri = b.get("uri")
        if uri is None:
            if i != 0 or bin_chunk is None:
                raise _Refuse(f"buffer {i} has no data")
            raw = bin_chunk
        elif uri.startswith("data:"):
            raw, _ = _data_uri(uri)
        else:
            bpath = path.parent / urllib.parse.unquote(uri)
            try:
                raw = bpath.read_bytes()
            except OSError:
                raise _Refuse(f"buffer file {uri!r} is missing or unreadable") from None
        if len(raw) < int(b.get("byteLength", 0)):
            raise _Refuse(f"buffer {i} has {len(raw)} bytes, {b.get('byteLength')} declared")
        buffers.append(raw)
    return doc, buffers


def _view_bytes(doc: dict, buffers: list[bytes], view_index: int) -> tuple[memoryview, int | None]:
    bv = doc["bufferViews"][view_index]
    raw = buffers[bv["buffer"]]
    start = int(bv.get("byteOffset", 0))
    end = start + int(bv["byteLength"])
    if end > len(raw):
        raise _Refuse(f"bufferView {view_index} runs past the end of its buffer")
    return memoryview(raw)[start:end], bv.get("byteStride")


def _read_view_elements(doc, buffers, view_index, offset, count, dtype, ncomp, what):
    view, stride = _view_bytes(doc, buffers, view_index)
    elem = np.dtype(dtype).itemsize * ncomp
    stride = int(stride or elem)
    if count and offset + stride * (count - 1) + elem > len(view):
        raise _Refuse(f"{what} runs past the end of its bufferView")
    if count == 0:
        return np.zeros((0, ncomp), dtype)
    arr = np.ndarray((count, ncomp), dtype=np.dtype(dtype).newbyteorder("<"), buffer=view,
                     offset=offset, strides=(stride, np.dtype(dtype).itemsize))
    return np.array(arr, dtype=dtype)


def _read_accessor(doc: dict, buffers: list[bytes], index: int) -> tuple[np.ndarray, dict]:
    """Accessor contents as ``(count, ncomp)`` in its stored component type."""
    try:
        acc = doc["accessors"][index]
    except (IndexError, TypeError):
        raise _Refuse(f"accessor {index} does not exist") from None
    dtype = _COMPONENT.get(acc["componentType"])
    if dtype is None:
        raise _Refuse(f"accessor {index} has unknown componentType {acc['componentType']}")
    ncomp = _NCOMP[acc["type"]]
    count = int(acc["count"])
    if "bufferView" in acc:
        out = _read_view_elements(doc, buffers, acc["bufferView"], int(acc.get("byteOffset", 0)),
                                  count, dtype, ncomp, f"accessor {index}")
    else:
        out = np.zeros((count, ncomp), dtype)
    sparse = acc.get("sparse")
    if sparse:
        n = int(sparse["count"])
        it = _COMPONENT[sparse["indices"]["componentType"]]
        idx = _read_view_elements(doc, buffers, sparse["indices"]["bufferView"],
                                  int(sparse["indices"].get("byteOffset", 0)), n, it, 1,
                                  f"accessor {index} sparse indices").reshape(-1)
        vals = _read_view_elements(doc, buffers, sparse["values"]["bufferView"],
                                   int(sparse["values"].get("byteOffset", 0)), n, dtype, ncomp,
                                   f"accessor {index} sparse values")
        if n and int(idx.max()) >= count:
            raise _Refuse(f"accessor {index} sparse index out of range")
        out[idx.astype(np.int64)] = vals
    return out, acc


def _denormalize(a: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "f":
        return a.astype(np.float32)
    info = np.iinfo(a.dtype)
    if info.min < 0:
        return np.maximum(a.astype(np.float32) / info.max, -1.0).astype(np.float32)
    return (a.astype(np.float32) / info.max).astype(np.float32)


def _attribute_array(doc, buffers, index, semantic) -> np.ndarray:
    a, acc = _read_accessor(doc, buffers, index)
    normalized = bool(acc.get("normalized", False))
    base = re.sub(r"_\d+$", "", semantic)
    if semantic == "POSITION" or base == "POSITION":
        a = _denormalize(a) if normalized else a.astype(np.float32)
    elif base == "COLOR" and a.dtype.kind in "iu":
        pass  # normalized integer colours are kept as stored (uint8 / uint16)
    elif base == "JOINTS":
        pass
    elif normalized:
        a = _denormalize(a)
    if acc["type"] == "SCALAR":
        a = a.reshape(-1)
    return a


def _node_matrix(node: dict) -> np.ndarray:
    if "matrix" in node:
        return np.array(node["matrix"], dtype=np.float64).reshape(4, 4).T
    t = np.array(node.get("translation", [0, 0, 0]), dtype=np.float64)
    x, y, z, w = np.array(node.get("rotation", [0, 0, 0, 1]), dtype=np.float64)
    s = np.array(node.get("scale", [1, 1, 1]), dtype=np.float64)
    r = np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])
    m = np.eye(4)
    m[:3, :3] = r * s[None, :]
    m[:3, 3] = t
    return m


def _world_matrices(doc: dict) -> dict[int, np.ndarray]:
    """World matrix of every node reached from the default scene (or every root)."""
    nodes = doc.get("nodes", [])
    scenes = doc.get("scenes", [])
    if scenes:
        roots = list(scenes[int(doc.get("scene", 0))].get("nodes", []))
    else:
        children = {c for n in nodes for c in n.get("children", [])}
        roots = [i for i in range(len(nodes)) if i not in children]
    out: dict[int, np.ndarray] = {}
    stack = [(r, np.eye(4)) for r in reversed(roots)]
    while stack:
        i, parent = stack.pop()
        if i in out:
            continue
        out[i] = parent @ _node_matrix(nodes[i])
        stack.extend((c, out[i]) for c in reversed(nodes[i].get("children", [])))
    return out


def _triangle_slots(doc: dict, path: Path, warn: bool = True) -> list[tuple[int, int]]:
    """(mesh, primitive) of every triangle primitive, in file order."""
    slots = []
    skipped = 0
    for mi, mesh in enumerate(doc.get("meshes", [])):
        for pi, prim in enumerate(mesh.get("primitives", [])):
            if int(prim.get("mode", 4)) in (4, 5, 6):
                slots.append((mi, pi))
            else:
                skipped += 1
    if skipped and warn:
        warnings.warn(f"{path}: {skipped} point/line primitive(s) skipped", stacklevel=4)
    return slots


def _strip_fan_to_list(idx: np.ndarray, mode: int) -> np.ndarray:
    n = idx.size - 2
    if n <= 0:
        return np.zeros((0, 3), idx.dtype)
    i = np.arange(n)
    if mode == 5:  # strip: {v_i, v_{i+(1+i%2)}, v_{i+(2-i%2)}}
        return np.stack([idx[i], idx[i + 1 + i % 2], idx[i + 2 - i % 2]], axis=1)
    return np.stack([idx[i + 1], idx[i + 2], np.full(n, idx[0])], axis=1)  # fan


def _read_gltf(data: bytes, path: Path) -> list[Mesh]:
    doc, buffers = _load_gltf_document(data, path)
    slots = _triangle_slots(doc, path)
    if not slots:
        if any(m.get("primitives") for m in doc.get("meshes", [])):
            raise _Refuse("no triangles: only point/line primitives")
        raise _Refuse("empty: the glTF has no meshes")
    world = _world_matrices(doc)
    users: dict[int, list[int]] = {}
    for ni, node in enumerate(doc.get("nodes", [])):
        if "mesh" in node:
            users.setdefault(int(node["mesh"]), []).append(ni)
    per_mesh = {mi: sum(1 for s in slots if s[0] == mi) for mi, _ in slots}
    out = []
    for mi, pi in slots:
        gmesh = doc["meshes"][mi]
        prim = gmesh["primitives"][pi]
        base = gmesh.get("name") or next(
            (doc["nodes"][n].get("name") for n in users.get(mi, []) if doc["nodes"][n].get("name")), None
        ) or f"mesh{mi}"
        name = f"{base}[{pi}]" if per_mesh[mi] > 1 else base
        where = f"mesh {mi} ({base}) primitive {pi}"
        attrs_ref = prim.get("attributes", {})
        if "POSITION" not in attrs_ref:
            raise _Refuse(f"{where} has no POSITION")
        try:
            positions = _attribute_array(doc, buffers, attrs_ref["POSITION"], "POSITION")
            V = positions.shape[0]
            attrs = {}
            for sem, ai in attrs_ref.items():
                if sem == "POSITION":
                    continue
                a = _attribute_array(doc, buffers, ai, sem)
                if a.shape[0] != V:
                    raise _Refuse(f"attribute {sem} has {a.shape[0]} elements for {V} vertices")
                attrs[_semantic_to_key(sem)] = a
            for ti, target in enumerate(prim.get("targets", [])):
                for sem, ai in target.items():
                    attrs[f"target{ti}.{sem}"] = _attribute_array(doc, buffers, ai, sem)
            if "indices" in prim:
                idx, acc = _read_accessor(doc, buffers, prim["indices"])
                if acc["type"] != "SCALAR" or idx.dtype.kind != "u":
                    raise _Refuse("index accessor is not an unsigned integer SCALAR")
                index_dtype = np.uint32 if idx.dtype == np.uint32 else np.uint16
                idx = idx.reshape(-1)
            else:
                idx = np.arange(V, dtype=np.uint32)
                index_dtype = np.uint32
        except _Refuse as exc:
            raise _Refuse(f"{where}: {exc}") from None
        mode = int(prim.get("mode", 4))
        if mode == 4:
            if idx.size % 3:
                raise _Refuse(f"{where}: {idx.size} indices is not a multiple of 3")
            tris = idx.reshape(-1, 3)
        else:
            warnings.warn(f"{path}: {where}: triangle {'strip' if mode == 5 else 'fan'} converted to a list",
                          stacklevel=3)
            tris = _strip_fan_to_list(idx, mode)
        if tris.size and int(tris.max()) >= V:
            raise _Refuse(f"{where}: index {int(tris.max())} out of range (the primitive has {V} vertices)")
        meta = {
            "source": str(path),
            "gltf_mesh": mi,
            "gltf_primitive": pi,
            "uv_origin": UV_TOP_LEFT,
        }
        if "material" in prim:
            meta["material"] = prim["material"]
        nodes = users.get(mi, [])
        placed = [n for n in nodes if n in world]
        if placed:
            meta["world_matrix"] = world[placed[0]].tolist()
        out.append(Mesh(positions, tris, name=name, attributes=attrs, index_dtype=index_dtype, meta=meta))
    return out


def _apply_world_matrix(mesh: Mesh) -> Mesh:
    """Positions (and normals/tangents) moved by ``meta["world_matrix"]``."""
    m = mesh.meta.get("world_matrix")
    if m is None:
        return mesh
    m = np.asarray(m, dtype=np.float64)
    if np.allclose(m, np.eye(4), rtol=0, atol=0):
        return mesh
    pos = mesh.positions.astype(np.float64) @ m[:3, :3].T + m[:3, 3]
    attrs = dict(mesh.attributes)
    lin = m[:3, :3]
    if ATTR_NORMAL in attrs and attrs[ATTR_NORMAL].dtype.kind == "f":
        n = attrs[ATTR_NORMAL].astype(np.float64) @ np.linalg.inv(lin)
        length = np.linalg.norm(n, axis=1, keepdims=True)
        attrs[ATTR_NORMAL] = (n / np.where(length > 0, length, 1)).astype(np.float32)
    if "tangent" in attrs and attrs["tangent"].dtype.kind == "f" and attrs["tangent"].shape[1:] == (4,):
        t = attrs["tangent"].astype(np.float64)
        xyz = t[:, :3] @ lin.T
        length = np.linalg.norm(xyz, axis=1, keepdims=True)
        attrs["tangent"] = np.concatenate([xyz / np.where(length > 0, length, 1), t[:, 3:]], axis=1).astype(np.float32)
    meta = {k: v for k, v in mesh.meta.items() if k not in ("world_matrix", "gltf_mesh", "gltf_primitive")}
    meta["world_space"] = True
    return mesh.replace(positions=pos.astype(np.float32), attributes=attrs, meta=meta)


# ------------------------------------------------------------------------ glTF writing
class _BinBuilder:
    """Accumulates buffer views into one binary buffer (4-byte aligned)."""

    def __init__(self, doc: dict):
        self.doc = doc
        self.chunks: list[bytes] = []
        self.size = 0

    def add_view(self, raw: bytes, target: int | None = None, stride: int | None = None,
                 extra: dict | None = None) -> int:
        pad = -self.size % 4
        if pad:
            self.chunks.append(b"\x00" * pad)
            self.size += pad
        view = {"buffer": 0, "byteOffset": self.size, "byteLength": len(raw)}
        if stride:
            view["byteStride"] = stride
        if target:
            view["target"] = target
        if extra:
            view.update(extra)
        self.chunks.append(bytes(raw))
        self.size += len(raw)
        views = self.doc.setdefault("bufferViews", [])
        views.append(view)
        return len(views) - 1

    def add_accessor(self, a: np.ndarray, *, indices: bool = False, normalized: bool = False,
                     minmax: bool = False, target: int | None = None) -> int:
        a = np.ascontiguousarray(a)
        ncomp = 1 if a.ndim == 1 else int(a.shape[1])
        comp = np.dtype(a.dtype).newbyteorder("<")
        elem = comp.itemsize * ncomp
        stride = None
        raw = a.astype(comp, copy=False).tobytes()
        if not indices and elem % 4:
            stride = elem + (-elem % 4)
            padded = np.zeros((a.shape[0], stride), np.uint8)
            padded[:, :elem] = np.frombuffer(raw, np.uint8).reshape(a.shape[0], elem)
            raw = padded.tobytes()
        view = self.add_view(raw, target=target, stride=stride)
        acc = {"bufferView": view, "componentType": _COMPONENT_OF[np.dtype(a.dtype)],
               "count": int(a.shape[0]), "type": _TYPE_OF[ncomp]}
        if normalized:
            acc["normalized"] = True
        if minmax and a.shape[0]:
            lo = a.reshape(a.shape[0], -1).min(axis=0)
            hi = a.reshape(a.shape[0], -1).max(axis=0)
            cast = float if a.dtype.kind == "f" else int
            acc["min"] = [cast(v) for v in lo]
            acc["max"] = [cast(v) for v in hi]
        accs = self.doc.setdefault("accessors", [])
        accs.append(acc)
        return len(accs) - 1

    def bytes(self) -> bytes:
        data = b"".join(self.chunks)
        return data + b"\x00" * (-len(data) % 4)


def _gltf_attribute(key: str, a: np.ndarray, path: Path) -> tuple[str, np.ndarray, bool] | None:
    """(semantic, array in a glTF-legal type, normalized) or None (dropped with a warning)."""
    sem = _key_to_semantic(key)
    base = re.sub(r"_\d+$", "", sem)
    a2 = a.reshape(a.shape[0], -1) if a.ndim > 2 else a
    ncomp = 1 if a2.ndim == 1 else a2.shape[1]
    if a2.ndim == 1 or ncomp not in _SEMANTIC_WIDTHS.get(base, (ncomp,)):
        sem, base = "_" + key, "_" + key  # not the semantic's shape: a custom attribute
    if ncomp not in _TYPE_OF or (ncomp in (9, 16) and a2.dtype.kind != "f") or a2.dtype.kind not in "biuf":
        warnings.warn(f"{path}: attribute {key!r} {a.shape} {a.dtype} cannot be stored in glTF; dropped",
                      stacklevel=4)
        return None
    normalized = False
    if base == "COLOR" and a2.dtype in (np.uint8, np.uint16) and ncomp in (3, 4):
        normalized = True
    elif base == "JOINTS" and a2.dtype in (np.uint8, np.uint16):
        pass
    elif base in ("NORMAL", "TANGENT", "TEXCOORD", "COLOR", "WEIGHTS") or a2.dtype.kind == "f":
        a2 = a2.astype(np.float32)
    elif a2.dtype == np.bool_:
        a2 = a2.astype(np.uint8)
    elif a2.dtype not in (np.int8, np.uint8, np.int16, np.uint16):
        f = a2.astype(np.float32)
        if not np.array_equal(f.astype(a2.dtype), a2):
            warnings.warn(f"{path}: attribute {key!r} ({a2.dtype}) stored as float32 loses precision",
                          stacklevel=4)
        a2 = f
    return sem, a2, normalized


def _index_array(mesh: Mesh) -> np.ndarray:
    tris = mesh.triangles.reshape(-1)
    # glTF reserves the largest value of the index type (primitive restart).
    if mesh.index_dtype == np.uint16 and tris.size and int(tris.max()) < 0xFFFF:
        return tris.astype(np.uint16)
    if mesh.index_dtype == np.uint16 and not tris.size:
        return tris.astype(np.uint16)
    return tris.astype(np.uint32)


def _primitive_accessors(mesh: Mesh, builder: _BinBuilder, path: Path) -> tuple[dict, int, list[dict]]:
    """Add a mesh's accessors; return (attributes, indices accessor, targets)."""
    attrs = dict(mesh.attributes)
    if mesh.meta.get("uv_origin") != UV_TOP_LEFT:
        attrs = _uv_flip(attrs, [k for k in attrs if _is_uv_key(k)])
    out = {"POSITION": builder.add_accessor(mesh.positions, minmax=True, target=34962)}
    targets: dict[int, dict] = {}
    for key, a in attrs.items():
        m = re.fullmatch(r"target(\d+)\.(\w+)", key)
        if m:
            targets.setdefault(int(m.group(1)), {})[m.group(2)] = builder.add_accessor(
                np.asarray(a, np.float32), minmax=m.group(2) == "POSITION", target=34962)
            continue
        got = _gltf_attribute(key, a, path)
        if got is None:
            continue
        sem, arr, norm = got
        out[sem] = builder.add_accessor(arr, normalized=norm, target=34962)
    indices = builder.add_accessor(_index_array(mesh), indices=True, target=34963)
    tlist = [targets[i] for i in sorted(targets)]
    return out, indices, tlist


def _write_gltf(meshes: list[Mesh], path: Path, source: Path | None) -> bytes:
    if source is None:
        doc: dict = {"asset": {"version": "2.0", "generator": "meshopt-batch"}, "scene": 0,
                     "scenes": [{"nodes": list(range(len(meshes)))}], "nodes": [], "meshes": []}
        builder = _BinBuilder(doc)
        for i, m in enumerate(meshes):
            attrs, indices, targets = _primitive_accessors(m, builder, path)
            prim = {"attributes": attrs, "indices": indices, "mode": 4}
            if targets:
                prim["targets"] = targets
            name = m.name or f"mesh{i}"
            doc["meshes"].append({"name": name, "primitives": [prim]})
            node = {"mesh": i, "name": name}
            wm = m.meta.get("world_matrix")
            if wm is not None and not np.array_equal(np.asarray(wm, float), np.eye(4)):
                node["matrix"] = [float(v) for v in np.asarray(wm, float).T.reshape(-1)]
            doc["nodes"].append(node)
        return _serialize_gltf(doc, builder.bytes(), path)
    return _write_gltf_into_source(meshes, path, source)


def _write_gltf_into_source(meshes: list[Mesh], path: Path, source: Path) -> bytes:
    try:
        data = source.read_bytes()
    except OSError as exc:
        raise _Refuse(f"source {source}: cannot read: {exc.strerror or exc}") from None
    try:
        doc, buffers = _load_gltf_document(data, source)
    except _Refuse as exc:
        raise _Refuse(f"source {source}: {exc}") from None
    except (ValueError, KeyError, TypeError, struct.error, UnicodeDecodeError) as exc:
        raise _Refuse(f"source {source}: not a readable glTF ({_one_line(exc)})") from None
    slots = _triangle_slots(doc, source, warn=False)
    src_str = str(source)
    for m in meshes:
        if m.meta.get("world_space") or m.meta.get("parts"):
            raise _Refuse(f"mesh {m.name!r} is a merged or world-space model (load_mesh); "
                          "use load_meshes to write primitives back into a glTF's structure")
    by_meta = all(m.meta.get("gltf_mesh") is not None and m.meta.get("gltf_primitive") is not None
                  for m in meshes)
    if by_meta:
        wanted = [(int(m.meta["gltf_mesh"]), int(m.meta["gltf_primitive"])) for m in meshes]
        if any(w not in slots for w in wanted):
            raise _Refuse(f"the meshes' glTF slots do not exist in source {source}")
        if len(set(wanted)) != len(wanted):
            raise _Refuse("two meshes are for the same glTF primitive")
        if any(m.meta.get("source") not in (None, src_str) for m in meshes):
            warnings.warn(f"{path}: meshes were loaded from another file than source {source}; "
                          "placed by their mesh/primitive numbers", stacklevel=3)
    else:
        if len(meshes) != len(slots):
            raise _Refuse(f"source {source} has {len(slots)} triangle primitives, got {len(meshes)} meshes")
        wanted = slots
    doc = copy.deepcopy(doc)
    n_old_acc = len(doc.get("accessors", []))
    # 1. old buffer views, copied into one new buffer (same view numbers for now)
    builder = _BinBuilder(doc)
    old_views = doc.get("bufferViews", [])
    doc["bufferViews"] = []
    for i, bv in enumerate(old_views):
        view, _ = _view_bytes({"bufferViews": old_views}, buffers, i)
        extra = {k: v for k, v in bv.items() if k not in ("buffer", "byteOffset", "byteLength", "byteStride", "target")}
        builder.add_view(view, target=bv.get("target"), stride=bv.get("byteStride"), extra=extra)
    # 2. images stored as external files become buffer views (the output stands alone)
    for im in doc.get("images", []):
        uri = im.get("uri")
        if uri is None:
            continue
        try:
            if uri.startswith("data:"):
                raw, mime = _data_uri(uri)
            else:
                raw = (source.parent / urllib.parse.unquote(uri)).read_bytes()
                mime = None
        except OSError:
            warnings.warn(f"{path}: image {uri!r} of source {source} is missing; its uri is kept", stacklevel=3)
            continue
        mime = mime or _image_mime(uri, raw)
        if mime is None:
            warnings.warn(f"{path}: image {uri!r}: unknown image type; its uri is kept", stacklevel=3)
            continue
        im.pop("uri")
        im["bufferView"] = builder.add_view(raw)
        im["mimeType"] = mime
    # 3. the new geometry
    for m, (mi, pi) in zip(meshes, wanted):
        prim = doc["meshes"][mi]["primitives"][pi]
        attrs, indices, targets = _primitive_accessors(m, builder, path)
        prim["attributes"] = attrs
        prim["indices"] = indices
        for ext in _UNSUPPORTED_EXT:  # compressed copies of the old geometry
            prim.get("extensions", {}).pop(ext, None)
        if prim.get("extensions") == {}:
            prim.pop("extensions")
        if "mode" in prim:
            prim["mode"] = 4
        if targets or "targets" in prim:
            old_targets = prim.get("targets", [])
            if len(targets) != len(old_targets) and old_targets:
                warnings.warn(f"{path}: {doc['meshes'][mi].get('name', mi)} primitive {pi}: "
                              f"morph targets replaced ({len(old_targets)} -> {len(targets)})", stacklevel=3)
            if targets:
                prim["targets"] = targets
            else:
                prim.pop("targets", None)
                doc["meshes"][mi].pop("weights", None)
    # 4. drop what nothing uses any more (only when every extension is known not to refer to it)
    used_ext = set(doc.get("extensionsUsed", []))
    if all(_SAFE_EXT.fullmatch(e) for e in used_ext):
        _drop_unused(doc, n_old_acc)
    bin_data = builder.bytes()
    if doc.get("bufferViews"):
        bin_data = _compact_views(doc, bin_data)
    return _serialize_gltf(doc, bin_data, path)


def _image_mime(uri: str, raw: bytes) -> str | None:
    if raw[:8] == b"\x89PNG\r\n\x1a\n":
        return "image/png"
    if raw[:3] == b"\xff\xd8\xff":
        return "image/jpeg"
    if raw[:4] == b"RIFF" and raw[8:12] == b"WEBP":
        return "image/webp"
    if raw[:12] == b"\xabKTX 20\xbb\r\n\x1a\n":
        return "image/ktx2"
    return None


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


def _serialize_gltf(doc: dict, bin_data: bytes, path: Path) -> bytes:
    if bin_data:
        doc["buffers"] = [{"byteLength": len(bin_data)}]
    else:
        doc.pop("buffers", None)
    if path.suffix.lower() == ".gltf":
        if bin_data:
            doc["buffers"][0]["uri"] = "data:application/octet-stream;base64," + base64.b64encode(bin_data).decode()
        return json.dumps(doc, indent=1).encode("utf-8")
    js = json.dumps(doc, separators=(",", ":")).encode("utf-8")
    js += b" " * (-len(js) % 4)
    out = [struct.pack("<II", len(js), _CHUNK_JSON), js]
    if bin_data:
        out += [struct.pack("<II", len(bin_data), _CHUNK_BIN), bin_data]
    body = b"".join(out)
    return struct.pack("<4sII", _GLB_MAGIC, 2, 12 + len(body)) + body


_READERS: dict[str, Callable[[bytes, Path], list[Mesh]]] = {
    ".obj": _read_obj,
    ".ply": _read_ply,
    ".off": _read_off,
    ".stl": _read_stl,
    ".gltf": _read_gltf,
    ".glb": _read_gltf,
}
_WRITERS: dict[str, Callable[..., bytes]] = {
    ".obj": _write_obj,
    ".ply": _write_ply,
    ".glb": _write_gltf,
    ".gltf": _write_gltf,
}
