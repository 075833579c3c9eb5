"""Image quality: MSSIM (Wang, Bovik, Sheikh, Simoncelli 2004), as DSR's quality rule uses it.

Paper 004 (DSR) counts a frame as erroneous when its Mean Structural Similarity Index against
the frame rendered at full sampling rate is below 0.95.  The index is the one of scikit-image's
``structural_similarity`` with the settings of Wang et al. (Gaussian window of sigma 1.5
truncated at 3.5 sigma, i.e. 11 x 11, "reflect" borders, population covariance, K1 = 0.01,
K2 = 0.03, data range 255, mean over the image less a 5-pixel border) on the **luma** channel
(ITU-R BT.601 weights: 0.299 R + 0.587 G + 0.114 B), which is how the SSIM paper applies the
index to colour images.  ``channel="rgb"`` averages the per-channel indices instead.

:func:`mssim` runs a compiled (numba, float32 separable filtering with 11-tap register sums
that vectorise) implementation of exactly that formula, far faster than scikit-image on a
1196 x 768 frame (DSR measures every frame);
``tests/test_techniques_core.py`` checks it against ``skimage.metrics.structural_similarity``
and, bit for bit, against the plain loops of ``tests/reference_kernels.py``.

References
----------
Wang, Z., Bovik, A. C., Sheikh, H. R., Simoncelli, E. P. (2004).  Image quality assessment: from
error visibility to structural similarity.  IEEE Trans. Image Processing 13(4), 600-612.
Anglada et al., Dynamic Sampling Rate (DSR), IEEE (paper 004): the 0.95 MSSIM quality rule.
"""

from __future__ import annotations

import numba as nb
import numpy as np
from skimage.metrics import structural_similarity

__all__ = ["MSSIM_THRESHOLD", "luma", "mssim", "ssim_map"]

#: Paper 004's quality rule: a frame below this MSSIM is an error.
MSSIM_THRESHOLD = 0.95

#: ITU-R BT.601 luma weights.
_LUMA = np.array([0.299, 0.587, 0.114], np.float32)
#: image rows converted per block by :func:`luma`
_LUMA_ROWS = 32


def luma(image: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """BT.601 luma of an (H, W, 3) image, float32 in the image's own scale (0..255 for uint8).

    The value is ``image[..., :3].astype(float32) @ [0.299, 0.587, 0.114]``; numpy evaluates
    that stacked product one image row at a time (one BLAS matrix-vector product per row), so
    converting and multiplying blocks of rows through a small buffer gives the same bits
    without a full-size float32 copy of the image.  ``out``: an (H, W) float32 array to fill
    and return instead of a new one (for an (H, W, 3) image; a plane is returned as float32).
    """
    a = np.asarray(image)
    if a.ndim == 2:
        return np.asarray(a, np.float32)
    if a.ndim != 3:
        return a[..., :3].astype(np.float32) @ _LUMA
    h = a.shape[0]
    if out is None or out.shape != a.shape[:2] or out.dtype != np.float32 \
            or not out.flags.c_contiguous:
        out = np.empty(a.shape[:2], np.float32)
    buf = np.empty((min(_LUMA_ROWS, h), a.shape[1], 3), np.float32)
    for i in range(0, h, _LUMA_ROWS):
        n = min(_LUMA_ROWS, h - i)
        b = buf[:n]
        b[...] = a[i:i + n, :, :3]
        np.matmul(b, _LUMA, out=out[i:i + n])
    return out


def _ssim(a, b, full):
    """scikit-image's SSIM with Wang et al.'s settings (small planes, and the per-pixel map)."""
    return structural_similarity(np.asarray(a, np.float64), np.asarray(b, np.float64),
                                 data_range=255.0, gaussian_weights=True, sigma=1.5,
                                 use_sample_covariance=False, full=full)


def _kernel(sigma=1.5, truncate=3.5) -> np.ndarray:
    r = int(truncate * sigma + 0.5)
    x = np.arange(-r, r + 1, dtype=np.float64)
    k = np.exp(-0.5 * (x / sigma) ** 2)
    return (k / k.sum()).astype(np.float32)


_K = _kernel()
assert _K.shape[0] == 11  # the fast kernel is written for the 11-tap window


@nb.njit(cache=True, inline="always")
def _tap11(src, j, k):
    """``sum_t k[t] * src[j + t]`` over 11 taps, in tap order (float32)."""
    s = np.float32(0.0) + k[0] * src[j]
    s += k[1] * src[j + 1]
    s += k[2] * src[j + 2]
    s += k[3] * src[j + 3]
    s += k[4] * src[j + 4]
    s += k[5] * src[j + 5]
    s += k[6] * src[j + 6]
    s += k[7] * src[j + 7]
    s += k[8] * src[j + 8]
    s += k[9] * src[j + 9]
    s += k[10] * src[j + 10]
    return s


@nb.njit(cache=True, inline="always")
def _vtap11(m, i, j, k):
    """``sum_t k[t] * m[i + t, j]`` over 11 taps, in tap order (float32)."""
    s = np.float32(0.0) + k[0] * m[i, j]
    s += k[1] * m[i + 1, j]
    s += k[2] * m[i + 2, j]
    s += k[3] * m[i + 3, j]
    s += k[4] * m[i + 4, j]
    s += k[5] * m[i + 5, j]
    s += k[6] * m[i + 6, j]
    s += k[7] * m[i + 7, j]
    s += k[8] * m[i + 8, j]
    s += k[9] * m[i + 9, j]
    s += k[10] * m[i + 10, j]
    return s


@nb.njit(cache=True, inline="always")
def _padded_row(a, i, r, buf):
    """Row ``i`` of ``a`` padded by ``r`` on every side with 'reflect' (numpy 'symmetric')
    borders, into ``buf`` (length ``a.shape[1] + 2 r``); needs ``r <= min(a.shape)``."""
    n, w = a.shape
    s = i - r
    if s < 0:
        s = -s - 1
    elif s >= n:
        s = 2 * n - s - 1
    src = a[s]
    for j in range(r):
        buf[j] = src[r - 1 - j]
    for j in range(w):
        buf[r + j] = src[j]
    for j in range(r):
        buf[r + w + j] = src[w - 1 - j]


#: output rows per strip of the MSSIM kernels
_STRIP = 32


def _mssim(a, b, k, crop, out_map) -> float:
    """Mean SSIM of plane ``a`` against plane ``b`` ('reflect' borders, 11-tap window ``k``);
    the per-pixel map goes to ``out_map`` when it is (h, w) (all pixels, crop or not).

    The rows' sums come from :func:`_ssim_rows`; their total is numpy's, outside the threaded
    kernel, so the figure has the same bits on any number of threads (a reduction inside a
    parallel kernel is split between the threads).
    """
    h, w = a.shape
    n = (h - 2 * crop) * (w - 2 * crop)
    return float(_ssim_rows(a, b, k, crop, out_map).sum() / n) if n > 0 else 1.0


@nb.njit(cache=True, parallel=True)
def _ssim_rows(a, b, k, crop, out_map):
    """Per output row, the SSIM summed over the row's columns inside the crop (0 for the rows
    outside it); the per-pixel map goes to ``out_map`` when it is (h, w).

    Separable Gaussian filtering of the five moments in float32, each output the taps summed
    in tap order (the order of the plain loops in ``tests/reference_kernels.py``, so both
    give the same bits), every inner
    loop over a row written to vectorise (indices provably non-negative: no wraparound
    checks), by strips of ``_STRIP`` rows whose horizontal pass (the strip and the window's
    margin) stays in cache; the SSIM formula in float64, each row summed left to right (four
    rows at a time, to hide the add latency), each row's sum stored for :func:`_mssim`.
    """
    r = 5
    h, w = a.shape
    wp = w + 2 * r
    c1 = np.float32((0.01 * 255.0) ** 2)
    c2 = np.float32((0.03 * 255.0) ** 2)
    rows = np.zeros(h, np.float64)
    full = out_map.shape[0] == h
    ns = (h + _STRIP - 1) // _STRIP
    for s in nb.prange(ns):
        i0 = s * _STRIP
        i1 = min(h, i0 + _STRIP)
        nr = i1 - i0 + 2 * r
        mx = np.empty((nr, w), np.float32)
        my = np.empty((nr, w), np.float32)
        mxx = np.empty((nr, w), np.float32)
        myy = np.empty((nr, w), np.float32)
        mxy = np.empty((nr, w), np.float32)
        xr = np.empty(wp, np.float32)
        yr = np.empty(wp, np.float32)
        pxx = np.empty(wp, np.float32)
        pyy = np.empty(wp, np.float32)
        pxy = np.empty(wp, np.float32)
        for pr in range(nr):
            _padded_row(a, i0 + pr, r, xr)
            _padded_row(b, i0 + pr, r, yr)
            for j in range(wp):
                pxx[j] = xr[j] * xr[j]
                pyy[j] = yr[j] * yr[j]
                pxy[j] = xr[j] * yr[j]
            ox, oy, oxx, oyy, oxy = mx[pr], my[pr], mxx[pr], myy[pr], mxy[pr]
            for j in range(w):
                ox[j] = _tap11(xr, j, k)
            for j in range(w):
                oy[j] = _tap11(yr, j, k)
            for j in range(w):
                oxx[j] = _tap11(pxx, j, k)
            for j in range(w):
                oyy[j] = _tap11(pyy, j, k)
            for j in range(w):
                oxy[j] = _tap11(pxy, j, k)
        v = np.zeros((4, w), np.float64)
        ux = np.empty(w, np.float32)
        uy = np.empty(w, np.float32)
        sxx = np.empty(w, np.float32)
        syy = np.empty(w, np.float32)
        sxy = np.empty(w, np.float32)
        for g0 in range(0, i1 - i0, 4):
            for m in range(4):
                ii = g0 + m
                i = i0 + ii
                vr = v[m]
                if ii >= i1 - i0 or (not full and not crop <= i < h - crop):
                    for j in range(w):
                        vr[j] = 0.0
                    continue
                for j in range(w):
                    ux[j] = _vtap11(mx, ii, j, k)
                for j in range(w):
                    uy[j] = _vtap11(my, ii, j, k)
                for j in range(w):
                    sxx[j] = _vtap11(mxx, ii, j, k)
                for j in range(w):
                    syy[j] = _vtap11(myy, ii, j, k)
                for j in range(w):
                    sxy[j] = _vtap11(mxy, ii, j, k)
                for j in range(w):
                    p, q = ux[j], uy[j]
                    vx = sxx[j] - p * p
                    vy = syy[j] - q * q
                    vxy = sxy[j] - p * q
                    vr[j] = ((2 * p * q + c1) * (2 * vxy + c2)) / ((p * p + q * q + c1) * (vx + vy + c2))
                if full:
                    for j in range(w):
                        out_map[i, j] = vr[j]
            s0 = 0.0
            s1 = 0.0
            s2 = 0.0
            s3 = 0.0
            for j in range(crop, w - crop):
                s0 += v[0, j]
                s1 += v[1, j]
                s2 += v[2, j]
                s3 += v[3, j]
            for m in range(4):
                i = i0 + g0 + m
                if g0 + m < i1 - i0 and crop <= i < h - crop:
                    rows[i] = s0 if m == 0 else s1 if m == 1 else s2 if m == 2 else s3
    return rows


_NO_MAP = np.zeros((1, 1), np.float32)


def _mssim_plane(a: np.ndarray, b: np.ndarray, out_map: np.ndarray = _NO_MAP) -> float:
    a = np.ascontiguousarray(a, np.float32)
    b = np.ascontiguousarray(b, np.float32)
    if min(a.shape) <= 2 * (_K.shape[0] // 2):
        return float(_ssim(a, b, False))
    return float(_mssim(a, b, _K, 5, out_map))


def mssim(image: np.ndarray, reference: np.ndarray, channel: str = "luma") -> float:
    """MSSIM of ``image`` against ``reference``: uint8 (H, W, 3) images, or (H, W) planes
    (already luma, e.g. from :func:`luma`); 1.0 when equal."""
    if image.shape != reference.shape:
        raise ValueError(f"mssim: shapes differ {image.shape} vs {reference.shape}")
    if channel == "luma":
        if np.array_equal(image, reference):
            return 1.0
        return _mssim_plane(luma(image), luma(reference))
    if channel == "rgb":
        a = np.asarray(image, np.float64)
        b = np.asarray(reference, np.float64)
        return float(np.mean([_mssim_plane(a[..., c], b[..., c]) for c in range(a.shape[-1])]))
    raise ValueError(f"mssim: channel must be 'luma' or 'rgb', got {channel!r}")


def ssim_map(image: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Per-pixel SSIM (H, W) float32 on luma.  :func:`mssim` is the mean of this map with a
    border of 5 pixels (half the window) left out, as scikit-image computes it."""
    a, b = luma(image), luma(reference)
    r = _K.shape[0] // 2
    if min(a.shape) <= 2 * r:
        return _ssim(a, b, True)[1].astype(np.float32)
    out = np.zeros(a.shape, np.float32)
    _mssim_plane(a, b, out)
    return out
