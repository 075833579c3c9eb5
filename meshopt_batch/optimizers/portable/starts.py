"""The orders the portable optimizer starts from.

**Batch candidates.**  Algorithm 2 of paper 001 forms batches for one profile.  Here a
*primary* profile forms the batches and every other order-dependent profile of the target is
tracked as an *auxiliary memory* (:mod:`..batch.aux`): its own Algorithm 1 on the same index
stream, adding ``w_m`` per vertex it would reuse to eq. 1's priority,

    p = k_r R_primary + sum_m w_m R_m + k_v V + k_d D + k_n N.

The primaries are the strictest batch rule of the target (NVIDIA's 32 vertices / 96 indices:
the paper's "jump" is free only where every GPU starts a batch anyway) and the next distinct
one (AMD's fixed 384-index batches with an LRU of 15); the auxiliary terms decide where the
next batch starts and, among equal primary reuse, the order inside it -- the cache-like rules
reward the locality the batch optimizer alone gives up at its jumps.  :data:`~.tuning.VARIANTS`
gives each candidate its primary, its ``k_v``, ``k_n`` and weights: finishing vertices off (a
larger ``-k_v``) keeps the sweep of batches closed, which a global FIFO like Intel's rewards.
Above :data:`~.tuning.LARGE` triangles only the first is made, without ``D`` and without
tracking llvmpipe (and none past 2^16 vertices, where meshoptimizer's order numbered in blocks
does better on every GPU but NVIDIA).

**meshoptimizer's order**, the reference (:mod:`.candidates`).

**The order made for one profile alone**, for each profile on which the input beats every
candidate (an input in rows is about as good as it gets for Intel's long FIFO), so that an
order no worse than the input everywhere can still be found.

**Breadth-first layers** (:mod:`.layers`), where they beat meshoptimizer's order on some
profile: rows that a FIFO reuses, which the window search folds into patches.

**Numbering in 2^16 blocks.**  Over 2^16 vertices an NVIDIA primary keeps the 16-bit fix's
numbering (paper 001 sec. 4) and NVIDIA's profiles are judged with the 2^16 block rule.  The
fix's copies are new vertices to the other GPUs' caches, so every candidate numbered by first
use is also tried numbered in blocks (:func:`..batch.boundary16.number_in_blocks`): a vertex is
copied into the next block only where every profile without the block rule shades it anyway,
every number keeping its residue modulo llvmpipe's table, which leaves AMD, Intel and llvmpipe
exactly as they were and takes NVIDIA's batches out of the block switches.

References
----------
Kerbl, B., Kenzel, M., Ivanchenko, E., Schmalstieg, D., Steinberger, M. (2018).  Revisiting the
Vertex Cache.  Proc. ACM Comput. Graph. Interact. Tech. 1(2) (paper 001: Algorithms 1-2, eq. 1-2,
sec. 3.3-4).
Hoppe, H. (1999).  Optimization of mesh locality for transparent vertex caching.  SIGGRAPH.
Lin, G., Yu, T. P.-Y. (2006).  An improved vertex caching scheme for 3D mesh rendering.  IEEE
TVCG 12(4).
Forsyth, T. (2006).  Linear-speed vertex cache optimisation.
"""

from __future__ import annotations

import numpy as np

from ...model.reuse_kernels import MEMORY_KERNEL_KINDS, run_kernel
from ...support.parallel import in_parallel
from ...vertices.vertex_fetch import first_use_order, number_by_first_use
from ..batch.batch_optimizer import optimize_batch
from ..batch.boundary16 import number_in_blocks
from ..meshoptimizer_orders import optimize_vertex_cache
from .candidates import REFERENCE, Pool
from .layers import order_by_layers
from .tuning import AUX_WEIGHTS, BLOCKS_GROWTH, LARGE, VARIANTS

__all__ = ["add_alone", "add_in_blocks", "add_layers", "add_starts"]

_NO_COUNTS = np.zeros(0, np.int64)


def _strictness(profile) -> tuple:
    """Sort key: the smallest batches first (unique-vertex bound, then index bound)."""
    big = 1 << 62
    return (profile.max_uniques or big, profile.max_size or big)


def _same_rule(a, b) -> bool:
    """Two profiles whose batches and look-back reuse coincide closely enough that tracking
    one tracks the other (NVIDIA under OpenGL and Direct3D)."""
    lookback = ("lookback", "lookback_dx")
    return (a.max_size, a.max_uniques) == (b.max_size, b.max_uniques) and a.memory in lookback and b.memory in lookback


def _primaries(profiles) -> list:
    """The strictest batch rule of the target and the next distinct one (or the first profile
    when none forms batches)."""
    batched = sorted((p for p in profiles if p.batched), key=_strictness)
    out = []
    for p in batched:
        if all(not _same_rule(p, q) and (p.max_size, p.max_uniques, p.memory) != (q.max_size, q.max_uniques, q.memory)
               for q in out):
            out.append(p)
        if len(out) == 2:
            break
    return out or [profiles[0]]


def _batch_order(tris, vcount, primary, profiles, options, coefficients=None, weights=None, large=False):
    """Algorithm 2 with ``primary`` forming the batches and the other profiles as auxiliary
    memories (``large``: not the direct-mapped ones, whose batch-long look-back costs the most
    to track): (triangles, new -> old vertex or None)."""
    weights = {**AUX_WEIGHTS, **(weights or {})}
    aux = [p.with_16bit_boundaries(False) for p in profiles
           if p is not primary and not _same_rule(p, primary) and p.memory in weights
           and not (large and p.memory == "direct")]
    use_distance = options.pop("use_distance", True) and not large
    res = optimize_batch(tris, vcount, profile=primary, use_distance=use_distance, coefficients=coefficients or None,
                         aux_profiles=aux, aux_weights=[weights[p.memory] for p in aux], **options)
    out = np.asarray(res.triangles, np.int64)
    remap = np.asarray(res.vertex_remap, np.int64)
    if remap.shape[0] == vcount and np.array_equal(remap, np.arange(vcount)):
        return out, None
    return out, remap


def add_starts(pool: Pool, tris: np.ndarray, options: dict) -> None:
    """The batch candidates of :data:`~.tuning.VARIANTS` and meshoptimizer's order (see the
    module docstring), made on the machine's cores at once and kept in that order."""
    vcount = pool.vertex_count
    profiles = pool.target.ordered
    primaries = _primaries(profiles)
    large = tris.shape[0] > LARGE
    blocks = any(p.boundary_16bit for p in pool.profiles)
    variants = () if large and blocks else VARIANTS[:1] if large else VARIANTS
    jobs = [(f"batch@{primaries[rank].name}#{k}", primaries[rank], coefficients, weights)
            for k, (rank, coefficients, weights) in enumerate(variants) if rank < len(primaries)]

    def make(job):
        if job is None:
            return pool.make(REFERENCE, optimize_vertex_cache(tris, vcount).astype(np.int64))
        name, primary, coefficients, weights = job
        order, remap = _batch_order(tris, vcount, primary, profiles, dict(options), coefficients, weights, large)
        return pool.make(name, order, remap)

    for entry in in_parallel(make, [*jobs, None]):
        pool.keep(entry)


def add_alone(pool: Pool, tris: np.ndarray, options: dict) -> None:
    """For each profile the input beats every candidate on, the batch order made for it alone."""
    large = tris.shape[0] > LARGE
    for k in pool.beats_input_on():
        profile = pool.target.profiles[k]
        if profile.order_free:
            continue
        order, remap = _batch_order(tris, pool.vertex_count, profile, [profile], dict(options), large=large)
        pool.add(f"batch@{profile.name} alone", order, remap)


def add_layers(pool: Pool, tris: np.ndarray) -> str | None:
    """The order of breadth-first layers, kept where it beats meshoptimizer's order on some
    profile: its name, or None."""
    pool.add("layers", order_by_layers(tris, pool.vertex_count))
    if pool.ratios("layers").min() < 1:
        return "layers"
    pool.drop("layers")
    return None


def add_in_blocks(pool: Pool) -> None:
    """Past 2^16 vertices: every candidate without the 16-bit fix's copies, also numbered in
    2^16 blocks, copying a vertex only at corners that every profile without the block rule
    shades anyway (their miss masks of the candidate) and keeping every number's residue
    modulo the direct-mapped tables' sizes; kept where it predicts fewer invocations somewhere
    and the vertex buffer grows by at most :data:`~.tuning.BLOCKS_GROWTH`."""
    for name in [n for n, c in pool.candidates.items() if c.source.shape[0] == pool.vertex_count]:
        entry = pool[name]
        numbered, source = entry.triangles, entry.source
        count = source.shape[0]
        first_use = first_use_order([numbered], count)
        if not np.array_equal(first_use, np.arange(count)):
            numbered, first_use = number_by_first_use(numbered, count)
            source = source[first_use]
        free = np.full(numbered.shape[0], 7, np.uint8)
        for profile in pool.profiles:
            if not profile.boundary_16bit and profile.memory in MEMORY_KERNEL_KINDS:
                marks = np.zeros(numbered.shape[0], np.uint8)
                run_kernel(profile, numbered, count, np.zeros(numbered.shape[0] + 1, np.int64), _NO_COUNTS, marks)
                free &= marks
        slots = [p.memory_size for p in pool.profiles if p.memory == "direct"]
        modulus = int(np.lcm.reduce(slots)) if slots else 1
        tris, remap = number_in_blocks(numbered, count, free, modulus=modulus if (1 << 16) % modulus == 0 else 1)
        blocked = pool.add(f"{name} in blocks", tris, source[remap])
        if not np.any(blocked.invocations < entry.invocations) or remap.shape[0] > BLOCKS_GROWTH * count:
            pool.drop(blocked.name)
