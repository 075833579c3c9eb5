"""Which file starts next: largest first, within the slots, the memory budget and the locks.

One loop for every backend (:mod:`.local`, :mod:`.cluster`).  A *job* is one file's step
with its memory estimate and an optional lock.  The waiting jobs are ordered by estimate,
largest first (long files start early, so the run does not end on one straggler); a job
starts while a slot is free and the estimates in flight plus its own fit the budget.  When
the largest waiting job does not fit, nothing smaller overtakes it (it cannot starve); when
nothing is in flight it starts even over the budget (alone).  Jobs holding the same lock
never run together: two ``.gltf`` outputs in one folder may write the same external file.

A worker process that dies (killed for memory, a crash in native code) takes the jobs then
in flight with it.  Each of them is retried once, alone; a job that kills its worker while
alone fails with a one-line error.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["Backend", "Job", "WorkerLost", "run_jobs"]


class WorkerLost(Exception):
    """The process running a job died before returning (the job's own fault or another's)."""


@dataclass
class Job:
    """One file's step as the loop schedules it."""

    index: int
    payload: Any
    memory: int
    lock: str | None = None
    alone: bool = False


class Backend(Protocol):
    """Where jobs run: a process pool on this machine, or a Dask cluster."""

    slots: int

    def submit(self, job: Job) -> Any: ...

    def wait(self, futures: list) -> list: ...

    def result(self, future) -> dict: ...

    def restart(self) -> None: ...


def _fits(job: Job, running: list[Job], budget: int) -> bool:
    if any(r.alone for r in running) or (job.alone and running):
        return False
    if job.lock is not None and any(r.lock == job.lock for r in running):
        return False
    return not running or sum(r.memory for r in running) + job.memory <= budget


def _order(job: Job) -> tuple:
    return (not job.alone, -job.memory, job.index)


def run_jobs(jobs: list[Job], backend: Backend, budget: int,
             on_result: Callable[[Job, dict], list[Job] | None], on_lost: Callable[[Job, str], None]) -> None:
    """Run every job on ``backend``; ``on_result(job, fields)`` as each returns.

    ``on_result`` may return new jobs, which join the queue.  ``on_lost(job, message)`` is
    called for a job whose worker died while it ran alone.
    """
    waiting = sorted(jobs, key=_order)
    flight: dict[Any, Job] = {}
    broken = False
    while waiting or flight:
        if broken and not flight:
            backend.restart()
            broken = False
        if not broken:
            _start(waiting, flight, backend, budget)
        for future in backend.wait(list(flight)):
            job = flight.pop(future)
            try:
                fields = backend.result(future)
            except WorkerLost as exc:
                broken = True
                if job.alone:
                    on_lost(job, str(exc))
                else:
                    job.alone = True
                    bisect.insort(waiting, job, key=_order)
                continue
            for new in on_result(job, fields) or ():
                bisect.insort(waiting, new, key=_order)


def _start(waiting: list[Job], flight: dict, backend: Backend, budget: int) -> None:
    i = 0
    while i < len(waiting) and len(flight) < backend.slots:
        job = waiting[i]
        running = list(flight.values())
        if _fits(job, running, budget):
            flight[backend.submit(waiting.pop(i))] = job
            continue
        blocked_by_memory = job.lock is None or all(r.lock != job.lock for r in running)
        if blocked_by_memory:
            return
        i += 1
