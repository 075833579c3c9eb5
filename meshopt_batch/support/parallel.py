"""Independent pieces of one file's work on the machine's cores, with the same results on any
number of them.

One file's index buffers (a glTF's vertex sets, the window searches from several starts) are
optimized independently of each other; their compiled loops release Python's lock, so threads
run them at once.  :func:`in_parallel` maps a function over such pieces in a pool of threads
(one per core, at most one per piece) and returns the results in the pieces' order; inside a
piece it runs serially, so pools never nest.  The result never depends on how many cores there
are: every piece is computed the same way, only when is different.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

__all__ = ["cores", "in_parallel"]

_LOCAL = threading.local()


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def in_parallel(function: Callable, items: Sequence) -> list:
    """``[function(item) for item in items]``, in a pool of threads where there are several
    items and cores and this thread is not a worker of such a pool already.

    Parameters
    ----------
    function : callable
        Called once per item; it should spend its time in code that releases Python's lock
        (compiled loops), or the pool gains nothing.
    items : sequence

    Returns
    -------
    list
        The results, in the items' order.  The first exception raised by a call is raised
        here, after the pool has finished.
    """
    items = list(items)
    workers = min(len(items), cores())
    if workers < 2 or getattr(_LOCAL, "worker", False):
        return [function(item) for item in items]

    def work(item):
        _LOCAL.worker = True
        try:
            return function(item)
        finally:
            _LOCAL.worker = False

    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(work, items))
