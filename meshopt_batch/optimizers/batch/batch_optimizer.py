"""Batch-based mesh optimization: paper 001 (Kerbl et al. 2018), Algorithm 2.

The optimizer grows one GPU batch at a time.  Every remaining triangle has the priority of
eq. 1,

    p = k_r R + k_v V + k_d D + k_n N,

with ``R`` the number of its vertices the target profile's memory module can still reuse in
the current batch, ``V`` the sum of its vertices' remaining valences, ``D`` the sum of its
dual-graph distances to the faces of the current batch, and ``N`` the batch-neighbourhood
term.  The highest-priority triangle is emitted when the batch predictor (Algorithm 1, the
very functions of :mod:`meshopt_batch.model.prediction`) says it fits in the current batch; otherwise
the batch is closed, the ``R`` and ``D`` terms are removed, ``N`` is added, and the next batch
starts wherever the queue's top then is (the "jump" of paper sec. 4).

Coefficients (eq. 2; the paper prints ``k_c = 1024``, which is ``k_r``):
``k_r = 1024, k_v = -4, k_d = -1, k_n = -1``; the faster variant without ``D`` uses
``k_v = k_n = -3``.

Priority queue
--------------
The paper uses a Fibonacci heap with increase- and decrease-key.  Every priority change here
is a signed integer delta, and the queue order is the total order

    key(t) = (p(t), stamp(t))   -- larger first,

where ``stamp`` is a global counter incremented at every insertion and every priority change
(initial insertion runs from the last triangle to the first, so among equal initial
priorities the lowest triangle index comes first; later, among equal priorities, the most
recently changed triangle comes first, which keeps batches local).  Because keys are unique,
*any* correct priority queue returns the same top and the optimizer is deterministic:

* ``queue="fibheap"`` (:mod:`.fibheap_reference`) runs the driver loop in plain Python on the
  ``fibheap`` package's Fibonacci heap (decrease-key native, increase-key as delete +
  re-insert) -- the reference for small meshes;
* ``queue="fast"`` (default) runs the same loop compiled with numba on an exact *bucket
  queue*: one doubly linked list per integer priority, newest at the head, and a bitmap of
  the non-empty buckets (64 per word) to find the highest one.  Increase-key, decrease-key
  and delete are O(1); finding the top scans the bitmap down from the last top.  Its pop
  order is the key order above, i.e. identical to the Fibonacci heap's (this replaces a
  numba Fibonacci heap: same order, less work per update).  Priorities must therefore be
  integers (eq. 2's are).

Both drivers call the same compiled step functions
(:func:`~.select.select_triangle`, :func:`~.steps.emit_triangle`,
:func:`~.steps.close_batch`); a step produces the list of priority changes
``(face, delta)`` (one merged change per face, in order of first touch) which the driver
applies to its queue.

Details the paper leaves open (documented choices; see ``options``)
--------------------------------------------------------------------
* "Can add this triangle?" runs Algorithm 1's boundary test for the triangle on the live
  memory state and rolls the state back (for look-back retention the lookups are pure and
  nothing needs rolling back).  The triangle is written with the cyclic rotation (winding
  preserved) that adds the fewest new vertices (``rotate=True``; ``rotate=False`` keeps every
  triangle's vertex order, hence its provoking vertex).  The optimizer's batches are exactly
  the predictor's: its invocation count equals :func:`~meshopt_batch.model.prediction.predict` on the
  output, for every profile kind.
* ``R`` counts a vertex as reusable when the memory module would reuse it at the first index
  of the next triangle ("which vertices are forgotten" is asked of the same module after
  every triangle).
* ``D``: the paper sums the dual-graph distances from every face of the batch to a
  candidate.  Each emitted face updates the faces sharing one of its vertices (its one-ring;
  the distance is the breadth-first distance inside that ring), and every face outside the
  ring counts as distance ``d_cap`` (10).  That is the paper's sum minus the constant
  ``d_cap * |batch|``, the same for every candidate, so the order is the paper's ``D`` with
  distances capped at ``d_cap``.  (Uncapped, "0 beyond the ring" inverts the term: the bunny
  ends at 0.95.)  ``d_region="ball"`` uses the dual-graph ball of radius ``d_cap - 1``
  instead of the ring.
* ``N``: ``n_mode="flag"`` (paper: 0/1, set for faces sharing a vertex -- or an edge with
  ``n_neighbourhood="edge"`` -- with a completed batch), or ``"count"`` (``k_n`` added each
  time an incident vertex leaves the reusable set).
* Profiles without batches (``intel``, ``fifo:N``, ``lru:N``) never close a batch, so ``D``
  would grow without bound; ``k_d`` defaults to 0 for them.

Beyond the paper (on by default, off with ``lookahead=False, fill_small=False``)
--------------------------------------------------------------------------------
* ``lookahead``: when the top reuses exactly two vertices, every remaining triangle that
  reuses two is compared by how many further triangles its new vertex would complete (their
  other two vertices already reusable); most wins, then priority, then the top, then the
  lowest index.  This grows rounder batches (bunny 0.8044 -> 0.7997, dragon_res3 0.7888 ->
  0.7580 on nvidia_gl).
* ``fill_small``: components (faces connected through vertices) small enough for one batch
  start below every large one (priority ``- k_r / 2``), and when a started batch has nothing
  left to reuse, the largest untouched small component that still fits in it is started
  instead of the top: leaf cards fill the ends of batches instead of cutting into branches.
* A vertex shared by more than :data:`~.state.HEAVY_VALENCE` (1024) triangles -- the
  centre of a large fan, a pole -- takes no part in eq. 1: it adds nothing to ``R``, ``V``,
  ``N``, the ``D`` one-ring or the lookahead's count of its faces, and an edge between two
  such vertices is not in the dual graph.  Every priority update around it would otherwise
  touch all of its faces, which makes a fan quadratic (a 16k-triangle fan took 25 s).  The
  memory module still decides what fits and what is shaded, so batches stay exact; meshes
  without such a vertex are optimized exactly as before.
* For a direct-mapped memory (``llvmpipe``) the order is optimized as if every vertex of a
  batch stayed reusable, then the vertices are renumbered
  (:func:`~meshopt_batch.optimizers.renumber.renumber_for_direct_cache`) so that it does; the
  vertex remap is then a permutation.

Modules
-------
The optimizer is split along its seams (each a place to look when optimising its speed):

* this module: :func:`optimize_batch` (returning an
  :class:`~meshopt_batch.optimizers.optimize_result.OptimizeResult`), coefficients and options, and the
  work after the order is found (first-use numbering and the 16-bit boundary fix,
  direct-mapped renumbering, the final prediction);
* :mod:`.state`: the set-up of one run (:class:`~.state.BatchState`);
* :mod:`.queue`: the compiled driver loop on the exact bucket queue;
  :mod:`.fibheap_reference`: the same loop in Python on a Fibonacci heap;
* :mod:`.select`: which triangle to emit (the top, ``lookahead``, ``fill_small``);
* :mod:`.batch_fit`: whether a triangle fits in the current batch, and in which rotation;
* :mod:`.steps`: the priority updates of emitting a triangle and closing a batch;
* :mod:`.dual_graph`: the corner lists, the dual graph and the components, in int32;
* :mod:`.layout`: the slots of the flat arrays these compiled parts share (one 32-byte
  row of int32 per face holds everything a step reads and writes of it).

References
----------
Kerbl, B., Kenzel, M., Ivanchenko, E., Schmalstieg, D., Steinberger, M. (2018).  Revisiting
the Vertex Cache: Understanding and Optimizing Vertex Processing on the modern GPU.  Proc. ACM
Comput. Graph. Interact. Tech. 1(2).  (Paper 001: Algorithms 1-2, eq. 1-2, sec. 4.)
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from ...model.prediction import as_index_array, predict
from ...model.profiles import Profile, get_profile
from ...support.errors import MeshoptBatchError
from ..optimize_result import OptimizeResult
from ..renumber import renumber_for_direct_cache
from .aux import new_aux
from .boundary16 import fix_16bit_boundaries
from .fibheap_reference import run_reference
from .state import BatchState

__all__ = ["optimize_batch", "DEFAULT_COEFFICIENTS", "NO_DISTANCE_COEFFICIENTS",
           "DEFAULT_OPTIONS"]

#: Eq. 2 of paper 001 (``k_c`` in the paper's print is ``k_r``).
DEFAULT_COEFFICIENTS = {"k_r": 1024, "k_v": -4, "k_d": -1, "k_n": -1}
#: The faster variant without the distance term (paper sec. 4: ``k_v = k_n = -3``).
NO_DISTANCE_COEFFICIENTS = {"k_r": 1024, "k_v": -3, "k_d": 0, "k_n": -3}

#: Options of :func:`optimize_batch` and their defaults (see the module docstring).
DEFAULT_OPTIONS = {"rotate": True, "n_mode": "flag", "n_neighbourhood": "vertex", "d_cap": 10,
                   "d_region": "ring", "lookahead": True, "fill_small": True, "renumber": True}


def _resolve_coefficients(use_distance: bool, coefficients, prof: Profile) -> dict:
    coeffs = dict(DEFAULT_COEFFICIENTS if use_distance else NO_DISTANCE_COEFFICIENTS)
    if not prof.batched and use_distance:
        coeffs["k_d"] = 0
    if coefficients:
        unknown = set(coefficients) - set(coeffs)
        if unknown:
            raise MeshoptBatchError(f"unknown coefficient(s) {sorted(unknown)} (known: k_r, k_v, k_d, k_n)")
        coeffs.update(coefficients)
    for key, value in coeffs.items():
        if isinstance(value, bool) or int(value) != value:
            raise MeshoptBatchError(f"coefficient {key} must be an integer, got {value!r}")
        coeffs[key] = int(value)
    if not use_distance:
        coeffs["k_d"] = 0
    return coeffs


def _is_nvidia(prof: Profile) -> bool:
    return prof.memory in ("lookback", "lookback_dx")


def optimize_batch(triangles, vertex_count: int | None = None, *, profile="nvidia_gl",
                   use_distance: bool = True, fix_16bit: bool | None = None, queue: str = "fast",
                   coefficients: dict | None = None, aux_profiles=(), aux_weights=(),
                   **options) -> OptimizeResult:
    """Reorder triangles batch by batch for a GPU profile (paper 001, Algorithm 2).

    Parameters
    ----------
    triangles : (T, 3) integer array
        Index buffer.
    vertex_count : int, optional
        Vertex buffer size (default: largest index + 1).
    profile : str or Profile
        Target GPU model (:func:`meshopt_batch.model.profiles.get_profile`).  A ``+16bit`` profile is
        optimized under its plain model when ``fix_16bit`` is on (the fix makes the two agree).
    use_distance : bool
        Use the face-distance term ``D`` with eq. 2's coefficients; ``False`` is the paper's
        faster variant (``k_d = 0, k_v = k_n = -3``).
    fix_16bit : bool, optional
        Apply the 16-bit boundary post-process (paper sec. 4): default on for NVIDIA profiles.
    queue : {"fast", "fibheap"}
        Compiled exact bucket queue, or the ``fibheap`` package in plain Python (reference;
        slow, for small meshes).  Both give the identical result.
    coefficients : dict, optional
        Overrides of ``k_r, k_v, k_d, k_n`` (integers).
    aux_profiles : sequence of Profile
        Auxiliary memories: other profiles whose reuse the priority weighs too, each running
        its own Algorithm 1 on the same index stream (:mod:`.aux`; the ``portable`` target).
    aux_weights : sequence of int
        The weight of each auxiliary profile in eq. 1 (one per profile).
    **options
        ``lookahead`` (default True), ``fill_small`` (default True), ``rotate`` (default
        True), ``d_cap`` (10), ``d_region`` ("ring" | "ball"), ``n_mode`` ("flag" |
        "count"), ``n_neighbourhood`` ("vertex" | "edge"), ``renumber`` (default True:
        renumber vertices for a direct-mapped memory); see the module docstring.

    Returns
    -------
    OptimizeResult
        ``triangles``: the optimized index buffer (indices into the new vertex buffer);
        ``vertex_remap``: ``new vertex -> original vertex`` (int64): the identity; or, after
        the 16-bit boundary fix, the vertices (in order of first use where that needs fewer
        copies) followed by the fix's copies; or a permutation after the direct-mapped
        renumbering; ``batch_starts``: first triangle of every batch the predictor forms on
        the result; ``stats``: timings, batches, model invocations, vertex copies, options
        used.

    Raises
    ------
    MeshoptBatchError
        An unknown option or option value, or a buffer too large for the 32-bit tables.

    References
    ----------
    .. [1] B. Kerbl, M. Kenzel, E. Ivanchenko, D. Schmalstieg, M. Steinberger, "Revisiting the
       Vertex Cache: Understanding and Optimizing Vertex Processing on the modern GPU",
       Proc. ACM Comput. Graph. Interact. Tech. 1(2), 2018 (paper 001): Algorithm 2, eq. 1-2,
       the 16-bit boundary post-process of sec. 4.
    """
    t0 = time.perf_counter()
    prof = get_profile(profile)
    tris, vcount = as_index_array(triangles, vertex_count)
    if max(3 * tris.shape[0], vcount) >= (1 << 31):
        raise MeshoptBatchError(f"batch optimizer: {tris.shape[0]} triangles / {vcount} vertices "
                                "exceed its 32-bit tables")
    tris = np.ascontiguousarray(tris.view(np.int32) if tris.dtype == np.uint32 else tris, dtype=np.int32)
    unknown = set(options) - set(DEFAULT_OPTIONS)
    if unknown:
        raise MeshoptBatchError(f"unknown batch optimizer option(s) {sorted(unknown)}")
    opts = {**DEFAULT_OPTIONS, **options}
    if opts["n_mode"] not in ("flag", "count"):
        raise MeshoptBatchError(f"n_mode must be 'flag' or 'count', got {opts['n_mode']!r}")
    if opts["n_neighbourhood"] not in ("vertex", "edge"):
        raise MeshoptBatchError(
            f"n_neighbourhood must be 'vertex' or 'edge', got {opts['n_neighbourhood']!r}")
    if fix_16bit is None:
        fix_16bit = _is_nvidia(prof)
    opt_prof = prof.with_16bit_boundaries(False) if (fix_16bit and prof.boundary_16bit) else prof
    renumber = prof.memory == "direct" and bool(opts["renumber"]) and not aux_profiles
    if renumber or (prof.memory == "direct" and aux_profiles):
        # Reuse on a direct-mapped table depends on vertex numbers, which the renumbering
        # below sets: optimize the order for "every vertex of the batch stays reusable"
        # (a look-back over the whole batch), then number the vertices so that this holds.
        window = prof.max_size or prof.max_uniques or 3 * max(tris.shape[0], 1)
        opt_prof = replace(opt_prof, memory="lookback", memory_size=window)
    coeffs = _resolve_coefficients(use_distance, coefficients, opt_prof)
    t_count = tris.shape[0]
    stats = {"profile": prof.name, "queue": queue, "coefficients": coeffs, "options": opts,
             "triangles": int(t_count), "vertices_in": int(vcount)}
    if prof.order_free and t_count:
        # every order shades the same vertex ids (aligned groups, whole range): keep the input's
        pred = predict(tris, vertex_count=vcount, profile=prof, return_batches=True)
        kept = tris.astype(np.uint16 if np.asarray(triangles).dtype == np.uint16 else np.uint32)
        return OptimizeResult(kept, np.arange(vcount, dtype=np.int64), pred.batch_starts, {
            **stats, "seconds": time.perf_counter() - t0, "vertices_out": vcount, "vertex_copies": 0,
            "batches": pred.batches, "model_invocations": pred.invocations, "model_batches": pred.batches,
            "invocations": pred.invocations, "asr": pred.asr, "renumbered": False, "fix_16bit": False})
    if t_count == 0:
        return OptimizeResult(np.zeros((0, 3), np.uint32), np.arange(vcount, dtype=np.int64),
                              np.zeros(0, np.int64), {**stats, "seconds": 0.0, "vertices_out": vcount,
                                                      "vertex_copies": 0, "batches": 0})
    aux = new_aux(aux_profiles, aux_weights, vcount) if aux_profiles else None
    state = BatchState(tris, vcount, opt_prof, coeffs, opts, aux)
    t1 = time.perf_counter()
    if queue == "fast":
        state.run_fast()
    elif queue == "fibheap":
        run_reference(state)
    else:
        raise MeshoptBatchError(f"queue must be 'fast' or 'fibheap', got {queue!r}")
    t2 = time.perf_counter()
    out = state.ordered_triangles()
    stats.update(model_invocations=state.model_invocations(), model_batches=state.model_batches(),
                 seconds_setup=t1 - t0, seconds_queue=t2 - t1)
    del state
    remap = np.arange(vcount, dtype=np.int64)
    copies = 0
    if fix_16bit and vcount > (1 << 16):
        out, remap = fix_16bit_boundaries(out, vcount, opt_prof.with_16bit_boundaries(False), first_use=True)
        copies = int(remap.shape[0] - vcount)
    if renumber:
        out, remap = renumber_for_direct_cache(out, vcount, slots=prof.memory_size,
                                               segment_size=prof.max_size or 3 * t_count)
        opt_prof = prof
    stats["renumbered"] = renumber
    out = np.asarray(out, np.uint32)
    pred = predict(out, vertex_count=remap.shape[0], profile=opt_prof, return_batches=True)
    stats.update(seconds=time.perf_counter() - t0, vertices_out=int(remap.shape[0]),
                 vertex_copies=copies, batches=int(pred.batches), invocations=int(pred.invocations),
                 asr=pred.asr, fix_16bit=bool(fix_16bit))
    if np.asarray(triangles).dtype == np.uint16 and remap.shape[0] <= (1 << 16):
        out = out.astype(np.uint16)
    return OptimizeResult(out, remap, pred.batch_starts, stats)
