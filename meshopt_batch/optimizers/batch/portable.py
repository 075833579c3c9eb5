"""One triangle order for several GPUs at once: the batch optimizer for a target of profiles.

An asset is built once and drawn on every GPU its users own.  For a :class:`~meshopt_batch.
targets.Target` of several profiles (``portable``: NVIDIA under OpenGL and Direct3D, AMD,
Intel and llvmpipe) the order is judged on every profile, as the ratio of its predicted
invocations (paper 001, Algorithm 1) to those of the order asset pipelines ship today,
meshoptimizer's ``optimize_vertex_cache`` with first-use vertex numbering.

Objective
---------
Among the orders below, the one with the lowest mean ratio over the target's profiles, taken
only from those that predict no more invocations than meshoptimizer's order *and* than the
input's on every profile, and whose index-codec size (:mod:`meshopt_batch.index_codec`) is at
most :data:`CODEC_SLACK` times meshoptimizer's; when none qualifies, meshoptimizer's own (or,
where that is worse than the input somewhere, the best of ours that is not).  So the result
is never worse than what a pipeline ships today on any GPU of the target, and better on each
where an order achieves it; the caller keeps the input where nothing beats it everywhere
(:mod:`meshopt_batch.vertex_set`).

Candidate orders
----------------
Algorithm 2 of paper 001 forms batches for one profile.  Here the *primary* profile forms the
batches and every other order-dependent profile of the target is tracked as an *auxiliary
memory* (:mod:`.aux`): its own Algorithm 1 on the same index stream, adding ``w_m`` per vertex
it would reuse to eq. 1's priority,

    p = k_r R_primary + sum_m w_m R_m + k_v V + k_d D + k_n N.

The primary's batches are the strictest ones the target knows (the paper's "jump" is free
only where every GPU starts a batch anyway), and the auxiliary terms decide where the next
batch starts and, among equal primary reuse, the order inside it -- the cache-like rules
(Hoppe 1999's and Lin & Yu 2006's caches, Forsyth 2006's scores) reward the locality the
batch optimizer alone gives up at its jumps.  The candidates (:data:`VARIANTS`) take the
strictest batch rule as primary (NVIDIA's 32 vertices / 96 indices) or the next distinct one
(AMD's fixed 384-index batches with an LRU of 15), each with the others as auxiliary memories
and its own ``k_v``, ``k_n`` and weights: finishing vertices off (a larger ``-k_v``) keeps the
sweep of batches closed, which a global FIFO like Intel's rewards.  Above :data:`LARGE`
triangles only the first variant is made, without ``D`` and without tracking llvmpipe, for
speed (and none past 2^16 vertices: see below).  :data:`VARIANTS` and :data:`AUX_WEIGHTS` were
tuned on bunny, armadillo_86k, the procedural torus and BrainStem's primitives 25 and 42, and
are reported on the other shared meshes and glTF primitives (``benchmarks/bench_portable.py``).

Where the input predicts fewer invocations on some profile than every candidate (an input in
rows is about as good as it gets for Intel's long FIFO), the order made for that profile alone
is tried as well, so that an order no worse than the input everywhere can still be found.

Last, up to 2^16 vertices, the chosen order (meshoptimizer's too; the input when none
dominates it) is refined in windows (:mod:`.window_search`): a run of 32 to 512 consecutive
triangles at a time is replaced by meshoptimizer's cache order of those triangles where that
lowers the sum of the ratios to meshoptimizer's order plus the worst ratio
(:data:`WORST_WEIGHT`) and no profile predicts more than meshoptimizer's order and the input
(or the start, where it was above them); each change is judged exactly on every profile by
simulating only the batches around it (:mod:`.window_judge`); in rounds while changes are
kept, within a work bound of :data:`WINDOW_WORK` triangles simulated.  meshoptimizer's
greedy order starts from its input's first triangle and resumes its dead ends in input
order, so the window's triangles given from the middle or last-first are other moves
(:data:`WINDOW_MOVES`), and so is K-Cache's order of them for AMD's LRU (Lin & Yu 2006: a
vertex's whole fan at a time): four searches, each from where the last stopped, the later
three one round each (:data:`LATER_MOVE_ROUNDS`).  Where meshoptimizer's order is the choice
(no batch candidate is at or below it on every profile within the codec slack), a second search starts
from the batch candidate with the lowest worst ratio to it, a profile or two above it or its
codec size over the slack, which the windows can bring under; only where that ratio is above 1
by no more than the first search took its best profile below 1 (:func:`_reach`), and the pool
takes whichever ends lower (on glTF primitives of DamagedHelmet, FlightHelmet and BrainStem, 9
of the benchmark's 61 rows, 0.1-1.3 % lower mean ratio, no row worse, 3 % more time).  Where
the input binds (rows that Intel's FIFO reuses perfectly) this folds rows into patches the
batch rules reuse better; elsewhere it lowers the mean, a little on one GPU traded for more on
another within the caps.  Last, a search starts from the order of breadth-first layers
(:mod:`.layers`: the rows a FIFO reuses, found on any mesh in any order), with
:data:`LAYERS_WORK` of the work bound per :data:`LAYERS_TRIANGLES` triangles (at least that
share, at most the whole bound), where that order predicts fewer invocations than
meshoptimizer's on some profile (its rows fit Intel's FIFO; never on the scans, whose layers
are long fronts): the windows fold its rows into patches while Intel still shades most
vertices once, which no start above reaches (work share set on BrainStem's primitive 25: mean
ratio 0.9728 -> 0.9567; on the held-out rows of the benchmark 9 of them 0.01-4.6 % lower mean,
none higher, FlightHelmet's primitive 0 0.9941 -> 0.9482).  Folding rows takes work in
proportion to the triangles: with a fixed share the search on flight_helmet's merged part of
43,858 triangles stopped at a worst ratio of 1.169 and was not chosen, with the whole bound it
ends at 0.9993 and is.  Last (:data:`LAST_SEARCHES`, each with :data:`LAST_SEARCH_WORK` of the
bound), the order the pool chose is searched once more with other window lengths
(:data:`SHIFTED_WINDOWS`), and where that kept a change, once more with :data:`WINDOWS`: each
search ends where none of its windows improves the order any more, and windows whose edges
fall elsewhere still find changes, after which the first lengths find more (on the 55 rows of
the benchmark held out for them 53 of them 0.008-0.75 % lower mean ratio, none higher, the
worst ratio lower on 36 and higher on three by at most 0.001, flight_helmet 0.9744 -> 0.9702
with its worst 0.9915 -> 0.9897; FlightHelmet's primitive 4, looked at while the share was
chosen, 0.9761 -> 0.9746; the 61 rows 147.4 -> 196.9 s; with the first search alone 165.2 s,
and a higher mean ratio on 49 of those rows, on none lower).

Every candidate is numbered in first-use order before it is judged (llvmpipe's direct-mapped
table depends on vertex numbers); over 2^16 vertices an NVIDIA primary keeps the 16-bit
boundary fix's numbering (paper 001 sec. 4) and NVIDIA's profiles are judged with the 2^16
block rule (:meth:`~meshopt_batch.targets.Target.evaluation_profiles`).  The fix's copies are
new vertices to the other GPUs' caches, so there every candidate numbered by first use is also
tried numbered in blocks (:func:`.boundary16.number_in_blocks`): a vertex is copied into the
next 2^16 block only where every profile without the block rule shades it anyway, every number
keeping its residue modulo llvmpipe's table, which leaves AMD, Intel and llvmpipe exactly as
they were and takes NVIDIA's batches out of the block switches (on bunny_sub2, meshoptimizer's
order so numbered is 0.839x its first-use numbering on NVIDIA, with 32,109 copies and 24,192
numbers nothing references: 9.9 % more vertices; on procedural grids, a sphere and a torus of
80-138k vertices 0.937-0.980x).  Above
:data:`LARGE` triangles past 2^16 vertices no batch candidate is made: the faster variant with
its fix was 1.024-1.033x meshoptimizer's order on AMD, Intel and llvmpipe on bunny_sub2 (and
1.003-1.013x without the fix), and took most of the time.

References
----------
Kerbl, B., Kenzel, M., Ivanchenko, E., Schmalstieg, D., Steinberger, M. (2018).  Revisiting
the Vertex Cache.  Proc. ACM Comput. Graph. Interact. Tech. 1(2) (paper 001: Algorithms 1-2,
eq. 1-2, sec. 3.3-4).
Hoppe, H. (1999).  Optimization of mesh locality for transparent vertex caching.  SIGGRAPH.
Lin, G., Yu, T. P.-Y. (2006).  An improved vertex caching scheme for 3D mesh rendering.  IEEE
TVCG 12(4).
Forsyth, T. (2006).  Linear-speed vertex cache optimisation.
Kapoulkine, A.  meshoptimizer (``optimize_vertex_cache``, ``encode_index_buffer``).
"""

from __future__ import annotations

import functools
import time

import numpy as np
from numba import njit

from ...errors import MeshoptBatchError
from ...index_codec import codec_bits
from ...reuse import as_index_array, predict
from ...reuse_kernels import MEMORY_KERNEL_KINDS, run_kernel
from ...targets import Target
from ...vertex_fetch import first_use_order, number_by_first_use
from ..kcache import kcache_order
from ..meshoptimizer_peer import optimize_vertex_cache
from ..result import OptimizeResult
from .boundary16 import number_in_blocks
from .layers import order_by_layers
from .optimizer import optimize_batch
from .window_judge import WindowJudge
from .window_search import refine_in_windows

__all__ = ["AUX_WEIGHTS", "BLOCKS_GROWTH", "CODEC_SLACK", "KCACHE_SIZE", "LARGE", "LAST_SEARCHES", "LAST_SEARCH_WORK",
           "LATER_MOVE_ROUNDS", "LAYERS_TRIANGLES", "LAYERS_WORK", "SHIFTED_WINDOWS", "VARIANTS", "WINDOWS",
           "WINDOW_MOVES", "WINDOW_ROUNDS", "WINDOW_WORK", "WORST_WEIGHT", "layers_work", "optimize_for_target"]

#: Weight ``w_m`` of one reusable vertex of an auxiliary memory, by its memory kind (eq. 1's
#: ``k_r`` is 1024): NVIDIA's look-back, a global or batched FIFO (Intel), an LRU (AMD), a
#: direct-mapped table (llvmpipe, tracked as its batch), fixed vertex groups.
AUX_WEIGHTS = {"lookback": 512, "lookback_dx": 512, "fifo": 512, "lru": 256, "direct": 256}
#: The batch candidates: (rank of the primary's batch rule, 0 the strictest; coefficient
#: overrides of eq. 2; auxiliary weight overrides by memory kind).
VARIANTS = (
    (0, {"k_v": -128}, {}),
    (1, {"k_v": -8}, {}),
    (1, {"k_v": -8, "k_n": 4}, {}),
    (1, {"k_v": -8}, {"fifo": 768}),
)
_NO_COUNTS = np.zeros(0, np.int64)
#: Past 2^16 vertices, a candidate numbered in blocks is refused when its vertex buffer (copies
#: and the numbers the residues leave unused) would grow by more than this factor (bunny_sub2:
#: 1.099).
BLOCKS_GROWTH = 1.25
#: A candidate's index-codec size may exceed meshoptimizer's order's by this factor.
CODEC_SLACK = 1.03
#: Above this many triangles only the first candidate is made, without the ``D`` term (the
#: faster variant of paper 001 sec. 4), so the whole stays within 10x meshoptimizer's time;
#: past 2^16 vertices none (meshoptimizer's order numbered in blocks instead).
LARGE = 1 << 18
#: Window lengths (triangles) of the window search from the chosen order: a few batches of
#: every rule (the last three added with the window judge, tuned on bunny, armadillo_86k and the
#: torus: every one of them better on mean and worst ratio than without).  WINDOW_WORK bounds the
#: triangles the window judge simulates in all.
WINDOWS = (128, 96, 192, 64, 256, 32, 512, 384)
WINDOW_WORK = 10_000_000
#: Weight of the worst profile's ratio in the window search's objective (tuned on bunny,
#: armadillo_86k and the procedural torus: 0, 1, 2, 3 tried).
WORST_WEIGHT = 1.0
#: Share of :data:`WINDOW_WORK` for the window search from the order of breadth-first layers
#: (:func:`_from_layers`) per :data:`LAYERS_TRIANGLES` triangles, and the least it gets: on
#: BrainStem's primitive 25 it ends where the whole bound does (mean ratio 0.9567); the whole
#: bound on every row took bench_portable's 61 rows 245.5 s against 143.5 s.
LAYERS_WORK = 0.25
#: Triangles per :data:`LAYERS_WORK` of the bound (BrainStem's primitive 25, where the share was
#: set), so the search from the layers gets work in proportion to the rows it folds, up to the
#: whole bound (found on flight_helmet's merged part; on bench_portable's rows flight_helmet,
#: FlightHelmet:0 and FlightHelmet:3 lower mean and worst ratio, no other row changed).
LAYERS_TRIANGLES = 6_614
#: Rounds of the window schedule at most (a round that keeps nothing ends the search sooner).
WINDOW_ROUNDS = 8
#: Window lengths of the first of the :data:`LAST_SEARCHES`: none of them one of
#: :data:`WINDOWS`, so their edges fall where the searches before had none.  Tuned on the
#: torus, bunny, armadillo_86k and BrainStem's primitives 25 and 42, whose mean ratio that
#: search alone takes 0.9712 -> 0.9693, 0.9743 -> 0.9734, 0.9713 -> 0.9709, 0.9567 -> 0.9538 and
#: 0.9761 -> 0.9747 (lengths 56, 88, 120, 136, 200 and 264 did about as well on the torus and
#: BrainStem's).
SHIFTED_WINDOWS = (48, 80, 160, 320, 112, 224)
#: Share of the work bound for each of the :data:`LAST_SEARCHES`.  On the rows above, the search
#: with :data:`SHIFTED_WINDOWS` alone ended 0.0000-0.0004 lower with half the bound than with a
#: quarter, at twice its time; a second search with :data:`WINDOWS` and another quarter ended
#: 0.0000-0.0019 lower (the torus 0.9674, BrainStem's primitive 25 0.9519), and a third, shifted
#: again, 0.0000-0.0007 lower still (not made, for its time).
LAST_SEARCH_WORK = 0.25
#: The last searches from the order the pool chose, in turn while each keeps a change: (the
#: pool's name of the stage, window lengths).
LAST_SEARCHES = (("shifted windows", SHIFTED_WINDOWS), ("windows", WINDOWS))


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


def _batch_candidate(tris, vcount, primary, profiles, use_distance, queue, fix_16bit, options, coefficients=None,
                     weights=None, large=False):
    """Algorithm 2 with ``primary`` forming the batches and the other profiles of the target as
    auxiliary memories (``large``: not the direct-mapped ones, whose batch-long look-back costs
    the most to track): (triangles, new -> old vertex or None)."""
    weights = {**AUX_WEIGHTS, **(weights or {})}
    aux = [p.with_16bit_boundaries(False) for p in profiles
           if p is not primary and not _same_rule(p, primary) and p.memory in weights
           and not (large and p.memory == "direct")]
    res = optimize_batch(tris, vcount, profile=primary, use_distance=use_distance, queue=queue, fix_16bit=fix_16bit,
                         coefficients=coefficients or None, aux_profiles=aux,
                         aux_weights=[weights[p.memory] for p in aux], **options)
    out = np.asarray(res.triangles, np.int64)
    remap = np.asarray(res.vertex_remap, np.int64)
    if remap.shape[0] == vcount and np.array_equal(remap, np.arange(vcount)):
        return out, None
    return out, remap


def _meshoptimizer_candidate(tris, vcount):
    return optimize_vertex_cache(tris, vcount).astype(np.int64), None


def _numbered(tris, remap, vcount):
    """(triangles, new -> old vertex) with the vertices in first-use order, unless the order
    came with its own numbering (the 16-bit fix)."""
    if remap is not None:
        return tris, remap
    return number_by_first_use(tris, vcount)


def _in_blocks(pool: _Pool, name: str) -> None:
    """Add the candidate ``name`` numbered in 2^16 blocks (:func:`.boundary16.number_in_blocks`),
    copying a vertex only at corners that every profile without the block rule shades anyway
    (their miss masks of the candidate) and keeping every number's residue modulo the
    direct-mapped tables' sizes, so those profiles predict what they did and NVIDIA's batches
    stay in one block; kept where it predicts fewer invocations somewhere."""
    numbered, source = pool.judged[name][:2]
    count = source.shape[0]
    first_use = first_use_order([numbered], count)
    if not np.array_equal(first_use, np.arange(count)):     # a candidate may come numbered otherwise
        numbered, first_use = number_by_first_use(numbered, count)
        source = source[first_use]
    free = np.full(numbered.shape[0], 7, np.uint8)
    for profile in pool.target.evaluation_profiles(pool.vertex_count):
        if not profile.boundary_16bit and profile.memory in MEMORY_KERNEL_KINDS:
            marks = np.zeros(numbered.shape[0], np.uint8)
            run_kernel(profile, numbered, count, np.zeros(numbered.shape[0] + 1, np.int64), _NO_COUNTS, marks)
            free &= marks
    slots = [p.memory_size for p in pool.target.evaluation_profiles(pool.vertex_count) if p.memory == "direct"]
    modulus = int(np.lcm.reduce(slots)) if slots else 1
    tris, remap = number_in_blocks(numbered, count, free, modulus=modulus if (1 << 16) % modulus == 0 else 1)
    pool.add(f"{name} in blocks", (tris, source[remap]))
    before, after = pool.judged[name][2].values(), pool.judged[f"{name} in blocks"][2].values()
    if not any(a < b for a, b in zip(after, before, strict=True)) or remap.shape[0] > BLOCKS_GROWTH * count:
        # copies for nothing, or a vertex buffer grown past what a pipeline would take
        del pool.judged[f"{name} in blocks"]


def _codec_bits(order, vcount) -> float:
    """An order's raw index-codec size numbered in first-use order, as it is written."""
    numbered, source = _numbered(order, None, vcount)
    return codec_bits(numbered, source.shape[0]).raw


class _Pool:
    """Candidate orders, each numbered and predicted once on every profile of the target, and
    the choice among them (see the module docstring)."""

    def __init__(self, tris: np.ndarray, vertex_count: int, target: Target):
        self.target = target
        self.vertex_count = vertex_count
        self.judged: dict = {}
        self.input = [predict(tris, vertex_count, profile=p).invocations
                      for p in target.evaluation_profiles(vertex_count)]

    def _predicted(self, numbered: np.ndarray, count: int) -> dict[str, int]:
        """A numbered order's predicted invocations on every profile of the target."""
        return {p.name: predict(numbered, count, profile=p).invocations
                for p in self.target.evaluation_profiles(count)}

    def add(self, name: str, candidate) -> None:
        numbered, source = _numbered(*candidate, self.vertex_count)
        self.judged[name] = [numbered, source, self._predicted(numbered, source.shape[0]), None]

    def invocations(self, tris: np.ndarray) -> np.ndarray:
        """An order's predicted invocations on every profile, numbered by first use."""
        numbered, source = _numbered(tris, None, self.vertex_count)
        return np.array(list(self._predicted(numbered, source.shape[0]).values()))

    def original(self, name: str) -> np.ndarray:
        """A candidate's triangles in the input's vertex numbers."""
        numbered, source = self.judged[name][:2]
        return source[numbered]

    def codec(self, name: str) -> float:
        entry = self.judged[name]
        if entry[3] is None:
            entry[3] = codec_bits(entry[0], entry[1].shape[0]).raw
        return entry[3]

    def _ratios(self, entry) -> list[float]:
        ref = self.judged["meshoptimizer"][2].values()
        return [a / max(b, 1) for a, b in zip(entry[2].values(), ref, strict=True)]

    def mean_ratio(self, entry) -> float:
        return float(np.mean(self._ratios(entry)))

    def _dominates(self, name: str, inv) -> bool:
        return all(a <= b for a, b in zip(self.judged[name][2].values(), inv, strict=True))

    def fallback_is_meshoptimizer(self) -> bool:
        """meshoptimizer's order is no worse than the input on every profile: :meth:`choose`
        takes it unless one of ours is no worse than it and within its codec slack."""
        return self._dominates("meshoptimizer", self.input)

    def choose(self) -> str | None:
        """Ours that is no worse than meshoptimizer's and the input on every profile (codec
        within :data:`CODEC_SLACK`); else meshoptimizer's if it is no worse than the input;
        else ours that is no worse than the input; else None."""
        ours = [n for n in self.judged if n != "meshoptimizer"]
        ref = list(self.judged["meshoptimizer"][2].values())
        best = [n for n in ours if self._dominates(n, ref) and self._dominates(n, self.input)
                and self.codec(n) <= CODEC_SLACK * self.codec("meshoptimizer")]
        if not best:
            if self.fallback_is_meshoptimizer():
                return "meshoptimizer"
            best = [n for n in ours if self._dominates(n, self.input)]
        return min(best, key=lambda n: self.mean_ratio(self.judged[n])) if best else None

    def ratios(self, name: str) -> list[float]:
        """A candidate's predicted invocations over meshoptimizer's order's, per profile."""
        return self._ratios(self.judged[name])

    def closest_to_meshoptimizer(self) -> str | None:
        """Ours with the lowest worst ratio to meshoptimizer's order (then the lowest mean):
        the batch candidate nearest to being no worse than it everywhere."""
        ours = [n for n in self.judged if n != "meshoptimizer"]
        return min(ours, key=lambda n: (max(self.ratios(n)), sum(self.ratios(n)))) if ours else None

    def input_wins(self, profiles) -> list:
        """The profiles (of ``profiles``, the target's order-dependent ones) on which the input
        predicts fewer invocations than every candidate."""
        judged_as = self.target.evaluation_profiles(self.vertex_count)
        wins = set()
        for k, q in enumerate(judged_as):
            if self.input[k] < min(entry[2][q.name] for entry in self.judged.values()):
                wins.add(self.target.profiles[k].name)
        return [p for p in profiles if p.name in wins]


@njit(cache=True)
def _number_compactly(flat, scratch, used, out):
    """Number the distinct vertices of ``flat`` 0, 1, ... in order of first use (``out``; the
    vertices in ``used``), with ``scratch`` (-1 for every vertex, and so again on return) as the
    table; returns how many there are.  One pass, where ``np.unique`` sorts: meshoptimizer's
    order does not depend on the numbers, only on the triangles' order and adjacency."""
    count = 0
    for k in range(flat.shape[0]):
        v = flat[k]
        if scratch[v] < 0:
            scratch[v] = count
            used[count] = v
            count += 1
        out[k] = scratch[v]
    for k in range(count):
        scratch[used[k]] = -1
    return count


def _compact(window: np.ndarray, scratch: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """A window's triangles with its vertices numbered 0, 1, ... by first use (``scratch``: -1
    for every vertex of the buffer): ``(those triangles, new -> buffer vertex, count)``."""
    flat = np.ascontiguousarray(window, np.int64).reshape(-1)
    used, compact = np.empty(flat.shape[0], np.int64), np.empty(flat.shape[0], np.uint32)
    count = _number_compactly(flat, scratch, used, compact)
    return compact.reshape(-1, 3), used, count


def _local_order(window: np.ndarray, scratch: np.ndarray) -> np.ndarray:
    """meshoptimizer's cache order of a window's triangles (its vertices numbered compactly):
    it starts from the window's first triangle, next to what precedes the window."""
    compact, used, count = _compact(window, scratch)
    return used[optimize_vertex_cache(compact, count).astype(np.int64)]


def _local_order_from_middle(window: np.ndarray, scratch: np.ndarray) -> np.ndarray:
    """meshoptimizer's order of the window given from its middle triangle on (another seed,
    and its dead ends resumed in another order)."""
    return _local_order(np.roll(window, -(window.shape[0] // 2), axis=0), scratch)


def _local_order_from_end(window: np.ndarray, scratch: np.ndarray) -> np.ndarray:
    """meshoptimizer's order of the window given last triangle first (the seed next to what
    follows the window)."""
    return _local_order(window[::-1], scratch)


def _local_kcache(window: np.ndarray, scratch: np.ndarray) -> np.ndarray:
    """K-Cache's order (:mod:`..kcache`, Lin & Yu 2006) of a window's triangles for a cache of
    :data:`KCACHE_SIZE`: a focus vertex's whole fan at a time, the focus chosen by simulating
    the cache ahead, where meshoptimizer's scorer takes one triangle at a time."""
    compact, _, count = _compact(window, scratch)
    return window[kcache_order(compact, count, KCACHE_SIZE)]


#: Cache size of the K-Cache move: AMD's LRU of 15 vertices, the smallest cache of the
#: ``portable`` target (K-Cache's own default of 10 ended with a mean ratio 0.0002-0.0022 higher
#: on the grid, the sphere and BrainStem's primitive 42, the same on FlightHelmet's primitive 0
#: and the torus).
KCACHE_SIZE = 15
#: The window search's local moves, each a search from where the one before stopped
#: (:func:`_refine`).  Taking them in turn again until none keeps a change (each up to eight
#: rounds) lowered the torus' mean ratio by 0.1 % more and BrainStem's NVIDIA invocations by
#: 0.2 % more, at 1.7x the time of one turn each; so each runs once.  K-Cache's move last, with
#: the work the others leave (bench_portable's 61 rows: 39 lower mean ratio, none higher, the
#: average 0.9830 -> 0.9799; 136.9 -> 145.0 s in back-to-back runs); second or third instead
#: of meshoptimizer's move from the end, the average fell less (0.9811, 0.9817).
WINDOW_MOVES = (_local_order, _local_order_from_middle, _local_order_from_end, _local_kcache)
#: Rounds of the window schedule for each move after the first (the first has
#: :data:`WINDOW_ROUNDS`): one round keeps most of what more would (torus: worst 0.983 against
#: 0.982 with eight, BrainStem's primitive 25: mean 0.9728 against 0.9723) at 70-80 % of the time.
LATER_MOVE_ROUNDS = 1


def _window_objective(reference: np.ndarray):
    """The window search's objective: the sum of the ratios to meshoptimizer's order over the
    profiles plus :data:`WORST_WEIGHT` times the largest (so a change that lowers the mean by
    raising the worst profile must lower the mean by more)."""
    reference = reference.tolist()

    def objective(invocations: np.ndarray) -> float:
        ratios = [a / b for a, b in zip(invocations.tolist(), reference, strict=True)]
        return sum(ratios) + WORST_WEIGHT * max(ratios)
    return objective


def _refined(start: str | None, stage: str = "windows") -> str:
    """The pool's name of the window search's order from ``start`` (None: the input)."""
    return f"{start or 'input'} + {stage}"


def _refine(pool: _Pool, tris: np.ndarray, chosen: str | None, work: int, *, windows=WINDOWS,
            stage: str = "windows") -> str | None:
    """The window search (:mod:`.window_search`) from the chosen order (the input when none
    was), lowering :func:`_window_objective` with every profile capped at
    meshoptimizer's and the input's invocations (or the start's, where it is above them).

    The moves of :data:`WINDOW_MOVES` take turns, each a search of its own from where the last
    one stopped (the later ones :data:`LATER_MOVE_ROUNDS` rounds), within one work bound: the
    first search ends in an order none of its window changes improves, which another move's
    seed can still improve.  Where meshoptimizer's order is the pool's fallback (no worse than
    the input on every profile), a move whose order would pass :data:`CODEC_SLACK` times its
    index-codec size is undone and the search ends, as the pool would refuse the result for it.
    ``windows`` are the window lengths (:data:`WINDOWS`, or those of :data:`LAST_SEARCHES`).  The
    result is added to the pool as ``<start> + <stage>``; returns the pool's choice made again."""
    start = tris if chosen is None else pool.original(chosen)
    reference = np.array(list(pool.judged["meshoptimizer"][2].values()), np.float64)
    begun = np.array(pool.input if chosen is None else list(pool.judged[chosen][2].values()), np.float64)
    caps = np.maximum(np.minimum(reference, pool.input), begun)
    profiles = pool.target.evaluation_profiles(pool.vertex_count)
    # the pool weighs the codec size only against meshoptimizer's order, its fallback where
    # that order is no worse than the input everywhere
    codec_limit = CODEC_SLACK * pool.codec("meshoptimizer") if pool.fallback_is_meshoptimizer() else np.inf
    judge = WindowJudge(start, pool.vertex_count, profiles)
    scratch = np.full(pool.vertex_count, -1, np.int64)
    kept = 0
    for turn, move in enumerate(WINDOW_MOVES):
        if judge.simulated >= work:
            break
        before = judge.order.copy()
        _, _, changes = refine_in_windows(judge, local=functools.partial(move, scratch=scratch), windows=windows,
                                          work=work - judge.simulated,
                                          rounds=LATER_MOVE_ROUNDS if turn else WINDOW_ROUNDS,
                                          objective=_window_objective(reference), caps=caps)
        if changes and _codec_bits(judge.order, pool.vertex_count) > codec_limit:
            judge = WindowJudge(before, pool.vertex_count, profiles)
            break
        kept += changes
    if kept:
        pool.add(_refined(chosen, stage), (judge.order, None))
    return pool.choose()


def _reach(pool: _Pool) -> float:
    """How far the window search from meshoptimizer's order took its best profile below it (0
    where it kept nothing): a second start further above it on some profile is not tried."""
    name = _refined("meshoptimizer")
    return 1 - min(pool.ratios(name)) if name in pool.judged else 0.0


def layers_work(triangle_count: int, work: int) -> int:
    """The work bound of the search from the breadth-first layers: :data:`LAYERS_WORK` of
    ``work`` per :data:`LAYERS_TRIANGLES` triangles, at least that share, at most ``work``."""
    return int(min(1.0, LAYERS_WORK * max(1.0, triangle_count / LAYERS_TRIANGLES)) * work)


def _from_layers(pool: _Pool, tris: np.ndarray, work: int) -> str | None:
    """The window search from the order of breadth-first layers (:mod:`.layers`), with
    :data:`LAYERS_WORK` of the work bound per :data:`LAYERS_TRIANGLES` triangles (at least that
    share, at most the whole bound), tried only where that order predicts fewer invocations
    than meshoptimizer's on some profile (its rows fit a FIFO); returns the pool's choice."""
    pool.add("layers", (order_by_layers(tris, pool.vertex_count), None))
    if min(pool.ratios("layers")) < 1:
        return _refine(pool, tris, "layers", layers_work(tris.shape[0], work))
    del pool.judged["layers"]
    return pool.choose()


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
        Two or more profiles (one profile is :func:`~.optimizer.optimize_batch`'s job).
    use_distance, queue, fix_16bit, **options
        As :func:`~.optimizer.optimize_batch`, for every batch candidate.
    window_work : int, keyword-only
        Triangles the window search may simulate (:data:`WINDOW_WORK`; more is better and slower
        until the search converges: at the default bunny's order is done in about 5 s on a 2-core
        VM, mean ratio 0.974, worst 0.987; 0 turns it off).  ``optimize --effort M`` is M million.

    Returns
    -------
    OptimizeResult
        ``triangles`` in the new numbering, ``vertex_remap`` (new -> original vertex: the
        first-use order, or the 16-bit fix's vertices and copies); ``stats``: the chosen
        candidate, every candidate's predicted invocations per profile and codec bits, timings.
    """
    t0 = time.perf_counter()
    tris, vcount = as_index_array(triangles, vertex_count)
    if tris.shape[0] == 0:
        return OptimizeResult(np.zeros((0, 3), np.uint32), None, None, {"candidate": "empty", "seconds": 0.0})
    profiles = target.ordered
    if not profiles:
        raise MeshoptBatchError(f"target {target.name!r}: no profile depends on the triangle order")
    tris64 = np.asarray(tris, np.int64)
    pool = _Pool(tris64, vcount, target)
    primaries = _primaries(profiles)
    large = tris.shape[0] > LARGE
    blocks = any(p.boundary_16bit for p in target.evaluation_profiles(vcount))
    # large and past 2^16 vertices the faster variant loses to meshoptimizer's order numbered in
    # blocks on every GPU but NVIDIA (bunny_sub2) and takes most of the time: not made
    variants = () if large and blocks else VARIANTS[:1] if large else VARIANTS
    for k, (rank, coefficients, weights) in enumerate(variants):
        if rank < len(primaries):
            primary = primaries[rank]
            pool.add(f"batch@{primary.name}#{k}", _batch_candidate(
                tris64, vcount, primary, profiles, use_distance and not large, queue, fix_16bit, options,
                coefficients=coefficients, weights=weights, large=large))
    pool.add("meshoptimizer", _meshoptimizer_candidate(tris64, vcount))
    chosen = pool.choose()
    if chosen is None:
        # the input beats every order so far on some profile: try the order made for that
        # profile alone (an input in rows is as good as it gets for a long FIFO, Intel's)
        for p in pool.input_wins(profiles):
            pool.add(f"batch@{p.name} alone", _batch_candidate(tris64, vcount, p, [p], use_distance and not large,
                                                              queue, fix_16bit, options))
        chosen = pool.choose()
    if blocks:
        # past 2^16 vertices: the candidates without the 16-bit fix's copies, again in blocks
        for name in [n for n, entry in pool.judged.items() if entry[1].shape[0] == vcount]:
            _in_blocks(pool, name)
        chosen = pool.choose()
    if not large and vcount <= (1 << 16):
        second = pool.closest_to_meshoptimizer() if chosen == "meshoptimizer" and window_work > 0 else None
        chosen = _refine(pool, tris64, chosen, window_work)
        if second is not None and max(pool.ratios(second)) - 1 <= _reach(pool):
            chosen = _refine(pool, tris64, second, window_work)
        if window_work > 0:
            chosen = _from_layers(pool, tris64, window_work)
            for stage, windows in LAST_SEARCHES:
                before, chosen = chosen, _refine(pool, tris64, chosen, int(LAST_SEARCH_WORK * window_work),
                                                 windows=windows, stage=stage)
                if chosen == before:
                    break
    chosen = chosen or "meshoptimizer"
    judged, mean_ratio = pool.judged, pool.mean_ratio
    numbered, source, inv, _ = judged[chosen]
    out = numbered.astype(np.uint32)
    if np.asarray(triangles).dtype == np.uint16 and source.shape[0] <= (1 << 16):
        out = out.astype(np.uint16)
    stats = {"target": target.name, "candidate": chosen, "invocations": dict(inv),
             "candidates": {name: {"invocations": dict(e[2]), "codec_bits": e[3], "mean_ratio": mean_ratio(e)}
                            for name, e in judged.items()},
             "reference_codec_bits": pool.judged["meshoptimizer"][3],
             "triangles": int(tris.shape[0]), "vertices_in": int(vcount), "vertices_out": int(source.shape[0]),
             "vertex_copies": int(source.shape[0] - vcount), "seconds": time.perf_counter() - t0}
    return OptimizeResult(out, source, None, stats)
