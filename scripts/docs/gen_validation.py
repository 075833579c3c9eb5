"""Write the validation pages (``validation/``) from the measured files in ``results/``.

Run by mkdocs-gen-files at build time.  The files are read, grouped by GPU and API and turned
into tables by the same code as the report's "Measured on real GPUs" section
(:mod:`meshopt_batch_app.report.results_files`, :mod:`meshopt_batch_app.report.real_gpu_section`):
one page per GPU and API, with the share of every set of measured draws that each profile
predicts exactly, the measured ASR of every optimizer, the glTF assets and the raster check where
the files hold them, the figures, and the list of files.  A results file added to ``results/``
appears on the next build.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from types import SimpleNamespace

import mkdocs_gen_files

from meshopt_batch_app.report.document import markdown_table
from meshopt_batch_app.report.real_gpu_section import real_gpu_section, run_real_gpus
from meshopt_batch_app.report.results_files import read_results

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results"


def slug(renderer: str, api: str) -> str:
    """A page name for a GPU and API: the renderer up to its first ``(`` or ``/``, and the API."""
    name = re.split(r"[(/]", renderer)[0]
    return re.sub(r"[^a-z0-9]+", "-", f"{name} {api.split()[0]}".lower()).strip("-")


def section_markdown(section, level: int = 1) -> list[str]:
    """A report section (its paragraphs, tables unfolded, sub-sections) as Markdown lines."""
    lines = ["#" * level + " " + section.title, ""]
    for paragraph in section.paragraphs:
        lines += [paragraph, ""]
    for table in [*section.lead, *section.tables]:
        lines += [f"**{table.title}**", "", markdown_table(dataclasses.replace(table, fold=None)), ""]
    for sub in section.subsections:
        lines += section_markdown(sub, level + 1)
    return lines


def main() -> None:
    """Write one page per GPU and API, the figures beside them, the index and the navigation."""
    groups = read_results(RESULTS)
    data = run_real_gpus(groups, SimpleNamespace(block_rule_stride=1))
    section = real_gpu_section(data, "results")
    nav = ["* [Overview](index.md)"]
    index = [
        "# Validation",
        "",
        "The batch model is only as good as its match with real GPUs, so every profile is checked "
        "against vertex-shader invocations counted on hardware (see [Probing a GPU](../guides/probing.md)). "
        "These pages are generated when the site is built from the files in `results/` that "
        "`benchmarks/bench_probe.py --results`, `bench_block_rule.py`, `bench_assets_gpu.py` and "
        "`meshopt-batch simulate --check-gl` wrote on each machine; each file names the renderer, "
        "driver and date it was measured with. Mesa's software GPUs are llvmpipe through OpenGL and "
        "lavapipe through Vulkan (whose renderer string is llvmpipe's: both use Mesa's draw module).",
        "",
        "In each table of shares a row is a set of measured draws and a cell the percentage of them "
        "a profile predicts exactly (`-`: not predicted for that file); the best profile of a row is "
        "in bold.",
        "",
    ]
    for entry, sub in zip(data["groups"], section.subsections, strict=True):
        group = entry["group"]
        name = slug(group.renderer, group.api)
        title = f"{group.renderer}, {group.api}"
        lines = section_markdown(dataclasses.replace(sub, title=title))
        figures = [f for f in group.files if f.kind == "figure"]
        for f in figures:
            with mkdocs_gen_files.open(f"validation/{f.path.name}", "wb") as fh:
                fh.write(f.path.read_bytes())
            lines += [f"![{f.path.name}]({f.path.name})", "", f"*{f.path.name}*", ""]
        with mkdocs_gen_files.open(f"validation/{name}.md", "w") as fh:
            fh.write("\n".join(lines))
        nav.append(f"* [{title}]({name}.md)")
        summary = sub.paragraphs[0] if sub.paragraphs else ""
        index += [f"## [{title}]({name}.md)", "", summary, ""]
    with mkdocs_gen_files.open("validation/index.md", "w") as fh:
        fh.write("\n".join(index) + "\n")
    with mkdocs_gen_files.open("validation/SUMMARY.md", "w") as fh:
        fh.write("\n".join(nav) + "\n")


main()
