"""Helpers shared by the frame-to-frame techniques (VRO, EVR, RE, DSR and their combinations).

* per-frame derived data cached on the frame object (computed once per frame even when several
  techniques of a run need it): ``Znear``, layer ids, ...;
* the raster options every reordering technique asks for.
"""

from __future__ import annotations

import weakref

__all__ = ["frame_cache", "reorder_extra"]

_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def frame_cache(frame, key, compute):
    """``compute()`` once per (frame object, key)."""
    d = _CACHE.get(frame)
    if d is None:
        d = {}
        _CACHE[frame] = d
    if key not in d:
        d[key] = compute()
    return d[key]


def reorder_extra() -> dict:
    """Raster options a reordering technique (VRO, EVR) asks for.

    Reordering opaque depth-tested, depth-writing triangles leaves every pixel unchanged except
    where two fragments have *exactly* the same depth: with ``less`` the first one drawn wins, so
    a tie between two objects flips when their order does (a building's base meeting the ground
    is enough: city-unordered shows one such pixel every few frames).  When the raster stage
    is asked for ``tie_break="program"`` (equal depths resolved by program order, the triangle
    index, as if drawn in program order), the reordered frames are bit-identical to the baseline.
    """
    return {"tie_break": "program"}
