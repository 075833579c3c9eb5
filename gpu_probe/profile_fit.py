"""Turn the experiments into a profile (paper 001 sec. 3.4) and check it against the counter.

:func:`fit_profile` reads the derived values of an :class:`~gpu_probe.experiments.ExperimentSuite`
and decides, without being told which GPU it is, ``MAX_SIZE``, ``MAX_UNIQUES`` and the memory
module:

0. extent: a draw that shades vertices it does not reference shades either the aligned groups
   of ``G`` vertex ids around its indices (``groups``, Mali Valhall) or its whole index range
   (``range``, Mali-400); neither takes batch bounds.
1. ``MAX_SIZE``: the longest ``{0,1,2}`` draw that costs 3 (staircase); 0 if none stepped.
   On llvmpipe this is the segment length (1023).
2. ``MAX_UNIQUES``: one less than the first ``N`` new vertices per batch that cost extra;
   ``MAX_SIZE`` when no limit shows (the paper's convention for AMD).  The triangle that
   overflows moves whole into the next batch (the mid-triangle cut of Algorithm 1, lines
   16-27); the reproduction of the ``uniques`` draws checks it.
3. memory: a *single* new vertex that evicts ``X`` exactly when ``d`` is a multiple of
   ``M`` means a direct-mapped table of ``M`` slots keyed by ``index mod M`` (``direct``);
   otherwise a look-back failure at distance ``n`` means ``lookback`` (``lookback_dx`` when it
   depends on the position mod 3); otherwise a failure after ``k`` distinct vertices means
   ``lru`` when a hit refreshes retention and ``fifo`` when it does not; otherwise nothing is
   forgotten within a batch.

:func:`reproduce` predicts every single draw of the experiments with a profile.  When the
decided profile does not reproduce them all, :func:`closest` tries every memory kind with the
sizes the experiments suggest (and the neighbourhood of the best); when none is exact the
counts fit no known kind and :func:`fit` says so, reporting the closest profile with its
error instead of a wrong profile.  :func:`verify` predicts random index buffers and real
meshes in several orders and compares with fresh counts from the same counter.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np

from meshopt_batch.model.prediction import predict
from meshopt_batch.model.profiles import MEMORY_KINDS, Profile
from meshopt_batch.support.errors import MeshoptBatchError

from .corpus import ORDERS, load_draws, ordered
from .counters import gl_counter
from .experiments import ExperimentSuite, random_buffer_set, run_experiments


def fit_profile(suite: ExperimentSuite, name: str = "fitted") -> tuple[Profile, list[str]]:
    """Decide a profile from the experiments' derived values.

    Parameters
    ----------
    suite : ExperimentSuite
        The experiments' results.
    name : str
        The fitted profile's name.

    Returns
    -------
    profile : Profile
        Batch bounds, memory kind and size, and the 2^16 rule as the experiments showed them.
    reasons : list of str
        One line per decision, naming the experiment and the value it showed.
    """
    d = suite.derived()
    why = []
    made = {"description": f"fitted by gpu_probe on {suite.renderer} ({suite.version})",
            "source": f"gpu_probe experiments, {suite.date}"}
    ext = d.get("extent", {})
    if ext.get("shades") == "range":
        why.append("memory = range: a draw shades every vertex from its smallest to its largest "
                   f"index (extent: (0, 1000, 2) shades {suite['extent'].measured[-4]}); the "
                   "triangle order does not matter, no batch bounds")
        return Profile(name, 0, 0, "range", 1, **made), why
    if ext.get("shades") == "groups":
        g = int(ext["group"])
        why.append(f"memory = groups of {g}: an index shades its aligned group of {g} vertex ids, "
                   f"once per draw (extent: (0, 0, 0) shades vertices 0-{g - 1}); the "
                   "triangle order does not matter, no batch bounds")
        return Profile(name, 0, 0, "groups", g, **made), why
    if ext.get("shades") == "other":
        why.append("extent: draws shade vertices they do not reference, in no known pattern")
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
        why.append(f"MAX_UNIQUES = {mu}: {mu + 1} new vertices per batch cost extra; the triangle "
                   "that overflows moves whole into the next batch")

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
    sixteen = bool(d.get("boundary_16bit", {}).get("differs", False))
    if sixteen:
        why.append("16-bit boundary: straddling 2^16 costs extra (boundary_16bit set)")
        bs = d.get("block_switch", {})
        if bs:
            why.append(f"  reuse within one block's run after a switch (A B B): {bs['reuse_after_switch']}; "
                       f"across a switch (A B A): {bs['reuse_across_switch']} (the +16bit rule: "
                       "True, False)")
    # counts that fit no known rule can suggest values no profile can take: keep them valid
    # (the reproduction then shows the error)
    ms, mu, size = (max(3, v) if v else 0 for v in (int(ms), int(mu), int(size)))
    prof = Profile(name, ms, mu, kind, max(1, size),
                   boundary_16bit=sixteen, **made)
    return prof, why


def reproduce(profile: Profile, suite: ExperimentSuite, stride: int = 1) -> dict:
    """Predict every draw the experiments made; per experiment: draws, mismatches, error.

    Only draws whose buffers are in memory (a suite from :func:`run_experiments`, not one
    read back from JSON) can be checked.  ``stride`` > 1 checks every stride-th draw only.
    """
    out = {}
    for name, exp in suite.experiments.items():
        if not exp.buffers:
            continue
        pred = np.array([predict(np.asarray(b).reshape(-1, 3), V, profile=profile).invocations
                         for b, V in zip(exp.buffers[::stride], exp.vertex_counts[::stride], strict=True)],
                        dtype=np.int64)
        meas = np.asarray(exp.totals[::stride], dtype=np.int64)
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


def verify(profile: Profile, counter=None, *, random_count: int = 120, seed: int = 99,
           meshes=(), orders=ORDERS) -> Verification:
    """Compare ``profile``'s predictions with fresh counts from ``counter``.

    Parameters
    ----------
    profile : Profile
        The profile checked.
    counter : counter, optional
        Where the counts come from (:mod:`gpu_probe.counters`); default this machine's GPU.
    random_count : int, keyword-only
        Random index buffers (:func:`gpu_probe.experiments.random_buffer_set`, ``seed``).
    seed : int, keyword-only
        Seed of the random buffers.
    meshes : iterable of paths, keyword-only
        Mesh files; every draw of each is checked in every order of ``orders``.
    orders : iterable of str, keyword-only
        Triangle orders of the mesh draws (``original``, ``shuffled``, ``optimized``).

    Returns
    -------
    Verification
        One row per draw: measured and predicted invocations.
    """
    counter = gl_counter() if counter is None else counter
    ver = Verification(profile.name)
    if random_count:
        bufs, specs = random_buffer_set(random_count, seed)
        V = max(s[1] for s in specs)
        tot, _, _ = counter.measure_many(bufs, V)
        for i, (b, (t, _, kind), m) in enumerate(zip(bufs, specs, tot, strict=True)):
            p = predict(b.reshape(-1, 3), V, profile=profile).invocations
            ver.rows.append({"case": f"random#{i}", "kind": f"random-{kind}", "order": "-",
                             "triangles": t, "measured": int(m), "predicted": int(p)})
    for path in meshes:
        for draw in load_draws(path):
            for order in orders:
                tri = ordered(draw, order)
                m = counter.measure(tri, draw.vertex_count, draw.index_dtype, per_vertex=False)
                p = predict(tri, draw.vertex_count, profile=profile).invocations
                ver.rows.append({"case": draw.name, "kind": "mesh", "order": order,
                                 "triangles": draw.triangle_count, "measured": m.invocations,
                                 "predicted": int(p)})
    return ver


@dataclass
class FitResult:
    """A fitted profile with the evidence for it.

    ``fits`` is False when no known memory kind reproduces every experiment draw; ``profile``
    is then the closest one (:func:`closest`), not a profile of this GPU.
    """

    profile: Profile
    reasons: list
    reproduction: dict
    verification: Verification | None
    renderer: str
    version: str
    date: str
    seconds: float
    refined_from: Profile | None = None
    fits: bool = True

    @property
    def exact(self) -> bool:
        rep = all(v["mismatches"] == 0 for v in self.reproduction.values())
        return rep and (self.verification is None or self.verification.exact)

    def error(self) -> dict:
        """How far the profile is from the experiment draws (all zero when it fits)."""
        return {"draws": sum(v["draws"] for v in self.reproduction.values()),
                "mismatches": sum(v["mismatches"] for v in self.reproduction.values()),
                "abs_error": _total_error(self.reproduction)}

    def to_dict(self) -> dict:
        return {
            "profile": self.profile.to_dict(), "exact": self.exact, "fits": self.fits,
            "error": self.error(), "reasons": self.reasons,
            "reproduction": self.reproduction,
            "verification": None if self.verification is None else self.verification.summary(),
            "renderer": self.renderer, "version": self.version, "date": self.date,
            "seconds": round(self.seconds, 3),
            "refined_from": None if self.refined_from is None else self.refined_from.to_dict(),
        }


def _total_error(rep: dict) -> int:
    return sum(v["abs_error"] for v in rep.values())


def _candidates(profile: Profile, suite: ExperimentSuite) -> list[Profile]:
    """Every memory kind with the size the experiments suggest for it, plus the decided
    profile's neighbourhood (memory size and ``MAX_UNIQUES`` within 2)."""
    d = suite.derived()
    sizes = {
        "lookback": d.get("lookback", {}).get("lookback") or 42,
        "lookback_dx": 44,
        "fifo": d.get("lru", {}).get("memory_size_if_lru") or 128,
        "lru": d.get("lru", {}).get("memory_size_if_lru") or 15,
        "direct": d.get("slot_conflicts", {}).get("direct_mapped_modulus") or 256,
        "groups": d.get("extent", {}).get("group") or 4,
        "range": 1,
    }
    ms, mu = profile.max_size, profile.max_uniques
    out = []
    for kind in MEMORY_KINDS:
        if kind in ("groups", "range"):
            out.append(replace(profile, max_size=0, max_uniques=0, memory=kind, memory_size=sizes[kind],
                               boundary_16bit=False))
        else:
            for u in dict.fromkeys((mu, ms)):
                out.append(replace(profile, max_uniques=u, memory=kind, memory_size=int(sizes[kind])))
    if not profile.order_free:
        for k in (-2, -1, 1, 2):
            out.append(replace(profile, memory_size=max(1, profile.memory_size + k)))
            if profile.max_uniques and profile.max_uniques + k >= 3:
                out.append(replace(profile, max_uniques=profile.max_uniques + k))
    return out


def closest(profile: Profile, suite: ExperimentSuite, shortlist: int = 3) -> tuple[Profile, dict]:
    """The candidate (:func:`_candidates`) that reproduces the experiment draws with the least
    total error, and its reproduction (the decided profile wins ties).  Candidates are ranked
    on every 8th draw first; the ``shortlist`` best are reproduced in full."""
    ranked = []
    for k, cand in enumerate(_candidates(profile, suite)):
        try:
            ranked.append((_total_error(reproduce(cand, suite, stride=8)), k, cand))
        except MeshoptBatchError:
            continue
    best, best_rep = profile, reproduce(profile, suite)
    for _, _, cand in sorted(ranked, key=lambda r: r[:2])[:shortlist]:
        if _total_error(best_rep) == 0:
            break
        rep = reproduce(cand, suite)
        if _total_error(rep) < _total_error(best_rep):
            best, best_rep = cand, rep
    return best, best_rep


def fit(suite: ExperimentSuite | None = None, *, counter=None, name: str = "fitted", meshes=(),
        random_count: int = 120, orders=ORDERS, do_refine: bool = True) -> FitResult:
    """Run (or take) the experiments, fit a profile, reproduce and verify it.

    Parameters
    ----------
    suite : ExperimentSuite, optional
        Experiments already run against ``counter`` (with their buffers in memory); run now
        when None.
    counter : counter, optional
        The counter of the experiments and of the verification (:mod:`gpu_probe.counters`);
        default this machine's GPU through OpenGL.
    meshes : iterable of paths
        Real meshes for the verification (every draw, every order in ``orders``).
    random_count : int
        Random buffers for the verification (0: none).
    do_refine : bool
        When the decided profile does not reproduce the experiments exactly, look for the
        closest known profile (:func:`closest`).
    """
    t0 = time.perf_counter()
    if suite is None:
        suite = run_experiments(counter)
    prof, why = fit_profile(suite, name)
    rep = reproduce(prof, suite)
    refined_from = None
    if do_refine and _total_error(rep):
        better, better_rep = closest(prof, suite)
        if better != prof:
            refined_from, prof, rep = prof, better, better_rep
            why.append(f"refined to max_uniques={prof.max_uniques}, memory={prof.memory} "
                       f"{prof.memory_size}: smaller error on the experiment draws")
    fits = _total_error(rep) == 0
    if not fits:
        bad = sum(v["mismatches"] for v in rep.values())
        why.append(f"no known memory kind reproduces every experiment draw: the closest is "
                   f"max_size={prof.max_size} max_uniques={prof.max_uniques} memory={prof.memory} "
                   f"{prof.memory_size}, off on {bad} of {sum(v['draws'] for v in rep.values())} "
                   f"draws by {_total_error(rep)} invocations in all")
    ver = None
    if random_count or meshes:
        ver = verify(prof, counter, random_count=random_count, meshes=meshes, orders=orders)
    return FitResult(prof, why, rep, ver, suite.renderer, suite.version, suite.date,
                     time.perf_counter() - t0, refined_from, fits)
