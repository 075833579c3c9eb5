"""STL, ascii and binary, read: every facet's three corners are three vertices of their own.

STL has no index buffer, so nothing is merged: ``T`` facets give ``3T`` vertices and the
triangles ``(0, 1, 2), (3, 4, 5), ...``.

Which form: a file whose first word (after any white space) is ``solid`` is ASCII unless its
size is exactly what its binary triangle count says (binary files may start with ``solid``
in their 80-byte header); any other file is binary.

Truncation and excess are refused: a binary file must be exactly ``84 + 50 T`` bytes for the
``T`` its header declares; an ASCII file must close every ``facet`` with ``endfacet`` (three
``vertex`` lines each) and end with ``endsolid`` (a file cut anywhere, even inside the last
number, loses that line).
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

import numpy as np

from ..geometry.mesh_record import Mesh
from .format_common import Refusal

__all__ = ["read_stl"]

_VERTEX = re.compile(rb"^\s*vertex\s+(\S+)\s+(\S+)\s+(\S+)", re.MULTILINE | re.IGNORECASE)
_FACET = re.compile(rb"^\s*facet\b", re.MULTILINE | re.IGNORECASE)
_ENDFACET = re.compile(rb"^\s*endfacet\b", re.MULTILINE | re.IGNORECASE)
_ENDSOLID = re.compile(rb"^\s*endsolid\b", re.MULTILINE | re.IGNORECASE)
_RECORD = np.dtype([("n", "<f4", 3), ("v", "<f4", (3, 3)), ("a", "<u2")])


def _binary_count(data: bytes) -> int | None:
    """The triangle count of a binary header, None when the file is shorter than one."""
    return struct.unpack("<I", data[80:84])[0] if len(data) >= 84 else None


def _read_binary(data: bytes) -> np.ndarray:
    n = _binary_count(data)
    if n is None:
        raise Refusal(f"not an STL file (binary STL needs an 84-byte header, the file has {len(data)} bytes)")
    need = 84 + 50 * n
    if len(data) < need:
        raise Refusal(f"binary STL declares {n} triangles ({need} bytes) but is only {len(data)} bytes "
                      "(truncated?)")
    if len(data) > need:
        raise Refusal(f"binary STL declares {n} triangles ({need} bytes) but has {len(data) - need} "
                      "more bytes after them")
    rec = np.frombuffer(data, dtype=_RECORD, count=n, offset=84)
    return rec["v"].reshape(-1, 3).astype(np.float32)


def _read_ascii(data: bytes) -> np.ndarray:
    nums = _VERTEX.findall(data)
    facets = len(_FACET.findall(data))
    closed = len(_ENDFACET.findall(data))
    ends = [m.start() for m in _ENDSOLID.finditer(data)]
    if not ends or ends[-1] < max((m.start() for m in _ENDFACET.finditer(data)), default=0):
        raise Refusal(f"ASCII STL ends without 'endsolid' after {closed} complete facets (truncated?)")
    if facets != closed:
        raise Refusal(f"ASCII STL has {facets} 'facet' lines but {closed} 'endfacet' lines")
    if len(nums) != 3 * facets:
        raise Refusal(f"ASCII STL has {len(nums)} vertex lines for {facets} facets (3 each)")
    try:
        values = np.array(nums, dtype=np.float64)
    except ValueError:
        bad = next(t for row in nums for t in row if not _is_number(t))
        raise Refusal(f"ASCII STL vertex coordinate {bad.decode('ascii', 'replace')!r} is not a number") from None
    return values.astype(np.float32).reshape(-1, 3)


def _is_number(token: bytes) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def read_stl(data: bytes, path: Path) -> list[Mesh]:
    ascii_form = data.lstrip()[:5].lower() == b"solid"
    if ascii_form and _binary_count(data) is not None and 84 + 50 * _binary_count(data) == len(data):
        ascii_form = False
    positions = _read_ascii(data) if ascii_form else _read_binary(data)
    if positions.shape[0] == 0:
        raise Refusal("empty mesh (no facets)")
    tris = np.arange(positions.shape[0], dtype=np.uint32).reshape(-1, 3)
    return [Mesh(positions, tris, name=path.stem, meta={"source": str(path)})]
