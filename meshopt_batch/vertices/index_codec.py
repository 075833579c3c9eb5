"""Index-buffer compressibility: bits per triangle under meshoptimizer's index codec.

Assets ship compressed: EXT_meshopt_compression stores an index buffer with meshoptimizer's
index codec (``encode_index_buffer``: a small edge and vertex FIFO that codes each triangle
relative to the ones before it), and web servers add a general-purpose compressor on top.
A triangle order therefore has a second cost besides vertex-shader invocations: how many bits
the codec needs for it.  :func:`codec_bits` measures both, after numbering the vertices in
first-use order (what ``optimize_vertex_fetch`` and this project's vertex-fetch step do, and
what the codec expects).

References
----------
.. [1] A. Kapoulkine, meshoptimizer, "Index compression" (``meshopt_encodeIndexBuffer``) and
   the EXT_meshopt_compression glTF extension specification (mode TRIANGLES).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from ..model.prediction import as_index_array
from ..support.meshoptimizer_bindings import codecs
from .vertex_fetch import first_use_labels

__all__ = ["CodecBits", "codec_bits", "raw_codec_bits"]


@dataclass(frozen=True)
class CodecBits:
    """Bits per triangle of an index buffer under meshoptimizer's index codec (``raw``) and
    after zlib at level 9 on top of the codec's output (``zlib``)."""

    raw: float
    zlib: float
    triangles: int

    def to_dict(self) -> dict:
        return {"raw": self.raw, "zlib": self.zlib, "triangles": self.triangles}


def codec_bits(triangles, vertex_count: int | None = None) -> CodecBits:
    """Bits per triangle of an index buffer under meshoptimizer's index codec.

    The vertices are numbered in order of first use (the order's own numbering is ignored:
    the figure compares orders).

    Parameters
    ----------
    triangles : (T, 3) integer array_like
        The index buffer in draw order.
    vertex_count : int, optional
        Vertex buffer size (default: largest index + 1).

    Returns
    -------
    CodecBits
        ``raw``: the codec's bits per triangle; ``zlib``: after zlib at level 9 on top.
    """
    encoded, t = _encoded(triangles, vertex_count)
    if t == 0:
        return CodecBits(0.0, 0.0, 0)
    return CodecBits(8.0 * len(encoded) / t, 8.0 * len(zlib.compress(encoded, 9)) / t, t)


def raw_codec_bits(triangles, vertex_count: int | None = None) -> float:
    """Bits per triangle under meshoptimizer's index codec alone: :func:`codec_bits`'s ``raw``
    without its zlib pass (what an optimizer compares orders by, many times per buffer).

    Parameters
    ----------
    triangles : (T, 3) integer array_like
        The index buffer in draw order.
    vertex_count : int, optional
        Vertex buffer size (default: largest index + 1).

    Returns
    -------
    float
        The codec's bits per triangle (0 for an empty buffer).

    References
    ----------
    .. [1] A. Kapoulkine, meshoptimizer, ``meshopt_encodeIndexBuffer``.
    """
    encoded, t = _encoded(triangles, vertex_count)
    return 8.0 * len(encoded) / t if t else 0.0


def _encoded(triangles, vertex_count: int | None) -> tuple[bytes, int]:
    """The codec's output for the buffer numbered in first-use order, and its triangle count."""
    tris, vcount = as_index_array(triangles, vertex_count)
    if tris.shape[0] == 0:
        return b"", 0
    flat = np.ascontiguousarray(first_use_labels(tris, vcount)[tris], np.uint32).reshape(-1)
    return bytes(codecs.encode_index_buffer(flat)), int(tris.shape[0])
