"""Baseline: a Mali-like TBR GPU (paper 000 sec. 4.1, paper 003 sec. II).

Every tile is rendered, its primitives in program order, each fragment early-depth tested
against the on-chip depth buffer and shaded when it passes.  No state is carried between
frames.
"""

from __future__ import annotations

from .base import RenderRequest, Technique

__all__ = ["Baseline"]


class Baseline(Technique):
    """Program order + early-Z (the reference every other technique is compared with)."""

    name = "baseline"

    def begin_frame(self, ctx) -> RenderRequest:
        return RenderRequest()
