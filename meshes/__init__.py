"""Meshes for tests, benchmarks and scenes: a finder for ``../shared/meshes``, small
procedural generators, and the shipped scene files (``meshes/scenes/*.json``, :data:`SCENES_DIR`).

The real test meshes (Stanford bunny, dragon, ...) live outside the repository, in
``../shared/meshes`` next to it (override with ``$MESHOPT_BATCH_SHARED_MESHES``); they are
never committed.  :func:`shared_mesh_path` finds one by name and returns ``None`` when it is
absent, so tests can skip.

Every generator is deterministic (same parameters, same arrays, same order) and returns a
:class:`~meshopt_batch.geometry.mesh_record.Mesh` with ``normal`` (unit length, pointing outwards) and
``uv`` attributes.  Triangles are counter-clockwise seen from the side the normals point to.

=====================  ==========================  ============================
generator              vertices                    triangles
=====================  ==========================  ============================
``grid(nx, ny)``       ``(nx+1)(ny+1)``            ``2 nx ny``
``uv_sphere(la, lo)``  ``(la-1)(lo+1) + 2 lo``     ``2 lo (la-1)``
``icosphere(s)``       ``10 * 4^s + 2``            ``20 * 4^s``
``torus(M, m)``        ``M m``                     ``2 M m``
``cube()``             ``24``                      ``12``
``random_soup(n)``     ``3 n``                     ``n``
=====================  ==========================  ============================
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from meshopt_batch.geometry.mesh_record import Mesh

__all__ = [
    "MESH_SUFFIXES",
    "SCENES_DIR",
    "SHARED_MESH_DIR",
    "cube",
    "grid",
    "icosphere",
    "random_soup",
    "shared_mesh_path",
    "shared_meshes",
    "shared_meshes_dir",
    "torus",
    "uv_sphere",
]

_ENV = "MESHOPT_BATCH_SHARED_MESHES"
_REPO_ROOT = Path(__file__).resolve().parent.parent

#: The shipped pipeline-model scenes, one JSON file each (data; written by
#: ``python -m pipeline_model.scene.builders``).
SCENES_DIR = Path(__file__).resolve().parent / "scenes"

#: File types :func:`shared_meshes` lists.
MESH_SUFFIXES = (".ply", ".obj", ".off", ".stl", ".glb", ".gltf")


def shared_meshes_dir() -> Path:
    """The folder of the shared test meshes.

    Returns
    -------
    pathlib.Path
        ``$MESHOPT_BATCH_SHARED_MESHES`` if set, else ``../shared/meshes`` beside the
        repository (the folder may not exist).
    """
    env = os.environ.get(_ENV)
    return Path(env) if env else (_REPO_ROOT.parent / "shared" / "meshes").resolve()


#: The shared mesh folder as it was when this module was imported.
SHARED_MESH_DIR = shared_meshes_dir()


def shared_mesh_path(name: str) -> Path | None:
    """The path of a shared mesh, found by name.

    Parameters
    ----------
    name : str
        ``"bunny"`` (any of :data:`MESH_SUFFIXES`) or ``"bunny.ply"``.

    Returns
    -------
    pathlib.Path or None
        The file, or None when it is absent (tests skip).
    """
    d = shared_meshes_dir()
    if not d.is_dir():
        return None
    p = d / name
    if p.suffix.lower() in MESH_SUFFIXES and p.is_file():
        return p
    for ext in MESH_SUFFIXES:
        q = d / f"{name}{ext}"
        if q.is_file():
            return q
    return None


def shared_meshes() -> list[Path]:
    """Every mesh file in the shared folder.

    Returns
    -------
    list of pathlib.Path
        Sorted by name; empty when the folder is absent.
    """
    d = shared_meshes_dir()
    if not d.is_dir():
        return []
    return sorted(p for p in d.iterdir() if p.is_file() and p.suffix.lower() in MESH_SUFFIXES)


# ---------------------------------------------------------------------------- generators
def _mesh(name: str, positions, triangles, normals, uvs) -> Mesh:
    return Mesh(
        positions=np.asarray(positions, np.float32),
        triangles=np.asarray(triangles, np.int64),
        name=name,
        attributes={"normal": np.asarray(normals, np.float32), "uv": np.asarray(uvs, np.float32)},
        meta={"generator": f"meshes.{name}"},
    )


def _grid_triangles(nu: int, nv: int, wrap_u: bool = False, wrap_v: bool = False) -> np.ndarray:
    """Two CCW triangles per cell of a ``nu x nv`` cell grid, row by row.

    Vertex ``(i, j)`` is ``j * cols + i`` with ``cols = nu`` when ``wrap_u`` else ``nu + 1``
    (likewise rows).  Corners a=(i,j), b=(i+1,j), c=(i,j+1), d=(i+1,j+1) give (a,b,d), (a,d,c).
    """
    cols = nu if wrap_u else nu + 1
    rows = nv if wrap_v else nv + 1
    i, j = np.meshgrid(np.arange(nu), np.arange(nv))
    i, j = i.ravel(), j.ravel()
    i1 = (i + 1) % cols
    j1 = (j + 1) % rows
    a, b, c, d = j * cols + i, j * cols + i1, j1 * cols + i, j1 * cols + i1
    return np.stack([np.stack([a, b, d], 1), np.stack([a, d, c], 1)], 1).reshape(-1, 3)


def grid(nx: int = 8, ny: int | None = None) -> Mesh:
    """A grid over ``[0, 1]^2`` in the XY plane facing +Z, rows of increasing y.

    Parameters
    ----------
    nx : int
        Quads along x (at least 1).
    ny : int, optional
        Quads along y (default ``nx``).

    Returns
    -------
    Mesh
        The mesh, with ``normal`` and ``uv`` attributes.

    Raises
    ------
    ValueError
        A size under 1.
    """
    nx = int(nx)
    ny = nx if ny is None else int(ny)
    if nx < 1 or ny < 1:
        raise ValueError("grid needs nx, ny >= 1")
    u, v = np.meshgrid(np.arange(nx + 1) / nx, np.arange(ny + 1) / ny)
    uv = np.stack([u.ravel(), v.ravel()], 1)
    pos = np.concatenate([uv, np.zeros((len(uv), 1))], 1)
    nrm = np.tile([0.0, 0.0, 1.0], (len(uv), 1))
    return _mesh(f"grid_{nx}x{ny}", pos, _grid_triangles(nx, ny), nrm, uv)


def uv_sphere(n_lat: int = 8, n_lon: int = 16) -> Mesh:
    """A unit sphere of latitude bands and longitude segments.

    Vertices: ``n_lon`` north-pole copies (one per segment, so ``u`` is right), the
    ``n_lat - 1`` inner rings of ``n_lon + 1`` vertices (the seam is duplicated), then
    ``n_lon`` south-pole copies.  No degenerate triangles.

    Parameters
    ----------
    n_lat : int
        Latitude bands (at least 2).
    n_lon : int
        Longitude segments (at least 3).

    Returns
    -------
    Mesh
        The mesh, with ``normal`` and ``uv`` attributes.

    Raises
    ------
    ValueError
        Too few bands or segments.
    """
    la, lo = int(n_lat), int(n_lon)
    if la < 2 or lo < 3:
        raise ValueError("uv_sphere needs n_lat >= 2, n_lon >= 3")
    ring_u = np.arange(lo + 1) / lo
    pole_u = (np.arange(lo) + 0.5) / lo
    v_rows = 1 - np.arange(1, la) / la  # inner rings, north to south
    u = np.concatenate([pole_u, np.tile(ring_u, la - 1), pole_u])
    v = np.concatenate([np.ones(lo), np.repeat(v_rows, lo + 1), np.zeros(lo)])
    theta = 2 * np.pi * u
    phi = np.pi * (1 - v)  # 0 at the north pole
    pos = np.stack([np.sin(phi) * np.sin(theta), np.cos(phi), np.sin(phi) * np.cos(theta)], 1)
    pos[:lo] = (0, 1, 0)
    pos[-lo:] = (0, -1, 0)
    # CCW seen from outside: u grows to the right, v upwards
    k = np.arange(lo)

    def ring(r: int) -> np.ndarray:  # vertex k of inner ring r
        return lo + r * (lo + 1) + k

    south = lo + (la - 1) * (lo + 1) + k
    tris = [np.stack([ring(0), ring(0) + 1, k], 1)]  # north cap
    for r in range(la - 2):  # band between ring r (upper) and ring r + 1 (lower)
        lower, upper = ring(r + 1), ring(r)
        tris.append(np.stack([np.stack([lower, lower + 1, upper + 1], 1),
                              np.stack([lower, upper + 1, upper], 1)], 1).reshape(-1, 3))
    tris.append(np.stack([south, ring(la - 2) + 1, ring(la - 2)], 1))  # south cap
    return _mesh(f"uv_sphere_{la}x{lo}", pos, np.concatenate(tris), pos, np.stack([u, v], 1))


def icosphere(subdiv: int = 2) -> Mesh:
    """A unit icosphere: an icosahedron whose triangles are split in four ``subdiv`` times.

    Edge midpoints are created in triangle order and shared, so the mesh is closed
    (``V = 10 * 4^s + 2``, ``T = 20 * 4^s``).  ``uv`` is the spherical mapping without
    seam copies (it wraps at ``u = 0/1``).

    Parameters
    ----------
    subdiv : int
        Subdivisions (at least 0).

    Returns
    -------
    Mesh
        The mesh, with ``normal`` and ``uv`` attributes.

    Raises
    ------
    ValueError
        A negative subdivision.
    """
    s = int(subdiv)
    if s < 0:
        raise ValueError("icosphere needs subdiv >= 0")
    t = (1 + 5**0.5) / 2
    verts = [(-1, t, 0), (1, t, 0), (-1, -t, 0), (1, -t, 0), (0, -1, t), (0, 1, t),
             (0, -1, -t), (0, 1, -t), (t, 0, -1), (t, 0, 1), (-t, 0, -1), (-t, 0, 1)]
    faces = [(0, 11, 5), (0, 5, 1), (0, 1, 7), (0, 7, 10), (0, 10, 11), (1, 5, 9), (5, 11, 4),
             (11, 10, 2), (10, 7, 6), (7, 1, 8), (3, 9, 4), (3, 4, 2), (3, 2, 6), (3, 6, 8),
             (3, 8, 9), (4, 9, 5), (2, 4, 11), (6, 2, 10), (8, 6, 7), (9, 8, 1)]
    pos = [np.array(p, np.float64) / np.linalg.norm(p) for p in verts]
    for _ in range(s):
        mid: dict[tuple[int, int], int] = {}
        new = []
        for f in faces:
            m = []
            for a, b in ((f[0], f[1]), (f[1], f[2]), (f[2], f[0])):
                key = (a, b) if a < b else (b, a)
                if key not in mid:
                    q = pos[a] + pos[b]
                    pos.append(q / np.linalg.norm(q))
                    mid[key] = len(pos) - 1
                m.append(mid[key])
            ab, bc, ca = m
            new += [(f[0], ab, ca), (f[1], bc, ab), (f[2], ca, bc), (ab, bc, ca)]
        faces = new
    p = np.array(pos)
    uv = np.stack([0.5 + np.arctan2(p[:, 0], p[:, 2]) / (2 * np.pi),
                   0.5 + np.arcsin(np.clip(p[:, 1], -1, 1)) / np.pi], 1)
    return _mesh(f"icosphere_{s}", p, np.array(faces), p, uv)


def torus(n_major: int = 24, n_minor: int = 12, major_radius: float = 1.0,
          minor_radius: float = 0.25) -> Mesh:
    """A closed torus around +Y, every vertex of valence 6.

    Vertex ``(i, j)`` (``i`` around the main ring, ``j`` around the tube) is
    ``j * n_major + i``; no seam copies, so ``uv = (i / n_major, j / n_minor)`` wraps.

    Parameters
    ----------
    n_major : int
        Vertices around the main ring (at least 3).
    n_minor : int
        Vertices around the tube (at least 3).
    major_radius : float
        Radius of the main ring.
    minor_radius : float
        Radius of the tube.

    Returns
    -------
    Mesh
        The mesh, with ``normal`` and ``uv`` attributes.

    Raises
    ------
    ValueError
        Fewer than 3 vertices around either ring.
    """
    M, m = int(n_major), int(n_minor)
    if M < 3 or m < 3:
        raise ValueError("torus needs n_major, n_minor >= 3")
    i, j = np.meshgrid(np.arange(M), np.arange(m))
    i, j = i.ravel(), j.ravel()
    a = 2 * np.pi * i / M
    b = 2 * np.pi * j / m
    nrm = np.stack([np.cos(b) * np.sin(a), np.sin(b), np.cos(b) * np.cos(a)], 1)
    centre = np.stack([np.sin(a), np.zeros_like(a), np.cos(a)], 1) * major_radius
    pos = centre + minor_radius * nrm
    tris = _grid_triangles(M, m, wrap_u=True, wrap_v=True)
    return _mesh(f"torus_{M}x{m}", pos, tris, nrm, np.stack([i / M, j / m], 1))


def cube() -> Mesh:
    """The cube ``[-0.5, 0.5]^3``: 6 faces of 4 vertices (flat normals, uv ``[0, 1]^2`` per face).

    Returns
    -------
    Mesh
        24 vertices, 12 triangles, with ``normal`` and ``uv`` attributes.
    """
    # (normal, u axis, v axis) with u x v = normal: CCW seen from outside
    faces = [((1, 0, 0), (0, 0, -1), (0, 1, 0)), ((-1, 0, 0), (0, 0, 1), (0, 1, 0)),
             ((0, 1, 0), (1, 0, 0), (0, 0, -1)), ((0, -1, 0), (1, 0, 0), (0, 0, 1)),
             ((0, 0, 1), (1, 0, 0), (0, 1, 0)), ((0, 0, -1), (-1, 0, 0), (0, 1, 0))]
    corners = np.array([(0, 0), (1, 0), (0, 1), (1, 1)], np.float64)
    pos, nrm, uv, tris = [], [], [], []
    for f, (n, du, dv) in enumerate(faces):
        n, du, dv = (np.array(x, np.float64) for x in (n, du, dv))
        pos.append(0.5 * n + (corners[:, :1] - 0.5) * du + (corners[:, 1:] - 0.5) * dv)
        nrm.append(np.tile(n, (4, 1)))
        uv.append(corners)
        tris.append(np.array([(0, 1, 3), (0, 3, 2)]) + 4 * f)
    return _mesh("cube", np.concatenate(pos), np.concatenate(tris), np.concatenate(nrm), np.concatenate(uv))


def random_soup(n: int = 100, seed: int = 0) -> Mesh:
    """Disconnected triangles in ``[-1, 1]^3``, no vertex shared.

    Triangle ``k`` uses vertices ``3k, 3k+1, 3k+2``; normals are the face normals and the
    uvs ``(0,0), (1,0), (0,1)``.  The worst case for any vertex cache: every corner is a
    new vertex.

    Parameters
    ----------
    n : int
        Triangles (at least 1).
    seed : int
        Seed of the random positions.

    Returns
    -------
    Mesh
        The mesh, with ``normal`` and ``uv`` attributes.

    Raises
    ------
    ValueError
        ``n`` under 1.
    """
    n = int(n)
    if n < 1:
        raise ValueError("random_soup needs n >= 1")
    rng = np.random.default_rng(seed)
    pos = rng.uniform(-1, 1, size=(n, 3, 3)).astype(np.float32).astype(np.float64)
    fn = np.cross(pos[:, 1] - pos[:, 0], pos[:, 2] - pos[:, 0])
    length = np.linalg.norm(fn, axis=1, keepdims=True)
    fn = np.where(length > 0, fn / np.where(length > 0, length, 1), (0, 0, 1))
    nrm = np.repeat(fn, 3, axis=0)
    uv = np.tile([(0, 0), (1, 0), (0, 1)], (n, 1))
    return _mesh(f"random_soup_{n}_{seed}", pos.reshape(-1, 3), np.arange(3 * n).reshape(-1, 3), nrm, uv)
