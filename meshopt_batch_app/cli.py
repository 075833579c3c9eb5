"""The ``meshopt-batch`` command line.

Every subcommand lives in its own module under :mod:`meshopt_batch_app.commands` and exposes
``add_parser(subparsers)`` and ``run(args) -> int``.  Errors derived from
:class:`~meshopt_batch.errors.MeshoptBatchError` (and I/O errors) become one line on stderr
and exit code 2; no traceback reaches the user.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from meshopt_batch.errors import MeshoptBatchError

SUBCOMMANDS = ("analyze", "compare", "optimize", "meshlets", "probe", "simulate", "report")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="meshopt-batch",
        description="Predict, measure and minimise GPU vertex-shader work for triangle meshes.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in SUBCOMMANDS:
        try:
            module = importlib.import_module(f"meshopt_batch_app.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"meshopt_batch_app.commands.{name}":
                continue
            raise
        module.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except MeshoptBatchError as exc:
        print(f"meshopt-batch: error: {exc}", file=sys.stderr)
        return 2
    except (OSError, ValueError) as exc:
        print(f"meshopt-batch: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("meshopt-batch: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
