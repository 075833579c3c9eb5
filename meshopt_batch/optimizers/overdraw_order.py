"""Overdraw-aware triangle order on top of a vertex-reuse order (Sander, Nehab & Barczak 2007).

A vertex-reuse order (paper 001's batches, Tipsify) is cut into *clusters* of consecutive
triangles, and the clusters are drawn in the order of a view-independent *visibility
heuristic*: clusters far out from the mesh and facing outwards are likely to hide the rest of
the mesh from most viewpoints, so they go first and early-Z rejects more of what follows.
Inside a cluster nothing moves, so the reuse the base order built there is kept; what can be
lost is the reuse *between* consecutive clusters.

Clusters
--------
Sander et al. cut Tipsify's output at hard boundaries (where the cache was effectively flushed)
and at soft boundaries chosen so that the cache miss ratio grows by at most a factor ``lambda``.
Here the cost is the batch model of paper 001 (Algorithm 1, :func:`meshopt_batch.model.prediction.predict`)
for the target profile, and the candidate clusterings ("levels"), finest first, are:

* soft boundaries about ``m`` triangles apart (``m`` = 4, 6, 8, 12, ... below the profile's
  own batch size), each cut placed where it breaks fewest reuses (:func:`broken_reuses`: vertex
  references that follow the vertex's previous reference across the cut within the profile's
  reuse window, :func:`reuse_window`); this is how an unbatched cache (``fifo:16``, ``intel``)
  or a profile with big batches (``amd``, ``llvmpipe``) gets clusters.  A level whose cuts
  break more reuses than the bound allows (with a 25 % margin) is not tried;
* the profile's batches (``batches``): on a batched GPU (``nvidia_gl``: at most 32 triangles
  a batch) batches share nothing, so drawing whole batches in another order keeps every reuse
  as long as every cluster still starts a batch of the predictor.  The sort keeps them
  aligned: a cluster whose first triangle would join the previous cluster's last batch is
  passed over for the next one in key order (at most 8 ahead), and clusters whose last batch
  has room for any triangle (the base order's short last batch) go last;
* 2, 4, 8, ... consecutive batches joined into one cluster.

Every level's clusters are sorted and the result predicted exactly; the finest level whose
order predicts at most ``threshold`` times the base order's invocations is returned, and the
base order itself when none does, so ``invocations <= threshold * base`` holds by construction.

Visibility heuristic
--------------------
Sander et al. (after Nehab et al. 2006) sort clusters by how much they face away from the
mesh's centroid: with ``c`` the mesh's area-weighted centroid, ``p_k`` cluster ``k``'s
area-weighted centroid and ``n_k`` its unit average normal (the normalised sum of its triangles'
area vectors), the key is ``(p_k - c) . n_k`` and clusters are drawn by decreasing key (ties:
base order).  The triangle normals follow the winding (counter-clockwise front faces).

References
----------
.. [1] P. V. Sander, D. Nehab, J. Barczak, "Fast Triangle Reordering for Vertex Locality and
   Reduced Overdraw", ACM Trans. Graph. 26(3), 89, 2007 (SIGGRAPH 2007): the overdraw part,
   linear clustering with hard and soft boundaries and the view-independent cluster sort.
.. [2] D. Nehab, J. Barczak, P. V. Sander, "Triangle Order Optimization for Graphics Hardware
   Computation Culling", Proc. I3D 2006 (the occlusion heuristic the sort approximates).
.. [3] B. Kerbl et al., "Revisiting the Vertex Cache", Proc. ACM CGIT 1(2), 2018 (paper 001):
   Algorithm 1, the batch model the clusters are cut by and the bound is checked with.
"""

from __future__ import annotations

import time

import numpy as np
from numba import njit

from ..model.prediction import as_index_array, predict
from ..model.profiles import Profile, get_profile
from ..support.errors import MeshoptBatchError
from . import get_method
from .optimize_result import OptimizeResult

__all__ = ["DEFAULT_THRESHOLD", "CLUSTER_SIZES", "broken_reuses", "check_threshold", "cluster_keys",
           "optimize_overdraw", "optimize_batch_overdraw", "optimize_tipsify_overdraw",
           "optimize_overdraw_pass", "reuse_window", "soft_boundaries", "sort_clusters", "overdraw_variant"]

#: The threshold meshoptimizer's documentation suggests (invocations may grow by 5 %).
DEFAULT_THRESHOLD = 1.05
#: Cluster sizes (triangles) of the soft-boundary levels, finest first.
CLUSTER_SIZES = (4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024,
                 1536, 2048, 3072, 4096, 6144, 8192)

#: Base method -> its overdraw-aware variant (the ``--overdraw T`` option).
_VARIANTS = {"batch": "batch+overdraw", "tipsify": "tipsify+overdraw", "original": "overdraw"}


def overdraw_variant(method_name: str) -> str:
    """The registered overdraw-aware method built on ``method_name`` (``batch`` -> ``batch+overdraw``).

    Raises
    ------
    MeshoptBatchError
        ``method_name`` has no overdraw-aware variant.
    """
    if method_name in _VARIANTS.values():
        return method_name
    try:
        return _VARIANTS[method_name]
    except KeyError:
        raise MeshoptBatchError(f"--overdraw applies to the methods {', '.join(_VARIANTS)}, "
                                f"not {method_name!r}") from None


def check_threshold(threshold) -> float:
    """``threshold`` as a float ``>= 1`` (else :class:`MeshoptBatchError`)."""
    try:
        value = float(threshold)
    except (TypeError, ValueError):
        raise MeshoptBatchError(f"overdraw threshold must be a number >= 1, got {threshold!r}") from None
    if not np.isfinite(value) or value < 1.0:
        raise MeshoptBatchError(f"overdraw threshold must be a number >= 1, got {threshold!r}")
    return value


def _check_positions(positions, vertex_count: int) -> np.ndarray:
    if positions is None:
        raise MeshoptBatchError("the overdraw order needs the vertex positions")
    pos = np.asarray(positions, np.float64)
    if pos.ndim != 2 or pos.shape[1] < 3 or pos.shape[0] < vertex_count:
        raise MeshoptBatchError(f"positions must be (V, 3) with V >= {vertex_count}, got shape {pos.shape}")
    if not np.all(np.isfinite(pos[:vertex_count, :3])):
        raise MeshoptBatchError("positions must be finite")
    return np.ascontiguousarray(pos[:, :3])


def cluster_keys(triangles: np.ndarray, positions: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The visibility key ``(p_k - c) . n_k`` of every cluster (Sander et al. 2007).

    Parameters
    ----------
    triangles : (T, 3) integer array
        The index buffer in base order.
    positions : (V, 3) float array
        Vertex positions.
    starts : (K,) int array
        First triangle of every cluster (``starts[0] == 0``, increasing).

    Returns
    -------
    (K,) float64
        Larger keys are drawn first; a cluster of zero area has key 0.
    """
    a, b, c = (positions[triangles[:, i]] for i in range(3))
    area_vec = np.cross(b - a, c - a)                      # twice the area, along the normal
    area = np.linalg.norm(area_vec, axis=1)
    centroid = (a + b + c) / 3.0
    total = area.sum()
    mesh_centre = ((area[:, None] * centroid).sum(0) / total if total > 0
                   else positions[np.unique(triangles)].mean(0))
    sum_area = np.add.reduceat(area, starts)
    sum_normal = np.add.reduceat(area_vec, starts, axis=0)
    sum_centroid = np.add.reduceat(area[:, None] * centroid, starts, axis=0)
    norm = np.linalg.norm(sum_normal, axis=1)
    ok = (sum_area > 0) & (norm > 0)
    keys = np.zeros(len(starts))
    cluster_centre = sum_centroid[ok] / sum_area[ok, None]
    keys[ok] = np.einsum("ij,ij->i", cluster_centre - mesh_centre, sum_normal[ok] / norm[ok, None])
    return keys


def _keep_batches_aligned(triangles, vertex_count, profile, starts, last_batch, rank, window):
    """``rank`` reordered so that every cluster starts a batch of the predictor.

    A cluster whose first triangle joins the previous cluster's last batch shifts every later
    batch boundary and loses reuse in all of those batches.  Clusters whose last batch would
    take even a triangle of three new vertices (the base order's short last batch) go last, in
    key order; a cluster whose first triangle shares a vertex with the previous cluster's last
    batch and would join it is passed over for the next one (at most ``window`` clusters
    ahead) that starts a batch of its own.
    """
    ends = np.append(starts[1:], triangles.shape[0])

    def joins(prev, head):
        pair = np.concatenate([triangles[last_batch[prev]:ends[prev]], head[None]])
        return predict(pair, vertex_count + 3, profile=profile).batches == 1

    fresh = np.arange(vertex_count, vertex_count + 3, dtype=triangles.dtype)
    is_open = np.array([joins(k, fresh) for k in range(len(starts))])
    pending = [int(k) for k in rank if not is_open[k]]
    out = [pending.pop(0)] if pending else []
    while pending:
        prev = out[-1]
        tail = set(triangles[last_batch[prev]:ends[prev]].ravel().tolist())
        pick = 0
        for j in range(min(window, len(pending))):
            head = triangles[starts[pending[j]]]
            if tail.isdisjoint(head.tolist()) or not joins(prev, head):
                pick = j
                break
        out.append(pending.pop(pick))
    out += [int(k) for k in rank if is_open[k]]
    return np.asarray(out, np.int64)


def sort_clusters(triangles: np.ndarray, positions: np.ndarray, starts: np.ndarray, *,
                  aligned_to: tuple | None = None, window: int = 8) -> np.ndarray:
    """The triangle order that draws the clusters by decreasing visibility key.

    Parameters
    ----------
    triangles, positions, starts
        As :func:`cluster_keys`.
    aligned_to : ``(vertex_count, profile, last_batch)``, optional
        Clusters made of whole batches of ``profile``, ``last_batch[k]`` the first triangle of
        cluster ``k``'s last batch: a cluster whose first triangle the predictor would add to
        the previous cluster's last batch is passed over for the next one (at most ``window``
        clusters ahead) that starts a batch of its own.
    window : int
        How far the alignment may look ahead.

    Returns
    -------
    (T,) int64
        Indices into ``triangles``: each cluster's triangles stay together and in their order;
        clusters with equal keys keep the base order.
    """
    t_count = triangles.shape[0]
    keys = cluster_keys(triangles, positions, starts)
    rank = np.argsort(-keys, kind="stable")
    if aligned_to is not None and len(rank) > 1:
        vertex_count, profile, last_batch = aligned_to
        rank = _keep_batches_aligned(triangles, vertex_count, profile, starts, last_batch, rank, window)
    ends = np.append(starts[1:], t_count)
    lengths = (ends - starts)[rank]
    first = np.repeat(starts[rank], lengths)
    within = np.arange(t_count) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    return first + within


def reuse_window(profile: Profile) -> int:
    """How many triangles back a vertex can still be reused under ``profile`` (roughly): a
    look-back counts index positions (three a triangle); a FIFO or LRU of ``n`` entries holds the
    vertices of about ``1.5 n`` triangles of a good order (2/3 of a miss a triangle)."""
    if profile.memory in ("lookback", "lookback_dx"):
        return max(1, -(-profile.memory_size // 3))
    if profile.memory == "direct":
        return max(1, profile.max_size // 3 or profile.memory_size)
    return max(1, (3 * profile.memory_size) // 2)


def broken_reuses(triangles: np.ndarray, window: int) -> np.ndarray:
    """``(T + 1,)``: for every cut position ``i`` (before triangle ``i``), how many references
    of a vertex at a triangle ``>= i`` follow the vertex's previous reference at a triangle
    ``< i`` by at most ``window`` triangles: the reuses a cache flushed at ``i`` would lose."""
    t_count = triangles.shape[0]
    flat = triangles.reshape(-1)
    tri_of = np.repeat(np.arange(t_count), 3)
    order = np.lexsort((tri_of, flat))
    v, t = flat[order], tri_of[order]
    same = v[1:] == v[:-1]
    prev_t, next_t = t[:-1][same], t[1:][same]
    near = (next_t > prev_t) & (next_t - prev_t <= window)
    diff = np.zeros(t_count + 2, np.int64)
    np.add.at(diff, prev_t[near] + 1, 1)
    np.add.at(diff, next_t[near] + 1, -1)
    return np.cumsum(diff)[:t_count + 1]


def soft_boundaries(broken: np.ndarray, size: int) -> np.ndarray:
    """Cluster starts about ``size`` triangles apart, each cut where it breaks fewest reuses.

    Sander et al.'s soft boundaries end a cluster where a cache flush costs little; here each
    cut is the position with the fewest ``broken`` reuses (:func:`broken_reuses`) between
    ``size / 2`` and ``3 size / 2`` triangles after the previous cut (first such position on ties).
    """
    return _soft_cuts(np.ascontiguousarray(broken, np.int64), int(size))


@njit(cache=True)
def _soft_cuts(broken, size):
    t_count = broken.shape[0] - 1
    lo = max(1, size // 2)
    hi = lo + size
    out = np.empty(t_count // lo + 2, np.int64)
    out[0] = 0
    n = 1
    s = 0
    while s + hi < t_count:
        best = s + lo
        for i in range(s + lo + 1, s + hi):
            if broken[i] < broken[best]:
                best = i
        out[n] = best
        n += 1
        s = best
    return out[:n].copy()


def _cluster_levels(tris: np.ndarray, vcount: int, prof: Profile, allowance: float):
    """Candidate clusterings, finest first: ``(name, starts, last_batch or None)`` (see the
    module docstring); ``last_batch`` is given where clusters are whole batches of ``prof``.
    Soft-boundary levels whose cuts break more than ``allowance`` reuses are not tried: the
    count is within a few per cent of the invocations the cuts add under a FIFO at the sizes
    that come near the bound (measured on dragon_100k), and below them under a look-back."""
    per_batch = prof.max_size // 3 if prof.max_size else 0
    broken = broken_reuses(tris, reuse_window(prof))
    for m in CLUSTER_SIZES:
        if (per_batch and m >= per_batch) or m >= tris.shape[0]:
            break
        starts = soft_boundaries(broken, m)
        if broken[starts[1:]].sum() <= allowance:
            yield f"{m} triangles", starts, None
    batches = predict(tris, vcount, profile=prof, return_batches=True).batch_starts
    group = 1
    while len(batches) > 1 and group < len(batches):
        starts = batches[::group]
        last = batches[np.minimum(np.arange(len(starts)) * group + group - 1, len(batches) - 1)]
        yield ("batches" if group == 1 else f"{group} batches"), starts, last
        group *= 2


def optimize_overdraw(triangles, vertex_count: int | None = None, *, positions, profile="nvidia_gl",
                      threshold: float = DEFAULT_THRESHOLD, base: str = "original",
                      **base_params) -> OptimizeResult:
    """Reorder a vertex-reuse order's clusters by the visibility heuristic, within a cost bound.

    Parameters
    ----------
    triangles : (T, 3) integer array
        Index buffer.
    vertex_count : int, optional
        Vertex buffer size (default: largest index + 1).
    positions : (V, 3) float array, keyword-only
        Vertex positions (object space).
    profile : str or Profile
        Target GPU profile: its batches give the clusters and its predicted invocations the bound.
    threshold : float
        ``T >= 1``: the result predicts at most ``T`` times the invocations of the base order.
    base : str
        Registered method giving the base order (``"original"``: the input order, a post-pass).
    **base_params
        Parameters of the base method (e.g. ``use_distance`` for ``batch``).

    Returns
    -------
    OptimizeResult
        The base result's vertex buffer (remap) with the triangles in the new order; ``stats``
        has ``base_invocations``, ``invocations``, ``clusters``, ``level`` and ``threshold``.
    """
    t0 = time.perf_counter()
    limit = check_threshold(threshold)
    prof = get_profile(profile)
    tris, vcount = as_index_array(triangles, vertex_count)
    pos = _check_positions(positions, vcount)
    method = get_method(base)
    params = dict(base_params)
    if method.uses_profile:
        params["profile"] = prof
    base_result = method.run(tris, vcount, **params)
    ordered = np.asarray(base_result.triangles)
    remap = base_result.vertex_remap
    out_vcount = vcount if remap is None else len(remap)
    out_pos = pos if remap is None else pos[np.asarray(remap, np.int64)]
    stats = {"base": method.name, "threshold": limit, "profile": prof.name,
             "base_stats": dict(base_result.stats)}
    t_count = ordered.shape[0]
    base_inv = predict(ordered, out_vcount, profile=prof).invocations if t_count else 0
    best_order, best_inv, level, clusters = None, base_inv, "whole", 1
    if t_count:
        work = np.ascontiguousarray(ordered, np.int64)
        allowance = 1.25 * (limit - 1.0) * base_inv
        for name, starts, last_batch in _cluster_levels(work, out_vcount, prof, allowance):
            aligned = None if last_batch is None else (out_vcount, prof, last_batch)
            order = sort_clusters(work, out_pos, starts, aligned_to=aligned)
            inv = predict(work[order], out_vcount, profile=prof).invocations
            if inv <= limit * base_inv:
                best_order, best_inv, level, clusters = order, inv, name, len(starts)
                break
    final = ordered if best_order is None else ordered[best_order]
    pred = predict(final, out_vcount, profile=prof, return_batches=True)
    stats.update(base_invocations=int(base_inv), invocations=int(best_inv), level=level,
                 clusters=int(clusters), seconds=time.perf_counter() - t0)
    return OptimizeResult(final, remap, pred.batch_starts, stats)


def optimize_batch_overdraw(triangles, vertex_count: int | None = None, *, positions, profile="nvidia_gl",
                            threshold: float = DEFAULT_THRESHOLD, **batch_params) -> OptimizeResult:
    """Paper 001's batch order, then the overdraw cluster sort (see :func:`optimize_overdraw`)."""
    return optimize_overdraw(triangles, vertex_count, positions=positions, profile=profile,
                             threshold=threshold, base="batch", **batch_params)


def optimize_tipsify_overdraw(triangles, vertex_count: int | None = None, *, positions, profile="nvidia_gl",
                              threshold: float = DEFAULT_THRESHOLD, **tipsify_params) -> OptimizeResult:
    """Tipsify's order, then the overdraw cluster sort with the bound for ``profile``."""
    return optimize_overdraw(triangles, vertex_count, positions=positions, profile=profile,
                             threshold=threshold, base="tipsify", **tipsify_params)


def optimize_overdraw_pass(triangles, vertex_count: int | None = None, *, positions, profile="nvidia_gl",
                           threshold: float = DEFAULT_THRESHOLD) -> OptimizeResult:
    """The overdraw cluster sort as a post-pass on the input order (already optimized)."""
    return optimize_overdraw(triangles, vertex_count, positions=positions, profile=profile,
                             threshold=threshold, base="original")
