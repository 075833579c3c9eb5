"""Every tuned constant of the portable optimizer, in one table.

The *tuning rows*: bunny, armadillo_86k, the procedural torus (96 x 48) and BrainStem's
primitives 25 and 42 (the rows ``benchmarks/bench_portable.py`` marks ``tuned``), five more
procedural meshes that the benchmark does not list (tori of 64 x 40 and 120 x 24, a 48 x 48 grid,
a 32 x 64 sphere, an icosphere of 3 subdivisions), and the 25 primitives of ``../shared/gltf``
with 300 to 999 triangles (below the benchmark's 1,000).  Each constant was chosen on them by
the objective of :mod:`.objective` against the time it costs (BrainStem's whole file for the
time where its many small primitives decide), and is reported on the benchmark's other, held-out
rows and on ``benchmarks/bench_assets.py``'s assets.  :data:`TABLE` lists them with what each
was tuned on; the benchmarks print the figures.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["AUX_WEIGHTS", "BLOCKS_GROWTH", "CODEC_SLACK", "KCACHE_SIZE", "LARGE", "MARGIN", "MAX_ROUNDS", "MAX_TURNS",
           "MOVE_WINDOWS", "MOVES", "SCREEN_SHARE", "SCREEN_WINDOWS", "TABLE", "THRESHOLD", "VARIANTS", "WINDOWS",
           "WINDOW_WORK", "WORST_WEIGHT", "Tuned"]

#: Weight ``w_m`` of one reusable vertex of an auxiliary memory in eq. 1's priority, by memory
#: kind (``k_r`` is 1024).
AUX_WEIGHTS = {"lookback": 512, "lookback_dx": 512, "fifo": 512, "lru": 256, "direct": 256}
#: The batch candidates: (rank of the primary's batch rule, 0 the strictest; coefficient
#: overrides of eq. 2; auxiliary weight overrides by memory kind).
VARIANTS = (
    (0, {"k_v": -128}, {}),
    (1, {"k_v": -8}, {}),
    (1, {"k_v": -8, "k_n": 4}, {}),
    (1, {"k_v": -8}, {"fifo": 768}),
)
#: The objective's weight of the worst profile's ratio.
WORST_WEIGHT = 1.0
#: Window lengths (triangles) of the search, in the order they are tried: a few batches of every
#: rule; the last six put window edges where the first eight do not.
WINDOWS = (128, 96, 192, 64, 256, 32, 512, 384, 48, 80, 160, 320, 112, 224)
#: Window lengths of the starts' screening searches.
SCREEN_WINDOWS = (128, 96, 64, 32)
#: The local moves (:mod:`.moves`), taking turns in this order.
MOVES = (0, 1, 2, 3)
#: The window lengths of the moves that do not use all of :data:`WINDOWS`: K-Cache's cost grows
#: faster than the window's length, and longer windows gain it little.
MOVE_WINDOWS = {3: (128, 96, 64, 32, 48, 80, 112)}
#: Rounds of the window schedule at most per move and turn (a round that keeps nothing ends it).
MAX_ROUNDS = 8
#: Turns of the moves at most (a turn that keeps nothing ends the search).
MAX_TURNS = 1
#: A window is tried again in a later round or turn only where a change was kept within this
#: many triangles of it since it was last tried ("don't look" bits).
MARGIN = 128
#: A trial is refused without judging the remaining profiles once the cheaper ones judged so far
#: predict this many invocations more (each profile's change scaled to the mean profile's).
THRESHOLD = 2.0
#: Cache size of the K-Cache move: AMD's LRU of 15 vertices, the smallest cache of ``portable``.
KCACHE_SIZE = 15
#: The work bound for one index buffer, screening and search together: triangles simulated by the
#: judge (the mean over the profiles) plus the triangles the moves reorder.  A search that
#: converges takes a few hundred per triangle, so the bound stops only large buffers' searches.
WINDOW_WORK = 6_000_000
#: Share of the work bound each start's screening search may take.
SCREEN_SHARE = 0.125
#: A candidate's index-codec size may exceed meshoptimizer's order's by this factor (a policy:
#: compressed delivery must not grow noticeably).
CODEC_SLACK = 1.03
#: Above this many triangles only the first batch candidate is made, without the ``D`` term
#: (the faster variant of paper 001 sec. 4); past 2^16 vertices none (a policy: time).
LARGE = 1 << 18
#: Past 2^16 vertices, a candidate numbered in blocks is refused when its vertex buffer would
#: grow by more than this factor (a policy: what a pipeline takes).
BLOCKS_GROWTH = 1.25


class Tuned(NamedTuple):
    """One row of :data:`TABLE`."""

    name: str
    value: object
    tuned_on: str


_EARLIER = "bunny, armadillo_86k, the torus, BrainStem:25 and :42 (the mean ratio of the batch candidates)"
#: Every constant above with one line on what it was tuned on.
TABLE = (
    Tuned("AUX_WEIGHTS", AUX_WEIGHTS, _EARLIER),
    Tuned("VARIANTS", VARIANTS, _EARLIER),
    Tuned("WORST_WEIGHT", WORST_WEIGHT, "bunny, armadillo_86k and the torus: 0, 1, 2 and 3 compared"),
    Tuned("WINDOWS", WINDOWS, "the tuning rows: the first eight lengths and all fourteen compared"),
    Tuned("SCREEN_WINDOWS", SCREEN_WINDOWS, "the tuning rows and BrainStem's time: these four and all compared"),
    Tuned("MOVES", MOVES, "the tuning rows: each left out, and Tipsify or meshoptimizer's strip order added"),
    Tuned("MOVE_WINDOWS", MOVE_WINDOWS, "the tuning rows and BrainStem's time: each move's gain per second by length"),
    Tuned("MAX_ROUNDS", MAX_ROUNDS, "the tuning rows: turns x rounds of 1 x 8, 2 x 8, 4 x 8, 3 x 2 and 6 x 1"),
    Tuned("MAX_TURNS", MAX_TURNS, "the tuning rows: as MAX_ROUNDS"),
    Tuned("MARGIN", MARGIN, "the tuning rows: every window every round, 0 and 128 compared"),
    Tuned("THRESHOLD", THRESHOLD, "the tuning rows and BrainStem's time: none, 0, 1, 2 and 5 compared"),
    Tuned("KCACHE_SIZE", KCACHE_SIZE, "the grid, the sphere, the torus, BrainStem:42: 10 and 15 compared"),
    Tuned("WINDOW_WORK", WINDOW_WORK, "bunny and armadillo_86k: 6, 10 and 20 million; the tuning rows and BrainStem's "
          "time: 200, 300 and 400 per triangle instead"),
    Tuned("SCREEN_SHARE", SCREEN_SHARE, "a bound the screens of the tuning rows reach only past 10^5 triangles"),
    Tuned("CODEC_SLACK", CODEC_SLACK, "a policy (compressed delivery), not tuned"),
    Tuned("LARGE", LARGE, "a policy (time on bunny_sub2 within 5x meshoptimizer's), not tuned"),
    Tuned("BLOCKS_GROWTH", BLOCKS_GROWTH, "a policy (the vertex buffer growth a pipeline takes), not tuned"),
)
