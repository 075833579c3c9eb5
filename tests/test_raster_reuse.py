"""Tiles taken from an earlier render of the frame (``render_frame(reuse=)``): bit-identical to
a full render for every per-tile input, refused where it would not be."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline_model import pipeline, raster
from pipeline_model import raster_occlusion as occlusion
from pipeline_model.binning import bin_triangles
from pipeline_model.frame import FrameGeometry
from pipeline_model.raster import render_frame

FIELDS = ("colour", "depth", "shaded", "covered", "tile_counters", "shader_cycles", "writer_entry",
          "prim_visible", "prim_zmin", "prim_zmax", "vis_offsets", "vis_tri", "occlusion_pairs",
          "occlusion_counts", "occlusion_conflicts")


def _frame(seed=0, w=160, h=96, n=500):
    rng = np.random.default_rng(seed)
    c = rng.uniform([-10, -10], [w + 10, h + 10], size=(n, 1, 2))
    xy = c + rng.normal(size=(n, 3, 2)) * rng.uniform(2, 25, size=(n, 1, 1))
    nd = 14
    return FrameGeometry.from_screen_triangles(
        xy, rng.uniform(0, 1, size=(n, 3)).astype(np.float32), draw=np.sort(rng.integers(0, nd, n)),
        width=w, height=h, colour_kind=np.arange(nd) % 5, blend=np.arange(nd) >= 11,
        depth_write=np.arange(nd) < 10, alpha=0.6, object_id=np.arange(nd) // 2,
        inv_w=rng.uniform(0.5, 2, size=(n, 3)), uv=rng.uniform(0, 4, size=(n, 3, 2)),
        shade=rng.uniform(0, 1, size=(n, 3)))


def _assert_same(a, b):
    for name in FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None), name
        if x is not None:
            assert np.array_equal(x, y), name
    assert (a.occlusion_log is None) == (b.occlusion_log is None)
    if a.occlusion_log is not None:
        for x, y in zip(a.occlusion_log, b.occlusion_log, strict=True):
            assert np.array_equal(x, y), "occlusion_log"


def _blended_depth_writer_frame():
    """A frame with blended draws that write depth (outside DR's depth pass)."""
    rng = np.random.default_rng(5)
    n, nd = 500, 14
    c = rng.uniform([-10, -10], [170, 106], size=(n, 1, 2))
    xy = c + rng.normal(size=(n, 3, 2)) * rng.uniform(2, 25, size=(n, 1, 1))
    return FrameGeometry.from_screen_triangles(
        xy, rng.uniform(0, 1, size=(n, 3)).astype(np.float32), draw=np.sort(rng.integers(0, nd, n)),
        width=160, height=96, blend=np.arange(nd) >= 11, depth_write=np.arange(nd) < 12,
        alpha=0.6, object_id=np.arange(nd) // 2)


def _record_draws(monkeypatch) -> list:
    """The options (sorted names) of every render the raster draws from now on, in order."""
    drawn = []
    full_render = raster.render_frame

    def counting(frame, tiles, **kw):
        drawn.append(sorted(k for k in kw if k not in ("setup", "clear_colour")))
        return full_render(frame, tiles, **kw)

    monkeypatch.setattr(raster, "render_frame", counting)
    return drawn


def _reversed_every_other_tile(tiles):
    off, tri = tiles.offsets, tiles.tri.copy()
    for i in range(0, tiles.n_tiles, 2):
        tri[off[i]:off[i + 1]] = tri[off[i]:off[i + 1]][::-1]
    return off, tri


@pytest.mark.parametrize("options", [{}, {"depth_func": "lequal"},
                                     {"record_writer": True, "record_prim_visibility": True,
                                      "tie_break": "program"},
                                     {"record_occlusion": True, "tie_break": "program"},
                                     {"record_occlusion": True, "parallel": False}])
def test_reuse_is_bit_identical_to_a_full_render(options):
    f = _frame()
    tiles = bin_triangles(f)
    n = tiles.n_tiles
    rng = np.random.default_rng(3)
    previous = render_frame(f, tiles)
    ref = render_frame(f, tiles, **options)
    variants = [
        {"skip": rng.random(n) < 0.3, "previous_colour": previous.colour,
         "previous_depth": previous.depth},
        {"rate": rng.integers(0, 3, n)},
        {"order": _reversed_every_other_tile(tiles)},
        {"order": _reversed_every_other_tile(tiles), "rate": rng.integers(0, 2, n),
         "skip": rng.random(n) < 0.2},
    ]
    for variant in variants:
        kw = {**options, **variant}
        full = render_frame(f, tiles, **kw)
        taken = render_frame(f, tiles, reuse=ref, **kw)
        _assert_same(full, taken)
        reused = taken.extra["tiles_reused"]
        assert 0 < reused < n
    # a render of the same inputs takes every tile
    assert render_frame(f, tiles, reuse=ref, **options).extra["tiles_reused"] == n


def test_reuse_refused_where_tiles_would_differ():
    f = _frame(1)
    tiles = bin_triangles(f)
    ref = render_frame(f, tiles)
    with pytest.raises(ValueError, match="other options"):
        render_frame(f, tiles, reuse=ref, depth_func="lequal")
    with pytest.raises(ValueError, match="other options"):
        render_frame(f, tiles, reuse=ref, depth_prefill=ref.depth)
    with pytest.raises(ValueError, match="occlusion"):
        render_frame(f, tiles, reuse=ref, record_occlusion=True)
    other = _frame(1)
    with pytest.raises(ValueError, match="not a render of this frame"):
        render_frame(other, bin_triangles(other), reuse=ref)
    with pytest.raises(ValueError, match="tile grid"):
        render_frame(f, bin_triangles(f, 32), reuse=ref)


def test_simulate_counts_and_images_unchanged_by_tile_reuse(monkeypatch):
    """The frame loop lends tiles between its techniques' renders: the same rows and images as
    with every render drawn in full."""
    techniques = ["baseline", "re", "dsr", "evr", "evr+re", "evr+dsr", "vro", "vro+re"]
    full_render = raster.render_frame
    lent = []

    def counting(frame, tiles, **kw):
        res = full_render(frame, tiles, **kw)
        if "reuse" in kw:
            lent.append(res.extra["tiles_reused"])
        return res

    monkeypatch.setattr(raster, "render_frame", counting)
    kept = pipeline.simulate("hud-over-3d", techniques, frames=3, width=192, height=128,
                             keep_images=True, progress=False)
    assert len(lent) >= 6 and sum(lent) > 0

    def no_reuse(frame, tiles, **kw):
        kw.pop("reuse", None)
        return full_render(frame, tiles, **kw)

    monkeypatch.setattr(raster, "render_frame", no_reuse)
    drawn = pipeline.simulate("hud-over-3d", techniques, frames=3, width=192, height=128,
                              keep_images=True, progress=False)
    assert kept.rows == drawn.rows
    for name in techniques:
        for a, b in zip(kept.images[name], drawn.images[name], strict=True):
            assert np.array_equal(a, b), name


def _dr_and_oracle(f, tiles, **options):
    base = render_frame(f, tiles, **options)
    dr = render_frame(f, tiles, hsr_pass=True, **options)
    return base, dr, render_frame(f, tiles, depth_prefill=base.depth, **options)


@pytest.mark.parametrize("seed", range(4))
def test_oracle_taken_from_dr_is_the_oracle_render(seed):
    f = _frame(seed)
    tiles = bin_triangles(f)
    for options in ({}, {"depth_func": "greater", "clear_depth": 0.0}):
        base, dr, oracle = _dr_and_oracle(f, tiles, **options)
        taken = raster.oracle_from_hsr(dr, f, tiles, base.depth, **options)
        assert taken is not None and taken.extra["from_hsr"]
        _assert_same(taken, oracle)
        assert dr.counter("hsr_fragments").sum() > 0 and not taken.counter("hsr_fragments").any()
        assert taken.colour is not dr.colour


def test_oracle_not_taken_from_dr_where_they_could_differ():
    f = _frame(5)
    tiles = bin_triangles(f)
    base, dr, _ = _dr_and_oracle(f, tiles)
    nudged = base.depth.copy()
    nudged[40, 50] = np.nextafter(nudged[40, 50], np.float32(0))
    assert raster.oracle_from_hsr(dr, f, tiles, nudged) is None
    assert raster.oracle_from_hsr(dr, f, tiles, base.depth, depth_func="lequal") is None
    assert raster.oracle_from_hsr(dr, f, tiles, base.depth, clear_colour=(0.5, 0, 0)) is None
    assert raster.oracle_from_hsr(base, f, tiles, base.depth) is None          # not a DR render
    for other in ({"rate": np.ones(tiles.n_tiles, np.int8)}, {"tie_break": "program"},
                  {"order": _reversed_every_other_tile(tiles)}, {"depth_func": "lequal"}):
        dr_other = render_frame(f, tiles, hsr_pass=True, **other)
        assert raster.oracle_from_hsr(dr_other, f, tiles, dr_other.depth) is None, other
    assert raster.oracle_from_hsr(dr, f, bin_triangles(f, 32), base.depth) is None
    # a blended draw that writes depth is outside DR's pass but changes the final depth
    g = _blended_depth_writer_frame()
    g_tiles = bin_triangles(g)
    g_base, g_dr, g_oracle = _dr_and_oracle(g, g_tiles)
    assert raster.oracle_from_hsr(g_dr, g, g_tiles, g_base.depth) is None
    assert raster.oracle_from_hsr(g_dr, g, g_tiles, g_dr.depth) is None


def test_simulate_oracle_rows_unchanged_by_taking_it_from_dr(monkeypatch):
    drawn = _record_draws(monkeypatch)
    both = pipeline.simulate("city-unordered", ["dr", "oracle"], frames=2, width=240, height=160,
                             keep_images=True, progress=False)
    assert drawn == [["hsr_pass"], [], ["hsr_pass"], []]       # DR and the baseline, per frame
    alone = pipeline.simulate("city-unordered", ["oracle"], frames=2, width=240, height=160,
                              keep_images=True, progress=False)
    assert drawn[4:] == [[], ["depth_prefill"], [], ["depth_prefill"]]
    assert [r for r in both.rows if r["technique"] == "oracle"] == alone.rows
    for a, b in zip(both.images["oracle"], alone.images["oracle"], strict=True):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("seed", range(4))
def test_dr_given_its_depth_pass_from_the_baseline_is_the_dr_render(seed):
    f = _frame(seed)
    tiles = bin_triangles(f)
    for options in ({}, {"depth_func": "greater", "clear_depth": 0.0}):
        base, dr, oracle = _dr_and_oracle(f, tiles, **options)
        depth = raster.hsr_depth_from(base, f, tiles, **options)
        assert depth is not None
        for parallel in (False, True):
            given = render_frame(f, tiles, hsr_pass=True, hsr_depth=depth, parallel=parallel, **options)
            _assert_same(given, dr)
        assert dr.counter("hsr_fragments").sum() > 0
        # the oracle is still taken from it
        _assert_same(raster.oracle_from_hsr(given, f, tiles, base.depth, **options), oracle)


def test_dr_depth_pass_not_taken_from_the_baseline_where_they_could_differ():
    f = _frame(5)
    tiles = bin_triangles(f)
    base = render_frame(f, tiles)
    assert raster.hsr_depth_from(base, f, tiles, depth_func="greater") is None
    assert raster.hsr_depth_from(base, f, tiles, clear_depth=0.5) is None
    for other in ({"rate": np.ones(tiles.n_tiles, np.int8)}, {"tie_break": "program"}, {"hsr_pass": True},
                  {"order": _reversed_every_other_tile(tiles)}, {"depth_prefill": base.depth},
                  {"skip": np.arange(tiles.n_tiles) % 2 == 0}):
        assert raster.hsr_depth_from(render_frame(f, tiles, **other), f, tiles) is None, other
    lequal = render_frame(f, tiles, depth_func="lequal")
    assert raster.hsr_depth_from(lequal, f, tiles, depth_func="lequal") is None
    assert raster.hsr_depth_from(base, f, bin_triangles(f, 32)) is None
    for wrong in ({"depth_func": "lequal"}, {"tie_break": "program"}, {"record_writer": True}, {}):
        with pytest.raises(ValueError):
            render_frame(f, tiles, hsr_pass=bool(wrong), hsr_depth=base.depth, **wrong)
    # a blended draw that writes depth is outside DR's pass but changes the final depth
    g = _blended_depth_writer_frame()
    g_tiles = bin_triangles(g)
    assert raster.hsr_depth_from(render_frame(g, g_tiles), g, g_tiles) is None


def test_simulate_dr_rows_unchanged_by_taking_its_depth_pass_from_the_baseline(monkeypatch):
    drawn = _record_draws(monkeypatch)
    after = pipeline.simulate("city-unordered", ["baseline", "dr"], frames=2, width=240, height=160,
                              keep_images=True, progress=False)
    assert drawn == [[], ["hsr_depth", "hsr_pass"]] * 2
    before = pipeline.simulate("city-unordered", ["dr", "baseline"], frames=2, width=240, height=160,
                               keep_images=True, progress=False)
    assert drawn[4:] == [["hsr_pass"], []] * 2
    rows = [r for r in before.rows if r["technique"] == "dr"]
    assert rows and [r for r in after.rows if r["technique"] == "dr"] == rows
    for a, b in zip(after.images["dr"], before.images["dr"], strict=True):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("seed", range(3))
def test_the_occlusion_log_replayed_is_the_record(seed):
    """Each chunk's log of first sightings per tile, replayed in tile order, numbers and counts
    the relations as the per-chunk tables merged do, serial or on threads; over a subset of the
    tiles, as a render of those tiles alone records them."""
    f = _frame(seed)
    tiles = bin_triangles(f, 16)
    n_obj = len(np.unique(f.object_id))
    obj_ids = np.unique(f.object_id)
    for parallel in (False, True):
        res = render_frame(f, tiles, record_occlusion=True, parallel=parallel)
        assert res.occlusion_log is not None and len(res.occlusion_log[0]) > 0
        assert np.all(np.diff(res.occlusion_log[0]) >= 0)
        first, count = occlusion.tables_from_log(res.occlusion_log, n_obj)
        pairs, counts, conflicts = occlusion.first_seen_pairs(first, count, obj_ids)
        assert np.array_equal(pairs, res.occlusion_pairs)
        assert np.array_equal(counts, res.occlusion_counts)
        assert np.array_equal(conflicts, res.occlusion_conflicts)
    skip = np.random.default_rng(seed).random(tiles.n_tiles) < 0.4
    part = render_frame(f, tiles, record_occlusion=True, skip=skip)
    nothing = (np.zeros(0, np.int32), np.zeros((0, 2), np.int32), np.zeros(0, np.int64))
    joined = occlusion.join_logs(nothing, res.occlusion_log, ~skip)
    first, count = occlusion.tables_from_log(joined, n_obj)
    assert np.array_equal(occlusion.first_seen_pairs(first, count, obj_ids)[0], part.occlusion_pairs)


def test_a_full_occlusion_log_is_not_read_and_its_render_lends_no_tiles(monkeypatch):
    f = _frame(2)
    tiles = bin_triangles(f)
    order = _reversed_every_other_tile(tiles)
    ref = render_frame(f, tiles, record_occlusion=True)
    skip = np.arange(tiles.n_tiles) % 3 == 0
    monkeypatch.setattr(raster, "log_capacity", lambda *grid: 2)
    full = render_frame(f, tiles, record_occlusion=True, order=order, skip=skip)
    small = render_frame(f, tiles, record_occlusion=True)
    assert small.occlusion_log is None and np.array_equal(small.occlusion_pairs, ref.occlusion_pairs)
    with pytest.raises(ValueError, match="occlusion"):
        render_frame(f, tiles, record_occlusion=True, order=order, skip=skip, reuse=small)
    # this render's own log (of the tiles in another order) fills up: it draws every tile instead
    taken = render_frame(f, tiles, record_occlusion=True, order=order, skip=skip, reuse=ref)
    assert "tiles_reused" not in taken.extra
    _assert_same(taken, full)


def test_render_keys_read_the_previous_buffers_only_in_skipped_tiles():
    """Renders are shared within a frame by what the raster reads: the previous frame's buffers
    only in the skipped tiles."""
    prev = np.zeros((20, 30, 3), np.uint8)
    skip = np.array([True, False, False, False])            # 16-pixel tiles, 2 x 2

    def key(**kw):
        return pipeline._render_key(pipeline._read_arguments(kw, 16), {})

    outside = prev.copy()
    outside[:16, 16:] = 9                                    # the second tile, drawn
    inside = prev.copy()
    inside[15, 15] = 1                                       # the first tile, skipped
    assert key(skip=skip, previous_colour=prev) == key(skip=skip, previous_colour=outside)
    assert key(skip=skip, previous_colour=prev) != key(skip=skip, previous_colour=inside)
    assert key(skip=skip, previous_colour=prev) != key(skip=skip)
    assert key(skip=~skip & False, previous_colour=inside) == key(skip=~skip & False)
    assert key(previous_colour=inside, previous_depth=np.ones((20, 30), np.float32)) == key()
    # a skip of the wrong size is left to the raster to refuse
    assert pipeline._read_arguments({"skip": np.ones(3, bool), "previous_colour": prev}, 16)["previous_colour"] is prev


def test_render_table_finds_equal_arguments_and_hashes_only_to_tell_a_group_apart():
    """A frame's renders are found by the content of their arguments; large arrays are hashed
    only when another entry has arguments of the same shapes."""
    rng = np.random.default_rng(3)
    order = (np.arange(5, dtype=np.int64), rng.integers(0, 99, 50_000).astype(np.int32))
    prev = rng.integers(0, 255, (20, 30, 3)).astype(np.uint8)
    skip = np.array([True, False, False, False])
    digests: dict = {}
    table = pipeline._RenderTable(digests, 16)
    table.put({"order": order, "record_writer": True}, "evr")
    table.put({"skip": skip, "previous_colour": prev}, "re")
    assert table.get({"order": order}) is None and table.get({"record_writer": True}) is None
    assert table.get({"skip": ~skip, "previous_colour": prev}) is None
    assert not digests                                      # no group shared: nothing hashed
    same = (order[0].copy(), order[1].copy())
    assert table.get({"order": same, "record_writer": True}) == "evr"
    other = (order[0], order[1].copy())
    other[1][7] += 1
    assert table.get({"order": other, "record_writer": True}) is None
    outside = prev.copy()
    outside[:16, 16:] = 9                                   # a drawn tile: not read
    assert table.get({"skip": skip.copy(), "previous_colour": outside}) == "re"
    assert table.results() == ["evr", "re"]
    # arguments with equal render keys share their shape key
    for kw in ({"skip": skip, "previous_colour": prev}, {"skip": skip & False, "previous_colour": prev},
               {"order": order, "depth_func": "less"}, {"previous_depth": None}):
        twin = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
        assert pipeline._render_key(pipeline._read_arguments(kw, 16), {}) == \
            pipeline._render_key(pipeline._read_arguments(twin, 16), {})
        assert pipeline._shape_key(kw, 16) == pipeline._shape_key(twin, 16)


def test_a_baseline_keeping_more_records_lends_tiles_in_program_order():
    """A render may take tiles from one that kept more records, and with another tie-break
    where that one drew the frame's own lists (program order, where the tie-break decides
    nothing); not from one that kept fewer records or drew other lists."""
    f = _frame(4)
    tiles = bin_triangles(f)
    order = _reversed_every_other_tile(tiles)
    evr = {"record_prim_visibility": True, "record_writer": True, "tie_break": "program"}
    lender = render_frame(f, tiles, record_prim_visibility=True, record_writer=True)
    assert raster.lends_tiles(lender, f, tiles, order=order, **evr)
    taken = render_frame(f, tiles, order=order, reuse=lender, **evr)
    assert 0 < taken.extra["tiles_reused"] < tiles.n_tiles
    _assert_same(taken, render_frame(f, tiles, order=order, **evr))
    plain = render_frame(f, tiles)
    _assert_same(render_frame(f, tiles, reuse=lender), plain)
    assert not raster.lends_tiles(plain, f, tiles, order=order, **evr)           # fewer records
    reordered = render_frame(f, tiles, order=order, record_prim_visibility=True, record_writer=True)
    assert not raster.lends_tiles(reordered, f, tiles, **evr)                    # not program order
    with pytest.raises(ValueError, match="other options"):
        render_frame(f, tiles, reuse=reordered, **evr)


def test_simulate_rows_unchanged_by_the_baseline_lending_tiles(monkeypatch):
    techniques = ["baseline", "evr", "evr+re", "evr+dsr"]
    full_render = raster.render_frame
    lenders = []

    def counting(frame, tiles, **kw):
        if "reuse" in kw and "order" in kw:     # a reordered render taking program-order tiles
            lenders.append(kw["reuse"].inputs["tri"] is tiles.tri)
        return full_render(frame, tiles, **kw)

    monkeypatch.setattr(raster, "render_frame", counting)
    lent = pipeline.simulate("city-ordered", techniques, frames=3, width=240, height=160,
                             keep_images=True, progress=False)
    assert any(lenders)
    monkeypatch.setattr(raster, "lends_tiles", lambda *a, **k: False)
    drawn = pipeline.simulate("city-ordered", techniques, frames=3, width=240, height=160,
                              keep_images=True, progress=False)
    assert lent.rows == drawn.rows
    alone = pipeline.simulate("city-ordered", ["baseline"], frames=3, width=240, height=160, progress=False)
    assert [r for r in lent.rows if r["technique"] == "baseline"] == alone.rows
    for name in techniques:
        for a, b in zip(lent.images[name], drawn.images[name], strict=True):
            assert np.array_equal(a, b), name


def test_dr_of_a_frame_without_woz_opaque_draws_is_the_baseline():
    rng = np.random.default_rng(7)
    n, nd = 400, 9
    c = rng.uniform([-10, -10], [170, 106], size=(n, 1, 2))
    xy = c + rng.normal(size=(n, 3, 2)) * rng.uniform(2, 25, size=(n, 1, 1))
    f = FrameGeometry.from_screen_triangles(
        xy, rng.uniform(0, 1, size=(n, 3)).astype(np.float32), draw=np.sort(rng.integers(0, nd, n)),
        width=160, height=96, blend=np.arange(nd) % 2 == 0, depth_write=np.zeros(nd, bool), alpha=0.5,
        colour_kind=np.arange(nd) % 5, object_id=np.arange(nd))
    tiles = bin_triangles(f)
    base = render_frame(f, tiles, record_writer=True, record_prim_visibility=True)
    dr = render_frame(f, tiles, hsr_pass=True)
    taken = raster.hsr_from_baseline(base, f, tiles)
    assert taken is not None and taken.writer_entry is None
    _assert_same(taken, dr)
    oracle = render_frame(f, tiles, depth_prefill=base.depth)
    _assert_same(raster.oracle_from_hsr(taken, f, tiles, base.depth), oracle)
    woz = _frame(3)
    woz_tiles = bin_triangles(woz)
    assert raster.hsr_from_baseline(render_frame(woz, woz_tiles), woz, woz_tiles) is None
    assert raster.hsr_from_baseline(render_frame(f, tiles, rate=np.ones(tiles.n_tiles, np.int8)), f, tiles) is None


def _woz_opaque_frame(seed):
    """Every draw tests and writes depth without blending; colour kinds and costs vary."""
    rng = np.random.default_rng(seed)
    n, nd = 600, 12
    c = rng.uniform([-10, -10], [170, 106], size=(n, 1, 2))
    xy = c + rng.normal(size=(n, 3, 2)) * rng.uniform(2, 25, size=(n, 1, 1))
    z = rng.uniform(0, 1, size=(n, 3)).astype(np.float32)
    z[::7] = z[::7, :1]            # flat triangles: equal depths between triangles at a pixel
    z[::11] = 1.0                  # at the clear depth: never written under "less"
    return FrameGeometry.from_screen_triangles(
        xy, z, draw=np.sort(rng.integers(0, nd, n)), width=160, height=96,
        colour_kind=np.arange(nd) % 5, shader_cost=1.0 + np.arange(nd) * 0.37,
        object_id=np.arange(nd) // 3, inv_w=rng.uniform(0.5, 2, size=(n, 3)),
        uv=rng.uniform(0, 4, size=(n, 3, 2)), shade=rng.uniform(0, 1, size=(n, 3)))


@pytest.mark.parametrize("seed", range(4))
def test_dr_of_a_frame_of_woz_opaque_draws_is_read_from_the_baselines_writer_record(seed):
    f = _woz_opaque_frame(seed)
    tiles = bin_triangles(f)
    for options in ({}, {"depth_func": "greater", "clear_depth": 0.0}):
        base = render_frame(f, tiles, record_writer=True, record_prim_visibility=True, **options)
        dr = render_frame(f, tiles, hsr_pass=True, **options)
        taken = raster.hsr_from_baseline(base, f, tiles, **options)
        assert taken is not None and taken.writer_entry is None and taken.extra["from_baseline"]
        _assert_same(taken, dr)
        assert dr.counter("hsr_fragments").sum() > 0 and dr.shader_cycles.sum() > 0
        assert dr.counter("early_z_killed").sum() > 0 and dr.counter("textured_fragments").sum() > 0
        # the oracle is still taken from it
        oracle = render_frame(f, tiles, depth_prefill=base.depth, **options)
        _assert_same(raster.oracle_from_hsr(taken, f, tiles, base.depth, **options), oracle)
    # refused: no writer record, another clear colour, a draw that is not WOZ opaque
    assert raster.hsr_from_baseline(render_frame(f, tiles), f, tiles) is None
    base = render_frame(f, tiles, record_writer=True)
    assert raster.hsr_from_baseline(base, f, tiles, clear_colour=(0.0, 0.0, 0.5)) is None
    assert raster.hsr_from_baseline(base, f, tiles, clear_colour=(0.0, 0.0, 0.0)) is not None
    for change in ({"blend": np.arange(f.n_draws) == 3}, {"depth_write": np.arange(f.n_draws) != 3},
                   {"depth_test": np.arange(f.n_draws) != 3}):
        g = f.with_draw_state(**change)
        assert raster.hsr_from_baseline(render_frame(g, tiles, record_writer=True), g, tiles) is None


@pytest.mark.parametrize("scene", ["city-unordered", "statues"])
def test_simulate_dr_rows_unchanged_by_reading_it_from_the_writer_record(scene, monkeypatch):
    drawn = _record_draws(monkeypatch)
    with_evr = pipeline.simulate(scene, ["baseline", "dr", "oracle", "evr"], frames=3, width=240,
                                 height=160, keep_images=True, progress=False)
    # frame 0's baseline keeps no writer record yet (EVR asks for it during the frame)
    assert drawn.count(["hsr_depth", "hsr_pass"]) == 1
    alone = pipeline.simulate(scene, ["baseline", "dr", "oracle"], frames=3, width=240, height=160,
                              keep_images=True, progress=False)
    assert drawn.count(["hsr_depth", "hsr_pass"]) == 4
    for name in ("dr", "oracle"):
        assert ([r for r in with_evr.rows if r["technique"] == name]
                == [r for r in alone.rows if r["technique"] == name]), name
        for a, b in zip(with_evr.images[name], alone.images[name], strict=True):
            assert np.array_equal(a, b), name


def test_simulate_dr_and_oracle_rows_unchanged_where_no_draw_is_woz_opaque(monkeypatch):
    drawn = _record_draws(monkeypatch)
    after = pipeline.simulate("sprites-2d", ["baseline", "dr", "oracle"], frames=2, width=240, height=160,
                              keep_images=True, progress=False)
    assert drawn == [[], []]                               # the baseline's, each frame
    before = pipeline.simulate("sprites-2d", ["dr", "oracle", "baseline"], frames=2, width=240, height=160,
                               keep_images=True, progress=False)
    assert drawn[2:] == [["hsr_pass"], []] * 2
    for name in ("dr", "oracle"):
        rows = [r for r in before.rows if r["technique"] == name]
        assert rows and [r for r in after.rows if r["technique"] == name] == rows
        for a, b in zip(after.images[name], before.images[name], strict=True):
            assert np.array_equal(a, b)
