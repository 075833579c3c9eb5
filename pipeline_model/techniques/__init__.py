"""Techniques of the pipeline model and their registry (name -> "module:factory").

A technique changes one stage of the frame (the triangle order per tile, which tiles are
rendered, the sampling rate, the depth buffer's initial contents, an extra HSR pass...) and
keeps whatever it learns from frame N for frame N+1 as explicit state on its object.  The
interface is :class:`pipeline_model.techniques.base.Technique`; the frame loop is
:func:`pipeline_model.pipeline.simulate`.

Registry
--------
Names are resolved lazily, so listing techniques imports nothing heavy:

* :data:`REGISTRY` holds the built-in names (``baseline``, ``dr``, ``oracle``) and the names of
  the frame-to-frame techniques of issue 7, each as ``"module:attribute"``;
* a technique module may also declare ``TECHNIQUES = {"name": Class or factory, ...}``;
  :func:`available` and :func:`get` scan the modules of this package for such tables when a
  name is not in :data:`REGISTRY` (so a new module registers itself without editing this file);
* :func:`register` adds a name at run time (a plug-in, a test).

The attribute is a class or a factory called with the technique's keyword options; it returns
an object with ``name``, ``reset()``, ``begin_frame(ctx)`` and ``end_frame(ctx, result)``.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from typing import Any, Callable

from meshopt_batch.errors import MeshoptBatchError

__all__ = ["REGISTRY", "register", "available", "get", "create", "Technique", "RenderRequest"]

#: Built-in names.  Entries whose module is missing are skipped by :func:`available`.
REGISTRY: dict[str, str] = {
    "baseline": "pipeline_model.techniques.baseline:Baseline",
    "dr": "pipeline_model.techniques.deferred:DeferredRendering",
    "oracle": "pipeline_model.techniques.oracle:Oracle",
}

_RUNTIME: dict[str, Any] = {}
_SCANNED: dict[str, Any] | None = None


def register(name: str, target: "str | Callable[..., Any]") -> None:
    """Register a technique under ``name``: a ``"module:attr"`` string or a class/factory."""
    _RUNTIME[name] = target


def _scan() -> dict[str, Any]:
    """``TECHNIQUES`` tables of this package's modules (imported once, on demand)."""
    global _SCANNED
    if _SCANNED is None:
        found: dict[str, Any] = {}
        for info in pkgutil.iter_modules(__path__):
            if info.name.startswith("_") or info.name == "base":
                continue
            try:
                mod = importlib.import_module(f"{__name__}.{info.name}")
            except Exception:  # noqa: BLE001 - a broken optional module must not hide the others
                continue
            table = getattr(mod, "TECHNIQUES", None)
            if isinstance(table, dict):
                for k, v in table.items():
                    found.setdefault(str(k), v)
        _SCANNED = found
    return _SCANNED


def _resolve(target: Any) -> Callable[..., Any]:
    if isinstance(target, str):
        mod, _, attr = target.partition(":")
        try:
            module = importlib.import_module(mod)
        except ImportError as exc:
            raise MeshoptBatchError(f"technique module {mod} unavailable ({exc})") from None
        try:
            return getattr(module, attr)
        except AttributeError:
            raise MeshoptBatchError(f"technique {target}: no attribute {attr!r}") from None
    return target


def _lookup(name: str) -> Any | None:
    if name in _RUNTIME:
        return _RUNTIME[name]
    if name in REGISTRY:
        mod = REGISTRY[name].partition(":")[0]
        if importlib.util.find_spec(mod) is not None:
            return REGISTRY[name]
    return _scan().get(name)


def available() -> list[str]:
    """Technique names that can be created here (built-ins first, then the rest sorted)."""
    names = [n for n in REGISTRY if importlib.util.find_spec(REGISTRY[n].partition(":")[0]) is not None]
    extra = sorted((set(_scan()) | set(_RUNTIME)) - set(names))
    return names + extra


def get(name: str) -> Callable[..., Any]:
    """The class or factory registered under ``name``."""
    target = _lookup(name)
    if target is None:
        raise MeshoptBatchError(f"unknown technique {name!r} (available: {', '.join(available())})")
    return _resolve(target)


def create(name: str, **options: Any):
    """A fresh technique object (its own cross-frame state) for ``name``."""
    factory = get(name)
    obj = factory(**options)
    if not getattr(obj, "name", None):
        try:
            obj.name = name
        except AttributeError:
            pass
    return obj


def __getattr__(attr: str):
    if attr in ("Technique", "RenderRequest"):
        from . import base

        return getattr(base, attr)
    raise AttributeError(attr)

