"""Meshes and triangle orders the probe checks profiles on.

A *draw* is one indexed triangle list drawn by one draw call: a PLY file is one draw, a
glTF file gives one draw per primitive (with the index type the file stores). Orders:
``original`` (file order), ``shuffled`` (a seeded random permutation of the triangles) and
``optimized`` (meshoptimizer's ``optimize_vertex_cache`` when installed, else the
project's Tipsify).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

import meshes
from meshopt_batch.io import load_meshes
from meshopt_batch.optimizers import get_method, optimize
from meshopt_batch.support.errors import MeshoptBatchError

ORDERS = ("original", "shuffled", "optimized")


@dataclass(frozen=True)
class Draw:
    """One draw call's worth of geometry."""

    name: str
    triangles: np.ndarray          # (T, 3) uint32
    vertex_count: int
    index_dtype: np.dtype = np.dtype(np.uint32)

    @property
    def triangle_count(self) -> int:
        return int(self.triangles.shape[0])


def shared_meshes_dir() -> Path | None:
    """The shared test meshes' folder (:func:`meshes.shared_meshes_dir`: ``../shared/meshes`` or
    ``$MESHOPT_BATCH_SHARED_MESHES``), or ``None`` when it is absent."""
    d = meshes.shared_meshes_dir()
    return d if d.is_dir() else None


def shared_mesh_paths(max_triangles: int | None = None) -> list[Path]:
    """The shared test meshes (``*.ply``, ``*.glb``), smallest first."""
    d = shared_meshes_dir()
    if d is None:
        return []
    paths = sorted(p for p in d.iterdir() if p.suffix.lower() in (".ply", ".glb", ".gltf",
                                                                  ".obj"))
    paths.sort(key=lambda p: p.stat().st_size)
    if max_triangles is not None:
        out = []
        for p in paths:
            if sum(d.triangle_count for d in load_draws(p)) <= max_triangles:
                out.append(p)
        return out
    return paths


_cache: dict[str, list[Draw]] = {}


def load_draws(path) -> list[Draw]:
    """The draws of a mesh file, in file order, without any reordering or welding."""
    path = Path(path)
    key = str(path.resolve())
    if key in _cache:
        return _cache[key]
    if not path.exists():
        raise MeshoptBatchError(f"{path}: no such file")
    draws = [Draw(m.name or f"{path.stem}#{i}", np.asarray(m.triangles, np.uint32), int(m.vertex_count),
                  np.dtype(m.index_dtype)) for i, m in enumerate(load_meshes(path))]
    _cache[key] = draws
    return draws


def optimize_order(triangles, vertex_count: int) -> tuple[np.ndarray, str]:
    """A vertex-cache optimised order: meshoptimizer when installed, else Tipsify."""
    tri = np.ascontiguousarray(triangles, dtype=np.uint32)
    peer = get_method("meshoptimizer")
    method = peer if peer.available else get_method("tipsify")
    out = optimize(tri, int(vertex_count), method=method).triangles
    label = "meshoptimizer.optimize_vertex_cache" if method is peer else "tipsify"
    return np.asarray(out, np.uint32), label


def ordered(draw: Draw, order: str, seed: int = 0) -> np.ndarray:
    """The draw's triangles in ``order`` (one of :data:`ORDERS`), as a new writable array."""
    if order == "original":
        return np.array(draw.triangles, dtype=np.uint32, copy=True)
    if order == "shuffled":
        rng = np.random.default_rng(seed)
        return draw.triangles[rng.permutation(draw.triangle_count)]
    if order == "optimized":
        return optimize_order(draw.triangles, draw.vertex_count)[0]
    raise MeshoptBatchError(f"unknown order {order!r} (known: {', '.join(ORDERS)})")
