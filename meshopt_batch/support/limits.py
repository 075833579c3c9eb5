"""Resource limits: sizes the tool refuses, with one line, before it allocates anything.

Each limit is here with its reason, and each check raises :class:`LimitError` (a
:class:`~meshopt_batch.support.errors.MeshoptBatchError`: one line on stderr, exit code 2) naming the
option or JSON place, the value and the limit.  The documentation's "Input checks and limits"
page shows this table.

=============================  ================  ===============================================
limit                          value             why
=============================  ================  ===============================================
:data:`MAX_SCREEN_SIDE`        16384 pixels      the largest viewport and renderbuffer OpenGL
                                                 implementations offer (``GL_MAX_VIEWPORT_DIMS``
                                                 of Mesa llvmpipe and desktop GPUs), so
                                                 ``--check-gl`` can render the same frame
:data:`SCREEN_BYTES_PER_PIXEL` 100 bytes         a run's frame buffers, per pixel (measured:
                                                 76 B with all seven techniques at 2048x2048,
                                                 rounded up); width x height x 100 must fit in
                                                 the memory available
:data:`MAX_TILE`               1024 pixels       per-tile buffers hold tile^2 pixels; tile-based
                                                 GPUs use 16x16 (Arm Mali) or 32x32 (PowerVR)
:data:`MAX_FRAMES`             1,000,000         a run keeps one table row per frame and
                                                 technique; a million frames is 4.6 hours of
                                                 animation at 60 frames per second
:data:`MAX_FRAME_NUMBER`       2^31 - 1          a year of animation at 60 frames per second is
                                                 1.9e9 frames; frame numbers stay exact in every
                                                 float64 and int64 table
:data:`MAX_PROFILE_SIZE`       2^24              a cache or batch bound at least a mesh's index
                                                 count behaves as unbounded (0); the LRU and
                                                 direct-mapped tables and the batch optimizer's
                                                 reuse state take 8-32 bytes per ``memory_size``
                                                 entry (512 MiB at 2^24; ``fifo:99999999999``
                                                 asked for 2.9 TiB)
:data:`MAX_GENERATED_TRIANGLES` 4,194,304        a procedural scene mesh (``icosphere`` subdiv,
                                                 ``grid``, ``box`` divisions...) is built and
                                                 drawn every frame: 2^22 triangles is four times
                                                 the largest shared scan (bunny_sub2, 1.1 M);
                                                 ``icosphere`` subdiv 12 is 335 M (24 GB)
:data:`MAX_SCENE_TRIANGLES`    8,388,608         the triangles a scene's draw calls submit in one
                                                 frame (every object's mesh, a mesh drawn by n
                                                 objects n times): the geometry stage holds the
                                                 whole frame at once, measured 400 bytes per
                                                 triangle (peak 1.7 GB: ``simulate -n 1`` of
                                                 one 4.2 M-triangle grid), so 2^23 is about
                                                 3.4 GB; the shipped scenes draw at most 0.56 M.
                                                 A ``merge`` (static batch) is one mesh: its
                                                 parts together stay within
                                                 :data:`MAX_GENERATED_TRIANGLES`
:data:`MAX_ELEMENTS`           2^32              an element count no 32-bit index can address;
                                                 counts are also checked against the memory
                                                 available (:func:`check_memory`)
optimizing a mesh file         memory            ``meshopt-batch optimize`` first checks its
                                                 working-memory estimate (16 MiB + 3 x the file's
                                                 bytes + 400 B per triangle, measured in
                                                 :mod:`meshopt_batch_app.library.memory`)
                                                 against the memory available
:data:`FLOAT32_MAX`            3.4028235e38      positions and transforms are float32 on the GPU
                                                 and in the pipeline model: a larger number
                                                 becomes infinity
=============================  ================  ===============================================

The memory available is what the operating system reports (:func:`psutil.virtual_memory`,
``available``).
"""

from __future__ import annotations

import math

import numpy as np
import psutil

from .errors import MeshoptBatchError

__all__ = [
    "FLOAT32_MAX", "MAX_ELEMENTS", "MAX_FRAMES", "MAX_FRAME_NUMBER", "MAX_GENERATED_TRIANGLES",
    "MAX_PROFILE_SIZE", "MAX_SCENE_TRIANGLES", "MAX_SCREEN_SIDE", "MAX_TILE", "SCREEN_BYTES_PER_PIXEL", "LimitError",
    "available_memory", "check_cache_size", "check_frames", "check_generated_triangles", "check_memory",
    "check_profile_sizes", "check_scene_triangles", "check_screen", "check_screen_side", "check_tile", "format_bytes",
]

MAX_SCREEN_SIDE = 16384
SCREEN_BYTES_PER_PIXEL = 100
MAX_TILE = 1024
MAX_FRAMES = 1_000_000
MAX_FRAME_NUMBER = 2**31 - 1
MAX_PROFILE_SIZE = 2**24
MAX_GENERATED_TRIANGLES = 2**22
MAX_SCENE_TRIANGLES = 2**23
MAX_ELEMENTS = 2**32
FLOAT32_MAX = float(np.finfo(np.float32).max)


class LimitError(MeshoptBatchError, ValueError):
    """A request beyond one of the documented limits (names the limit and its reason)."""


def available_memory() -> int:
    """Bytes of memory the operating system says a new allocation can have now."""
    return int(psutil.virtual_memory().available)


def format_bytes(n: float) -> str:
    """``n`` bytes as ``512 MiB``, ``2.9 TiB``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" or n >= 100 else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} PiB"


def _whole(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        if isinstance(value, float) and math.isfinite(value) and value == int(value):
            return int(value)
        raise LimitError(f"{what}: expected a whole number, got {value!r}")
    return int(value)


def check_memory(nbytes: float, what: str) -> None:
    """Refuse ``what`` when it needs more than the memory available now."""
    free = available_memory()
    if nbytes > free:
        raise LimitError(f"{what} needs about {format_bytes(nbytes)}, more than the "
                         f"{format_bytes(free)} of memory available")


def check_screen_side(side, what: str) -> int:
    """A screen width or height of 1..:data:`MAX_SCREEN_SIDE` pixels."""
    n = _whole(side, what)
    if not 1 <= n <= MAX_SCREEN_SIDE:
        raise LimitError(f"{what} {n}: must be 1..{MAX_SCREEN_SIDE} pixels (the largest OpenGL viewport)")
    return n


def check_screen(width, height) -> tuple[int, int]:
    """``(width, height)`` when each side is 1..:data:`MAX_SCREEN_SIDE` and the frame buffers
    (:data:`SCREEN_BYTES_PER_PIXEL` per pixel) fit in the memory available."""
    w, h = check_screen_side(width, "screen width"), check_screen_side(height, "screen height")
    check_memory(w * h * SCREEN_BYTES_PER_PIXEL, f"a {w}x{h} screen")
    return w, h


def check_tile(tile, what: str = "tile") -> int:
    """A tile size that is a power of two in 1..:data:`MAX_TILE`."""
    t = _whole(tile, what)
    if not 1 <= t <= MAX_TILE or t & (t - 1):
        raise LimitError(f"{what} {t}: must be a power of two from 1 to {MAX_TILE} pixels "
                         "(tile-based GPUs use 16 or 32)")
    return t


def check_frames(frames, first_frame=0, what: str = "frames",
                 first_what: str = "first frame") -> tuple[int, int]:
    """``(frames, first_frame)``: 1..:data:`MAX_FRAMES` frames from frame 0 or later, the last
    one at most :data:`MAX_FRAME_NUMBER`."""
    n = _whole(frames, what)
    first = _whole(first_frame, first_what)
    if not 1 <= n <= MAX_FRAMES:
        raise LimitError(f"{what} {n}: must be 1..{MAX_FRAMES:,}")
    if first < 0 or first + n - 1 > MAX_FRAME_NUMBER:
        raise LimitError(f"{first_what} {first}: frames are numbered 0..{MAX_FRAME_NUMBER:,}")
    return n, first


def check_cache_size(size, what: str) -> None:
    """Refuse a cache size or batch bound over :data:`MAX_PROFILE_SIZE`."""
    if isinstance(size, (int, np.integer)) and not isinstance(size, bool) and size > MAX_PROFILE_SIZE:
        raise LimitError(f"{what} {size} is over the limit of {MAX_PROFILE_SIZE:,} (that large acts as "
                         "unbounded, and its tables would not fit in memory)")


def check_profile_sizes(name: str, max_size, max_uniques, memory_size) -> None:
    """Refuse batch bounds or a memory size over :data:`MAX_PROFILE_SIZE`."""
    for value, field in ((max_size, "max_size"), (max_uniques, "max_uniques"), (memory_size, "memory_size")):
        check_cache_size(value, f"profile {name!r}: {field}")


def check_generated_triangles(triangles: int, what: str) -> None:
    """Refuse a procedural mesh of more than :data:`MAX_GENERATED_TRIANGLES` triangles."""
    if triangles > MAX_GENERATED_TRIANGLES:
        raise LimitError(f"{what}: would have {triangles:,} triangles, over the limit of "
                         f"{MAX_GENERATED_TRIANGLES:,} for a generated mesh")


def check_scene_triangles(triangles: int, what: str) -> None:
    """Refuse a scene whose draw calls submit more than :data:`MAX_SCENE_TRIANGLES` triangles
    in one frame."""
    if triangles > MAX_SCENE_TRIANGLES:
        raise LimitError(f"{what}: would draw {triangles:,} triangles a frame, over the limit of "
                         f"{MAX_SCENE_TRIANGLES:,} for a scene")
