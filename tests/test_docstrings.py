"""The public API's docstrings are numpydoc, checked by numpydoc's own validator.

Checked: every function and class that a package's ``__init__`` exports (its ``__all__``), in
every package of the project, and the public methods and properties those classes define.  The
checks (:data:`CHECKS`, numpydoc's codes) ask for a docstring with a one-line summary, every
parameter documented with a type and a description (a class's constructor parameters in its
``Parameters`` or ``Attributes`` section), a ``Returns`` section where a function returns a
value, ``Yields`` where it yields, and well-formed sections in numpydoc's order.  Not checked:
an extended summary (ES01), ``See Also`` (SA01) and ``Examples`` (EX01), which not every name
needs; a summary starting with an infinitive verb (SS05: this project's summaries often say
what a function returns, "The mesh of ..."); and numpydoc's spelling of type names (PR06: the
types say ``integer array_like``).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import tomllib
from pathlib import Path

import pytest
from numpydoc import docscrape  # numpydoc is in the dev extra (make setup)
from numpydoc import validate as numpydoc_validate

ROOT = Path(__file__).resolve().parents[1]

#: numpydoc validation codes that must not be reported (numpydoc.validate.ERROR_MSGS has the texts).
CHECKS = frozenset({
    "GL02", "GL03", "GL05", "GL06", "GL07", "GL08", "GL09", "GL10",   # layout, sections, a docstring at all
    "SS01", "SS02", "SS03", "SS04", "SS06",                           # the summary: there, one line, a sentence
    "PR01", "PR02", "PR03", "PR04", "PR05", "PR07", "PR08", "PR09", "PR10",  # parameters
    "RT01", "RT02", "RT03", "RT04", "RT05",                           # returns
    "YD01",                                                           # yields
    "SA02", "SA03", "SA04",                                           # a See Also section, where there is one
})


def _root_packages() -> list[str]:
    with open(ROOT / "pyproject.toml", "rb") as fh:
        return list(tomllib.load(fh)["tool"]["importlinter"]["root_packages"])


def _packages() -> list[str]:
    found = []
    for root in _root_packages():
        module = importlib.import_module(root)
        found.append(root)
        found += sorted(i.name for i in pkgutil.walk_packages(module.__path__, root + ".") if i.ispkg)
    return found


def _exported() -> dict[str, object]:
    """Import path -> object, for every exported function and class and the public methods and
    properties the classes define (each once, under the module that defines it)."""
    out: dict[str, object] = {}
    for package in _packages():
        module = importlib.import_module(package)
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            path = f"{obj.__module__}.{obj.__qualname__}"
            out[path] = obj
            if inspect.isclass(obj):
                for attr, member in vars(obj).items():
                    if attr.startswith("_"):
                        continue
                    if inspect.isfunction(member) or isinstance(member, (property, classmethod, staticmethod)):
                        out[f"{path}.{attr}"] = member
    return out


EXPORTED = _exported()


def _documented(obj) -> set[str]:
    """The names a class's ``Parameters`` and ``Attributes`` sections document (``a, b : int`` is two)."""
    doc = docscrape.NumpyDocString(inspect.getdoc(obj) or "")
    return {name.strip().lstrip("*") for section in ("Parameters", "Attributes") for p in doc[section]
            for name in p.name.split(",")}


def problems(path: str, obj) -> list[str]:
    """The checked numpydoc errors of one name, as ``CODE message`` lines."""
    found = []
    for code, message in numpydoc_validate.validate(path)["errors"]:
        if code not in CHECKS:
            continue
        if code == "PR01" and inspect.isclass(obj):  # a dataclass's fields may be its Attributes
            signature = set(inspect.signature(obj).parameters) - {"self", "args", "kwargs"}
            if not signature - _documented(obj):
                continue
        found.append(f"{code} {message}")
    return found


def test_the_exports_are_found():
    # the public API of the core is among them, so an empty walk cannot pass
    for path in ("meshopt_batch.model.prediction.predict", "meshopt_batch.optimizers.optimize",
                 "meshopt_batch.io.load_mesh", "meshopt_batch.optimizers.optimize_result.OptimizeResult.apply",
                 "gpu_probe.invocations.measure_invocations"):
        assert path in EXPORTED
    assert len(EXPORTED) > 150


def test_a_bad_docstring_is_reported():
    def undocumented(triangles, vertex_count):
        """Count things
        across two lines."""
        return len(triangles) + vertex_count

    undocumented.__module__, undocumented.__qualname__ = __name__, "undocumented"
    globals()["undocumented"] = undocumented
    try:
        codes = {line.split()[0] for line in problems(f"{__name__}.undocumented", undocumented)}
    finally:
        del globals()["undocumented"]
    assert {"GL02", "SS06", "PR01", "RT01"} <= codes


@pytest.mark.parametrize("path", sorted(EXPORTED))
def test_exported_docstring_is_numpydoc(path):
    assert problems(path, EXPORTED[path]) == []
