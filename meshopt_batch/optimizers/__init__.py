"""Triangle-order optimizers and the :func:`optimize` dispatcher.

Every optimizer takes an index buffer and returns the same triangles in a new order
(each triangle keeps its vertex order, so winding and provoking vertex are unchanged):

==========================  ==========================================================
``original``                the input order (a copy)
``hoppe``                   Hoppe 1999, greedy strip growing with cache-aware restarts
``tipsify``                 Sander, Nehab & Barczak 2007 (Tipsify)
``kcache``                  Lin & Yu 2006 (K-Cache)
``forsyth``                 Forsyth 2006, linear-speed vertex cache optimisation (TomF)
``batch``                   paper 001's batch-based optimizer (Algorithm 2); may also grow
                            the vertex buffer (16-bit boundary fix), see
                            :func:`optimize_result`
``meshoptimizer``           ``meshoptimizer.optimize_vertex_cache`` (optional package)
``meshoptimizer_fifo``      ``meshoptimizer.optimize_vertex_cache_fifo(cache_size)``
``meshoptimizer_strip``     ``meshoptimizer.optimize_vertex_cache_strip``
==========================  ==========================================================

Methods are registered by ``"module:function"`` name and imported on first use, so a
missing optional dependency only matters to the method that needs it.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..errors import MeshoptBatchError

__all__ = [
    "METHODS",
    "CLASSIC_METHODS",
    "OptimizeResult",
    "available_methods",
    "method_info",
    "optimize",
    "optimize_result",
    "register",
]


@dataclass(frozen=True)
class MethodInfo:
    """One registered optimizer.

    Attributes
    ----------
    name : str
        Method name (``--method`` on the command line).
    target : str
        ``"package.module:function"`` implementing it, imported on first use.
    title : str
        Short human title (table headers).
    uses_profile : bool
        The function takes ``profile=`` (it optimizes for a named GPU model).
    requires : str or None
        Optional package the method needs (``None``: always available).
    """

    name: str
    target: str
    title: str
    uses_profile: bool = False
    requires: str | None = None


METHODS: dict[str, MethodInfo] = {}

#: The four classic optimizers of paper 001's Tables 1-2, in the tables' column order.
CLASSIC_METHODS = ("hoppe", "kcache", "tipsify", "forsyth")


def register(name: str, target: str, title: str | None = None, *, uses_profile: bool = False,
             requires: str | None = None) -> None:
    """Register an optimizer by ``"module:function"`` (imported lazily)."""
    METHODS[name] = MethodInfo(name, target, title or name, uses_profile, requires)


register("original", "meshopt_batch.optimizers:optimize_original", "Original")
register("hoppe", "meshopt_batch.optimizers.hoppe:optimize_hoppe", "Hoppe")
register("kcache", "meshopt_batch.optimizers.kcache:optimize_kcache", "K-Cache")
register("tipsify", "meshopt_batch.optimizers.tipsify:optimize_tipsify", "Tipsify")
register("forsyth", "meshopt_batch.optimizers.forsyth:optimize_forsyth", "TomF")
register("batch", "meshopt_batch.optimizers.batch:optimize_batch", "Batching", uses_profile=True)
register("meshoptimizer", "meshopt_batch.optimizers:_meshopt_vertex_cache", "meshopt",
         requires="meshoptimizer")
register("meshoptimizer_fifo", "meshopt_batch.optimizers:_meshopt_vertex_cache_fifo", "meshopt-fifo",
         requires="meshoptimizer")
register("meshoptimizer_strip", "meshopt_batch.optimizers:_meshopt_vertex_cache_strip", "meshopt-strip",
         requires="meshoptimizer")


def method_info(method: str) -> MethodInfo:
    """The registry entry of ``method`` (raises :class:`MeshoptBatchError` if unknown)."""
    try:
        return METHODS[method]
    except KeyError:
        raise MeshoptBatchError(
            f"unknown optimization method {method!r} (known: {', '.join(METHODS)})") from None


def _has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def available_methods(include_optional: bool = True) -> list[str]:
    """Registered methods whose optional dependency (if any) is installed."""
    names = []
    for name, info in METHODS.items():
        if info.requires is not None and (not include_optional or not _has_module(info.requires)):
            continue
        names.append(name)
    return names


def _load(info: MethodInfo) -> Callable[..., Any]:
    module_name, _, func_name = info.target.partition(":")
    if info.requires is not None and not _has_module(info.requires):
        raise MeshoptBatchError(
            f"method {info.name!r} needs the optional package {info.requires!r} "
            f"(pip install 'meshopt-batch[compare]')")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise MeshoptBatchError(f"method {info.name!r} is not available: {exc}") from None
    try:
        return getattr(module, func_name)
    except AttributeError:
        raise MeshoptBatchError(f"method {info.name!r}: {info.target} not found") from None


@dataclass
class OptimizeResult:
    """An optimized index buffer, plus the vertex remap when the method grew the vertex buffer.

    Attributes
    ----------
    triangles : (T, 3) ndarray
        New index buffer.
    vertex_remap : ndarray or None
        ``new vertex -> source vertex`` for methods that duplicate vertices (paper 001's
        16-bit boundary fix); ``None`` when the vertex buffer is unchanged.
    """

    triangles: np.ndarray
    vertex_remap: np.ndarray | None = None

    @property
    def vertex_count_delta(self) -> int:
        if self.vertex_remap is None:
            return 0
        return int(len(self.vertex_remap) - (self.vertex_remap.max() + 1 if len(self.vertex_remap) else 0))


def _normalise_result(value: Any) -> OptimizeResult:
    """Accept an array, a ``(triangles, remap)`` tuple or an object with ``.triangles``."""
    if isinstance(value, OptimizeResult):
        return value
    if isinstance(value, np.ndarray):
        return OptimizeResult(value)
    if isinstance(value, tuple) and len(value) >= 1:
        remap = value[1] if len(value) > 1 else None
        return OptimizeResult(np.asarray(value[0]), None if remap is None else np.asarray(remap))
    tris = getattr(value, "triangles", None)
    if tris is None:
        tris = getattr(value, "indices", None)
    if tris is None:
        raise MeshoptBatchError(f"optimizer returned {type(value).__name__}, not triangles")
    remap = getattr(value, "vertex_remap", None)
    if remap is None:
        remap = getattr(value, "remap", None)
    return OptimizeResult(np.asarray(tris), None if remap is None else np.asarray(remap))


def optimize_result(triangles, vertex_count: int | None = None, method: str = "forsyth",
                    profile=None, **params) -> OptimizeResult:
    """Run one optimizer and return its :class:`OptimizeResult` (triangles and vertex remap).

    ``profile`` is passed to methods that optimize for a GPU model (``batch``) and ignored by
    the others; ``params`` go to the method's function (e.g. ``cache_size=14``).
    """
    if hasattr(triangles, "triangles") and not isinstance(triangles, np.ndarray):
        if vertex_count is None:
            vertex_count = getattr(triangles, "vertex_count", None)
        triangles = triangles.triangles
    info = method_info(method)
    func = _load(info)
    if info.uses_profile:
        if profile is not None:
            params["profile"] = profile
    out = func(triangles, vertex_count, **params)
    return _normalise_result(out)


def optimize(triangles, vertex_count: int | None = None, method: str = "forsyth", profile=None,
             **params) -> np.ndarray:
    """Reorder triangles with one of the registered methods; returns the new ``(T, 3)`` array.

    Parameters
    ----------
    triangles : (T, 3) integer array or a Mesh
        Index buffer (a :class:`~meshopt_batch.mesh.Mesh` is accepted too).
    vertex_count : int, optional
        Vertex buffer size (default: largest index + 1, or the mesh's vertex count).
    method : str
        A name from :data:`METHODS`.
    profile : str or Profile, optional
        GPU profile for profile-aware methods (``batch``).
    **params
        Method parameters, e.g. ``cache_size`` for hoppe/tipsify/kcache/forsyth and
        ``meshoptimizer_fifo``.

    Notes
    -----
    For ``batch`` with 16-bit boundary fixing the result may reference appended vertex
    copies; use :func:`optimize_result` to get the vertex remap.
    """
    return optimize_result(triangles, vertex_count, method, profile, **params).triangles


def optimize_original(triangles, vertex_count: int | None = None) -> np.ndarray:
    """The input order, unchanged (a copy): the "Original" column of the comparison."""
    from ._util import prepare

    tris, _ = prepare(triangles, vertex_count)
    out = tris.copy()
    dtype = np.asarray(triangles).dtype
    return out.astype(dtype) if np.issubdtype(dtype, np.integer) and out.dtype != dtype else out


def _meshopt_call(name: str, triangles, vertex_count, **kwargs) -> np.ndarray:
    import meshoptimizer

    from ._util import prepare

    tris, vcount = prepare(triangles, vertex_count)
    if tris.shape[0] == 0:
        return tris.copy()
    flat = np.ascontiguousarray(tris, dtype=np.uint32).reshape(-1)
    dst = np.empty_like(flat)
    getattr(meshoptimizer, name)(dst, flat, flat.size, vcount, **kwargs)
    out = dst.reshape(-1, 3)
    dtype = np.asarray(triangles).dtype
    return out.astype(dtype) if np.issubdtype(dtype, np.integer) and out.dtype != dtype else out


def _meshopt_vertex_cache(triangles, vertex_count=None) -> np.ndarray:
    """meshoptimizer's ``optimize_vertex_cache`` (a tuned Forsyth-style scorer)."""
    return _meshopt_call("optimize_vertex_cache", triangles, vertex_count)


def _meshopt_vertex_cache_fifo(triangles, vertex_count=None, cache_size: int = 16) -> np.ndarray:
    """meshoptimizer's ``optimize_vertex_cache_fifo`` (Tipsify) for a FIFO of ``cache_size``."""
    return _meshopt_call("optimize_vertex_cache_fifo", triangles, vertex_count, cache_size=int(cache_size))


def _meshopt_vertex_cache_strip(triangles, vertex_count=None) -> np.ndarray:
    """meshoptimizer's ``optimize_vertex_cache_strip`` (order for strip conversion)."""
    return _meshopt_call("optimize_vertex_cache_strip", triangles, vertex_count)
