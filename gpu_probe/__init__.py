"""Real GPU measurements through OpenGL (moderngl, headless EGL) or WebGPU (wgpu: Vulkan, Metal,
Direct3D 12), or through any invocation counter.

Count vertex-shader invocations of any index buffer (:func:`measure_invocations`), run the
batch-identification experiments of paper 001 sec. 3.3 (:func:`run_experiments`), fit a
profile from them and check it (:func:`gpu_probe.profile_fit.fit`, :func:`fit_profile`), capture waves
(:func:`capture_waves`) and tabulate predicted-vs-measured accuracy (:func:`accuracy_table`).
Without a GPU the OpenGL implementation is Mesa's llvmpipe, whose rule :mod:`gpu_probe.vsplit`
spells out, and the Vulkan one Mesa's lavapipe (same rule).  :func:`api_counter` picks OpenGL or
WebGPU (:mod:`gpu_probe.wgpu_counter`, ``probe --api wgpu``).  The counts can also come from a
function (:mod:`gpu_probe.counters`: :func:`resolve_counter`, ``meshopt-batch probe --counter
MODULE:FUNCTION``), e.g. the simulated GPUs of :mod:`gpu_probe.simulated`.

Names are imported lazily: ``import gpu_probe`` creates no OpenGL context and loads no wgpu.  The
submodule ``gpu_probe.profile_fit`` is not shadowed by a function of the same name: use
``from gpu_probe.profile_fit import fit``.
"""

from importlib import import_module

from meshopt_batch.support.kernel_cache import install as _install_kernel_cache

_install_kernel_cache()  # before this package defines a kernel (see meshopt_batch.support.kernel_cache)

_EXPORTS = {
    "get_context": "gpu_probe.context",
    "gl_info": "gpu_probe.context",
    "gl_available": "gpu_probe.context",
    "GLUnavailableError": "gpu_probe.context",
    "measure_invocations": "gpu_probe.invocations",
    "Measurement": "gpu_probe.invocations",
    "resolve_counter": "gpu_probe.counters",
    "api_counter": "gpu_probe.counters",
    "renderer_record": "gpu_probe.counters",
    "FunctionCounter": "gpu_probe.counters",
    "ModelCounter": "gpu_probe.counters",
    "run_experiments": "gpu_probe.experiments",
    "ExperimentSuite": "gpu_probe.experiments",
    "fit_profile": "gpu_probe.profile_fit",
    "verify": "gpu_probe.profile_fit",
    "capture_waves": "gpu_probe.waves",
    "accuracy_table": "gpu_probe.accuracy",
    "mse_table": "gpu_probe.accuracy",
    "plot_accuracy": "gpu_probe.accuracy",
    "simulate_vsplit": "gpu_probe.vsplit",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'gpu_probe' has no attribute {name!r}")
