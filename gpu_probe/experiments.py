"""The batch-identification experiments of paper 001 sec. 3.3, automated.

Every experiment draws a family of small index buffers (each as its own draw call), reads
the real vertex-shader invocations, and returns an :class:`Experiment`: the raw x/y
series, the positions where the count steps, and the value it derives.

==================  =====================================================================
``staircase``       repeating ``{0,1,2}`` of growing length: steps every ``MAX_SIZE``
``batch_triplets``  each assumed batch filled with its own repeating triplet: exactly 3
                    invocations per batch confirms ``MAX_SIZE`` (paper: "we confirm ...")
``uniques``         batches of ``N`` new vertices then repeats: ``MAX_UNIQUES``
``lookback``        a vertex repeated at growing index distance ``n`` (per position mod 3)
``lru``             a vertex repeated with ``k`` distinct vertices in between
``refresh``         as ``lru`` but with a hit in the middle: LRU (hits refresh) vs FIFO
``slot_conflicts``  one vertex ``X+d`` between two uses of ``X``: is ``X`` evicted? finds
                    direct-mapped retention keyed by ``index mod M`` (llvmpipe)
``extent``          which vertices a draw shades: only those it references, the aligned
                    groups around them (Mali Valhall) or its whole index range (Mali-400)
``boundary_16bit``  the same buffers with indices straddling a multiple of 2^16 or not
``block_switch``    vertices of two 2^16 blocks in one batch: is a vertex reused after the
                    index stream moved to the other block and back (A B A), or only within
                    one run of a block (A B B)?  Plus random buffers around 2^16 and 2^17
``index_size``      the same buffers as 16- and 32-bit indices
``render_state``    rasterizer discard vs a 1x1 framebuffer, extra varyings, draw offset
``random``          random index buffers of many sizes (verification set for ``fit``)
==================  =====================================================================

:func:`run_experiments` runs them in order against a counter (:mod:`gpu_probe.counters`:
this machine's GPU through OpenGL by default or through WebGPU, or any
``FUNCTION(indices, vertex_count)``), feeding the ``MAX_SIZE`` found by the staircase into the
later ones; ``index_size`` and ``render_state`` need a counter that can change the index type and
render state (OpenGL, WebGPU) and are left out otherwise. The suite takes a few seconds on llvmpipe.
"""

from __future__ import annotations

import functools
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

import numpy as np

from .counters import RECORD_KEYS, gl_counter, renderer_record


@dataclass
class Experiment:
    """Raw result of one experiment.

    Attributes
    ----------
    name, description : str
    x_label : str
        What ``x`` is (length, N, distance, ...).
    x : list[int]
    measured : list[int]
        Invocations measured for each x (per draw, or per batch where noted).
    expected : list[int] or None
        Invocations expected if no limit/forgetting applied (the paper's baseline).
    steps : list[int]
        x positions where ``measured`` changes from the previous x.
    derived : dict
        What the experiment concludes (e.g. ``{"max_size": 1023}``); ``None`` values mean
        "no limit seen in the tested range".
    extra : dict
        Experiment-specific raw data (e.g. per-residue series).
    seconds : float
    totals : list[int]
        Measured invocations of every draw the experiment made (in ``buffers`` order).
    vertex_counts : list[int]
        Vertex count bound for each draw.
    buffers : list[numpy.ndarray]
        The index buffers drawn (kept in memory only, not in JSON), so that a profile can
        be checked against every single draw (:func:`gpu_probe.profile_fit.reproduce`).
    """

    name: str
    description: str
    x_label: str
    x: list
    measured: list
    expected: list | None = None
    steps: list = field(default_factory=list)
    derived: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)
    seconds: float = 0.0
    totals: list = field(default_factory=list)
    vertex_counts: list = field(default_factory=list)
    buffers: list = field(default_factory=list, repr=False, compare=False)

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("buffers")
        return _jsonable(d)


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist())
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    return obj


def _steps(x, y) -> list[int]:
    return [int(x[i]) for i in range(1, len(y)) if y[i] != y[i - 1]]


class _Recorder:
    """The counter as one experiment sees it: every draw it measures is kept (buffers,
    measured totals and vertex count) so that a profile can be checked against each."""

    def __init__(self, counter):
        self.counter = counter
        self.buffers, self.totals, self.vertex_counts = [], [], []

    @property
    def render_state(self) -> bool:
        return getattr(self.counter, "render_state", False)

    def measure(self, buffers, vertex_count=None, **kw):
        buffers = [np.asarray(b).reshape(-1) for b in buffers]
        tot, per, q = self.counter.measure_many(buffers, vertex_count, **kw)
        V = vertex_count if vertex_count is not None else int(max(b.max() for b in buffers)) + 1
        self.buffers.extend(buffers)
        self.totals.extend(int(t) for t in tot)
        self.vertex_counts.extend([int(V)] * len(buffers))
        return tot, per, q


def _recorded(fn):
    """Run an experiment against ``counter`` and keep every draw it made on its result."""
    @functools.wraps(fn)
    def wrapper(counter, *args, **kwargs):
        rec = _Recorder(counter)
        exp = fn(rec, *args, **kwargs)
        exp.buffers.extend(rec.buffers)
        exp.totals.extend(rec.totals)
        exp.vertex_counts.extend(rec.vertex_counts)
        return exp
    return wrapper


# -- MAX_SIZE -------------------------------------------------------------------------------

@_recorded
def staircase(counter, max_indices: int = 3300) -> Experiment:
    """Draw ``{0,1,2}`` repeated, length 3..``max_indices`` (paper 001 Fig. 1).

    A global cache would shade 3 vertices whatever the length; batching shades 3 more at
    every batch start. ``MAX_SIZE`` is the longest length still costing 3.
    """
    t0 = time.perf_counter()
    lengths = list(range(3, max_indices + 1, 3))
    base = np.tile(np.array([0, 1, 2]), max_indices // 3)
    tot, _, _ = counter.measure([base[:n] for n in lengths], 3)
    y = tot.tolist()
    steps = _steps(lengths, y)
    max_size = steps[0] - 3 if steps and y[0] == 3 else None
    periods = np.diff([lengths[0]] + steps).tolist() if steps else []
    return Experiment(
        "staircase", "repeating {0,1,2} of growing length (paper 001 sec. 3.3, Fig. 1)",
        "indices", lengths, y, [3] * len(lengths), steps,
        {"max_size": max_size, "step_period": int(np.median(np.diff(steps))) if len(steps) > 1
         else None},
        {"step_heights": [int(y[lengths.index(s)] - y[lengths.index(s) - 1]) for s in steps],
         "periods": periods},
        time.perf_counter() - t0,
    )


@_recorded
def batch_triplets(counter, max_size: int, batches: int = 4) -> Experiment:
    """Each assumed batch of ``max_size`` indices repeats its own triplet (paper's check).

    With the right ``MAX_SIZE`` every batch costs exactly 3; for comparison the same is
    drawn with ``max_size - 3`` and ``max_size + 3`` (which must cost more).
    """
    t0 = time.perf_counter()
    sizes = [s for s in (max_size - 3, max_size, max_size + 3) if s >= 3]
    bufs = []
    for s in sizes:
        parts = [np.tile(np.arange(3 * b, 3 * b + 3), s // 3) for b in range(batches)]
        bufs.append(np.concatenate(parts))
    tot, _, _ = counter.measure(bufs, 3 * batches)
    y = tot.tolist()
    confirmed = y[sizes.index(max_size)] == 3 * batches
    return Experiment(
        "batch_triplets", f"{batches} assumed batches, each its own repeating triplet",
        "assumed batch size", sizes, y, [3 * batches] * len(sizes), _steps(sizes, y),
        {"max_size_confirmed": bool(confirmed)}, {}, time.perf_counter() - t0,
    )


# -- MAX_UNIQUES ----------------------------------------------------------------------------

def _uniques_buffer(n_new: int) -> tuple[np.ndarray, int]:
    """``n_new`` new vertices in triangles, then the second-to-last triangle repeated.

    When ``n_new`` is not a multiple of 3 the last triangle is padded with the last vertex
    of the triangle before it. Returns the buffer and the cost if no batch was cut.
    """
    q, r = divmod(n_new, 3)
    seq = list(range(3 * q))
    prev = seq[-3:]
    if r:
        seq += list(range(3 * q, n_new)) + [3 * q - 1] * (3 - r)
        prev = list(range(3 * q - 3, 3 * q))
    else:
        prev = list(range(3 * q - 6, 3 * q - 3))
    return np.array(seq + prev), n_new


@_recorded
def uniques(counter, max_size: int, max_n: int | None = None) -> Experiment:
    """``N`` new vertices, then the second-to-last triangle again (paper 001 sec. 3.3).

    While all ``N`` vertices fit one batch the repeated triangle is reused (cost ``N``).
    The first ``N`` that costs more is ``MAX_UNIQUES + 1``: the batch was cut before the
    last triangle (NVIDIA: ``N = 33``). Beyond it the excess comes and goes as later cuts
    move; ``N`` steps by 1 (a partial last triangle is padded with an earlier vertex), so
    ``MAX_UNIQUES`` need not be a multiple of 3.
    """
    t0 = time.perf_counter()
    top = max_size - 6 if max_n is None else min(max_n, max_size - 6)
    ns = list(range(6, max(top, 6) + 1))
    bufs, expected = [], []
    for n in ns:
        b, e = _uniques_buffer(n)
        bufs.append(b)
        expected.append(e)
    tot, _, _ = counter.measure(bufs, max(ns) + 1)
    y = tot.tolist()
    excess = [int(n) for n, m, e in zip(ns, y, expected, strict=True) if m > e]
    max_uniques = excess[0] - 1 if excess else None
    return Experiment(
        "uniques", "N new vertices, then the second-to-last triangle repeated",
        "N (new vertices)", ns, y, expected,
        _steps(ns, [m - e for m, e in zip(y, expected, strict=True)]),
        {"max_uniques": max_uniques, "first_excess_n": excess[0] if excess else None},
        {"excess_at": excess[:50]}, time.perf_counter() - t0,
    )


# -- retention ------------------------------------------------------------------------------

@_recorded
def lookback(counter, max_size: int, starts=(3, 4, 5), x_vertex: int = 3) -> Experiment:
    """``{0,1,2,...}`` of length ``max_size`` with ``X`` at position ``i`` and ``i + n``.

    Cost 4 when the second ``X`` reuses the first, 5 when not. Done for three start
    positions ``i`` (one per residue mod 3, the NVIDIA Direct3D rule depends on it).
    """
    t0 = time.perf_counter()
    series, all_n = {}, None
    for i in starts:
        ns = list(range(1, max_size - i))
        bufs = []
        for n in ns:
            b = np.tile(np.array([0, 1, 2]), max_size // 3 + 1)[:max_size].copy()
            b[i] = x_vertex
            b[i + n] = x_vertex
            bufs.append(b)
        tot, _, _ = counter.measure(bufs, x_vertex + 1)
        series[f"i={i}"] = tot.tolist()
        all_n = ns if all_n is None or len(ns) < len(all_n) else all_n
    base = series[f"i={starts[0]}"][:len(all_n)]
    fails = {k: [int(n) for n, m in zip(all_n, v, strict=False) if m > 4] for k, v in series.items()}
    first = fails[f"i={starts[0]}"]
    same = all(v[:len(all_n)] == base for v in series.values())
    return Experiment(
        "lookback", "vertex X at position i and i+n inside one batch of {0,1,2}",
        "distance n", all_n, base, [4] * len(all_n), _steps(all_n, base),
        {"lookback": (first[0] - 1) if first else None,
         "same_for_all_residues": bool(same),
         "first_failure": {k: (v[0] if v else None) for k, v in fails.items()}},
        {"series": series, "failures": {k: v[:50] for k, v in fails.items()}},
        time.perf_counter() - t0,
    )


def _lru_buffer(k: int, x: int, first_new: int, refresh: bool = False) -> np.ndarray:
    """(X,0,1), k triangles (new,0,1), [(X,0,1), k more (new,0,1)], (X,0,1)."""
    tris = [(x, 0, 1)]
    nxt = first_new
    for _ in range(k):
        tris.append((nxt, 0, 1))
        nxt += 1
    if refresh:
        tris.append((x, 0, 1))
        for _ in range(k):
            tris.append((nxt, 0, 1))
            nxt += 1
    tris.append((x, 0, 1))
    return np.array(tris).reshape(-1)


@_recorded
def lru(counter, max_size: int, x_vertex: int = 2, max_uniques: int | None = None) -> Experiment:
    """``X`` repeated with ``k`` new vertices (and 0, 1) in between: ``k + 2`` distinct.

    Cost ``3 + k`` when the second ``X`` is reused; the first ``k`` that costs one more is
    where retention by distinct-vertex count ends (AMD: LRU of 15). New vertices are
    numbered ``X+1, X+2, ...``. ``k`` stays below ``MAX_UNIQUES - 3`` so that the batch
    is never cut by the unique-vertex bound.
    """
    t0 = time.perf_counter()
    kmax = max(1, min((max_size - 6) // 3, (max_uniques or max_size) - 3))
    ks = list(range(1, kmax + 1))
    bufs = [_lru_buffer(k, x_vertex, x_vertex + 1) for k in ks]
    tot, _, _ = counter.measure(bufs, x_vertex + kmax + 2)
    y = tot.tolist()
    expected = [3 + k for k in ks]
    fails = [k for k, m, e in zip(ks, y, expected, strict=True) if m > e]
    return Experiment(
        "lru", "X, then k new vertices (with 0 and 1) in between, then X again",
        "k (new vertices in between)", ks, y, expected,
        _steps(ks, [m - e for m, e in zip(y, expected, strict=True)]),
        {"retained_distinct": (fails[0] - 1 + 2) if fails else None,
         "first_failure_k": fails[0] if fails else None,
         "memory_size_if_lru": (fails[0] - 1 + 3) if fails else None},
        {"failures": fails[:50]}, time.perf_counter() - t0,
    )


@_recorded
def refresh(counter, max_size: int, x_vertex: int = 2, max_uniques: int | None = None) -> Experiment:
    """As :func:`lru` with a hit on ``X`` in the middle: does a hit refresh retention?

    With LRU the final ``X`` fails at the same ``k`` as in :func:`lru`; with a FIFO that
    only pushes misses it fails at about half that ``k``.
    """
    t0 = time.perf_counter()
    kmax = max(1, min((max_size - 9) // 6, ((max_uniques or max_size) - 3) // 2))
    ks = list(range(1, kmax + 1))
    bufs = [_lru_buffer(k, x_vertex, x_vertex + 1, refresh=True) for k in ks]
    tot, _, _ = counter.measure(bufs, x_vertex + 2 * kmax + 2)
    y = tot.tolist()
    expected = [3 + 2 * k for k in ks]
    fails = [k for k, m, e in zip(ks, y, expected, strict=True) if m > e]
    return Experiment(
        "refresh", "X, k new, X (hit), k new, X: whether hits refresh retention",
        "k", ks, y, expected, _steps(ks, [m - e for m, e in zip(y, expected, strict=True)]),
        {"first_failure_k": fails[0] if fails else None}, {"failures": fails[:50]},
        time.perf_counter() - t0,
    )


@_recorded
def slot_conflicts(counter, max_distance: int = 1024, x_vertex: int | None = None) -> Experiment:
    """``(X,A,B), (A,B,X+d), (X,A,B)``: is ``X`` evicted by the single vertex ``X+d``?

    With any LRU/FIFO/look-back of 4+ entries ``X`` survives; with a direct-mapped table
    keyed by ``index mod M`` it is evicted exactly when ``d`` is a multiple of ``M``.
    Per-vertex counts tell which vertex was shaded twice.
    """
    t0 = time.perf_counter()
    x = x_vertex if x_vertex is not None else max_distance + 3
    a, b = x + 1, x + 2          # A, B collide with X only under a table of 1 or 2 entries
    ds = [d for d in range(-max_distance, max_distance + 1)
          if d not in (0, 1, 2) and x + d >= 0]
    bufs = [np.array([x, a, b, a, b, x + d, x, a, b]) for d in ds]
    V = x + max_distance + 1
    tot, per, _ = counter.measure(bufs, V, per_vertex=True)
    evicted = [int(d) for d, row in zip(ds, per, strict=True) if row[x] > 1]
    y = (per[:, x] - 1).tolist()
    modulus = None
    if evicted:
        g = int(np.gcd.reduce(np.abs(evicted)))
        multiples = [d for d in ds if d % g == 0]
        if g > 1 and sorted(evicted) == sorted(multiples):
            modulus = g
    return Experiment(
        "slot_conflicts", "(X,A,B),(A,B,X+d),(X,A,B): X re-shaded? (1 = evicted by X+d)",
        "d", ds, y, [0] * len(ds), _steps(ds, y),
        {"evicting_offsets": evicted[:64], "n_evicting": len(evicted),
         "direct_mapped_modulus": modulus, "x": x},
        {"totals": tot.tolist()}, time.perf_counter() - t0,
    )


@_recorded
def extent(counter, width: int = 64, far: int = 1000) -> Experiment:
    """Which vertices does a draw shade?  Per-vertex counts against the referenced vertices.

    Draws ``(v, v, v)`` for ``v < width`` and four triangles with indices far apart (the
    first is ``(0, far, 2)``).  A GPU that shades only what a draw references shades exactly
    those vertices; Mali Valhall shades each index's aligned group of vertex ids (groups of 4:
    indices 0, 7, 15 shade 0-7 and 12-15), Mali-400 the whole range from the smallest to the
    largest index (``(0, 1000, 2)``: 1001 vertices).
    """
    t0 = time.perf_counter()
    draws = [np.array([v, v, v]) for v in range(width)]
    draws += [np.array(t) for t in ((0, far, 2), (5, far // 2 + 3, far - 7),
                                    (far - 1, 1, far // 3), (17, 18, 19 + far // 2))]
    V = far + 1
    tot, per, _ = counter.measure(draws, V, per_vertex=True)
    shaded = [np.flatnonzero(row) for row in per]
    referenced = [np.unique(d) for d in draws]
    shades, group = "other", None
    if all(np.array_equal(s, r) for s, r in zip(shaded, referenced, strict=True)):
        shades = "referenced"
    elif all(np.array_equal(s, np.arange(r[0], r[-1] + 1)) for s, r in zip(shaded, referenced, strict=True)):
        shades = "range"
    elif shaded[0].size > 1:
        g = int(shaded[0].size)
        blocks = [np.unique(np.concatenate([np.arange(b * g, min(b * g + g, V))
                                            for b in np.unique(r // g)])) for r in referenced]
        if all(np.array_equal(s, b) for s, b in zip(shaded, blocks, strict=True)):
            shades, group = "groups", g
    once = bool(all((row[row > 0] == 1).all() for row in per))
    return Experiment(
        "extent", "vertices a draw shades: (v,v,v) for small v, then spread triangles",
        "draw #", list(range(len(draws))), tot.tolist(), [int(r.size) for r in referenced],
        [], {"shades": shades, "group": group, "each_once": once},
        {"shaded_first": [s[:16].tolist() for s in shaded[width:]]},
        time.perf_counter() - t0,
    )


# -- index encoding -------------------------------------------------------------------------

def _window_buffers(rng, count: int, width: int = 128, max_tris: int = 700):
    """Random index buffers over ``width`` vertices (relative numbers 0..width-1)."""
    out = []
    for _ in range(count):
        t = int(rng.integers(1, max_tris))
        out.append(rng.integers(0, width, size=3 * t))
    return out


def boundary_16bit_buffers(count: int = 40, seed: int = 16):
    """The buffers of :func:`boundary_16bit`: ``(straddling 2^16, around 2^15, relative)``."""
    rel = _window_buffers(np.random.default_rng(seed), count)
    return [r + (65536 - 64) for r in rel], [r + (32768 - 64) for r in rel], rel


@_recorded
def boundary_16bit(counter, count: int = 40, seed: int = 16) -> Experiment:
    """Random buffers over 128 vertices centred on 2^16 (straddling) vs on 2^15 (not).

    The two placements differ by 32768, a multiple of every power-of-two table size, so
    any difference is due to the 16-bit boundary (NVIDIA, paper 001 sec. 3.3).
    """
    t0 = time.perf_counter()
    straddle, below, rel = boundary_16bit_buffers(count, seed)
    V = 65536 + 64 + 1
    ts, _, _ = counter.measure(straddle, V)
    tb, _, _ = counter.measure(below, V)
    diff = (ts - tb).tolist()
    x = list(range(count))
    return Experiment(
        "boundary_16bit", "random buffers straddling 2^16 vs the same buffers around 2^15",
        "buffer #", x, ts.tolist(), tb.tolist(), [i for i, d in enumerate(diff) if d],
        {"differs": any(diff), "max_extra_invocations": int(max(diff)) if diff else 0},
        {"difference": diff, "triangles": [len(r) // 3 for r in rel]},
        time.perf_counter() - t0,
    )


BLOCK_SWITCH_GROUPS = (
    # (name, [(lowest vertex, highest + 1, most vertices drawn from it)], draws, most triangles)
    ("two_blocks", [(65520, 65536, 8), (65536, 65552, 8)], 240, 14),
    ("two_blocks_long", [(65520, 65536, 10), (65536, 65552, 10)], 80, 32),
    ("three_blocks", [(65520, 65536, 6), (65536, 65552, 6), (131072, 131088, 6)], 80, 14),
    ("far_blocks", [(0, 16, 8), (131172, 131188, 8)], 60, 14),
    ("same_block_far", [(0, 16, 8), (65496, 65512, 8)], 60, 14),
)


def block_switch_buffers(seed: int = 1616):
    """The buffers of :func:`block_switch`: ``(designed, [(group, buffer), ...])``.

    ``designed`` holds ``A A`` (one block), ``A B B`` and ``A B A`` (triangles of block ``A``
    just below 2^16 and ``B`` just above); the random groups draw triangles from vertex pools
    in the blocks of :data:`BLOCK_SWITCH_GROUPS`, and ``window`` buffers span 32 to 512
    vertices around 2^16 over many batches.
    """
    a, b = [65533, 65534, 65535], [65536, 65537, 65538]
    designed = [np.array(a + a), np.array(a + b + b), np.array(a + b + a)]
    rng = np.random.default_rng(seed)
    out = []
    for name, pools, draws, max_tris in BLOCK_SWITCH_GROUPS:
        for _ in range(draws):
            pool = np.concatenate([rng.choice(np.arange(lo, hi), size=int(rng.integers(1, k + 1)),
                                              replace=False) for lo, hi, k in pools])
            if pool.size < 3:
                pool = np.concatenate([pool, np.arange(pools[0][0], pools[0][0] + 3)])[:3]
            t = int(rng.integers(1, max_tris + 1))
            out.append((name, np.concatenate([rng.choice(pool, size=3, replace=False) for _ in range(t)])))
    for _ in range(60):
        w = int(rng.choice([32, 128, 512]))
        out.append(("window", rng.integers(0, w, size=3 * int(rng.integers(1, 700))) + (65536 - w // 2)))
    return designed, out


@_recorded
def block_switch(counter, seed: int = 1616) -> Experiment:
    """How the 2^16 block effect works: reuse after the index stream changes block.

    Paper 001 sec. 3.3 reports that NVIDIA's reuse "may not occur" when a batch's indices
    cross a multiple of 2^16.  ``A B B`` (three vertices just below 2^16, three just above,
    the same three again) costs 6 if reuse survives within a run of one block, ``A B A``
    costs 6 if it survives across the switch (9 if not).  The random groups are the
    verification data for the fit's 16-bit rule.
    """
    t0 = time.perf_counter()
    designed, groups = block_switch_buffers(seed)
    bufs = designed + [g[1] for g in groups]
    V = max(int(x.max()) for x in bufs) + 1
    tot, _, _ = counter.measure(bufs, V)
    same, after, across = (int(x) for x in tot[:3])
    return Experiment(
        "block_switch", "A A / A B B / A B A around 2^16, then random buffers across 2^16 blocks",
        "draw #", [0, 1, 2], [same, after, across], [3, 6, 6], [],
        {"reuse_after_switch": after == 6, "reuse_across_switch": across == 6,
         "differs": after != 6 or across != 6},
        {"seed": seed, "groups": [g[0] for g in groups]},
        time.perf_counter() - t0,
    )


_B = 1 << 16


def _pool_draws(rng, pools, n_draws, max_tris=14):
    """Draws of 1 to ``max_tris`` triangles of distinct vertices from pools ``(lo, hi, most)``."""
    bufs = []
    for _ in range(n_draws):
        pool = []
        for lo, hi, kmax in pools:
            k = int(rng.integers(1, kmax + 1))
            pool += list(rng.choice(np.arange(lo, hi), size=k, replace=False))
        pool = np.array(pool)
        if pool.size < 3:
            continue
        t = int(rng.integers(1, max_tris + 1))
        bufs.append(np.concatenate([rng.choice(pool, size=3, replace=False) for _ in range(t)]))
    return bufs


def block_rule_buffers(seed: int) -> dict[str, list[np.ndarray]]:
    """About 12,000 index buffers around 2^16 by group, to tell 2^16 block rules apart
    (``benchmarks/bench_block_rule.py``; deterministic in ``seed``).

    ``single_*`` are single batches from vertex pools in two or three blocks (adjacent, far
    apart) and, as controls, one block (``single_ctrl``: ``single_2blocks`` moved down 2^15;
    ``single_sameblock_far``: far apart inside block 0); ``multi_window`` and ``multi_walk``
    span many batches across 2^16.
    """
    rng = np.random.default_rng(seed)
    B = _B
    g = {"single_2blocks": _pool_draws(rng, [(B - 16, B, 8), (B, B + 16, 8)], 3000)}
    g["single_ctrl"] = [b - 32768 for b in g["single_2blocks"]]
    g["single_far"] = _pool_draws(rng, [(0, 16, 8), (B * 3 + 100, B * 3 + 116, 8)], 800)
    g["single_near_far_b1"] = _pool_draws(rng, [(0, 16, 8), (B + 100, B + 116, 8)], 800)
    g["single_sameblock_far"] = _pool_draws(rng, [(0, 16, 8), (B - 40, B - 24, 8)], 800)
    g["single_3blocks"] = _pool_draws(rng, [(B - 16, B, 6), (B, B + 16, 6), (2 * B, 2 * B + 16, 6)], 1000)
    g["single_blocks12"] = _pool_draws(rng, [(2 * B - 16, 2 * B, 8), (2 * B, 2 * B + 16, 8)], 800)
    g["single_long_2blocks"] = _pool_draws(rng, [(B - 16, B, 10), (B, B + 16, 10)], 1000, max_tris=32)
    multi = []
    for _ in range(600):
        t = int(rng.integers(1, 700))
        w = int(rng.choice([32, 128, 512]))
        multi.append(rng.integers(0, w, size=3 * t) + (B - w // 2))
    g["multi_window"] = multi
    walk = []
    for _ in range(300):
        t = int(rng.integers(50, 3000))
        c = np.cumsum(rng.integers(-3, 5, size=3 * t))
        walk.append(np.clip(B - 200 + c + rng.integers(-40, 41, size=3 * t), 0, None))
    g["multi_walk"] = walk
    return g


@_recorded
def index_size(counter, count: int = 40, seed: int = 1632) -> Experiment:
    """The same buffers drawn with uint16 and uint32 indices.

    Includes dense small-range buffers (where a driver could shade the whole index range
    once instead of deduplicating) and sparse ones.
    """
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    bufs = []
    for _ in range(count):
        width = int(rng.choice([8, 64, 300, 4000, 60000]))
        t = int(rng.integers(1, 2500))
        bufs.append(rng.integers(0, width, size=3 * t))
    V = 60000
    t32, _, _ = counter.measure(bufs, V, index_dtype=np.uint32)
    t16, _, _ = counter.measure(bufs, V, index_dtype=np.uint16)
    diff = (t16 - t32).tolist()
    return Experiment(
        "index_size", "the same buffers with 16-bit and 32-bit indices",
        "buffer #", list(range(count)), t16.tolist(), t32.tolist(),
        [i for i, d in enumerate(diff) if d],
        {"differs": any(diff)}, {"difference": diff, "triangles": [b.size // 3 for b in bufs]},
        time.perf_counter() - t0,
    )


@_recorded
def render_state(counter, count: int = 24, seed: int = 7) -> Experiment:
    """Same buffers with rasterizer discard, rasterized into 1x1, with 16 extra varyings,
    and at an odd offset in a larger index buffer: batching must not depend on these."""
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    bufs = [rng.integers(0, int(rng.integers(3, 5000)), size=3 * int(rng.integers(1, 3000)))
            for _ in range(count)]
    V = 5000
    base, _, _ = counter.measure(bufs, V)
    raster, _, _ = counter.measure(bufs, V, discard=False)
    vary, _, _ = counter.measure(bufs, V, varyings=16)
    pad = [np.concatenate([np.zeros(3 * 7, dtype=np.int64), b]) for b in bufs]
    # drawn with the 7 padding triangles as their own draws in front: offset 21 indices
    interleaved = []
    for pb, b in zip(pad, bufs, strict=True):
        interleaved += [pb[:21], b]
    off, _, _ = counter.measure(interleaved, V)
    off = off[1::2]
    same = {
        "rasterized_1x1": bool((raster == base).all()),
        "16_varyings": bool((vary == base).all()),
        "draw_offset_21": bool((off == base).all()),
    }
    return Experiment(
        "render_state", "rasterizer discard vs rasterized, extra varyings, draw offset",
        "buffer #", list(range(count)), base.tolist(), None, [],
        {"independent": all(same.values()), **same},
        {"rasterized": raster.tolist(), "varyings16": vary.tolist(), "offset": off.tolist()},
        time.perf_counter() - t0,
    )


@_recorded
def random_buffers(counter, count: int = 120, seed: int = 2024, max_triangles: int = 6000) -> Experiment:
    """Random index buffers of many sizes and vertex ranges (verification data for fit).

    The buffers themselves are kept in ``extra["buffers"]`` only as (seed, sizes) so the
    JSON stays small; :func:`random_buffer_set` regenerates them.
    """
    t0 = time.perf_counter()
    bufs, specs = random_buffer_set(count, seed, max_triangles)
    V = max(s[1] for s in specs)
    tot, _, q = counter.measure(bufs, V, with_query=True)
    agree = None if q is None else bool((q == tot).all())
    return Experiment(
        "random", "random index buffers (T triangles over W vertices)", "buffer #",
        list(range(count)), tot.tolist(), None, [],
        {"query_agrees": agree},
        {"seed": seed, "max_triangles": max_triangles, "specs": specs,
         "query": None if q is None else q.tolist()},
        time.perf_counter() - t0,
    )


def random_buffer_set(count: int = 120, seed: int = 2024, max_triangles: int = 6000):
    """Deterministic random buffers: ``(buffers, [(triangles, width, kind), ...])``.

    Kinds: ``uniform`` (any vertex), ``local`` (a random walk: mesh-like locality) and
    ``tiny`` (few vertices, heavy reuse).
    """
    rng = np.random.default_rng(seed)
    bufs, specs = [], []
    kinds = ("uniform", "local", "tiny")
    for i in range(count):
        kind = kinds[i % 3]
        t = int(rng.integers(1, max_triangles + 1)) if i % 4 else int(rng.integers(1, 400))
        if kind == "uniform":
            w = int(rng.integers(3, 70000))
            b = rng.integers(0, w, size=3 * t)
        elif kind == "local":
            w = int(rng.integers(300, 70000))
            centre = np.cumsum(rng.integers(-3, 5, size=3 * t)) % w
            b = (centre + rng.integers(-40, 41, size=3 * t)) % w
        else:
            w = int(rng.integers(3, 40))
            b = rng.integers(0, w, size=3 * t)
        bufs.append(b.astype(np.int64))
        specs.append((t, w, kind))
    return bufs, specs


# -- the suite ------------------------------------------------------------------------------

EXPERIMENTS = ("staircase", "batch_triplets", "uniques", "lookback", "lru", "refresh",
               "slot_conflicts", "extent", "boundary_16bit", "block_switch", "index_size", "render_state",
               "random")
#: Experiments that need a counter able to change the index type and the render state.
RENDER_STATE_EXPERIMENTS = ("index_size", "render_state")


@dataclass
class ExperimentSuite:
    """All experiments of one run, with the driver strings and the date.

    Attributes
    ----------
    renderer, vendor, version : str
        The driver strings of what drew.
    date : str
        When the run was made (UTC).
    experiments : dict of str to Experiment
        Each experiment by name (:data:`EXPERIMENTS`).
    seconds : float
        Time the run took.
    platform : dict
        What drew, where the counter knows it (:func:`gpu_probe.counters.renderer_record`):
        ``api`` (``gl``, ``wgpu``, ``counter``) and, through WebGPU, ``backend``,
        ``adapter``, ``driver`` and ``wgpu``.

    References
    ----------
    .. [1] B. Kerbl, M. Kenzel, E. Ivanchenko, D. Schmalstieg, M. Steinberger, "Revisiting the
       Vertex Cache: Understanding and Optimizing Vertex Processing on the modern GPU",
       Proc. ACM Comput. Graph. Interact. Tech. 1(2), 2018 (paper 001), sec. 3.1-3.3.
    """

    renderer: str
    vendor: str
    version: str
    date: str
    experiments: dict
    seconds: float
    platform: dict = field(default_factory=dict)

    def __getitem__(self, name) -> Experiment:
        return self.experiments[name]

    def step_positions(self) -> dict:
        """The raw step positions of every experiment (the command line's summary).

        Returns
        -------
        dict
            Experiment name to its first 32 step positions.
        """
        return {k: v.steps[:32] for k, v in self.experiments.items()}

    def derived(self) -> dict:
        """What each experiment derived (a batch size, a memory size...).

        Returns
        -------
        dict
            Experiment name to its derived values.
        """
        return {k: v.derived for k, v in self.experiments.items()}

    def to_dict(self) -> dict:
        """The run as the JSON a results file holds.

        Returns
        -------
        dict
            The driver strings, platform, date, time and every experiment's record.
        """
        return {
            "renderer": self.renderer, "vendor": self.vendor, "version": self.version,
            **self.platform, "date": self.date, "seconds": round(self.seconds, 3),
            "experiments": {k: v.to_dict() for k, v in self.experiments.items()},
        }

    @classmethod
    def from_dict(cls, d: dict) -> ExperimentSuite:
        """A run from its JSON form (:meth:`to_dict`).

        Parameters
        ----------
        d : dict
            The run's record.

        Returns
        -------
        ExperimentSuite
            The run.
        """
        exps = {k: Experiment(**v) for k, v in d["experiments"].items()}
        return cls(d["renderer"], d["vendor"], d["version"], d["date"], exps,
                   d.get("seconds", 0.0), {k: d[k] for k in RECORD_KEYS if k in d})


def run_experiments(counter=None, only=None, max_indices: int = 3300,
                    progress=None) -> ExperimentSuite:
    """Run the experiment suite against a counter.

    Parameters
    ----------
    counter : counter, optional
        Where invocations come from (:mod:`gpu_probe.counters`); default this machine's GPU
        through OpenGL.
    only : iterable of str, optional
        Subset of :data:`EXPERIMENTS` (``staircase`` always runs: the others need its
        ``MAX_SIZE``).
    max_indices : int
        Longest staircase draw (must show at least one step for the later experiments).
    progress : callable, optional
        Called with each experiment's name before it runs.

    Returns
    -------
    ExperimentSuite
        Every experiment's draws, measured and expected counts, steps and derived values.

    References
    ----------
    .. [1] B. Kerbl, M. Kenzel, E. Ivanchenko, D. Schmalstieg, M. Steinberger, "Revisiting the
       Vertex Cache: Understanding and Optimizing Vertex Processing on the modern GPU",
       Proc. ACM Comput. Graph. Interact. Tech. 1(2), 2018 (paper 001), sec. 3.1-3.3.
    """
    t0 = time.perf_counter()
    counter = gl_counter() if counter is None else counter
    names = list(EXPERIMENTS) if only is None else [n for n in EXPERIMENTS if n in set(only)]
    if "staircase" not in names:
        names.insert(0, "staircase")
    if not getattr(counter, "render_state", False):
        names = [n for n in names if n not in RENDER_STATE_EXPERIMENTS]
    out: dict[str, Experiment] = {}

    def run(name, fn, *a, **kw):
        if name in names:
            if progress:
                progress(name)
            out[name] = fn(counter, *a, **kw)

    run("staircase", staircase, max_indices)
    # no staircase step: no batches (a global cache); probe retention over 1026 indices
    ms = out["staircase"].derived["max_size"] or min(max_indices, 1026)
    run("batch_triplets", batch_triplets, ms)
    run("uniques", uniques, ms)
    mu = (out["uniques"].derived["max_uniques"] if "uniques" in out else None) or ms
    run("lookback", lookback, ms)
    run("lru", lru, ms, max_uniques=mu)
    run("refresh", refresh, ms, max_uniques=mu)
    run("slot_conflicts", slot_conflicts, min(1024, max(ms, 64)))
    run("extent", extent)
    run("boundary_16bit", boundary_16bit)
    run("block_switch", block_switch)
    run("index_size", index_size)
    run("render_state", render_state)
    run("random", random_buffers)
    rec = renderer_record(counter.info)
    return ExperimentSuite(
        rec["renderer"], rec["vendor"], rec["version"],
        datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), out,
        time.perf_counter() - t0, {k: rec[k] for k in RECORD_KEYS if k in rec},
    )
