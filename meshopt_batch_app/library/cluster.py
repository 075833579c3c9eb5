"""The Dask backend: the same jobs on an existing ``dask.distributed`` cluster.

``--scheduler tcp://HOST:PORT`` connects a :class:`distributed.Client` to a running
scheduler.  Workers run :func:`.worker.optimize_one` on the task's absolute paths, so every
worker must see DIR and OUTDIR at the same paths as the coordinator (shared storage) and
have this package installed; nothing else travels.  The coordinator keeps the schedule
(:mod:`.dispatch`: largest first, the memory budget, the locks) and writes the manifest;
the slots are the cluster's worker threads at connection time (``--workers`` caps them).
Dask retries a task whose worker died on another worker; when it gives up
(``KilledWorker``) the file is retried once more alone, then fails.

``dask.distributed`` is imported only here, when a scheduler is named.
"""

from __future__ import annotations

import re

from meshopt_batch.support.errors import MeshoptBatchError

from .dispatch import Job, WorkerLost
from .worker import optimize_one

__all__ = ["DaskBackend", "check_address"]

_ADDRESS = re.compile(r"^(tcp|tls|inproc|ucx)://[^\s/]+$")
CONNECT_TIMEOUT_S = 20


def check_address(address: str) -> str:
    """``address`` when it reads as a scheduler address (``tcp://HOST:PORT``)."""
    if not _ADDRESS.match(address):
        raise MeshoptBatchError(f"--scheduler {address!r}: expected a Dask scheduler address such as "
                                "tcp://HOST:8786")
    return address


class DaskBackend:
    """Jobs on the workers of the Dask scheduler at ``address``."""

    def __init__(self, address: str, workers: int | None = None):
        try:
            import distributed  # lazy: optional at run time, loaded only for --scheduler
        except ImportError:
            raise MeshoptBatchError("--scheduler needs the dask.distributed package "
                                    "(pip install 'dask[distributed]')") from None
        self._distributed = distributed
        try:
            self.client = distributed.Client(check_address(address), timeout=CONNECT_TIMEOUT_S,
                                             set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise MeshoptBatchError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
        threads = sum(self.client.nthreads().values())
        self.slots = max(1, min(threads, workers) if workers else threads)

    def submit(self, job: Job):
        return self.client.submit(optimize_one, job.payload, pure=False, priority=job.memory)

    def wait(self, futures: list) -> list:
        with self.client.as_current():
            return list(self._distributed.wait(futures, return_when="FIRST_COMPLETED").done)

    def result(self, future) -> dict:
        try:
            return future.result()
        except self._distributed.KilledWorker as exc:
            raise WorkerLost(f"worker process died (Dask gave up: {exc})") from None
        # a lost connection or a task Dask could not run: this file fails, the run goes on
        except Exception as exc:  # noqa: BLE001
            raise WorkerLost(f"Dask could not run it: {type(exc).__name__}: {exc}") from None

    def restart(self) -> None:
        """Nothing to restart: Dask replaces lost workers itself."""

    def close(self, cancel: bool = False) -> None:
        self.client.close()
