"""Invocation counters: where the probe's numbers come from.

The probe's experiments, fit, verification and accuracy table only need one thing: the
vertex-shader invocations of an indexed triangle draw.  A *counter* provides them:

* :func:`gl_counter`: this machine's GPU through OpenGL (:class:`gpu_probe.invocations.Prober`,
  moderngl + EGL; Mesa's llvmpipe without a GPU), the default;
* :func:`wgpu_counter`: this machine's GPU through WebGPU over Vulkan, Metal or Direct3D 12
  (:class:`gpu_probe.wgpu_counter.WgpuCounter`; Mesa's lavapipe without a GPU);
* :class:`FunctionCounter`: any Python function ``FUNCTION(indices, vertex_count)`` taking the
  1-D ``uint32`` index buffer of one triangle-list draw and returning the invocations of every
  vertex (an integer array of length ``vertex_count``, each count from 0 to the draw's index
  count: a vertex is shaded at most once per index): counts from D3D12/Vulkan pipeline
  statistics, a vendor simulator, a capture, or the simulated GPUs of
  :mod:`gpu_probe.simulated`;
* :class:`ModelCounter`: answers with a profile's own prediction (Algorithm 1 of paper 001).

:func:`resolve_counter` turns the command line's ``MODULE:FUNCTION`` into a counter once, at
the boundary; everything inside takes the counter object.  Every counter has ``info``
(renderer, vendor, version), ``render_state`` (whether it can draw with other index types,
raster states and varyings), :meth:`measure_many` (many draws, one call) and :meth:`measure`
(one draw, a :class:`~gpu_probe.invocations.Measurement`).  :func:`api_counter` picks the GL or
the WebGPU counter (``probe --api gl|wgpu --adapter NAME``), :func:`renderer_record` names what
measured.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import time
from pathlib import Path

import numpy as np

from meshopt_batch.model.prediction import predict
from meshopt_batch.model.profiles import get_profile
from meshopt_batch.support.errors import MeshoptBatchError

from .invocations import Measurement, _index_array, prober

#: The graphics APIs a counter can draw through (``probe --api``).
APIS = ("gl", "wgpu")


def gl_counter():
    """This machine's GPU through OpenGL (raises a one-line error without a context)."""
    return prober()


def wgpu_counter(adapter: str | None = None):
    """This machine's GPU through WebGPU (Vulkan, Metal or Direct3D 12): the adapter whose name,
    backend and driver hold every word of ``adapter`` (None: the best one); raises a one-line
    error without one."""
    from .wgpu_counter import wgpu_counter as counter_of  # lazy: wgpu loads only for --api wgpu

    return counter_of(adapter)


def capture_waves_through(counter, triangles, vertex_count=None, index_dtype=np.uint32):
    """Which vertex indices each wave shaded for one indexed draw (paper 001 sec. 3.2), through
    ``counter``'s API: :func:`gpu_probe.wgpu_waves.capture_waves_wgpu` for a WebGPU counter,
    :func:`gpu_probe.waves.capture_waves` (OpenGL) for anything else or None."""
    if counter is not None and counter.info.get("api") == "wgpu":
        from .wgpu_waves import capture_waves_wgpu  # lazy: wgpu loads only for --api wgpu

        return capture_waves_wgpu(counter, triangles, vertex_count, index_dtype)
    from .waves import capture_waves  # lazy: OpenGL loads only when asked

    return capture_waves(triangles, vertex_count, index_dtype)


def api_counter(api: str = "gl", adapter: str | None = None):
    """The counter that draws through one graphics API.

    Parameters
    ----------
    api : {"gl", "wgpu"}
        OpenGL (moderngl, headless EGL) or WebGPU (wgpu: Vulkan, Metal, Direct3D 12).
    adapter : str, optional
        With ``wgpu``: the adapter whose name, backend and driver contain every word of it
        (default: a discrete GPU before an integrated one, before a CPU).

    Returns
    -------
    counter
        An object with ``measure``, ``measure_many`` and ``info``.

    Raises
    ------
    MeshoptBatchError
        One line: an unknown API, an adapter name with ``gl``, or no usable context/adapter.
    """
    if api not in APIS:
        raise MeshoptBatchError(f"--api {api!r}: expected one of {', '.join(APIS)}")
    if api == "gl":
        if adapter:
            raise MeshoptBatchError("--adapter picks a WebGPU adapter: add --api wgpu")
        return gl_counter()
    return wgpu_counter(adapter)


#: What a renderer record holds beyond renderer, vendor and version, where the counter knows it.
RECORD_KEYS = ("api", "backend", "adapter", "driver", "wgpu")


def renderer_record(info: dict) -> dict:
    """What measured, from a counter's ``info``: the fields a results file records.

    Parameters
    ----------
    info : dict
        A counter's ``info``.

    Returns
    -------
    dict
        ``renderer``, ``vendor``, ``version`` and, where known, ``api`` (``gl``, ``wgpu`` or
        ``counter``), ``backend``, ``adapter``, ``driver`` and ``wgpu``.
    """
    rec = {k: info[k] for k in ("renderer", "vendor", "version")}
    rec.update({k: info[k] for k in RECORD_KEYS if k in info})
    return rec


class _CallCounter:
    """Shared part of counters that compute one draw at a time in Python."""

    render_state = False

    def counts(self, indices: np.ndarray, vertex_count: int) -> np.ndarray:
        raise NotImplementedError

    def measure_many(self, index_buffers, vertex_count=None, index_dtype=np.uint32, *,
                     per_vertex=False, with_query=False, discard=True, varyings=0):
        """Totals (and per-vertex counts) of every buffer, each one draw.

        ``index_dtype``, ``with_query``, ``discard`` and ``varyings`` do not apply (the
        counter sees only the indices): the query totals are None.
        """
        bufs = [np.asarray(b).reshape(-1) for b in index_buffers]
        if any(b.size % 3 for b in bufs):
            raise MeshoptBatchError("every index buffer must hold whole triangles")
        if vertex_count is None:
            vertex_count = max((int(b.max()) + 1 for b in bufs if b.size), default=0)
        V = int(vertex_count)
        totals = np.zeros(len(bufs), np.int64)
        per = np.zeros((len(bufs), V), np.int64) if per_vertex else None
        for k, b in enumerate(bufs):
            ibuf, _ = _index_array(b, V, np.uint32)
            c = self.counts(ibuf, V)
            totals[k] = c.sum()
            if per is not None:
                per[k] = c
        return totals, per, None

    def measure(self, triangles, vertex_count=None, index_dtype=np.uint32, *,
                per_vertex: bool = True, **_) -> Measurement:
        """One draw as a :class:`~gpu_probe.invocations.Measurement` (method ``"counter"``)."""
        t0 = time.perf_counter()
        ibuf, V = _index_array(triangles, vertex_count, np.uint32)
        c = self.counts(ibuf, V)
        return Measurement(
            invocations=int(c.sum()), per_vertex=c if per_vertex else None, method="counter",
            ssbo_invocations=None, query_invocations=None, agree=True, triangles=ibuf.size // 3,
            vertex_count=V, index_type=str(np.dtype(index_dtype)), renderer=self.info["renderer"],
            vendor=self.info["vendor"], version=self.info["version"],
            seconds=time.perf_counter() - t0)


class FunctionCounter(_CallCounter):
    """A counter from a function ``fn(indices, vertex_count) -> per-vertex invocations``.

    Parameters
    ----------
    fn : callable
        Takes a 1-D ``uint32`` index buffer (whole triangles) and the vertex count; returns
        the invocations of every vertex of that one draw (integers from 0 to the index
        count, length ``vertex_count``).  Whatever it raises, or a return that is not such
        an array, is one :class:`~meshopt_batch.support.errors.MeshoptBatchError` line naming the
        counter.
    name : str
        How the counter is named in results (e.g. ``gpu_probe.simulated:nvidia_gl``).
    """

    def __init__(self, fn, name: str):
        self.fn = fn
        self.name = name
        doc = (getattr(fn, "__doc__", None) or "").strip().splitlines()
        self.info = {"renderer": name, "vendor": "counter", "version": doc[0] if doc else "",
                     "api": "counter"}

    def counts(self, indices, vertex_count):
        """The invocations of every vertex for one draw.

        Parameters
        ----------
        indices : numpy.ndarray
            1-D ``uint32`` index buffer of one triangle-list draw.
        vertex_count : int
            Size of the vertex buffer.

        Returns
        -------
        numpy.ndarray
            ``(vertex_count,)`` int64 invocations per vertex.

        Raises
        ------
        MeshoptBatchError
            The function raised, or returned something that is not such an array.
        """
        try:
            out = self.fn(indices, vertex_count)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - a user's function may raise anything
            raise MeshoptBatchError(f"counter {self.name} raised {_describe_exception(exc)}") from None
        try:
            arr = np.asarray(out)
        except Exception as exc:  # noqa: BLE001 - a user's function may return anything
            raise MeshoptBatchError(f"counter {self.name} returned {type(out).__name__} "
                                    f"({_describe_exception(exc)})") from None
        if arr.shape != (vertex_count,) or not np.issubdtype(arr.dtype, np.integer):
            raise MeshoptBatchError(
                f"counter {self.name} must return an integer array of length {vertex_count} "
                f"(per-vertex invocations), got {arr.dtype} with shape {arr.shape}")
        if arr.size and arr.min() < 0:
            raise MeshoptBatchError(f"counter {self.name} returned a negative count")
        # a vertex is shaded at most once per index of the draw; this also keeps the totals
        # (int64) exact
        limit = int(np.asarray(indices).size)
        if arr.size and int(arr.max()) > limit:
            raise MeshoptBatchError(
                f"counter {self.name} returned {int(arr.max()):,} invocations of vertex {int(arr.argmax())} "
                f"for a draw of {limit:,} indices (at most one per index)")
        return arr.astype(np.int64, copy=False)


def _describe_exception(exc: BaseException) -> str:
    """``TypeError: message`` (just the type when the message is empty)."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class ModelCounter(_CallCounter):
    """A counter answering with a profile's prediction (paper 001, Algorithm 1).

    The probe's experiments and fit then run against a known model.

    Parameters
    ----------
    profile : str or Profile
        The profile whose predictions are the counts.
    """

    def __init__(self, profile):
        self.profile = get_profile(profile)
        self.info = {"renderer": f"simulated {self.profile.name} (Algorithm 1)",
                     "vendor": "meshopt_batch.model.prediction", "version": "model", "api": "counter"}

    def counts(self, indices, vertex_count):
        """The invocations of every vertex for one draw.

        Parameters
        ----------
        indices : numpy.ndarray
            1-D ``uint32`` index buffer of one triangle-list draw.
        vertex_count : int
            Size of the vertex buffer.

        Returns
        -------
        numpy.ndarray
            ``(vertex_count,)`` int64 invocations per vertex.
        """
        return predict(indices.reshape(-1, 3), vertex_count, profile=self.profile,
                       per_vertex=True).shaded_per_vertex


def _load_module(name: str):
    """A module by import name, or from a ``.py`` file path (the current directory is not on
    ``sys.path`` for an installed command)."""
    if name.endswith(".py"):
        path = Path(name)
        if not path.is_file():
            raise MeshoptBatchError(f"{name}: no such file")
        spec = importlib.util.spec_from_file_location(path.stem, path)
        if spec is None or spec.loader is None:
            raise MeshoptBatchError(f"{name}: cannot load it as a Python module")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    return importlib.import_module(name)


def _takes_indices_and_count(fn) -> str | None:
    """Why ``fn`` cannot be called as ``fn(indices, vertex_count)`` (None: it can, or its
    signature is unknown, as for some builtins)."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    try:
        signature.bind(None, None)
    except TypeError:
        return f"its signature is {signature}"
    return None


def resolve_counter(spec: str | None):
    """The counter named by ``MODULE:FUNCTION`` or ``FILE.py:FUNCTION``.

    Parameters
    ----------
    spec : str or None
        ``MODULE:FUNCTION`` or ``FILE.py:FUNCTION`` naming a function
        ``fn(indices, vertex_count) -> per-vertex invocations``; None: this machine's GPU
        through OpenGL.

    Returns
    -------
    counter
        A :class:`FunctionCounter`, or the OpenGL counter.

    Raises
    ------
    MeshoptBatchError
        One line: the spec is malformed, the module cannot be loaded (not found, a syntax
        error, or anything its code raises while it is imported), or it has no callable of
        that name taking ``(indices, vertex_count)``.
    """
    if spec is None:
        return gl_counter()
    module_name, sep, func_name = str(spec).rpartition(":")
    if not sep or not module_name or not func_name:
        raise MeshoptBatchError(f"--counter {spec!r}: expected MODULE:FUNCTION or FILE.py:FUNCTION "
                                "(e.g. gpu_probe.simulated:nvidia_gl)")
    try:
        module = _load_module(module_name)
    except MeshoptBatchError:
        raise
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - importing runs the module's code
        raise MeshoptBatchError(f"--counter {spec}: cannot import {module_name} "
                                f"({_describe_exception(exc)})") from None
    try:
        fn = getattr(module, func_name, None)
    except Exception as exc:  # noqa: BLE001 - a module's __getattr__ may raise anything
        raise MeshoptBatchError(f"--counter {spec}: {module_name}.{func_name}: "
                                f"{_describe_exception(exc)}") from None
    if not callable(fn):
        raise MeshoptBatchError(f"--counter {spec}: {module_name} has no function {func_name}")
    if why := _takes_indices_and_count(fn):
        raise MeshoptBatchError(f"--counter {spec}: cannot be called as {func_name}(indices, vertex_count) "
                                f"({why})")
    return FunctionCounter(fn, f"{module_name}:{func_name}")
