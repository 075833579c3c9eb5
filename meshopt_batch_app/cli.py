"""The ``meshopt-batch`` command line.

Every subcommand lives in its own module under :mod:`meshopt_batch_app.commands` and exposes
``add_parser(subparsers)`` and ``run(args) -> int``.  Errors derived from
:class:`~meshopt_batch.errors.MeshoptBatchError` (and I/O errors) become one line on stderr
and exit code 2; no traceback reaches the user.

Start-up: a command line that names its subcommand imports that subcommand's module only
(``analyze`` never loads the plotting, probing, simulation or comparison stacks); the
top-level help, or a line without a known subcommand, imports them all to list them.

Exit: run as the program (``main()`` without ``argv``: the console script, ``python -m``),
the process ends with :func:`os._exit` once the output is flushed and the ``atexit``
handlers have run, when no other thread is alive.  Interpreter teardown after numba has
compiled or loaded a kernel costs about 0.3 s of CPU (LLVM's JIT being torn down), which
is half of a small file's whole run; nothing the program wrote is left behind by skipping
it.  Called with ``argv`` (tests, other Python code), :func:`main` returns.
"""

from __future__ import annotations

import argparse
import atexit
import importlib
import os
import sys
import threading

from meshopt_batch.errors import MeshoptBatchError

SUBCOMMANDS = ("analyze", "compare", "optimize", "meshlets", "probe", "simulate", "report")


def requested(argv: list[str] | None) -> tuple[str, ...]:
    """The subcommand modules a command line needs: the one it names, else all of them."""
    args = sys.argv[1:] if argv is None else argv
    first = next((a for a in args if not a.startswith("-")), None)
    if first in SUBCOMMANDS and not any(a in ("-h", "--help") for a in args[: args.index(first)]):
        return (first,)
    return SUBCOMMANDS


def build_parser(names: tuple[str, ...] = SUBCOMMANDS) -> argparse.ArgumentParser:
    """The argument parser with the subcommands ``names`` (default: all)."""
    parser = argparse.ArgumentParser(
        prog="meshopt-batch",
        description="Predict, measure and minimise GPU vertex-shader work for triangle meshes.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in names:
        try:
            module = importlib.import_module(f"meshopt_batch_app.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"meshopt_batch_app.commands.{name}":
                continue
            raise
        module.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command line; ``argv=None`` reads ``sys.argv`` and ends the process (see the
    module docstring)."""
    code = _run(argv)
    if argv is None:
        _end_process(code)
    return code


def _run(argv: list[str] | None) -> int:
    parser = build_parser(requested(argv))
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


def _end_process(code: int) -> None:
    """Flush, run the atexit handlers and leave without interpreter teardown (when no other
    thread is alive; otherwise return and let Python exit as usual)."""
    if threading.active_count() > 1:
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            code = code or 1
    atexit._run_exitfuncs()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
