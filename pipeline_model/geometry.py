"""Geometry stage of the TBR pipeline model: vertex shading count, transform, clipping, culling.

One :class:`~pipeline_model.scene.FrameSpec` (draw calls) in, one
:class:`~pipeline_model.frame.FrameGeometry` (screen triangles in program order) out, as the
Geometry Pipeline of a Mali-like GPU does it (paper 000 sec. 4.1, paper 003 sec. II):

1. **Vertex shading.** Each draw's index buffer is run through the batch/cache model of
   :func:`meshopt_batch.model.prediction.predict` under a profile; the predicted invocations are the
   draw's ``vertex_invocations``.  The default profile is ``fifo:16``: Mali Utgard/Midgard
   GPUs (the papers' baseline, Table 2) keep post-transform vertices in a small FIFO-like
   cache rather than NVIDIA-style batches, and the 4 KB vertex cache of Table 2 holds a few
   dozen 64-byte lines -- 16 vertices is a conservative reading.  Any profile of
   :mod:`meshopt_batch.model.profiles` can be given.  Meshes do not change between frames, so the
   prediction is cached per (mesh, optimizer, profile).
2. **Triangle order.** The index order is the mesh's, or the one a mesh optimizer
   (``optimizer="forsyth" | "tipsify" | "batch" | ...``, :func:`meshopt_batch.optimizers.optimize`)
   produces; it changes step 1's count and the raster stage's intra-object overdraw.
3. **Transform** ``clip = P * V * M * p`` (float64), per-vertex directional light for lit draws
   (``shade = max(0, n . l)`` with the normal through the model matrix's inverse transpose;
   1 for unlit draws); :mod:`pipeline_model.shading` adds its ambient term.
4. **Clipping** in homogeneous space against the near (``z >= -w``) and far (``z <= w``) planes
   and a guard band (``guard_band`` pixels beyond each screen edge, so window coordinates
   stay well inside the rasterizer's fixed-point range).  Triangles wholly outside one
   frustum or viewport plane are dropped (counted as culled); triangles crossing a clip plane
   are clipped (Sutherland-Hodgman, new vertices always interpolated from the inside vertex
   so a shared edge gives the same vertex in both neighbours) and the polygon is emitted as a
   fan in place of the original triangle.
5. **Viewport** to window pixels (origin top-left, y down), depth ``z_w = z/w * 0.5 + 0.5``,
   positions snapped to 1/256 pixel (:func:`pipeline_model.frame.snap_to_subpixel`).
6. **Face culling** on the snapped positions: GL's counter-clockwise front face (seen with y
   up), so with y down a front face has negative signed area.  Zero-area triangles are
   always dropped (they cover no pixel centre).

Everything is vectorised over all triangles of a draw; the few triangles that need clipping
go through one compiled (numba) loop.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass, replace

import numpy as np
from numba import njit

from meshopt_batch.geometry.mesh_record import Mesh
from meshopt_batch.model.prediction import predict
from meshopt_batch.model.profiles import Profile, get_profile
from meshopt_batch.optimizers import Method, optimize_mesh

from .frame import FrameGeometry

__all__ = ["DEFAULT_PROFILE", "PreparedMesh", "GeometryStage"]

DEFAULT_PROFILE = "fifo:16"
DEFAULT_GUARD_BAND = 4096.0



@dataclass(frozen=True, eq=False)
class PreparedMesh:
    """A mesh as submitted: (possibly optimized) index order and its vertex-shader count."""

    name: str
    positions: np.ndarray      # (V, 4) float64 homogeneous
    normals: np.ndarray        # (V, 3) float64
    uv: np.ndarray             # (V, 2) float32
    triangles: np.ndarray      # (T, 3) int64 submitted index order
    invocations: int           # meshopt_batch.model.prediction.predict under the profile
    optimizer: str | None
    profile: str
    centre: np.ndarray         # (3,) object-space bounding-sphere centre (of the referenced vertices)
    radius: float

    @property
    def triangle_count(self) -> int:
        return int(self.triangles.shape[0])


class _PreparedCache:
    """Prepared meshes by content, method and profile, shared by every :class:`GeometryStage` of
    the process (least recently used first out beyond ``max_bytes``).

    The same mesh recurs across runs -- a scene simulated once per triangle order, scenes
    built from the same shapes -- and its optimized order, predicted invocations and bounding
    sphere depend only on its arrays, the method and the profile.  Treat the arrays of a
    prepared mesh as read-only."""

    def __init__(self, max_bytes: int = 512 << 20):
        self.max_bytes = max_bytes
        self.bytes = 0
        self.items: OrderedDict = OrderedDict()

    @staticmethod
    def key(mesh: Mesh, method: Method | None, profile: Profile):
        h = hashlib.blake2b(digest_size=16)
        arrays = [mesh.positions, mesh.triangles, mesh.attributes.get("normal"), mesh.attributes.get("uv")]
        for a in arrays:
            if a is None:
                h.update(b"-")
                continue
            a = np.ascontiguousarray(a)
            h.update(f"{a.dtype.str}{a.shape}".encode())
            h.update(a.data)
        return h.digest(), method, profile

    def get(self, key):
        hit = self.items.get(key)
        if hit is not None:
            self.items.move_to_end(key)
        return hit

    def put(self, key, prepared: PreparedMesh) -> None:
        size = sum(a.nbytes for a in (prepared.positions, prepared.normals, prepared.uv, prepared.triangles))
        if size > self.max_bytes:
            return
        self.items[key] = prepared
        self.bytes += size
        while self.bytes > self.max_bytes:
            _, old = self.items.popitem(last=False)
            self.bytes -= sum(a.nbytes for a in (old.positions, old.normals, old.uv, old.triangles))


_PREPARED = _PreparedCache()


class GeometryStage:
    """The geometry pipeline; holds the per-mesh cache (one instance per simulation run).

    Parameters
    ----------
    profile : Profile
        Vertex-reuse profile for :func:`meshopt_batch.model.prediction.predict` (default ``fifo:16``).
    method : Method or None
        Mesh optimizer applied to every draw's index buffer before submission (its vertex
        buffer renumbered or grown where the method does so).
    guard_band : float
        Pixels beyond each screen edge where triangles are clipped in x and y.
    """

    def __init__(self, profile: Profile | None = None, method: Method | None = None,
                 guard_band: float = DEFAULT_GUARD_BAND):
        self.profile = profile if profile is not None else get_profile(DEFAULT_PROFILE)
        self.method = method
        self.guard_band = float(guard_band)
        self._cache: dict[int, tuple[Mesh, PreparedMesh]] = {}

    # ------------------------------------------------------------------ meshes
    def prepare(self, mesh: Mesh) -> PreparedMesh:
        """Submitted index order + predicted invocations of a mesh (cached per stage, and across
        stages by content: see :class:`_PreparedCache`)."""
        hit = self._cache.get(id(mesh))
        if hit is not None and hit[0] is mesh:
            return hit[1]
        key = _PREPARED.key(mesh, self.method, self.profile)
        prepared = _PREPARED.get(key)
        if prepared is None:
            prepared = self._prepare(mesh)
            _PREPARED.put(key, prepared)
        elif prepared.name != mesh.name:
            prepared = replace(prepared, name=mesh.name)
        self._cache[id(mesh)] = (mesh, prepared)
        return prepared

    def _prepare(self, mesh: Mesh) -> PreparedMesh:
        submitted = (optimize_mesh(mesh, method=self.method, profile=self.profile)
                     if self.method is not None else mesh)
        tris = np.asarray(submitted.triangles, np.int64)
        pos = np.asarray(submitted.positions, np.float64)
        vcount = pos.shape[0]
        nrm = np.asarray(submitted.attributes.get("normal", np.zeros((vcount, 3))), np.float64)
        uv = np.asarray(submitted.attributes.get("uv", np.zeros((vcount, 2))), np.float32)
        inv = (predict(submitted.triangles, vcount, profile=self.profile).invocations
               if len(tris) else 0)
        used = pos[np.unique(tris)] if len(tris) else np.zeros((1, 3))
        centre = (used.min(0) + used.max(0)) / 2.0
        radius = float(np.sqrt(((used - centre) ** 2).sum(1).max())) * (1 + 1e-9) + 1e-12
        prepared = PreparedMesh(
            name=mesh.name,
            positions=np.concatenate([pos, np.ones((vcount, 1))], axis=1),
            normals=nrm,
            uv=uv,
            triangles=tris,
            invocations=int(inv),
            optimizer=self.method.name if self.method is not None else None,
            profile=self.profile.name,
            centre=centre,
            radius=radius,
        )
        return prepared

    # ------------------------------------------------------------------ frames
    def process(self, spec, tile: int = 16) -> FrameGeometry:
        """Run the geometry stage on one frame's draw calls."""
        W, H = int(spec.width), int(spec.height)
        D = len(spec.draws)
        light = np.asarray(spec.light_direction, np.float64)
        ln = np.linalg.norm(light)
        light = light / ln if ln > 0 else np.array([0.0, 1.0, 0.0])
        gx = 1.0 + 2.0 * self.guard_band / W
        gy = 1.0 + 2.0 * self.guard_band / H

        per_draw = {
            "object_id": np.zeros(D, np.int32), "depth_test": np.zeros(D, bool),
            "depth_write": np.zeros(D, bool), "blend": np.zeros(D, bool),
            "alpha": np.zeros(D, np.float32), "shader_cost": np.zeros(D, np.float32),
            "colour_kind": np.zeros(D, np.int8), "colour_params": np.zeros((D, 8), np.float32),
            "vertex_invocations": np.zeros(D, np.int64), "triangles_in": np.zeros(D, np.int64),
            "triangles_culled": np.zeros(D, np.int64), "triangles_clipped": np.zeros(D, np.int64),
        }
        vc_parts, uv_parts, sh_parts, tri_parts, draw_parts, prim_parts, cull_parts = [], [], [], [], [], [], []
        culled_whole = np.zeros(D, np.int64)
        base = 0
        for d, dr in enumerate(spec.draws):
            st = dr.state
            pm = self.prepare(dr.mesh)
            per_draw["object_id"][d] = dr.object_id
            per_draw["depth_test"][d] = st.depth_test
            per_draw["depth_write"][d] = st.depth_write and st.depth_test
            per_draw["blend"][d] = st.blend
            per_draw["alpha"][d] = st.alpha
            per_draw["shader_cost"][d] = st.shader_cost
            per_draw["colour_kind"][d] = st.colour_code
            per_draw["colour_params"][d] = st.colour_params()
            per_draw["vertex_invocations"][d] = pm.invocations
            per_draw["triangles_in"][d] = pm.triangle_count
            if pm.triangle_count == 0:
                continue
            mvp = np.asarray(dr.proj, np.float64) @ np.asarray(dr.view, np.float64) @ np.asarray(dr.model, np.float64)
            if _sphere_outside(mvp, pm.centre, pm.radius):
                # the whole object is outside one frustum plane: every triangle is culled
                # (its vertices are still shaded: vertex_invocations is counted above)
                culled_whole[d] = pm.triangle_count
                continue
            clip_v = pm.positions @ mvp.T                                   # (V, 4)
            if st.lit or st.colour_kind == "lit":
                m3 = np.asarray(dr.model, np.float64)[:3, :3]
                try:
                    nmat = np.linalg.inv(m3).T
                except np.linalg.LinAlgError:
                    nmat = m3
                n = pm.normals @ nmat.T
                nl = np.linalg.norm(n, axis=1)
                nl[nl == 0] = 1.0
                shade_v = np.clip((n @ light) / nl, 0.0, 1.0).astype(np.float32)
            else:
                shade_v = np.ones(pm.positions.shape[0], np.float32)
            t = pm.triangles
            vc_parts.append(clip_v)
            uv_parts.append(pm.uv)
            sh_parts.append(shade_v)
            tri_parts.append(t + base)
            base += clip_v.shape[0]
            draw_parts.append(np.full(len(t), d, np.int32))
            prim_parts.append(np.arange(len(t), dtype=np.int32))
            cull_parts.append(np.full(len(t), {"back": 1, "front": 2, "none": 0}[st.cull], np.int8))

        if not tri_parts:
            per_draw["triangles_culled"] = culled_whole
            fg = FrameGeometry.empty(W, H, tile, 0)
            return fg.replace(**per_draw)
        VC = np.ascontiguousarray(np.concatenate(vc_parts))       # (Vt, 4) clip coordinates
        VUV = np.concatenate(uv_parts)                             # (Vt, 2)
        VS = np.concatenate(sh_parts)                              # (Vt,)
        T = np.ascontiguousarray(np.concatenate(tri_parts))        # (N, 3) into VC
        draw = np.concatenate(draw_parts)
        prim = np.concatenate(prim_parts)
        cullm = np.concatenate(cull_parts)
        N = T.shape[0]

        # status 0 rejected, 1 inside the clip volume, 2 clip; the kept triangles of status 1
        # projected, snapped and culled, with their attributes
        status, kept, xy, zw, inv_w, uv, shade = _project(VC, T, cullm, VUV, VS, float(W), float(H), gx, gy)
        src_clip = np.nonzero(status == 2)[0]
        src = kept
        if len(src_clip):
            tc = T[src_clip]
            attrs = np.concatenate([VUV[tc].astype(np.float64), VS[tc][..., None]], axis=2)
            planes = np.array([
                [0, 0, 1, 1],      # near: z + w >= 0
                [0, 0, -1, 1],     # far:  w - z >= 0
                [1, 0, 0, gx],     # guard left:  x + gx w >= 0
                [-1, 0, 0, gx],    # guard right
                [0, 1, 0, gy],     # guard bottom
                [0, -1, 0, gy],    # guard top
            ], np.float64)
            out_c, out_a, out_src = _clip_polygons(VC[tc], attrs, planes)
            m = out_c.shape[0]
            fan_v = np.ascontiguousarray(out_c.reshape(-1, 4))
            fan_t = np.arange(3 * m, dtype=np.int64).reshape(m, 3)
            c_src = src_clip[out_src]
            cxy, cz, cinv, ckeep = _setup(fan_v, fan_t, cullm[c_src], float(W), float(H))
            # merge in program order: source triangle, then fan order
            src = np.concatenate([kept, c_src[ckeep]])
            order = np.argsort(src, kind="stable")
            src = src[order]
            xy = np.concatenate([xy, cxy[ckeep]])[order]
            zw = np.concatenate([zw, cz[ckeep]])[order]
            inv_w = np.concatenate([inv_w, cinv[ckeep]])[order]
            uv = np.concatenate([uv, out_a[ckeep][..., :2].astype(np.float32)])[order]
            shade = np.concatenate([shade, out_a[ckeep][..., 2].astype(np.float32)])[order]

        # per-draw counters
        survived = np.zeros(N, bool)             # a source triangle is culled when nothing survives
        survived[src] = True
        per_draw["triangles_culled"] = (np.bincount(draw[~survived], minlength=D).astype(np.int64)
                                        + culled_whole)
        per_draw["triangles_clipped"] = np.bincount(draw[src_clip], minlength=D).astype(np.int64)
        return FrameGeometry(
            width=W, height=H, tile=tile,
            xy=xy, z=zw, inv_w=inv_w, uv=uv, shade=np.clip(shade, 0.0, 1.0),
            draw=draw[src], prim=prim[src],
            validate_on_init=False,
            **per_draw,
        )


def _sphere_outside(mvp: np.ndarray, centre: np.ndarray, radius: float) -> bool:
    """True when an object-space bounding sphere lies wholly outside one frustum plane."""
    for plane in _FRUSTUM:
        p = plane @ mvp                     # the clip-space plane in object space
        n = np.sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2])
        if n == 0.0:
            continue
        if (p[0] * centre[0] + p[1] * centre[1] + p[2] * centre[2] + p[3]) < -radius * n:
            return True
    return False


_FRUSTUM = np.array([
    [1, 0, 0, 1], [-1, 0, 0, 1], [0, 1, 0, 1], [0, -1, 0, 1], [0, 0, 1, 1], [0, 0, -1, 1],
], np.float64)


@njit(cache=True, inline="always")
def _snap(a):
    s = a * 256.0
    if s >= 0:
        return np.floor(s + 0.5) / 256.0
    return -np.floor(-s + 0.5) / 256.0


@njit(cache=True)
def _setup(VC, T, cull, W, H):
    """Perspective divide, viewport (y down), 1/256 snap, face culling.

    Same rounding as :func:`pipeline_model.frame.snap_to_subpixel` (ties away from zero).
    Returns xy (n, 3, 2) float64, z (n, 3) float32, inv_w (n, 3) float32, keep (n,) bool.
    """
    n = T.shape[0]
    xy = np.empty((n, 3, 2))
    z = np.empty((n, 3), np.float32)
    iw = np.empty((n, 3), np.float32)
    keep = np.empty(n, np.bool_)
    for i in range(n):
        for k in range(3):
            v = T[i, k]
            inv = 1.0 / VC[v, 3]
            xy[i, k, 0] = _snap((VC[v, 0] * inv + 1.0) * 0.5 * W)
            xy[i, k, 1] = _snap((1.0 - VC[v, 1] * inv) * 0.5 * H)
            zz = VC[v, 2] * inv * 0.5 + 0.5
            if zz < 0.0:
                zz = 0.0
            elif zz > 1.0:
                zz = 1.0
            z[i, k] = np.float32(zz)
            iw[i, k] = np.float32(inv)
        ax = xy[i, 1, 0] - xy[i, 0, 0]
        ay = xy[i, 1, 1] - xy[i, 0, 1]
        bx = xy[i, 2, 0] - xy[i, 0, 0]
        by = xy[i, 2, 1] - xy[i, 0, 1]
        area = ax * by - ay * bx            # y down: front (CCW in GL) < 0
        c = cull[i]
        keep[i] = area != 0.0 and not (c == 1 and area > 0.0) and not (c == 2 and area < 0.0)
    return xy, z, iw, keep


@njit(cache=True)
def _outcode(x, y, z, w, gx, gy):
    """Bits of the planes a clip-space vertex is outside: near, far, the guard band (4 bits),
    then the viewport (4 bits)."""
    c = 0
    if z < -w:
        c |= 1
    if z > w:
        c |= 2
    if x < -gx * w:
        c |= 4
    if x > gx * w:
        c |= 8
    if y < -gy * w:
        c |= 16
    if y > gy * w:
        c |= 32
    if x < -w:
        c |= 64
    if x > w:
        c |= 128
    if y < -w:
        c |= 256
    if y > w:
        c |= 512
    return c


@njit(cache=True)
def _project(VC, T, cull, VUV, VS, W, H, gx, gy):
    """Classify every triangle and set up the ones inside the clip volume, in program order.

    Outcodes, perspective divide, viewport, 1/256 snap and depth are per vertex, so they are
    computed once per vertex (same operations as :func:`_setup`, hence the same bits) and the
    triangles gather them.  Returns ``status`` (0 outside one frustum/viewport plane, 1 inside
    near/far and the guard band, 2 needs clipping) and, for the status-1 triangles that survive
    face culling: their indices, window xy (float64), depth and 1/w (float32), uv and shade."""
    nv = VC.shape[0]
    code = np.empty(nv, np.int32)
    sx = np.empty(nv)
    sy = np.empty(nv)
    sz = np.empty(nv, np.float32)
    siw = np.empty(nv, np.float32)
    for v in range(nv):
        code[v] = _outcode(VC[v, 0], VC[v, 1], VC[v, 2], VC[v, 3], gx, gy)
        inv = 1.0 / VC[v, 3]
        sx[v] = _snap((VC[v, 0] * inv + 1.0) * 0.5 * W)
        sy[v] = _snap((1.0 - VC[v, 1] * inv) * 0.5 * H)
        zz = VC[v, 2] * inv * 0.5 + 0.5
        if zz < 0.0:
            zz = 0.0
        elif zz > 1.0:
            zz = 1.0
        sz[v] = np.float32(zz)
        siw[v] = np.float32(inv)
    n = T.shape[0]
    status = np.empty(n, np.int8)
    kept = np.empty(n, np.int64)
    xy = np.empty((n, 3, 2))
    z = np.empty((n, 3), np.float32)
    iw = np.empty((n, 3), np.float32)
    uv = np.empty((n, 3, 2), np.float32)
    shade = np.empty((n, 3), np.float32)
    m = 0
    for i in range(n):
        a = T[i, 0]
        b = T[i, 1]
        c = T[i, 2]
        if code[a] & code[b] & code[c] != 0:
            status[i] = 0
            continue
        if (code[a] | code[b] | code[c]) & 63:
            status[i] = 2
            continue
        status[i] = 1
        ax = sx[b] - sx[a]
        ay = sy[b] - sy[a]
        bx = sx[c] - sx[a]
        by = sy[c] - sy[a]
        area = ax * by - ay * bx            # y down: front (CCW in GL) < 0
        cl = cull[i]
        if area == 0.0 or (cl == 1 and area > 0.0) or (cl == 2 and area < 0.0):
            continue
        kept[m] = i
        for k in range(3):
            v = T[i, k]
            xy[m, k, 0] = sx[v]
            xy[m, k, 1] = sy[v]
            z[m, k] = sz[v]
            iw[m, k] = siw[v]
            uv[m, k, 0] = VUV[v, 0]
            uv[m, k, 1] = VUV[v, 1]
            shade[m, k] = VS[v]
        m += 1
    return status, kept[:m], xy[:m], z[:m], iw[:m], uv[:m], shade[:m]


@njit(cache=True)
def _clip_polygons(clip, attrs, planes):
    """Sutherland-Hodgman against ``planes`` (inside: dot(plane, v) >= 0); fans out.

    Returns (out_clip (M, 3, 4), out_attrs (M, 3, A), source (M,)) with the fans of each input
    triangle in order.
    """
    K = clip.shape[0]
    A = attrs.shape[2]
    P = planes.shape[0]
    maxv = 3 + P
    out_c = np.empty((K * (maxv - 2), 3, 4))
    out_a = np.empty((K * (maxv - 2), 3, A))
    out_s = np.empty(K * (maxv - 2), np.int64)
    m = 0
    pc = np.empty((maxv, 4))
    pa = np.empty((maxv, A))
    qc = np.empty((maxv, 4))
    qa = np.empty((maxv, A))
    for k in range(K):
        n = 3
        for i in range(3):
            pc[i, :] = clip[k, i, :]
            pa[i, :] = attrs[k, i, :]
        for p in range(P):
            if n == 0:
                break
            q = 0
            for i in range(n):
                j = (i + 1) % n
                di = (planes[p, 0] * pc[i, 0] + planes[p, 1] * pc[i, 1] + planes[p, 2] * pc[i, 2]
                      + planes[p, 3] * pc[i, 3])
                dj = (planes[p, 0] * pc[j, 0] + planes[p, 1] * pc[j, 1] + planes[p, 2] * pc[j, 2]
                      + planes[p, 3] * pc[j, 3])
                ini = di >= 0.0
                inj = dj >= 0.0
                if ini:
                    qc[q, :] = pc[i, :]
                    qa[q, :] = pa[i, :]
                    q += 1
                if ini != inj:
                    # interpolate from the inside vertex towards the outside one
                    if ini:
                        t = di / (di - dj)
                        for c in range(4):
                            qc[q, c] = pc[i, c] + t * (pc[j, c] - pc[i, c])
                        for c in range(A):
                            qa[q, c] = pa[i, c] + t * (pa[j, c] - pa[i, c])
                    else:
                        t = dj / (dj - di)
                        for c in range(4):
                            qc[q, c] = pc[j, c] + t * (pc[i, c] - pc[j, c])
                        for c in range(A):
                            qa[q, c] = pa[j, c] + t * (pa[i, c] - pa[j, c])
                    q += 1
            n = q
            for i in range(n):
                pc[i, :] = qc[i, :]
                pa[i, :] = qa[i, :]
        for i in range(1, n - 1):
            out_c[m, 0, :] = pc[0, :]
            out_c[m, 1, :] = pc[i, :]
            out_c[m, 2, :] = pc[i + 1, :]
            out_a[m, 0, :] = pa[0, :]
            out_a[m, 1, :] = pa[i, :]
            out_a[m, 2, :] = pa[i + 1, :]
            out_s[m] = k
            m += 1
    return out_c[:m], out_a[:m], out_s[:m]
