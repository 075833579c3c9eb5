"""The ``meshopt-batch`` command line.

Every subcommand lives in its own module under :mod:`meshopt_batch_app.commands` and exposes
``add_parser(subparsers)`` and ``run(args) -> int``.  Errors derived from
:class:`~meshopt_batch.support.errors.MeshoptBatchError` (and I/O errors, running out of memory)
become one line on stderr and exit code 2; no traceback reaches the user.  Every message is
one line: a bad option is one line (not argparse's usage block), and Python warnings are
collected while the command runs and printed after it as ``meshopt-batch: warning: ...``,
one line each (a run that fails prints its error line only).  When the reader of stdout goes
away (``meshopt-batch ... | head``) the run stops quietly with status 141, as other tools do.

Start-up: a command line that names its subcommand imports that subcommand's module only
(``analyze`` never loads the plotting, probing, simulation or comparison stacks); the
top-level help, or a line without a known subcommand, imports them all to list them.  A
subcommand's module builds its parser without the core modules (numba, pandas, the glTF
codecs are imported when the command runs), so ``--help`` of any of them is quick, and
``--version`` imports no subcommand at all (its text: :mod:`meshopt_batch_app.version`).

Exit: run as the program (``main()`` without ``argv``: the console script, ``python -m``),
the process ends with :func:`os._exit` once the output is flushed and the ``atexit``
handlers have run, when no other thread is alive.  Interpreter teardown after numba has
compiled or loaded a kernel costs about 0.3 s of CPU (LLVM's JIT being torn down), which
is half of a small file's whole run; nothing the program wrote is left behind by skipping
it.  Called with ``argv`` (tests, other Python code), :func:`main` returns.

Run as the program, numpy's BLAS gets one thread (:func:`one_blas_thread`) and numba's probe
for a BLAS is skipped (:func:`_skip_numba_blas_probe`).
"""

from __future__ import annotations

import argparse
import atexit
import importlib
import os
import sys
import threading
import warnings

from meshopt_batch.support.errors import MeshoptBatchError

SUBCOMMANDS = ("analyze", "compare", "optimize", "meshlets", "probe", "simulate", "report", "check")
#: Exit status when the reader of stdout went away: 128 + SIGPIPE, what a shell reports for a
#: process that signal ended.
BROKEN_PIPE = 141


def requested(argv: list[str] | None) -> tuple[str, ...]:
    """The subcommand modules a command line needs: the one it names, none for ``--version``
    before any, else all of them."""
    args = sys.argv[1:] if argv is None else argv
    first = next((a for a in args if not a.startswith("-")), None)
    before = args[: args.index(first)] if first is not None else args
    if "--version" in before and not any(a in ("-h", "--help") for a in before):
        return ()
    if first in SUBCOMMANDS and not any(a in ("-h", "--help") for a in before):
        return (first,)
    return SUBCOMMANDS


def one_line(text: object) -> str:
    """``text`` with every run of whitespace (newlines included) made one space."""
    return " ".join(str(text).split())


class _Version(argparse.Action):
    """``--version``: print :func:`meshopt_batch_app.version.version_text` and leave (its text
    is built only when asked for)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest, nargs=0, default=default, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        from .version import version_text  # lazy: only --version builds the text

        print(version_text())
        parser.exit(0)


class _Parser(argparse.ArgumentParser):
    """argparse with its errors on one line (the usage is left to ``--help``)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {one_line(message)} (see {self.prog} --help)\n")


def build_parser(names: tuple[str, ...] = SUBCOMMANDS) -> argparse.ArgumentParser:
    """The argument parser with the subcommands ``names`` (default: all)."""
    parser = _Parser(
        prog="meshopt-batch",
        description="Predict, measure and minimise GPU vertex-shader work for triangle meshes.",
    )
    parser.add_argument("--version", action=_Version, help="print the version and exit")
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


def one_blas_thread() -> None:
    """Run as the program, numpy's BLAS (OpenBLAS) gets one thread unless the environment says
    otherwise (``OPENBLAS_NUM_THREADS``, read when numpy loads, which is later).

    The commands' matrix products are small (transforms, normals), while their time goes to
    compiled loops on threads of their own (a file's index buffers, the raster) and to worker
    processes on the other cores.  OpenBLAS's idle threads spin for a while after each product
    and take those cores from them; a second BLAS thread gains these products nothing.  The
    report's and a library run's workers inherit the setting.  Benchmarks that time a command
    in their own process call it first, as the program does.
    """
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def _skip_numba_blas_probe() -> None:
    """Let numba set up its compiler without importing ``scipy.linalg`` (about 0.2 s of a
    small file's 0.9 s start-up, measured on 2 cores).

    At its first compile or cache load numba imports ``numba.np.arraymath``, which imports
    ``scipy.linalg.cython_blas`` only to decide whether ``np.convolve``/``np.correlate``
    may call BLAS; this project's kernels use neither.  The import is made to fail for
    that one module import (numba then uses its own loop there) and works again afterwards:
    ``np.dot`` and ``np.linalg`` in numba, and ``scipy.linalg`` itself, import BLAS when
    they are first used, as usual.
    """
    name = "scipy.linalg.cython_blas"
    if "numba.np.arraymath" in sys.modules or name in sys.modules:
        return
    sys.modules[name] = None  # an import of ``name`` raises ImportError
    try:
        import numba.np.arraymath  # noqa: F401  # lazy: numba is loaded by the command that needs it
    except ImportError:
        pass
    finally:
        del sys.modules[name]


def _run(argv: list[str] | None) -> int:
    # numba colours its error messages with colorama where that is installed, whose set-up writes
    # a reset sequence to a terminal at exit: after the JSON of --json, say
    os.environ.setdefault("NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING", "1")
    parser = build_parser(requested(argv))
    args = parser.parse_args(argv)
    if argv is None:
        one_blas_thread()
        _skip_numba_blas_probe()
    with warnings.catch_warnings(record=True) as caught:
        try:
            code = int(args.func(args) or 0)
        except MeshoptBatchError as exc:
            return _error(exc)
        except BrokenPipeError:  # the reader of stdout left (`... | head`): stop quietly, as `yes | head` does
            if argv is None:  # the process's own stdout: the exit's flush must not fail again
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return BROKEN_PIPE
        except (OSError, ValueError) as exc:
            return _error(exc)
        except MemoryError as exc:
            return _error(f"out of memory ({exc or 'no details'})")
        except RecursionError:
            return _error("input nested too deeply (recursion limit)")
        except KeyboardInterrupt:
            print("meshopt-batch: interrupted", file=sys.stderr)
            return 130
    _print_warnings(caught)
    return code


def _error(exc) -> int:
    """Print ``exc`` as the one error line; the warnings of a failed run are dropped (the error
    says what matters)."""
    print(f"meshopt-batch: error: {one_line(exc)}", file=sys.stderr)
    return 2


def _print_warnings(caught: list) -> None:
    """Each distinct warning of the run as one line, in order."""
    seen = set()
    for w in caught:
        text = one_line(w.message)
        if not issubclass(w.category, UserWarning):
            text = f"{w.category.__name__}: {text}"
        if text not in seen:
            seen.add(text)
            print(f"meshopt-batch: warning: {text}", file=sys.stderr)


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
