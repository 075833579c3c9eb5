"""One triangle order for every GPU of a target: :func:`optimize_for_target`.

The steps, for one index buffer:

1. **Starts** (:mod:`.starts`): the batch candidates of Algorithm 2 with auxiliary memories,
   meshoptimizer's order (the reference), the orders made for one profile alone where the input
   beats them all, the breadth-first layers where they beat the reference somewhere, and past
   2^16 vertices the same numbered in 2^16 blocks.  Each is numbered by first use and predicted
   once on every profile (:mod:`.candidates`).
2. **Screening**: a short window search (:mod:`.window_search`: one round of the first move over the
   window lengths of :data:`~.tuning.SCREEN_WINDOWS`) from the order the objective chooses
   (:mod:`.objective`), from the candidate nearest to being within the reference's figures where
   the reference is chosen, from the layers, and from the input where it beats the reference on
   some profile (so that an order this function wrote is a start again: optimizing it a second
   time keeps it, or improves it; an input worse than the reference everywhere gives the search
   nothing the other starts lack); the starts are
   independent, so they run on the machine's cores at once, and the result is the same on any
   number of cores.
3. **Search**: from the screened order with the lowest objective, the moves of
   :data:`~.tuning.MOVES` in turns, each in rounds, until none keeps a change or the work bound
   is spent.
4. **Choice**: the objective's choice among every order made (:func:`.objective.choose`).

Up to 2^16 vertices and :data:`~.tuning.LARGE` triangles; ``window_work`` bounds the whole of
steps 2-3.  The caller (:mod:`meshopt_batch.vertices.vertex_set`) keeps the input where the result is
not within its figures on every profile.

References
----------
Kerbl, B., Kenzel, M., Ivanchenko, E., Schmalstieg, D., Steinberger, M. (2018).  Revisiting the
Vertex Cache.  Proc. ACM Comput. Graph. Interact. Tech. 1(2) (paper 001: Algorithms 1-2).
Kapoulkine, A.  meshoptimizer (``optimize_vertex_cache``, the reference order).
"""

from __future__ import annotations

import time

import numpy as np

from ...model.prediction import as_index_array
from ...model.targets import Target
from ...support.errors import MeshoptBatchError
from ...support.parallel import in_parallel
from ...vertices.index_codec import raw_codec_bits
from ..optimize_result import OptimizeResult
from .candidates import REFERENCE, Pool
from .moves import FROM_FIRST
from .objective import caps, objective
from .starts import add_alone, add_in_blocks, add_layers, add_starts
from .tuning import (
    CODEC_SLACK,
    KCACHE_SIZE,
    LARGE,
    MARGIN,
    MAX_ROUNDS,
    MAX_TURNS,
    MOVE_WINDOWS,
    MOVES,
    SCREEN_SHARE,
    SCREEN_WINDOWS,
    THRESHOLD,
    WINDOW_WORK,
    WINDOWS,
    WORST_WEIGHT,
)
from .window_search import WindowSearch

__all__ = ["optimize_for_target"]

def _search(pool: Pool, tris: np.ndarray, start: str | None) -> WindowSearch:
    """A window search from the candidate ``start`` (None: the input), every profile within its
    cap (:func:`.objective.caps`); where meshoptimizer's order is the fallback, of a move whose
    result passes its codec slack only the first changes within it are kept."""
    order = tris if start is None else pool[start].original
    begun = pool.given if start is None else pool[start].invocations
    reference = pool.reference.invocations
    refuse = None
    if pool.fallback_is_reference():
        limit = CODEC_SLACK * pool.codec(REFERENCE)
        refuse = lambda changed: raw_codec_bits(changed, pool.vertex_count) > limit  # noqa: E731
    return WindowSearch(order, pool.vertex_count, pool.profiles, reference=reference.astype(np.float64),
                        caps=caps(reference, pool.given, begun), windows=WINDOWS, worst_weight=WORST_WEIGHT,
                        kcache_size=KCACHE_SIZE, margin=MARGIN, threshold=THRESHOLD, refuse=refuse)


def _refine(pool: Pool, tris: np.ndarray, work: int) -> list[dict]:
    """Steps 2-3 of the module docstring; the orders found go into the pool.  Returns a record of
    each search (start, stage, work, trials, changes kept)."""
    chosen = pool.choose()
    starts = [chosen]
    if chosen == REFERENCE:
        starts.append(pool.closest_to_reference())
    starts.append(add_layers(pool, tris))
    starts = [s for k, s in enumerate(starts) if s is not None or k == 0]
    if np.any(pool.given < pool.reference.invocations):
        starts.append(None)
    starts = list(dict.fromkeys(starts))
    share = int(SCREEN_SHARE * work)

    def screen(start):
        search = _search(pool, tris, start)
        search.run((FROM_FIRST,), rounds=1, turns=1, work=share, lengths={FROM_FIRST: SCREEN_WINDOWS})
        return search

    searches = in_parallel(screen, starts)
    log = []
    for start, search in zip(starts, searches, strict=True):
        log.append({"start": start or "input", "stage": "screen", "work": search.work, "trials": search.trials,
                    "kept": search.kept})
        if search.kept:
            pool.add(f"{start or 'input'} + screen", search.order)
    best = min(range(len(starts)), key=lambda k: objective(searches[k].invocations, pool.reference.invocations))
    search, done = searches[best], searches[best].work
    before = (search.trials, search.kept)
    search.run(MOVES, rounds=MAX_ROUNDS, turns=MAX_TURNS, work=done + max(work - sum(s.work for s in searches), 0),
               lengths=MOVE_WINDOWS)
    log.append({"start": starts[best] or "input", "stage": "search", "work": search.work - done,
                "trials": search.trials - before[0], "kept": search.kept - before[1]})
    if search.kept > before[1]:
        pool.add(f"{starts[best] or 'input'} + search", search.order)
    return log


def optimize_for_target(triangles, vertex_count: int | None = None, *, target: Target, use_distance: bool = True,
                        queue: str = "fast", fix_16bit: bool | None = None, window_work: int = WINDOW_WORK,
                        **options) -> OptimizeResult:
    """Reorder an index buffer for every profile of ``target`` at once (see the module docstring).

    Parameters
    ----------
    triangles : (T, 3) integer array
        Index buffer.
    vertex_count : int, optional
        Vertex buffer size (default: largest index + 1).
    target : Target, keyword-only
        Two or more profiles (one profile is :func:`~..batch.batch_optimizer.optimize_batch`'s job).
    use_distance : bool, keyword-only
        As :func:`~..batch.batch_optimizer.optimize_batch`'s, for every batch candidate.
    queue : {"fast", "fibheap"}, keyword-only
        As :func:`~..batch.batch_optimizer.optimize_batch`'s, for every batch candidate.
    fix_16bit : bool, keyword-only, optional
        As :func:`~..batch.batch_optimizer.optimize_batch`'s, for every batch candidate.
    window_work : int, keyword-only
        The work bound of the whole search, screening and search together: triangles the judge
        simulates (the mean over the profiles) plus the triangles the moves reorder
        (:data:`~.tuning.WINDOW_WORK`; 0 turns the search off).  ``optimize --effort M`` is M
        million.
    **options
        Further options of :func:`~..batch.batch_optimizer.optimize_batch`, for every batch candidate.

    Returns
    -------
    OptimizeResult
        ``triangles`` in the new numbering, ``vertex_remap`` (new -> original vertex: the
        first-use order, or the 16-bit fix's vertices and copies); ``stats``: the chosen
        candidate, every candidate's predicted invocations per profile, objective and codec
        bits where measured, the searches, timings.

    Raises
    ------
    MeshoptBatchError
        No profile of the target depends on the triangle order.

    References
    ----------
    Kerbl, B. et al. (2018).  Revisiting the Vertex Cache.  Proc. ACM Comput. Graph. Interact.
    Tech. 1(2) (paper 001: Algorithms 1-2).
    """
    t0 = time.perf_counter()
    tris, vcount = as_index_array(triangles, vertex_count)
    if tris.shape[0] == 0:
        return OptimizeResult(np.zeros((0, 3), np.uint32), None, None, {"candidate": "empty", "seconds": 0.0})
    if not target.ordered:
        raise MeshoptBatchError(f"target {target.name!r}: no profile depends on the triangle order")
    tris64 = np.asarray(tris, np.int64)
    pool = Pool(tris64, vcount, target)
    options = {"use_distance": use_distance, "queue": queue, "fix_16bit": fix_16bit, **options}
    add_starts(pool, tris64, options)
    if pool.choose() is None:
        add_alone(pool, tris64, options)
    blocks = any(p.boundary_16bit for p in pool.profiles)
    if blocks:
        add_in_blocks(pool)
    searches = []
    if window_work > 0 and tris.shape[0] <= LARGE and vcount <= (1 << 16):
        searches = _refine(pool, tris64, int(window_work))
    chosen = pool.choose() or REFERENCE
    entry = pool[chosen]
    out = entry.triangles.astype(np.uint32)
    if np.asarray(triangles).dtype == np.uint16 and entry.source.shape[0] <= (1 << 16):
        out = out.astype(np.uint16)
    stats = {"target": target.name, "candidate": chosen,
             "invocations": dict(zip(pool.names, map(int, entry.invocations), strict=True)),
             "candidates": pool.stats(), "reference_codec_bits": pool.codec(REFERENCE), "searches": searches,
             "triangles": int(tris.shape[0]), "vertices_in": int(vcount), "vertices_out": int(entry.source.shape[0]),
             "vertex_copies": int(entry.source.shape[0] - vcount), "seconds": time.perf_counter() - t0}
    return OptimizeResult(out, entry.source, None, stats)
