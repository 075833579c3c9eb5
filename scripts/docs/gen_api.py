"""Write the API reference (``reference/api/``): one page per package, from what it exports.

Run by mkdocs-gen-files at build time.  The packages are the project's root packages
(``pyproject.toml``'s import-linter ``root_packages``) and every package below them; a package's
page holds its docstring and each name its ``__all__`` exports, rendered by mkdocstrings from
the module that defines it (found by importing the package now).  A module moved or a name
exported from elsewhere therefore needs no documentation edit.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import tomllib
from pathlib import Path

import mkdocs_gen_files

ROOT = Path(__file__).resolve().parents[2]


def root_packages() -> list[str]:
    """The project's root packages, as ``pyproject.toml`` lists them for import-linter."""
    with open(ROOT / "pyproject.toml", "rb") as fh:
        return list(tomllib.load(fh)["tool"]["importlinter"]["root_packages"])


def packages() -> list[str]:
    """Every package of the project (root packages first, then depth-first by name)."""
    found = []
    for root in root_packages():
        module = importlib.import_module(root)
        found.append(root)
        found += sorted(info.name for info in pkgutil.walk_packages(module.__path__, root + ".") if info.ispkg)
    return found


def exports(package: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """``(name, defining path)`` of the functions and classes ``package`` exports, and
    ``(name, type name)`` of its other exported values."""
    module = importlib.import_module(package)
    objects, values = [], []
    for name in getattr(module, "__all__", ()):
        obj = getattr(module, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            objects.append((name, f"{obj.__module__}.{obj.__qualname__}"))
        else:
            values.append((name, type(obj).__name__))
    return objects, values


def page(package: str, rendered: dict[str, str]) -> str | None:
    """The Markdown of ``package``'s page, or None when it has neither a docstring nor exports.

    A function or class is documented on the first page that exports it (the packages come
    shallowest first, so on the most public one); ``rendered`` maps its path to that page's
    package, and a later page links there instead.
    """
    module = importlib.import_module(package)
    objects, values = exports(package)
    if not module.__doc__ and not objects:
        return None
    lines = [f"# `{package}`", ""]
    if module.__doc__:
        lines += [f"::: {package}", "    options:", "      members: false", "      show_root_heading: false", ""]
    if values:
        lines += ["Also exported: " + ", ".join(f"`{n}` ({t})" for n, t in values) + ".", ""]
    elsewhere = [(name, path) for name, path in objects if path in rendered]
    if elsewhere:
        lines += ["Also exported here, documented with `" + "`, `".join(sorted({rendered[p] for _, p in elsewhere}))
                  + "`: " + ", ".join(f"[`{name}`][{path}]" for name, path in elsewhere) + ".", ""]
    for _name, path in objects:
        if path not in rendered:
            rendered[path] = package
            lines += [f"::: {path}", ""]
    return "\n".join(lines)


def main() -> None:
    """Write the pages and the section's navigation (``SUMMARY.md``, read by literate-nav)."""
    nav = ["* [Overview](index.md)"]
    written: list[str] = []
    rendered: dict[str, str] = {}
    for package in packages():
        text = page(package, rendered)
        if text is None:
            continue
        with mkdocs_gen_files.open(f"reference/api/{package}.md", "w") as fh:
            fh.write(text)
        depth = sum(package.startswith(w + ".") for w in written)  # under the pages of its packages
        nav.append("    " * depth + f"* [{package}]({package}.md)")
        written.append(package)
    index = [
        "# API reference",
        "",
        "Generated from the docstrings when this site was built: one page per package, with the "
        "names its `__init__` exports (the public API; the command line calls the same functions). "
        "Each function and class is documented in numpydoc form, which `tests/test_docstrings.py` "
        "checks.",
        "",
    ] + [f"- [`{p}`]({p}.md)" for p in written]
    with mkdocs_gen_files.open("reference/api/index.md", "w") as fh:
        fh.write("\n".join(index) + "\n")
    with mkdocs_gen_files.open("reference/api/SUMMARY.md", "w") as fh:
        fh.write("\n".join(nav) + "\n")


main()
