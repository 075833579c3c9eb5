"""Techniques of the pipeline model and their registry.

A technique changes one stage of the frame (the triangle order per tile, which tiles are
rendered, the sampling rate, the depth buffer's initial contents, an extra HSR pass...) and
keeps whatever it learns from frame N for frame N+1 as explicit state on its object.  The
interface is :class:`pipeline_model.techniques.base.Technique`; the frame loop is
:func:`pipeline_model.pipeline.simulate`.

Registry
--------
One table, :data:`REGISTRY`: a name maps to a ``"module:Class"`` target and the fixed options
that make the named variant (``evr+re`` is ``EVR(re=True)``).  Modules are imported when a
technique is created, so listing names imports nothing heavy.  A new technique is a module
in this package plus one line here; a plug-in (or a test) adds its own with :func:`register`.
Whatever a target builds must be a :class:`~pipeline_model.techniques.base.Technique`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

from meshopt_batch.support.errors import MeshoptBatchError

from .base import RenderRequest, Technique

__all__ = ["REGISTRY", "RenderRequest", "Technique", "TechniqueEntry", "available", "create", "get",
           "register"]


@dataclass(frozen=True)
class TechniqueEntry:
    """How to build one named technique: ``target(**options, **user_options)``.

    Attributes
    ----------
    target : str or callable
        ``"package.module:Class"``, or a Technique subclass or factory.
    options : dict
        The fixed constructor options that make the named variant.
    """

    target: Any                      # "package.module:Class" or a Technique subclass / factory
    options: dict = field(default_factory=dict)

    def factory(self):
        """The class or factory that builds the technique (imported now).

        Returns
        -------
        callable
            The Technique subclass or factory.
        """
        if not isinstance(self.target, str):
            return self.target
        module_name, _, attr = self.target.partition(":")
        return getattr(importlib.import_module(module_name), attr)


#: Every technique name, in the order :func:`available` lists them.
REGISTRY: dict[str, TechniqueEntry] = {
    "baseline": TechniqueEntry("pipeline_model.techniques.baseline:Baseline"),
    "dr": TechniqueEntry("pipeline_model.techniques.deferred:DeferredRendering"),
    "oracle": TechniqueEntry("pipeline_model.techniques.oracle:Oracle"),
    "dsr": TechniqueEntry("pipeline_model.techniques.dsr:DSR"),
    "evr": TechniqueEntry("pipeline_model.techniques.evr:EVR"),
    "evr+dsr": TechniqueEntry("pipeline_model.techniques.evr:EVR", {"dsr": True}),
    "evr+re": TechniqueEntry("pipeline_model.techniques.evr:EVR", {"re": True}),
    "re": TechniqueEntry("pipeline_model.techniques.re:RE"),
    "vro": TechniqueEntry("pipeline_model.techniques.vro:VRO"),
    "vro+re": TechniqueEntry("pipeline_model.techniques.vro:VRO", {"re": True}),
}


def register(name: str, target: Any, **options: Any) -> None:
    """Add (or replace) a technique in the registry.

    Parameters
    ----------
    name : str
        The technique's name (``--technique``).
    target : str or callable
        ``"module:Class"``, or a Technique subclass (or a factory returning a Technique).
    **options
        Fixed constructor options of this variant.
    """
    REGISTRY[name] = TechniqueEntry(target, dict(options))


def available() -> list[str]:
    """Every registered technique name.

    Returns
    -------
    list of str
        The names, in registry order.
    """
    return list(REGISTRY)


def get(name: str) -> TechniqueEntry:
    """The registry entry of a technique.

    Parameters
    ----------
    name : str
        A registered name.

    Returns
    -------
    TechniqueEntry
        Its entry.

    Raises
    ------
    MeshoptBatchError
        An unknown name (the message lists the known ones).
    """
    try:
        return REGISTRY[name]
    except KeyError:
        raise MeshoptBatchError(f"unknown technique {name!r} (available: {', '.join(available())})") from None


def create(name: str, **options: Any) -> Technique:
    """A fresh technique object, with its own cross-frame state.

    Parameters
    ----------
    name : str
        A registered name.
    **options
        Constructor options on top of the entry's fixed ones.

    Returns
    -------
    Technique
        The technique.

    Raises
    ------
    MeshoptBatchError
        An unknown name.
    TypeError
        The entry builds something that is not a Technique, or an unknown option.
    """
    entry = get(name)
    technique = entry.factory()(**{**entry.options, **options})
    if not isinstance(technique, Technique):
        raise TypeError(f"technique {name!r} built a {type(technique).__name__}, not a Technique")
    if technique.name == Technique.name:
        technique.name = name
    return technique
