"""Dynamic Sampling Rate (DSR), Anglada et al., paper 004 sec. 3-5.

After a tile is rendered, the 2D DCT of its colours tells how much high-frequency content it
has; a five-state FSM per tile picks the sampling rate the tile gets in the *next* frame:

    state 0: 1x (every pixel centre)      state 1: 1/4x  (2x2 superfragments)
    state 2: 1/16x (4x4)                  state 3: 1/64x (8x8)    state 4: 1/256x (16x16)

``MaxC(D)`` is the largest absolute DCT coefficient on the diagonals ``i + j >= D`` (the first
``D`` low-frequency diagonals are ignored).  From state ``s`` (Algorithm 1 of the paper):
reduce (``s + 1``) if ``MaxC(D_R[s]) < T_R[s]``, else increase (``s - 1``) if
``MaxC(D_I[s]) >= T_I[s]``, else stay.  There are four reduce transitions (states 0-3) and three
increase transitions (states 1-3); state 4 holds one colour per tile, has no spectrum to judge,
and always goes back to state 3.  The Sampling Rate Table (one state per tile) is the state this
technique carries between frames.

The DCT is the orthonormal DCT-II (``scipy.fft.dctn(norm="ortho")``) of the tile's BT.601 luma in
0..255 (so a flat tile has only the DC term, 16 x its mean); tiles cut by the screen edge are
padded by edge replication.  Quality is MSSIM against the full-rate frame
(:mod:`pipeline_model.quality`), with the paper's rule that no frame may fall below 0.95.
The first frame after a camera cut (``FrameSpec.cut``, a scene's ``"cuts"``) is rendered with
the rates learned from the previous shot, so it is not judged by that rule (``summary()``
reports it as ``mssim_after_cut``); after it every tile restarts from full rate.

:func:`search_parameters` finds per-transition ``(T, D)`` for a set of frame sequences in the
spirit of the paper's Algorithms 1-2 (sec. 4): Local Minimum rates per tile, then the increase
pairs with the Local-Minimum reduction, then the reduce pairs with the increase pairs fixed.

References
----------
Anglada, M., de Lucas, E., Parcerisa, J.-M., Aragon, J. L., Gonzalez, A.  Dynamic Sampling Rate:
Harnessing Frame Coherence in Graphics Applications for Energy-Efficient GPUs.  IEEE (paper
004), sec. 3-5, Algorithms 1-2.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numba as nb
import numpy as np
import scipy.fft

from pipeline_model.quality import MSSIM_THRESHOLD, luma, mssim, ssim_map
from pipeline_model.techniques.base import RenderRequest, Technique

__all__ = [
    "N_STATES",
    "RATE_NAMES",
    "SEARCHED_SIZES",
    "DSRParams",
    "tile_luma",
    "tile_dct",
    "diagonal_max",
    "suffix_max",
    "suffix_diagonal_max",
    "fsm_step",
    "samples_per_pixel",
    "DSRState",
    "DSRController",
    "DSR",
    "search_parameters",
]

N_STATES = 5
RATE_NAMES = ("1", "1/4", "1/16", "1/64", "1/256")
#: Screen sizes the default :class:`DSRParams` were searched and checked at (full, ``--quick``).
SEARCHED_SIZES = ((1196, 768), (598, 384))


@dataclass(frozen=True)
class DSRParams:
    """Per-transition ``(T, D)``: ``reduce[s]`` for ``s -> s+1`` (s = 0..3), ``increase[s-1]``
    for ``s -> s-1`` (s = 1..3); ``T = 0`` never reduces / always increases.

    The defaults are what :func:`search_parameters` found over the shipped scenes at both
    screen sizes this project renders them at, :data:`SEARCHED_SIZES` (``benchmarks/
    bench_techniques.py --search-dsr``: 60 frames each, MSSIM threshold 0.955 for a margin), and
    the pipeline confirmed (exact MSSIM, every shipped scene, 60 frames, both sizes: lowest frame
    0.9558).  A tile holds 4x more of the picture at half the size, so thresholds found at one
    size alone do not hold at the other (searched at 1196 x 768 only, half size fell to 0.943).
    On these scenes the search keeps to 1x, 1/4x and 1/16x and lets every reduced tile step back
    up unless it is smooth enough to go further down."""

    reduce: tuple = ((32.0, 8), (8.0, 2), (0.0, 1), (0.0, 1))
    increase: tuple = ((0.0, 1), (0.0, 1), (0.0, 1))

    def as_dict(self) -> dict:
        return {"reduce": [list(p) for p in self.reduce],
                "increase": [list(p) for p in self.increase]}


@nb.njit(cache=True)
def _gather_tiles(y, out):
    h, w = y.shape
    tile = out.shape[1]
    tx = (w + tile - 1) // tile
    for t in range(out.shape[0]):
        y0 = (t // tx) * tile
        x0 = (t % tx) * tile
        for i in range(tile):
            row = y[min(y0 + i, h - 1)]
            o = out[t, i]
            for j in range(tile):
                o[j] = row[min(x0 + j, w - 1)]


def tile_luma(image: np.ndarray, tile: int = 16, out: np.ndarray | None = None) -> np.ndarray:
    """(n_tiles, tile, tile) luma blocks, row-major tile order, edge tiles edge-padded.

    One compiled gather (no padded or transposed copies); ``out``, a float32 array of that
    shape, is filled and returned instead of a new array (DSR reuses one every frame: fresh
    multi-megabyte buffers cost page faults)."""
    y = luma(image)
    h, w = y.shape
    shape = (((h + tile - 1) // tile) * ((w + tile - 1) // tile), tile, tile)
    if out is None or out.shape != shape or out.dtype != np.float32:
        out = np.empty(shape, np.float32)
    _gather_tiles(y, out)
    return out


def _dct_in_place(tiles: np.ndarray) -> np.ndarray:
    return scipy.fft.dctn(tiles, axes=(1, 2), norm="ortho", overwrite_x=True)


def tile_dct(image: np.ndarray, tile: int = 16, out: np.ndarray | None = None) -> np.ndarray:
    """Orthonormal 2D DCT-II of every tile's luma: (n_tiles, tile, tile) float32 (computed in
    place in ``out`` when given, see :func:`tile_luma`)."""
    return _dct_in_place(tile_luma(image, tile, out))


@nb.njit(cache=True)
def _diagonal_max(coefs, suffix):
    n, t, _ = coefs.shape
    nd = 2 * t - 1
    out = np.empty((n, nd), coefs.dtype)
    for p in range(n):
        o = out[p]
        o[:] = 0  # |c| >= 0: the running max of a diagonal starts at 0
        for i in range(t):
            for j in range(t):
                v = np.abs(coefs[p, i, j])
                if v > o[i + j]:
                    o[i + j] = v
        if suffix:
            for d in range(nd - 2, -1, -1):
                if o[d + 1] > o[d]:
                    o[d] = o[d + 1]
    return out


def diagonal_max(coefs: np.ndarray) -> np.ndarray:
    """(n, 2*tile-1): largest |coefficient| on each anti-diagonal ``i + j = k`` (finite input)."""
    return _diagonal_max(np.ascontiguousarray(coefs), False)


def suffix_max(diag_max: np.ndarray) -> np.ndarray:
    """``out[:, d]`` = MaxC for ``D = d``: max over diagonals ``>= d``."""
    return np.maximum.accumulate(diag_max[:, ::-1], axis=1)[:, ::-1]


def suffix_diagonal_max(coefs: np.ndarray) -> np.ndarray:
    """``suffix_max(diagonal_max(coefs))`` in one compiled pass (MaxC for every ``D``)."""
    return _diagonal_max(np.ascontiguousarray(coefs), True)


@nb.njit(cache=True)
def _fsm_step(state, suffix, tr, dr, ti, di, reduce, increase):
    n, nd = suffix.shape
    top = tr.shape[0] - 1
    nxt = np.empty(n, np.int8)
    for p in range(n):
        s = np.int64(state[p])
        v = s
        if s == top:
            v = top - 1
        else:
            red = False
            if reduce:
                red = np.float64(suffix[p, min(dr[s], nd - 1)]) < tr[s]
            if red:
                v = s + 1
            elif increase and s > 0 and np.float64(suffix[p, min(di[s], nd - 1)]) >= ti[s]:
                v = s - 1
        nxt[p] = v
    return nxt


def _fsm_tables(params: DSRParams):
    tr = np.array([p[0] for p in params.reduce] + [np.inf], np.float64)
    dr = np.array([p[1] for p in params.reduce] + [0], np.int64)
    ti = np.array([np.inf] + [p[0] for p in params.increase] + [np.inf], np.float64)
    di = np.array([0] + [p[1] for p in params.increase] + [0], np.int64)
    return tr, dr, ti, di


def fsm_step(state: np.ndarray, diag_max: np.ndarray, params: DSRParams,
             reduce: bool = True, increase: bool = True, presuffixed: bool = False) -> np.ndarray:
    """Next state per tile (paper 004 Fig. 6 / Algorithm 1), compiled.

    From state ``s``: reduce when ``MaxC(D_R[s]) < T_R[s]``, else increase when
    ``MaxC(D_I[s]) >= T_I[s]``, else stay; the last state always goes back one.  ``diag_max``
    is :func:`diagonal_max`'s output, or its :func:`suffix_max` with ``presuffixed=True``
    (then ``MaxC(D)`` is column ``D``).  ``reduce`` / ``increase`` switch the two kinds of
    transition off (the parameter search's steps).
    """
    suffix = np.ascontiguousarray(diag_max if presuffixed else suffix_max(diag_max))
    return _fsm_step(np.asarray(state, np.int8), suffix, *_fsm_tables(params),
                     bool(reduce), bool(increase))


def tile_pixels(width: int, height: int, tile: int = 16) -> np.ndarray:
    """Pixels on screen per tile (edge tiles are partial)."""
    ys = np.minimum(tile, height - np.arange(0, height, tile))
    xs = np.minimum(tile, width - np.arange(0, width, tile))
    return np.outer(ys, xs).ravel()


def samples_per_pixel(state: np.ndarray, width: int, height: int, tile: int = 16) -> float:
    """Average sampling rate of a rate table (samples per pixel, 1.0 at full rate)."""
    px = tile_pixels(width, height, tile)
    return float(np.sum(px * 4.0 ** -np.asarray(state, np.float64)) / px.sum())


@dataclass
class DSRState:
    """The Sampling Rate Table and the per-frame quality record."""

    params: DSRParams = field(default_factory=DSRParams)
    state: np.ndarray | None = None
    _tiles: np.ndarray | None = field(default=None, repr=False, compare=False)  # reused buffer

    def rates(self, n_tiles: int) -> np.ndarray:
        if self.state is None or self.state.shape[0] != n_tiles:
            self.state = np.zeros(n_tiles, np.int8)
        return self.state

    def update(self, image: np.ndarray, tile: int = 16) -> np.ndarray:
        """Analyse the rendered frame (image or luma plane) and set the rates of the next one."""
        self._tiles = tile_luma(image, tile, self._tiles)
        suffix = suffix_diagonal_max(_dct_in_place(self._tiles))
        self.state = fsm_step(self.rates(suffix.shape[0]), suffix, self.params, presuffixed=True)
        return self.state


# ----------------------------------------------------------------------- parameter search
@dataclass
class _Seq:
    """One frame sequence prepared for the search: per frame, per uniform rate."""

    diag: np.ndarray       # (F, 5, n_tiles, 31) MaxC(D) of each tile at each rate
    ssim_sum: np.ndarray   # (F, 5, n_tiles) sum of the SSIM map inside the crop, per tile
    n_px: float            # pixels inside the crop
    weight: np.ndarray     # (n_tiles,) pixels per tile
    locmin: np.ndarray     # (F, n_tiles) Local Minimum state
    cuts: frozenset


def _prepare(render, n_frames, width, height, tile, cuts, threshold) -> _Seq:
    n_tiles = ((width + tile - 1) // tile) * ((height + tile - 1) // tile)
    crop = np.zeros((height, width), bool)
    crop[5:height - 5, 5:width - 5] = True
    tid = np.arange(n_tiles).reshape((height + tile - 1) // tile, -1)
    tile_of_px = np.repeat(np.repeat(tid, tile, 0), tile, 1)[:height, :width]
    diag = np.zeros((n_frames, N_STATES, n_tiles, 2 * tile - 1))
    ssum = np.zeros((n_frames, N_STATES, n_tiles))
    lm = np.zeros((n_frames, n_tiles), np.int8)
    px_in = np.bincount(tile_of_px[crop], minlength=n_tiles).astype(np.float64)
    for f in range(n_frames):
        ref = None
        for s in range(N_STATES):
            img = render(f, np.full(n_tiles, s, np.int8))
            if s == 0:
                ref = img
                ssum[f, 0] = px_in
            else:
                m = ssim_map(img, ref)
                ssum[f, s] = np.bincount(tile_of_px[crop], weights=m[crop], minlength=n_tiles)
            diag[f, s] = suffix_max(diagonal_max(tile_dct(img, tile)))
        # Local Minimum: lowest rate whose tile alone keeps the threshold.
        ok = ssum[f] >= threshold * np.maximum(px_in, 1)[None, :]
        for s in range(1, N_STATES):
            lm[f] = np.where(ok[s] & (lm[f] == s - 1), s, lm[f])
    return _Seq(diag, ssum, float(px_in.sum()), tile_pixels(width, height, tile), lm,
                frozenset(cuts))


def _simulate(seq: _Seq, params: DSRParams, threshold: float, use_locmin: bool,
              stop_at_error: bool = False):
    """Run the FSM over a prepared sequence; return (ASR, worst MSSIM, errors)."""
    f_n, _, n_tiles, _ = seq.diag.shape
    state = np.zeros(n_tiles, np.int8)
    idx = np.arange(n_tiles)
    samples = 0.0
    worst = 1.0
    errors = 0
    for f in range(f_n):
        q = seq.ssim_sum[f, state, idx].sum() / seq.n_px
        if f not in seq.cuts:
            worst = min(worst, q)
            errors += q < threshold
            if errors and stop_at_error:
                return np.inf, worst, errors
        samples += float(np.sum(seq.weight * 4.0 ** -state.astype(np.float64)))
        dm = seq.diag[f, state, idx]
        if f in seq.cuts:
            state = np.zeros(n_tiles, np.int8)  # a camera cut restarts every tile at full rate
        if use_locmin:
            nxt = fsm_step(state, dm, params, reduce=False, presuffixed=True)
            if f + 1 < f_n:
                nxt = np.maximum(nxt, seq.locmin[f + 1])  # the lower sampling rate of the two
        else:
            nxt = fsm_step(state, dm, params, presuffixed=True)
        state = nxt
    return samples / (f_n * seq.weight.sum()), worst, errors


def _with_pair(pairs, i, v) -> tuple:
    """``pairs`` as a tuple with entry ``i`` replaced by ``v``."""
    out = list(pairs)
    out[i] = v
    return tuple(out)


def search_parameters(sequences, thresholds=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512),
                      diagonals=(1, 2, 4, 8, 12, 16), threshold: float = MSSIM_THRESHOLD,
                      sweeps: int = 2, start: DSRParams | None = None, tile: int = 16):
    """Per-transition ``(T, D)`` with the lowest average sampling rate and no erroneous frame.

    Parameters
    ----------
    sequences : iterable of ``(render, n_frames, width, height, cuts)``; ``render(f, rates)``
        returns the uint8 image of frame ``f`` with the per-tile rate codes ``rates``.
    thresholds, diagonals : the grid each ``(T, D)`` pair is searched over.

    Every frame is rendered once at each of the five uniform rates; a frame with per-tile rates
    is then the tile-wise composite of those (each tile is rasterized on its own), and its MSSIM
    is the sum of the per-tile SSIM-map sums (exact away from tile borders, where the 11x11
    window mixes rates; the pipeline's own MSSIM check is exact).  Step 1 (paper Algorithm 2)
    searches the three increase pairs with reduction by the Local Minimum rates; step 2
    (Algorithm 1) searches the four reduce pairs with the increase pairs fixed.  Instead of the
    paper's exhaustive product, each pair is searched over the whole grid with the others fixed,
    ``sweeps`` times (coordinate descent).  Frames right after a cut are not judged.

    Returns ``(params, report)`` where report has the ASR and worst MSSIM per sequence.
    """
    seqs = [_prepare(r, n, w, h, tile, cuts, threshold) for r, n, w, h, cuts in sequences]
    grid = [(float(t), int(d)) for t in thresholds for d in diagonals]
    params = start or DSRParams(reduce=((0.0, 1),) * 4, increase=((0.0, 1),) * 3)

    def cost(p, locmin):
        asr = 0.0
        for s in seqs:
            a, _, err = _simulate(s, p, threshold, locmin, stop_at_error=True)
            if err:
                return np.inf
            asr += a
        return asr / len(seqs)

    def with_increase(p, i, v):
        return DSRParams(reduce=p.reduce, increase=_with_pair(p.increase, i, v))

    def with_reduce(p, i, v):
        return DSRParams(reduce=_with_pair(p.reduce, i, v), increase=p.increase)

    # Step 1: increase pairs.  Start from "always increase" (T = 0), which is always safe.
    for _ in range(sweeps):
        for i in range(3):
            best = (cost(params, True), params.increase[i])
            for v in grid:
                c = cost(with_increase(params, i, v), True)
                # on a tie keep the least eager increase (the Local Minimum hides the difference)
                if c < best[0] or (c == best[0] and c < np.inf and v[0] > best[1][0]):
                    best = (c, v)
            params = with_increase(params, i, best[1])
    # Step 2: reduce pairs, increase fixed.  Start from "never reduce" (T = 0).
    for _ in range(sweeps):
        for i in range(4):
            best = (cost(params, False), params.reduce[i])
            for v in grid:
                c = cost(with_reduce(params, i, v), False)
                if c < best[0]:
                    best = (c, v)
            params = with_reduce(params, i, best[1])
    report = []
    for s in seqs:
        asr, worst, err = _simulate(s, params, threshold, False)
        report.append({"asr": asr, "mssim_min": worst, "errors": int(err)})
    return params, report


# -------------------------------------------------------------------------- technique


@dataclass(frozen=True, eq=False)
class _FrameAnalysis:
    """What one controller made of a rendered frame: the table before and after its update
    and the frame's MSSIM (None when not measured), from the rates it asked for and the
    picture it got.

    ``dsr`` and ``evr+dsr`` draw the same pictures (EVR changes the order in which a tile's
    triangles are drawn, not the colours), so they start every frame from the same table and
    ask for the same rates: the second of them to reach a frame takes the first one's
    analysis instead of running the DCT and the MSSIM again, when its inputs are equal.
    """

    params: DSRParams
    rate: np.ndarray
    before: np.ndarray
    colour: np.ndarray
    after: np.ndarray
    mssim: float | None

    def answers(self, params, rate, before, colour) -> bool:
        """Whether this analysis is the one of these inputs (equal arrays, equal parameters)."""
        return (self.params == params and np.array_equal(self.rate, rate)
                and np.array_equal(self.before, before)
                and (self.colour is colour or np.array_equal(self.colour, colour)))


class DSRController:
    """The per-frame DSR work shared by ``dsr`` and ``evr+dsr``: the rate request, the FSM
    update after rendering, and the quality record against the full-rate frame."""

    def __init__(self, params: DSRParams | None = None, quality: bool = True):
        self.params = params or DSRParams()
        self.quality = bool(quality)
        self.table = DSRState(self.params)
        self.spp: list[float] = []
        self.mssim: list[tuple[int, float, bool]] = []  # (frame, MSSIM, first after a cut)
        self.quality_seconds = 0.0  # time spent measuring MSSIM (reporting, not the technique)
        self._rate = None
        self._y = self._ref = None  # luma buffers reused from frame to frame
        self.size: tuple[int, int] | None = None

    def rate(self, ctx) -> np.ndarray | None:
        self._rate = self.table.rates(ctx.frame.n_tiles).copy()
        return self._rate if self._rate.any() else None

    def update(self, ctx, result) -> dict:
        f = ctx.frame
        self.size = (int(f.width), int(f.height))
        spp = samples_per_pixel(self._rate, f.width, f.height, f.tile)
        self.spp.append(spp)
        cut = bool(ctx.spec.cut)
        if cut:
            # First frame after a camera cut: it was rendered with the rates learned from the
            # previous shot (the hardware cannot know the new picture in advance; this frame is
            # exempt from the MSSIM rule and reported apart).  The per-tile states learned from
            # the old shot say nothing about the new one: restart every tile from full rate, so
            # the FSM learns the new shot from this frame's analysis alone.
            self.table.state = np.zeros_like(self.table.rates(f.n_tiles))
        before = self.table.rates(f.n_tiles).copy()
        known = ctx.shared.get("dsr_analysis")
        if known is not None and known.answers(self.params, self._rate, before, result.colour):
            self.table.state = known.after.copy()
            y = None
        else:
            known = None
            y = self._y = luma(result.colour, self._y)
            self.table.update(y, f.tile)
        out = {"samples_per_pixel": spp}
        q = None
        if self.quality:
            t0 = time.perf_counter()
            if known is not None and known.mssim is not None:
                q = known.mssim
            elif not self._rate.any():
                q = 1.0
            else:
                if y is None:
                    y = self._y = luma(result.colour, self._y)
                shared = ctx.shared  # the reference's luma, once per frame for dsr and evr+dsr
                if "baseline_luma" not in shared:
                    # into this controller's buffer: the frame's shared dict is gone by the
                    # time the next frame overwrites it
                    shared["baseline_luma"] = self._ref = luma(ctx.baseline().colour, self._ref)
                q = mssim(y, shared["baseline_luma"])
            self.mssim.append((int(ctx.index), q, cut))
            out["mssim"] = q
            self.quality_seconds += time.perf_counter() - t0
        if known is None:
            ctx.shared["dsr_analysis"] = _FrameAnalysis(self.params, self._rate.copy(), before,
                                                        result.colour, self.table.state.copy(), q)
        return out

    def summary(self) -> dict:
        out = {"samples_per_pixel": float(np.mean(self.spp)) if self.spp else 1.0,
               "dsr_params": self.params.as_dict(), "dsr_quality_seconds": self.quality_seconds}
        if self.size is not None and self.params == DSRParams() and self.size not in SEARCHED_SIZES:
            sizes = " and ".join(f"{w}x{h}" for w, h in SEARCHED_SIZES)
            out["dsr_params_note"] = (f"the default DSR thresholds were searched at {sizes}, not at "
                                      f"{self.size[0]}x{self.size[1]}; run the search for this size "
                                      "(benchmarks/bench_techniques.py --search-dsr --size WxH)")
        if self.quality and self.mssim:
            judged = [(i, q) for i, q, cut in self.mssim if not cut]
            worst = min(judged, key=lambda r: r[1]) if judged else (None, 1.0)
            out["mssim_min"] = worst[1]
            out["mssim_min_frame"] = worst[0]
            out["mssim_frames_below_threshold"] = [i for i, q in judged if q < MSSIM_THRESHOLD]
            out["mssim_after_cut"] = [[i, q] for i, q, cut in self.mssim if cut]
        return out


class DSR(Technique):
    """Dynamic Sampling Rate: per-tile rates from last frame's DCT analysis (not exact:
    frames are judged by MSSIM against the full-rate frame)."""

    name = "dsr"
    exact = False
    #: how the pipeline folds this technique's per-frame extras into the run's totals
    aggregate = {"mssim": "min", "samples_per_pixel": "mean"}

    def __init__(self, params: DSRParams | None = None, quality: bool = True):
        self._params, self._quality = params, quality
        self.reset()

    def reset(self) -> None:
        self.ctl = DSRController(self._params, self._quality)

    def begin_frame(self, ctx) -> RenderRequest:
        return RenderRequest(rate=self.ctl.rate(ctx))

    def end_frame(self, ctx, result) -> dict:
        return self.ctl.update(ctx, result)

    def summary(self) -> dict:
        return self.ctl.summary()
