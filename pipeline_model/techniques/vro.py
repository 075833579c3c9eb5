"""Visibility Rendering Order (VRO), de Lucas et al., paper 000 sec. 3-4.3.

During frame N every early-depth comparison between fragments of two *different* objects
yields an edge ``occluder -> occluded`` of the object visibility graph (sec. 3.1):

* self-occlusions are dropped (cycle kind 1, sec. 3.2);
* only the first relation between a pair is kept -- a later ``(B, A)`` after ``(A, B)`` is
  ignored (cycle kind 2);
* longer cycles (kind 3) stay in the graph and are side-stepped while sorting: Kahn's algorithm
  (Algorithm 1) extended so that, whenever the root queue is empty but nodes remain, it takes the
  remaining node that comes first in program order among those with the fewest incoming edges,
  drops those edges and goes on (sec. 3.2 / 4.3.3).

At frame N+1 the tiles are drawn in that order (sec. 3.4): objects of the graph that are not in
the frame are skipped, objects new in this frame follow the sorted ones in program order, and
objects that are order-dependent keep their program order relative to everything they overlap.
The paper names translucent (blend) and depth-test-off objects; this model also counts opaque
NWOZ draws (depth test on, depth write off) as order-dependent, because their colour writes are
resolved by order, not by depth (paper 003 sec. III.B).  "Overlap" is taken at tile granularity,
which is what a tile scheduler sees: inside a tile an order-dependent triangle is a barrier, and
only the free (opaque, depth-tested, depth-writing) triangles between two barriers are reordered,
by object rank, keeping each object's own triangle order.  Pixels therefore get the same colours
as in program order (the depth test resolves the free triangles), which the tests check frame by
frame against the baseline.

State carried between frames: the graph built during the last frame (:class:`VisibilityGraph`).

References
----------
de Lucas, E., Marcuello, P., Parcerisa, J.-M., Gonzalez, A. (2019).  Visibility Rendering Order:
Improving Energy Efficiency on Mobile GPUs through Frame Coherence.  IEEE TPDS 30(2) (paper 000): sec. 3.1-3.4
(visibility graph, cycles, per-tile order), Algorithm 1 (Kahn's sort), sec. 4.3.3.
Kahn, A. B. (1962).  Topological sorting of large networks.  Commun. ACM 5(11), 558-562.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numba as nb
import numpy as np

from pipeline_model.techniques import re as _re
from pipeline_model.techniques._shared import frame_cache, reorder_extra
from pipeline_model.techniques.base import RenderRequest, Technique

__all__ = [
    "VisibilityGraph",
    "SortResult",
    "kahn_sort",
    "free_draws",
    "object_ranks",
    "tile_order",
    "VRO",
]


# ----------------------------------------------------------------------------- the graph
@dataclass
class VisibilityGraph:
    """Directed object graph: an edge ``a -> b`` means object ``a`` was seen in front of ``b``.

    ``nodes`` are the object ids in program order of their first draw in the frame the graph was
    built from (the sort's tie-break).  Adjacency lists keep insertion order.
    """

    nodes: list[int] = field(default_factory=list)
    children: dict[int, list[int]] = field(default_factory=dict)
    in_degree: dict[int, int] = field(default_factory=dict)
    _pairs: set[tuple[int, int]] = field(default_factory=set, repr=False)
    self_edges_ignored: int = 0
    reverse_edges_ignored: int = 0
    duplicate_edges_ignored: int = 0

    @classmethod
    def from_pairs(cls, nodes, pairs) -> VisibilityGraph:
        """Build the graph of one frame.

        Parameters
        ----------
        nodes : iterable of object ids in program order (objects drawn in the frame).
        pairs : (K, 2) ``(occluder, occluded)`` object-id pairs in the order the early-depth
            test produced them.  Pairs naming an object not in ``nodes`` add that node at the end.
        """
        g = cls()
        for n in nodes:
            g.add_node(int(n))
        p = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        for a, b in p.tolist():
            g.add_edge(a, b)
        return g

    def add_node(self, n: int) -> None:
        if n not in self.children:
            self.children[n] = []
            self.in_degree[n] = 0
            self.nodes.append(n)

    def add_edge(self, occluder: int, occluded: int) -> bool:
        """Insert ``occluder -> occluded``; return whether the graph changed."""
        a, b = int(occluder), int(occluded)
        if a == b:
            self.self_edges_ignored += 1
            return False
        if (a, b) in self._pairs:
            self.duplicate_edges_ignored += 1
            return False
        if (b, a) in self._pairs:
            self.reverse_edges_ignored += 1
            return False
        self.add_node(a)
        self.add_node(b)
        self._pairs.add((a, b))
        self.children[a].append(b)
        self.in_degree[b] += 1
        return True

    @property
    def n_nodes(self) -> int:
        return len(self.nodes)

    @property
    def n_edges(self) -> int:
        return len(self._pairs)

    def max_out_degree(self) -> int:
        return max((len(c) for c in self.children.values()), default=0)


@dataclass
class SortResult:
    order: list[int]          #: object ids, front to back
    heuristic_firings: int    #: times the root queue ran dry with nodes left (a cycle broken)
    selections: int           #: nodes placed in total (== len(order))

    @property
    def heuristic_share(self) -> float:
        """Fraction of node selections made by the cycle heuristic (paper: about 13%)."""
        return self.heuristic_firings / self.selections if self.selections else 0.0


def kahn_sort(graph: VisibilityGraph) -> SortResult:
    """Kahn's topological sort (paper 000 Algorithm 1) with the cycle heuristic of sec. 3.2.

    Roots start in program order.  When the root queue is empty and nodes remain, the remaining
    node with the minimum in-degree that comes first in program order is taken: its incoming
    edges are dropped (it is invalidated, so later parents do not decrement it) and it goes to
    the tail of the queue.  Linear in nodes + edges plus O(nodes) per heuristic firing.
    """
    indeg = dict(graph.in_degree)
    done: set[int] = set()
    queue = [n for n in graph.nodes if indeg[n] == 0]
    head = 0
    order: list[int] = []
    firings = 0
    scan = 0  # nodes before `scan` in program order are all placed
    while len(order) < len(graph.nodes):
        if head == len(queue):
            # Cycle: every remaining node has incoming edges.
            while graph.nodes[scan] in done:
                scan += 1
            best, best_deg = None, None
            for n in graph.nodes[scan:]:
                if n in done:
                    continue
                d = indeg[n]
                if best is None or d < best_deg:
                    best, best_deg = n, d
                    if d == 1:
                        break  # cannot do better than one edge (0 would be a root)
            firings += 1
            indeg[best] = 0
            queue.append(best)
        n = queue[head]
        head += 1
        if n in done:
            continue
        done.add(n)
        order.append(n)
        for m in graph.children[n]:
            if m in done:
                continue
            indeg[m] -= 1
            if indeg[m] == 0:
                queue.append(m)
    return SortResult(order=order, heuristic_firings=firings, selections=len(order))


# ------------------------------------------------------------------- per-tile draw order
def free_draws(frame) -> np.ndarray:
    """Draws VRO may move: opaque, depth-tested, depth-writing (bool per draw)."""
    return np.asarray(frame.depth_test & frame.depth_write & ~frame.blend, dtype=np.bool_)


def object_ranks(frame, sorted_objects) -> np.ndarray:
    """Rank per draw for the next frame (sec. 3.4).

    Objects of the sorted list get their list position; objects absent from it (new in this
    frame) come after all sorted ones, in program order.  Objects of the list that are not in the
    frame simply do not occur.
    """
    rank_of = {int(o): i for i, o in enumerate(sorted_objects)}
    base = len(rank_of)
    ranks = np.empty(frame.n_draws, np.int64)
    new_rank: dict[int, int] = {}
    for d, o in enumerate(frame.object_id.tolist()):
        r = rank_of.get(o)
        if r is None:
            r = new_rank.setdefault(o, base + len(new_rank))
        ranks[d] = r
    return ranks


@nb.njit(cache=True)
def _tile_order(offsets, tri, draw, rank, free):
    out = np.empty_like(tri)
    n_tiles = offsets.shape[0] - 1
    for t in range(n_tiles):
        a, b = offsets[t], offsets[t + 1]
        i = a
        while i < b:
            if not free[draw[tri[i]]]:
                out[i] = tri[i]
                i += 1
                continue
            j = i
            while j < b and free[draw[tri[j]]]:
                j += 1
            # Segment [i, j) of free triangles: stable sort by object rank.
            n = j - i
            keys = np.empty(n, np.int64)
            for k in range(n):
                keys[k] = rank[draw[tri[i + k]]] * (1 << 32) + k
            perm = np.argsort(keys)
            for k in range(n):
                out[i + k] = tri[i + perm[k]]
            i = j
    return out


def tile_order(offsets, tri, draw, rank, free) -> np.ndarray:
    """Per-tile triangle order (same CSR offsets as ``tri``) for the VRO rank.

    Free triangles between two barriers (order-dependent triangles) are stably sorted by the
    rank of their draw; barriers stay where they are.
    """
    return _tile_order(np.asarray(offsets, np.int64), np.asarray(tri),
                       np.asarray(draw, np.int32), np.asarray(rank, np.int64),
                       np.asarray(free, np.bool_))


def objects_in_program_order(frame) -> list[int]:
    """Distinct object ids of the frame in order of first draw."""
    seen: dict[int, None] = {}
    for o in frame.object_id.tolist():
        seen.setdefault(o, None)
    return list(seen)


# -------------------------------------------------------------------------- technique


class VRO(Technique):
    """VRO as a pipeline technique; ``re=True`` adds Rendering Elimination (``vro+re``).

    Frame N+1 is drawn in the order sorted from frame N's graph.  With RE, skipped tiles make no
    early-depth comparisons, so the graph of a frame holds the edges of its rendered tiles only.
    """

    aggregate = {"vro_nodes": "mean", "vro_edges": "mean"}

    def __init__(self, re: bool = False):
        self.use_re = bool(re)
        self.name = "vro+re" if re else "vro"
        self.reset()

    def reset(self) -> None:
        self.graph: VisibilityGraph | None = None
        self.sort: SortResult | None = None
        self.re = _re.RE() if self.use_re else None
        self.totals = {"frames": 0, "nodes": 0, "edges": 0, "heuristic_firings": 0,
                       "selections": 0, "reverse_edges_ignored": 0, "self_edges_ignored": 0}

    def begin_frame(self, ctx) -> RenderRequest:
        frame, tiles = ctx.frame, ctx.tiles
        req = self.re.begin_frame(ctx) if self.re else RenderRequest()
        self.sort = None
        if self.graph is not None and self.graph.n_nodes:
            self.sort = kahn_sort(self.graph)
            rank = object_ranks(frame, self.sort.order)
            # VRO and VRO+RE mostly sort a frame by the same ranks: one order per frame and ranks
            tri = frame_cache(frame, ("vro_order", tiles.tile, rank.tobytes()),
                              lambda: tile_order(tiles.offsets, tiles.tri, frame.draw, rank, free_draws(frame)))
            req.order = (tiles.offsets, tri)
            req.extra = {**(req.extra or {}), **reorder_extra()}
        req.record_occlusion = True
        return req

    def end_frame(self, ctx, result) -> dict:
        if self.re:
            self.re.end_frame(ctx, result)
        self.graph = VisibilityGraph.from_pairs(objects_in_program_order(ctx.frame),
                                                result.occlusion_pairs)
        g, s = self.graph, self.sort
        out = {"vro_nodes": g.n_nodes, "vro_edges": g.n_edges,
               "vro_reverse_edges_ignored": g.reverse_edges_ignored,
               "vro_heuristic_firings": s.heuristic_firings if s else 0,
               "vro_sorted": int(s is not None)}
        t = self.totals
        t["frames"] += 1
        t["nodes"] += g.n_nodes
        t["edges"] += g.n_edges
        t["reverse_edges_ignored"] += g.reverse_edges_ignored
        t["self_edges_ignored"] += g.self_edges_ignored
        if s:
            t["heuristic_firings"] += s.heuristic_firings
            t["selections"] += s.selections
        return out

    def summary(self) -> dict:
        t = self.totals
        f = max(t["frames"], 1)
        return {"vro_nodes_per_frame": t["nodes"] / f, "vro_edges_per_frame": t["edges"] / f,
                "vro_cycles_broken": t["heuristic_firings"],
                "vro_heuristic_share": t["heuristic_firings"] / t["selections"]
                if t["selections"] else 0.0,
                "vro_reverse_edges_ignored": t["reverse_edges_ignored"]}
