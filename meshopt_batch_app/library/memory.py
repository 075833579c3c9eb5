"""The memory a library run may use: a per-file estimate and the ``--max-memory`` budget.

Estimate of one file's working memory (beyond its worker process's own, about
:data:`WORKER_BASELINE` once the libraries are imported)::

    memory = FILE_BASE + BYTES_FACTOR * bytes + PER_TRIANGLE * triangles

``bytes`` is the file's size plus its external glTF buffers and images; ``triangles`` is read
from the header where the format states it (PLY ``element face``, OFF counts, binary STL's
count, the glTF accessors of triangle primitives) and otherwise assumed from the size at
:data:`BYTES_PER_TRIANGLE` of the format.  The constants were measured as the growth of a
worker's peak resident memory over :func:`meshopt_batch.assets.file_optimization.optimize_file` with the batch
method on the shared meshes (bunny_sub2, 1.1 M triangles: 390 MB, about 370 B per
triangle) and rounded up; the other methods use less.

The budget: a file starts only while the estimates of the files in flight plus its own
stay within ``--max-memory``; the largest waiting file goes first, and smaller ones do not
overtake it while it waits (it cannot starve).  A file whose estimate alone exceeds the
budget runs when nothing else does.  Default: three quarters of the memory available at the
start, less :data:`WORKER_BASELINE` per worker.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from meshopt_batch.support.errors import MeshoptBatchError

__all__ = ["WORKER_BASELINE", "available_memory", "default_budget", "estimate_memory",
           "estimate_triangles", "parse_size"]

MiB = 1 << 20
#: Resident memory of an idle worker process with numpy, numba and the optimizers loaded.
WORKER_BASELINE = 200 * MiB
FILE_BASE = 16 * MiB
BYTES_FACTOR = 3
PER_TRIANGLE = 400
#: Assumed size of one triangle's share of the file where the header does not say.
BYTES_PER_TRIANGLE = {".obj": 40, ".stl": 250, ".ply": 20, ".off": 30, ".gltf": 20, ".glb": 20}
_GLTF_TRIANGLE_MODES = (4, 5, 6)

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: str) -> int:
    """Bytes of a size such as ``512M``, ``4G``, ``1.5GiB`` or ``1000000`` (powers of 1024)."""
    match = _SIZE.match(str(text))
    if not match or (match.group(3) and not match.group(2) and match.group(3).lower() != "b"):
        raise MeshoptBatchError(f"--max-memory {text!r}: expected a size such as 512M, 4G or 2.5GiB")
    value = int(float(match.group(1)) * _UNITS[match.group(2).lower()])
    if value <= 0:
        raise MeshoptBatchError(f"--max-memory {text!r}: must be positive")
    return value


def available_memory() -> int:
    """Memory the kernel says is available now (``MemAvailable``; physical size elsewhere)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def default_budget(workers: int) -> int:
    """Three quarters of the available memory less every worker's baseline (at least 256 MiB)."""
    return max(256 * MiB, available_memory() * 3 // 4 - workers * WORKER_BASELINE)


def _ply_faces(head: bytes) -> int | None:
    end = head.find(b"end_header")
    for line in head[: end if end >= 0 else len(head)].splitlines():
        tok = line.split()
        if len(tok) == 3 and tok[0] == b"element" and tok[1] == b"face" and tok[2].isdigit():
            return int(tok[2])
    return None


def _off_faces(head: bytes) -> int | None:
    lines = [ln.split(b"#")[0].split() for ln in head.splitlines()]
    lines = [ln for ln in lines if ln]
    if not lines or not lines[0][0].upper().endswith(b"OFF"):
        return None
    counts = lines[0][1:] if len(lines[0]) > 1 else (lines[1] if len(lines) > 1 else [])
    return int(counts[1]) if len(counts) >= 2 and counts[1].isdigit() else None


def _stl_triangles(head: bytes, size: int) -> int | None:
    count = int.from_bytes(head[80:84], "little") if len(head) >= 84 else -1
    return count if size == 84 + 50 * count else None      # binary; ASCII STL states no count


def _gltf_triangles(document: dict) -> int | None:
    try:
        accessors = document.get("accessors", [])
        total = 0
        for mesh in document.get("meshes", []):
            for prim in mesh.get("primitives", []):
                if prim.get("mode", 4) not in _GLTF_TRIANGLE_MODES:
                    continue
                index = prim.get("indices", prim.get("attributes", {}).get("POSITION"))
                total += int(accessors[index]["count"]) // 3 if index is not None else 0
        return total
    except (AttributeError, IndexError, KeyError, TypeError, ValueError):
        return None


def estimate_triangles(path: str | os.PathLike, document: dict | None = None) -> int:
    """Triangles of a mesh file from its header (or glTF JSON), else from its size."""
    path = Path(path)
    suffix = path.suffix.lower()
    size = path.stat().st_size
    found = None
    if suffix in (".gltf", ".glb"):
        found = _gltf_triangles(document) if document is not None else None
    elif suffix in (".ply", ".off", ".stl"):
        with open(path, "rb") as fh:
            head = fh.read(4096)
        found = (_ply_faces(head) if suffix == ".ply" else _off_faces(head) if suffix == ".off"
                 else _stl_triangles(head, size))
    if found is None:
        found = size // BYTES_PER_TRIANGLE.get(suffix, 20)
    return max(0, int(found))


def estimate_memory(total_bytes: int, triangles: int) -> int:
    """Working memory of optimizing one file (see the module docstring)."""
    return FILE_BASE + BYTES_FACTOR * int(total_bytes) + PER_TRIANGLE * int(triangles)
