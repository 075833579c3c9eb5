"""OFF (Object File Format), ascii, read in file order.

Header variants ``[ST][C][N]OFF``: normals (``N``), colours (``C``, 3 or 4 numbers, integer
0..255 kept as uint8) and texture coordinates (``ST``) follow each vertex's position.
Polygons are fan-triangulated in place.  ``4OFF``/``nOFF`` and binary OFF are refused.

The counts of the header are checked against the file: fewer vertex or face lines than
declared (a truncated file), a face line with fewer corners than its count, or lines left
over after the declared faces (more than the header declares) are refused.  A file that
ends without a line end gets a warning: its last number may have been cut where no count
can tell.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np

from ..geometry.mesh_record import ATTR_COLOR, ATTR_NORMAL, ATTR_UV, Mesh
from .format_common import Refusal, check_indices, polygons_to_triangles

__all__ = ["read_off"]


def read_off(data: bytes, path: Path) -> list[Mesh]:
    text = data.decode("utf-8", errors="replace")
    lines = []
    for raw in text.splitlines():
        s = raw.split("#", 1)[0].strip()
        if s:
            lines.append(s)
    if not lines:
        raise Refusal("empty file")
    head = lines[0].split()
    m = re.fullmatch(r"(ST)?(C)?(N)?(4)?(n)?OFF", head[0])
    if m is None:
        raise Refusal("not an OFF file (no OFF header)")
    if m.group(4) or m.group(5):
        raise Refusal(f"{head[0]} (4-D / n-D OFF) is not supported")
    if len(head) > 1 and head[1].upper() == "BINARY":
        raise Refusal("binary OFF is not supported")
    rest = head[1:]
    li = 1
    if len(rest) < 2:
        if len(lines) < 2:
            raise Refusal("OFF file ends after its header (no counts; truncated?)")
        rest = lines[1].split()
        li = 2
    if len(rest) < 2 or not all(t.isdigit() for t in rest[:2]):
        raise Refusal(f"OFF counts line {' '.join(rest)!r}: expected vertex and face counts")
    nv, nf = int(rest[0]), int(rest[1])
    if nv == 0:
        raise Refusal("empty mesh (0 vertices)")
    vlines = lines[li : li + nv]
    if len(vlines) < nv:
        raise Refusal(f"OFF file ends after {len(vlines)} of {nv} vertices")
    vrows = [ln.split() for ln in vlines]
    width = {len(r) for r in vrows}
    if min(width) < 3:
        raise Refusal("an OFF vertex line has fewer than 3 coordinates")
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
        raise Refusal(f"OFF file ends after {len(flines)} of {nf} faces")
    if nf == 0:
        raise Refusal(f"no faces: a point cloud ({nv} vertices)")
    extra = len(lines) - (li + nv + nf)
    if extra > 0:
        raise Refusal(f"OFF has {extra} more line(s) after its {nf} faces than its header declares")
    if data[-1:] not in (b"\n", b"\r"):
        warnings.warn(f"{path}: the file ends without a line end; its last number may have been cut",
                      stacklevel=3)
    sizes = np.empty(nf, np.int64)
    corners: list[str] = []
    for i, ln in enumerate(flines):
        tok = ln.split()
        n = int(tok[0])
        if n < 0:
            raise Refusal(f"OFF face {i} has a negative corner count {n}")
        if len(tok) < 1 + n:
            raise Refusal(f"OFF face {i} lists {n} corners but has {len(tok) - 1} numbers")
        sizes[i] = n
        corners.extend(tok[1 : 1 + n])
    flat = np.array(corners, dtype=np.int64)
    check_indices(flat, nv)
    tris = polygons_to_triangles(sizes, flat, path)
    return [Mesh(positions, tris, name=path.stem, attributes=attrs, meta={"source": str(path)})]

