"""PLY: ascii, binary little endian and binary big endian read; binary little endian written.

The reader keeps the file's vertex and face order.  Vertex properties become attributes:
``nx ny nz`` the normal, ``s t`` (or ``u v``, ``texture_u texture_v``...) the texture
coordinates, ``red green blue [alpha]`` the colour; ``name_0 .. name_k`` (k >= 1,
consecutive) one ``(V, k + 1)`` attribute; any other property its own 1-D attribute.  Faces
are read from ``vertex_indices`` (or ``vertex_index``); polygons are fan-triangulated in
place; other face properties and other elements are ignored (warning for face properties).
The index type is 16-bit when the face list's index type is at most 16 bits wide.

Every element is read, so the file's length is checked against its header: data missing for
a declared count (a truncated file) or left over after the last element (more than the
header declares; trailing white space and zero bytes aside) is refused; an ascii file must
also hold one line per declared record.  An ascii file that
ends without a line end gets a warning: its last number may have been cut where no count can
tell.

References
----------
.. [1] G. Turk, "The PLY polygon file format", 1994 (header grammar, property types).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..geometry.mesh_record import ATTR_COLOR, ATTR_NORMAL, ATTR_UV, Mesh, fit_index_dtype
from .format_common import Refusal, bottom_left_attributes, check_indices, one_mesh, polygons_to_triangles

__all__ = ["read_ply", "write_ply"]

_PLY_TYPES = {
    "char": "i1", "int8": "i1", "uchar": "u1", "uint8": "u1",
    "short": "i2", "int16": "i2", "ushort": "u2", "uint16": "u2",
    "int": "i4", "int32": "i4", "uint": "u4", "uint32": "u4",
    "float": "f4", "float32": "f4", "double": "f8", "float64": "f8",
}
_PLY_NAMES = {"i1": "char", "u1": "uchar", "i2": "short", "u2": "ushort",
              "i4": "int", "u4": "uint", "f4": "float", "f8": "double"}
_PLY_UV_PAIRS = (("s", "t"), ("u", "v"), ("texture_u", "texture_v"), ("texture_s", "texture_t"))


def _ply_type(name: str, line: str) -> str:
    if name not in _PLY_TYPES:
        raise Refusal(f"PLY header line {line.strip()!r}: unknown property type {name!r}")
    return _PLY_TYPES[name]


def _ply_header(data: bytes) -> tuple[str, list[dict], int]:
    if not data.startswith(b"ply"):
        raise Refusal("not a PLY file (no 'ply' magic)")
    end = re.search(rb"end_header[ \t]*\r?\n", data)
    if end is None:
        raise Refusal("PLY header has no end_header (truncated?)")
    header = data[: end.start()].decode("ascii", errors="replace").splitlines()
    fmt = None
    elements: list[dict] = []
    for line in header[1:]:
        tok = line.split()
        if not tok or tok[0] in ("comment", "obj_info"):
            continue
        if tok[0] == "format" and len(tok) >= 2:
            fmt = tok[1]
        elif tok[0] == "element" and len(tok) == 3:
            if not tok[2].isdigit():
                raise Refusal(f"PLY header line {line.strip()!r}: expected a count of 0 or more")
            elements.append({"name": tok[1], "count": int(tok[2]), "props": []})
        elif tok[0] == "property" and len(tok) >= 3:
            if not elements:
                raise Refusal("PLY property before any element")
            if tok[1] == "list" and len(tok) == 5:
                elements[-1]["props"].append((tok[4], _ply_type(tok[2], line), _ply_type(tok[3], line)))
            elif tok[1] != "list" and len(tok) == 3:
                elements[-1]["props"].append((tok[2], _ply_type(tok[1], line), None))
            else:
                raise Refusal(f"unexpected PLY header line {line.strip()!r}")
        else:
            raise Refusal(f"unexpected PLY header line {line.strip()!r}")
    if fmt not in ("ascii", "binary_little_endian", "binary_big_endian"):
        raise Refusal(f"unknown PLY format {fmt!r}")
    for el in elements:
        if not el["props"] and el["count"]:
            raise Refusal(f"PLY element {el['name']!r} has no properties")
    return fmt, elements, end.end()


def _check_room(el: dict, have: int, fmt: str) -> None:
    """Refuse an element whose count cannot fit in what is left of the file (before any
    allocation by that count): each record takes at least one number (ascii) or its fixed
    bytes (binary)."""
    if fmt == "ascii":
        least = len(el["props"])
    else:
        least = sum(np.dtype(t).itemsize for _name, t, _lt in el["props"])
    if el["count"] * least > have:
        unit = "numbers" if fmt == "ascii" else "bytes"
        raise Refusal(f"PLY data ends inside element {el['name']!r}: {el['count']} records need at "
                      f"least {el['count'] * least} {unit}, {have} left (truncated?)")


def _ply_read_binary_element(buf: memoryview, pos: int, el: dict, endian: str) -> tuple[dict, int]:
    """Columns of one binary element; list properties give (sizes, flat values)."""
    count = el["count"]
    props = el["props"]
    if all(p[2] is None for p in props):
        dt = np.dtype([(f"p{i}", endian + p[1]) for i, p in enumerate(props)])
        need = dt.itemsize * count
        if pos + need > len(buf):
            raise Refusal(f"PLY data ends inside element {el['name']!r} (truncated?)")
        rec = np.frombuffer(buf, dtype=dt, count=count, offset=pos)
        return {p[0]: rec[f"p{i}"] for i, p in enumerate(props)}, pos + need
    # Fast path: every list has the same length as the first record's.
    sizes0: list[int] = []
    off = pos
    for _name, t, lt in props:
        if lt is None:
            off += np.dtype(t).itemsize
        else:
            if off + np.dtype(t).itemsize > len(buf):
                raise Refusal(f"PLY data ends inside element {el['name']!r} (truncated?)")
            n = int(np.frombuffer(buf, dtype=endian + t, count=1, offset=off)[0]) if count else 0
            sizes0.append(n)
            off += np.dtype(t).itemsize + n * np.dtype(lt).itemsize
    fields = []
    li = 0
    for i, (_name, t, lt) in enumerate(props):
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
            for i, (name, _t, lt) in enumerate(props):
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
                raise Refusal(f"PLY data ends inside element {el['name']!r} (truncated?)")
            v = np.frombuffer(buf, dtype=tdt, count=1, offset=pos)[0]
            pos += tdt.itemsize
            if ldt is None:
                scalars[name].append(v)
            else:
                n = int(v)
                if n < 0 or pos + n * ldt.itemsize > len(buf):
                    raise Refusal(f"PLY data ends inside element {el['name']!r} (truncated?)")
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
            raise Refusal(f"PLY data ends inside element {what!r} (truncated?)")
        n = buf[off] if cs == 1 else int.from_bytes(buf[off : off + cs], order, signed=tdt.kind == "i")
        if n < 0:
            raise Refusal(f"negative list length in element {what!r}")
        sizes[i] = n
        starts[i] = off + cs
        off += cs + n * isz
    if off > end:
        raise Refusal(f"PLY data ends inside element {what!r} (truncated?)")
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
            raise Refusal(f"PLY data ends inside element {el['name']!r} (truncated?)")
        block = np.array(tokens[pos : pos + k * count], dtype=np.float64).reshape(count, k)
        cols = {p[0]: block[:, i].astype(p[1]) for i, p in enumerate(props)}
        return cols, pos + k * count
    # Fast path: uniform record length (e.g. every face "3 a b c").
    n_first = []
    off = pos
    for _name, _t, lt in props:
        if lt is None:
            off += 1
        else:
            n = int(tokens[off]) if count else 0
            if n < 0:
                raise Refusal(f"negative list length in element {el['name']!r}")
            n_first.append(n)
            off += 1 + n
    rec_len = off - pos
    if count and pos + rec_len * count <= len(tokens):
        block = np.array(tokens[pos : pos + rec_len * count], dtype=np.float64).reshape(count, rec_len)
        col = 0
        ok = True
        li = 0
        for _name, _t, lt in props:
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
        for name, _t, lt in props:
            if pos >= len(tokens):
                raise Refusal(f"PLY data ends inside element {el['name']!r} (truncated?)")
            if lt is None:
                scalars[name].append(float(tokens[pos]))
                pos += 1
            else:
                n = int(tokens[pos])
                if n < 0:
                    raise Refusal(f"negative list length in element {el['name']!r}")
                sizes[name].append(n)
                flat[name].extend(tokens[pos + 1 : pos + 1 + n])
                if pos + 1 + n > len(tokens):
                    raise Refusal(f"PLY data ends inside element {el['name']!r} (truncated?)")
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


def _check_ascii_lines(body: bytes, elements: list[dict]) -> None:
    """Refuse an ascii body whose line count differs from the records its header declares
    (one record per line): a count not met, or exceeded, is told apart from a shifted
    stream of numbers that could still add up."""
    lines = sum(1 for line in body.splitlines() if line.strip())
    declared = sum(el["count"] for el in elements)
    if lines != declared:
        counts = ", ".join(f"{el['name']} {el['count']}" for el in elements)
        raise Refusal(f"PLY header declares {declared} records ({counts}) but the data has {lines} lines"
                      + (" (truncated?)" if lines < declared else ""))


def _check_end(data: bytes, tokens: list | None, pos: int, last: str, path: Path) -> None:
    """Refuse data after the last element the header declares; warn when an ascii file ends
    without a line end (its last number may have been cut without any count noticing)."""
    if tokens is not None:
        if pos < len(tokens):
            raise Refusal(f"PLY has {len(tokens) - pos} more numbers after its last element {last!r} "
                          "than its header declares")
        if data and data[-1:] not in (b"\n", b"\r"):
            warnings.warn(f"{path}: the file ends without a line end; its last number may have "
                          "been cut", stacklevel=4)
    elif data[pos:].strip(b" \t\r\n\x00"):
        raise Refusal(f"PLY has {len(data) - pos} more bytes after its last element {last!r} "
                      "than its header declares")


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


def read_ply(data: bytes, path: Path) -> list[Mesh]:
    fmt, elements, start = _ply_header(data)
    names = [e["name"] for e in elements]
    if "vertex" not in names:
        raise Refusal("PLY file has no vertex element")
    endian = "<" if fmt == "binary_little_endian" else ">"
    tokens = data[start:].split() if fmt == "ascii" else None
    if tokens is not None:
        _check_ascii_lines(data[start:], elements)
    buf = memoryview(data)
    pos = start if tokens is None else 0
    cols_by_el: dict[str, tuple[dict, list]] = {}
    for el in elements:
        if tokens is None:
            _check_room(el, len(buf) - pos, fmt)
            cols, pos = _ply_read_binary_element(buf, pos, el, endian)
        else:
            _check_room(el, len(tokens) - pos, fmt)
            cols, pos = _ply_read_ascii_element(tokens, pos, el)
        cols_by_el.setdefault(el["name"], (cols, [p[0] for p in el["props"]]))
    _check_end(data, tokens, pos, elements[-1]["name"], path)
    vcols, vorder = cols_by_el["vertex"]
    vcount = elements[names.index("vertex")]["count"]
    if vcount == 0:
        raise Refusal("empty mesh (0 vertices)")
    if not all(n in vcols for n in ("x", "y", "z")):
        raise Refusal("PLY vertex element has no x, y, z properties")
    positions = np.stack([vcols[n].astype(np.float32) for n in ("x", "y", "z")], axis=1)
    attrs = _ply_vertex_attributes(vcols, vorder, path)
    face = cols_by_el.get("face")
    if face is None or elements[names.index("face")]["count"] == 0:
        raise Refusal(f"no faces: a point cloud ({vcount} vertices)")
    fcols, forder = face
    key = next((k for k in ("vertex_indices", "vertex_index") if k in fcols and isinstance(fcols[k], tuple)), None)
    if key is None:
        raise Refusal("PLY face element has no vertex_indices list")
    ignored = [k for k in forder if k != key]
    if ignored:
        warnings.warn(f"{path}: per-face PLY properties ignored: {', '.join(ignored)}", stacklevel=3)
    ltype = next(p[2] for p in elements[names.index("face")]["props"] if p[0] == key)
    sizes, flat = fcols[key]
    flat = np.asarray(flat)
    if flat.dtype.kind == "f" and not np.array_equal(flat, np.floor(flat)):
        raise Refusal(f"PLY face {key} holds a number that is not a whole vertex index "
                      f"({float(flat[flat != np.floor(flat)][0])})")
    flat = flat.astype(np.int64)
    check_indices(flat, vcount)
    tris = polygons_to_triangles(sizes, flat, path)
    index_dtype = np.uint16 if np.dtype(ltype).itemsize <= 2 else np.uint32
    return [Mesh(positions, tris, name=path.stem, attributes=attrs, index_dtype=index_dtype,
                 meta={"source": str(path)})]


def _ply_columns(mesh: Mesh) -> list[tuple[str, np.ndarray]]:
    """(property name, 1-D array) in write order for the vertex element."""
    attrs = bottom_left_attributes(mesh)
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
        raise Refusal(f"attribute {key!r} of dtype {a.dtype} cannot be written to PLY")
    return a


def write_ply(meshes: list[Mesh], path: Path) -> bytes:
    if len(meshes) > 1:
        warnings.warn(f"{path}: PLY holds one mesh; {len(meshes)} meshes were concatenated", stacklevel=3)
    mesh = one_mesh(meshes)
    for name in mesh.attributes:
        if not re.fullmatch(r"\S+", name):
            raise Refusal(f"attribute name {name!r} cannot be a PLY property name")
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

