"""Turn the experiments into a profile (paper 001 sec. 3.4) and check it against the GPU.

:func:`fit_profile` reads the derived values of an :class:`~gpu_probe.experiments.ExperimentSuite`
and decides ``MAX_SIZE``, ``MAX_UNIQUES`` and the memory module:

1. ``MAX_SIZE``: the longest ``{0,1,2}`` draw that costs 3 (staircase); 0 if none stepped.
2. ``MAX_UNIQUES``: one less than the first ``N`` new vertices per batch that cost extra;
   ``MAX_SIZE`` when no limit shows (the paper's convention for AMD).
3. memory: a *single* new vertex that evicts ``X`` exactly when ``d`` is a multiple of
   ``M`` means a direct-mapped table of ``M`` slots (``direct``); otherwise a look-back
   failure at distance ``n`` means ``lookback`` (``lookback_dx`` when it depends on the
   position mod 3); otherwise a failure after ``k`` distinct vertices means ``lru`` when a
   hit refreshes retention and ``fifo`` when it does not; otherwise nothing is forgotten
   within a batch.

:func:`reproduce` predicts every single draw of the experiments with a profile;
:func:`verify` predicts random index buffers and real meshes in several orders and
compares with fresh measurements. :func:`fit` does all three and, with ``refine``, searches
the neighbourhood of the fitted numbers for a profile with smaller error.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field, replace

import numpy as np

from meshopt_batch.profiles import Profile
from meshopt_batch.reuse import predict

from .corpus import ORDERS, load_draws, ordered
from .experiments import ExperimentSuite, random_buffer_set, run_experiments
from .invocations import measure_invocations, prober


def fit_profile(suite: ExperimentSuite, name: str = "fitted") -> tuple[Profile, list[str]]:
    """Decide a profile from the experiments' derived values.

    Returns
    -------
    profile : Profile
    reasons : list of str
        One line per decision, naming the experiment and the value it showed.
    """
    d = suite.derived()
    why = []
    ms = d["staircase"].get("max_size")
    if ms is None:
        ms = 0
        why.append("MAX_SIZE: no step in the {0,1,2} staircase -> unbounded (0)")
    else:
        why.append(f"MAX_SIZE = {ms}: the {{0,1,2}} staircase steps at "
                   f"{suite['staircase'].steps[:4]} (period {d['staircase'].get('step_period')})")
        if "batch_triplets" in d:
            ok = d["batch_triplets"].get("max_size_confirmed")
            why.append(f"  batches of {ms} indices, each its own triplet, cost 3 each: {ok}")
    mu = d.get("uniques", {}).get("max_uniques")
    if mu is None:
        mu = ms
        why.append(f"MAX_UNIQUES = MAX_SIZE = {ms}: no extra invocation for up to {ms} new "
                   "vertices per batch")
    else:
        why.append(f"MAX_UNIQUES = {mu}: {mu + 1} new vertices per batch cost extra")

    kind, size = None, None
    sc = d.get("slot_conflicts", {})
    lb = d.get("lookback", {})
    lr = d.get("lru", {})
    rf = d.get("refresh", {})
    if sc.get("direct_mapped_modulus"):
        kind, size = "direct", int(sc["direct_mapped_modulus"])
        why.append(f"memory = direct, {size} slots: one vertex X+d evicts X exactly for "
                   f"d in {sc['evicting_offsets'][:8]} (multiples of {size})")
    elif lb.get("lookback") is not None:
        if lb.get("same_for_all_residues", True):
            kind, size = "lookback", int(lb["lookback"])
            why.append(f"memory = lookback {size}: reuse fails from distance {size + 1}")
        else:
            firsts = [v for v in lb["first_failure"].values() if v]
            kind, size = "lookback_dx", int(max(firsts) - 1)
            why.append(f"memory = lookback_dx: first failures {lb['first_failure']} depend "
                       "on the position mod 3")
    elif lr.get("memory_size_if_lru") is not None:
        k_lru = lr["first_failure_k"]
        k_ref = rf.get("first_failure_k")
        size = int(lr["memory_size_if_lru"])
        if k_ref is not None and k_ref < 0.75 * k_lru:
            kind = "fifo"
            why.append(f"memory = fifo {size}: X forgotten after {k_lru} new vertices, and a "
                       f"hit does not refresh it (fails at k={k_ref} with a hit midway)")
        else:
            kind = "lru"
            why.append(f"memory = lru {size}: X forgotten after {k_lru} new vertices (+2 "
                       "refreshed); a hit refreshes it")
    else:
        kind, size = "lru", max(mu, ms, 1)
        why.append("memory: nothing forgotten within a batch -> lru as large as the batch")
    if d.get("boundary_16bit", {}).get("differs"):
        why.append("16-bit boundary: straddling 2^16 costs extra (boundary_16bit set)")
    prof = Profile(name, int(ms), int(mu), kind, int(size),
                   boundary_16bit=bool(d.get("boundary_16bit", {}).get("differs", False)),
                   description=f"fitted by gpu_probe on {suite.renderer} ({suite.version})",
                   source=f"gpu_probe experiments, {suite.date}")
    return prof, why


def reproduce(profile: Profile, suite: ExperimentSuite) -> dict:
    """Predict every draw the experiments made; per experiment: draws, mismatches, error.

    Only draws whose buffers are in memory (a suite from :func:`run_experiments`, not one
    read back from JSON) can be checked.
    """
    out = {}
    for name, exp in suite.experiments.items():
        if not exp.buffers:
            continue
        pred = np.array([predict(np.asarray(b).reshape(-1, 3), V, profile=profile).invocations
                         for b, V in zip(exp.buffers, exp.vertex_counts)], dtype=np.int64)
        meas = np.asarray(exp.totals, dtype=np.int64)
        bad = np.nonzero(pred != meas)[0]
        out[name] = {
            "draws": int(meas.size),
            "mismatches": int(bad.size),
            "abs_error": int(np.abs(pred - meas).sum()),
            "first_mismatches": [{"draw": int(i), "measured": int(meas[i]),
                                  "predicted": int(pred[i])} for i in bad[:5]],
        }
    return out


@dataclass
class Verification:
    """Predicted vs measured invocations on random buffers and meshes."""

    profile: str
    rows: list = field(default_factory=list)

    @property
    def exact(self) -> bool:
        return all(r["measured"] == r["predicted"] for r in self.rows)

    @property
    def mismatches(self) -> int:
        return sum(r["measured"] != r["predicted"] for r in self.rows)

    @property
    def mse_asr(self) -> float:
        errs = [(r["measured"] - r["predicted"]) / max(r["triangles"], 1) for r in self.rows]
        return float(np.mean(np.square(errs))) if errs else 0.0

    @property
    def max_abs_error(self) -> int:
        return max((abs(r["measured"] - r["predicted"]) for r in self.rows), default=0)

    def summary(self) -> dict:
        return {"profile": self.profile, "cases": len(self.rows), "exact": self.exact,
                "mismatches": self.mismatches, "max_abs_error": self.max_abs_error,
                "mse_asr": self.mse_asr}

    def to_dict(self) -> dict:
        return {**self.summary(), "rows": self.rows}


def verify(profile: Profile, *, random_count: int = 120, seed: int = 99, meshes=(),
           orders=ORDERS, random_measured: dict | None = None) -> Verification:
    """Compare ``profile``'s predictions with measurements on this GPU.

    Parameters
    ----------
    random_count : int
        Random index buffers (:func:`gpu_probe.experiments.random_buffer_set`, ``seed``).
    meshes : iterable of paths
        Mesh files; every draw of each is checked in every order of ``orders``.
    """
    ver = Verification(profile.name)
    if random_count:
        bufs, specs = random_buffer_set(random_count, seed)
        V = max(s[1] for s in specs)
        tot, _, _ = prober().measure_many(bufs, V)
        for i, (b, (t, w, kind), m) in enumerate(zip(bufs, specs, tot)):
            p = predict(b.reshape(-1, 3), V, profile=profile).invocations
            ver.rows.append({"case": f"random#{i}", "kind": f"random-{kind}", "order": "-",
                             "triangles": t, "measured": int(m), "predicted": int(p)})
    for path in meshes:
        for draw in load_draws(path):
            for order in orders:
                tri = ordered(draw, order)
                m = measure_invocations(tri, draw.vertex_count, draw.index_dtype,
                                        per_vertex=False)
                p = predict(tri, draw.vertex_count, profile=profile).invocations
                ver.rows.append({"case": draw.name, "kind": "mesh", "order": order,
                                 "triangles": draw.triangle_count, "measured": m.invocations,
                                 "predicted": int(p)})
    return ver


@dataclass
class FitResult:
    """A fitted profile with the evidence for it."""

    profile: Profile
    reasons: list
    reproduction: dict
    verification: Verification | None
    renderer: str
    version: str
    date: str
    seconds: float
    refined_from: Profile | None = None

    @property
    def exact(self) -> bool:
        rep = all(v["mismatches"] == 0 for v in self.reproduction.values())
        return rep and (self.verification is None or self.verification.exact)

    def to_dict(self) -> dict:
        return {
            "profile": self.profile.to_dict(), "exact": self.exact, "reasons": self.reasons,
            "reproduction": self.reproduction,
            "verification": None if self.verification is None else self.verification.summary(),
            "renderer": self.renderer, "version": self.version, "date": self.date,
            "seconds": round(self.seconds, 3),
            "refined_from": None if self.refined_from is None else self.refined_from.to_dict(),
        }


def _total_error(rep: dict) -> int:
    return sum(v["abs_error"] for v in rep.values())


def refine(profile: Profile, suite: ExperimentSuite, radius: int = 2) -> Profile:
    """Search ``MAX_UNIQUES`` and the memory size within ``radius`` (and every memory kind)
    for the profile that reproduces the experiment draws with the least total error."""
    best, best_err = profile, _total_error(reproduce(profile, suite))
    if best_err == 0:
        return profile
    mus = sorted({max(3, profile.max_uniques + k) for k in range(-radius, radius + 1)}
                 | {0, profile.max_size})
    sizes = sorted({max(1, profile.memory_size + k) for k in range(-radius, radius + 1)})
    kinds = ("fifo", "lookback", "lookback_dx", "lru", "direct")
    for mu, kind, size in itertools.product(mus, kinds, sizes):
        cand = replace(profile, max_uniques=mu, memory=kind, memory_size=size)
        err = _total_error(reproduce(cand, suite))
        if err < best_err:
            best, best_err = cand, err
            if err == 0:
                break
    return best


def fit(suite: ExperimentSuite | None = None, *, name: str = "fitted", meshes=(),
        random_count: int = 120, orders=ORDERS, do_refine: bool = True) -> FitResult:
    """Run (or take) the experiments, fit a profile, reproduce and verify it.

    Parameters
    ----------
    suite : ExperimentSuite, optional
        Experiments already run (with their buffers in memory); run now when None.
    meshes : iterable of paths
        Real meshes for the verification (every draw, every order in ``orders``).
    random_count : int
        Random buffers for the verification (0: none).
    do_refine : bool
        When the fitted profile does not reproduce the experiments exactly, search nearby
        profiles (:func:`refine`).
    """
    t0 = time.perf_counter()
    if suite is None:
        suite = run_experiments()
    prof, why = fit_profile(suite, name)
    rep = reproduce(prof, suite)
    refined_from = None
    if do_refine and _total_error(rep):
        better = refine(prof, suite)
        if better != prof:
            refined_from, prof = prof, better
            rep = reproduce(prof, suite)
            why.append(f"refined to max_uniques={prof.max_uniques}, memory={prof.memory} "
                       f"{prof.memory_size}: smaller error on the experiment draws")
    ver = None
    if random_count or meshes:
        ver = verify(prof, random_count=random_count, meshes=meshes, orders=orders)
    return FitResult(prof, why, rep, ver, suite.renderer, suite.version, suite.date,
                     time.perf_counter() - t0, refined_from)
