"""Plain formulations of the pipeline model's compiled kernels, kept to pin them in the tests.

Each function here computes what a fast kernel of ``pipeline_model`` computes, written the
obvious way (numpy expressions, or plain loops in the same arithmetic order); the tests assert
that both give the same values, bit for bit where the kernel promises it.  Nothing in the
library imports this module.

* :func:`luma_numpy` -- :func:`pipeline_model.quality.luma` (BT.601) as one numpy expression;
* :func:`mssim_loops` -- the plain loops of :func:`pipeline_model.quality.mssim`'s kernel, same
  float32 filtering order; :func:`mssim_reference` -- the same index by scikit-image;
* :func:`tile_luma_numpy`, :func:`diagonal_max_numpy`, :func:`maxc`, :func:`fsm_step_numpy` --
  DSR's tile gather, per-diagonal DCT maxima and rate FSM (paper 004, sec. 3-4, Algorithm 1);
* :func:`fvp_from_buffers`, :func:`prediction_stats` -- EVR's FVP Table from a full-size Layer
  Buffer and its prediction counts (paper 003, sec. V.B-C).

References
----------
Wang, Z., Bovik, A. C., Sheikh, H. R., Simoncelli, E. P. (2004).  Image quality assessment: from
error visibility to structural similarity.  IEEE Trans. Image Processing 13(4), 600-612.
Anglada et al., Dynamic Sampling Rate (DSR), IEEE (paper 004).
Anglada et al., Early Visibility Resolution (EVR), HPCA 2019 (paper 003).
"""

from __future__ import annotations

from functools import lru_cache

import numba as nb
import numpy as np
from skimage.metrics import structural_similarity

from pipeline_model.quality import luma
from pipeline_model.techniques.dsr import N_STATES, DSRParams
from pipeline_model.techniques.evr import FVPTable

#: ITU-R BT.601 luma weights.
BT601 = np.array([0.299, 0.587, 0.114], np.float32)


# ---------------------------------------------------------------------------------- quality
def luma_numpy(image: np.ndarray) -> np.ndarray:
    """BT.601 luma as one numpy expression (a plane is returned as float32)."""
    a = np.asarray(image)
    if a.ndim == 2:
        return np.asarray(a, np.float32)
    return a[..., :3].astype(np.float32) @ BT601


def mssim_loops(xp, yp, k, crop, out_map) -> float:
    """Mean SSIM of two planes padded by ``len(k) // 2`` ('reflect'), any odd window ``k``.

    The plain loop formulation of ``pipeline_model.quality._mssim``: the same float32 filtering
    order (taps in order), the same float64 SSIM formula and the row sums totalled by numpy, so
    both give the same bits.  The per-pixel map goes to ``out_map`` when it is (h, w).
    """
    r = k.shape[0] // 2
    h, w = xp.shape[0] - 2 * r, xp.shape[1] - 2 * r
    n = (h - 2 * crop) * (w - 2 * crop)
    return float(_ssim_rows_loops(xp, yp, k, crop, out_map).sum() / n) if n > 0 else 1.0


@nb.njit(cache=True, parallel=True)
def _ssim_rows_loops(xp, yp, k, crop, out_map):
    r = k.shape[0] // 2
    h = xp.shape[0] - 2 * r
    w = xp.shape[1] - 2 * r
    hp = xp.shape[0]
    # horizontal pass on every padded row: 5 moments
    tmp = np.zeros((5, hp, w), np.float32)
    for i in nb.prange(hp):
        for t in range(2 * r + 1):
            kv = k[t]
            for j in range(w):
                xv = xp[i, j + t]
                yv = yp[i, j + t]
                tmp[0, i, j] += kv * xv
                tmp[1, i, j] += kv * yv
                tmp[2, i, j] += kv * (xv * xv)
                tmp[3, i, j] += kv * (yv * yv)
                tmp[4, i, j] += kv * (xv * yv)
    c1 = np.float32((0.01 * 255.0) ** 2)
    c2 = np.float32((0.03 * 255.0) ** 2)
    rows = np.zeros(h, np.float64)
    full = out_map.shape[0] == h
    lo = 0 if full else crop
    hi = h if full else h - crop
    for i in nb.prange(lo, hi):
        acc = np.zeros((5, w), np.float32)
        for t in range(2 * r + 1):
            kv = k[t]
            for c in range(5):
                for j in range(w):
                    acc[c, j] += kv * tmp[c, i + t, j]
        row = 0.0
        for j in range(0 if full else crop, w if full else w - crop):
            ux = acc[0, j]
            uy = acc[1, j]
            vx = acc[2, j] - ux * ux
            vy = acc[3, j] - uy * uy
            vxy = acc[4, j] - ux * uy
            v = ((2 * ux * uy + c1) * (2 * vxy + c2)) / ((ux * ux + uy * uy + c1) * (vx + vy + c2))
            if full:
                out_map[i, j] = v
            if crop <= i < h - crop and crop <= j < w - crop:
                row += v
        rows[i] = row
    return rows


def mssim_reference(image: np.ndarray, reference: np.ndarray) -> float:
    """MSSIM on luma by scikit-image, with the settings of Wang et al. (slow)."""
    return float(structural_similarity(
        np.asarray(luma(image), np.float64), np.asarray(luma(reference), np.float64),
        data_range=255.0, gaussian_weights=True, sigma=1.5, use_sample_covariance=False))


# -------------------------------------------------------------------------------------- DSR
def tile_luma_numpy(image: np.ndarray, tile: int = 16) -> np.ndarray:
    """(n_tiles, tile, tile) luma blocks by numpy (edge pad, reshape, transpose)."""
    y = luma(image)
    h, w = y.shape
    ph, pw = (-h) % tile, (-w) % tile
    if ph or pw:
        y = np.pad(y, ((0, ph), (0, pw)), mode="edge")
    ty, tx = y.shape[0] // tile, y.shape[1] // tile
    return y.reshape(ty, tile, tx, tile).transpose(0, 2, 1, 3).reshape(ty * tx, tile, tile)


@lru_cache(maxsize=8)
def _diagonal_order(t: int):
    k = np.add.outer(np.arange(t), np.arange(t)).ravel()
    order = np.argsort(k, kind="stable")
    return order, np.searchsorted(k[order], np.arange(2 * t - 1))


def diagonal_max_numpy(coefs: np.ndarray) -> np.ndarray:
    """(n, 2*tile-1): largest |coefficient| on each anti-diagonal (``maximum.reduceat``)."""
    n, t, _ = coefs.shape
    order, starts = _diagonal_order(t)
    return np.maximum.reduceat(np.abs(coefs).reshape(n, t * t)[:, order], starts, axis=1)


def maxc(diag_max: np.ndarray, d, presuffixed: bool = False) -> np.ndarray:
    """Paper 004's MaxC(D) per tile: max over diagonals ``>= d`` (``d`` scalar or per tile);
    ``presuffixed``: ``diag_max`` already holds MaxC for every ``D``, so column ``d`` is it."""
    n, nd = diag_max.shape
    d = np.minimum(np.broadcast_to(np.asarray(d, np.int64), (n,)), nd - 1)
    if presuffixed:
        return diag_max[np.arange(n), d]
    counted = np.arange(nd)[None, :] >= d[:, None]
    return np.where(counted, diag_max, -np.inf).max(axis=1)


def fsm_step_numpy(state: np.ndarray, diag_max: np.ndarray, params: DSRParams,
                   reduce: bool = True, increase: bool = True,
                   presuffixed: bool = False) -> np.ndarray:
    """DSR's next state per tile (paper 004 Algorithm 1) by numpy masks, the thresholds read
    from ``params`` state by state: reduce from ``s`` by ``params.reduce[s]``, increase from
    ``s > 0`` by ``params.increase[s - 1]``; the last state always goes back one."""
    s = np.asarray(state, np.int64)
    last = N_STATES - 1
    nxt = s.copy()
    red = np.zeros(s.shape, bool)
    for k in range(last):
        at = s == k
        if reduce:
            t, d = params.reduce[k]
            red |= at & (maxc(diag_max, d, presuffixed) < t)
        if increase and k > 0:
            t, d = params.increase[k - 1]
            inc = at & ~red & (maxc(diag_max, d, presuffixed) >= t)
            nxt[inc] = k - 1
    nxt[red] = s[red] + 1
    nxt[s == last] = last - 1
    return nxt.astype(np.int8)


# -------------------------------------------------------------------------------------- EVR
@nb.njit(cache=True)
def _fvp(offsets, tri, draw, layer, woz, depth, layer_buf, tiles_x, tile):
    n_tiles = offsets.shape[0] - 1
    h, w = depth.shape
    zfar = np.empty(n_tiles, np.float32)
    lfar = np.empty(n_tiles, np.int32)
    is_layer = np.zeros(n_tiles, np.bool_)
    for t in range(n_tiles):
        y0 = (t // tiles_x) * tile
        x0 = (t % tiles_x) * tile
        zf = np.float32(0.0)
        lf = np.int32(2**31 - 1)
        for y in range(y0, min(y0 + tile, h)):
            for x in range(x0, min(x0 + tile, w)):
                if depth[y, x] > zf:
                    zf = depth[y, x]
                if layer_buf[y, x] < lf:
                    lf = layer_buf[y, x]
        zfar[t] = zf
        lfar[t] = lf
        if lf > 0:
            for i in range(offsets[t], offsets[t + 1]):
                if layer[i] == lf:
                    is_layer[t] = not woz[draw[tri[i]]]
                    break
    return zfar, lfar, is_layer


def fvp_from_buffers(offsets, tri, draw, layer, woz, depth, layer_buffer, tiles_x: int,
                     tile: int) -> FVPTable:
    """FVP Table entries from the final (H, W) depth buffer and a full-size (H, W) Layer Buffer
    (layer of the last opaque fragment written, 0 where none): ``Zfar`` the tile's largest
    depth, ``Lfar`` its smallest layer, a layer FVP when layer ``Lfar`` is NWOZ."""
    z, lf, il = _fvp(np.asarray(offsets, np.int64), np.asarray(tri), np.asarray(draw, np.int32),
                     layer, np.asarray(woz, np.bool_), np.asarray(depth, np.float32),
                     np.asarray(layer_buffer, np.int32), int(tiles_x), int(tile))
    return FVPTable(z, lf, il)


def prediction_stats(predicted: np.ndarray, occluded: np.ndarray) -> dict:
    """Confusion counts of predicted-occluded vs really occluded (no fragment survived)."""
    p = np.asarray(predicted, bool)
    o = np.asarray(occluded, bool)
    tp = int(np.count_nonzero(p & o))
    fp = int(np.count_nonzero(p & ~o))
    fn = int(np.count_nonzero(~p & o))
    tn = int(p.size - tp - fp - fn)
    return {"pairs": int(p.size), "true_occluded": tp, "false_occluded": fp,
            "missed_occluded": fn, "true_visible": tn}
