"""The OpenGL cross-check of the pipeline model's raster stage (``simulate --check-gl``).

The pipeline model and the GPU probe do not know each other: :mod:`gpu_probe.gl_reference`
renders window-space triangles through the local OpenGL and counts fragments, and
:mod:`pipeline_model.raster` renders the same frames in software.  This module, in the
application layer, compares the two pixel by pixel and explains every differing pixel
(:func:`check_frame_against_gl`), and wraps that as a per-frame check a simulation run calls
(:class:`GLFrameCheck`, a :class:`pipeline_model.pipeline.FrameCheck`).

The one place the model may legitimately differ from llvmpipe is depth *near-ties* between
fragments of different triangles whose float32 depths are within a few ulps; the model
reproduces llvmpipe's float32 plane evaluation, so none remain in our tests, but the check
re-evaluates competing depths and labels such pixels if they appear.  Vertices beyond GL's
16384-pixel guard band are clipped by GL in x/y; pixels that differ for that reason are
labelled ``xy-clip``.
"""

from __future__ import annotations

import numpy as np

from gpu_probe.gl_reference import gl_available, render_counts, renderer
from meshopt_batch.support.errors import MeshoptBatchError
from pipeline_model.binning import bin_triangles
from pipeline_model.raster import covers, depth_at, render_frame, setup_triangles

__all__ = ["GLFrameCheck", "check_frame_against_gl", "check_frames_against_gl"]


class GLFrameCheck:
    """Per-frame check of the baseline raster against the local OpenGL (record ``gl_check``).

    Raises
    ------
    MeshoptBatchError
        No OpenGL context can be created here (one line with the install hint).
    """

    name = "gl_check"

    def __init__(self):
        if not gl_available():
            raise MeshoptBatchError("--check-gl: no OpenGL context can be created here "
                                    "(install Mesa EGL/llvmpipe, see scripts/install-system-deps.sh)")
        self._renderer = renderer()

    def describe(self) -> dict:
        return {"renderer": self._renderer}

    def __call__(self, index: int, frame, tiles, baseline) -> dict:
        record = check_frame_against_gl(frame, model_result=baseline, tiles=tiles)
        record["frame"] = index
        return record


def _ulps(a: np.float32, b: np.float32) -> int:
    ia = int(np.float32(a).view(np.int32))
    ib = int(np.float32(b).view(np.int32))
    return abs(ia - ib)


def _explain_pixel(frame, tiles, setup, px, py, model_res, gl, kind, depth_func):
    """A one-line reason for a differing pixel, from re-evaluating its fragments."""
    ti = (py // tiles.tile) * tiles.tiles_x + (px // tiles.tile)
    cands = [int(t) for t in tiles.tile_triangles(ti) if covers(frame, int(t), px, py, setup)]
    where = f"pixel ({px},{py})"
    if kind == "coverage":
        head = (f"{where}: coverage model {int(model_res.covered[py, px])} vs GL "
                f"{int(gl.covered[py, px])}")
        if not gl.viewport_exact:
            return "xy-clip", head + " -- vertices beyond GL's 16384-px guard band were clipped by GL"
        return "unexplained", head + f" -- covering triangles {cands[:8]}"
    # shaded difference: look for near-ties between depth-tested fragments of different triangles
    zs = [(t, depth_at(frame, t, px, py, setup)) for t in cands
          if frame.depth_test[frame.draw[t]]]
    ties = []
    for i in range(len(zs)):
        for j in range(i + 1, len(zs)):
            u = _ulps(zs[i][1], zs[j][1])
            if u <= 8:
                ties.append((zs[i][0], zs[j][0], u))
    head = (f"{where}: shaded model {int(model_res.shaded[py, px])} vs GL "
            f"{int(gl.shaded[py, px])}")
    if ties:
        a, b, u = ties[0]
        return "depth-near-tie", (head + f" -- depth near-tie between triangles {a} and {b} "
                                  f"({u} ulp apart): near-coplanar surfaces, float32 depth precision")
    if int(model_res.covered[py, px]) != int(gl.covered[py, px]):
        return "coverage", head + " -- follows from a coverage difference at this pixel"
    return "unexplained", head + f" -- fragments (triangle, depth): {[(t, float(z)) for t, z in zs[:6]]}"


def check_frame_against_gl(frame, model_result=None, tiles=None, *, frame_index=None,
                           depth_func: str = "less", max_explanations: int = 20) -> dict:
    """Compare the model's baseline raster of ``frame`` with the GL reference, pixel by pixel.

    Parameters
    ----------
    frame : FrameGeometry
    model_result : RasterResult of ``render_frame(frame, tiles)`` at full rate in program order
        (the baseline). Computed when omitted.
    tiles : TileLists of the frame (computed when omitted; used for the explanations).
    frame_index : stored in the ``"frame"`` field of the answer.

    Returns
    -------
    dict with ``frame, coverage_diff_pixels, shaded_diff_pixels, shaded_total_model,
    shaded_total_gl, covered_total_model, covered_total_gl, depth_diff_pixels, viewport_exact,
    explanations`` (one line per differing pixel, at most ``max_explanations``, then a summary
    line per reason) and ``reasons`` (count per reason).
    """
    if tiles is None:
        tiles = bin_triangles(frame)
    if model_result is None:
        model_result = render_frame(frame, tiles, depth_func=depth_func)
    gl = render_counts(frame, depth_func=depth_func, per_triangle=False)
    cov_diff = model_result.covered.astype(np.int64) != gl.covered.astype(np.int64)
    sh_diff = model_result.shaded.astype(np.int64) != gl.shaded.astype(np.int64)
    geo = (model_result.covered > 0) | (gl.covered > 0)
    depth_diff = geo & (model_result.depth.view(np.uint32) != gl.depth.view(np.uint32))
    out = {
        "frame": frame_index,
        "coverage_diff_pixels": int(cov_diff.sum()),
        "shaded_diff_pixels": int(sh_diff.sum()),
        "shaded_total_model": int(model_result.shaded.sum()),
        "shaded_total_gl": int(gl.shaded.sum()),
        "covered_total_model": int(model_result.covered.sum()),
        "covered_total_gl": int(gl.covered.sum()),
        "depth_diff_pixels": int(depth_diff.sum()),
        "viewport_exact": bool(gl.viewport_exact),
        "explanations": [],
        "reasons": {},
    }
    if cov_diff.any() or sh_diff.any():
        setup = setup_triangles(frame)
        reasons: dict[str, int] = {}
        lines = []
        for kind, mask in (("coverage", cov_diff), ("shaded", sh_diff & ~cov_diff)):
            for py, px in zip(*np.nonzero(mask), strict=True):
                r, line = _explain_pixel(frame, tiles, setup, int(px), int(py), model_result, gl,
                                         kind, depth_func)
                reasons[r] = reasons.get(r, 0) + 1
                if len(lines) < max_explanations:
                    lines.append(line)
        lines += [f"{n} pixel(s): {r}" for r, n in sorted(reasons.items())]
        out["explanations"] = lines
        out["reasons"] = reasons
    if out["depth_diff_pixels"]:
        why = ("depth planes of triangles GL clipped in x/y (new vertices)" if not gl.viewport_exact
               else "unexplained depth-value differences (the counts may still agree)")
        out["explanations"].append(f"{out['depth_diff_pixels']} pixel(s) with a different final "
                                   f"depth: {why}")
    return out


def check_frames_against_gl(frames, **kw) -> list[dict]:
    """:func:`check_frame_against_gl` over an iterable of frames (``frame`` = index)."""
    return [check_frame_against_gl(f, frame_index=i, **kw) for i, f in enumerate(frames)]
