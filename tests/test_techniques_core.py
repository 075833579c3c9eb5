"""Unit tests of the technique cores (VRO, EVR, RE, DSR, MSSIM) on hand-made inputs."""

import zlib

import numba
import numpy as np
import pytest
from reference_kernels import (
    diagonal_max_numpy,
    fsm_step_numpy,
    fvp_from_buffers,
    luma_numpy,
    maxc,
    mssim_loops,
    mssim_reference,
    prediction_stats,
    tile_luma_numpy,
)

from pipeline_model import quality
from pipeline_model.frame import FrameGeometry
from pipeline_model.techniques import dsr, evr, vro
from pipeline_model.techniques import re as rel


# ------------------------------------------------------------------------------- VRO
def test_graph_first_relation_wins_and_self_ignored():
    g = vro.VisibilityGraph.from_pairs([1, 2, 3], [(1, 2), (2, 1), (3, 3), (1, 2), (2, 3)])
    assert g.n_nodes == 3 and g.n_edges == 2
    assert g.children[1] == [2] and g.children[2] == [3]
    assert (g.self_edges_ignored, g.reverse_edges_ignored, g.duplicate_edges_ignored) == (1, 1, 1)
    assert g.in_degree == {1: 0, 2: 1, 3: 1}


def test_kahn_dag_is_topological():
    # 4 -> 2 -> 1, 4 -> 3 ; program order 1,2,3,4
    g = vro.VisibilityGraph.from_pairs([1, 2, 3, 4], [(4, 2), (2, 1), (4, 3)])
    r = vro.kahn_sort(g)
    assert r.order == [4, 2, 3, 1]
    assert r.heuristic_firings == 0


def test_kahn_cycle_heuristic_picks_program_order_min_indegree():
    # three-object cycle 1 -> 2 -> 3 -> 1 plus 4 -> 3 (3 has in-degree 2)
    g = vro.VisibilityGraph.from_pairs([1, 2, 3, 4], [(1, 2), (2, 3), (3, 1), (4, 3)])
    r = vro.kahn_sort(g)
    # root 4 first; then 3 still has in-degree 1 (from 2): cycle 1,2,3 all at in-degree 1 ->
    # heuristic takes the first in program order: 1.
    assert r.order == [4, 1, 2, 3]
    assert r.heuristic_firings == 1
    assert sorted(r.order) == [1, 2, 3, 4]


def test_kahn_all_nodes_once_on_random_graphs():
    rng = np.random.default_rng(3)
    for _ in range(50):
        n = int(rng.integers(1, 30))
        pairs = rng.integers(0, n, size=(int(rng.integers(0, 80)), 2))
        g = vro.VisibilityGraph.from_pairs(range(n), pairs)
        r = vro.kahn_sort(g)
        assert sorted(r.order) == list(range(n))
        pos = {o: i for i, o in enumerate(r.order)}
        if r.heuristic_firings == 0:  # a DAG: every edge respected
            assert all(pos[a] < pos[b] for a, ch in g.children.items() for b in ch)


def _frame(n_draws, draws, **state):
    xy = np.tile(np.array([[[0, 0], [16, 0], [0, 16]]], float), (len(draws), 1, 1))
    return FrameGeometry.from_screen_triangles(xy, draw=np.array(draws), width=16, height=16,
                                               **state)


def test_vro_tile_order_barriers_and_new_objects():
    # draws: 0 opaque, 1 opaque, 2 blend (barrier), 3 opaque, 4 opaque
    f = _frame(5, [0, 0, 1, 2, 3, 4],
               object_id=[10, 11, 12, 13, 14], blend=[False, False, True, False, False])
    rank = vro.object_ranks(f, [14, 11, 10])  # 12, 13 new: after the sorted ones
    assert rank.tolist() == [2, 1, 3, 4, 0]
    offs = np.array([0, 6])
    tri = np.arange(6, dtype=np.int32)
    out = vro.tile_order(offs, tri, f.draw, rank, vro.free_draws(f))
    # segment [0,1,2] sorted by rank (draw 1 before draw 0, draw 0's two tris keep order),
    # blend stays at 3, segment [4,5] sorted: draw 4 (rank 0) before draw 3 (rank 4)
    assert out.tolist() == [2, 0, 1, 3, 5, 4]


# ------------------------------------------------------------------------------- EVR
def test_layer_generator_table():
    # per tile sequence of draws: W0 W0 W1 N2 N3 W4 W5 N6  (W = WOZ, N = NWOZ)
    woz = np.array([1, 1, 0, 0, 1, 1, 0], bool)
    draw = np.array([0, 0, 1, 2, 3, 4, 5, 6], np.int32)
    tri = np.arange(8, dtype=np.int32)
    lay = evr.assign_layers(np.array([0, 8]), tri, draw, woz)
    assert lay.tolist() == [1, 1, 1, 2, 3, 4, 4, 5]


def test_two_list_reorder_algorithm1():
    # Figure 4 of paper 003: N, W(v,o,v,o), N, W(o,v)
    draw = np.array([0, 1, 1, 1, 1, 2, 3, 3], np.int32)
    woz = np.array([0, 1, 0, 1], bool)
    occ = np.array([0, 0, 1, 0, 1, 0, 1, 0], bool)
    tri = np.arange(8, dtype=np.int32)
    perm = evr.reorder_two_lists(np.array([0, 8]), tri, draw, woz, occ)
    assert tri[perm].tolist() == [0, 1, 3, 2, 4, 5, 7, 6]


def test_prediction_and_fvp_from_buffers():
    # one 16x16 tile; tri 0 WOZ near (z=0.2) covers everything, tri 1 WOZ far (z=0.8)
    draw = np.array([0, 1], np.int32)
    woz = np.array([1, 1], bool)
    tri = np.array([0, 1], np.int32)
    offs = np.array([0, 2])
    lay = evr.assign_layers(offs, tri, draw, woz)
    depth = np.full((16, 16), 0.2, np.float32)
    depth[0, 0] = 0.3
    lbuf = np.ones((16, 16), np.int32)  # Layer Buffer: layer 1 everywhere
    fvp = fvp_from_buffers(offs, tri, draw, lay, woz, depth, lbuf, 1, 16)
    assert fvp.zfar[0] == np.float32(0.3) and not fvp.is_layer[0] and fvp.lfar[0] == 1
    znear = np.array([0.2, 0.8], np.float32)
    occ = evr.predict_occluded(offs, tri, draw, lay, znear, woz, fvp)
    assert occ.tolist() == [False, True]
    # NWOZ HUD (layer 2) written last everywhere: FVP becomes a layer, WOZ tri below predicted
    draw2 = np.array([0, 1, 2], np.int32)
    woz2 = np.array([1, 1, 0], bool)
    tri2 = np.array([0, 1, 2], np.int32)
    offs2 = np.array([0, 3])
    lay2 = evr.assign_layers(offs2, tri2, draw2, woz2)
    assert lay2.tolist() == [1, 1, 2]
    lw2 = np.full((16, 16), 2, np.int32)
    fvp2 = fvp_from_buffers(offs2, tri2, draw2, lay2, woz2, depth, lw2, 1, 16)
    assert fvp2.is_layer[0] and fvp2.lfar[0] == 2
    occ2 = evr.predict_occluded(offs2, tri2, draw2, lay2, np.zeros(3, np.float32), woz2, fvp2)
    assert occ2.tolist() == [True, True, False]
    # an uncovered pixel (layer 0) makes Lfar 0: nothing predicted by layers
    lw2[3, 3] = 0
    fvp3 = fvp_from_buffers(offs2, tri2, draw2, lay2, woz2, depth, lw2, 1, 16)
    assert fvp3.lfar[0] == 0 and not fvp3.is_layer[0]


def test_fused_fvp_and_prediction_counts_equal_the_numpy_formulation():
    # random program-order bins, a random reorder and random raster outputs
    rng = np.random.default_rng(7)
    tiles_x, tiles_y, tile = 5, 3, 4
    h, w = tiles_y * tile - 1, tiles_x * tile - 2
    n_tiles = tiles_x * tiles_y
    counts = rng.integers(0, 9, n_tiles)
    offs = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    n_tri, n_draws = 40, 12
    tri = rng.integers(0, n_tri, offs[-1]).astype(np.int32)
    draw = np.sort(rng.integers(0, n_draws, n_tri)).astype(np.int32)
    woz = rng.random(n_draws) < 0.6
    lay = evr.assign_layers(offs, tri, draw, woz)
    perm = np.concatenate([offs[t] + rng.permutation(counts[t]) for t in range(n_tiles)]).astype(np.int64)
    entry_tile = np.repeat(np.arange(n_tiles), counts)
    writer = np.full((h, w), -1, np.int32)
    for y in range(h):
        for x in range(w):
            t = (y // tile) * tiles_x + x // tile
            if counts[t] and rng.random() < 0.7:
                writer[y, x] = offs[t] + rng.integers(0, counts[t])
    depth = rng.random((h, w)).astype(np.float32)
    lbuf = np.where(writer >= 0, lay[perm][np.maximum(writer, 0)], 0)
    a = fvp_from_buffers(offs, tri, draw, lay, woz, depth, lbuf, tiles_x, tile)
    b = evr.fvp_from_writer(offs, tri, perm, draw, lay, woz, depth, writer, tiles_x, tile)
    for f in ("zfar", "lfar", "is_layer"):
        assert np.array_equal(getattr(a, f), getattr(b, f)) and getattr(a, f).dtype == getattr(b, f).dtype
    pred = rng.random(offs[-1]) < 0.4
    vis = rng.random(offs[-1]) < 0.5
    rendered = rng.random(n_tiles) < 0.8
    m = rendered[entry_tile] & woz[draw[tri[perm]]]
    assert evr.prediction_stats_entries(offs, tri, perm, draw, woz, rendered, pred, vis) == \
        prediction_stats(pred[perm][m], ~vis[m])


def test_znear_equals_row_minimum():
    from types import SimpleNamespace as NS

    z = np.random.default_rng(2).random((1000, 3)).astype(np.float32)
    z[::7, 1] = z[::7, 0]
    assert np.array_equal(evr.znear_of(NS(z=z)), z.min(axis=1))


def test_re_exclusion_guards():
    # tile with HUD (depth test off) above WOZ: layer exclusion allowed
    f = _frame(3, [0, 1, 2], depth_test=[True, True, False], depth_write=[True, True, False])
    offs, tri = np.array([0, 3]), np.arange(3, dtype=np.int32)
    lay = evr.assign_layers(offs, tri, f.draw, evr.woz_draws(f))
    fvp = evr.FVPTable(np.array([0.5], np.float32), np.array([2], np.int32), np.array([True]))
    zn = np.zeros(3, np.float32)
    assert evr.re_exclusion(offs, tri, f, lay, zn, fvp).tolist() == [True, True, False]
    # same but the overlay is depth-tested (could be pierced): nothing left out
    g = f.with_draw_state(depth_test=[True, True, True])
    assert not evr.re_exclusion(offs, tri, g, lay, zn, fvp).any()
    # Z rule on the fragment-depth floor, and the translucent-depth-writer guard
    fz = evr.FVPTable(np.array([0.5], np.float32), np.array([1], np.int32), np.array([False]))
    h = f.with_draw_state(depth_test=True, depth_write=True)
    floor = np.array([0.6, 0.5000001, 0.9])
    assert evr.re_exclusion(offs, tri, h, lay, floor, fz).tolist() == [True, True, True]
    hb = h.with_draw_state(blend=[False, False, True])
    assert not evr.re_exclusion(offs, tri, hb, lay, floor, fz).any()


def test_fragment_depth_floor_is_below_every_raster_depth():
    from pipeline_model.raster import covers, depth_at, setup_triangles

    rng = np.random.default_rng(7)
    xy = rng.uniform(-40, 100, size=(40, 3, 2))
    z = rng.uniform(0, 1, size=(40, 3)).astype(np.float32)
    z[::4] = z[::4, :1]  # some flat triangles (the floor must still be below)
    f = FrameGeometry.from_screen_triangles(xy, z, width=64, height=48)
    floor = evr.fragment_depth_floor(f)
    assert np.all(floor <= f.z.min(axis=1))
    st = setup_triangles(f)
    for t in range(f.n_triangles):
        x0, y0 = np.clip(np.floor(f.xy[t].min(axis=0)).astype(int), 0, [63, 47])
        x1, y1 = np.clip(np.ceil(f.xy[t].max(axis=0)).astype(int), 0, [63, 47])
        for py in range(y0, y1 + 1):
            for px in range(x0, x1 + 1):
                if covers(f, t, px, py, st):
                    assert depth_at(f, t, px, py, st) >= floor[t]


# -------------------------------------------------------------------------------- RE
def test_frame_seed_is_the_crc_of_clear_colour_then_light_direction():
    from types import SimpleNamespace as NS

    spec = NS(clear=(0.1, 0.2, 0.3), light_direction=(0.4, 1.0, 0.25))
    want = zlib.crc32(np.array([0.1, 0.2, 0.3, 0.4, 1.0, 0.25], np.float64).tobytes())
    assert rel.frame_seed(NS(spec=spec)) == want == 2505970878
    spec.light_direction = (0.4, 1.0, 0.3)
    assert rel.frame_seed(NS(spec=spec)) != want


def test_triangle_crc_and_tile_signatures():
    f = _frame(2, [0, 0, 1])
    c = rel.triangle_crcs(f)
    ds = rel.draw_state_bytes(f)
    tb = rel.triangle_bytes(f)
    assert c[2] == zlib.crc32(tb[2].tobytes(), zlib.crc32(ds[1].tobytes()))
    offs = np.array([0, 3, 3, 5])
    tri = np.array([0, 1, 2, 2, 0], np.int32)
    s = rel.tile_signatures(offs, tri, c)
    assert s[0] == zlib.crc32(c[[0, 1, 2]].astype("<u4").tobytes())
    assert s[1] == 0
    masked = rel.tile_signatures(offs, tri, c, include=np.array([1, 0, 1, 1, 1], bool))
    assert masked[0] == zlib.crc32(c[[0, 2]].astype("<u4").tobytes()) and masked[2] == s[2]
    # any attribute change changes the triangle's CRC; state changes too
    g = f.replace(shade=f.shade.copy())
    g.shade[1, 2] = 0.5
    assert (rel.triangle_crcs(g) != c).tolist() == [False, True, False]
    h = f.with_draw_state(colour_params=np.where(np.arange(8) == 7, 1.0, f.colour_params))
    assert (rel.triangle_crcs(h) != c).all()


def test_rendering_elimination_signature_buffer():
    r = rel.RenderingElimination()
    s1 = np.array([1, 2, 3], np.uint32)
    assert not r.decide(s1).any()
    r.commit(s1, np.ones(3, bool))
    s2 = np.array([1, 5, 3], np.uint32)
    skip = r.decide(s2)
    assert skip.tolist() == [True, False, True]
    r.commit(s2, ~skip)
    assert r.decide(s2).all()


# ------------------------------------------------------------------------------- DSR
def test_maxc_ignores_low_diagonals():
    c = np.zeros((1, 16, 16))
    c[0, 0, 0] = 1000.0
    c[0, 1, 2] = -7.0   # diagonal 3
    c[0, 10, 10] = 2.0  # diagonal 20
    dm = dsr.diagonal_max(c)
    assert maxc(dm, 0)[0] == 1000 and maxc(dm, 1)[0] == 7
    assert maxc(dm, 4)[0] == 2 and maxc(dm, 21)[0] == 0


def test_fsm_transitions():
    p = dsr.DSRParams(reduce=((5, 2),) * 4, increase=((50, 2),) * 3)
    st = np.arange(5, dtype=np.int8)
    low = np.zeros((5, 31))
    assert dsr.fsm_step(st, low, p).tolist() == [1, 2, 3, 4, 3]
    high = np.full((5, 31), 100.0)
    assert dsr.fsm_step(st, high, p).tolist() == [0, 0, 1, 2, 3]
    mid = np.full((5, 31), 20.0)
    assert dsr.fsm_step(st, mid, p).tolist() == [0, 1, 2, 3, 3]


def test_compiled_diagonal_max_and_fsm_equal_numpy():
    rng = np.random.default_rng(3)
    for dt in (np.float32, np.float64):
        c = (rng.normal(size=(400, 16, 16)) * 50).astype(dt)
        c[::7] = 0
        ref = diagonal_max_numpy(c)
        dm = dsr.diagonal_max(c)
        assert dm.dtype == ref.dtype and np.array_equal(dm, ref)
        suffix = np.stack([ref[:, d:].max(axis=1) for d in range(ref.shape[1])], axis=1)
        assert np.array_equal(dsr.suffix_max(ref), suffix) and np.array_equal(dsr.suffix_diagonal_max(c), suffix)
        for p in (dsr.DSRParams(), dsr.DSRParams(reduce=((5, 2),) * 4, increase=((50, 2),) * 3),
                  dsr.DSRParams(reduce=((64, 4), (8, 12), (30, 1), (20, 31)),
                                increase=((40, 1), (20, 3), (1, 40)))):
            st = rng.integers(0, 5, 400).astype(np.int8)
            for red in (True, False):
                for inc in (True, False):
                    for pre, d in ((False, ref), (True, suffix)):
                        got = dsr.fsm_step(st, d, p, red, inc, pre)
                        want = fsm_step_numpy(st, d, p, red, inc, pre)
                        assert got.dtype == want.dtype and np.array_equal(got, want)


def test_tile_gather_and_reused_buffers_equal_numpy():
    rng = np.random.default_rng(8)
    for shape in [(768, 1196, 3), (17, 33, 3), (16, 16, 3), (5, 7, 3), (40, 40)]:
        im = rng.integers(0, 256, shape, dtype=np.uint8)
        want = tile_luma_numpy(im)
        got = dsr.tile_luma(im)
        assert got.dtype == want.dtype and np.array_equal(got, want)
        assert dsr.tile_luma(im, out=np.full_like(want, np.nan)).tolist() == want.tolist()
        if len(shape) == 3:
            buf = np.full(shape[:2], np.nan, np.float32)
            y = quality.luma(im, out=buf)
            assert y is buf and np.array_equal(y, luma_numpy(im))
    # the rate table with its reused tile buffer == the plain numpy chain, frame after frame
    import scipy.fft

    st = dsr.DSRState()
    state = np.zeros(20, np.int8)
    for _ in range(3):
        im = (rng.integers(0, 256, (64, 80, 3)) // rng.integers(1, 64)).astype(np.uint8)
        c = scipy.fft.dctn(tile_luma_numpy(im), axes=(1, 2), norm="ortho")
        state = fsm_step_numpy(state, diagonal_max_numpy(c), st.params)
        assert np.array_equal(st.update(im), state)


def test_dct_flat_tile_has_only_dc():
    img = np.full((16, 32, 3), 77, np.uint8)
    c = dsr.tile_dct(img)
    assert c.shape == (2, 16, 16)
    assert np.isclose(c[0, 0, 0], 16 * 77) and np.abs(c[:, 1:, :]).max() < 1e-9


def test_samples_per_pixel():
    assert dsr.samples_per_pixel(np.zeros(3600), 1196, 768) == 1.0
    assert dsr.samples_per_pixel(np.full(4, 1), 32, 32) == 0.25


def test_dsr_restarts_every_tile_at_a_camera_cut():
    from types import SimpleNamespace as NS

    flat = NS(colour=np.full((32, 48, 3), 90, np.uint8))
    frame = NS(width=48, height=32, tile=16, n_tiles=6)
    ctl = dsr.DSRController(dsr.DSRParams(reduce=((5, 2),) * 4, increase=((50, 2),) * 3), quality=False)

    def step(i, cut=False):
        ctx = NS(frame=frame, spec=NS(cut=cut), index=i, shared={})
        ctl.rate(ctx)
        ctl.update(ctx, flat)
        return ctl.table.state.tolist()

    assert [step(i) for i in range(3)][-1] == [3] * 6      # a flat picture: rates go down
    assert step(3, cut=True) == [1] * 6                     # the cut: one step from full rate


# --------------------------------------------------------------------------- quality
def test_mssim_identity_and_damage():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (64, 80, 3), dtype=np.uint8)
    assert quality.mssim(a, a) == pytest.approx(1.0)
    b = a.copy()
    b[:32] = 0
    assert quality.mssim(b, a) < 0.8
    assert quality.mssim(b, a, channel="rgb") < 0.8
    with pytest.raises(ValueError):
        quality.mssim(a[:10], a)


def test_fast_mssim_matches_scikit_image():
    rng = np.random.default_rng(5)
    a = rng.integers(0, 256, (70, 90, 3), dtype=np.uint8)
    for b in (np.clip(a.astype(int) + rng.integers(-30, 30, a.shape), 0, 255).astype(np.uint8),
              np.where(np.arange(90)[None, :, None] < 45, a // 2, a).astype(np.uint8)):
        assert quality.mssim(b, a) == pytest.approx(mssim_reference(b, a), abs=1e-5)


def test_blocked_luma_equals_the_numpy_expression():
    rng = np.random.default_rng(4)
    for shape in [(768, 1196, 3), (33, 17, 3), (7, 5, 4), (1, 3, 3), (65, 100, 3)]:
        a = rng.integers(0, 256, shape, dtype=np.uint8)
        assert np.array_equal(quality.luma(a), luma_numpy(a))
        f = a.astype(np.float64)
        assert np.array_equal(quality.luma(f), luma_numpy(f))


def test_fast_mssim_kernel_equals_plain_loops_bit_for_bit():
    # the vectorised kernels sum the same float32 products in the same order as the plain loops
    rng = np.random.default_rng(11)
    for shape in [(97, 131), (12, 13), (40, 11), (768, 1196)]:
        a = rng.integers(0, 256, shape + (3,), dtype=np.uint8)
        b = np.clip(a.astype(int) + rng.integers(-30, 30, a.shape), 0, 255).astype(np.uint8)
        b[: shape[0] // 3] = a[: shape[0] // 3]
        ya, yb = quality.luma(a), quality.luma(b)
        pa, pb = np.pad(ya, 5, mode="symmetric"), np.pad(yb, 5, mode="symmetric")
        none = np.zeros((1, 1), np.float32)
        assert quality._mssim(ya, yb, quality._K, 5, none) == \
            mssim_loops(pa, pb, quality._K, 5, none) == quality.mssim(a, b)
        m1, m2 = np.zeros(shape, np.float32), np.zeros(shape, np.float32)
        assert quality._mssim(ya, yb, quality._K, 5, m1) == \
            mssim_loops(pa, pb, quality._K, 5, m2)
        assert np.array_equal(m1, m2) and np.array_equal(quality.ssim_map(a, b), m2)


def test_mssim_same_bits_on_any_number_of_threads():
    # the report runs scenes on worker processes with fewer raster threads than the command
    rng = np.random.default_rng(5)
    a = rng.integers(0, 256, (768, 1196, 3), dtype=np.uint8)
    b = np.clip(a.astype(int) + rng.integers(-30, 30, a.shape), 0, 255).astype(np.uint8)
    before = numba.get_num_threads()
    try:
        values = []
        for n in sorted({1, 2, numba.config.NUMBA_NUM_THREADS}):
            numba.set_num_threads(n)
            values.append(quality.mssim(a, b))
    finally:
        numba.set_num_threads(before)
    assert len(set(values)) == 1


def test_ssim_map_matches_scikit_image_map():
    from skimage.metrics import structural_similarity

    rng = np.random.default_rng(9)
    a = rng.integers(0, 256, (40, 50, 3), dtype=np.uint8)
    b = np.clip(a.astype(int) + rng.integers(-40, 40, a.shape), 0, 255).astype(np.uint8)
    ref = structural_similarity(quality.luma(b).astype(np.float64), quality.luma(a).astype(np.float64),
                                data_range=255.0, gaussian_weights=True, sigma=1.5,
                                use_sample_covariance=False, full=True)[1]
    m = quality.ssim_map(b, a)
    assert np.allclose(m, ref, atol=1e-4)
    assert m[5:-5, 5:-5].mean() == pytest.approx(quality.mssim(b, a), abs=1e-6)
