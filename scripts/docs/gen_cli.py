"""Write ``reference/cli.md``: every subcommand's ``--help``, as the installed parser prints it.

Run by mkdocs-gen-files at build time, so the page is the parser's own text and a new option
or subcommand appears without a documentation edit.
"""

from __future__ import annotations

import os

import mkdocs_gen_files

os.environ["COLUMNS"] = "100"  # argparse wraps to the terminal's width: a fixed one for the page

from meshopt_batch_app.cli import SUBCOMMANDS, build_parser  # noqa: E402 -- after COLUMNS is set


def _subparsers(parser):
    for action in parser._actions:  # argparse keeps its subparsers on the action, nowhere public
        if getattr(action, "choices", None) and hasattr(action, "_name_parser_map"):
            return action.choices
    return {}


def main() -> None:
    """Write the page."""
    parser = build_parser()
    subs = _subparsers(parser)
    lines = [
        "# Command line",
        "",
        "Every subcommand's `--help`, generated from the parser when this site was built. Every "
        "command takes `--json` (one JSON object on stdout); bad input is one line on stderr and "
        "exit code 2 (see [Input checks and limits](limits.md)).",
        "",
        "```text",
        parser.format_help().rstrip(),
        "```",
        "",
    ]
    for name in SUBCOMMANDS:
        if name not in subs:
            continue
        lines += [f"## {name}", "", "```text", subs[name].format_help().rstrip(), "```", ""]
    with mkdocs_gen_files.open("reference/cli.md", "w") as fh:
        fh.write("\n".join(lines))


main()
