"""Paste the README's results table and lines from the Markdown benchmarks wrote; ``--check`` compares.

The README shows one current results table, never typed: the first table of a benchmark's
``--markdown`` output (:data:`TABLES`: the file, the columns kept), pasted between the marker
comments ``<!-- table:NAME -->`` and ``<!-- /table:NAME -->``; and single lines, the first line
of a benchmark's output (:data:`LINES`), between ``<!-- line:NAME -->`` and
``<!-- /line:NAME -->``.  To refresh them, run the benchmark's command (stated in the README
and on the documentation's benchmark page), then

    .venv/bin/python scripts/readme_tables.py          # rewrite the README's tables
    .venv/bin/python scripts/readme_tables.py --check  # exit 1 when one is out of date

``tests/test_readme.py`` runs the check.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

#: Marker name -> (the benchmark's Markdown output, the columns the README keeps).
TABLES = {
    "bench_portable_quick": (
        ROOT / "docs" / "benchmarks" / "output" / "bench_portable_quick.md",
        ("mesh", "triangles", "nvidia_gl", "nvidia_dx", "amd", "intel", "llvmpipe", "worst", "mean"),
    ),
}

#: Marker name -> the benchmark's Markdown output whose first line the README quotes.
LINES = {
    "bench_report_full": ROOT / "docs" / "benchmarks" / "output" / "bench_report_full.md",
    "bench_report_quick": ROOT / "docs" / "benchmarks" / "output" / "bench_report_quick.md",
}


def first_table(markdown: str) -> list[list[str]]:
    """The rows (header first) of the first Markdown table in ``markdown``; the rule row dropped."""
    rows, started = [], False
    for line in markdown.splitlines():
        if line.startswith("|"):
            started = True
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(re.fullmatch(r":?-+:?", c) for c in cells):
                rows.append(cells)
        elif started:
            break
    if not rows:
        raise ValueError("no Markdown table")
    return rows


def table(name: str) -> str:
    """The README's table ``name``: the benchmark output's first table with the kept columns."""
    source, columns = TABLES[name]
    rows = first_table(source.read_text())
    header = rows[0]
    missing = [c for c in columns if c not in header]
    if missing:
        raise ValueError(f"{source.name}: no column {', '.join(missing)}")
    picks = [header.index(c) for c in columns]
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" if c == "mesh" else "---:" for c in columns) + "|"]
    lines += ["| " + " | ".join(row[i] for i in picks) + " |" for row in rows[1:]]
    return "\n".join(lines)


def line(name: str) -> str:
    """The README's line ``name``: the first line of the benchmark's output."""
    text = LINES[name].read_text().strip()
    if not text:
        raise ValueError(f"{LINES[name].name}: empty")
    return text.splitlines()[0]


def _paste(readme: str, kind: str, name: str, text: str, sep: str) -> str:
    start, end = f"<!-- {kind}:{name} -->", f"<!-- /{kind}:{name} -->"
    if start not in readme or end not in readme:
        raise ValueError(f"README.md has no {start} ... {end} block")
    head, rest = readme.split(start, 1)
    _old, tail = rest.split(end, 1)
    return f"{head}{start}{sep}{text}{sep}{end}{tail}"


def render(readme: str) -> str:
    """``readme`` with every marked table and line replaced by its generated text."""
    for name in TABLES:
        readme = _paste(readme, "table", name, table(name), "\n")
    for name in LINES:
        readme = _paste(readme, "line", name, line(name), "")
    return readme


def main(argv: list[str]) -> int:
    """Rewrite the README's tables, or with ``--check`` say whether they are current (exit 1 if not)."""
    try:
        current = README.read_text()
        wanted = render(current)
    except (OSError, ValueError) as exc:
        print(f"readme_tables: {exc}", file=sys.stderr)
        return 2
    if "--check" in argv:
        if wanted != current:
            print("readme_tables: README.md's tables differ from the benchmark outputs "
                  "(run scripts/readme_tables.py)", file=sys.stderr)
            return 1
        return 0
    if wanted != current:
        README.write_text(wanted)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
