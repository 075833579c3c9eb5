"""Compiled doubly-linked bucket lists shared by the greedy optimizers.

Items ``0..n-1`` live in buckets ``0..m-1``: ``head[c]`` is the first item of bucket ``c``
(``-1`` when empty) and ``nxt`` / ``prv`` chain the items of a bucket (``-1`` at the ends).
:func:`bucket_link` pushes an item at the front of a bucket (LIFO), :func:`bucket_unlink`
takes it out of the bucket it is in; both are O(1).
"""

from __future__ import annotations

from numba import njit

__all__ = ["bucket_link", "bucket_unlink"]


@njit(cache=True, inline="always")
def bucket_unlink(f, c, head, nxt, prv):
    """Remove item ``f`` from bucket ``c``."""
    p = prv[f]
    q = nxt[f]
    if p >= 0:
        nxt[p] = q
    else:
        head[c] = q
    if q >= 0:
        prv[q] = p


@njit(cache=True, inline="always")
def bucket_link(f, c, head, nxt, prv):
    """Push item ``f`` at the front of bucket ``c``."""
    h = head[c]
    nxt[f] = h
    prv[f] = -1
    if h >= 0:
        prv[h] = f
    head[c] = f
