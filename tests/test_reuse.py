"""Algorithm 1 of paper 001: the paper's own experiments and a reference implementation."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_batching import LookbackDX, reference_predict

from meshopt_batch.model.prediction import predict
from meshopt_batch.model.profiles import Profile, get_profile
from meshopt_batch.model.reuse_kernels import dx_reach
from meshopt_batch.support.errors import MeshoptBatchError


def repeating_012(n_indices):
    return np.tile(np.arange(3), n_indices // 3).reshape(-1, 3)


@pytest.mark.parametrize("profile, max_size", [("nvidia_gl", 96), ("nvidia_dx", 96), ("amd", 384)])
def test_staircase_three_invocations_per_batch(profile, max_size):
    # paper 001 Fig. 1 / sec. 3.3: {0,1,2,...} costs 3 per MAX_SIZE indices
    for batches in range(1, 6):
        for extra in (0, 3):
            n = batches * max_size + extra
            pred = predict(repeating_012(n), profile=profile)
            expected_batches = batches + (1 if extra else 0)
            assert pred.batches == expected_batches
            assert pred.invocations == 3 * expected_batches


def test_global_caches_shade_repeating_triangle_once():
    for profile in ("intel", "fifo:3", "lru:3", "fifo:128"):
        assert predict(repeating_012(3000), profile=profile).invocations == 3


def max_uniques_buffer(n, max_size=96):
    """Paper 001 sec. 3.3: N increasing indices, then triplets {N-4, N-3, N-2} up to MAX_SIZE."""
    seq = list(range(n))
    while len(seq) < max_size:
        seq += [n - 4, n - 3, n - 2]
    return np.array(seq[:max_size]).reshape(-1, 3)


def test_max_uniques_33_experiment():
    for n in range(6, 33, 3):
        pred = predict(max_uniques_buffer(n), profile="nvidia_gl")
        assert (pred.invocations, pred.batches) == (n, 1)
    # N = 33: the 11th triangle would be the 33rd unique vertex, so it opens a new batch
    # where {30, 31, 32} and then 29 are shaded again: one invocation more than N
    pred = predict(max_uniques_buffer(33), profile="nvidia_gl", return_batches=True)
    assert pred.batches == 2
    assert list(pred.batch_starts) == [0, 10]
    assert pred.invocations == 33 + 1


def lookback_buffer(i, n, length=96):
    seq = np.tile(np.arange(3), length // 3)
    seq[i] = 7
    seq[i + n] = 7
    return seq.reshape(-1, 3)


@pytest.mark.parametrize("i", range(6))
def test_lookback_gl(i):
    # look-back of 42 index positions: reuse at distance 41 and 42, none at 43
    for n, reused in ((40, True), (41, True), (42, True), (43, False), (44, False)):
        pred = predict(lookback_buffer(i, n), profile="nvidia_gl")
        assert pred.invocations == (4 if reused else 5), (i, n)


@pytest.mark.parametrize("i", range(6))
def test_lookback_dx_position_mod_3(i):
    for n in range(36, 50):
        reused = LookbackDX.rule(n, i % 3)
        pred = predict(lookback_buffer(i, n), profile="nvidia_dx")
        assert pred.invocations == (4 if reused else 5), (i, n)


def lru_buffer(between):
    seq = [100] + list(range(between)) + [100]
    while len(seq) % 3:
        seq.append(100)
    return np.array(seq).reshape(-1, 3)


def test_amd_lru_15():
    # paper 001 sec. 3.3: no reuse across more than 14 distinct vertices on AMD
    assert predict(lru_buffer(14), profile="amd").invocations == 15
    assert predict(lru_buffer(15), profile="amd").invocations == 17
    assert predict(lru_buffer(30), profile="amd").invocations == 32


def test_metrics_and_batches():
    tris = np.array([[0, 1, 2], [2, 1, 3], [0, 0, 4]])
    pred = predict(tris, profile="fifo:16")
    assert pred.invocations == 5 and pred.vertices == 5 and pred.triangles == 3
    assert pred.asr == pytest.approx(5 / 3) and pred.acmr == pred.asr and pred.atvr == 1.0


def test_16bit_boundary_option():
    low = np.array([65534, 65535, 65533] * 10).reshape(-1, 3)
    mixed = np.array([65534, 65535, 65536] * 10).reshape(-1, 3)
    assert predict(low, profile="nvidia_gl+16bit").invocations == 3
    assert predict(mixed, profile="nvidia_gl").invocations == 3
    assert predict(mixed, profile="nvidia_gl+16bit").invocations > 3


def test_uint16_and_uint32_agree():
    rng = np.random.default_rng(3)
    tris = rng.integers(0, 500, size=(2000, 3))
    for profile in ("nvidia_gl", "amd", "fifo:32"):
        a = predict(tris.astype(np.uint16), profile=profile).invocations
        b = predict(tris.astype(np.uint32), profile=profile).invocations
        assert a == b


def test_bad_input():
    with pytest.raises(MeshoptBatchError):
        predict(np.array([[0, 1, 5]]), profile="nvidia_gl", vertex_count=3)
    with pytest.raises(MeshoptBatchError):
        predict(np.array([0, 1]), profile="nvidia_gl")
    with pytest.raises(MeshoptBatchError):
        predict(np.array([[0, 1, 2]]), profile="nvidia_xx")


def test_empty():
    pred = predict(np.zeros((0, 3), np.uint32), profile="nvidia_gl")
    assert pred.invocations == 0 and pred.asr == 0.0


SMALL_BATCHES = [
    Profile("tiny_lookback", 12, 5, "lookback", 4),
    Profile("tiny_dx", 18, 7, "lookback_dx", 44),
    Profile("tiny_lru", 9, 9, "lru", 3),
    Profile("tiny_direct", 15, 6, "direct", 4),
    Profile("tiny_fifo", 0, 4, "fifo", 2),
    Profile("odd_size", 10, 0, "lru", 2),
]
ALL_PROFILES = [get_profile(p) for p in ("nvidia_gl", "nvidia_dx", "amd", "intel", "fifo:5", "lru:4",
                                         "nvidia_gl+16bit")] + SMALL_BATCHES


@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_fast_predictor_matches_reference(data):
    profile = data.draw(st.sampled_from(ALL_PROFILES))
    n_vertices = data.draw(st.integers(1, 60))
    base = data.draw(st.sampled_from([0, 65520])) if profile.boundary_16bit else 0
    indices = data.draw(st.lists(st.integers(0, n_vertices - 1), min_size=0, max_size=300))
    indices = [base + v for v in indices[: len(indices) // 3 * 3]]
    expected, starts = reference_predict(indices, profile)
    pred = predict(np.array(indices, dtype=np.int64).reshape(-1, 3), profile=profile, return_batches=True)
    assert pred.invocations == expected
    assert list(pred.batch_starts) == starts


def test_per_vertex_counts_sum_to_invocations():
    rng = np.random.default_rng(0)
    tris = rng.integers(0, 200, size=(3000, 3))
    for profile in ALL_PROFILES:
        pred = predict(tris, profile=profile, per_vertex=True)
        assert pred.shaded_per_vertex.sum() == pred.invocations


# -- the compiled kernels, one per memory kind (issue 16 item 3) --------------------------------

LARGE_WINDOWS = [Profile("lru_big", 0, 0, "lru", 40), Profile("fifo_big", 0, 0, "fifo", 40),
                 Profile("direct_odd", 30, 12, "direct", 7), Profile("direct_pow2", 0, 0, "direct", 8),
                 Profile("lookback_1", 9, 4, "lookback", 1), Profile("lru_1", 12, 5, "lru", 1),
                 Profile("fifo_16bit", 15, 6, "fifo", 3, True), Profile("lru_16bit", 0, 0, "lru", 4, True),
                 Profile("direct_16bit", 21, 9, "direct", 5, True),
                 Profile("dx_16bit", 96, 32, "lookback_dx", 44, True)]


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_kernels_match_reference_with_per_vertex_counts(data):
    profile = data.draw(st.sampled_from(ALL_PROFILES + LARGE_WINDOWS))
    n_vertices = data.draw(st.integers(1, 80))
    base = data.draw(st.sampled_from([0, 65500])) if profile.boundary_16bit else 0
    indices = data.draw(st.lists(st.integers(0, n_vertices - 1), min_size=0, max_size=400))
    indices = [base + v for v in indices[: len(indices) // 3 * 3]]
    expected, starts = reference_predict(indices, profile)
    for dtype in (np.int64, np.uint32):
        pred = predict(np.array(indices, dtype=dtype).reshape(-1, 3), profile=profile, return_batches=True,
                       per_vertex=True)
        assert pred.invocations == expected
        assert list(pred.batch_starts) == starts
        assert pred.shaded_per_vertex.sum() == expected
        assert pred.vertices == len(set(indices))


def test_lru_kernel_keeps_recency_order():
    # LRU of 3: 0 1 2, hit 0 (now most recent), 3 evicts 1, then 1 misses and 0 hits
    tris = np.array([[0, 1, 2], [0, 3, 3], [1, 0, 0]])
    pred = predict(tris, profile=Profile("lru3", 0, 0, "lru", 3), per_vertex=True)
    assert pred.invocations == 5
    assert pred.shaded_per_vertex.tolist() == [1, 2, 1, 1]


def test_dx_reach_is_the_position_rule():
    # reach[3 i + r]: index i of a triangle reuses a position with residue r up to this distance
    assert dx_reach().tolist() == [42, 38, 37, 43, 42, 41, 44, 40, 42]
    for i in range(3):
        for r in range(3):
            for d in range(1, 60):
                if (d - (i - r)) % 3 == 0:
                    assert (d <= dx_reach()[3 * i + r]) == LookbackDX.rule(d, r), (i, r, d)


def test_aligned_groups_and_whole_range():
    groups = Profile("mali", 0, 0, "groups", 4)
    pred = predict(np.array([[0, 7, 15]]), 20, profile=groups, per_vertex=True)
    assert pred.invocations == 12                      # vertices 0-7 and 12-15 (issue 18)
    assert np.flatnonzero(pred.shaded_per_vertex).tolist() == list(range(8)) + list(range(12, 16))
    assert predict(np.array([[0, 7, 17]]), 18, profile=groups).invocations == 10   # 16-17 exist
    whole = Profile("mali400", 0, 0, "range", 1)
    assert predict(np.array([[0, 1000, 2]]), profile=whole).invocations == 1001
    shuffled = np.random.default_rng(1).permutation(np.arange(300).reshape(-1, 3))
    assert predict(shuffled, profile=groups).invocations == 300
    assert predict(shuffled[::-1], profile=whole).invocations == 300
    with pytest.raises(MeshoptBatchError):
        Profile("bad", 96, 32, "groups", 4)
