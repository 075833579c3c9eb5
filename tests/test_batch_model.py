"""The batch optimizer's own invocation count equals the predictor's on its output (issue 16
item 5), for every profile.

The optimizer closes a batch when its chosen triangle does not fit.  The GPU, however, keeps
filling a batch while triangles fit (Algorithm 1), so when the first triangle chosen after a
close still fits the closed batch, the optimizer must put it there too; it did not, and counted
one invocation less than the predictor (a fuzz run: nvidia_dx 1,065 vs 1,066).
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meshopt_batch.model.prediction import predict
from meshopt_batch.model.profiles import Profile, get_profile
from meshopt_batch.optimizers.batch import optimize_batch

# Direct-mapped profiles (llvmpipe) are optimized for a look-back stand-in and then renumbered
# so that each segment's vertices take distinct slots; their count equals the prediction where
# that renumbering succeeds (every shared mesh), not on soups with more vertices per segment
# than slots, so they are not in this list.
PROFILES = [get_profile(p) for p in ("nvidia_gl", "nvidia_dx", "amd", "intel", "fifo:5", "lru:4",
                                     "nvidia_gl+16bit")] + [
    Profile("tiny_lookback", 12, 5, "lookback", 4),
    Profile("tiny_dx", 18, 7, "lookback_dx", 44),
    Profile("tiny_lru", 9, 9, "lru", 3),
    Profile("tiny_fifo", 21, 6, "fifo", 4),
    Profile("groups", 0, 0, "groups", 4),
    Profile("range", 0, 0, "range", 1),
]


def _random_mesh(seed):
    rng = np.random.default_rng(seed)
    vertex_count = int(rng.integers(20, 400))
    count = int(rng.integers(50, 700))
    return rng.integers(0, vertex_count, size=(count, 3)), vertex_count


def _check(tris, vertex_count, profile):
    res = optimize_batch(tris, vertex_count, profile=profile)
    pred = predict(res.triangles, len(res.vertex_remap), profile=profile, return_batches=True)
    assert res.stats["model_invocations"] == pred.invocations == res.stats["invocations"]
    assert res.stats["model_batches"] == pred.batches
    assert np.array_equal(res.batch_starts, pred.batch_starts)
    return res


@pytest.mark.parametrize("profile, invocations", [("nvidia_dx", 1023), ("nvidia_gl", 998)])
def test_batch_reopened_when_the_next_triangle_still_fits(profile, invocations):
    # seed 100: 592 random triangles over 311 vertices; the optimizer used to count 1,022
    # (nvidia_dx) and 997 (nvidia_gl), one less than the predictor on its own output
    tris, vertex_count = _random_mesh(100)
    assert (vertex_count, len(tris)) == (311, 592)
    res = _check(tris, vertex_count, profile)
    assert res.stats["invocations"] == invocations


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_optimizer_count_equals_prediction(data):
    profile = data.draw(st.sampled_from(PROFILES))
    vertex_count = data.draw(st.integers(3, 120))
    count = data.draw(st.integers(1, 250))
    seed = data.draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    if data.draw(st.booleans()):
        tris = rng.integers(0, vertex_count, size=(count, 3))
    else:  # mesh-like locality: a random walk over the vertex ids
        walk = np.cumsum(rng.integers(-2, 4, size=3 * count)) % vertex_count
        tris = ((walk + rng.integers(-6, 7, size=3 * count)) % vertex_count).reshape(-1, 3)
    _check(tris, vertex_count, profile)


def test_order_free_profiles_keep_the_input_order():
    tris = np.array([[0, 7, 15], [1, 2, 3]])
    res = optimize_batch(tris, 20, profile=Profile("groups", 0, 0, "groups", 4))
    assert np.array_equal(res.triangles, tris)
    assert res.stats["invocations"] == 12          # vertices 0-7 and 12-15


@pytest.mark.parametrize("profile", ["nvidia_gl+16bit", "nvidia_dx+16bit", "amd+16bit", "fifo:5+16bit",
                                     "lru:4+16bit"])
def test_block_rule_model_matches_predictor_across_2_16(profile):
    """With the fix off the optimizer counts under the ``+16bit`` rule itself: every block
    switch empties its memory exactly as the predictor's kernels do."""
    for seed in range(8):
        rng = np.random.default_rng(seed)
        n = int(rng.integers(20, 300))
        tris = rng.integers(0, n, size=(int(rng.integers(30, 500)), 3)) + (65536 - n // 2)
        res = optimize_batch(tris, 65536 + n, profile=get_profile(profile), fix_16bit=False)
        pred = predict(res.triangles, 65536 + n, profile=profile, return_batches=True)
        assert res.stats["model_invocations"] == pred.invocations == res.stats["invocations"]
        assert np.array_equal(res.batch_starts, pred.batch_starts)
