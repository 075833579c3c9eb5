"""Raster and tiling stages: hand-computed counts, fill rule, no cracks, options, determinism.

GL cross-checks are in tests/test_gl_reference.py.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from pipeline_model.binning import ParamBufferSizes, bin_triangles
from pipeline_model.frame import FrameGeometry, snap_to_subpixel
from pipeline_model.raster import COUNTER_NAMES, covers, depth_at, render_frame


def quad(x0, y0, x1, y1):
    """Two triangles covering the rectangle [x0, x1] x [y0, y1] (shared diagonal)."""
    return [[[x0, y0], [x1, y0], [x1, y1]], [[x0, y0], [x1, y1], [x0, y1]]]


def render(frame, tile=16, **kw):
    tiles = bin_triangles(frame, tile)
    return render_frame(frame, tiles, **kw), tiles


# ------------------------------------------------------------------------- frame record
def test_frame_validation_and_helpers():
    f = FrameGeometry.from_screen_triangles(quad(1, 1, 5, 5) + quad(2, 2, 3, 3),
                                            z=[0.5, 0.5, 0.2, 0.2], draw=[0, 0, 1, 1],
                                            width=32, height=16, depth_write=[True, False])
    assert f.n_triangles == 4 and f.n_draws == 2 and f.n_tiles == 2
    st1 = f.draw_state(1)
    assert st1.depth_write is False and st1.first_triangle == 2 and st1.triangle_count == 2
    assert list(f.prim) == [0, 1, 0, 1]
    with pytest.raises(ValueError, match="1/256"):
        FrameGeometry.from_screen_triangles([[[0, 0], [1.001, 0], [0, 1]]], snap=False)
    with pytest.raises(ValueError, match="program order"):
        FrameGeometry.from_screen_triangles(quad(0, 0, 4, 4), draw=[1, 0])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        FrameGeometry.from_screen_triangles(quad(0, 0, 4, 4), z=[1.5, 0.5])
    e = FrameGeometry.empty(64, 32)
    r, _ = render(e)
    assert r.totals()["fragments_rasterized"] == 0 and (r.depth == 1).all()
    assert np.array_equal(snap_to_subpixel([0.3, -0.3, 1 / 512]), [77 / 256, -77 / 256, 1 / 256])


# --------------------------------------------------------------------- hand-computed counts
def test_single_triangle_hand_count():
    # vertices on pixel centres: legs along y = 0.5 (a top edge: excluded) and x = 0.5 (a left
    # edge: included), hypotenuse x + y = 9 (a right edge: excluded).
    # Pixel (i, j) has its centre at (i + 0.5, j + 0.5): covered iff i >= 0, j >= 1, i + j <= 7.
    f = FrameGeometry.from_screen_triangles([[[0.5, 0.5], [8.5, 0.5], [0.5, 8.5]]],
                                            width=16, height=16)
    r, _ = render(f)
    expect = np.zeros((16, 16), bool)
    for j in range(1, 8):
        expect[j, 0:8 - j] = True
    assert expect.sum() == 28
    assert np.array_equal(r.covered > 0, expect)
    t = r.totals()
    assert t["fragments_rasterized"] == 28 and t["fragments_shaded"] == 28
    assert t["early_z_killed"] == 0 and t["overshading"] == 1.0


def test_fill_rule_left_and_bottom_edges_included():
    # A square with edges through pixel centres: x = 0.5 .. 4.5, y = 0.5 .. 4.5 (y down).
    # llvmpipe (GL y up, top-left rule) keeps the left column and the *bottom* row.
    f = FrameGeometry.from_screen_triangles(quad(0.5, 0.5, 4.5, 4.5), width=8, height=8)
    r, _ = render(f, tile=4)
    expect = np.zeros((8, 8), np.int32)
    expect[1:5, 0:4] = 1
    assert np.array_equal(r.covered, expect)
    # winding does not matter
    g = FrameGeometry.from_screen_triangles(np.asarray(quad(0.5, 0.5, 4.5, 4.5))[:, ::-1],
                                            width=8, height=8)
    assert np.array_equal(render(g, tile=4)[0].covered, expect)


@pytest.mark.parametrize("far_first", [True, False])
def test_two_overlapping_quads_hand_counts(far_first):
    # A: [2,10]^2 at z 0.75 (64 px); B: [6,14]^2 at z 0.25 (64 px); overlap [6,10]^2 (16 px).
    a = quad(2, 2, 10, 10)
    b = quad(6, 6, 14, 14)
    tris, z = (a + b, [0.75] * 2 + [0.25] * 2) if far_first else (b + a, [0.25] * 2 + [0.75] * 2)
    f = FrameGeometry.from_screen_triangles(tris, z=z, draw=[0, 0, 1, 1], width=16, height=16)
    r, _ = render(f, tile=8)
    t = r.totals()
    assert t["fragments_rasterized"] == 128
    assert t["pixels_covered"] == 112
    if far_first:
        assert (t["fragments_shaded"], t["early_z_killed"]) == (128, 0)
        assert r.shaded[6:10, 6:10].tolist() == [[2] * 4] * 4
    else:
        assert (t["fragments_shaded"], t["early_z_killed"]) == (112, 16)
        assert r.shaded.max() == 1
    assert t["overshading"] == pytest.approx(t["fragments_shaded"] / 112)
    assert np.all(r.depth[6:10, 6:10] == np.float32(0.25))
    assert np.all(r.depth[2:6, 2:6] == np.float32(0.75))
    # per-tile counters add up to the frame totals
    assert r.counter("fragments_shaded").sum() == t["fragments_shaded"]
    assert set(COUNTER_NAMES) <= set(t)


def test_nwoz_tests_without_writing_and_depth_test_off():
    back = quad(0, 0, 8, 8)
    front_nwoz = quad(0, 0, 8, 8)
    late = quad(0, 0, 8, 8)
    f = FrameGeometry.from_screen_triangles(back + front_nwoz + late,
                                            z=[0.5] * 2 + [0.25] * 2 + [0.4] * 2,
                                            draw=[0, 0, 1, 1, 2, 2], width=8, height=8,
                                            depth_write=[True, False, True])
    r, _ = render(f, tile=8)
    # the NWOZ layer passes (0.25 < 0.5) but leaves 0.5 in the buffer, so the late 0.4 passes
    assert r.totals()["fragments_shaded"] == 192
    assert np.all(r.depth == np.float32(0.4))
    g = f.with_draw_state(depth_test=[True, False, True])
    r2, _ = render(g, tile=8)
    assert r2.totals()["fragments_shaded"] == 192 and np.all(r2.depth == np.float32(0.4))
    h = f.with_draw_state(depth_write=[True, True, True])
    r3, _ = render(h, tile=8)
    assert r3.totals()["fragments_shaded"] == 128 and r3.totals()["early_z_killed"] == 64


def test_depth_funcs():
    tris = quad(0, 0, 4, 4) * 2
    f = FrameGeometry.from_screen_triangles(tris, z=[0.5] * 4, draw=[0, 0, 1, 1], width=4, height=4)
    assert render(f, tile=4)[0].totals()["fragments_shaded"] == 16
    assert render(f, tile=4, depth_func="lequal")[0].totals()["fragments_shaded"] == 32
    assert render(f, tile=4, depth_func="never")[0].totals()["fragments_shaded"] == 0
    with pytest.raises(ValueError):
        render(f, depth_func="bogus")


# ------------------------------------------------------------------- no cracks / double hits
def _grid_frame(w, h, cell, seed):
    rng = np.random.default_rng(seed)
    nx = int(w // cell) + 3
    ny = int(h // cell) + 3
    gx, gy = np.meshgrid(np.arange(nx) * cell - cell, np.arange(ny) * cell - cell)
    pts = np.stack([gx, gy], -1).astype(np.float64)
    pts[1:-1, 1:-1] += rng.uniform(-0.2 * cell, 0.2 * cell, size=(ny - 2, nx - 2, 2))
    pts = snap_to_subpixel(pts)
    tris = []
    for j in range(ny - 1):
        for i in range(nx - 1):
            a, b, c, d = pts[j, i], pts[j, i + 1], pts[j + 1, i + 1], pts[j + 1, i]
            if rng.random() < 0.5:
                tris += [[a, b, c], [a, c, d]]
            else:
                tris += [[a, b, d], [b, c, d]]
    tris = np.asarray(tris)
    # a valid planar mesh: every triangle has the same winding (no folded quads)
    e1 = tris[:, 1] - tris[:, 0]
    e2 = tris[:, 2] - tris[:, 0]
    assert np.all(e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0] > 0)
    rng.shuffle(tris)
    return FrameGeometry.from_screen_triangles(tris, width=w, height=h)


@pytest.mark.parametrize("cell,seed", [(7, 0), (13.3, 1), (1.7, 2), (40, 3)])
def test_grid_of_shared_edges_covers_every_pixel_exactly_once(cell, seed):
    f = _grid_frame(203, 117, cell, seed)
    r, tiles = render(f)
    assert r.covered.min() == 1 and r.covered.max() == 1
    # with equal depths and LESS only the first fragment of a pixel is shaded: exactly once too
    assert r.shaded.min() == 1 and r.shaded.max() == 1


def _hull(points):
    """Exact integer convex hull (monotone chain, collinear points dropped), CCW in y-down."""
    pts = sorted(set(map(tuple, points)))
    if len(pts) < 3:
        return pts

    def cross(o, a, b):
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    lower, upper = [], []
    for p in pts:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], p) <= 0:
            lower.pop()
        lower.append(p)
    for p in reversed(pts):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], p) <= 0:
            upper.pop()
        upper.append(p)
    return lower[:-1] + upper[:-1]


def _strictly_inside(poly, q):
    n = len(poly)
    for i in range(n):
        a, b = poly[i], poly[(i + 1) % n]
        if (b[0] - a[0]) * (q[1] - a[1]) - (b[1] - a[1]) * (q[0] - a[0]) <= 0:
            return False
    return True


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(-2000, 40 * 256), st.integers(-2000, 30 * 256)),
                min_size=3, max_size=14),
       st.booleans())
def test_fans_share_edges_without_cracks(points, reverse):
    """Two triangulations of one convex polygon (fan from a corner, fan from an interior
    point) cover the same pixels, each pixel at most once."""
    hull = _hull(points)
    assume(len(hull) >= 3)
    cx = sum(p[0] for p in hull) // len(hull)
    cy = sum(p[1] for p in hull) // len(hull)
    assume(_strictly_inside(hull, (cx, cy)))
    if reverse:
        hull = hull[::-1]
    h = np.asarray(hull, np.float64) / 256.0
    c = np.array([cx, cy], np.float64) / 256.0
    fan_corner = [[h[0], h[i], h[i + 1]] for i in range(1, len(h) - 1)]
    fan_centre = [[c, h[i], h[(i + 1) % len(h)]] for i in range(len(h))]
    masks = []
    for tris in (fan_corner, fan_centre):
        f = FrameGeometry.from_screen_triangles(tris, width=40, height=30, snap=False)
        r, _ = render(f, tile=8)
        assert r.covered.max() <= 1
        masks.append(r.covered)
    assert np.array_equal(masks[0], masks[1])


# ---------------------------------------------------------------------------------- binning
def _clip_area(tri, box):
    """Area of triangle & box by Sutherland-Hodgman (float64, exact enough on dyadic inputs)."""
    poly = [tuple(p) for p in tri]
    x0, y0, x1, y1 = box
    for axis, val, keep_ge in ((0, x0, True), (0, x1, False), (1, y0, True), (1, y1, False)):
        out = []
        for i in range(len(poly)):
            p, q = poly[i], poly[(i + 1) % len(poly)]
            pin = p[axis] >= val if keep_ge else p[axis] <= val
            qin = q[axis] >= val if keep_ge else q[axis] <= val
            if pin:
                out.append(p)
            if pin != qin:
                t = (val - p[axis]) / (q[axis] - p[axis])
                out.append((p[0] + t * (q[0] - p[0]), p[1] + t * (q[1] - p[1])))
        poly = out
        if not poly:
            return 0.0
    a = 0.0
    for i in range(len(poly)):
        a += poly[i][0] * poly[(i + 1) % len(poly)][1] - poly[(i + 1) % len(poly)][0] * poly[i][1]
    return abs(a) / 2


def test_binning_is_exact_and_in_program_order():
    rng = np.random.default_rng(5)
    n = 300
    c = rng.uniform(-10, 110, size=(n, 1, 2))
    xy = c + rng.normal(size=(n, 3, 2)) * rng.uniform(0.5, 30, size=(n, 1, 1))
    f = FrameGeometry.from_screen_triangles(xy, width=100, height=70, tile=16)
    tl = bin_triangles(f)
    assert tl.n_tiles == 7 * 5 and tl.offsets[-1] == tl.pairs
    for ti in range(tl.n_tiles):
        got = tl.tile_triangles(ti)
        assert np.all(np.diff(got) > 0)  # program order, no duplicates
        x0, y0, x1, y1 = tl.tile_rect(ti)
        want = [t for t in range(n) if _clip_area(f.xy[t], (x0, y0, x1, y1)) > 1e-9]
        assert list(got) == want, ti
    # every sampled pixel is in a tile its triangle was binned into
    for t in range(0, n, 7):
        g = FrameGeometry.from_screen_triangles(f.xy[t:t + 1], width=100, height=70, snap=False)
        r = render_frame(g, bin_triangles(g))
        ys, xs = np.nonzero(r.covered)
        tiles_hit = set((ys // 16) * 7 + xs // 16)
        binned = {ti for ti in range(tl.n_tiles) if t in tl.tile_triangles(ti)}
        assert tiles_hit <= binned


def test_binning_on_threads_with_chunks_that_outgrow_their_buffer():
    """Chunks of triangles are binned on the threads into one buffer that grows when a chunk's
    pairs do not fit (a few screen-sized triangles per chunk): the lists equal one serial chunk's
    and the exact per-tile reference's."""
    rng = np.random.default_rng(8)
    n = 12_000
    c = rng.uniform(-10, 330, size=(n, 1, 2))
    xy = c + rng.normal(size=(n, 3, 2)) * rng.uniform(0.5, 12, size=(n, 1, 1))
    xy[::200] = [[-20, -20], [900, -20], [-20, 900]]
    f = FrameGeometry.from_screen_triangles(xy, width=320, height=224, tile=16)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        threaded = bin_triangles(f, parallel=True)
    finally:
        numba.set_num_threads(before)
    serial = bin_triangles(f, parallel=False)
    assert np.array_equal(threaded.offsets, serial.offsets) and np.array_equal(threaded.tri, serial.tri)
    assert threaded.triangles_binned == serial.triangles_binned
    assert threaded.pairs > 2 * (2 * (n // 2) + 4096)    # more than the first buffer holds
    full = threaded.n_tiles                       # every tile holds the 60 big triangles
    assert all(set(range(0, n, 200)) <= set(threaded.tile_triangles(ti)) for ti in range(full))
    for ti in range(0, threaded.n_tiles, 37):
        x0, y0, x1, y1 = threaded.tile_rect(ti)
        want = [t for t in range(n) if _clip_area(f.xy[t], (x0, y0, x1, y1)) > 1e-9]
        assert list(threaded.tile_triangles(ti)) == want, ti


def test_parameter_buffer_bytes():
    f = FrameGeometry.from_screen_triangles(quad(0, 0, 40, 8) + [[[100, 100], [101, 100], [100, 101]]],
                                            width=64, height=16, vertex_invocations=[5])
    sz = ParamBufferSizes(list_entry=4, primitive=16, vertex=28)
    tl = bin_triangles(f, 16, sz)
    assert tl.triangles_binned == 2 and tl.pairs == 6  # both triangles in tiles 0..2
    assert tl.bytes_written == 6 * 4 + 2 * 16 + 5 * 28
    assert tl.bytes_read == 6 * (4 + 16 + 3 * 28)


# ------------------------------------------------------------------------ options / techniques
def _scene(seed=0, w=160, h=96, n=400):
    rng = np.random.default_rng(seed)
    c = rng.uniform([-10, -10], [w + 10, h + 10], size=(n, 1, 2))
    xy = c + rng.normal(size=(n, 3, 2)) * rng.uniform(2, 25, size=(n, 1, 1))
    z = rng.uniform(0, 1, size=(n, 3)).astype(np.float32)
    nd = 14
    draw = np.sort(rng.integers(0, nd, n))
    return FrameGeometry.from_screen_triangles(
        xy, z, draw=draw, width=w, height=h, colour_kind=np.arange(nd) % 5,
        blend=np.arange(nd) >= 11, depth_write=np.arange(nd) < 10, alpha=0.6,
        object_id=np.arange(nd) // 2, inv_w=rng.uniform(0.5, 2, size=(n, 3)),
        uv=rng.uniform(0, 4, size=(n, 3, 2)), shade=rng.uniform(0, 1, size=(n, 3)))


def test_dr_oracle_baseline_same_image():
    f = _scene()
    base, tiles = render(f)
    dr = render_frame(f, tiles, hsr_pass=True)
    orc = render_frame(f, tiles, depth_prefill=base.depth)
    for r in (dr, orc):
        assert np.array_equal(r.colour, base.colour)
        assert np.array_equal(r.depth, base.depth)
        assert np.array_equal(r.covered, base.covered)
    tb, td, to = base.totals(), dr.totals(), orc.totals()
    assert td["fragments_rasterized"] == tb["fragments_rasterized"]
    assert td["fragments_shaded"] == to["fragments_shaded"] < tb["fragments_shaded"]
    assert td["hsr_fragments"] > 0 and tb["hsr_fragments"] == 0
    # with DR/oracle every pixel's opaque colour is shaded once: shaded count per pixel is
    # 1 + (blended / NWOZ layers passing on top)
    assert dr.shaded.max() <= base.shaded.max()


def _layers(seed, w=203, h=117, n=90, blend_every=0):
    """Large overlapping quads, one draw each, in random depth order (heavy overdraw), every
    colour kind lit and unlit; every ``blend_every``-th draw blended, one draw NWOZ."""
    rng = np.random.default_rng(seed)
    lo = rng.uniform([-20, -20], [w - 10, h - 10], size=(n, 2))
    size = rng.uniform(30, 120, size=(n, 2))
    xy = np.concatenate([quad(x0, y0, x0 + sx, y0 + sy) for (x0, y0), (sx, sy) in zip(lo, size, strict=True)])
    z = np.repeat(rng.uniform(0.05, 0.95, size=(n, 3)), 2, axis=0).astype(np.float32)
    draws = np.arange(n)
    params = np.concatenate([rng.uniform(0, 1, size=(n, 6)), rng.uniform(1, 9, size=(n, 1)),
                             (draws % 2)[:, None]], axis=1)
    blend = (draws % blend_every == blend_every - 1) if blend_every else np.zeros(n, bool)
    return FrameGeometry.from_screen_triangles(
        xy, z, draw=np.repeat(draws, 2), width=w, height=h, colour_kind=draws % 5,
        colour_params=params, blend=blend, depth_write=draws != 7, alpha=0.55,
        inv_w=rng.uniform(0.3, 2, size=(2 * n, 3)), uv=rng.uniform(0, 3, size=(2 * n, 3, 2)),
        shade=rng.uniform(0, 1, size=(2 * n, 3)))


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("blend_every", [0, 4])
def test_owed_colours_equal_colours_shaded_at_once(seed, blend_every):
    """Under heavy overdraw replacing writes leave colours owed (paid at a blend or the flush):
    every output equals shading each fragment when it passes (``owe_colours=False``), for the
    baseline and the recording passes, serial and parallel; without blends between them the
    oracle and DR (which shade each kept opaque fragment at once) give the same image."""
    f = _layers(seed, blend_every=blend_every)
    base, tiles = render(f)
    assert base.shaded.sum() > 2 * np.count_nonzero(base.shaded)  # overdraw: colours are owed
    outputs = ("colour", "depth", "shaded", "covered", "tile_counters", "shader_cycles")
    for options in ({}, {"record_prim_visibility": True, "record_writer": True, "tie_break": "program"},
                    {"record_occlusion": True}):
        owed = render_frame(f, tiles, **options)
        for kw in ({"parallel": False}, {"owe_colours": False}, {"owe_colours": False, "parallel": False}):
            at_once = render_frame(f, tiles, **options, **kw)
            for name in outputs + ("writer_entry", "occlusion_pairs"):
                a, b = getattr(owed, name), getattr(at_once, name)
                assert (a is None and b is None) or np.array_equal(a, b), (options, kw, name)
    assert base.totals()["fragments_shaded"] == base.shaded.sum()
    if not blend_every:
        for r in (render_frame(f, tiles, depth_prefill=base.depth), render_frame(f, tiles, hsr_pass=True)):
            assert np.array_equal(r.colour, base.colour)
            assert r.totals()["fragments_shaded"] < base.totals()["fragments_shaded"]


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("depth_func", ["less", "lequal", "greater"])
def test_dr_full_rate_loops_equal_the_general_loop(seed, depth_func):
    """DR's passes at full rate run in their own loops; with the visibility record on they run
    in the general loop: every shared output is the same."""
    f = _scene(seed)
    tiles = bin_triangles(f)
    clear = {"clear_depth": 0.0} if depth_func == "greater" else {}
    own = render_frame(f, tiles, hsr_pass=True, depth_func=depth_func, **clear)
    general = render_frame(f, tiles, hsr_pass=True, depth_func=depth_func, record_prim_visibility=True,
                           **clear)
    for name in ("colour", "depth", "shaded", "covered", "tile_counters", "shader_cycles"):
        assert np.array_equal(getattr(own, name), getattr(general, name)), name
    assert own.counter("hsr_fragments").sum() > 0


def test_determinism_bit_exact_and_serial_equals_parallel():
    f = _scene(1)
    a, tiles = render(f, parallel=True)
    b = render_frame(f, tiles, parallel=False)
    c = render_frame(f, tiles)
    # the parallel kernel deals tile rows to the threads round-robin: any thread count gives
    # the same bits
    n_threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        d = render_frame(f, tiles, parallel=True)
    finally:
        numba.set_num_threads(n_threads)
    for r in (b, c, d):
        for name in ("colour", "depth", "shaded", "covered", "tile_counters", "shader_cycles"):
            assert np.array_equal(getattr(a, name), getattr(r, name)), name


@pytest.mark.parametrize("tiles_y", [1, 5, 48])
@pytest.mark.parametrize("n_threads", [1, 2, 3, 8])
def test_interleaved_rows_is_a_permutation(tiles_y, n_threads):
    from pipeline_model.raster import _interleaved_rows
    rows = _interleaved_rows(tiles_y, n_threads)
    assert sorted(rows.tolist()) == list(range(tiles_y))
    # a thread's static share (a contiguous block) holds every n_threads-th row
    assert rows[: (tiles_y + n_threads - 1) // n_threads].tolist() == list(range(0, tiles_y, n_threads))


def test_order_override_and_skip():
    f = _scene(2)
    base, tiles = render(f)
    # reverse every tile's list: depth-tested opaque images may differ, counts change
    off = tiles.offsets
    rev = np.concatenate([tiles.tri[off[i]:off[i + 1]][::-1] for i in range(tiles.n_tiles)])
    r = render_frame(f, tiles, order=(off, rev))
    assert r.totals()["fragments_rasterized"] == base.totals()["fragments_rasterized"]
    assert r.totals()["fragments_shaded"] != base.totals()["fragments_shaded"]
    skip = np.zeros(tiles.n_tiles, bool)
    skip[::2] = True
    s = render_frame(f, tiles, skip=skip, previous_colour=base.colour, previous_depth=base.depth)
    assert np.array_equal(s.colour, base.colour) and np.array_equal(s.depth, base.depth)
    t = s.totals()
    assert t["tiles_skipped"] == skip.sum() and np.all(s.tile_counters[skip] == 0)
    blank = render_frame(f, tiles, skip=np.ones(tiles.n_tiles, bool), clear_colour=(1, 0, 0))
    assert np.all(blank.colour == [255, 0, 0]) and np.all(blank.depth == 1)


def test_superfragment_rates():
    f = FrameGeometry.from_screen_triangles(quad(-1, -1, 50, 40), width=48, height=36)
    base, tiles = render(f)
    for k in range(5):
        r = render_frame(f, tiles, rate=np.full(tiles.n_tiles, k, np.int8))
        b = 1 << k
        blocks = sum(((min(48, x + 16) - x + b - 1) // b) * ((min(36, y + 16) - y + b - 1) // b)
                     for y in range(0, 36, 16) for x in range(0, 48, 16))
        t = r.totals()
        assert t["samples"] == blocks and t["fragments_shaded"] == blocks
        assert np.array_equal(r.colour, base.colour)  # flat colour: replication is exact
        assert np.all(r.covered == 1)
    with pytest.raises(ValueError):
        render_frame(f, tiles, rate=np.full(tiles.n_tiles, 5, np.int8))


def test_occlusion_pairs_and_prim_visibility():
    near = quad(0, 0, 16, 16)
    far = quad(4, 4, 12, 12)
    for near_first in (True, False):
        tris = near + far if near_first else far + near
        z = [0.2, 0.2, 0.7, 0.7] if near_first else [0.7, 0.7, 0.2, 0.2]
        f = FrameGeometry.from_screen_triangles(tris, z=z, draw=[0, 0, 1, 1], width=16, height=16,
                                                object_id=[10, 20] if near_first else [20, 10])
        tiles = bin_triangles(f, 16)
        r = render_frame(f, tiles, record_occlusion=True, record_prim_visibility=True,
                         record_writer=True)
        assert r.occlusion_pairs.tolist() == [[10, 20]]  # object 10 (near) occludes 20
        assert r.occlusion_counts.tolist() == [64] and r.occlusion_conflicts.tolist() == [0]
        far_entries = [i for i, t in enumerate(r.vis_tri) if t in ((2, 3) if near_first else (0, 1))]
        assert (not r.prim_visible[far_entries].any()) if near_first else r.prim_visible[far_entries].all()
        assert np.all(r.prim_zmin[far_entries] == np.float32(0.7))
        assert set(np.unique(r.writer_entry).tolist()) == ({0, 1} if near_first else {2, 3})
    # self-occlusion ignored: one object
    f = FrameGeometry.from_screen_triangles(far + near, z=[0.7, 0.7, 0.2, 0.2], width=16, height=16)
    r = render_frame(f, bin_triangles(f), record_occlusion=True)
    assert r.occlusion_pairs.shape == (0, 2)


@pytest.mark.parametrize("chunks", [None, 5])
def test_parallel_occlusion_record_equals_serial_on_a_shipped_scene(monkeypatch, chunks):
    """Per-chunk occlusion tables merged in row order: the same record (first-seen order,
    counts, conflicts) and the same outputs as one serial pass, with the default chunk count
    (numba threads) and with more chunks than threads."""
    import pipeline_model.raster as raster
    from pipeline_model.pipeline import run_frames

    if chunks is not None:
        monkeypatch.setattr(raster, "occlusion_chunks", lambda tiles_y, n_obj: min(tiles_y, chunks))
    _, frame, tiles = next(run_frames("city-unordered", [7]))
    a = render_frame(frame, tiles, record_occlusion=True, parallel=False)
    b = render_frame(frame, tiles, record_occlusion=True, parallel=True)
    assert a.occlusion_pairs.shape[0] > 50
    for name in ("occlusion_pairs", "occlusion_counts", "occlusion_conflicts", "colour", "depth",
                 "shaded", "covered", "tile_counters", "shader_cycles"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and np.array_equal(x, y), name


def test_point_queries_match_render():
    f = _scene(3)
    r, _ = render(f)
    ys, xs = np.nonzero(r.shaded)
    for py, px in list(zip(ys, xs, strict=True))[::193]:
        cov = [t for t in range(f.n_triangles) if covers(f, t, int(px), int(py))]
        assert len(cov) == r.covered[py, px]
        woz = [t for t in cov if f.depth_write[f.draw[t]] and not f.blend[f.draw[t]]]
        if woz:
            assert r.depth[py, px] == min(depth_at(f, t, int(px), int(py)) for t in woz)


def test_shading_deterministic_and_perspective_correct():
    from pipeline_model.shading import shade_image, value_noise

    a = shade_image(3, [0, 0, 0, 1, 1, 1, 4, 0], np.linspace(0, 3, 50), np.linspace(1, 2, 50))
    b = shade_image(3, [0, 0, 0, 1, 1, 1, 4, 0], np.linspace(0, 3, 50), np.linspace(1, 2, 50))
    assert np.array_equal(a, b) and a.min() >= 0 and a.max() <= 1
    assert 0 <= value_noise(0.3, 7.9) < 1
    chk = shade_image(1, [1, 0, 0, 0, 1, 0, 1, 0], [0.5, 1.5], [0.5, 0.5])
    assert chk[0].tolist() == [1, 0, 0] and chk[1].tolist() == [0, 1, 0]
    # perspective: a strip whose right end is 4x farther (inv_w 1 -> 0.25), light 0 -> 1 across
    # ("lit" colour = 0.2 + 0.8 * light): at screen position t the light is
    # t/4 / ((1 - t) + t/4), not t.
    xy = quad(0, 0, 64, 1)
    iw = [[1, 0.25, 0.25], [1, 0.25, 1]]
    light = [[0, 1, 1], [0, 1, 0]]
    f = FrameGeometry.from_screen_triangles(xy, width=64, height=1, inv_w=iw, shade=light,
                                            colour_kind=4, colour_params=[[1, 1, 1, 0, 0, 0, 1, 0]])
    r, _ = render(f)
    for px in (8, 32, 50):
        t = (px + 0.5) / 64
        lt = t * 0.25 / ((1 - t) + t * 0.25)
        assert abs(int(r.colour[0, px, 0]) - 255 * (0.2 + 0.8 * lt)) <= 1


def test_tie_break_program_makes_reordered_opaque_frames_identical():
    # two objects meeting at exactly equal depths (coplanar quads, different colours)
    a = quad(0, 0, 12, 12)
    b = quad(4, 4, 16, 16)
    f = FrameGeometry.from_screen_triangles(a + b, z=[0.5] * 4, draw=[0, 0, 1, 1], width=16,
                                            height=16, colour_params=[[1, 0, 0, 0, 0, 0, 1, 0],
                                                                      [0, 0, 1, 0, 0, 0, 1, 0]])
    tiles = bin_triangles(f, 16)
    base = render_frame(f, tiles)
    rev = (tiles.offsets, tiles.tri[::-1].copy())
    plain = render_frame(f, tiles, order=rev)
    assert not np.array_equal(plain.colour, base.colour)  # the tie flips with the order
    for func in ("less", "lequal"):
        ref = render_frame(f, tiles, depth_func=func)
        fixed = render_frame(f, tiles, order=rev, tie_break="program", depth_func=func)
        assert np.array_equal(fixed.colour, ref.colour) and np.array_equal(fixed.depth, ref.depth)
    assert np.array_equal(render_frame(f, tiles, tie_break="program").colour, base.colour)
    with pytest.raises(ValueError):
        render_frame(f, tiles, tie_break="x")


def test_setup_records_of_degenerate_triangles_and_both_windings():
    from pipeline_model.raster_setup import R_FLAGS, VALID_BIT, setup_triangles
    xy = np.array([[[1, 1], [5, 1], [9, 1]],     # collinear: zero area
                   [[1, 1], [5, 1], [3, 6]],
                   [[1, 1], [3, 6], [5, 1]]], float)
    f = FrameGeometry.from_screen_triangles(xy, np.full((3, 3), 0.5, np.float32), width=16, height=16)
    s = setup_triangles(f)
    assert s.valid.tolist() == [False, True, True]
    # every word of a zero-area record is written (the buffer is not zeroed beforehand)
    assert not s.rec[0, :R_FLAGS].any() and not s.rec[0, R_FLAGS + 1:].any()
    assert s.rec[0, R_FLAGS] & VALID_BIT == 0
    # the two windings of one triangle cover the same pixels with the same depth plane
    assert np.array_equal(s.box[1], s.box[2]) and np.array_equal(s.plane[1], s.plane[2])
