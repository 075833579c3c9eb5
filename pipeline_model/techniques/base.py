"""The technique interface: what a technique may change in a frame, and its hooks.

The frame loop (:func:`pipeline_model.pipeline.simulate`) runs geometry and binning once per
frame and then, for every technique of the run::

    request, result = technique.run(ctx)          # default: request = begin_frame(ctx),
                                                  #          result = ctx.render(request)
    extra = technique.end_frame(ctx, result)      # learn for frame N+1; extra counters

``begin_frame`` returns a :class:`RenderRequest` (what to change this frame); ``run`` is
overridden only by techniques that need more than one raster pass.  Extra counters returned
by ``end_frame`` are added to the frame's row; :attr:`Technique.aggregate` says how they
combine into the run's totals and :meth:`Technique.summary` adds run-level figures.

``ctx`` is a :class:`pipeline_model.pipeline.FrameContext`: the frame index, the
:class:`~pipeline_model.frame.FrameGeometry`, the :class:`~pipeline_model.binning.TileLists`,
the scene's :class:`~pipeline_model.scene.FrameSpec`, this technique's previous final colours
(``ctx.previous_colour``) and, lazily and shared by all techniques of the frame, the baseline
result (``ctx.baseline()``: program order, full rate, used for the oracle's final depths and
for DSR's full-rate reference).

Everything a technique carries from frame to frame lives on the technique object and is
cleared by ``reset()``; the pipeline calls ``reset()`` before the first frame of a run.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np

__all__ = ["RenderRequest", "Technique"]


@dataclass
class RenderRequest:
    """Options for :func:`pipeline_model.raster.render_frame` (None/False = baseline).

    Attributes
    ----------
    order : tuple or TileLists or None
        Per-tile triangle order override, ``(offsets, tri)`` CSR like the tile lists, or a
        :class:`~pipeline_model.binning.TileLists`.
    skip : numpy.ndarray or None
        Bool per tile: not rendered, keeps the previous frame's colours (RE).
    rate : numpy.ndarray or None
        Int8 per tile: 0 = 1, 1 = 1/4, 2 = 1/16, 3 = 1/64, 4 = 1/256 sampling (DSR).
    depth_prefill : numpy.ndarray or None
        Float32 ``(H, W)`` initial depth buffer (oracle).
    hsr_pass : bool
        A per-tile depth-only pass before shading (DR).
    record_occlusion : bool
        Record early-depth occluder/occluded object pairs (VRO).
    record_prim_visibility : bool
        Record visibility per (tile, triangle) (EVR).
    extra : dict or None
        Further keyword arguments passed to the raster stage as they are.
    """

    order: Any = None
    skip: np.ndarray | None = None
    rate: np.ndarray | None = None
    depth_prefill: np.ndarray | None = None
    hsr_pass: bool = False
    record_occlusion: bool = False
    record_prim_visibility: bool = False
    extra: dict | None = None

    def is_default(self) -> bool:
        """Whether the request renders exactly what the baseline renders.

        Returns
        -------
        bool
            True when nothing is set.
        """
        return (self.order is None and self.skip is None and self.rate is None
                and self.depth_prefill is None and not self.hsr_pass and not self.record_occlusion
                and not self.record_prim_visibility and not self.extra)

    def raster_kwargs(self) -> dict:
        """Keyword arguments for ``render_frame``.

        Returns
        -------
        dict
            The options that are set, and ``extra``'s.
        """
        kw: dict[str, Any] = {}
        for f in fields(self):
            if f.name == "extra":
                continue
            v = getattr(self, f.name)
            if v is None or v is False:
                continue
            kw[f.name] = v
        if self.extra:
            kw.update(self.extra)
        return kw


class Technique:
    """Base class: program order, full rate, no extra state (the baseline's behaviour).

    Subclasses override :meth:`begin_frame` / :meth:`end_frame` and keep their cross-frame
    state in attributes that :meth:`reset` clears.

    Parameters
    ----------
    **options
        A subclass's options; the base class takes none.

    Raises
    ------
    TypeError
        An option the technique does not know.
    """

    name: str = "technique"
    #: Whether the technique's frames must equal the baseline's bit for bit (DSR: False).
    exact: bool = True

    def __init__(self, **options: Any):
        if options:
            raise TypeError(f"{type(self).__name__}: unknown options {sorted(options)}")
        self.reset()

    def reset(self) -> None:
        """Forget everything learnt from earlier frames."""

    def begin_frame(self, ctx) -> RenderRequest:
        """What to change in this frame.

        Parameters
        ----------
        ctx : FrameContext
            The frame (module docstring).

        Returns
        -------
        RenderRequest
            The default: the baseline's render.
        """
        return RenderRequest()

    def run(self, ctx):
        """Render the frame.

        The default is one raster pass with :meth:`begin_frame`'s request; a technique that
        needs several passes (or a pass with its own post-processing) overrides this and calls
        ``ctx.render`` itself.

        Parameters
        ----------
        ctx : FrameContext
            The frame (module docstring).

        Returns
        -------
        request : RenderRequest
            What was asked of the raster stage.
        result : RasterResult
            What it rendered.
        """
        request = self.begin_frame(ctx)
        return request, ctx.render(request)

    def end_frame(self, ctx, result) -> dict:
        """Learn from this frame's result for the next frame.

        Parameters
        ----------
        ctx : FrameContext
            The frame (module docstring).
        result : RasterResult
            What :meth:`run` rendered.

        Returns
        -------
        dict
            Extra counters for this frame's row (the default: none).
        """
        return {}

    def summary(self) -> dict:
        """Extra figures for the run's totals (e.g. ``mssim_min``), merged into the totals.

        Returns
        -------
        dict
            Figure name to value (the default: none).
        """
        return {}

    #: How extra per-frame counters of :meth:`end_frame` combine into the run's totals:
    #: ``{"counter": "sum" | "mean" | "min" | "max" | "last"}`` (default "sum").
    aggregate: dict = {}

    def __repr__(self) -> str:
        return f"<technique {self.name}>"
