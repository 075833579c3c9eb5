"""The report's jobs on every core while this process runs its own stages.

The comparison, the meshlets and the probe run in this process, one core; the shipped-order
table, the real assets, the real-GPU files and every cell of the simulate matrix (a scene in
one triangle order) do not depend on them, so they are jobs for one spawned worker per core,
started at once and taken in the order given (the longest first, so that the last ones to
finish are short).  No core waits for another's stage: a worker that ends one job takes the
next, whichever stage it belongs to.  Each worker runs the raster on its share of the cores.
With one core, or when turned off, each job runs in this process when its result is asked for.
A job's figures do not depend on where it ran.

A worker says when it starts a job (a queue read by a thread of this process), so that a
terminal shows each stage as it starts (:mod:`~meshopt_batch_app.report.progress`).
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor

import numba

from ..library.local import default_workers
from ..library.worker import die_with_parent

__all__ = ["Workers"]

#: The queue a worker announces its jobs on (set by the initializer, in the worker).
_NOTICES = None


def _start_worker(threads: int, notices) -> None:
    global _NOTICES
    die_with_parent()
    numba.set_num_threads(max(1, min(threads, numba.config.NUMBA_NUM_THREADS)))
    if threads == 1:
        # a worker with one core: llvmpipe (the simulate cells' OpenGL check) rasterizes in the
        # drawing thread, as its rasterizer threads would only hand tiles over on a busy core;
        # the counts and depths it returns are the same on any number of threads
        os.environ.setdefault("LP_NUM_THREADS", "0")
    _NOTICES = notices


def _run(label: str, fn, args: tuple):
    """A job in a worker: announce it, run it; its answer, the CPU time it took and when it
    ended."""
    if _NOTICES is not None:
        _NOTICES.put((label, time.monotonic()))
    cpu = time.process_time()
    answer = fn(*args)
    return answer, time.process_time() - cpu, time.monotonic()


class _Deferred:
    """A job kept for :meth:`Workers.result` (no worker processes)."""

    def __init__(self, label, fn, args, progress):
        self.label, self.fn, self.args, self.progress = label, fn, args, progress
        self.callbacks = []


class Workers:
    """Report jobs on worker processes (see the module docstring).

    Parameters
    ----------
    enabled : bool
        Use worker processes.
    workers : int or None
        How many (default: one per core this process may run on; one: none, the jobs run
        here).
    on_start : callable or None
        ``on_start(label)``, called in this process as each job starts (from a helper
        thread when the job runs in a worker).
    """

    def __init__(self, enabled: bool = True, workers: int | None = None, on_start=None):
        self.pool = None
        self.on_start = on_start
        #: when each job started and ended (``time.monotonic``, the same clock in every process
        #: of the machine) and the CPU seconds it took (its process's threads included): the
        #: jobs whose results were asked for; ``started`` is complete once the pool is closed
        self.started: dict[str, float] = {}
        self.ended: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self._listener = None
        cores = default_workers()
        n = cores if workers is None else max(1, int(workers))
        if enabled and n > 1:
            context = multiprocessing.get_context("spawn")
            self._notices = context.SimpleQueue()
            self.pool = ProcessPoolExecutor(n, mp_context=context, initializer=_start_worker,
                                            initargs=(max(1, cores // n), self._notices))
            self._listener = threading.Thread(target=self._listen, name="report-workers", daemon=True)
            self._listener.start()
        self.workers = n if self.pool is not None else 1

    @property
    def active(self) -> bool:
        return self.pool is not None

    def submit(self, label: str, fn, *args, progress=None):
        """Start ``fn(*args)`` on a worker, or keep it for :meth:`result` (then with
        ``progress``, which does not cross processes).  ``label`` names the job to
        ``on_start`` (the part before the first ``/`` names its stage)."""
        if self.pool is not None:
            future = self.pool.submit(_run, label, fn, args)
            future.label = label
            return future
        return _Deferred(label, fn, args, progress)

    def result(self, handle):
        """The job's answer (its exception, re-raised here, when it failed)."""
        if isinstance(handle, Future):
            answer, self.cpu[handle.label], self.ended[handle.label] = handle.result()
            return answer
        self._started(handle.label, time.monotonic())
        cpu = time.process_time()
        try:
            if handle.progress is None:
                return handle.fn(*handle.args)
            return handle.fn(*handle.args, progress=handle.progress)
        finally:
            self.cpu[handle.label] = time.process_time() - cpu
            self.ended[handle.label] = time.monotonic()
            for callback in handle.callbacks:
                callback()

    def when_done(self, handle, callback) -> None:
        """``callback()`` once the job of ``handle`` has ended (in a helper thread for a job on
        a worker; for a job kept for :meth:`result`, when that has run it)."""
        if isinstance(handle, Future):
            handle.add_done_callback(lambda _: callback())
        else:
            handle.callbacks.append(callback)

    def _started(self, label: str, at: float) -> None:
        self.started.setdefault(label, at)
        if self.on_start is not None:
            self.on_start(label)

    def _listen(self) -> None:
        while True:
            notice = self._notices.get()
            if notice is None:
                return
            self._started(*notice)

    def close(self) -> None:
        """Stop the workers (without waiting for them to exit) once their notices are read:
        a job's notice is sent before its answer, so every job whose answer came is in
        :attr:`started` after this."""
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.pool = None
            self._notices.put(None)
            self._listener.join()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
