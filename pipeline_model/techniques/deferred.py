"""Deferred Rendering (DR): a per-tile hidden-surface-removal pass before shading.

Paper 000 sec. 2 and 4.2 (PowerVR-style TBDR, the "parallel DR" the paper compares VRO
against): for every tile, first all its primitives are rasterized for position and depth only
and early-depth tested to set up the depth buffer with the tile's final depths; then the tile
is rendered as usual, and the early-depth test now lets through only the visible fragment of
each pixel, so overshading is minimal.  The HSR pass costs rasterization and depth-test work
(``hsr_fragments``), runs on duplicated hardware in parallel with the previous tile's
shading (paper 000 Fig. 3b), and adds no geometry work.

Only opaque, depth-writing (WOZ) primitives take part in the HSR pass; translucent and NWOZ
primitives are tested against its result in the main pass and shaded as in the baseline.  The
raster stage does the pass (``render_frame(..., hsr_pass=True)``); the picture is bit-identical
to the baseline's.
"""

from __future__ import annotations

from .base import RenderRequest, Technique

__all__ = ["DeferredRendering"]


class DeferredRendering(Technique):
    """Per-tile HSR pass, then shading of the surviving fragments (no cross-frame state)."""

    name = "dr"

    def begin_frame(self, ctx) -> RenderRequest:
        return RenderRequest(hsr_pass=True)
