"""Small procedural meshes for the pipeline model's scenes (with normals and uvs).

Every generator returns a :class:`meshopt_batch.geometry.mesh_record.Mesh` whose vertex and triangle order is
a deterministic function of its parameters.  Triangles are counter-clockwise seen from
outside (GL's default front face), normals point outwards, ``uv`` spans ``[0, 1]`` per face or
around the surface so the scenes' procedural textures (checker, stripes, noise) have
something to follow.

The grids are emitted row by row, which is already a fair order for a vertex cache;
:func:`shuffle_triangles` makes a cache-hostile copy so that the mesh optimizers of
``meshopt_batch.optimizers`` have something to win in a scene (``"shuffle": SEED`` in a scene
file's mesh entry).

Shapes (all centred on the origin unless said otherwise, unit size):

``box``      cube ``[-0.5, 0.5]^3``, each face an ``n x n`` grid (``divisions``), or with
             ``divisions = [nx, ny, nz]`` quads along each axis (a box scaled to a building's
             size keeps square-ish cells)
``plane``    ``[-0.5, 0.5]^2`` in the XZ plane facing +Y, ``nx x nz`` grid
``quad``     ``[-0.5, 0.5]^2`` in the XY plane facing +Z (sprites, HUD panels)
``sphere``   radius 0.5, ``segments`` around Y, ``rings`` from pole to pole
``cylinder`` radius 0.5, from y = 0 to y = 1, with caps
``cone``     base radius 0.5 at y = 0, apex at y = 1, with a base cap
``torus``    major radius 0.35, minor radius 0.15, in the XZ plane
"""

from __future__ import annotations

import numpy as np

from meshopt_batch.geometry.mesh_record import Mesh

__all__ = ["SHAPES", "make_shape", "box", "plane", "quad", "sphere", "cylinder", "cone", "torus",
           "shuffle_triangles", "vertex_normals", "planar_uv"]


def _grid(nu: int, nv: int):
    """Vertex (u, v) in [0,1]^2 of an (nu+1) x (nv+1) grid and its 2*nu*nv CCW triangles.

    Triangles are CCW when u runs along +x and v along +y of a right-handed face frame.
    """
    u = np.linspace(0.0, 1.0, nu + 1)
    v = np.linspace(0.0, 1.0, nv + 1)
    uu, vv = np.meshgrid(u, v)  # rows = v
    uv = np.stack([uu.ravel(), vv.ravel()], axis=1)
    i, j = np.meshgrid(np.arange(nu), np.arange(nv))
    a = (j * (nu + 1) + i).ravel()
    b = a + 1
    c = a + nu + 1
    d = c + 1
    tris = np.stack([np.stack([a, b, d], 1), np.stack([a, d, c], 1)], axis=1).reshape(-1, 3)
    return uv, tris


def _mesh(name, pos, tris, normals, uv) -> Mesh:
    return Mesh(
        positions=np.asarray(pos, np.float32),
        triangles=np.asarray(tris, np.uint32),
        name=name,
        attributes={"normal": np.asarray(normals, np.float32), "uv": np.asarray(uv, np.float32)},
        meta={"source": "pipeline_model.shapes"},
    )


def box(divisions: int | list[int] = 1) -> Mesh:
    """Unit cube with ``divisions x divisions`` quads per face (24 corner-split vertices for 1);
    ``divisions = [nx, ny, nz]`` gives ``nx`` quads along x, ``ny`` along y, ``nz`` along z."""
    if isinstance(divisions, (list, tuple)):
        if len(divisions) != 3:
            raise TypeError(f"divisions: expected an int or [nx, ny, nz], got {divisions!r}")
        nd = [max(1, int(d)) for d in divisions]
    else:
        nd = [max(1, int(divisions))] * 3
    # face: (normal, u axis, v axis); u x v = normal keeps the grid CCW from outside
    faces = [
        ((1, 0, 0), (0, 0, -1), (0, 1, 0)),
        ((-1, 0, 0), (0, 0, 1), (0, 1, 0)),
        ((0, 1, 0), (1, 0, 0), (0, 0, -1)),
        ((0, -1, 0), (1, 0, 0), (0, 0, 1)),
        ((0, 0, 1), (1, 0, 0), (0, 1, 0)),
        ((0, 0, -1), (-1, 0, 0), (0, 1, 0)),
    ]
    pos, nor, uvs, tris = [], [], [], []
    base = 0
    for nrm, ua, va in faces:
        nrm, ua, va = (np.array(x, np.float64) for x in (nrm, ua, va))
        guv, gt = _grid(nd[int(np.flatnonzero(ua)[0])], nd[int(np.flatnonzero(va)[0])])
        p = 0.5 * nrm + (guv[:, :1] - 0.5) * ua + (guv[:, 1:] - 0.5) * va
        pos.append(p)
        nor.append(np.repeat(nrm[None], len(p), 0))
        uvs.append(guv)
        tris.append(gt + base)
        base += len(p)
    name = f"box{nd[0]}" if nd[0] == nd[1] == nd[2] else f"box{nd[0]}x{nd[1]}x{nd[2]}"
    return _mesh(name, np.concatenate(pos), np.concatenate(tris), np.concatenate(nor),
                 np.concatenate(uvs))


def plane(nx: int = 1, nz: int | None = None) -> Mesh:
    """Unit square in XZ facing +Y, ``nx x nz`` quads; uv (0,0) at (-0.5, -0.5)... (x, -z)."""
    nx = max(1, int(nx))
    nz = max(1, int(nz if nz is not None else nx))
    guv, gt = _grid(nx, nz)
    # u along +x, v along -z: u x v = +y (CCW seen from above)
    pos = np.stack([guv[:, 0] - 0.5, np.zeros(len(guv)), 0.5 - guv[:, 1]], axis=1)
    nor = np.repeat(np.array([[0.0, 1.0, 0.0]]), len(guv), 0)
    return _mesh(f"plane{nx}x{nz}", pos, gt, nor, guv)


def quad(nx: int = 1, ny: int | None = None) -> Mesh:
    """Unit square in XY facing +Z (towards a default camera), ``nx x ny`` quads."""
    nx = max(1, int(nx))
    ny = max(1, int(ny if ny is not None else nx))
    guv, gt = _grid(nx, ny)
    pos = np.stack([guv[:, 0] - 0.5, guv[:, 1] - 0.5, np.zeros(len(guv))], axis=1)
    nor = np.repeat(np.array([[0.0, 0.0, 1.0]]), len(guv), 0)
    return _mesh(f"quad{nx}x{ny}", pos, gt, nor, guv)


def sphere(segments: int = 24, rings: int = 12) -> Mesh:
    """UV sphere of radius 0.5 (poles duplicated per segment so uv is continuous)."""
    s = max(3, int(segments))
    r = max(2, int(rings))
    guv, gt = _grid(s, r)
    theta = guv[:, 0] * 2 * np.pi           # around y
    phi = (1.0 - guv[:, 1]) * np.pi          # 0 at the top pole (v = 1)
    nrm = np.stack([np.sin(phi) * np.sin(theta), np.cos(phi), np.sin(phi) * np.cos(theta)], 1)
    # u runs with +theta (towards +x from +z), v up: CCW from outside
    keep = ~((gt[:, 0] == gt[:, 1]) | (gt[:, 1] == gt[:, 2]) | (gt[:, 0] == gt[:, 2]))
    tris = gt[keep]
    # drop triangles that collapse at the poles (two corners on the same pole row)
    prow = (tris // (s + 1))
    pole = ((prow == 0).sum(1) >= 2) | ((prow == r).sum(1) >= 2)
    return _mesh(f"sphere{s}x{r}", 0.5 * nrm, tris[~pole], nrm, guv)


def cylinder(segments: int = 24, stacks: int = 1) -> Mesh:
    """Cylinder of radius 0.5 from y = 0 to 1 with both caps."""
    s = max(3, int(segments))
    k = max(1, int(stacks))
    guv, gt = _grid(s, k)
    theta = guv[:, 0] * 2 * np.pi
    side_n = np.stack([np.sin(theta), np.zeros_like(theta), np.cos(theta)], 1)
    side_p = np.stack([0.5 * side_n[:, 0], guv[:, 1], 0.5 * side_n[:, 2]], 1)
    pos, nor, uvs, tris = [side_p], [side_n], [guv], [gt]
    base = len(side_p)
    for y, ny in ((1.0, 1.0), (0.0, -1.0)):
        ang = np.linspace(0, 2 * np.pi, s, endpoint=False)
        ring = np.stack([0.5 * np.sin(ang), np.full(s, y), 0.5 * np.cos(ang)], 1)
        p = np.concatenate([[[0.0, y, 0.0]], ring])
        uv = np.concatenate([[[0.5, 0.5]], 0.5 + ring[:, [0, 2]]])
        c = np.arange(s)
        if ny > 0:
            t = np.stack([np.zeros(s, int), 1 + c, 1 + (c + 1) % s], 1)
        else:
            t = np.stack([np.zeros(s, int), 1 + (c + 1) % s, 1 + c], 1)
        pos.append(p)
        nor.append(np.repeat([[0.0, ny, 0.0]], len(p), 0))
        uvs.append(uv)
        tris.append(t + base)
        base += len(p)
    return _mesh(f"cylinder{s}x{k}", np.concatenate(pos), np.concatenate(tris),
                 np.concatenate(nor), np.concatenate(uvs))


def cone(segments: int = 24) -> Mesh:
    """Cone with base radius 0.5 at y = 0 and apex at y = 1, with a base cap."""
    s = max(3, int(segments))
    ang = np.linspace(0, 2 * np.pi, s + 1)
    ring = np.stack([0.5 * np.sin(ang), np.zeros_like(ang), 0.5 * np.cos(ang)], 1)
    apex = np.repeat([[0.0, 1.0, 0.0]], s, 0)
    slope = np.array([np.sin(ang), np.full_like(ang, 0.5), np.cos(ang)]).T
    slope /= np.linalg.norm(slope, axis=1, keepdims=True)
    mid = 0.5 * (ang[:-1] + ang[1:])
    apex_n = np.array([np.sin(mid), np.full_like(mid, 0.5), np.cos(mid)]).T
    apex_n /= np.linalg.norm(apex_n, axis=1, keepdims=True)
    pos = np.concatenate([ring, apex])
    nor = np.concatenate([slope, apex_n])
    uv = np.concatenate([np.stack([ang / (2 * np.pi), np.zeros_like(ang)], 1),
                         np.stack([mid / (2 * np.pi), np.ones_like(mid)], 1)])
    c = np.arange(s)
    tris = [np.stack([c, c + 1, s + 1 + c], 1)]
    base = len(pos)
    capr = ring[:-1]
    cp = np.concatenate([[[0.0, 0.0, 0.0]], capr])
    cuv = np.concatenate([[[0.5, 0.5]], 0.5 + capr[:, [0, 2]]])
    tris.append(np.stack([np.zeros(s, int), 1 + (c + 1) % s, 1 + c], 1) + base)
    pos = np.concatenate([pos, cp])
    nor = np.concatenate([nor, np.repeat([[0.0, -1.0, 0.0]], len(cp), 0)])
    uv = np.concatenate([uv, cuv])
    return _mesh(f"cone{s}", pos, np.concatenate(tris), nor, uv)


def torus(segments: int = 32, sides: int = 12, major: float = 0.35, minor: float = 0.15) -> Mesh:
    """Torus around the Y axis."""
    s = max(3, int(segments))
    k = max(3, int(sides))
    guv, gt = _grid(s, k)
    a = guv[:, 0] * 2 * np.pi
    b = guv[:, 1] * 2 * np.pi
    centre = np.stack([np.sin(a), np.zeros_like(a), np.cos(a)], 1)
    nrm = centre * np.cos(b)[:, None] + np.array([0.0, 1.0, 0.0]) * np.sin(b)[:, None]
    pos = major * centre + minor * nrm
    # grid u along +a (tangent), v along +b (outward -> up): u x v points outwards
    return _mesh(f"torus{s}x{k}", pos, gt, nrm, guv)


SHAPES = {
    "box": box,
    "plane": plane,
    "quad": quad,
    "sphere": sphere,
    "cylinder": cylinder,
    "cone": cone,
    "torus": torus,
}


def make_shape(name: str, **params) -> Mesh:
    """Build a shape by name (see :data:`SHAPES`) with its keyword parameters."""
    try:
        fn = SHAPES[name]
    except KeyError:
        raise ValueError(f"unknown shape {name!r} (known: {', '.join(SHAPES)})") from None
    try:
        return fn(**params)
    except TypeError as exc:
        raise ValueError(f"shape {name!r}: bad parameters {params} ({exc})") from None


def shuffle_triangles(mesh: Mesh, seed: int) -> Mesh:
    """A copy with triangles in a seeded random order (a cache-hostile index buffer)."""
    rng = np.random.default_rng(int(seed))
    perm = rng.permutation(mesh.triangle_count)
    return mesh.with_triangles(mesh.triangles[perm])


def vertex_normals(positions: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """Area-weighted vertex normals (float32, unit length; (0, 1, 0) for isolated vertices)."""
    p = np.asarray(positions, np.float64)
    t = np.asarray(triangles, np.int64)
    n = np.zeros_like(p)
    if len(t):
        fn = np.cross(p[t[:, 1]] - p[t[:, 0]], p[t[:, 2]] - p[t[:, 0]])
        for k in range(3):
            np.add.at(n, t[:, k], fn)
    ln = np.linalg.norm(n, axis=1)
    bad = ln < 1e-20
    n[bad] = (0.0, 1.0, 0.0)
    ln[bad] = 1.0
    return (n / ln[:, None]).astype(np.float32)


def planar_uv(positions: np.ndarray) -> np.ndarray:
    """Texture coordinates for a mesh without any: its x and y scaled by the largest extent."""
    p = np.asarray(positions, np.float64)
    if len(p) == 0:
        return np.zeros((0, 2), np.float32)
    lo = p.min(0)
    ext = float(np.max(p.max(0) - lo)) or 1.0
    return ((p[:, :2] - lo[:2]) / ext).astype(np.float32)
