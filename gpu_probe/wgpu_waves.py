"""Which vertex indices are shaded together in one wave, through WebGPU (paper 001 sec. 3.2).

The same capture as :mod:`gpu_probe.waves` (OpenGL), written in WGSL: the vertex shader's
lowest active lane allocates room in a storage buffer with one atomic add and broadcasts the
offset; every lane writes its vertex index at ``offset + its rank among the active lanes``
(an exclusive prefix sum over the subgroup); the first lane also writes the number of active
lanes and the subgroup size.  Reading the buffer back gives the waves in the order they
allocated.  Where a vertex shader may not read the ``subgroup_size`` built-in (naga refused it
on the H100 through Vulkan), the subgroup size is the widest wave of one draw of a strip, made
once per counter.

WGSL subgroup operations in a vertex shader need the adapter's ``subgroup-vertex`` feature
(wgpu-native; Vulkan drivers whose subgroups reach the vertex stage).  Without it
:func:`capture_waves_wgpu` returns a result with ``supported=False`` and the reason.

References
----------
Kerbl, B. et al. (2018).  Revisiting the Vertex Cache.  Proc. ACM Comput. Graph. Interact.
Tech. 1(2) (paper 001, sec. 3.2: the batches one wave shades).
W3C.  WebGPU Shading Language, subgroup built-in functions (subgroupBallot, subgroupExclusiveAdd,
subgroupBroadcastFirst).
"""

from __future__ import annotations

import weakref

import numpy as np

from .invocations import _index_array
from .waves import Waves, parse_waves
from .wgpu_counter import WgpuProbeError, _padded

_SHADER = """
@group(0) @binding(0) var<storage, read_write> out: array<atomic<u32>>;

@vertex
fn vs(@builtin(vertex_index) vid: u32, SIZE_INPUT @location(0) pos: vec3<f32>) -> @builtin(position) vec4<f32> {
    let ballot = subgroupBallot(true);
    let lanes = countOneBits(ballot.x) + countOneBits(ballot.y) + countOneBits(ballot.z) + countOneBits(ballot.w);
    let rank = subgroupExclusiveAdd(1u);
    var base = 0u;
    if (rank == 0u) {
        base = atomicAdd(&out[0], lanes + 2u);
    }
    base = subgroupBroadcastFirst(base);
    if (rank == 0u) {
        atomicStore(&out[1u + base], lanes);
        atomicStore(&out[2u + base], SIZE);
    }
    atomicStore(&out[3u + base + rank], vid);
    return vec4<f32>(pos * 0.0, 1.0);
}

@fragment
fn fs() -> @location(0) vec4<f32> {
    return vec4<f32>(1.0);
}
"""

#: The subgroup size from the builtin, or (where a vertex shader may not read it, as on the
#: H100 through Vulkan) 0, and then :func:`_subgroup_size`.
_VARIANTS = (("@builtin(subgroup_size) size: u32,", "size"), ("", "0u"))


#: Per counter: its capture pipeline (or why there is none) and its subgroup size, made once.
_made: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _pipeline(counter):
    """The capture pipeline on ``counter``'s device (compiled once), or the reason it cannot be."""
    made = _made.setdefault(counter, {})
    if "pipeline" in made:
        return made["pipeline"]
    dev, errors = counter.device, []
    layout = dev.create_bind_group_layout(entries=[
        {"binding": 0, "visibility": counter.wgpu.ShaderStage.VERTEX, "buffer": {"type": "storage"}}])
    for size_input, size in _VARIANTS:
        try:
            module = dev.create_shader_module(code=_SHADER.replace("SIZE_INPUT", size_input).replace("SIZE", size))
            pipeline = dev.create_render_pipeline(
                layout=dev.create_pipeline_layout(bind_group_layouts=[layout]),
                vertex={"module": module, "entry_point": "vs", "buffers": [{
                    "array_stride": 12, "step_mode": "vertex",
                    "attributes": [{"format": "float32x3", "offset": 0, "shader_location": 0}]}]},
                primitive={"topology": "triangle-list", "cull_mode": "none"},
                fragment={"module": module, "entry_point": "fs", "targets": [{"format": "rgba8unorm"}]})
            made["pipeline"] = (pipeline, layout, "")
            return made["pipeline"]
        except Exception as exc:  # noqa: BLE001 -- wgpu reports shader and pipeline errors as plain exceptions
            errors.append(" ".join(str(exc).split())[:300])
    made["pipeline"] = (None, None, "the capture shader was refused: " + " | ".join(errors))
    return made["pipeline"]


def _capture(counter, pipeline, layout, ibuf: np.ndarray, vertex_count: int) -> tuple[list[np.ndarray], int]:
    """One draw of ``ibuf`` with the capture pipeline: (waves, subgroup size recorded or 0)."""
    wgpu = counter.wgpu
    try:
        data = _draw(counter, pipeline, layout, ibuf, vertex_count)
    except wgpu.GPUError as exc:
        raise WgpuProbeError(f"wgpu ({counter.info['adapter']}): {' '.join(str(exc).split())[:400]}") from None
    return parse_waves(data)


def _draw(counter, pipeline, layout, ibuf: np.ndarray, vertex_count: int) -> np.ndarray:
    """The capture buffer of one draw (see :func:`gpu_probe.waves.parse_waves`)."""
    wgpu, dev = counter.wgpu, counter.device
    u = wgpu.BufferUsage
    words = 1 + 3 * max(ibuf.size, 1) + 16      # worst case: one lane per wave
    index_buffer = dev.create_buffer_with_data(data=_padded(ibuf), usage=u.INDEX)
    vertex_buffer = dev.create_buffer(size=max(vertex_count, 1) * 12, usage=u.VERTEX)
    out = dev.create_buffer(size=words * 4, usage=u.STORAGE | u.COPY_SRC)
    staging = dev.create_buffer(size=words * 4, usage=u.MAP_READ | u.COPY_DST)
    group = dev.create_bind_group(layout=layout, entries=[{"binding": 0, "resource": {"buffer": out}}])
    enc = dev.create_command_encoder()
    rp = enc.begin_render_pass(color_attachments=[{
        "view": counter.target, "load_op": "clear", "store_op": "store", "clear_value": (0, 0, 0, 0)}])
    rp.set_pipeline(pipeline)
    rp.set_bind_group(0, group)
    rp.set_vertex_buffer(0, vertex_buffer)
    rp.set_index_buffer(index_buffer, str(ibuf.dtype))
    if ibuf.size:
        rp.draw_indexed(int(ibuf.size), 1, 0, 0, 0)
    rp.end()
    enc.copy_buffer_to_buffer(out, 0, staging, 0, words * 4)
    dev.queue.submit([enc.finish()])
    staging.map_sync(wgpu.MapMode.READ)
    data = np.frombuffer(staging.read_mapped(copy=True), np.uint32)
    staging.unmap()
    for buf in (index_buffer, vertex_buffer, out, staging):
        buf.destroy()
    return data


#: Triangles of the draw that finds the subgroup size where the shader cannot read it: a strip
#: given as a list, ``(k, k+1, k+2)``, each triangle one new vertex, so a batch grows to any
#: bound on its distinct vertices (NVIDIA's 32; unshared vertices would stop it at 30).
CALIBRATION_TRIANGLES = 4096


def _subgroup_size(counter, pipeline, layout) -> int:
    """The widest wave of a draw of a strip (once per counter): the subgroup size, where the
    vertex shader may not read ``subgroup_size``."""
    made = _made.setdefault(counter, {})
    if "size" not in made:
        k = np.arange(CALIBRATION_TRIANGLES, dtype=np.uint32)
        strip = np.stack([k, k + 1, k + 2], axis=1)
        waves, _ = _capture(counter, pipeline, layout, strip.reshape(-1), CALIBRATION_TRIANGLES + 2)
        made["size"] = max((len(w) for w in waves), default=0)
    return made["size"]


def capture_waves_wgpu(counter, triangles, vertex_count=None, index_dtype=np.uint32) -> Waves:
    """Record which vertex indices each wave shaded for one indexed draw through ``counter``
    (a :class:`~gpu_probe.wgpu_counter.WgpuCounter`).

    Returns a :class:`~gpu_probe.waves.Waves` with ``supported=False`` (and the reason) where
    the adapter has no subgroup operations in vertex shaders.
    """
    renderer = counter.info["renderer"]
    if not counter.has_subgroup_vertex:
        return Waves(False, reason=f"{counter.info['adapter']}: no WGSL subgroup operations in vertex shaders "
                                   "(wgpu feature 'subgroup-vertex'); wave capture is unsupported",
                     renderer=renderer)
    pipeline, layout, reason = _pipeline(counter)
    if pipeline is None:
        return Waves(False, reason=reason, renderer=renderer)
    ibuf, V = _index_array(triangles, vertex_count, index_dtype)
    waves, size = _capture(counter, pipeline, layout, ibuf, V)
    return Waves(True, extension="WGSL subgroups", subgroup_size=size or _subgroup_size(counter, pipeline, layout),
                 waves=waves, renderer=renderer)
