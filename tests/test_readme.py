"""README.md is a user guide: short, undated, its links alive, its results table generated.

The table between ``<!-- table:NAME -->`` markers is a benchmark's ``--markdown`` output, pasted
by ``scripts/readme_tables.py``; a README whose table differs from that output fails here.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _readme_tables():
    spec = importlib.util.spec_from_file_location("readme_tables", ROOT / "scripts" / "readme_tables.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_at_most_250_lines():
    assert len(README.splitlines()) <= 250


def test_no_dates_and_no_commit_hashes():
    assert re.findall(r"\b\d{4}-\d{2}-\d{2}\b", README) == []
    # a hex word of 7 to 40 characters with a letter and a digit, as git abbreviates a commit
    hashes = [w for w in re.findall(r"\b[0-9a-f]{7,40}\b", README) if re.search(r"\d", w) and re.search(r"[a-f]", w)]
    assert hashes == []


def test_relative_links_point_at_files():
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README)
    local = [link for link in links if not re.match(r"[a-z]+:", link)]
    assert local, "the README links into the documentation"
    assert [link for link in local if not (ROOT / link).exists()] == []


def test_results_table_is_the_benchmark_output():
    tables = _readme_tables()
    assert tables.render(README) == README
    for name in tables.TABLES:
        start = README.index(f"<!-- table:{name} -->")
        block = README[start:README.index(f"<!-- /table:{name} -->")]
        assert block.count("\n|") >= 3, "the table has a header, a rule and at least one row"


def test_a_changed_output_is_noticed(tmp_path, monkeypatch):
    tables = _readme_tables()
    name, (source, columns) = next(iter(tables.TABLES.items()))
    rows = tables.first_table(source.read_text())
    rows[1][rows[0].index(columns[-1])] = "9.9999"  # one kept figure of the first row
    changed = tmp_path / source.name
    changed.write_text("\n".join("| " + " | ".join(r) + " |" for r in rows[:1] + [["---"] * len(rows[0])] + rows[1:]))
    monkeypatch.setitem(tables.TABLES, name, (changed, columns))
    rendered = tables.render(README)
    assert rendered != README
    assert "9.9999" in rendered and "9.9999" not in README
