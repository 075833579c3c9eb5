"""The experiments + fit recover known profiles exactly from a simulated GPU (no GL needed).

A :class:`gpu_probe.counters.ModelCounter` answers every draw with Algorithm 1 under a
given profile; running the paper 001 sec. 3.3 experiments against it and fitting must give
back that profile's numbers, and the fitted profile must reproduce every draw.
"""

import pytest

from gpu_probe.counters import ModelCounter
from gpu_probe.experiments import run_experiments
from gpu_probe.profile_fit import fit_profile, reproduce
from meshopt_batch.model.profiles import Profile, get_profile

CASES = [
    "nvidia_gl",                                  # look-back 42, MAX_UNIQUES 32
    "nvidia_dx",                                  # 42 +- 3 depending on position mod 3
    "amd",                                        # 384 / LRU 15
    "llvmpipe",                                   # 1023 / direct-mapped 256
    "lru:15",                                     # global caches: no batches
    "fifo:20",
    Profile("odd", 300, 64, "lru", 20),           # a made-up GPU
]


@pytest.mark.parametrize("spec", CASES, ids=lambda s: s if isinstance(s, str) else s.name)
def test_fit_recovers_profile_from_simulated_gpu(spec):
    truth = get_profile(spec)
    suite = run_experiments(ModelCounter(truth))
    assert suite.renderer.startswith("simulated")
    fitted, reasons = fit_profile(suite, "fitted")
    want_mu = truth.max_uniques if truth.max_uniques else truth.max_size
    assert (fitted.max_size, fitted.max_uniques, fitted.memory, fitted.memory_size) == \
           (truth.max_size, want_mu, truth.memory, truth.memory_size), reasons
    rep = reproduce(fitted, suite)
    assert sum(v["mismatches"] for v in rep.values()) == 0
