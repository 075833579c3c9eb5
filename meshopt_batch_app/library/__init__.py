"""Whole asset libraries: ``meshopt-batch optimize DIR -o OUTDIR``.

=================  ===============================================================
module             topic
=================  ===============================================================
``discovery``      the mesh files of DIR and their output names under OUTDIR
``fingerprint``    content hashes and the cache key of a file
``memory``         per-file memory estimate, ``--max-memory``
``manifest``       ``OUTDIR/manifest.jsonl``: append, read, compact rewrite
``worker``         one file's step (what a worker process runs)
``dispatch``       largest first within slots, memory and locks; dead workers
``local``          the process pool of this machine (default)
``cluster``        a Dask distributed cluster (``--scheduler``)
``runner``         a whole run: reuse, share, run, manifest
``command``        the command-line options and output
``summary``        tables and a figure from a manifest (``report --library``)
=================  ===============================================================
"""

__all__ = ["LibraryResult", "LibrarySettings", "optimize_library"]


def __getattr__(name: str):
    """The runner's names, imported on first use: ``optimize FILE`` loads this package for its
    options only and starts faster without the runner (tqdm, the pools)."""
    if name in __all__:
        from . import runner  # lazy: a single-file command never needs the runner
        return getattr(runner, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
