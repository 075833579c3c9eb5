"""Command-line options shared by the subcommands, spelled the same everywhere.

Convention: an option that names a thing is singular (``--profile``, ``--method``,
``--technique``, ``--mesh``, ``--scene``); where a command takes several, the option is
repeatable and each value may be a comma-separated list (``-p nvidia_gl -p amd`` or
``-p nvidia_gl,amd``).  Short forms mean one thing everywhere: ``-p`` profile, ``-m`` method,
``-t`` technique, ``-o`` output, ``-n`` frames.  Where a command takes several profiles it
takes a target (``portable`` or a set, :func:`meshopt_batch.model.targets.get_target`).  A command
that shows progress takes ``--no-progress``.

This module is imported with every parser (``meshopt-batch --help``): it imports no core
module.
"""

from __future__ import annotations

__all__ = ["MAX_EFFORT", "add_method", "add_no_progress", "add_profile", "add_technique", "effort_work",
           "split_values"]

#: The most ``--effort`` takes (millions of triangles simulated: hours on a large asset).
MAX_EFFORT = 100_000

PROFILE_HELP = ("nvidia_gl, nvidia_dx, amd, intel, llvmpipe, fifo:N, lru:N, a profile JSON file; "
                "'+16bit' models NVIDIA's 2^16 boundary")
TARGET_HELP = "portable (nvidia_gl, nvidia_dx, amd, intel, llvmpipe), or profiles: " + PROFILE_HELP


def split_values(values) -> list[str] | None:
    """Repeated and comma-separated values as one flat list (``None`` when none were given)."""
    if not values:
        return None
    out = [v.strip() for item in values for v in str(item).split(",") if v.strip()]
    return out or None


def effort_work(effort: float) -> int:
    """``--effort M`` (millions of triangles simulated) as the optimizer's ``window_work``.

    Raises
    ------
    MeshoptBatchError
        When ``M`` is outside ``[0, MAX_EFFORT]``.
    """
    if not 0 <= effort <= MAX_EFFORT:
        from meshopt_batch.support.errors import MeshoptBatchError  # lazy: this module imports no core module

        raise MeshoptBatchError(f"--effort must be between 0 and {MAX_EFFORT:g} (millions of triangles), "
                                f"not {effort:g}")
    return int(effort * 1e6)


def add_profile(parser, *, multiple: bool, default_help: str) -> None:
    """``--profile/-p P``: one target profile, or (``multiple``) repeatable and comma-separated."""
    if multiple:
        parser.add_argument("--profile", "-p", action="append", dest="profile", metavar="P",
                            help=f"target or profile (repeatable, or comma-separated): {TARGET_HELP}; "
                            f"default: {default_help}")
    else:
        parser.add_argument("--profile", "-p", default=None, metavar="P",
                            help=f"target profile: {PROFILE_HELP}; default: {default_help}")


def add_no_progress(parser, *, quiet: bool = False) -> None:
    """``--no-progress``: no progress on stderr (there is none anyway unless stdout and stderr
    are terminals, :mod:`meshopt_batch_app.progress`); ``quiet`` also accepts ``-q/--quiet``."""
    names = ("--no-progress", "--quiet", "-q") if quiet else ("--no-progress",)
    parser.add_argument(*names, dest="no_progress", action="store_true",
                        help="no progress on stderr (shown only when stdout and stderr are terminals)")


def add_method(parser, *, multiple: bool, default_help: str) -> None:
    """``--method/-m M``: one optimizer, or (``multiple``) repeatable and comma-separated."""
    names = ("original, hoppe, kcache, tipsify, forsyth, batch, meshoptimizer, meshoptimizer_fifo, "
             "meshoptimizer_strip, batch+overdraw, tipsify+overdraw, overdraw, meshoptimizer_overdraw")
    if multiple:
        parser.add_argument("--method", "-m", action="append", dest="method", metavar="M",
                            help=f"optimizer (repeatable, or comma-separated): {names}; NAME:N sets a "
                            f"cache size (tipsify:14); default: {default_help}")
    else:
        parser.add_argument("--method", "-m", default=None, metavar="M",
                            help=f"triangle-order optimizer: {names}; default: {default_help}")


def add_technique(parser) -> None:
    """``--technique/-t T``: repeatable and comma-separated."""
    parser.add_argument("--technique", "-t", action="append", dest="technique", metavar="T",
                        help="technique (repeatable, or comma-separated; default: baseline); see --list")
