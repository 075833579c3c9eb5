"""Count vertex-shader invocations through WebGPU: Vulkan, Metal or Direct3D 12 (``wgpu``).

The OpenGL prober (:mod:`gpu_probe.invocations`) reaches a GPU through its OpenGL driver only.
Engines draw through Vulkan, Direct3D 12 and Metal, and paper 001 found that the API can change
a GPU's batching (NVIDIA under Direct3D: the ``nvidia_dx`` rule).  :class:`WgpuCounter` draws
the same index buffers through the Python package ``wgpu`` (WebGPU on wgpu-native) and reads two
independent counters on every draw:

* storage-buffer atomics incremented by every vertex-shader invocation (adapter feature
  ``vertex-writable-storage``): one total per draw and, on request, one count per vertex
  (``@builtin(vertex_index)`` is the index value of an indexed draw);
* the pipeline-statistics query ``vertex-shader-invocations`` (feature
  ``pipeline-statistics-query``, where the adapter has it).

Where both exist they must agree draw by draw; per-vertex counts must sum to the total and
shade every vertex a draw references (a GPU may shade others too: Mali's aligned groups);
anything else raises :class:`WgpuProbeError`.

Every index buffer is one ``drawIndexed`` of a triangle list (wgpu's Vulkan backend records one
``vkCmdDrawIndexed``; primitive restart is off for lists), its draw number passed as
``first_instance`` so that each draw counts into its own slot.  WebGPU has no rasterizer
discard: ``discard=True`` puts every vertex at the origin (zero-area triangles, no fragment),
``discard=False`` spreads the vertices over the 1x1 target so that triangles cover it.

:func:`wgpu_counter` picks the adapter (``--adapter NAME``: words to find in the adapter's
name, backend and driver) among those of the Vulkan, Metal and Direct3D 12 backends; without
a GPU, Mesa's lavapipe (Vulkan on the CPU) is one.

References
----------
Kerbl, Steinberger, Schmalstieg, Kalkofen: "Revisiting The Vertex Cache: Understanding and
Optimizing Vertex Processing on the modern GPU", HPG 2018 (paper 001), sec. 3.1 and 3.3.
W3C WebGPU and WGSL; wgpu-native's pipeline-statistics extension.
"""

from __future__ import annotations

import threading
import time

import numpy as np

from meshopt_batch.support.errors import MeshoptBatchError

from .context import _fd2_captured
from .invocations import Measurement, _index_array

#: wgpu's backends this probe draws through (its OpenGL backend would measure OpenGL again).
BACKENDS = {"Vulkan": "Vulkan", "Metal": "Metal", "D3D12": "DX12"}
STORAGE_FEATURE = "vertex-writable-storage"
QUERY_FEATURE = "pipeline-statistics-query"
#: wgpu-native's features for WGSL subgroup operations in vertex shaders (wave capture).
SUBGROUP_FEATURES = ("subgroup", "subgroup-vertex")
#: Debian/Ubuntu packages of Mesa's lavapipe, a Vulkan implementation on the CPU.
LAVAPIPE_PACKAGES = "mesa-vulkan-drivers libvulkan1"
INSTALL_HINT = ("install a GPU driver with Vulkan (Windows: Direct3D 12; macOS: Metal), or Mesa's "
                f"lavapipe (Debian/Ubuntu: apt-get install {LAVAPIPE_PACKAGES})")
#: wgpu's largest query set.
MAX_QUERIES = 4096
_TYPE_RANK = {"DiscreteGPU": 0, "IntegratedGPU": 1, "VirtualGPU": 2, "CPU": 3}


class WgpuProbeError(MeshoptBatchError):
    """No usable WebGPU adapter, or its two counters disagree."""


def _wgpu():
    try:
        import wgpu  # lazy: wgpu-native loads only when the wgpu probe is asked for
    except ImportError as exc:
        raise WgpuProbeError(f"the wgpu probe needs the Python package wgpu ({exc}); "
                             "pip install wgpu") from None
    return wgpu


_lock = threading.RLock()
_adapters: list | None = None
_none_found = ""
_counters: dict = {}


def _enumerate():
    """Every adapter of the Vulkan, Metal and Direct3D 12 backends (enumerated once; none found
    is remembered too, so later calls fail fast)."""
    global _adapters, _none_found
    if _adapters is not None:
        if not _adapters:
            raise WgpuProbeError(_none_found)
        return _adapters
    wgpu = _wgpu()
    from wgpu.backends.wgpu_native import extras  # lazy: as above

    chatter: list[str] = []
    with _fd2_captured(chatter):
        try:
            extras.set_instance_extras(backends=list(BACKENDS.values()))
        except RuntimeError:          # the process made its wgpu instance already: filter below
            pass
        found = wgpu.gpu.enumerate_adapters_sync()
    _adapters = [a for a in found if a.info["backend_type"] in BACKENDS]
    if not _adapters:
        said = "; ".join(dict.fromkeys(" ".join(s.split()) for s in chatter if s.strip()))
        _none_found = (f"no WebGPU adapter through Vulkan, Metal or Direct3D 12 (wgpu {wgpu.__version__})"
                       + (f"; the drivers said: {said[:300]}" if said else "") + f"; {INSTALL_HINT}")
        raise WgpuProbeError(_none_found)
    return _adapters


def _label(adapter) -> str:
    i = adapter.info
    return f"{i['device']} ({i['adapter_type']}) via {i['backend_type']}"


def adapter_records() -> list[dict]:
    """What :func:`wgpu_counter` can choose from: label, backend, type, driver and whether the
    adapter has the two counters' features and wave capture's, best first."""
    with _lock:
        ranked = sorted(_enumerate(), key=_rank)
    return [{"adapter": _label(a), "backend": a.info["backend_type"], "type": a.info["adapter_type"],
             "driver": a.info["description"], "storage_counter": STORAGE_FEATURE in a.features,
             "pipeline_statistics": QUERY_FEATURE in a.features,
             "subgroup_vertex": all(f in a.features for f in SUBGROUP_FEATURES)} for a in ranked]


def _rank(adapter):
    return (STORAGE_FEATURE not in adapter.features, _TYPE_RANK.get(adapter.info["adapter_type"], 4),
            list(BACKENDS).index(adapter.info["backend_type"]))


def choose_adapter(name: str | None = None):
    """The adapter whose name, backend and driver contain every word of ``name``
    (case-insensitive; None: any), best first: with the storage counter, discrete before
    integrated before CPU.

    Raises
    ------
    WgpuProbeError
        One line: no adapter, none matching ``name`` (the line lists those found), or the chosen
        one lacks ``vertex-writable-storage``.
    """
    with _lock:
        found = _enumerate()
    words = (name or "").lower().split()
    match = [a for a in found
             if all(w in f"{_label(a)} {a.info['vendor']} {a.info['description']}".lower() for w in words)]
    if not match:
        listed = "; ".join(_label(a) for a in sorted(found, key=_rank))
        raise WgpuProbeError(f"--adapter {name!r}: no WebGPU adapter matches (found: {listed})")
    best = min(match, key=_rank)
    if STORAGE_FEATURE not in best.features:
        raise WgpuProbeError(
            f"WebGPU adapter {_label(best)} lacks the feature {STORAGE_FEATURE} (storage buffers "
            "written by vertex shaders), which the wgpu probe counts with")
    return best


def wgpu_counter(adapter: str | None = None) -> WgpuCounter:
    """The process-wide :class:`WgpuCounter` of the adapter :func:`choose_adapter` picks."""
    with _lock:
        chosen = choose_adapter(adapter)
        key = _label(chosen)
        if key not in _counters:
            _counters[key] = WgpuCounter(chosen)
        return _counters[key]


def _shader(varyings: int) -> str:
    """WGSL: the counting vertex shader (+ ``varyings`` extra vec4 outputs) and a fragment
    shader that reads them."""
    outs = "".join(f"    @location({i + 1}) extra{i}: vec4<f32>,\n" for i in range(varyings))
    sets = "".join(f"    out.extra{i} = vec4<f32>(pos, {i}.0);\n" for i in range(varyings))
    use = "".join(f" + v.extra{i}" for i in range(varyings))
    return f"""
struct Params {{ per_vertex: u32, stride: u32 }};
@group(0) @binding(0) var<storage, read_write> totals: array<atomic<u32>>;
@group(0) @binding(1) var<storage, read_write> per_vertex: array<atomic<u32>>;
@group(0) @binding(2) var<uniform> params: Params;
struct Varyings {{
    @builtin(position) position: vec4<f32>,
    @location(0) pos: vec3<f32>,
{outs}}};
@vertex
fn vs(@builtin(vertex_index) vertex: u32, @builtin(instance_index) slot: u32,
      @location(0) pos: vec3<f32>) -> Varyings {{
    atomicAdd(&totals[slot], 1u);
    if (params.per_vertex != 0u) {{ atomicAdd(&per_vertex[slot * params.stride + vertex], 1u); }}
    var out: Varyings;
    out.position = vec4<f32>(pos, 1.0);
    out.pos = pos;
{sets}    return out;
}}
@fragment
fn fs(v: Varyings) -> @location(0) vec4<f32> {{ return vec4<f32>(v.pos, 1.0){use}; }}
"""


def _padded(ibuf: np.ndarray) -> np.ndarray:
    """``ibuf`` with zeros appended to a non-empty multiple of 4 bytes (WebGPU's buffer rule;
    the draws never reach the padding)."""
    per_word = 4 // ibuf.itemsize
    pad = (-ibuf.size) % per_word if ibuf.size else per_word
    return np.concatenate([ibuf, np.zeros(pad, ibuf.dtype)]) if pad else ibuf


def _spread_positions(vertex_count: int) -> np.ndarray:
    """Vertices on a circle of radius 0.9 at golden-angle steps: most triangles of any index
    buffer then cover the centre of the 1x1 target (``discard=False``)."""
    a = np.arange(vertex_count) * (np.pi * (3.0 - np.sqrt(5.0)))
    return np.stack([0.9 * np.cos(a), 0.9 * np.sin(a), np.zeros_like(a)], axis=1).astype(np.float32)


class WgpuCounter:
    """One WebGPU device and its compiled counting pipelines; a counter in the sense of
    :mod:`gpu_probe.counters` that can also draw with either index type, rasterization and
    extra varyings (``render_state``).

    Use :func:`wgpu_counter` to get the shared instance of an adapter.
    """

    render_state = True

    def __init__(self, adapter):
        self.wgpu = wgpu = _wgpu()
        self.adapter = adapter
        i = adapter.info
        self.has_query = QUERY_FEATURE in adapter.features
        #: WGSL subgroup operations in vertex shaders, for :mod:`gpu_probe.wgpu_waves`
        self.has_subgroup_vertex = all(f in adapter.features for f in SUBGROUP_FEATURES)
        features = ([STORAGE_FEATURE] + ([QUERY_FEATURE] if self.has_query else [])
                    + (list(SUBGROUP_FEATURES) if self.has_subgroup_vertex else []))
        lim = adapter.limits
        # per-vertex counts of one chunk: one storage binding, and half a buffer (read back with the rest)
        self.max_binding = int(min(lim["max-storage-buffer-binding-size"], lim["max-buffer-size"] // 2))
        try:
            self.device = adapter.request_device_sync(
                required_features=features,
                required_limits={"max-storage-buffer-binding-size": lim["max-storage-buffer-binding-size"],
                                 "max-buffer-size": lim["max-buffer-size"]})
        except Exception as exc:  # wgpu raises plain RuntimeErrors for a refused device
            raise WgpuProbeError(f"WebGPU adapter {_label(adapter)}: no device ({exc})") from None
        from wgpu.backends.wgpu_native import __version__ as native_version  # lazy: as above

        self.info = {
            "renderer": i["device"], "vendor": i["vendor"] or f"0x{i['vendor_id']:04x}",
            "version": f"{i['backend_type']} via wgpu {wgpu.__version__}; driver {i['description']}",
            "api": "wgpu", "backend": i["backend_type"], "adapter": _label(adapter),
            "adapter_type": i["adapter_type"], "driver": i["description"],
            "wgpu": f"{wgpu.__version__} (wgpu-native {native_version})",
            "pipeline_statistics": self.has_query,
        }
        u = wgpu.BufferUsage
        self._storage = u.STORAGE | u.COPY_SRC
        vertex = wgpu.ShaderStage.VERTEX
        self.layout = self.device.create_bind_group_layout(entries=[
            {"binding": 0, "visibility": vertex, "buffer": {"type": "storage"}},
            {"binding": 1, "visibility": vertex, "buffer": {"type": "storage"}},
            {"binding": 2, "visibility": vertex, "buffer": {"type": "uniform"}},
        ])
        self._pipelines: dict[int, object] = {}
        target = self.device.create_texture(size=(1, 1, 1), format="rgba8unorm",
                                            usage=wgpu.TextureUsage.RENDER_ATTACHMENT)
        self.target = target.create_view()

    def pipeline(self, varyings: int = 0):
        """The counting pipeline with ``varyings`` extra vec4 outputs (compiled once)."""
        if varyings not in self._pipelines:
            module = self.device.create_shader_module(code=_shader(varyings))
            self._pipelines[varyings] = self.device.create_render_pipeline(
                layout=self.device.create_pipeline_layout(bind_group_layouts=[self.layout]),
                vertex={"module": module, "entry_point": "vs", "buffers": [{
                    "array_stride": 12, "step_mode": "vertex",
                    "attributes": [{"format": "float32x3", "offset": 0, "shader_location": 0}]}]},
                primitive={"topology": "triangle-list", "cull_mode": "none"},
                fragment={"module": module, "entry_point": "fs", "targets": [{"format": "rgba8unorm"}]})
        return self._pipelines[varyings]

    # -- drawing -------------------------------------------------------------------------
    def _draw(self, ibuf: np.ndarray, vertex_count: int, ranges, *, per_vertex: bool,
              positions=None, discard: bool = True, varyings: int = 0):
        """Upload ``ibuf`` once and draw each ``(first, count)`` of ``ranges`` as its own draw,
        in chunks that fit one query set and one per-vertex storage binding.

        Returns (totals, per-vertex (n, V) or None, query totals or None), all checked.
        """
        wgpu, dev = self.wgpu, self.device
        V = max(int(vertex_count), 1)
        if positions is not None:
            pos = np.ascontiguousarray(positions, dtype=np.float32).reshape(-1, 3)
            if len(pos) < V:
                raise MeshoptBatchError(f"{len(pos)} positions for {V} vertices")
            pos = pos[:V]
        else:
            pos = None if discard else _spread_positions(V)
        try:
            index_buffer = dev.create_buffer_with_data(data=_padded(ibuf), usage=wgpu.BufferUsage.INDEX)
            if pos is None:             # wgpu zero-fills a new buffer: every vertex at the origin
                vertex_buffer = dev.create_buffer(size=V * 12, usage=wgpu.BufferUsage.VERTEX)
            else:
                vertex_buffer = dev.create_buffer_with_data(data=pos, usage=wgpu.BufferUsage.VERTEX)
            n = len(ranges)
            per_draw = V * 4 if per_vertex else 0
            step = MAX_QUERIES if not per_draw else max(1, min(MAX_QUERIES, self.max_binding // per_draw))
            totals, per, queries = [], [], []
            for a in range(0, n, step):
                t, p, q = self._draw_chunk(index_buffer, vertex_buffer, str(ibuf.dtype), V,
                                           ranges[a:a + step], per_vertex, varyings)
                totals.append(t)
                per.append(p)
                queries.append(q)
            index_buffer.destroy()
            vertex_buffer.destroy()
        except wgpu.GPUError as exc:
            raise WgpuProbeError(f"wgpu ({self.info['adapter']}): {' '.join(str(exc).split())[:400]}") from None
        tot = np.concatenate(totals) if totals else np.zeros(0, np.int64)
        pv = (np.concatenate(per) if per else np.zeros((0, V), np.uint32)) if per_vertex else None
        qs = (np.concatenate(queries) if queries else np.zeros(0, np.int64)) if self.has_query else None
        self._check(ibuf, ranges, vertex_count, tot, pv, qs)
        return tot, (pv[:, :vertex_count] if pv is not None else None), qs

    def _draw_chunk(self, index_buffer, vertex_buffer, index_format, V, ranges, per_vertex, varyings):
        """One render pass of ``ranges``, each draw inside its own pipeline-statistics query;
        the counters are copied into one buffer and mapped once."""
        wgpu, dev = self.wgpu, self.device
        u = wgpu.BufferUsage
        n = len(ranges)
        sizes = {"totals": n * 4, "per": n * V * 4 if per_vertex else 0, "query": n * 8 if self.has_query else 0}
        totals = dev.create_buffer(size=max(sizes["totals"], 4), usage=self._storage)
        per = dev.create_buffer(size=max(sizes["per"], 4), usage=self._storage)
        params = dev.create_buffer_with_data(data=np.array([int(per_vertex), V, 0, 0], np.uint32),
                                             usage=u.UNIFORM)
        group = dev.create_bind_group(layout=self.layout, entries=[
            {"binding": 0, "resource": {"buffer": totals}},
            {"binding": 1, "resource": {"buffer": per}},
            {"binding": 2, "resource": {"buffer": params}}])
        offsets, at = {}, 0
        for key, size in sizes.items():
            offsets[key] = at
            at += -(-size // 8) * 8
        staging = dev.create_buffer(size=max(at, 8), usage=u.MAP_READ | u.COPY_DST)
        query_set = resolved = None
        if self.has_query:
            from wgpu.backends.wgpu_native import extras  # lazy: as above

            query_set = extras.create_statistics_query_set(dev, count=n, statistics=["vertex-shader-invocations"])
            resolved = dev.create_buffer(size=n * 8, usage=u.QUERY_RESOLVE | u.COPY_SRC)
        enc = dev.create_command_encoder()
        rp = enc.begin_render_pass(color_attachments=[{
            "view": self.target, "load_op": "clear", "store_op": "store", "clear_value": (0, 0, 0, 0)}])
        rp.set_pipeline(self.pipeline(varyings))
        rp.set_bind_group(0, group)
        rp.set_vertex_buffer(0, vertex_buffer)
        rp.set_index_buffer(index_buffer, index_format)
        for k, (first, count) in enumerate(ranges):
            if query_set is not None:
                # the method behind extras.begin_pipeline_statistics_query, which prints its
                # argument to stdout in wgpu 0.32
                rp._begin_pipeline_statistics_query(query_set, k)
            if count:
                rp.draw_indexed(int(count), 1, int(first), 0, k)
            if query_set is not None:
                rp._end_pipeline_statistics_query()
        rp.end()
        if query_set is not None:
            enc.resolve_query_set(query_set, 0, n, resolved, 0)
            enc.copy_buffer_to_buffer(resolved, 0, staging, offsets["query"], sizes["query"])
        enc.copy_buffer_to_buffer(totals, 0, staging, offsets["totals"], sizes["totals"])
        if per_vertex:
            enc.copy_buffer_to_buffer(per, 0, staging, offsets["per"], sizes["per"])
        dev.queue.submit([enc.finish()])
        staging.map_sync(wgpu.MapMode.READ)
        raw = np.frombuffer(staging.read_mapped(copy=True), np.uint8)
        staging.unmap()
        tot = raw[offsets["totals"]:offsets["totals"] + sizes["totals"]].view(np.uint32).astype(np.int64)
        pv = (raw[offsets["per"]:offsets["per"] + sizes["per"]].view(np.uint32).reshape(n, V)
              if per_vertex else None)
        q = (raw[offsets["query"]:offsets["query"] + sizes["query"]].view(np.uint64).astype(np.int64)
             if query_set is not None else None)
        for buf in (totals, per, params, staging, resolved):
            if buf is not None:
                buf.destroy()
        if query_set is not None:
            query_set.destroy()
        return tot, pv, q

    def _check(self, ibuf, ranges, vertex_count, tot, per, queries):
        """The two counters must agree on every draw; per-vertex counts must sum to the total
        and shade every vertex the draw references."""
        where = self.info["adapter"]
        if queries is not None and not np.array_equal(tot, queries):
            k = int(np.flatnonzero(tot != queries)[0])
            raise WgpuProbeError(
                f"{where}: the two counters disagree on draw {k} of {len(ranges)}: storage-buffer "
                f"atomics counted {tot[k]}, the pipeline-statistics query {queries[k]}")
        if per is None:
            return
        counts = np.array([c for _, c in ranges], np.int64)
        drawn = np.concatenate([ibuf[f:f + c] for f, c in ranges]) if ranges else ibuf[:0]
        used = np.zeros(per.shape, bool)
        used[np.repeat(np.arange(len(ranges)), counts), drawn] = True
        bad = np.flatnonzero((per.sum(axis=1) != tot) | (used & (per == 0)).any(axis=1))
        if bad.size:
            k = int(bad[0])
            raise WgpuProbeError(
                f"{where}: draw {k}: per-vertex counts (sum {int(per[k].sum())}) do not sum to its "
                f"total {tot[k]}, or leave some of the {int(used[k].sum())} vertices it references "
                "unshaded")

    # -- public --------------------------------------------------------------------------
    def measure_many(self, index_buffers, vertex_count=None, index_dtype=np.uint32, *,
                     per_vertex: bool = False, with_query: bool = False,
                     discard: bool = True, varyings: int = 0):
        """Measure many index buffers, each as its own draw, in one upload.

        Parameters
        ----------
        index_buffers : sequence of array-like
            Flat index lists (or ``(T, 3)`` arrays); each is drawn as one ``drawIndexed``.
        vertex_count : int, optional
            Vertex count shared by all draws (default: largest index + 1).
        index_dtype : numpy dtype
            ``uint32`` or ``uint16`` (every index < 65536).
        per_vertex : bool
            Also return per-vertex counts, shape ``(len(index_buffers), vertex_count)``.
        with_query : bool
            Return the pipeline-statistics totals (None where the adapter has no such query).
            They are read and checked on every draw either way.
        discard : bool
            Every vertex at the origin (default: nothing rasterized) or spread so that the
            triangles cover the 1x1 target.
        varyings : int
            Extra vec4 outputs of the vertex shader.

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
        ibuf, V = _index_array(flat.reshape(-1, 3), vertex_count, index_dtype)
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]) if sizes else []
        ranges = [(int(s), int(c)) for s, c in zip(starts, sizes, strict=True)]
        with _lock:
            tot, per, q = self._draw(ibuf, V, ranges, per_vertex=per_vertex, discard=discard,
                                     varyings=varyings)
        return tot, per, (q if with_query else None)

    def measure(self, triangles, vertex_count=None, index_dtype=np.uint32, *,
                per_vertex: bool = True, positions=None, discard: bool = True) -> Measurement:
        """One draw as a :class:`~gpu_probe.invocations.Measurement` (``method``:
        ``"storage+pipeline_statistics"``, or ``"storage"`` on an adapter without the query)."""
        t0 = time.perf_counter()
        ibuf, V = _index_array(triangles, vertex_count, index_dtype)
        with _lock:
            tot, per, q = self._draw(ibuf, V, [(0, ibuf.size)], per_vertex=per_vertex,
                                     positions=positions, discard=discard)
        notes = () if q is not None else ("no pipeline-statistics query on this adapter",)
        return Measurement(
            invocations=int(tot[0]), per_vertex=per[0] if per is not None else None,
            method="storage+pipeline_statistics" if q is not None else "storage",
            ssbo_invocations=int(tot[0]), query_invocations=int(q[0]) if q is not None else None,
            agree=True, triangles=ibuf.size // 3, vertex_count=V, index_type=str(ibuf.dtype),
            renderer=self.info["renderer"], vendor=self.info["vendor"], version=self.info["version"],
            seconds=time.perf_counter() - t0, notes=notes)
