"""Every tuned constant of the portable optimizer, in one table.

Each was tuned on the *tuning rows* of ``benchmarks/bench_portable.py`` -- bunny, armadillo_86k,
the procedural torus (96 x 48) and BrainStem's primitives 25 and 42 -- by the objective of
:mod:`.objective` (the mean ratio to meshoptimizer's order over the profiles of ``portable``,
no profile above its cap) and the time it costs, and is reported on the benchmark's other,
held-out rows and on ``benchmarks/bench_assets.py``'s assets.  :data:`TABLE` lists them with
what each was tuned on; the benchmarks print the figures.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["AUX_WEIGHTS", "BLOCKS_GROWTH", "CODEC_SLACK", "KCACHE_SIZE", "LARGE", "MARGIN", "MAX_ROUNDS", "MAX_TURNS",
           "MOVES", "SCREEN_SHARE", "TABLE", "THRESHOLD", "VARIANTS", "WINDOWS", "WINDOW_WORK",
           "WORST_WEIGHT", "Tuned"]

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
#: Window lengths (triangles) of the search: a few batches of every rule; the second half's
#: edges fall where the first half's do not.
WINDOWS = (128, 96, 192, 64, 256, 32, 512, 384, 48, 80, 160, 320, 112, 224)
#: The local moves (:mod:`.moves`), each a search from where the one before stopped.
MOVES = (0, 1, 2, 3)
#: Rounds of the window schedule at most per move and turn (a round that keeps nothing ends it).
MAX_ROUNDS = 8
#: Turns of the moves at most (a turn that keeps nothing ends the search).
MAX_TURNS = 4
#: A window is tried again in a later round only where a change was kept within this many
#: triangles of it since it was last tried ("don't look" bits).
MARGIN = 128
#: A trial is refused without judging the remaining profiles once the cheaper ones judged so far
#: predict this many invocations more (each profile's change scaled to the mean profile's).
THRESHOLD = 2.0
#: Cache size of the K-Cache move: AMD's LRU of 15 vertices, the smallest cache of ``portable``.
KCACHE_SIZE = 15
#: The search's work bound for one index buffer, all its searches together: triangles simulated
#: by the judge (the mean over the profiles) plus the triangles the moves reorder.
WINDOW_WORK = 20_000_000
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


_ROWS = "the tuning rows (bunny, armadillo_86k, torus_96x48, BrainStem:25, BrainStem:42)"
#: Every constant above with one line on what it was tuned on.
TABLE = (
    Tuned("AUX_WEIGHTS", AUX_WEIGHTS, f"{_ROWS}: mean ratio of the batch candidates"),
    Tuned("VARIANTS", VARIANTS, f"{_ROWS}: mean ratio of the best batch candidate"),
    Tuned("WORST_WEIGHT", WORST_WEIGHT, f"{_ROWS}: 0, 1, 2 and 3 tried, mean and worst ratio"),
    Tuned("WINDOWS", WINDOWS, f"{_ROWS}: mean and worst ratio against the search's time"),
    Tuned("MOVES", MOVES, f"{_ROWS}: each move's gain against its time"),
    Tuned("MAX_ROUNDS", MAX_ROUNDS, f"{_ROWS}: the rounds the searches take before none keeps a change"),
    Tuned("MAX_TURNS", MAX_TURNS, f"{_ROWS}: the turns the searches take before none keeps a change"),
    Tuned("MARGIN", MARGIN, f"{_ROWS}: 0, 128 and none tried; trials saved against mean ratio"),
    Tuned("THRESHOLD", THRESHOLD, f"{_ROWS}: trials refused early against changes lost"),
    Tuned("KCACHE_SIZE", KCACHE_SIZE, "the grid, the sphere, BrainStem:42, FlightHelmet:0, the torus: 10 and 15 tried"),
    Tuned("WINDOW_WORK", WINDOW_WORK, f"{_ROWS} and bench_assets' time against gltfpack's"),
    Tuned("SCREEN_SHARE", SCREEN_SHARE, f"{_ROWS}: the starts' screening rounds"),
    Tuned("CODEC_SLACK", CODEC_SLACK, "policy (compressed delivery), not tuned"),
    Tuned("LARGE", LARGE, "policy (time on bunny_sub2 within 5x meshoptimizer's), not tuned"),
    Tuned("BLOCKS_GROWTH", BLOCKS_GROWTH, "policy (vertex buffer growth a pipeline takes), not tuned"),
)
