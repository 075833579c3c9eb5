"""The portable order's window search: one compiled loop of local moves, judged on every profile.

* the compiled loop takes exactly the changes a plain Python loop over the same windows, moves
  and judge takes (a second implementation of the loop);
* the moves are meshoptimizer's order of the window (given from its first, middle or last
  triangle) and K-Cache's, with the window numbered compactly;
* every profile stays within its cap, the objective only falls, the work bound holds;
* "don't look" bits and early refusal save trials and simulation, not correctness;
* a move whose order passes the codec slack is undone and the search ends.
"""

from __future__ import annotations

import meshoptimizer
import numpy as np
import pytest

import meshes
from meshopt_batch import get_target
from meshopt_batch.optimizers.kcache import kcache_order
from meshopt_batch.optimizers.portable import optimize_for_target
from meshopt_batch.optimizers.portable.moves import FROM_END, FROM_FIRST, FROM_MIDDLE, KCACHE, local_order, move_buffers
from meshopt_batch.optimizers.portable.objective import score
from meshopt_batch.optimizers.portable.window_judge import accept, new_state, reject, trial, trial_order
from meshopt_batch.optimizers.portable.window_search import WindowSearch
from meshopt_batch.vertices.index_codec import codec_bits
from meshopt_batch.vertices.vertex_fetch import number_by_first_use
from meshopt_batch.vertices.vertex_set import judged


def _shuffled(mesh, seed=3):
    return np.asarray(mesh.triangles, np.int64)[np.random.default_rng(seed).permutation(mesh.triangle_count)]


def _sorted_corners(tris):
    return sorted(map(tuple, np.asarray(tris).tolist()))


def _meshoptimizer_of(window):
    """meshoptimizer's order of a window, its vertices numbered by sorting (np.unique)."""
    used, compact = np.unique(window, return_inverse=True)
    flat = np.ascontiguousarray(compact, np.uint32).reshape(-1)
    out = np.empty_like(flat)
    meshoptimizer.optimize_vertex_cache(out, flat, flat.size, used.shape[0])
    return used[out.astype(np.int64)].reshape(-1, 3)


def test_the_moves_are_meshoptimizers_order_of_the_window_given_three_ways_and_kcache():
    tris = _shuffled(meshes.torus(40, 20), 11)
    count = int(tris.max()) + 1
    buffers = move_buffers(count, 512)
    out = np.zeros((512, 3), np.int64)
    starts = np.random.default_rng(2).integers(0, tris.shape[0] - 600, 12)
    for start, width in zip(starts, (2, 3, 32, 96, 128, 512) * 2, strict=True):
        window = tris[start:start + width]
        given = {FROM_FIRST: window, FROM_MIDDLE: np.roll(window, -(width // 2), axis=0), FROM_END: window[::-1]}
        for move, shown in given.items():
            local_order(move, window, out[:width], buffers, 15)
            assert np.array_equal(out[:width], _meshoptimizer_of(shown))
        local_order(KCACHE, window, out[:width], buffers, 15)
        numbered, used = number_by_first_use(window, count)
        assert np.array_equal(out[:width], window[kcache_order(numbered, used.shape[0], 15)])
        assert _sorted_corners(out[:width]) == _sorted_corners(window)
        assert np.all(buffers[0] == -1)           # the numbering scratch is left as it was found


def _python_search(tris, vertex_count, profiles, reference, caps, windows, moves, rounds):
    """The search as a plain loop over the judge's functions (no "don't look" bits, every
    profile judged)."""
    state = new_state(tris, vertex_count, profiles)
    rank, count = trial_order(state), len(profiles)
    scale, no_caps = np.ones(count), np.full(count, np.inf)
    buffers, out = move_buffers(vertex_count, max(windows)), np.zeros((max(windows), 3), np.int64)
    current = score(state.totals, reference, 1.0)
    n = tris.shape[0]
    for move in moves:
        for _ in range(rounds):
            kept = 0
            for width in windows:
                for offset in (0, width // 2):
                    for start in range(offset, n, width):
                        stop = min(start + width, n)
                        if stop - start < 2:
                            continue
                        window = out[:stop - start]
                        local_order(move, state.order[start:stop], window, buffers, 15)
                        if np.array_equal(window, state.order[start:stop]):
                            continue
                        trial(state, window, start, stop, rank, scale, no_caps, np.inf)
                        got = score(state.pending, reference, 1.0)
                        if got < current and np.all(state.pending <= caps):
                            accept(state, window, start, stop)
                            current, kept = got, kept + 1
                        else:
                            reject(state)
            if not kept:
                break
    return state.order.copy(), state.totals.copy()


@pytest.mark.parametrize(("mesh", "target"), [(meshes.icosphere(2), "portable"),
                                              (meshes.torus(16, 10), "nvidia_gl,amd,intel"),
                                              (meshes.grid(14), "portable,fifo:16,lru:8")],
                         ids=["icosphere-portable", "torus-three", "grid-more-rules"])
def test_the_compiled_search_takes_the_changes_a_plain_loop_takes(mesh, target):
    tris = _shuffled(mesh)
    count = mesh.vertex_count
    profiles = get_target(target).evaluation_profiles(count)
    start = np.array(judged(number_by_first_use(tris, count)[0], count, get_target(target)), np.float64)
    reference, caps = start * 1.02, start * 1.01        # a little above the start may be taken
    windows, moves = (24, 16, 40), (FROM_FIRST, KCACHE, FROM_END)
    expected = _python_search(tris, count, profiles, reference, caps, windows, moves, 3)
    search = WindowSearch(tris, count, profiles, reference=reference, caps=caps, windows=windows, worst_weight=1.0,
                          kcache_size=15)
    search.run(moves, rounds=3, turns=1, work=10**12)
    assert np.array_equal(search.order, expected[0]) and np.array_equal(search.invocations, expected[1])
    assert search.kept > 0 and search.trials > search.kept
    assert np.array_equal(search.invocations,
                          judged(number_by_first_use(search.order, count)[0], count, get_target(target)))
    assert np.all(search.invocations <= caps) and score(search.invocations, reference, 1.0) < \
        score(start.astype(np.int64), reference, 1.0)
    assert _sorted_corners(search.order) == _sorted_corners(tris)


def test_dont_look_bits_and_early_refusal_save_work_and_keep_the_caps():
    mesh = meshes.torus(40, 20)
    tris = _shuffled(mesh)
    count = mesh.vertex_count
    target = get_target("portable")
    profiles = target.evaluation_profiles(count)
    start = np.array(judged(number_by_first_use(tris, count)[0], count, target), np.float64)
    runs = {}
    for margin, threshold in ((-1, np.inf), (128, np.inf), (128, 2.0)):
        search = WindowSearch(tris, count, profiles, reference=start, caps=start, windows=(128, 64, 32),
                              worst_weight=1.0, kcache_size=15, margin=margin, threshold=threshold)
        search.run((FROM_FIRST, KCACHE), rounds=6, turns=2, work=10**12)
        assert np.all(search.invocations <= start) and search.kept > 0
        assert np.array_equal(search.invocations, judged(number_by_first_use(search.order, count)[0], count, target))
        runs[margin, threshold] = search
    assert runs[128, np.inf].trials < runs[-1, np.inf].trials
    assert runs[128, 2.0].work < runs[128, np.inf].work


def test_the_work_bound_stops_the_search_where_it_says():
    mesh = meshes.torus(40, 20)
    tris = _shuffled(mesh)
    profiles = get_target("portable").evaluation_profiles(mesh.vertex_count)
    reference = np.array(judged(tris, mesh.vertex_count, get_target("portable")), np.float64)
    done = []
    for work in (0, 10_000, 100_000, 300_000):
        search = WindowSearch(tris, mesh.vertex_count, profiles, reference=reference, caps=reference * 2,
                              windows=(128, 64), worst_weight=1.0, kcache_size=15)
        search.run((FROM_FIRST,), rounds=8, turns=1, work=work)
        assert search.work <= work + 6_000        # the trial that passed the bound
        done.append((search.work, search.kept))
    assert done[0] == (0, 0) and done[1][1] <= done[2][1] <= done[3][1]


def test_a_move_past_the_codec_slack_is_undone(monkeypatch):
    import meshopt_batch.optimizers.portable.objective as objective
    import meshopt_batch.optimizers.portable.portable_optimizer as optimizer
    mesh = meshes.torus(60, 30)
    tris = _shuffled(mesh)
    monkeypatch.setattr(optimizer, "CODEC_SLACK", 0.5)  # no reordered window can be that small
    monkeypatch.setattr(objective, "CODEC_SLACK", 0.5)
    res = optimize_for_target(tris, mesh.vertex_count, target=get_target("portable"))
    assert res.stats["candidate"] == "meshoptimizer"
    assert all(s["kept"] == 0 for s in res.stats["searches"])
    assert not any(" + " in name for name in res.stats["candidates"])
    # where the input binds (rows Intel's FIFO shades once per vertex), the choice takes the best
    # order no worse than the input whatever its codec size, and so does the search
    grid = meshes.grid(48)
    res = optimize_for_target(grid.triangles, grid.vertex_count, target=get_target("portable"))
    assert res.stats["candidate"].endswith(" + search")
    assert codec_bits(res.triangles).raw > 0


def test_of_a_move_past_the_codec_limit_the_first_changes_within_it_are_kept():
    # from meshoptimizer's order the windows trade index-codec size for invocations
    mesh = meshes.torus(40, 20)
    count = mesh.vertex_count
    tris = _meshoptimizer_of(_shuffled(mesh))
    target = get_target("portable")
    start = np.array(judged(number_by_first_use(tris, count)[0], count, target), np.float64)

    def search(refuse=None):
        found = WindowSearch(tris, count, target.evaluation_profiles(count), reference=start, caps=start,
                             windows=(128, 64, 32), worst_weight=1.0, kcache_size=15, refuse=refuse)
        found.run((FROM_FIRST, KCACHE), rounds=4, turns=1, work=10**12)
        return found

    free = search()
    before, after = codec_bits(tris, count).raw, codec_bits(free.order, count).raw
    assert after > before
    limit = (before + after) / 2

    def too_large(order):
        return codec_bits(order, count).raw > limit

    bounded = search(too_large)
    assert 0 < bounded.kept < free.kept
    assert codec_bits(bounded.order, count).raw <= limit
    assert np.array_equal(bounded.invocations, judged(number_by_first_use(bounded.order, count)[0], count, target))
    assert np.all(bounded.invocations <= start)
