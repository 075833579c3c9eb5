"""A griffe extension: the reStructuredText of this project's numpydoc docstrings as Markdown.

The docstrings are numpydoc (reStructuredText: Sphinx roles, simple tables, ``::`` literal
blocks, ``.. [1]`` citations), and mkdocstrings renders a docstring's text as Markdown.  Before
griffe parses a docstring's sections, this rewrites the few reStructuredText forms the project
uses into their Markdown equivalents:

* a role (``:func:`~pkg.mod.name```, ``:class:`Name```, ``:mod:`.sub```...) becomes a code span
  of the name as written (``~`` keeps the last part, as Sphinx shows it);
* a simple table (rows between lines of ``=`` runs, continuation lines whose first column is
  empty) becomes a Markdown table;
* a paragraph ending in ``::`` introduces a fenced code block (the indented lines after it);
  ``.. math::`` a fenced block of the formula;
* a citation ``.. [1] text`` becomes ``[1] text``.

Used by ``mkdocs.yml`` (``extensions: scripts/docs/griffe_rst.py:RstToMarkdown``).
"""

from __future__ import annotations

import re

import griffe

_ROLE = re.compile(r":(?:py:)?(?:func|class|mod|data|attr|meth|exc|obj|const|ref|doc|term):`([^`]+)`")
_TABLE_RULE = re.compile(r"^(\s*)(=+)( +=+)+\s*$")
_CITATION = re.compile(r"^(\s*)\.\. (\[[^\]]+\])\s*")


def _role(match: re.Match) -> str:
    text = match.group(1)
    titled = re.match(r"(.+?)\s*<(.+)>$", text)
    if titled:
        return f"`{titled.group(1)}`"
    if text.startswith("~"):
        text = text[1:].rsplit(".", 1)[-1]
    return f"`{text}`"


def _spans(rule: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(r"=+", rule)]


def _cells(line: str, spans: list[tuple[int, int]]) -> list[str]:
    """A row's cells; text running past its column (a long role) stays in its cell."""
    cuts = [start for start, _end in spans[1:]]
    for i, cut in enumerate(cuts):
        cut = max(cut, cuts[i - 1] if i else 0)
        while 0 < cut < len(line) and not line[cut - 1].isspace() and not line[cut].isspace():
            cut += 1
        cuts[i] = cut
    bounds = [0, *cuts, len(line)]
    return [line[a:b].strip() for a, b in zip(bounds, bounds[1:], strict=False)]


def _table(lines: list[str], spans: list[tuple[int, int]]) -> list[str]:
    """A simple table's lines (rules included) as Markdown rows."""
    rows: list[list[str]] = []
    header: list[str] | None = None
    for line in lines:
        if _TABLE_RULE.match(line):
            if rows and header is None and len([x for x in lines if _TABLE_RULE.match(x)]) >= 3:
                header, rows = rows[0], []
            continue
        if not line.strip():
            continue
        cells = _cells(line, spans)
        if rows and not cells[0]:
            rows[-1] = [f"{a} {b}".strip() for a, b in zip(rows[-1], cells, strict=True)]
        else:
            rows.append(cells)
    header = header or [""] * len(spans)
    escape = [[c.replace("|", "\\|") for c in row] for row in [header, *rows]]
    out = ["| " + " | ".join(escape[0]) + " |", "|" + "---|" * len(spans)]
    out += ["| " + " | ".join(row) + " |" for row in escape[1:]]
    return out


def rst_to_markdown(text: str) -> str:
    """``text`` (a docstring) with its reStructuredText forms written as Markdown."""
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        rule = _TABLE_RULE.match(line)
        if rule:
            spans = _spans(line)
            block, j, rules = [line], i + 1, 1
            while j < len(lines) and rules < 3:
                block.append(lines[j])
                rules += bool(_TABLE_RULE.match(lines[j]))
                j += 1
            if rules == 3:
                indent = rule.group(1)
                if out and out[-1].strip():
                    out.append("")
                out += [indent + row for row in _table(block, spans)]
                out.append("")
                i = j
                continue
        stripped = line.rstrip()
        if stripped.endswith("::") and not stripped.lstrip().startswith(".. "):
            out.append(stripped[:-1] if not stripped.endswith(" ::") else stripped[:-3])
            i = _literal_block(lines, i + 1, out, "text")
            continue
        if stripped.lstrip().startswith(".. math::"):
            i = _literal_block(lines, i + 1, out, "text")
            continue
        citation = _CITATION.match(line)
        if citation:
            line = citation.group(1) + citation.group(2) + " " + line[citation.end():]
        out.append(line)
        i += 1
    return _ROLE.sub(_role, "\n".join(out))


def _literal_block(lines: list[str], i: int, out: list[str], lang: str) -> int:
    """Fence the indented block that starts at line ``i`` (after blank lines); the next line."""
    j = i
    while j < len(lines) and not lines[j].strip():
        j += 1
    if j >= len(lines):
        return j
    base = len(lines[j]) - len(lines[j].lstrip())
    k = j
    while k < len(lines) and (not lines[k].strip() or len(lines[k]) - len(lines[k].lstrip()) >= base > 0):
        k += 1
    while k > j and not lines[k - 1].strip():
        k -= 1
    if base == 0 or k == j:
        return i
    out += ["", f"```{lang}"] + [ln[base:] for ln in lines[j:k]] + ["```", ""]
    return k


class RstToMarkdown(griffe.Extension):
    """Rewrite each docstring's reStructuredText forms before griffe parses its sections."""

    def on_instance(self, *, node, obj, agent, **kwargs) -> None:  # noqa: ARG002 -- griffe's hook signature
        """Rewrite ``obj``'s docstring, if it has one.

        Parameters
        ----------
        node : ast.AST or griffe.ObjectNode
            What griffe visited (unused).
        obj : griffe.Object
            The object loaded; its docstring's text is replaced.
        agent : griffe.Visitor or griffe.Inspector
            The loader (unused).
        **kwargs
            Further hook arguments (unused).
        """
        if obj.docstring is not None:
            obj.docstring.value = rst_to_markdown(obj.docstring.value)
