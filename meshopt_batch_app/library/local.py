"""The local backend: a pool of worker processes on this machine (the default).

Workers are started with the ``spawn`` method, not ``fork``: the pipeline model's raster
uses OpenMP threads, and a forked child of a process whose OpenMP runtime has started can
deadlock.  Each worker asks the kernel to kill it when the coordinator dies
(:func:`.worker.die_with_parent`), so a ``kill -9`` of the command leaves no process
writing into OUTDIR.  The pool is :class:`concurrent.futures.ProcessPoolExecutor`; a worker
that dies breaks it, and :meth:`LocalBackend.restart` starts a fresh one.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool

from .dispatch import Job, WorkerLost
from .worker import die_with_parent, optimize_one

__all__ = ["LocalBackend", "default_workers"]


def default_workers() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


class LocalBackend:
    """Jobs on ``workers`` processes of this machine."""

    def __init__(self, workers: int):
        self.slots = workers
        self._pool = self._new_pool()

    def _new_pool(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(self.slots, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=die_with_parent)

    def submit(self, job: Job):
        return self._pool.submit(optimize_one, job.payload)

    def wait(self, futures: list) -> list:
        return list(wait(futures, return_when=FIRST_COMPLETED).done)

    def result(self, future) -> dict:
        try:
            return future.result()
        except BrokenProcessPool:
            raise WorkerLost("worker process died (killed, out of memory, or crashed)") from None

    def restart(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._pool = self._new_pool()

    def close(self, cancel: bool = False) -> None:
        self._pool.shutdown(wait=not cancel, cancel_futures=cancel)
