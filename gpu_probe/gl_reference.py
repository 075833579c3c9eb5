"""GL reference for a software raster stage: window-space triangles rendered by the local OpenGL.

Renders a frame's triangles through moderngl on the local OpenGL (Mesa llvmpipe on our machines
and CI) and counts, with atomics in the fragment shader, the fragments shaded per pixel and per
triangle under an early depth test (``layout(early_fragment_tests) in;``), plus the covered pixels
with depth testing off; per pixel alone, by additive blending into a float colour buffer. The
application compares these counts with the pipeline model's raster stage pixel by pixel
(``meshopt-batch simulate --check-gl``, :mod:`meshopt_batch_app.glcheck`).

A *frame* here is any object with the window-space arrays of the pipeline model's
``FrameGeometry``: ``width``, ``height``, ``n_triangles``, ``xy`` ((T, 3, 2) float64 pixels,
y down, on the 1/256 grid), ``z`` ((T, 3) float32 window depth), ``draw`` ((T,) draw index) and
per-draw ``depth_test`` / ``depth_write`` flags.  This package does not import the pipeline
model; the application hands its frames over.

How the exact positions reach GL
--------------------------------
* The model's window coordinates are on the 1/256-pixel grid (llvmpipe has 8 sub-pixel bits).
  Each vertex is sent as NDC with ``w = 1`` through a *guard-band viewport*: a viewport with a
  power-of-two size ``S`` (at most ``GL_MAX_VIEWPORT_DIMS``, 16384) and an integer origin at or
  left of / below every vertex. Then ``ndc = (x - origin) / (S/2) - 1`` is exact in float32 and
  GL's viewport transform gives back exactly ``x``; no vertex is clipped in x/y (clipping would
  move vertices off the grid and change a few dozen fragments per frame); the framebuffer bounds
  do the cutting.
* y: the model's y runs down from the top of the screen; GL's window y runs up, so GL receives
  ``H - y`` and rows are flipped on read-back.
* z: ``glClipControl(GL_LOWER_LEFT, GL_ZERO_TO_ONE)`` makes NDC z equal window z with the default
  depth range, so the model's float32 window depth reaches the rasterizer unchanged. The depth
  buffer is ``GL_DEPTH_COMPONENT32F`` so depth comparisons are float32 comparisons, as in the model.

Limits: a frame whose vertices span more than 16384 pixels in x or y cannot be fed exactly (GL
clips those triangles in x/y); :attr:`GLCounts.viewport_exact` says so.  ``renderer()`` gives
the GL renderer string; ``gl_available()`` says whether a context can be made (tests skip
otherwise).
"""

from __future__ import annotations

import ctypes
import math
from dataclasses import dataclass

import numpy as np

from .context import get_context, gl_proc
from .context import gl_available as context_available

__all__ = [
    "GLCounts",
    "gl_available",
    "renderer",
    "render_counts",
    "render_image",
]

GL_DEPTH_COMPONENT32F = 0x8CAC
GL_RGBA8 = 0x8058
GL_R32F = 0x822E
GL_FRAMEBUFFER = 0x8D40
GL_RENDERBUFFER = 0x8D41
GL_COLOR_ATTACHMENT0 = 0x8CE0
GL_DEPTH_ATTACHMENT = 0x8D00
GL_FRAMEBUFFER_COMPLETE = 0x8CD5
GL_LOWER_LEFT = 0x8CA1
GL_ZERO_TO_ONE = 0x935F
GL_NEGATIVE_ONE_TO_ONE = 0x935E

MAX_VIEWPORT = 16384

_VS = """
#version 430
in vec3 in_pos;
void main() { gl_Position = vec4(in_pos, 1.0); }
"""

_FS_COUNT = """
#version 430
%s
layout(std430, binding = 0) buffer PixelCounts { uint pix[]; };
layout(std430, binding = 1) buffer TriCounts { uint tri[]; };
uniform int width;
uniform int tri_base;
out vec4 colour;
void main() {
    ivec2 p = ivec2(gl_FragCoord.xy);
    atomicAdd(pix[p.y * width + p.x], 1u);
    %s
    colour = vec4(1.0);
}
"""

#: The per-triangle count of :data:`_FS_COUNT`.
_PER_TRIANGLE = "atomicAdd(tri[tri_base + gl_PrimitiveID], 1u);"

#: Per-pixel counts without side effects: every fragment written adds 1 to a float channel
#: (additive blending; exact below 2^24 fragments a pixel).
_FS_ONE = """
#version 430
out float count;
void main() { count = 1.0; }
"""

_FS_PLAIN = """
#version 430
flat in int v_draw;
out vec4 colour;
void main() {
    float k = float(v_draw % 251) / 251.0;
    colour = vec4(k, 1.0 - k, 0.5, 1.0);
}
"""

_VS_PLAIN = """
#version 430
in vec3 in_pos;
in int in_draw;
flat out int v_draw;
void main() { gl_Position = vec4(in_pos, 1.0); v_draw = in_draw; }
"""


class _GL:
    """The process-wide moderngl context (gpu_probe.context) + raw GL entry points."""

    _instance = None

    def __init__(self):
        import moderngl  # lazy: loads libGL; importing gpu_probe must not touch GL

        self.moderngl = moderngl
        self.ctx = get_context()
        u, i, pu = ctypes.c_uint, ctypes.c_int, ctypes.POINTER(ctypes.c_uint)
        self.glClipControl = gl_proc("glClipControl", None, u, u)
        self.glGenFramebuffers = gl_proc("glGenFramebuffers", None, i, pu)
        self.glGenRenderbuffers = gl_proc("glGenRenderbuffers", None, i, pu)
        self.glBindFramebuffer = gl_proc("glBindFramebuffer", None, u, u)
        self.glBindRenderbuffer = gl_proc("glBindRenderbuffer", None, u, u)
        self.glRenderbufferStorage = gl_proc("glRenderbufferStorage", None, u, u, i, i)
        self.glFramebufferRenderbuffer = gl_proc("glFramebufferRenderbuffer", None, u, u, u, u)
        self.glCheckFramebufferStatus = gl_proc("glCheckFramebufferStatus", u, u)
        self.glFinish = gl_proc("glFinish", None)
        self._fbos: dict[tuple[int, int], object] = {}
        self.prog_count_early = self.ctx.program(
            vertex_shader=_VS, fragment_shader=_FS_COUNT % ("layout(early_fragment_tests) in;", _PER_TRIANGLE))
        self.prog_count_blend = self.ctx.program(vertex_shader=_VS, fragment_shader=_FS_ONE)
        self.prog_plain = self.ctx.program(vertex_shader=_VS_PLAIN, fragment_shader=_FS_PLAIN)

    @classmethod
    def get(cls) -> _GL:
        """Raises gpu_probe.context.GLUnavailableError when there is no GL 4.3 context."""
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    def framebuffer(self, width: int, height: int, colour: int = GL_RGBA8):
        """A cached FBO with a colour renderbuffer (RGBA8, or ``colour``) and a 32-bit float
        depth renderbuffer."""
        key = (width, height, colour)
        if key in self._fbos:
            return self._fbos[key]
        rb = (ctypes.c_uint * 2)()
        self.glGenRenderbuffers(2, rb)
        self.glBindRenderbuffer(GL_RENDERBUFFER, rb[0])
        self.glRenderbufferStorage(GL_RENDERBUFFER, colour, width, height)
        self.glBindRenderbuffer(GL_RENDERBUFFER, rb[1])
        self.glRenderbufferStorage(GL_RENDERBUFFER, GL_DEPTH_COMPONENT32F, width, height)
        fb = ctypes.c_uint(0)
        self.glGenFramebuffers(1, ctypes.byref(fb))
        self.glBindFramebuffer(GL_FRAMEBUFFER, fb.value)
        self.glFramebufferRenderbuffer(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_RENDERBUFFER, rb[0])
        self.glFramebufferRenderbuffer(GL_FRAMEBUFFER, GL_DEPTH_ATTACHMENT, GL_RENDERBUFFER, rb[1])
        status = self.glCheckFramebufferStatus(GL_FRAMEBUFFER)
        if status != GL_FRAMEBUFFER_COMPLETE:
            raise RuntimeError(f"framebuffer incomplete: 0x{status:x}")
        fbo = self.ctx.detect_framebuffer(fb.value)
        self._fbos[key] = fbo
        return fbo


def gl_available() -> bool:
    """True when an OpenGL 4.3 context can be created (EGL, headless)."""
    return context_available()


def renderer() -> str:
    """The GL renderer string, e.g. ``llvmpipe (LLVM 15.0.6, 256 bits)``."""
    ctx = _GL.get().ctx
    return f"{ctx.info['GL_RENDERER']} / {ctx.info['GL_VERSION']}"


# --------------------------------------------------------------------------------- geometry feed
@dataclass
class _Viewport:
    ox: int
    oy: int
    sx: int
    sy: int
    exact: bool  # every vertex inside the viewport (no x/y clipping)


def _guard_band(lo: float, hi: float, screen: int) -> tuple[int, int, bool]:
    lo = min(lo, 0.0)
    hi = max(hi, float(screen))
    origin = int(math.floor(lo)) - 1
    need = hi - origin + 1
    size = 1 << max(1, int(math.ceil(math.log2(need))))
    exact = size <= MAX_VIEWPORT
    if not exact:
        size = MAX_VIEWPORT
        # centre the viewport on the screen; vertices beyond it get clipped by GL
        origin = -((MAX_VIEWPORT - screen) // 2)
    return origin, size, exact


def _ndc_vertices(frame) -> tuple[np.ndarray, _Viewport]:
    """(N*3, 3) float32 NDC positions whose viewport transform is exact, and the viewport."""
    w, h = frame.width, frame.height
    xy = frame.xy.reshape(-1, 2)
    x = xy[:, 0]
    yg = h - xy[:, 1]  # GL window y (up)
    if x.size:
        ox, sx, ex = _guard_band(float(x.min()), float(x.max()), w)
        oy, sy, ey = _guard_band(float(yg.min()), float(yg.max()), h)
    else:
        ox, sx, ex = -1, 2 * max(w, h), True
        oy, sy, ey = -1, 2 * max(w, h), True
        sx = sy = 1 << int(math.ceil(math.log2(sx)))
    nx = (x - ox) / (sx / 2.0) - 1.0
    ny = (yg - oy) / (sy / 2.0) - 1.0
    out = np.empty((x.size, 3), np.float32)
    out[:, 0] = nx
    out[:, 1] = ny
    out[:, 2] = frame.z.reshape(-1)
    vp = _Viewport(ox, oy, sx, sy, ex and ey)
    if vp.exact:
        # the round trip NDC -> window must be exact (it is whenever |x - origin| < 2^15)
        back_x = out[:, 0].astype(np.float64) * (sx / 2.0) + (ox + sx / 2.0)
        back_y = out[:, 1].astype(np.float64) * (sy / 2.0) + (oy + sy / 2.0)
        if not (np.array_equal(back_x, x) and np.array_equal(back_y, yg)):
            vp.exact = False
    return out, vp


def _state_runs(frame) -> list[tuple[int, int, bool, bool]]:
    """Consecutive triangle ranges with the same (depth_test, depth_write): (start, end, dt, dw)."""
    n = frame.n_triangles
    if n == 0:
        return []
    dt = frame.depth_test[frame.draw]
    dw = frame.depth_write[frame.draw] & dt
    key = dt.astype(np.int8) * 2 + dw.astype(np.int8)
    cut = np.flatnonzero(np.diff(key)) + 1
    starts = np.concatenate([[0], cut])
    ends = np.concatenate([cut, [n]])
    return [(int(s), int(e), bool(dt[s]), bool(dw[s])) for s, e in zip(starts, ends, strict=True)]


_DEPTH_FUNCS = {"less": "<", "lequal": "<=", "greater": ">", "gequal": ">=", "equal": "==",
                "notequal": "!=", "always": "1", "never": "0"}


@dataclass
class GLCounts:
    """Per-pixel (y down, row 0 = top) and per-triangle counts from the GL reference."""

    shaded: np.ndarray        # uint32 (H, W): fragments shaded with the early depth test
    covered: np.ndarray       # uint32 (H, W): fragments with depth testing off (coverage)
    shaded_per_tri: np.ndarray | None   # uint32 (N,), None when not counted
    covered_per_tri: np.ndarray | None  # uint32 (N,), None when not counted
    depth: np.ndarray         # float32 (H, W): final depth buffer
    viewport_exact: bool      # no vertex was outside the guard-band viewport
    renderer: str
    draw: np.ndarray | None = None  # int32 (N,): draw index of each triangle

    def shaded_per_draw(self) -> np.ndarray:
        """Fragments shaded per draw (the per-triangle atomics summed over each draw)."""
        if self.shaded_per_tri is None:
            raise ValueError("rendered with per_triangle=False: no per-triangle counts")
        if self.draw is None or not self.draw.size:
            return np.zeros(0, np.int64)
        return np.bincount(self.draw, weights=self.shaded_per_tri).astype(np.int64)


def render_counts(frame, *, depth_func: str = "less", clear_depth: float = 1.0,
                  coverage: bool = True, per_triangle: bool = True) -> GLCounts:
    """Render ``frame`` through GL in program order and count the fragments shaded.

    Per-draw depth state is honoured: draws with ``depth_test`` False are drawn with the depth
    test disabled, draws with ``depth_write`` False (NWOZ) test but do not write. Blending does
    not change which fragments are shaded, so no draw is blended as the frame says.  The counts
    per pixel and per triangle come from atomics in a fragment shader with the early depth test
    (``layout(early_fragment_tests) in;``).  With ``per_triangle=False`` only the per-pixel
    counts are taken (``shaded_per_tri`` and ``covered_per_tri`` are None), by additive
    blending of 1 per fragment into a float colour buffer, which the renderer does without the
    atomics' cost: a fragment is blended when it passes the depth test, so the counts are the
    same.
    """
    g = _GL.get()
    ctx, mgl = g.ctx, g.moderngl
    w, h, n = frame.width, frame.height, frame.n_triangles
    verts, vp = _ndc_vertices(frame)
    fbo = g.framebuffer(w, h) if per_triangle else g.framebuffer(w, h, GL_R32F)
    prog = g.prog_count_early if per_triangle else g.prog_count_blend
    if per_triangle:
        prog["width"].value = w
    vbo = ctx.buffer(verts.tobytes() if n else b"\0" * 12)
    vao = ctx.vertex_array(prog, [(vbo, "3f", "in_pos")])
    buffers = [vao, vbo]
    if per_triangle:
        pix = ctx.buffer(reserve=4 * w * h)
        tri = ctx.buffer(reserve=4 * max(n, 1))
        pix.bind_to_storage_buffer(0)
        tri.bind_to_storage_buffer(1)
        buffers += [pix, tri]

    def run_pass(depth_on: bool):
        if per_triangle:
            pix.clear()
            tri.clear()
        fbo.viewport = (vp.ox, vp.oy, vp.sx, vp.sy)
        fbo.use()
        ctx.viewport = (vp.ox, vp.oy, vp.sx, vp.sy)
        g.glClipControl(GL_LOWER_LEFT, GL_ZERO_TO_ONE)
        fbo.depth_mask = True
        fbo.clear(0.0, 0.0, 0.0, 0.0, depth=clear_depth, viewport=(0, 0, w, h))
        ctx.disable(mgl.BLEND | mgl.CULL_FACE)
        if not per_triangle:
            ctx.enable(mgl.BLEND)
            ctx.blend_func = mgl.ONE, mgl.ONE
        ctx.depth_func = _DEPTH_FUNCS[depth_func]
        for s, e, dt, dw in (_state_runs(frame) if depth_on else [(0, n, False, False)] if n else []):
            if dt:
                ctx.enable(mgl.DEPTH_TEST)
            else:
                ctx.disable(mgl.DEPTH_TEST)
            fbo.depth_mask = bool(dw)
            if per_triangle:
                prog["tri_base"].value = s
            vao.render(mgl.TRIANGLES, vertices=3 * (e - s), first=3 * s)
        fbo.depth_mask = True
        g.glFinish()
        if not per_triangle:
            ctx.disable(mgl.BLEND)
            counts = np.frombuffer(fbo.read(components=1, dtype="f4", viewport=(0, 0, w, h)), np.float32)
            return counts.reshape(h, w)[::-1].astype(np.uint32), None
        p = np.frombuffer(pix.read(), np.uint32).reshape(h, w)[::-1].copy()
        t = np.frombuffer(tri.read(), np.uint32)[:n].copy()
        return p, t

    try:
        shaded, shaded_tri = run_pass(True)
        depth = np.frombuffer(fbo.read(attachment=-1, dtype="f4", components=1), np.float32)
        depth = depth.reshape(h, w)[::-1].copy()
        if coverage:
            covered, covered_tri = run_pass(False)
        else:
            covered = np.zeros((h, w), np.uint32)
            covered_tri = np.zeros(n, np.uint32) if per_triangle else None
    finally:
        g.glClipControl(GL_LOWER_LEFT, GL_NEGATIVE_ONE_TO_ONE)
        ctx.disable(mgl.DEPTH_TEST | mgl.BLEND)
        for obj in buffers:
            obj.release()
    return GLCounts(shaded=shaded, covered=covered, shaded_per_tri=shaded_tri,
                    covered_per_tri=covered_tri, depth=depth, viewport_exact=vp.exact,
                    renderer=renderer(), draw=frame.draw)


class GLImageRenderer:
    """Renders frames through GL with a plain colour shader (no counters): the timing peer.

    Keeps its buffers between frames like an application would; ``render(frame)`` uploads the
    vertices, draws in program order with each draw's depth state, waits for completion
    (``glFinish``) and, with ``read=True``, reads the colour image back (y down).
    """

    def __init__(self):
        self.g = _GL.get()

    def render(self, frame, read: bool = True, depth_func: str = "less"):
        g = self.g
        ctx, mgl = g.ctx, g.moderngl
        w, h, n = frame.width, frame.height, frame.n_triangles
        verts, vp = _ndc_vertices(frame)
        draws = np.repeat(frame.draw.astype(np.int32), 3)
        fbo = g.framebuffer(w, h)
        vbo = ctx.buffer(verts.tobytes() if n else b"\0" * 12)
        dbo = ctx.buffer(draws.tobytes() if n else b"\0" * 4)
        vao = ctx.vertex_array(g.prog_plain, [(vbo, "3f", "in_pos"), (dbo, "1i", "in_draw")])
        try:
            fbo.viewport = (vp.ox, vp.oy, vp.sx, vp.sy)
            fbo.use()
            ctx.viewport = (vp.ox, vp.oy, vp.sx, vp.sy)
            g.glClipControl(GL_LOWER_LEFT, GL_ZERO_TO_ONE)
            fbo.depth_mask = True
            fbo.clear(0.0, 0.0, 0.0, 1.0, depth=1.0, viewport=(0, 0, w, h))
            ctx.depth_func = _DEPTH_FUNCS[depth_func]
            for s, e, dt, dw in _state_runs(frame):
                if dt:
                    ctx.enable(mgl.DEPTH_TEST)
                else:
                    ctx.disable(mgl.DEPTH_TEST)
                fbo.depth_mask = bool(dw)
                vao.render(mgl.TRIANGLES, vertices=3 * (e - s), first=3 * s)
            fbo.depth_mask = True
            g.glFinish()
            img = None
            if read:
                img = np.frombuffer(fbo.read(components=3, viewport=(0, 0, w, h)), np.uint8)
                img = img.reshape(h, w, 3)[::-1]
        finally:
            g.glClipControl(GL_LOWER_LEFT, GL_NEGATIVE_ONE_TO_ONE)
            ctx.disable(mgl.DEPTH_TEST)
            for obj in (vao, vbo, dbo):
                obj.release()
        return img


def render_image(frame, read: bool = True) -> np.ndarray | None:
    """One frame through GL with a plain shader (see :class:`GLImageRenderer`)."""
    return GLImageRenderer().render(frame, read=read)
