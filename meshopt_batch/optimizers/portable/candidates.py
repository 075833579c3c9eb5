"""Candidate orders of one index buffer, each numbered and predicted once, and the choice.

Every candidate is numbered in first-use order before it is judged (llvmpipe's direct-mapped
table depends on vertex numbers), unless it comes with its own numbering (the 16-bit fix's
copies, or 2^16 blocks); it is predicted once on every profile of the target as the hardware
sees the buffer (:meth:`~meshopt_batch.model.targets.Target.evaluation_profiles`), and its index-codec
size is measured only where the choice needs it.  :meth:`Pool.choose` applies the rule of
:mod:`.objective`.

References
----------
Kerbl, B. et al. (2018).  Revisiting the Vertex Cache.  Proc. ACM Comput. Graph. Interact.
Tech. 1(2) (paper 001: Algorithm 1).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...model.prediction import predict
from ...model.targets import Target
from ...vertices.index_codec import raw_codec_bits
from ...vertices.vertex_fetch import number_by_first_use
from . import objective

__all__ = ["Candidate", "Pool", "REFERENCE"]

#: The reference order's name: meshoptimizer's ``optimize_vertex_cache`` (what gltfpack ships).
REFERENCE = "meshoptimizer"


@dataclass
class Candidate:
    """One order in the pool.

    Attributes
    ----------
    name : str
        How it was made (``batch@amd#1``, ``meshoptimizer + search``...).
    triangles : (T, 3) int64 ndarray
        The order in its own numbering.
    source : (V',) int64 ndarray
        New vertex -> input vertex.
    invocations : (P,) int64 ndarray
        Predicted invocations on each profile of the target, as the hardware sees the buffer.
    codec : float or None
        Raw index-codec bits per triangle (measured when first asked).
    """

    name: str
    triangles: np.ndarray
    source: np.ndarray
    invocations: np.ndarray
    codec: float | None = field(default=None, repr=False)

    @property
    def original(self) -> np.ndarray:
        """The order in the input's vertex numbers."""
        return self.source[self.triangles]


class Pool:
    """The candidates of one index buffer and the choice among them.

    Parameters
    ----------
    triangles : (T, 3) int64 array
        The input order.
    vertex_count : int
    target : Target
    """

    def __init__(self, triangles: np.ndarray, vertex_count: int, target: Target):
        self.target = target
        self.vertex_count = vertex_count
        self.profiles = target.evaluation_profiles(vertex_count)
        self.names = [p.name for p in self.profiles]
        self.given = self.predict(triangles, vertex_count)
        self.candidates: dict[str, Candidate] = {}

    def predict(self, numbered: np.ndarray, count: int) -> np.ndarray:
        """An order's invocations on every profile of the target (as numbered)."""
        return np.array([predict(numbered, count, profile=p).invocations
                         for p in self.target.evaluation_profiles(count)], np.int64)

    def make(self, name: str, triangles: np.ndarray, source: np.ndarray | None = None) -> Candidate:
        """An order numbered (unless ``source`` gives its numbering) and predicted, not kept
        (safe to call from several threads at once)."""
        if source is None:
            triangles, source = number_by_first_use(triangles, self.vertex_count)
        return Candidate(name, np.asarray(triangles, np.int64), np.asarray(source, np.int64),
                         self.predict(triangles, int(source.shape[0])))

    def keep(self, entry: Candidate) -> Candidate:
        self.candidates[entry.name] = entry
        return entry

    def add(self, name: str, triangles: np.ndarray, source: np.ndarray | None = None) -> Candidate:
        """Number (unless ``source`` gives its numbering), predict and keep an order."""
        return self.keep(self.make(name, triangles, source))

    def drop(self, name: str) -> None:
        del self.candidates[name]

    def __getitem__(self, name: str) -> Candidate:
        return self.candidates[name]

    def __contains__(self, name: str) -> bool:
        return name in self.candidates

    @property
    def reference(self) -> Candidate:
        return self.candidates[REFERENCE]

    def codec(self, name: str) -> float:
        """A candidate's raw index-codec bits per triangle."""
        entry = self.candidates[name]
        if entry.codec is None:
            entry.codec = raw_codec_bits(entry.triangles, entry.source.shape[0])
        return entry.codec

    def ratios(self, name: str) -> np.ndarray:
        """A candidate's invocations over the reference order's, per profile."""
        return self.candidates[name].invocations / np.maximum(self.reference.invocations, 1)

    def objective(self, name: str) -> float:
        return objective.objective(self.candidates[name].invocations, self.reference.invocations)

    def fallback_is_reference(self) -> bool:
        """meshoptimizer's order is within the input's figures on every profile: the choice
        takes it unless one of ours is within its figures and its codec slack."""
        return objective.within(self.reference.invocations, self.given)

    def choose(self) -> str | None:
        """The chosen candidate's name (:func:`.objective.choose`); None keeps the input."""
        return objective.choose({n: c.invocations for n, c in self.candidates.items()}, REFERENCE, self.given,
                                self.codec)

    def closest_to_reference(self) -> str | None:
        """Ours with the lowest worst ratio to the reference order (then the lowest objective)."""
        ours = [n for n in self.candidates if n != REFERENCE]
        return min(ours, key=lambda n: (self.ratios(n).max(), self.objective(n))) if ours else None

    def beats_input_on(self) -> list[int]:
        """The profiles (indices) on which the input predicts fewer invocations than every
        candidate."""
        best = np.min([c.invocations for c in self.candidates.values()], axis=0)
        return [k for k in range(len(self.names)) if self.given[k] < best[k]]

    def stats(self) -> dict:
        """Every candidate's invocations per profile, codec bits where measured, and objective."""
        return {name: {"invocations": dict(zip(self.names, map(int, c.invocations), strict=True)),
                       "codec_bits": c.codec, "mean_ratio": float(self.ratios(name).mean()),
                       "objective": self.objective(name)}
                for name, c in self.candidates.items()}
