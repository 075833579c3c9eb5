"""Image quality: MSSIM (Wang, Bovik, Sheikh, Simoncelli 2004), as DSR's quality rule uses it.

Paper 004 (DSR) counts a frame as erroneous when its Mean Structural Similarity Index against
the frame rendered at full sampling rate is below 0.95.  The index is computed here with
scikit-image's ``structural_similarity`` with the settings of Wang et al. (11x11 Gaussian window
of sigma 1.5, population covariance, K1 = 0.01, K2 = 0.03, data range 255) on the **luma**
channel (ITU-R BT.601 weights: 0.299 R + 0.587 G + 0.114 B), which is how the SSIM paper applies
the index to colour images.  ``channel="rgb"`` averages the per-channel indices instead.
"""

from __future__ import annotations

import numpy as np
from skimage.metrics import structural_similarity

__all__ = ["MSSIM_THRESHOLD", "luma", "mssim", "ssim_map"]

#: Paper 004's quality rule: a frame below this MSSIM is an error.
MSSIM_THRESHOLD = 0.95

_LUMA = np.array([0.299, 0.587, 0.114])


def luma(image: np.ndarray) -> np.ndarray:
    """BT.601 luma of an (H, W, 3) image, float64 in the image's own scale (0..255 for uint8)."""
    a = np.asarray(image)
    if a.ndim == 2:
        return a.astype(np.float64)
    return a[..., :3].astype(np.float64) @ _LUMA


def _ssim(a, b, full):
    return structural_similarity(a, b, data_range=255.0, gaussian_weights=True, sigma=1.5,
                                 use_sample_covariance=False, full=full)


def mssim(image: np.ndarray, reference: np.ndarray, channel: str = "luma") -> float:
    """MSSIM of ``image`` against ``reference`` (uint8 (H, W, 3) or (H, W)); 1.0 when equal."""
    if image.shape != reference.shape:
        raise ValueError(f"mssim: shapes differ {image.shape} vs {reference.shape}")
    if channel == "luma":
        return float(_ssim(luma(image), luma(reference), False))
    if channel == "rgb":
        a = np.asarray(image, np.float64)
        b = np.asarray(reference, np.float64)
        return float(np.mean([_ssim(a[..., c], b[..., c], False) for c in range(a.shape[-1])]))
    raise ValueError(f"mssim: channel must be 'luma' or 'rgb', got {channel!r}")


def ssim_map(image: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Per-pixel SSIM (H, W) on luma.  :func:`mssim` is the mean of this map with a border of
    5 pixels (half the window) left out, as scikit-image computes it."""
    return _ssim(luma(image), luma(reference), True)[1]
