"""Colour functions evaluated once per shaded fragment (compiled, deterministic).

The raster stage calls :func:`shade_rgb` for every fragment that passes the depth test, with
the draw's ``colour_kind`` and ``colour_params`` row and the fragment's perspective-correct
texture coordinates ``(u, v)`` and interpolated light intensity. All arithmetic is float64 and
integer hashing, with no randomness and no platform-dependent library calls beyond ``floor``,
so images are bit-identical run to run.

``colour_params`` (8 x float32): ``[r0, g0, b0, r1, g1, b1, frequency, flags]``.

* ``0`` **flat**: ``(r0, g0, b0)``.
* ``1`` **checker**: ``floor(u f) + floor(v f)`` even -> base colour, odd -> second colour.
* ``2`` **stripes**: ``floor((u + v) f)`` even -> base, odd -> second (diagonal stripes).
* ``3`` **noise**: value noise: a hash of the integer lattice point gives a value in [0, 1) at
  every corner of the cell containing ``(u f, v f)``; smoothstep-weighted bilinear
  interpolation of the four corners mixes base and second colour.
* ``4`` **lit**: base colour times ``AMBIENT + (1 - AMBIENT) * light``.

``flags`` (params[7]): when > 0, kinds 0-3 are also modulated by the lighting term (textured and
lit surfaces).
"""

from __future__ import annotations

import math

import numba
import numpy as np

__all__ = ["AMBIENT", "hash2", "value_noise", "shade_rgb", "shade_scalar", "shade_image"]

AMBIENT = 0.2


@numba.njit(cache=True, nogil=True, inline="always")
def hash2(ix, iy):
    """A 32-bit integer hash of a lattice point, as a float in [0, 1)."""
    h = (ix * 0x27D4EB2D + iy * 0x165667B1 + 0x3C6EF372) & 0xFFFFFFFF
    h ^= h >> 15
    h = (h * 0x2C1B3C6D) & 0xFFFFFFFF
    h ^= h >> 12
    h = (h * 0x297A2D39) & 0xFFFFFFFF
    h ^= h >> 15
    return h * (1.0 / 4294967296.0)


@numba.njit(cache=True, nogil=True, inline="always")
def _smooth(t):
    return t * t * (3.0 - 2.0 * t)


@numba.njit(cache=True, nogil=True)
def value_noise(x, y):
    """Deterministic value noise in [0, 1) at (x, y) (lattice spacing 1)."""
    fx = math.floor(x)
    fy = math.floor(y)
    ix = np.int64(fx)
    iy = np.int64(fy)
    tx = _smooth(x - fx)
    ty = _smooth(y - fy)
    a = hash2(ix, iy)
    b = hash2(ix + 1, iy)
    c = hash2(ix, iy + 1)
    d = hash2(ix + 1, iy + 1)
    top = a + (b - a) * tx
    bot = c + (d - c) * tx
    return top + (bot - top) * ty


@numba.njit(cache=True, nogil=True)
def shade_scalar(kind, r0, g0, b0, r1, g1, b1, f, flags, u, v, light):
    """:func:`shade_rgb` with the colour parameters as scalars (the raster's inner loop)."""
    if kind == 4:
        k = AMBIENT + (1.0 - AMBIENT) * light
        return r0 * k, g0 * k, b0 * k
    t = 0.0
    if kind == 1:
        s = np.int64(math.floor(u * f)) + np.int64(math.floor(v * f))
        t = np.float64(s & 1)
    elif kind == 2:
        t = np.float64(np.int64(math.floor((u + v) * f)) & 1)
    elif kind == 3:
        t = value_noise(u * f, v * f)
    r = r0 + (r1 - r0) * t
    g = g0 + (g1 - g0) * t
    b = b0 + (b1 - b0) * t
    if flags > 0:
        k = AMBIENT + (1.0 - AMBIENT) * light
        r *= k
        g *= k
        b *= k
    return r, g, b


@numba.njit(cache=True, nogil=True)
def shade_rgb(kind, p, u, v, light):
    """RGB in [0, 1] (float64 triple) of one fragment. ``p`` is the draw's colour_params row."""
    return shade_scalar(kind, np.float64(p[0]), np.float64(p[1]), np.float64(p[2]),
                        np.float64(p[3]), np.float64(p[4]), np.float64(p[5]),
                        np.float64(p[6]), np.float64(p[7]), u, v, light)


@numba.njit(cache=True)
def _shade_image(kind, p, u, v, light, out):
    for i in range(u.shape[0]):
        r, g, b = shade_rgb(kind, p, u[i], v[i], light[i])
        out[i, 0] = r
        out[i, 1] = g
        out[i, 2] = b


def shade_image(kind: int, params, u, v, light=None) -> np.ndarray:
    """Vectorised :func:`shade_rgb` over arrays (for previews and tests); returns (..., 3) float64."""
    u = np.asarray(u, np.float64)
    shape = u.shape
    u = u.ravel()
    v = np.broadcast_to(np.asarray(v, np.float64), shape).ravel()
    light = np.ones_like(u) if light is None else np.broadcast_to(np.asarray(light, np.float64), shape).ravel()
    out = np.empty((u.size, 3), np.float64)
    _shade_image(int(kind), np.asarray(params, np.float32), u, v, np.ascontiguousarray(light), out)
    return out.reshape(shape + (3,))
