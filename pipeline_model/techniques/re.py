"""Rendering Elimination (RE): per-tile CRC32 signatures, paper 003 sec. II and IV.B.

When the polygon list builder bins a primitive it computes the CRC32 of the primitive's
post-transform inputs, and folds it into the signature of every tile the primitive overlaps, in
bin order.  Before a tile is rasterized its signature is compared with the one it had in the
previous frame; when they are equal the tile is not rendered and keeps last frame's colours.

What goes into a primitive's CRC (everything the raster stage reads to colour a pixel):

* per vertex: window position ``xy`` (float64, on the 1/256 grid), depth ``z``, ``inv_w``,
  ``uv``, ``shade``; the primitive's index ``prim`` in its draw;
* its draw's render state: ``object_id``, ``depth_test``, ``depth_write``, ``blend``, ``alpha``,
  ``shader_cost``, ``colour_kind``, ``colour_params`` (the whole "texture" of the model).

A tile's signature is the CRC32 of the sequence of its primitives' CRCs in bin order, so the
number, the order and the content of the primitives all count.  With EVR (``include`` mask) the
primitives predicted occluded in a tile are left out of that tile's signature (paper 003 sec.
IV.B); see :mod:`pipeline_model.techniques.evr` for why that stays exact in this model.

The CRC is the standard reflected CRC-32 (polynomial 0xEDB88320, the one of zlib), compiled with
numba (slicing-by-8 for the per-primitive CRCs, byte by byte for the tile signatures) because it
runs over every primitive and every tile entry of every frame; ``tests/test_techniques_core.py``
checks both against :func:`zlib.crc32`.

References
----------
Anglada, M., de Lucas, E., Parcerisa, J.-M., Aragon, J. L., Gonzalez, A. (2019).  Early Visibility
Resolution for Removing Ineffectual Computations in the Graphics Pipeline.  HPCA (paper 003), sec. II and IV.B:
Rendering Elimination and its per-tile signatures.
"""

from __future__ import annotations

import zlib

import numba as nb
import numpy as np

from pipeline_model.techniques._shared import frame_cache
from pipeline_model.techniques.base import RenderRequest, Technique

__all__ = [
    "draw_state_bytes",
    "triangle_bytes",
    "triangle_crcs",
    "tile_signatures",
    "RenderingElimination",
    "frame_seed",
    "frame_signatures",
    "RE",
]


def _make_table() -> np.ndarray:
    t = np.zeros(256, np.uint32)
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0xEDB88320 if c & 1 else c >> 1
        t[i] = c
    return t


def _make_tables8() -> np.ndarray:
    """Slicing-by-8 tables: ``T[k][b]`` = CRC of byte b followed by k zero bytes."""
    t = np.zeros((8, 256), np.uint32)
    t[0] = _make_table()
    for k in range(1, 8):
        t[k] = (t[k - 1] >> 8) ^ t[0][t[k - 1] & 0xFF]
    return t


_TABLE = _make_table()
_TABLE8 = _make_tables8()


@nb.njit(cache=True, inline="always")
def _crc_update(crc, b, table):
    return table[(crc ^ b) & 0xFF] ^ (crc >> 8)


@nb.njit(cache=True)
def _row_crcs(rows, init, table8):
    """CRC-32 of every row (slicing-by-8: eight bytes per step), continuing from ``init``."""
    n, m = rows.shape
    out = np.empty(n, np.uint32)
    full = m - m % 8
    for r in range(n):
        c = np.uint32(init[r]) ^ np.uint32(0xFFFFFFFF)
        for i in range(0, full, 8):
            lo = c ^ (np.uint32(rows[r, i]) | (np.uint32(rows[r, i + 1]) << 8)
                      | (np.uint32(rows[r, i + 2]) << 16) | (np.uint32(rows[r, i + 3]) << 24))
            c = (table8[7, lo & 0xFF] ^ table8[6, (lo >> 8) & 0xFF]
                 ^ table8[5, (lo >> 16) & 0xFF] ^ table8[4, lo >> 24]
                 ^ table8[3, rows[r, i + 4]] ^ table8[2, rows[r, i + 5]]
                 ^ table8[1, rows[r, i + 6]] ^ table8[0, rows[r, i + 7]])
        for i in range(full, m):
            c = table8[0, (c ^ np.uint32(rows[r, i])) & 0xFF] ^ (c >> 8)
        out[r] = c ^ np.uint32(0xFFFFFFFF)
    return out


def _as_bytes(a, n) -> np.ndarray:
    return np.ascontiguousarray(a).reshape(n, -1).view(np.uint8).reshape(n, -1)


def draw_state_bytes(frame) -> np.ndarray:
    """(D, 48) uint8: the render state of each draw that RE folds into its primitives' CRC."""
    d = frame.n_draws
    return np.concatenate([
        _as_bytes(frame.object_id.astype(np.int32), d),
        _as_bytes(frame.depth_test.astype(np.uint8), d),
        _as_bytes(frame.depth_write.astype(np.uint8), d),
        _as_bytes(frame.blend.astype(np.uint8), d),
        _as_bytes(frame.colour_kind.astype(np.int8), d),
        _as_bytes(frame.alpha.astype(np.float32), d),
        _as_bytes(frame.shader_cost.astype(np.float32), d),
        _as_bytes(frame.colour_params.astype(np.float32), d),
    ], axis=1)


def _triangle_parts(frame) -> list:
    """The post-transform attributes of each triangle as (N, k) uint8 views, in CRC order."""
    n = frame.n_triangles
    return [_as_bytes(frame.xy, n), _as_bytes(frame.z, n), _as_bytes(frame.inv_w, n),
            _as_bytes(frame.uv, n), _as_bytes(frame.shade, n), _as_bytes(frame.prim, n)]


def triangle_bytes(frame) -> np.ndarray:
    """(N, 112) uint8: the post-transform attributes of each triangle."""
    return np.concatenate(_triangle_parts(frame), axis=1)


def triangle_crcs(frame) -> np.ndarray:
    """CRC32 per triangle (N,) uint32 over its draw's state then its own attributes
    (:func:`triangle_bytes`, read part by part: a CRC continued over consecutive pieces is
    the CRC of the whole, and the attributes are not copied into one buffer)."""
    if frame.n_triangles == 0:
        return np.zeros(0, np.uint32)
    zeros = np.zeros(frame.n_draws, np.uint32)
    crc = _row_crcs(draw_state_bytes(frame), zeros, _TABLE8)[frame.draw]
    for part in _triangle_parts(frame):
        crc = _row_crcs(part, crc, _TABLE8)
    return crc


@nb.njit(cache=True)
def _tile_sigs(offsets, tri, tri_crc, include, use_mask, seed, table):
    n_tiles = offsets.shape[0] - 1
    out = np.empty(n_tiles, np.uint32)
    for t in range(n_tiles):
        c = np.uint32(seed) ^ np.uint32(0xFFFFFFFF)
        for i in range(offsets[t], offsets[t + 1]):
            if use_mask and not include[i]:
                continue
            v = tri_crc[tri[i]]
            for k in range(4):
                c = _crc_update(c, (v >> np.uint32(8 * k)) & np.uint32(0xFF), table)
        out[t] = c ^ np.uint32(0xFFFFFFFF)
    return out


def tile_signatures(offsets, tri, tri_crc, include=None, seed: int = 0) -> np.ndarray:
    """Per-tile signature (n_tiles,) uint32: CRC32 (continuing from ``seed``) over the
    little-endian CRCs of the tile's primitives in bin order; entries with
    ``include[i] == False`` (per CSR entry) are left out."""
    offsets = np.asarray(offsets, np.int64)
    use_mask = include is not None
    inc = np.asarray(include, np.bool_) if use_mask else np.ones(1, np.bool_)
    return _tile_sigs(offsets, np.asarray(tri), np.asarray(tri_crc, np.uint32), inc, use_mask,
                      np.uint32(seed), _TABLE)


class RenderingElimination:
    """The Signature Buffer: last rendered signature per tile, and the skip decision.

    ``decide(sig)`` returns the tiles to skip this frame (equal to the stored signature);
    ``commit(reference, rendered)`` stores, for rendered tiles, the signature the next frame is
    compared with (for plain RE the same ``sig``; EVR+RE passes a recomputed one).
    """

    def __init__(self):
        self.signature: np.ndarray | None = None
        self.valid: np.ndarray | None = None

    def reset(self) -> None:
        self.signature = None
        self.valid = None

    def decide(self, sig: np.ndarray) -> np.ndarray:
        if self.signature is None or self.signature.shape != sig.shape:
            return np.zeros(sig.shape, np.bool_)
        return self.valid & (sig == self.signature)

    def commit(self, reference: np.ndarray, rendered: np.ndarray) -> None:
        if self.signature is None or self.signature.shape != reference.shape:
            self.signature = reference.copy()
            self.valid = rendered.copy()
            return
        self.signature = np.where(rendered, reference, self.signature)
        self.valid = self.valid | rendered


# -------------------------------------------------------------------------- technique


def frame_seed(ctx) -> int:
    """CRC of the per-frame state that colours every tile (clear colour, light direction): the
    starting value of every tile signature, so a change of it re-renders everything.

    The CRC-32 of the values as float64, clear colour first (``zlib.crc32``: one short buffer
    per frame, no compiled kernel needed).
    """
    spec = ctx.spec
    vals = np.concatenate([np.ravel(np.asarray(spec.clear, np.float64)),
                           np.ravel(np.asarray(spec.light_direction, np.float64))])
    return zlib.crc32(vals.tobytes())


def frame_signatures(ctx, include=None) -> np.ndarray:
    """Tile signatures of the frame in ``ctx`` (triangle CRCs cached per frame)."""
    crc = frame_cache(ctx.frame, "re_triangle_crc", lambda: triangle_crcs(ctx.frame))
    seed = frame_cache(ctx.frame, "re_seed", lambda: frame_seed(ctx))
    return tile_signatures(ctx.tiles.offsets, ctx.tiles.tri, crc, include, seed)


class RE(Technique):
    """Rendering Elimination: skip a tile whose signature equals last frame's."""

    name = "re"

    def reset(self) -> None:
        self.buffer = RenderingElimination()
        self._sig = None
        self._skip = None

    def begin_frame(self, ctx) -> RenderRequest:
        self._sig = frame_signatures(ctx)
        self._skip = self.buffer.decide(self._sig)
        return RenderRequest(skip=self._skip if self._skip.any() else None)

    def end_frame(self, ctx, result) -> dict:
        self.buffer.commit(self._sig, ~self._skip)
        return {}
