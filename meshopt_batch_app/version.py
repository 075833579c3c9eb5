"""What ``meshopt-batch --version`` prints: every line of it is built here, in :func:`version_text`.

The first line is the package's version.  More lines (the state of the compiled kernels, where
their cache lives) belong in :func:`version_text` too; whatever such a line needs is imported
inside it, so that ``--version`` costs only what it reports.
"""

from __future__ import annotations

from meshopt_batch import __version__
from meshopt_batch.support.kernel_cache import kernel_status

__all__ = ["version_text"]


def version_text() -> str:
    """The text ``meshopt-batch --version`` prints (no final line end): the version, then whether
    the compiled kernels are ready and where their cache lives
    (:func:`~meshopt_batch.support.kernel_cache.kernel_status`)."""
    return "\n".join([f"meshopt-batch {__version__}", *kernel_status()])
