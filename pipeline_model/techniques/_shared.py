"""Helpers shared by the frame-to-frame techniques (VRO, EVR, RE, DSR and their combinations).

* per-frame derived data cached on the frame object (computed once per frame even when several
  techniques of a run need it): triangle CRCs, ``Znear``, layer ids;
* reading optional outputs of the raster stage in one place.
"""

from __future__ import annotations

import weakref

__all__ = ["frame_cache", "result_array", "raster_supports", "reorder_extra"]

_CACHE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def frame_cache(frame, key, compute):
    """``compute()`` once per (frame object, key)."""
    d = _CACHE.get(frame)
    if d is None:
        d = {}
        _CACHE[frame] = d
    if key not in d:
        d[key] = compute()
    return d[key]


def result_array(result, *names, required: bool = True):
    """First attribute of ``result`` among ``names`` that is not None."""
    for n in names:
        v = getattr(result, n, None)
        if v is not None:
            return v
    if required:
        raise AttributeError(f"raster result has none of {names}: the technique needs it "
                             "(is the raster stage's record option on?)")
    return None


def raster_supports(option: str) -> bool:
    """Whether :func:`pipeline_model.raster.render_frame` takes keyword ``option``."""
    import inspect

    from pipeline_model.raster import render_frame

    return option in inspect.signature(render_frame).parameters


def reorder_extra() -> dict:
    """Raster options a reordering technique (VRO, EVR) asks for.

    Reordering opaque depth-tested, depth-writing triangles leaves every pixel unchanged except
    where two fragments have *exactly* the same depth: with ``less`` the first one drawn wins, so
    a tie between two objects flips when their order does (a building's base meeting the ground
    is enough: city-unordered shows one such pixel every few frames).  When the raster stage
    offers ``tie_break="program"`` (equal depths resolved by program order, the triangle index,
    as if drawn in program order), the reordered frames are bit-identical to the baseline.
    """
    return {"tie_break": "program"} if raster_supports("tie_break") else {}
