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

from .runner import LibraryResult, LibrarySettings, optimize_library

__all__ = ["LibraryResult", "LibrarySettings", "optimize_library"]
