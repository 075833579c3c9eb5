"""Which vertex indices are shaded together in one wave (paper 001 sec. 3.2).

The vertex shader uses subgroup (wave) operations: the lowest active lane allocates room
in an output buffer with one atomic add and broadcasts the offset; every lane writes its
``gl_VertexID`` at ``offset + its rank among the active lanes``; the first lane also
writes the number of active lanes and the subgroup size. Reading the buffer back gives the
waves in the order they allocated.

Two GLSL routes, whichever the driver offers: ``GL_KHR_shader_subgroup`` (NVIDIA, recent
Mesa) and ``GL_ARB_shader_ballot`` (Mesa llvmpipe: 8-wide subgroups on a 256-bit host).
Where neither exists :func:`capture_waves` returns a result with ``supported=False`` and
a reason, never an exception.  Through WebGPU the same capture is written in WGSL
(:mod:`gpu_probe.wgpu_waves`); :func:`gpu_probe.counters.capture_waves_through` captures through
a counter's API.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from meshopt_batch.support.errors import MeshoptBatchError

from .context import get_context, gl_info
from .invocations import _index_array

_HEADER = 2          # per wave: active lanes, subgroup size

_BODY = """
layout(std430, binding = 0) buffer Waves { uint next_free; uint data[]; };
in vec3 in_pos;
void main() {
    uint lanes = ACTIVE_COUNT;
    uint rank = RANK;
    uint base = 0u;
    if (rank == 0u) base = atomicAdd(next_free, lanes + 2u);
    base = BROADCAST(base);
    if (rank == 0u) { data[base] = lanes; data[base + 1u] = SUBGROUP_SIZE; }
    data[base + 2u + rank] = uint(gl_VertexID);
    gl_Position = vec4(in_pos, 1.0);
}
"""

_ROUTES = {
    "GL_KHR_shader_subgroup": (
        "#version 450\n#extension GL_KHR_shader_subgroup_basic : require\n"
        "#extension GL_KHR_shader_subgroup_ballot : require\n",
        {"ACTIVE_COUNT": "subgroupBallotBitCount(subgroupBallot(true))",
         "RANK": "subgroupBallotExclusiveBitCount(subgroupBallot(true))",
         "BROADCAST": "subgroupBroadcastFirst",
         "SUBGROUP_SIZE": "gl_SubgroupSize"},
    ),
    "GL_ARB_shader_ballot": (
        "#version 450\n#extension GL_ARB_shader_ballot : require\n"
        "#extension GL_ARB_gpu_shader_int64 : enable\n"
        "uint popc64(uint64_t m) { uvec2 h = unpackUint2x32(m); "
        "return uint(bitCount(h.x) + bitCount(h.y)); }\n",
        {"ACTIVE_COUNT": "popc64(ballotARB(true))",
         "RANK": "popc64(ballotARB(true) & gl_SubGroupLtMaskARB)",
         "BROADCAST": "readFirstInvocationARB",
         "SUBGROUP_SIZE": "gl_SubGroupSizeARB"},
    ),
}

_FS = "#version 450\nout vec4 c;\nvoid main() { c = vec4(1.0); }\n"


@dataclass
class Waves:
    """Waves of one draw.

    Attributes
    ----------
    supported : bool
    reason : str
        Why not supported (empty when supported).
    extension : str
        The route used (``GL_KHR_shader_subgroup`` or ``GL_ARB_shader_ballot``).
    subgroup_size : int
    waves : list of numpy.ndarray
        Vertex indices shaded by each wave, in allocation order.
    renderer : str
    """

    supported: bool
    reason: str = ""
    extension: str = ""
    subgroup_size: int = 0
    waves: list = field(default_factory=list)
    renderer: str = ""

    @property
    def invocations(self) -> int:
        return int(sum(len(w) for w in self.waves))

    @property
    def partial_waves(self) -> list[int]:
        """Positions of waves with fewer active lanes than the subgroup size."""
        return [i for i, w in enumerate(self.waves) if len(w) < self.subgroup_size]

    def to_dict(self, limit: int | None = 64) -> dict:
        ws = self.waves if limit is None else self.waves[:limit]
        return {"supported": self.supported, "reason": self.reason,
                "extension": self.extension, "subgroup_size": self.subgroup_size,
                "renderer": self.renderer, "wave_count": len(self.waves),
                "invocations": self.invocations,
                "partial_wave_count": len(self.partial_waves),
                "waves": [w.tolist() for w in ws]}


_programs: dict = {}


def _program(ctx, route):
    if route not in _programs:
        head, subs = _ROUTES[route]
        body = _BODY
        for k, v in subs.items():
            body = body.replace(k, v)
        _programs[route] = ctx.program(vertex_shader=head + body, fragment_shader=_FS)
    return _programs[route]


def subgroup_support() -> tuple[str | None, str]:
    """``(route, reason)``: the subgroup route this driver offers for vertex shaders."""
    ctx = get_context()
    ext = set(ctx.extensions)
    errors = []
    for route in _ROUTES:
        if route not in ext:
            continue
        try:
            _program(ctx, route)
            return route, ""
        except Exception as exc:  # a driver may list the extension but not support it in VS
            errors.append(f"{route}: {' '.join(str(exc).split())[:200]}")
    if errors:
        return None, "subgroup extensions present but unusable in vertex shaders (" + \
            "; ".join(errors) + ")"
    return None, ("no subgroup operations on this driver (neither GL_KHR_shader_subgroup "
                  "nor GL_ARB_shader_ballot); wave capture is unsupported")


def parse_waves(data: np.ndarray) -> tuple[list[np.ndarray], int]:
    """The capture buffer (``data[0]``: words used; then per wave: active lanes, subgroup size,
    each lane's vertex index) -> (the waves' vertex indices in allocation order, the largest
    subgroup size recorded)."""
    used = int(data[0])
    if used > data.size - 1:
        raise MeshoptBatchError("wave capture: corrupt output (more words used than written)")
    body = data[1:1 + used]
    waves, size, i = [], 0, 0
    while i + _HEADER <= body.size:
        lanes = int(body[i])
        size = max(size, int(body[i + 1]))
        if lanes == 0:
            raise MeshoptBatchError("wave capture: corrupt output (a wave with no lanes)")
        waves.append(body[i + _HEADER:i + _HEADER + lanes].astype(np.int64))
        i += _HEADER + lanes
    return waves, size


def capture_waves(triangles, vertex_count=None, index_dtype=np.uint32) -> Waves:
    """Record which vertex indices each wave shaded for one indexed draw, through OpenGL.

    :func:`gpu_probe.counters.capture_waves_through` picks the API of a counter.

    Parameters
    ----------
    triangles : (T, 3) integer array_like
        The index buffer, drawn once.
    vertex_count : int, optional
        Size of the vertex buffer (default: the largest index + 1).
    index_dtype : numpy dtype
        The index type drawn (``uint16`` or ``uint32``).

    Returns
    -------
    Waves
        The waves and the subgroup size; ``supported=False`` (and the reason) when the
        driver has no usable subgroup operations in vertex shaders.

    References
    ----------
    .. [1] B. Kerbl, M. Kenzel, E. Ivanchenko, D. Schmalstieg, M. Steinberger, "Revisiting the
       Vertex Cache: Understanding and Optimizing Vertex Processing on the modern GPU",
       Proc. ACM Comput. Graph. Interact. Tech. 1(2), 2018 (paper 001), sec. 3.2.
    """
    import moderngl  # lazy: loads libGL; importing gpu_probe must not touch GL

    ctx = get_context()
    info = gl_info()
    route, reason = subgroup_support()
    if route is None:
        return Waves(False, reason=reason, renderer=info["renderer"])
    ibuf, V = _index_array(triangles, vertex_count, index_dtype)
    prog = _program(ctx, route)
    # worst case: one lane per wave -> 3 words per invocation; invocations <= indices
    words = 1 + 3 * max(ibuf.size, 1) + 16
    vbo = ctx.buffer(reserve=max(V, 1) * 12)
    ibo = ctx.buffer(ibuf.tobytes() if ibuf.size else b"\0\0\0\0")
    out = ctx.buffer(reserve=words * 4)
    out.clear()
    out.bind_to_storage_buffer(0)
    fbo = ctx.simple_framebuffer((1, 1))
    vao = ctx.vertex_array(prog, [(vbo, "3f", "in_pos")], index_buffer=ibo,
                           index_element_size=ibuf.dtype.itemsize)
    try:
        fbo.use()
        ctx.enable(moderngl.RASTERIZER_DISCARD)
        if ibuf.size:
            vao.render(moderngl.TRIANGLES, vertices=int(ibuf.size))
        ctx.finish()
        data = np.frombuffer(out.read(), dtype=np.uint32)
    finally:
        ctx.disable(moderngl.RASTERIZER_DISCARD)
        for o in (vao, ibo, vbo, out, fbo):
            o.release()
    waves, size = parse_waves(data)
    return Waves(True, extension=route, subgroup_size=size, waves=waves,
                 renderer=info["renderer"])


def wave_batches(waves: Waves) -> list[np.ndarray]:
    """Group waves into batches at partial waves (a batch's last wave is usually partial
    on drivers that never mix batches in a wave, such as llvmpipe)."""
    out, cur = [], []
    for w in waves.waves:
        cur.append(w)
        if len(w) < waves.subgroup_size:
            out.append(np.concatenate(cur))
            cur = []
    if cur:
        out.append(np.concatenate(cur))
    return out
