"""A plain, obviously-correct transcription of paper 001's Algorithm 1 for the tests.

Memory modules keep explicit Python lists and are copied per triangle (``Available'``), exactly
as the pseudo-code does; no stamps, no tricks.  Slow, so only for small index buffers.
"""

import copy
from collections import deque


class Lookback:
    """Every index is pushed; reuse iff the same vertex was pushed <= size positions ago."""

    def __init__(self, size):
        self.size, self.pushed = size, []

    def has(self, v, p):
        return any(u == v and p - q <= self.size for u, q in self.pushed)

    def store(self, v, p):
        self.pushed.append((v, p))

    notify = store


class LookbackDX(Lookback):
    """Paper 001 sec. 3.3: the distance rule depends on the earlier position modulo 3."""

    @staticmethod
    def rule(d, residue):
        return {0: d <= 44, 1: d <= 40 or d == 42, 2: d <= 42 and d != 40}[residue]

    def has(self, v, p):
        return any(u == v and self.rule(p - q, q % 3) for u, q in self.pushed)


class Fifo:
    def __init__(self, size):
        self.entries = deque(maxlen=size)

    def has(self, v, p):
        return v in self.entries

    def store(self, v, p):
        self.entries.append(v)

    def notify(self, v, p):
        pass


class Lru:
    def __init__(self, size):
        self.size, self.entries = size, []

    def has(self, v, p):
        return v in self.entries

    def store(self, v, p):
        self.entries.insert(0, v)
        del self.entries[self.size:]

    def notify(self, v, p):
        self.entries.remove(v)
        self.entries.insert(0, v)


class Direct:
    def __init__(self, size):
        self.size, self.slots = size, {}

    def has(self, v, p):
        return self.slots.get(v % self.size) == v

    def store(self, v, p):
        self.slots[v % self.size] = v

    def notify(self, v, p):
        pass


class Sixteen:
    """Wraps a memory: an index in another 2^16 block than the index before it empties the
    memory (measured on an NVIDIA H100, ``results/nvidia_*_2026-11-25``)."""

    def __init__(self, make):
        self.make, self.inner, self.block = make, make(), None

    def has(self, v, p):
        if self.block is not None and v >> 16 != self.block:
            self.inner = self.make()
        self.block = v >> 16
        return self.inner.has(v, p)

    def store(self, v, p):
        self.inner.store(v, p)

    def notify(self, v, p):
        self.inner.notify(v, p)


MEMORIES = {"lookback": Lookback, "lookback_dx": LookbackDX, "fifo": Fifo, "lru": Lru, "direct": Direct}


def reference_predict(indices, profile):
    """Return (invocations, batch start triangles) by Algorithm 1 of paper 001."""

    def fresh():
        def make():
            return MEMORIES[profile.memory](profile.memory_size)
        return Sixteen(make) if profile.boundary_16bit else make()

    max_size = profile.max_size or float("inf")
    max_uniques = profile.max_uniques or float("inf")
    invocations, pos, size, uniques = 0, 0, 0, 0
    available = fresh()
    starts = [0] if len(indices) else []
    for t in range(len(indices) // 3):
        tri = indices[3 * t: 3 * t + 3]
        added = 0
        avail = copy.deepcopy(available)
        for i in range(3):
            vid = tri[i]
            hit = avail.has(vid, pos + i)
            if not hit:
                added += 1
            else:
                avail.notify(vid, pos + i)
            if uniques + added > max_uniques or size + i > max_size:
                starts.append(t)
                available = fresh()
                avail = available
                size = uniques = added = 0
                for j in range(i + 1):
                    if not avail.has(tri[j], pos + j):
                        avail.store(tri[j], pos + j)
                        added += 1
                    else:
                        avail.notify(tri[j], pos + j)
            elif not hit:
                avail.store(vid, pos + i)
        available = avail
        pos += 3
        size += 3
        uniques += added
        invocations += added
    return invocations, starts
