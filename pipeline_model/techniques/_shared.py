"""Helpers shared by the frame-to-frame techniques (VRO, EVR, RE, DSR and their combinations).

* per-frame derived data cached on the frame object (computed once per frame even when several
  techniques of a run need it): triangle CRCs, ``Znear``, layer ids;
* reading optional outputs of the raster stage in one place.
"""

from __future__ import annotations

import weakref

import numpy as np

__all__ = ["frame_cache", "order_of", "result_array"]

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


def order_of(tiles):
    """(offsets, tri) of a TileLists or of an (offsets, tri) pair."""
    if isinstance(tiles, tuple):
        return tiles
    return tiles.offsets, tiles.tri


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
