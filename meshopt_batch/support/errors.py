"""Errors the command line turns into a one-line message and exit code 2."""


class MeshoptBatchError(Exception):
    """A user-facing error: bad input, a missing dependency, an impossible request.

    The CLI prints ``meshopt-batch: error: <message>`` on stderr and exits with 2.
    """


class MeshError(MeshoptBatchError, ValueError):
    """A mesh file or array that cannot be used (names the file and the problem)."""
