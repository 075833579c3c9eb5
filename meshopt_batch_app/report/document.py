"""The report as data (sections of text, tables and figures) and its HTML / Markdown writers.

The HTML page is self-contained (figures inlined as base64 PNG); the Markdown twin references
the same PNG files written beside it.
"""

from __future__ import annotations

import base64
import html
import io
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from meshopt_batch.files import atomic_write

from .figures import plt  # the report's matplotlib, with the Agg backend set


@dataclass
class Figure:
    """A figure with a file name and the paragraph that reads it.

    ``figure`` is a matplotlib figure (rendered to PNG once, then closed) or ``None`` when
    ``png`` already holds the encoded image (a plot another module wrote as a file).
    """

    name: str
    figure: object
    caption: str
    png: bytes | None = None

    def png_bytes(self) -> bytes:
        if self.png is None:
            buf = io.BytesIO()
            self.figure.savefig(buf, format="png", dpi=110, bbox_inches="tight")
            plt.close(self.figure)
            self.png = buf.getvalue()
        return self.png


@dataclass
class Table:
    title: str
    frame: pd.DataFrame
    floatfmt: str = "{:.3f}"


@dataclass
class Section:
    anchor: str
    title: str
    paragraphs: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    #: shell commands that reproduce the section's figures one by one
    commands: list[str] = field(default_factory=list)


def _format_cell(value, floatfmt):
    if value is None:
        return "-"
    if isinstance(value, (float, np.floating)):
        if not np.isfinite(value):
            return "-"
        return floatfmt.format(value)
    return str(value)


def markdown_table(table: Table) -> str:
    frame = table.frame
    header = [str(c) for c in frame.columns]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for row in frame.itertuples(index=False):
        lines.append("| " + " | ".join(_format_cell(v, table.floatfmt) for v in row) + " |")
    return "\n".join(lines)


def html_table(table: Table) -> str:
    frame = table.frame
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_format_cell(v, table.floatfmt))}</td>" for v in row) + "</tr>"
        for row in frame.itertuples(index=False)
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


_CSS = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:13px}th,td{border:1px solid #ccc;padding:3px 7px;
text-align:right}th{background:#f2f2f2}td:first-child,th:first-child{text-align:left}figure{margin:1em 0}
img{max-width:100%}figcaption{font-size:14px;color:#444;margin-top:.3em}nav a{margin-right:1em}
code{background:#f3f3f3;padding:0 .2em}pre{background:#f6f6f6;padding:.5em;font-size:12px;overflow-x:auto}
h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:2em}"""


_CODE = re.compile(r"`([^`]+)`")


def _inline(text: str) -> str:
    """Escape for HTML; `code` spans become <code> (the Markdown twin keeps the backticks)."""
    return _CODE.sub(r"<code>\1</code>", html.escape(text))


def write_report(sections: list[Section], out_dir: "str | Path", title: str, preamble: list[str]) -> dict:
    """Write ``index.html`` and ``report.md`` plus the PNG figures into ``out_dir`` atomically.

    Returns the paths written.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    md = [f"# {title}", ""] + [p + "\n" for p in preamble]
    body = [f"<h1>{html.escape(title)}</h1>"] + [f"<p>{html.escape(p)}</p>" for p in preamble]
    body.append("<nav>" + "".join(f'<a href="#{s.anchor}">{html.escape(s.title)}</a>' for s in sections) + "</nav>")
    written = []
    for section in sections:
        md += [f"## {section.title}", ""]
        body.append(f'<h2 id="{section.anchor}">{html.escape(section.title)}</h2>')
        for para in section.paragraphs:
            md += [para, ""]
            body.append(f"<p>{_inline(para)}</p>")
        if section.commands:
            md += ["```sh", *section.commands, "```", ""]
            body.append("<pre>" + html.escape("\n".join(section.commands)) + "</pre>")
        for table in section.tables:
            md += [f"**{table.title}**", "", markdown_table(table), ""]
            body.append(f"<h3>{html.escape(table.title)}</h3>" + html_table(table))
        for fig in section.figures:
            data = fig.png_bytes()
            path = out / f"{fig.name}.png"
            atomic_write(path, data)
            written.append(path)
            md += [f"![{fig.name}]({fig.name}.png)", "", fig.caption, ""]
            b64 = base64.b64encode(data).decode("ascii")
            body.append(f'<figure><img alt="{html.escape(fig.name)}" src="data:image/png;base64,{b64}">'
                        f"<figcaption>{_inline(fig.caption)}</figcaption></figure>")
    page = ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>" + html.escape(title)
            + f"</title><style>{_CSS}</style></head><body>" + "\n".join(body) + "</body></html>")
    html_path, md_path = out / "index.html", out / "report.md"
    atomic_write(html_path, page.encode())
    atomic_write(md_path, "\n".join(md).encode())
    return {"html": html_path, "markdown": md_path, "figures": written}
