"""Write the benchmark pages (``benchmarks/``) from the benchmark scripts and their outputs.

Run by mkdocs-gen-files at build time.  The index lists every ``benchmarks/bench_*.py`` with the
first paragraph of its docstring and its ``Run:`` line, read from the script (not imported).  A
benchmark takes minutes, so it does not run here: where a script writes Markdown
(``--markdown FILE``), its output is committed under ``docs/benchmarks/output/`` by the command
in :data:`OUTPUTS`, and its page shows the script's docstring, that command and the output.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import mkdocs_gen_files

ROOT = Path(__file__).resolve().parents[2]
OUTPUT_DIR = ROOT / "docs" / "benchmarks" / "output"

#: Output file (under docs/benchmarks/output/, without ``.md``) -> (script, the command that writes it).
OUTPUTS = {
    "bench_portable_quick": ("bench_portable", ".venv/bin/python benchmarks/bench_portable.py --quick --no-speed "
                                               "--markdown docs/benchmarks/output/bench_portable_quick.md"),
    "bench_portable": ("bench_portable", ".venv/bin/python benchmarks/bench_portable.py --no-speed "
                                         "--markdown docs/benchmarks/output/bench_portable.md"),
    "bench_assets": ("bench_assets", ".venv/bin/python benchmarks/bench_assets.py "
                                     "--markdown docs/benchmarks/output/bench_assets.md"),
    "bench_report_full": ("bench_report", ".venv/bin/python benchmarks/bench_report.py --full "
                                          "--markdown docs/benchmarks/output/bench_report_full.md"),
    "bench_report_quick": ("bench_report", ".venv/bin/python benchmarks/bench_report.py "
                                           "--markdown docs/benchmarks/output/bench_report_quick.md"),
}


def _converter():
    spec = importlib.util.spec_from_file_location("griffe_rst", Path(__file__).with_name("griffe_rst.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.rst_to_markdown


to_markdown = _converter()


def docstring(script: Path) -> str:
    """The module docstring of ``script``, read without running it."""
    return ast.get_docstring(ast.parse(script.read_text())) or ""


def run_line(doc: str) -> str:
    """The ``Run:`` command of a benchmark's docstring (continuation lines joined), or ``""``."""
    match = re.search(r"^Run:\s*(.+(?:\n[ \t]+.+)*)", doc, re.MULTILINE)
    return " ".join(match.group(1).split()) if match else ""


def page_text(doc: str) -> str:
    """A benchmark's docstring as Markdown: its ``Run:`` lines fenced, brackets elsewhere escaped
    (``[--quick] [--json FILE]`` is an option list, not a Markdown link)."""
    run = re.search(r"^Run:\s*(.+(?:\n[ \t]+.+)*)", doc, re.MULTILINE)
    if run:
        doc = doc[:run.start()] + "Run:\n\n```sh\n" + "\n".join(
            line.strip() for line in run.group(1).splitlines()) + "\n```\n" + doc[run.end():]
    out, fenced = [], False
    for line in to_markdown(doc).splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            parts = re.split(r"(``.+?``|`[^`]+`)", line)  # code spans at odd places
            line = "".join(p if i % 2 else p.replace("[", "\\[").replace("]", "\\]") for i, p in enumerate(parts))
        out.append(line)
    return "\n".join(out)


def main() -> None:
    """Write the index, one page per committed output, and the section's navigation."""
    scripts = sorted((ROOT / "benchmarks").glob("bench_*.py"))
    pages = {name: spec for name, spec in OUTPUTS.items() if (OUTPUT_DIR / f"{name}.md").is_file()}
    nav = ["* [Overview](index.md)"]
    index = [
        "# Benchmarks",
        "",
        "Each script in `benchmarks/` measures this project beside a peer in the same run "
        "(meshoptimizer, gltfpack, llvmpipe, a bare interpreter) and prints ratios, its goals and "
        "the machine's load; none of their figures are typed into this documentation. A benchmark "
        "takes minutes, so the site is not built by running them: the outputs below were written "
        "by the command shown on each page, and running it again rewrites them.",
        "",
    ]
    if pages:
        index += ["## Outputs", ""]
        for name, (script, command) in pages.items():
            index.append(f"- [{name}]({name}.md): `{command}`")
            nav.append(f"* [{name}]({name}.md)")
            doc = docstring(ROOT / "benchmarks" / f"{script}.py")
            text = [f"# {name}", "", "Written by", "", "```sh", command, "```", "",
                    (OUTPUT_DIR / f"{name}.md").read_text().strip(), "", f"## About `{script}.py`", "",
                    page_text(doc), ""]
            with mkdocs_gen_files.open(f"benchmarks/{name}.md", "w") as fh:
                fh.write("\n".join(text))
        index.append("")
    index += ["## Scripts", "", "| script | what it measures | run |", "|---|---|---|"]
    for script in scripts:
        doc = docstring(script)
        summary = " ".join(page_text(doc.split("\n\n")[0]).split()).replace("|", "\\|")
        run = run_line(doc).replace("|", "\\|")
        index.append(f"| `{script.name}` | {summary} | {f'`{run}`' if run else ''} |")
    with mkdocs_gen_files.open("benchmarks/index.md", "w") as fh:
        fh.write("\n".join(index) + "\n")
    with mkdocs_gen_files.open("benchmarks/SUMMARY.md", "w") as fh:
        fh.write("\n".join(nav) + "\n")


main()
