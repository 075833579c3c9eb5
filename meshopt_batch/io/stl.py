"""STL, ascii and binary, read: every facet's three corners are three vertices of their own.

STL has no index buffer, so nothing is merged: ``T`` facets give ``3T`` vertices and the
triangles ``(0, 1, 2), (3, 4, 5), ...``.  A file starting with ``solid`` is still read as
binary when its size is exactly what its binary triangle count says.
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

import numpy as np

from ..mesh import Mesh
from .common import Refusal

__all__ = ["read_stl"]


def read_stl(data: bytes, path: Path) -> list[Mesh]:
    binary = True
    if data[:5].lower() == b"solid":
        n = struct.unpack("<I", data[80:84])[0] if len(data) >= 84 else -1
        if not (len(data) >= 84 and 84 + 50 * n == len(data)):
            binary = False
    if binary:
        if len(data) < 84:
            raise Refusal("not an STL file (too short)")
        n = struct.unpack("<I", data[80:84])[0]
        if len(data) < 84 + 50 * n:
            raise Refusal(f"binary STL declares {n} triangles but is only {len(data)} bytes")
        rec = np.frombuffer(data, dtype=np.dtype([("n", "<f4", 3), ("v", "<f4", (3, 3)), ("a", "<u2")]),
                            count=n, offset=84)
        positions = rec["v"].reshape(-1, 3).astype(np.float32)
    else:
        text = data.decode("ascii", errors="replace")
        nums = re.findall(r"^\s*vertex\s+(\S+)\s+(\S+)\s+(\S+)", text, flags=re.MULTILINE | re.IGNORECASE)
        if len(nums) % 3:
            raise Refusal("ASCII STL has a facet without 3 vertices")
        positions = np.array(nums, dtype=np.float64).astype(np.float32).reshape(-1, 3)
    if positions.shape[0] == 0:
        raise Refusal("empty mesh (no facets)")
    tris = np.arange(positions.shape[0], dtype=np.uint32).reshape(-1, 3)
    return [Mesh(positions, tris, name=path.stem, meta={"source": str(path)})]

