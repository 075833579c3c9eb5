"""The raster model against the local OpenGL (llvmpipe): per-pixel coverage, early-Z shaded
counts and depth values identical.

Marked ``gl``; skipped cleanly when no headless OpenGL 4.3 context can be created.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gpu_probe import context as gctx
from pipeline_model.binning import bin_triangles
from pipeline_model.frame import FrameGeometry, snap_to_subpixel
from pipeline_model.raster import render_frame

HAVE_GL = gctx.gl_available()
pytestmark = [pytest.mark.gl,
              pytest.mark.skipif(not HAVE_GL, reason="no headless OpenGL 4.3 context (EGL)")]

if HAVE_GL:
    from gpu_probe.gl_reference import GLImageRenderer, render_counts, renderer
    from meshopt_batch_app.glcheck import check_frame_against_gl

IS_LLVMPIPE = HAVE_GL and gctx.gl_info()["renderer"].startswith("llvmpipe")
llvmpipe_only = pytest.mark.skipif(not IS_LLVMPIPE, reason="bit-exact agreement is with llvmpipe")


def soup(seed, n, size, w=1196, h=768, draws=24, spread=60):
    """Random triangles with depth, in draws with mixed WOZ / NWOZ / depth-test-off state."""
    rng = np.random.default_rng(seed)
    c = rng.uniform([-spread, -spread], [w + spread, h + spread], size=(n, 1, 2))
    xy = c + rng.normal(size=(n, 3, 2)) * rng.uniform(1, size, size=(n, 1, 1))
    z = rng.uniform(0, 1, size=(n, 3)).astype(np.float32)
    draw = np.sort(rng.integers(0, draws, n))
    return FrameGeometry.from_screen_triangles(
        xy, z, draw=draw, width=w, height=h,
        depth_write=rng.random(draws) > 0.2, depth_test=rng.random(draws) > 0.1,
        blend=rng.random(draws) > 0.8, colour_kind=rng.integers(0, 5, draws))


def assert_identical(chk):
    assert chk["coverage_diff_pixels"] == 0, chk["explanations"]
    assert chk["shaded_diff_pixels"] == 0, chk["explanations"]
    assert chk["depth_diff_pixels"] == 0
    assert chk["shaded_total_model"] == chk["shaded_total_gl"]
    assert chk["covered_total_model"] == chk["covered_total_gl"]
    assert chk["explanations"] == [] and chk["viewport_exact"]


def test_fill_rule_and_single_triangle_like_gl():
    sq = [[[0.5, 0.5], [4.5, 0.5], [4.5, 4.5]], [[0.5, 0.5], [4.5, 4.5], [0.5, 4.5]],
          [[6.5, 0.5], [14.5, 0.5], [6.5, 8.5]]]
    f = FrameGeometry.from_screen_triangles(sq, width=16, height=12)
    gl = render_counts(f)
    m = render_frame(f, bin_triangles(f, 4))
    assert np.array_equal(gl.covered.astype(np.int32), m.covered)
    assert gl.covered[1:5, 0:4].all() and gl.covered.sum() == 16 + 28
    assert list(gl.covered_per_tri) == [6, 10, 28]


@llvmpipe_only
@pytest.mark.parametrize("seed,n,size", [(0, 2000, 60), (1, 20000, 12), (2, 150, 700),
                                         (3, 60000, 4)])
def test_random_soups_match_gl_exactly(seed, n, size):
    f = soup(seed, n, size)
    tiles = bin_triangles(f)
    model = render_frame(f, tiles)
    chk = check_frame_against_gl(f, model, tiles, frame_index=seed)
    assert chk["frame"] == seed
    assert_identical(chk)
    assert chk["shaded_total_model"] > 100_000


@llvmpipe_only
def test_llvmpipe_without_rasterizer_threads_counts_the_same():
    """The report's one-core workers run llvmpipe with ``LP_NUM_THREADS=0`` (drawing in the
    calling thread): its counts and depths still equal the model's (a process reads the setting
    once, so the check runs in a fresh one)."""
    code = f"""
import json, sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
from test_gl_reference import soup
from meshopt_batch_app.glcheck import check_frame_against_gl
from pipeline_model.binning import bin_triangles
from pipeline_model.raster import render_frame
f = soup(1, 20000, 12)
tiles = bin_triangles(f)
print(json.dumps(check_frame_against_gl(f, render_frame(f, tiles), tiles, frame_index=0), default=str))
"""
    proc = subprocess.run([sys.executable, "-c", code], env={**os.environ, "LP_NUM_THREADS": "0"},
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    chk = json.loads(proc.stdout.strip().splitlines()[-1])
    assert_identical(chk)
    assert chk["shaded_total_model"] > 100_000


@llvmpipe_only
def test_near_coplanar_perspective_surfaces_match_gl():
    """Interpenetrating, nearly coplanar planes under a perspective projection: the depth
    near-ties that an ideal float64 interpolation would resolve differently."""
    rng = np.random.default_rng(7)
    w, h = 400, 300
    tris, zs = [], []
    for _ in range(40):
        # plane z = a + b x + c y with tiny slopes, in window depth near 0.99
        a = 0.99 + rng.uniform(-1e-4, 1e-4)
        b, c = rng.uniform(-3e-7, 3e-7, 2)
        x0, y0 = rng.uniform(-50, w, 2)
        sx, sy = rng.uniform(50, 300, 2)
        corners = snap_to_subpixel(np.array([[x0, y0], [x0 + sx, y0], [x0 + sx, y0 + sy], [x0, y0 + sy]]))
        zc = (a + b * corners[:, 0] + c * corners[:, 1]).astype(np.float32)
        for corner in ((0, 1, 2), (0, 2, 3)):
            tris.append(corners[list(corner)])
            zs.append(zc[list(corner)])
    f = FrameGeometry.from_screen_triangles(np.asarray(tris), np.asarray(zs), width=w, height=h,
                                            draw=np.repeat(np.arange(40), 2))
    chk = check_frame_against_gl(f)
    assert_identical(chk)


@llvmpipe_only
def test_shared_edge_grid_and_guard_band_match_gl():
    rng = np.random.default_rng(3)
    w, h = 300, 200
    cell = 23.0
    nx, ny = 16, 12
    g = np.stack(np.meshgrid(np.arange(nx) * cell - 30, np.arange(ny) * cell - 30), -1)
    g[1:-1, 1:-1] += rng.uniform(-0.2 * cell, 0.2 * cell, size=(ny - 2, nx - 2, 2))
    g = snap_to_subpixel(g)
    tris = []
    for j in range(ny - 1):
        for i in range(nx - 1):
            a, b, c, d = g[j, i], g[j, i + 1], g[j + 1, i + 1], g[j + 1, i]
            tris += [[a, b, c], [a, c, d]]
    # plus huge triangles reaching thousands of pixels off-screen (guard band, no x/y clip)
    tris += [[[-5000.25, -3000.5], [6000.75, 100.125], [150.5, 7000.0]],
             [[-7000.0, 150.0], [40.0, -7000.0], [7300.0, 7100.0]]]
    f = FrameGeometry.from_screen_triangles(np.asarray(tris), z=rng.uniform(0, 1, (len(tris), 3)),
                                            width=w, height=h)
    chk = check_frame_against_gl(f)
    assert_identical(chk)


def test_explanations_name_depth_ties():
    # the same quad twice at the same depth: LESS shades it once, the model run with LEQUAL
    # twice; the check must explain every differing pixel as a depth tie.
    q = [[[2, 2], [20, 2], [20, 14]], [[2, 2], [20, 14], [2, 14]]]
    f = FrameGeometry.from_screen_triangles(q + q, z=[0.5] * 4, draw=[0, 0, 1, 1], width=24, height=16)
    tiles = bin_triangles(f)
    wrong = render_frame(f, tiles, depth_func="lequal")
    chk = check_frame_against_gl(f, wrong, tiles)
    assert chk["shaded_diff_pixels"] == 18 * 12 and chk["coverage_diff_pixels"] == 0
    assert chk["reasons"] == {"depth-near-tie": 18 * 12}
    assert "near-tie" in chk["explanations"][0] and chk["explanations"][-1].startswith("216 pixel(s)")
    assert renderer()


def test_gl_image_renderer_runs():
    f = soup(11, 500, 40, w=200, h=120)
    img = GLImageRenderer().render(f)
    assert img.shape == (120, 200, 3) and img.dtype == np.uint8 and img.any()
    counts = render_counts(f)
    assert counts.shaded_per_tri.sum() == counts.shaded.sum()
    assert counts.covered_per_tri.sum() == counts.covered.sum()
    per_draw = counts.shaded_per_draw()
    assert per_draw.sum() == counts.shaded.sum() and len(per_draw) == f.draw.max() + 1
    # per pixel alone (additive blending instead of atomics): the same counts and depth
    for options in ({}, {"depth_func": "greater", "clear_depth": 0.0}):
        atomics = render_counts(f, **options) if options else counts
        pixels = render_counts(f, per_triangle=False, **options)
        for name in ("shaded", "covered", "depth"):
            assert np.array_equal(getattr(pixels, name), getattr(atomics, name)), name
        assert pixels.shaded.sum() > 0 and pixels.shaded_per_tri is None and pixels.covered_per_tri is None
    with pytest.raises(ValueError, match="per_triangle"):
        pixels.shaded_per_draw()


def _shipped_scenes():
    try:
        from pipeline_model.scene import shipped_scenes
    except ImportError:  # pragma: no cover - the scene module is part of the package
        return []
    return shipped_scenes()


@llvmpipe_only
@pytest.mark.parametrize("name", _shipped_scenes())
def test_first_frames_of_shipped_scenes_match_gl(name):
    """Issue 9: the first frames of every shipped scene, model baseline vs GL, pixel by pixel."""
    from pipeline_model.geometry import GeometryStage
    from pipeline_model.scene import load_scene

    sc = load_scene(name)
    sc.load_meshes()
    geom = GeometryStage()
    for fi in (0, 1):
        frame = geom.process(sc.frame(fi, 1196, 768), tile=16)
        tiles = bin_triangles(frame)
        chk = check_frame_against_gl(frame, render_frame(frame, tiles), tiles, frame_index=fi)
        assert_identical(chk)
        assert chk["shaded_total_model"] > 0
