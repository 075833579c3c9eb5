"""Reference queue for the batch optimizer: the ``fibheap`` package's Fibonacci heap.

Paper 001 (sec. 4) keeps the triangles in a Fibonacci heap with increase- and decrease-key.
This driver runs Algorithm 2's loop in plain Python on ``fibheap.Fheap`` (a min-heap, Cormen
et al.'s structure) and calls the same compiled step functions as the fast path, so the only
difference between ``queue="fibheap"`` and ``queue="fast"`` is the priority queue.

Keys are ``(-p, -stamp, face)``: highest priority first and, among equal priorities, the most
recently inserted or changed face first (see :mod:`.batch_optimizer`).  ``fibheap`` offers
``decrease_key`` only; a priority *increase* of a face lowers its key (``decrease_key``), a
priority *decrease* raises it, which is done as ``delete`` + re-insert of a fresh node.
Both operations give the face a new stamp, exactly like the bucket queue of the fast path.

This is slow (a Python object per triangle); it is meant for test meshes of a few thousand
triangles.  The CLI offers it as ``meshopt-batch optimize --queue fibheap``.

References
----------
Kerbl et al., Revisiting the Vertex Cache (paper 001), sec. 4 (Algorithm 2 on a Fibonacci heap).
Fredman, M. L., Tarjan, R. E. (1987).  Fibonacci heaps and their uses in improved network
optimization algorithms.  J. ACM 34(3), 596-615.
"""

from __future__ import annotations

import fibheap

__all__ = ["FibQueue", "run_reference"]


class FibQueue:
    """Max-priority queue over face ids with unique ``(priority, stamp)`` keys."""

    def __init__(self, prio):
        self.heap = fibheap.makefheap()
        self.nodes = {}
        self.prio = prio  # the optimizer's priority array, kept current
        self.stamp = 0

    def __len__(self):
        return len(self.nodes)

    def insert(self, face: int, priority: int) -> None:
        self.stamp += 1
        node = fibheap.Node((-priority, -self.stamp, face))
        self.heap.insert(node)
        self.nodes[face] = node
        self.prio[face] = priority

    def top(self) -> int:
        return self.heap.min.key[2]

    def delete(self, face: int) -> None:
        node = self.nodes.pop(face)
        if self.heap.min is node:
            self.heap.extract_min()
        else:
            self.heap.delete(node)

    def adjust(self, face: int, delta: int) -> None:
        """Change a face's priority by ``delta`` (non-zero) and give it a new stamp."""
        priority = int(self.prio[face]) + delta
        if delta > 0:
            self.stamp += 1
            self.heap.decrease_key(self.nodes[face], (-priority, -self.stamp, face))
            self.prio[face] = priority
        else:
            self.delete(face)
            self.insert(face, priority)


def run_reference(state) -> None:
    """Algorithm 2's driver loop on a Fibonacci heap, one step at a time on ``state`` (a
    :class:`~.state.BatchState`; see :func:`.batch_optimizer.optimize_batch`)."""
    prio = state.prio
    queue = FibQueue(prio)
    for t in range(len(prio) - 1, -1, -1):
        queue.insert(t, int(prio[t]))
    while len(queue):
        t, rot = state.select(queue.top())
        if t >= 0:
            queue.delete(t)
            faces, deltas = state.emit(t, rot)
        else:
            faces, deltas = state.close_batch()
        for f, d in zip(faces.tolist(), deltas.tolist(), strict=True):
            queue.adjust(f, d)
