"""Judging assets without writing them: ``meshopt-batch check PATH...``.

=================  ===============================================================
module             topic
=================  ===============================================================
``figures``        a file's and each primitive's figures, from a manifest-style record
``judge``          the order rules: unoptimized, regression against a baseline
``budget``         the TOML budget file: rules by glob, validated; their verdicts
``baseline``       reading a manifest as a baseline, ``--write-baseline``
``cache``          the per-user content cache of what ``optimize`` reaches on a file
``provenance``     files known as ``optimize``'s own output (cache, baseline manifest)
``collect``        the files of PATH..., their keys, the cache, and the files computed
``output``         the terminal table, ``--json`` and ``--junit``
=================  ===============================================================

The command itself is :mod:`meshopt_batch_app.commands.check`.
"""
