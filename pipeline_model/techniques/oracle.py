"""Oracle: the depth buffer of every tile pre-filled with the tile's final depths.

Paper 003 sec. VII ("an oracle approach, which ideally assumes that the Z Buffer is
initialized with the final visibility of the tile -- the final depth values -- before it is
executed").  It resolves visibility at fragment granularity for free, so its overshading is
the floor that EVR and VRO are measured against.

The final depths are those of the frame rendered in program order (with a LESS test and
depth writes, the final depth of a pixel does not depend on the order); the frame context
computes that baseline render once per frame and shares it (``ctx.baseline()``), so a run of
``baseline`` and ``oracle`` together renders the baseline once. With ``dr`` in the same run the
oracle's render is taken from DR's, which is the same result when no blended draw writes depth
(:func:`pipeline_model.raster.oracle_from_hsr` checks it frame by frame).
"""

from __future__ import annotations

from .base import RenderRequest, Technique

__all__ = ["Oracle"]


class Oracle(Technique):
    """Early-Z against the final depth buffer (an upper bound on visibility techniques)."""

    name = "oracle"

    def begin_frame(self, ctx) -> RenderRequest:
        return RenderRequest(depth_prefill=ctx.final_depth())
