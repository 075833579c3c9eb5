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

The spellings of version 0.1 (``--profiles``, ``--methods``, ``--techniques``,
``--optimizer``, ``--quick``) still work for one release; using one prints a one-line
deprecation note on stderr.
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["add_method", "add_no_progress", "add_profile", "add_technique", "deprecated_alias", "split_values"]

PROFILE_HELP = ("nvidia_gl, nvidia_dx, amd, intel, llvmpipe, fifo:N, lru:N, a profile JSON file; "
                "'+16bit' models NVIDIA's 2^16 boundary")
TARGET_HELP = "portable (nvidia_gl, nvidia_dx, amd, intel, llvmpipe), or profiles: " + PROFILE_HELP


def split_values(values) -> list[str] | None:
    """Repeated and comma-separated values as one flat list (``None`` when none were given)."""
    if not values:
        return None
    out = [v.strip() for item in values for v in str(item).split(",") if v.strip()]
    return out or None


class _Deprecated(argparse.Action):
    """Accepts an old spelling, warns once on stderr, and stores like the new option."""

    def __init__(self, option_strings, dest, replacement: str, store: str = "extend", const=None, **kw):
        self.replacement = replacement
        self.store = store
        if store == "store_const":
            kw["nargs"] = 0
        super().__init__(option_strings, dest, const=const, **kw)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"meshopt-batch: warning: {option_string} is deprecated and will be removed in the next "
              f"release; use {self.replacement}", file=sys.stderr)
        if self.store == "extend":
            current = list(getattr(namespace, self.dest, None) or [])
            setattr(namespace, self.dest, current + list(values))
        elif self.store == "store_const":
            setattr(namespace, self.dest, self.const)
        else:
            setattr(namespace, self.dest, values)


def deprecated_alias(parser, old: str, dest: str, replacement: str, *, nargs="+", store="extend",
                     const=None, metavar=None) -> None:
    """Accept the old option ``old`` for one release: it stores into ``dest`` and warns."""
    kw = {} if store == "store_const" else {"nargs": nargs, "metavar": metavar}
    parser.add_argument(old, dest=dest, action=_Deprecated, replacement=replacement, store=store,
                        const=const, help=argparse.SUPPRESS, **kw)


def add_profile(parser, *, multiple: bool, default_help: str, old_plural: bool = False) -> None:
    """``--profile/-p P``: one target profile, or (``multiple``) repeatable and comma-separated."""
    if multiple:
        parser.add_argument("--profile", "-p", action="append", dest="profile", metavar="P",
                            help=f"target or profile (repeatable, or comma-separated): {TARGET_HELP}; "
                            f"default: {default_help}")
        if old_plural:
            deprecated_alias(parser, "--profiles", "profile", "--profile (repeatable)", metavar="P")
    else:
        parser.add_argument("--profile", "-p", default=None, metavar="P",
                            help=f"target profile: {PROFILE_HELP}; default: {default_help}")


def add_no_progress(parser, *, quiet: bool = False) -> None:
    """``--no-progress``: no progress on stderr (there is none anyway unless stdout and stderr
    are terminals, :mod:`meshopt_batch_app.progress`); ``quiet`` also accepts ``-q/--quiet``."""
    names = ("--no-progress", "--quiet", "-q") if quiet else ("--no-progress",)
    parser.add_argument(*names, dest="no_progress", action="store_true",
                        help="no progress on stderr (shown only when stdout and stderr are terminals)")


def add_method(parser, *, multiple: bool, default_help: str, old_plural: bool = False) -> None:
    """``--method/-m M``: one optimizer, or (``multiple``) repeatable and comma-separated."""
    names = ("original, hoppe, kcache, tipsify, forsyth, batch, meshoptimizer, meshoptimizer_fifo, "
             "meshoptimizer_strip, batch+overdraw, tipsify+overdraw, overdraw, meshoptimizer_overdraw")
    if multiple:
        parser.add_argument("--method", "-m", action="append", dest="method", metavar="M",
                            help=f"optimizer (repeatable, or comma-separated): {names}; NAME:N sets a "
                            f"cache size (tipsify:14); default: {default_help}")
        if old_plural:
            deprecated_alias(parser, "--methods", "method", "--method (repeatable)", metavar="M")
    else:
        parser.add_argument("--method", "-m", default=None, metavar="M",
                            help=f"triangle-order optimizer: {names}; default: {default_help}")


def add_technique(parser) -> None:
    """``--technique/-t T``: repeatable and comma-separated (``--techniques`` deprecated)."""
    parser.add_argument("--technique", "-t", action="append", dest="technique", metavar="T",
                        help="technique (repeatable, or comma-separated; default: baseline); see --list")
    deprecated_alias(parser, "--techniques", "technique", "--technique (repeatable)", metavar="T")
