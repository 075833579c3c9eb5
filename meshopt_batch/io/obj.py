"""Wavefront OBJ, read and written in the file's own vertex and face order.

Reading: ``v x y z [r g b]`` positions (and colours), ``vt`` texture coordinates, ``vn``
normals, ``f`` faces with ``v``, ``v/vt``, ``v//vn`` or ``v/vt/vn`` corners (negative
indices count back from the current end), ``\\``-continued lines.  A position used with
several different ``vt``/``vn`` combinations keeps its index for the first combination
met; every other combination becomes a copy appended after the file's vertices (warning).
Polygons are fan-triangulated in place.  OBJ declares no counts, so a truncated file cannot
be told from a whole one; a file that ends without a line end (as a cut file usually does)
gets a one-line warning.

Writing: ``v`` (with the colour's rgb), ``vt``, ``vn`` and one ``f v/vt/vn`` per triangle
(``o`` groups when several meshes are written).  What these lines cannot hold exactly (the
index type, other dtypes, alpha, any other attribute) goes to comment lines the reader
understands and other programs ignore: ``# meshopt-batch index_dtype uint16``,
``# meshopt-batch attribute a<i> <dtype> <components> <name>`` and one ``#@a<i> ...`` row
per vertex.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np

from ..geometry.mesh_record import ATTR_COLOR, ATTR_NORMAL, ATTR_UV, Mesh, fit_index_dtype
from .format_common import Refusal, bottom_left_attributes, check_indices, one_mesh, polygons_to_triangles

__all__ = ["read_obj", "write_obj"]

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
        raise Refusal("OBJ vertex index 0 (indices start at 1)")
    out = np.where(fields > 0, fields - 1, -1)
    if relative and (fields < 0).any():
        counts = np.zeros((len(sizes), 3), np.int64)
        faces = np.fromiter(relative.keys(), np.int64, len(relative))
        counts[faces] = np.array(list(relative.values()), np.int64)
        per_corner = np.repeat(counts, sizes, axis=0)
        out = np.where(fields < 0, per_corner + fields, out)
        if (out[fields < 0] < 0).any():
            raise Refusal("relative OBJ index points before the first element")
    return out[:, 0], out[:, 1], out[:, 2]


def read_obj(data: bytes, path: Path) -> list[Mesh]:
    text = data.decode("utf-8", errors="replace")
    if "\x00" in text[:4096]:
        raise Refusal("not a text OBJ file (binary data)")
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
        raise Refusal("empty mesh (no 'v' vertices)")
    if not sizes:
        what = "lines only" if n_lines else "a point cloud"
        raise Refusal(f"no faces: {what} ({len(v_width)} vertices)")
    if min(v_width) < 3:
        raise Refusal("an OBJ 'v' line has fewer than 3 coordinates")
    w = v_width[0] if len(set(v_width)) == 1 else 3  # mixed widths: x y z only
    vals = _obj_table(v_tok, v_width, w)
    positions = vals[:, :3].astype(np.float32)
    V = positions.shape[0]
    per_vertex: dict[str, np.ndarray] = {}
    if w in (6, 7):
        per_vertex[ATTR_COLOR] = vals[:, w - 3 :].astype(np.float32)
    cv_a, cvt_a, cvn_a = _obj_corners(corners, np.asarray(sizes), relative)
    check_indices(cv_a, V, first=1)
    check_indices(cvt_a[cvt_a >= 0], len(vt_width), "texture coordinate", first=1)
    check_indices(cvn_a[cvn_a >= 0], len(vn_width), "normal", first=1)
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
    tris = polygons_to_triangles(np.asarray(sizes), vertex_of_corner, path)
    if data[-1:] not in (b"\n", b"\r"):
        warnings.warn(f"{path}: the file ends without a line end; it may be truncated (OBJ has no "
                      "counts to check)", stacklevel=3)
    return [Mesh(positions[source], tris, name=path.stem, attributes=attrs,
                 index_dtype=fit_index_dtype(index_dtype, source.size), meta={"source": str(path)})]


def _float_format(a: np.ndarray) -> str:
    """Enough digits to read the same value back: 17 for float64, 9 for float32."""
    return "%.17g" if a.dtype == np.float64 else "%.9g"


def _fmt_rows(prefix: str, a: np.ndarray, fmt: str) -> str:
    """Lines ``prefix v0 v1 ...`` for each row of ``a`` (one big %-format, fast)."""
    a = np.asarray(a)
    if a.ndim == 1:
        a = a[:, None]
    if a.shape[0] == 0:
        return ""
    line = prefix + " ".join([fmt] * a.shape[1]) + "\n"
    return (line * a.shape[0]) % tuple(a.reshape(-1).tolist())


def write_obj(meshes: list[Mesh], path: Path) -> bytes:
    whole = one_mesh(meshes)
    V = whole.vertex_count
    attrs = bottom_left_attributes(whole)
    out = ["# written by meshopt-batch\n"]
    if fit_index_dtype(whole.index_dtype, V) == np.uint16:
        out.append(f"{_OBJ_EXT} index_dtype uint16\n")
    # normal / uv / colour go to vn / vt / v lines; whatever those lines cannot hold
    # exactly (other dtypes, alpha, other attributes) also goes to "#@" comment lines.
    standard, ext = {}, {}
    for key, a in attrs.items():
        if a.dtype.kind not in "biuf":
            raise Refusal(f"attribute {key!r} of dtype {a.dtype} cannot be written to OBJ")
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
    v = whole.positions.astype(np.float64)
    color = standard.get(ATTR_COLOR)
    if color is not None:
        c = color[:, :3].astype(np.float64)
        if color.dtype.kind in "iu":
            c = c / float(np.iinfo(color.dtype).max)
        v = np.concatenate([v, c], axis=1)
    out.append(_fmt_rows("v ", v, "%.9g"))
    if ATTR_UV in standard:
        out.append(_fmt_rows("vt ", standard[ATTR_UV].astype(np.float64), _float_format(standard[ATTR_UV])))
    if ATTR_NORMAL in standard:
        out.append(_fmt_rows("vn ", standard[ATTR_NORMAL].astype(np.float64), _float_format(standard[ATTR_NORMAL])))
    for i, a in enumerate(ext.values()):
        rows = a.reshape(V, -1)
        if a.dtype.kind == "f":
            out.append(_fmt_rows(f"#@a{i} ", rows.astype(np.float64), _float_format(a)))
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

