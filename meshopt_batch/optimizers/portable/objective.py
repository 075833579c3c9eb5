"""The portable order's one objective, its caps, and the choice among candidate orders.

An asset is built once and drawn on every GPU of a target (:class:`~meshopt_batch.model.targets.
Target`, e.g. ``portable``: NVIDIA under OpenGL and Direct3D, AMD, Intel, llvmpipe).  An order
``x`` is judged on each profile ``p`` of the target by its predicted invocations ``I_p(x)``
(paper 001, Algorithm 1, vertices numbered by first use), as a ratio to the order asset
pipelines ship today, meshoptimizer's ``optimize_vertex_cache`` (``m``):

.. math::

    r_p(x) = I_p(x) / I_p(m), \\qquad J(x) = \\sum_p r_p(x) + w \\max_p r_p(x)

with ``w`` = :data:`~.tuning.WORST_WEIGHT`: lower is better, and a change that lowers the sum by
raising the worst profile must lower it by more.  Two rules bound what may be chosen, so that an
asset pipeline never ships a regression on any GPU:

* **caps**: ``I_p(x) <= min(I_p(m), I_p(input))`` on every profile (never worse than what a
  pipeline ships today, nor than the input); a search from a start above a cap keeps that
  profile at most where the start was (:func:`caps`);
* **codec**: where meshoptimizer's order is the fallback, the index-codec size
  (:mod:`meshopt_batch.vertices.index_codec`) at most :data:`~.tuning.CODEC_SLACK` times its own.

:func:`choose` takes, among the candidates within both rules, the lowest ``J``; where none is,
meshoptimizer's order if it is within the input's figures; else the lowest ``J`` of those within
the input's; else none (the caller keeps the input).  :func:`score` is ``J`` in compiled form,
the number the window search lowers.

References
----------
Kerbl, B., Kenzel, M., Ivanchenko, E., Schmalstieg, D., Steinberger, M. (2018).  Revisiting the
Vertex Cache: Understanding and Optimizing Vertex Processing on the modern GPU.  Proc. ACM
Comput. Graph. Interact. Tech. 1(2) (paper 001: Algorithm 1, the predicted invocations).
Kapoulkine, A.  meshoptimizer (``optimize_vertex_cache``, ``encode_index_buffer``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .tuning import CODEC_SLACK, WORST_WEIGHT

__all__ = ["caps", "choose", "objective", "score"]


@njit(cache=True, nogil=True)
def score(invocations, reference, worst_weight):
    """``J``: the sum of the ratios of ``invocations`` to ``reference`` over the profiles plus
    ``worst_weight`` times the largest."""
    total = 0.0
    worst = -np.inf
    for p in range(invocations.shape[0]):
        r = invocations[p] / reference[p]
        total += r
        if r > worst:
            worst = r
    return total + worst_weight * worst


def objective(invocations, reference) -> float:
    """``J`` of an order's invocations per profile against the reference order's."""
    return float(score(np.asarray(invocations, np.int64), np.maximum(np.asarray(reference, np.float64), 1.0),
                       WORST_WEIGHT))


def caps(reference, given, start) -> np.ndarray:
    """The most each profile may predict in a search from ``start``: the lower of the reference
    order's and the input's (``given``) figures, or the start's where it is already above."""
    return np.maximum(np.minimum(np.asarray(reference, np.float64), np.asarray(given, np.float64)),
                      np.asarray(start, np.float64))


def within(invocations, limit) -> bool:
    """No profile above its limit."""
    return bool(np.all(np.asarray(invocations) <= np.asarray(limit)))


def choose(candidates: dict, reference: str, given, codec) -> str | None:
    """The chosen candidate's name (see the module docstring).

    Parameters
    ----------
    candidates : dict
        Name -> invocations per profile (every candidate, the reference among them).
    reference : str
        The reference order's name (meshoptimizer's).
    given : array
        The input's invocations per profile.
    codec : callable
        Name -> the candidate's index-codec bits (only called where it decides).
    """
    ref = candidates[reference]
    ours = [name for name in candidates if name != reference]
    limit = np.minimum(np.asarray(ref), np.asarray(given))
    best = [n for n in ours if within(candidates[n], limit) and codec(n) <= CODEC_SLACK * codec(reference)]
    if not best:
        if within(ref, given):
            return reference
        best = [n for n in ours if within(candidates[n], given)]
    return min(best, key=lambda n: objective(candidates[n], ref)) if best else None
