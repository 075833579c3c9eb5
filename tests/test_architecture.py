"""The layout's rules, checked on the source (issue 13).

* layers (``pyproject.toml``'s import-linter contract): the application on the probe and the
  pipeline model, which are independent of each other, on the shipped meshes, on the core;
* no import cycle between any two modules (imports inside functions included);
* an import inside a function says why in a ``# lazy:`` comment on its line;
* no source file outside ``tests/`` over 900 lines;
* ruff (lint and import order, configured in ``pyproject.toml``) is clean.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("meshopt_batch", "meshes", "gpu_probe", "pipeline_model", "meshopt_batch_app")
BIN = Path(sys.executable).parent


def _sources():
    for package in PACKAGES:
        yield from sorted((ROOT / package).rglob("*.py"))


def _lint_imports(cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "lint-imports"), "--no-cache"], cwd=cwd, capture_output=True, text=True,
                          env={"PYTHONPATH": str(cwd), "PATH": str(BIN)})


def test_layer_contract_is_kept():
    run = _lint_imports(ROOT)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "1 kept, 0 broken" in run.stdout


def test_a_forbidden_import_breaks_the_contract(tmp_path):
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "meshopt_batch" / "sneaky.py").write_text("import pipeline_model.pipeline\n")
    run = _lint_imports(tmp_path)
    assert run.returncode == 1
    assert "BROKEN" in run.stdout and "meshopt_batch.sneaky -> pipeline_model.pipeline" in run.stdout


def _strongly_connected(adjacency: dict[str, list[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; components of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    counter = 0
    for root in adjacency:
        if root in index:
            continue
        work = [(root, iter(adjacency[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = counter
                counter += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(adjacency[child])))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def test_strongly_connected_finds_a_planted_cycle():
    assert _strongly_connected({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}) == [["a", "b", "c"]]
    assert _strongly_connected({"a": ["b"], "b": []}) == []


def test_no_import_cycle_between_modules():
    sys.path.insert(0, str(ROOT))
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    adjacency = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in sorted(graph.modules)}
    assert len(adjacency) > 80
    assert _strongly_connected(adjacency) == []


def _unexplained_lazy_imports(path: Path) -> list[str]:
    lines = path.read_text().splitlines()
    found = []

    class Visitor(ast.NodeVisitor):
        depth = 0

        def visit_FunctionDef(self, node):
            self.depth += 1
            self.generic_visit(node)
            self.depth -= 1

        visit_AsyncFunctionDef = visit_FunctionDef

        def _check(self, node):
            if self.depth and "# lazy:" not in lines[node.lineno - 1]:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {lines[node.lineno - 1].strip()}")

        visit_Import = visit_ImportFrom = _check

    Visitor().visit(ast.parse("\n".join(lines)))
    return found


def test_every_import_inside_a_function_says_why():
    found = [line for path in _sources() for line in _unexplained_lazy_imports(path)]
    assert found == []


def test_no_source_file_over_900_lines():
    sizes = {str(p.relative_to(ROOT)): len(p.read_text().splitlines()) for p in _sources()}
    sizes.update({str(p.relative_to(ROOT)): len(p.read_text().splitlines())
                  for p in sorted((ROOT / "benchmarks").glob("*.py"))})
    assert {name: n for name, n in sizes.items() if n > 900} == {}


def test_ruff_is_clean():
    assert shutil.which("ruff", path=str(BIN)), "ruff is missing: install the dev extra (make setup)"
    run = subprocess.run([str(BIN / "ruff"), "check", "--no-cache", "."], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-3000:]


def test_no_two_core_modules_share_a_file_name():
    """A module's name says what it holds without its folder: no two modules under
    ``meshopt_batch/`` share one (packages' ``__init__`` aside)."""
    names = {}
    for path in sorted((ROOT / "meshopt_batch").rglob("*.py")):
        if path.name != "__init__.py":
            names.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    assert {name: paths for name, paths in names.items() if len(paths) > 1} == {}


def test_the_top_of_the_core_is_a_few_folders():
    """The core is grouped by topic: at its top only the package's ``__init__``."""
    top = sorted(p.name for p in (ROOT / "meshopt_batch").glob("*.py"))
    assert top == ["__init__.py"]
