"""Report stages run in a second process while this one runs the single-core stages.

The comparison, the meshlets and the probe use one core; the shipped-order table, the real
assets and the real-GPU files do not depend on them, so on a machine with a second core they
run there meanwhile (one spawned worker, in submission order).  With one core, or when turned
off, each runs in this process when its result is asked for.  A stage's figures do not depend
on where it ran.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import Future, ProcessPoolExecutor

from ..library.local import default_workers
from ..library.worker import die_with_parent

__all__ = ["Background"]


class Background:
    """A second process for report stages (see the module docstring).

    Parameters
    ----------
    enabled : bool
        Use a second process (only where this process may run on more than one core).
    """

    def __init__(self, enabled: bool = True):
        self.pool = None
        if enabled and default_workers() > 1:
            self.pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"),
                                            initializer=die_with_parent)

    @property
    def active(self) -> bool:
        return self.pool is not None

    def submit(self, fn, *args, progress=None):
        """Start ``fn(*args)`` in the second process, or keep it for :meth:`result` (then with
        ``progress``, which does not cross processes)."""
        if self.pool is not None:
            return self.pool.submit(fn, *args)
        return fn, args, progress

    def result(self, handle):
        """The stage's answer (its exception, re-raised here, when it failed)."""
        if isinstance(handle, Future):
            return handle.result()
        fn, args, progress = handle
        return fn(*args) if progress is None else fn(*args, progress=progress)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)
            self.pool = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
