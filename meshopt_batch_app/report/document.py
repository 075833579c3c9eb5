"""The report as data (sections of text, tables and figures) and its HTML / Markdown writers.

The HTML page is self-contained (figures inlined as base64 PNG); the Markdown twin references
the same PNG files written beside it.
"""

from __future__ import annotations

import base64
import html
import io
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.layout_engine import ConstrainedLayoutEngine

from meshopt_batch.support.files import atomic_write

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
            self.png = _encode(self.figure)
            plt.close(self.figure)
        return self.png


def _encode(figure) -> bytes:
    """The figure as PNG (a constrained layout already fits it; ``tight`` would draw it twice)."""
    buf = io.BytesIO()
    constrained = isinstance(figure.get_layout_engine(), ConstrainedLayoutEngine)
    figure.savefig(buf, format="png", dpi=110, bbox_inches=None if constrained else "tight")
    return buf.getvalue()


@dataclass(frozen=True)
class Best:
    """Which cells of a table hold a best value; the writers draw them bold (the CLI's ``*``).

    Attributes
    ----------
    axis : ``"row"`` (the best of each row among ``among``) or ``"column"`` (the best of each
        column of ``among``, over the rows)
    among : column names taking part; ``None``: every numeric column but the first
    lower : the lowest value is best (``False``: the highest)
    group : with ``axis="column"``, only rows with the same value in this column compete
        (e.g. the builders of one mesh)
    near : with ``axis="row"``, the best cell is the one closest to this column's value
        (e.g. the prediction closest to the measurement); the column itself is not marked
    """

    axis: str = "row"
    among: tuple | None = None
    lower: bool = True
    group: str | None = None
    near: str | None = None


@dataclass
class Table:
    """A titled data frame.  ``best`` (one :class:`Best` or several) marks best cells;
    ``fold`` shows that many rows and folds the rest into a ``<details>`` block; ``formats``
    gives some columns their own float format."""

    title: str
    frame: pd.DataFrame
    floatfmt: str = "{:.3f}"
    best: Best | tuple = ()
    fold: int | None = None
    formats: dict = field(default_factory=dict)

    def shown(self, i: int, j: int) -> str:
        """Cell ``(i, j)`` as the reader sees it."""
        return _format_cell(self.frame.iat[i, j], self.formats.get(self.frame.columns[j], self.floatfmt))

    def cells(self) -> list[list[tuple[str, bool]]]:
        """Every body cell as ``(text as shown, best)``."""
        marked = best_cells(self)
        return [[(self.shown(i, j), (i, j) in marked) for j in range(self.frame.shape[1])]
                for i in range(len(self.frame))]


def _number(value) -> float | None:
    """A cell as a finite float, or None (text, booleans, missing values)."""
    if isinstance(value, (bool, np.bool_)) or value is None:
        return None
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if np.isfinite(x) else None


def best_cells(table: Table) -> set[tuple[int, int]]:
    """``(row, column)`` positions of the best cells of ``table`` (see :class:`Best`).

    A cell is best when its shown text equals the best value's, so ties as the reader sees them
    are all marked; a row or column with fewer than two numbers marks nothing.
    """
    frame = table.frame
    columns = list(frame.columns)
    values = frame.to_numpy(dtype=object)
    specs = (table.best,) if isinstance(table.best, Best) else tuple(table.best)
    out: set[tuple[int, int]] = set()

    def mark(cells, score):
        scored = [(score(i, j), i, j) for i, j in cells]
        scored = [(s, i, j) for s, i, j in scored if s is not None]
        if len(scored) < 2:
            return
        top = min(s for s, _, _ in scored)
        shown = {(i, j): table.shown(i, j) for _, i, j in scored}
        winners = {shown[(i, j)] for s, i, j in scored if s == top}
        out.update((i, j) for _, i, j in scored if shown[(i, j)] in winners)

    for spec in specs:
        names = spec.among if spec.among is not None else [
            c for c in columns[1:]
            if pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c])]
        cols = [columns.index(c) for c in names if c in columns and c != spec.near]
        sign = 1.0 if spec.lower else -1.0

        def signed(i, j, sign=sign):
            x = _number(values[i, j])
            return None if x is None else sign * x

        if spec.axis == "row":
            ref_col = columns.index(spec.near) if spec.near in columns else None
            for i in range(len(frame)):
                ref = None if ref_col is None else _number(values[i, ref_col])
                if ref_col is None:
                    mark([(i, j) for j in cols], signed)
                elif ref is not None:
                    mark([(i, j) for j in cols], lambda a, b, ref=ref: None if _number(values[a, b]) is None
                         else abs(_number(values[a, b]) - ref))
        elif spec.axis == "column":
            groups = ([np.arange(len(frame))] if spec.group is None
                      else list(frame.groupby(spec.group, sort=False).indices.values()))
            for rows in groups:
                for j in cols:
                    mark([(int(i), j) for i in rows], signed)
        else:
            raise ValueError(f"Best.axis must be 'row' or 'column', not {spec.axis!r}")
    return out


@dataclass
class Section:
    anchor: str
    title: str
    paragraphs: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    #: shell commands that reproduce the section's figures one by one
    commands: list[str] = field(default_factory=list)
    #: tables shown right under the heading, before the paragraphs
    lead: list[Table] = field(default_factory=list)
    #: sections one heading level down, after this one's figures
    subsections: list[Section] = field(default_factory=list)


def _format_cell(value, floatfmt):
    if value is None:
        return "-"
    if isinstance(value, (float, np.floating)):
        if not np.isfinite(value):
            return "-"
        return floatfmt.format(value)
    return str(value)


def _folded(table: Table) -> tuple[list[str], list[list[tuple[str, bool]]], int]:
    """Header, cells and how many rows stay open (the rest fold)."""
    header = [str(c) for c in table.frame.columns]
    cells = table.cells()
    keep = len(cells) if table.fold is None or table.fold >= len(cells) else max(int(table.fold), 1)
    return header, cells, keep


def _fold_summary(hidden: int, total: int) -> str:
    return f"{hidden} more row{'s' if hidden != 1 else ''} (of {total})"


def markdown_table(table: Table) -> str:
    """A GitHub-flavoured Markdown table, best cells in ``**``; folded rows go into a
    ``<details>`` block."""
    header, cells, keep = _folded(table)

    def block(rows):
        lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
        return lines + ["| " + " | ".join(f"**{t}**" if bold else t for t, bold in r) + " |" for r in rows]

    lines = block(cells[:keep])
    if keep < len(cells):
        lines += ["", f"<details><summary>{_fold_summary(len(cells) - keep, len(cells))}</summary>", "",
                  *block(cells[keep:]), "", "</details>"]
    return "\n".join(lines)


def html_table(table: Table) -> str:
    """An HTML table, best cells in ``<strong>``; folded rows in a ``<details>`` block."""
    header, cells, keep = _folded(table)
    head = "".join(f"<th>{html.escape(c)}</th>" for c in header)

    def block(rows):
        body = "".join("<tr>" + "".join(f"<td><strong>{html.escape(t)}</strong></td>" if bold
                                        else f"<td>{html.escape(t)}</td>" for t, bold in r) + "</tr>"
                       for r in rows)
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    out = block(cells[:keep])
    if keep < len(cells):
        out += (f"<details><summary>{_fold_summary(len(cells) - keep, len(cells))}</summary>"
                + block(cells[keep:]) + "</details>")
    return out


_CSS = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:13px}th,td{border:1px solid #ccc;padding:3px 7px;
text-align:right}th{background:#f2f2f2}td:first-child,th:first-child{text-align:left}figure{margin:1em 0}
img{max-width:100%}figcaption{font-size:14px;color:#444;margin-top:.3em}nav a{margin-right:1em}
code{background:#f3f3f3;padding:0 .2em}pre{background:#f6f6f6;padding:.5em;font-size:12px;overflow-x:auto}
h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:2em}
details{margin:-1em 0 1.5em}summary{cursor:pointer;color:#555;font-size:13px}"""


_CODE = re.compile(r"`([^`]+)`")
_STRONG = re.compile(r"\*\*([^*]+)\*\*")


def _inline(text: str) -> str:
    """Escape for HTML; `code` spans become <code> and **strong** spans <strong> (the Markdown
    twin keeps the marks)."""
    return _STRONG.sub(r"<strong>\1</strong>", _CODE.sub(r"<code>\1</code>", html.escape(text)))


def _emit(section: Section, level: int, out: Path, md: list, body: list, written: list) -> None:
    """Append one section (heading level 2, sub-sections 3) to the Markdown and HTML bodies."""
    md += ["#" * level + f" {section.title}", ""]
    body.append(f'<h{level} id="{section.anchor}">{html.escape(section.title)}</h{level}>')

    def tables(items):
        for table in items:
            md.extend([f"**{table.title}**", "", markdown_table(table), ""])
            body.append(f"<h{level + 1}>{html.escape(table.title)}</h{level + 1}>" + html_table(table))

    tables(section.lead)
    for para in section.paragraphs:
        md += [para, ""]
        body.append(f"<p>{_inline(para)}</p>")
    if section.commands:
        md += ["```sh", *section.commands, "```", ""]
        body.append("<pre>" + html.escape("\n".join(section.commands)) + "</pre>")
    tables(section.tables)
    for fig in section.figures:
        data = fig.png_bytes()
        path = out / f"{fig.name}.png"
        atomic_write(path, data)
        written.append(path)
        md += [f"![{fig.name}]({fig.name}.png)", "", fig.caption, ""]
        b64 = base64.b64encode(data).decode("ascii")
        body.append(f'<figure><img alt="{html.escape(fig.name)}" src="data:image/png;base64,{b64}">'
                    f"<figcaption>{_inline(fig.caption)}</figcaption></figure>")
    for sub in section.subsections:
        _emit(sub, level + 1, out, md, body, written)


def write_report(sections: list[Section], out_dir: str | Path, title: str, preamble: list[str]) -> dict:
    """Write ``index.html`` and ``report.md`` plus the PNG figures into ``out_dir`` atomically.

    Returns the paths written.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    md = [f"# {title}", ""] + [p + "\n" for p in preamble]
    body = [f"<h1>{html.escape(title)}</h1>"] + [f"<p>{html.escape(p)}</p>" for p in preamble]
    body.append("<nav>" + "".join(f'<a href="#{s.anchor}">{html.escape(s.title)}</a>' for s in sections) + "</nav>")
    written: list[Path] = []
    for section in sections:
        _emit(section, 2, out, md, body, written)
    page = ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>" + html.escape(title)
            + f"</title><style>{_CSS}</style></head><body>" + "\n".join(body) + "</body></html>")
    html_path, md_path = out / "index.html", out / "report.md"
    atomic_write(html_path, page.encode())
    atomic_write(md_path, "\n".join(md).encode())
    return {"html": html_path, "markdown": md_path, "figures": written}
