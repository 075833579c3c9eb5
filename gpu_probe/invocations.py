"""Count real vertex-shader invocations for an index buffer (paper 001 sec. 3.1).

Two independent counters are read for every draw:

* an SSBO counter incremented with ``atomicAdd`` by every vertex-shader invocation, one
  total and one counter per vertex (``gl_VertexID`` is the vertex index of an indexed
  draw), as paper 001 sec. 3.1 suggests for recent hardware;
* the pipeline-statistics query ``GL_VERTEX_SHADER_INVOCATIONS`` (0x82F0,
  ARB_pipeline_statistics_query / GL 4.6), called through ctypes because moderngl does not
  wrap it.

When both exist they must agree; :attr:`Measurement.method` says which were used and
:attr:`Measurement.agree` whether they matched. Triangles are drawn as *one* indexed draw
call (GPU batching restarts at every draw) into a 1x1 framebuffer with rasterizer discard,
so only the geometry front end runs.

>>> import numpy as np
>>> from gpu_probe.invocations import measure_invocations
>>> m = measure_invocations(np.array([[0, 1, 2], [2, 1, 3]]), 4)   # doctest: +SKIP
>>> m.invocations, m.method                                          # doctest: +SKIP
(4, 'ssbo+pipeline_statistics')
"""

from __future__ import annotations

import ctypes
import time
from dataclasses import dataclass, field

import numpy as np

from meshopt_batch.support.errors import MeshoptBatchError

from .context import get_context, gl_info, gl_proc

GL_VERTEX_SHADER_INVOCATIONS = 0x82F0
GL_QUERY_RESULT = 0x8866
GL_NO_ERROR = 0

def _shaders(varyings: int = 0) -> tuple[str, str]:
    """Counting vertex shader (+ ``varyings`` extra vec4 outputs) and a trivial FS."""
    outs = "".join(f"out vec4 v_extra{i};\n" for i in range(varyings))
    ins = "".join(f"in vec4 v_extra{i};\n" for i in range(varyings))
    sets = "".join(f"    v_extra{i} = vec4(in_pos, {i}.0);\n" for i in range(varyings))
    use = "".join(f" + v_extra{i}" for i in range(varyings))
    vs = f"""#version 430
layout(std430, binding = 0) buffer Totals {{ uint totals[]; }};
layout(std430, binding = 1) buffer PerVertex {{ uint per_vertex[]; }};
uniform uint slot;
uniform int pv_offset;      // -1: no per-vertex counts
in vec3 in_pos;
out vec3 v_pos;
{outs}void main() {{
    atomicAdd(totals[slot], 1u);
    if (pv_offset >= 0) atomicAdd(per_vertex[pv_offset + gl_VertexID], 1u);
    v_pos = in_pos;
{sets}    gl_Position = vec4(in_pos, 1.0);
}}
"""
    fs = f"""#version 430
in vec3 v_pos;
{ins}out vec4 color;
void main() {{ color = vec4(v_pos, 1.0){use}; }}
"""
    return vs, fs


@dataclass(frozen=True)
class Measurement:
    """Measured vertex-shader invocations of one indexed draw.

    Attributes
    ----------
    invocations : int
        Vertex-shader invocations (the SSBO count when available, else the query's).
    per_vertex : numpy.ndarray or None
        ``uint32 (vertex_count,)``: how often each vertex was shaded (SSBO only).
    method : str
        ``"ssbo+pipeline_statistics"`` (both counted and agreed), ``"ssbo"`` or
        ``"pipeline_statistics"``.
    ssbo_invocations, query_invocations : int or None
        The two counters' raw values (None where not used or not available).
    agree : bool
        False only when both counters exist and differ (``invocations`` is then the SSBO's).
    triangles, vertex_count : int
        The draw's triangles and its vertex buffer's size.
    index_type : str
        ``"uint16"`` or ``"uint32"``.
    renderer, vendor, version : str
        The driver strings of the context that measured.
    seconds : float
        Wall time of upload + draw + read-back.
    notes : tuple of str
        One line per thing worth knowing (e.g. the two counters disagreeing).
    """

    invocations: int
    per_vertex: np.ndarray | None
    method: str
    ssbo_invocations: int | None
    query_invocations: int | None
    agree: bool
    triangles: int
    vertex_count: int
    index_type: str
    renderer: str
    vendor: str
    version: str
    seconds: float = 0.0
    notes: tuple = field(default_factory=tuple)

    @property
    def asr(self) -> float:
        """Average shading rate: invocations per triangle (paper 001 sec. 3.1)."""
        return self.invocations / self.triangles if self.triangles else 0.0

    @property
    def referenced_vertices(self) -> int | None:
        """Distinct vertices the draw shaded (None without per-vertex counts)."""
        if self.per_vertex is None:
            return None
        return int(np.count_nonzero(self.per_vertex))

    @property
    def atvr(self) -> float | None:
        """Invocations per referenced (unique) vertex; 1.0 is perfect reuse."""
        ref = self.referenced_vertices
        return self.invocations / ref if ref else None

    def to_dict(self, per_vertex: bool = False) -> dict:
        """The measurement as the JSON the probe prints and results files hold.

        Parameters
        ----------
        per_vertex : bool
            Include the per-vertex counts.

        Returns
        -------
        dict
            The figures by name.
        """
        d = {
            "invocations": self.invocations,
            "asr": self.asr,
            "atvr": self.atvr,
            "method": self.method,
            "ssbo_invocations": self.ssbo_invocations,
            "query_invocations": self.query_invocations,
            "agree": self.agree,
            "triangles": self.triangles,
            "vertex_count": self.vertex_count,
            "index_type": self.index_type,
            "renderer": self.renderer,
            "vendor": self.vendor,
            "version": self.version,
            "seconds": round(self.seconds, 4),
        }
        if self.notes:
            d["notes"] = list(self.notes)
        if per_vertex and self.per_vertex is not None:
            d["per_vertex"] = self.per_vertex.tolist()
        return d


def _index_array(triangles, vertex_count, index_dtype) -> tuple[np.ndarray, int]:
    tri = np.asarray(triangles)
    if tri.ndim == 1:
        if tri.size % 3:
            raise MeshoptBatchError(f"index buffer length {tri.size} is not a multiple of 3")
        tri = tri.reshape(-1, 3)
    if tri.ndim != 2 or tri.shape[1] != 3:
        raise MeshoptBatchError(f"triangles must have shape (T, 3), got {tri.shape}")
    if tri.size and not np.issubdtype(tri.dtype, np.integer):
        raise MeshoptBatchError(f"triangle indices must be integers, got {tri.dtype}")
    vmax = int(tri.max()) if tri.size else -1
    if tri.size and int(tri.min()) < 0:
        raise MeshoptBatchError("negative vertex index in triangles")
    if vertex_count is None:
        vertex_count = vmax + 1
    vertex_count = int(vertex_count)
    if vmax >= vertex_count:
        raise MeshoptBatchError(f"vertex index {vmax} out of range for {vertex_count} vertices")
    dtype = np.dtype(index_dtype)
    if dtype not in (np.dtype(np.uint16), np.dtype(np.uint32)):
        raise MeshoptBatchError(f"index type must be uint16 or uint32, got {dtype}")
    if dtype == np.uint16 and vmax > 0xFFFF:
        raise MeshoptBatchError(f"vertex index {vmax} does not fit a 16-bit index buffer")
    if vmax >= 0xFFFFFFFF:
        raise MeshoptBatchError("vertex index 0xFFFFFFFF is the primitive-restart index")
    return np.ascontiguousarray(tri.reshape(-1), dtype=dtype), vertex_count


class _Query:
    """GL_VERTEX_SHADER_INVOCATIONS through raw GL calls (moderngl does not wrap it)."""

    def __init__(self):
        u = ctypes.c_uint
        self.gen = gl_proc("glGenQueries", None, ctypes.c_int, ctypes.POINTER(u))
        self.begin_ = gl_proc("glBeginQuery", None, u, u)
        self.end_ = gl_proc("glEndQuery", None, u)
        self.get = gl_proc("glGetQueryObjectui64v", None, u, u, ctypes.POINTER(ctypes.c_uint64))
        self.error = gl_proc("glGetError", u)
        q = u(0)
        while self.error() != GL_NO_ERROR:  # drain errors left by others
            pass
        self.gen(1, ctypes.byref(q))
        self.id = q.value
        # probe once: an unsupported target raises GL_INVALID_ENUM
        self.begin_(GL_VERTEX_SHADER_INVOCATIONS, self.id)
        err = self.error()
        if err == GL_NO_ERROR:
            self.end_(GL_VERTEX_SHADER_INVOCATIONS)
            self.result()
        self.ok = err == GL_NO_ERROR and self.id != 0

    def begin(self):
        self.begin_(GL_VERTEX_SHADER_INVOCATIONS, self.id)

    def end(self):
        self.end_(GL_VERTEX_SHADER_INVOCATIONS)

    def result(self) -> int:
        r = ctypes.c_uint64(0)
        self.get(self.id, GL_QUERY_RESULT, ctypes.byref(r))
        return int(r.value)


class Prober:
    """Compiled counting program and reusable GL objects (one per process).

    Use :func:`prober` to get the shared instance.  A counter in the sense of
    :mod:`gpu_probe.counters` that can also draw with either index type, rasterization on or
    off and extra varyings (``render_state``).
    """

    render_state = True

    def __init__(self):
        import moderngl  # lazy: loads libGL; importing gpu_probe must not touch GL

        self.moderngl = moderngl
        self.ctx = get_context()
        self.info = {**gl_info(), "api": "gl"}
        self._programs = {}
        self.prog = self.program(0)
        self.fbo = self.ctx.simple_framebuffer((1, 1))
        self.query = None
        if self.info["pipeline_statistics"]:
            try:
                q = _Query()
                self.query = q if q.ok else None
            except MeshoptBatchError:
                self.query = None

    def program(self, varyings: int = 0):
        """The counting program with ``varyings`` extra vec4 outputs (compiled once)."""
        if varyings not in self._programs:
            vs, fs = _shaders(varyings)
            self._programs[varyings] = self.ctx.program(vertex_shader=vs, fragment_shader=fs)
        return self._programs[varyings]

    # -- helpers -------------------------------------------------------------------------
    def _draw(self, ibuf: np.ndarray, vertex_count: int, positions, ranges, per_vertex: bool,
              use_query: bool, discard: bool = True, varyings: int = 0):
        """Upload ``ibuf`` and draw each ``(first, count)`` of ``ranges`` as its own draw.

        Returns (totals, per_vertex (n, V) or None, query totals or None).
        """
        ctx = self.ctx
        n = len(ranges)
        V = max(int(vertex_count), 1)
        if positions is None:
            vbo = ctx.buffer(reserve=V * 12)
        else:
            pos = np.ascontiguousarray(positions, dtype=np.float32).reshape(-1, 3)
            if len(pos) < V:
                raise MeshoptBatchError(f"{len(pos)} positions for {V} vertices")
            vbo = ctx.buffer(pos[:V].tobytes())
        ibo = ctx.buffer(ibuf.tobytes() if ibuf.size else b"\0\0\0\0")
        totals = ctx.buffer(reserve=max(n, 1) * 4)
        totals.clear()
        pv = None
        if per_vertex:
            pv = ctx.buffer(reserve=max(n * V, 1) * 4)
            pv.clear()
        else:
            pv = ctx.buffer(reserve=4)
        totals.bind_to_storage_buffer(0)
        pv.bind_to_storage_buffer(1)
        prog = self.program(varyings)
        vao = ctx.vertex_array(prog, [(vbo, "3f", "in_pos")], index_buffer=ibo,
                               index_element_size=ibuf.dtype.itemsize)
        queries = [] if (use_query and self.query is not None) else None
        try:
            self.fbo.use()
            if discard:
                ctx.enable(self.moderngl.RASTERIZER_DISCARD)
            for k, (first, count) in enumerate(ranges):
                prog["slot"].value = k
                prog["pv_offset"].value = k * V if per_vertex else -1
                if count == 0:
                    if queries is not None:
                        queries.append(0)
                    continue
                if queries is not None:
                    self.query.begin()
                vao.render(self.moderngl.TRIANGLES, vertices=int(count), first=int(first))
                if queries is not None:
                    self.query.end()
                    queries.append(self.query.result())
            ctx.finish()
            tot = np.frombuffer(totals.read(), dtype=np.uint32)[:n].astype(np.int64)
            per = None
            if per_vertex:
                per = np.frombuffer(pv.read(), dtype=np.uint32)[: n * V].reshape(n, V).copy()
        finally:
            if discard:
                ctx.disable(self.moderngl.RASTERIZER_DISCARD)
            for obj in (vao, ibo, vbo, totals, pv):
                obj.release()
        return tot, per, (np.array(queries, dtype=np.int64) if queries is not None else None)

    # -- public --------------------------------------------------------------------------
    def measure(self, triangles, vertex_count=None, index_dtype=np.uint32, *,
                method: str = "auto", per_vertex: bool = True, positions=None,
                discard: bool = True) -> Measurement:
        if method not in ("auto", "ssbo", "query", "both"):
            raise MeshoptBatchError(f"unknown counting method {method!r}")
        t0 = time.perf_counter()
        ibuf, V = _index_array(triangles, vertex_count, index_dtype)
        want_query = method in ("auto", "query", "both")
        if want_query and self.query is None and method in ("query", "both"):
            raise MeshoptBatchError(
                "this driver has no GL_VERTEX_SHADER_INVOCATIONS pipeline-statistics query "
                "(ARB_pipeline_statistics_query); use method='ssbo'")
        tot, per, q = self._draw(ibuf, V, positions, [(0, ibuf.size)],
                                 per_vertex=per_vertex and method != "query",
                                 use_query=want_query, discard=discard)
        ssbo_n = None if method == "query" else int(tot[0])
        query_n = int(q[0]) if q is not None else None
        notes = []
        if ssbo_n is not None and query_n is not None:
            agree = ssbo_n == query_n
            methods = "ssbo+pipeline_statistics" if agree else "ssbo"
            if not agree:
                notes.append(f"pipeline-statistics query counted {query_n}, SSBO atomics "
                             f"{ssbo_n}; the SSBO count is reported")
        else:
            agree = True
            methods = "ssbo" if ssbo_n is not None else "pipeline_statistics"
            if ssbo_n is not None and self.query is None:
                notes.append("no pipeline-statistics query on this driver")
        inv = ssbo_n if ssbo_n is not None else query_n
        return Measurement(
            invocations=int(inv),
            per_vertex=per[0] if per is not None else None,
            method=methods, ssbo_invocations=ssbo_n, query_invocations=query_n, agree=agree,
            triangles=ibuf.size // 3, vertex_count=V, index_type=str(ibuf.dtype),
            renderer=self.info["renderer"], vendor=self.info["vendor"],
            version=self.info["version"], seconds=time.perf_counter() - t0,
            notes=tuple(notes),
        )

    def measure_many(self, index_buffers, vertex_count=None, index_dtype=np.uint32, *,
                     per_vertex: bool = False, with_query: bool = False,
                     discard: bool = True, varyings: int = 0):
        """Measure many small index buffers, each as its own draw, in one upload.

        Parameters
        ----------
        index_buffers : sequence of array-like
            Flat index lists (or ``(T, 3)`` arrays); each is drawn as one draw call.
        vertex_count : int, optional
            Vertex count shared by all draws (default: largest index + 1).
        per_vertex : bool
            Also return per-vertex counts, shape ``(len(index_buffers), vertex_count)``.
        with_query : bool
            Also return the pipeline-statistics totals (None when unavailable).
        discard : bool
            Draw with rasterizer discard (default) or rasterize into the 1x1 framebuffer.
        varyings : int
            Extra vec4 outputs of the vertex shader (to check that batching ignores them).

        Returns
        -------
        totals : numpy.ndarray (int64)
        per_vertex : numpy.ndarray or None
        query_totals : numpy.ndarray or None
        """
        arrays = [np.asarray(b).reshape(-1) for b in index_buffers]
        sizes = [a.size for a in arrays]
        if any(s % 3 for s in sizes):
            raise MeshoptBatchError("every index buffer must hold whole triangles")
        flat = np.concatenate(arrays) if arrays else np.zeros(0, np.int64)
        ibuf, V = _index_array(flat.reshape(-1, 3) if flat.size else flat.reshape(0, 3),
                               vertex_count, index_dtype)
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]) if sizes else []
        ranges = list(zip((int(o) for o in offsets), sizes, strict=True))
        return self._draw(ibuf, V, None, ranges, per_vertex=per_vertex, use_query=with_query,
                          discard=discard, varyings=varyings)


_prober: Prober | None = None


def prober() -> Prober:
    """The process-wide :class:`Prober` (compiles the counting shader on first use)."""
    global _prober
    if _prober is None:
        _prober = Prober()
    return _prober


def measure_invocations(triangles, vertex_count=None, index_dtype=np.uint32, *,
                        method: str = "auto", per_vertex: bool = True,
                        positions=None) -> Measurement:
    """Measure the vertex-shader invocations of drawing ``triangles`` on this machine's GPU.

    Parameters
    ----------
    triangles : array-like, shape (T, 3) or (3T,)
        Vertex indices, drawn in this order as one ``glDrawElements(GL_TRIANGLES)`` call.
    vertex_count : int, optional
        Number of vertices (default: largest index + 1).
    index_dtype : numpy dtype
        ``uint32`` (default) or ``uint16`` (indices must then be < 65536).
    method : {"auto", "ssbo", "query", "both"}
        ``auto`` counts with the SSBO and, where available, the pipeline-statistics query;
        ``both`` requires the query; ``query`` uses only the query.
    per_vertex : bool
        Keep per-vertex counts (SSBO).
    positions : array-like (V, 3), optional
        Vertex positions to bind (the count does not depend on them; default zeros).

    Returns
    -------
    Measurement
        The invocations counted (and per vertex, when asked), with the driver strings.
    """
    return prober().measure(triangles, vertex_count, index_dtype, method=method,
                            per_vertex=per_vertex, positions=positions)
