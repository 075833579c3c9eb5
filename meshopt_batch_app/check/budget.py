"""The budget file of ``check --budget FILE``: limits on assets, by glob, in TOML.

::

    [[rule]]
    glob = "characters/**"          # required: which files (see below)
    name = "characters"             # optional: how messages name the rule
    max_triangles = 50000
    max_vertices = 40000
    max_bytes = "8M"                # an integer, or a size such as 512K, 8M, 1.5GiB
    max_asr = 0.8                   # every profile of the target ...
    max_acmr = { amd = 0.75 }       # ... or per profile

A glob is matched against the whole path of a file relative to the budget file's folder, with
``/`` between folders: ``*`` and ``?`` stay within one folder name, ``**`` crosses folders
(``characters/**`` is everything below ``characters``, ``**/*.glb`` every GLB at any depth),
``[abc]`` is a class.  Every rule whose glob matches a file applies to it.  A file outside the
budget file's folder matches no rule.

The figures: ``triangles`` drawn and ``vertices`` as ``optimize`` counts them, ``bytes`` of the
file and the external files it refers to, ``asr`` the file's own order's predicted
invocations per triangle on a profile.  ``acmr`` (misses per triangle) is the same ratio under
the batch and cache models (:attr:`meshopt_batch.model.prediction.Prediction.acmr`); both names are
accepted because pipelines use both.

A file that does not parse, an unknown key, a rule without a glob or without a limit, a limit
that is not a positive number, or a profile the target does not have is refused with one line
naming the rule (exit code 2).

The glob translation is written here: the standard library's ``glob.translate`` arrives in
Python 3.13 and :mod:`fnmatch`'s ``*`` crosses folders.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from meshopt_batch.support.errors import MeshoptBatchError

from ..library.memory import parse_size
from .figures import FileFigures
from .judge import Fixes, Violation

__all__ = ["Budget", "Rule", "glob_pattern", "read_budget"]

COUNT_KEYS = {"max_triangles": "triangles", "max_vertices": "vertices", "max_bytes": "bytes"}
RATE_KEYS = {"max_asr": "asr", "max_acmr": "acmr"}
KNOWN_KEYS = ("glob", "name", *COUNT_KEYS, *RATE_KEYS)


@dataclass(frozen=True)
class Rule:
    """One ``[[rule]]``: its glob, limits on counts and per-profile limits on rates."""

    index: int
    glob: str
    name: str
    pattern: re.Pattern
    counts: dict = field(default_factory=dict)   # "triangles" -> limit
    rates: dict = field(default_factory=dict)    # ("asr" | "acmr", profile) -> limit

    @property
    def label(self) -> str:
        return f"rule {self.index} ({self.name or self.glob})"


@dataclass(frozen=True)
class Budget:
    """The rules of a budget file, and the folder its globs are relative to."""

    path: Path
    folder: Path
    rules: tuple[Rule, ...]

    def rules_for(self, path: Path) -> list[Rule]:
        """The rules whose glob matches ``path`` (absolute)."""
        try:
            rel = path.resolve().relative_to(self.folder).as_posix()
        except ValueError:
            return []
        return [r for r in self.rules if r.pattern.match(rel)]

    def violations(self, file: str, path: Path, figs: FileFigures, slack: float, fixes: Fixes) -> list[Violation]:
        """Each limit of each matching rule that ``figs`` exceed."""
        out = []
        for rule in self.rules_for(path):
            for measure, limit in rule.counts.items():
                value = getattr(figs, measure)
                if value > limit:
                    what = "file and its external files" if measure == "bytes" else "asset"
                    out.append(Violation(
                        "budget", file, "", "", measure, value, limit, value / limit,
                        f"{file}: {value} {measure}, over {limit} ({rule.label} of {self.path})",
                        f"reduce the {what} to at most {limit} {measure}, or raise the limit of {rule.label}",
                        rule.label))
            for (measure, name), limit in rule.rates.items():
                own = figs.own.get(name)
                if own is None or not figs.triangles or own / figs.triangles <= limit:
                    continue
                value, reach = own / figs.triangles, figs.reachable.get(name)
                if reach and own > (1 + slack) * reach:
                    fix = fixes.optimize_file(file)
                else:
                    fix = (f"no triangle order gets under it (optimize reaches {reach / figs.triangles:.3f}): "
                           f"simplify the asset or raise the limit of {rule.label}" if reach else
                           f"raise the limit of {rule.label}")
                out.append(Violation(
                    "budget", file, "", name, measure, value, limit, value / limit,
                    f"{file}: {measure.upper()} {value:.3f} on {name}, over {limit:g} ({rule.label} of {self.path})",
                    fix, rule.label))
        return out


def glob_pattern(glob: str) -> re.Pattern:
    """A compiled pattern matching whole relative paths as the module docstring says."""
    out, i, n = [], 0, len(glob)
    while i < n:
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        elif glob[i] == "[" and (end := glob.find("]", i + 2 if glob[i + 1:i + 2] in ("!", "^") else i + 1)) > 0:
            body = glob[i + 1:end]
            negate = body[:1] in ("!", "^")
            body = body[1:] if negate else body
            out.append(("[^/" if negate else "[") + body.replace("\\", "\\\\").replace("[", "\\[") + "]")
            i = end + 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def _positive_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _positive_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 and value != float("inf")


def _rule(index: int, table, profiles: tuple[str, ...], where: str) -> Rule:
    if not isinstance(table, dict):
        raise MeshoptBatchError(f"{where}: rule {index} is not a table (write [[rule]] with keys under it)")
    glob = table.get("glob")
    label = f"rule {index}" + (f" ({glob})" if isinstance(glob, str) and glob else "")
    unknown = sorted(set(table) - set(KNOWN_KEYS))
    if unknown:
        raise MeshoptBatchError(f"{where}: {label}: unknown key {unknown[0]!r} (known: {', '.join(KNOWN_KEYS)})")
    if not isinstance(glob, str) or not glob.strip():
        raise MeshoptBatchError(f"{where}: {label}: needs glob = \"PATTERN\" (a path pattern such as "
                                "\"characters/**\")")
    name = table.get("name", "")
    if not isinstance(name, str):
        raise MeshoptBatchError(f"{where}: {label}: name must be a string")
    counts = {}
    for key, measure in COUNT_KEYS.items():
        if key not in table:
            continue
        value = table[key]
        if key == "max_bytes" and isinstance(value, str):
            try:
                value = parse_size(value)
            except MeshoptBatchError:
                value = None
        if not _positive_int(value):
            raise MeshoptBatchError(f"{where}: {label}: {key} must be a positive integer"
                                    + (" or a size such as 8M" if key == "max_bytes" else "")
                                    + f", not {table[key]!r}")
        counts[measure] = value
    rates = {}
    for key, measure in RATE_KEYS.items():
        if key not in table:
            continue
        value = table[key]
        per = value if isinstance(value, dict) else dict.fromkeys(profiles, value)
        for prof, limit in per.items():
            if prof not in profiles:
                raise MeshoptBatchError(f"{where}: {label}: {key} names profile {prof!r}, not one of the target's "
                                        f"({', '.join(profiles)}; -p sets the target)")
            if not _positive_number(limit):
                raise MeshoptBatchError(f"{where}: {label}: {key} must be a positive number or a table of them by "
                                        f"profile, not {limit!r}")
            rates[(measure, prof)] = float(limit)
    if not counts and not rates:
        raise MeshoptBatchError(f"{where}: {label}: no limit (give one of {', '.join((*COUNT_KEYS, *RATE_KEYS))})")
    return Rule(index, glob.strip().removeprefix("./"), name, glob_pattern(glob.strip().removeprefix("./")),
                counts, rates)


def read_budget(path: str | Path, profiles: tuple[str, ...]) -> Budget:
    """Read and validate a budget file for a target of ``profiles``.

    Raises
    ------
    MeshoptBatchError
        One line naming the file and the rule: unreadable, not TOML, or a bad rule.
    """
    path = Path(path)
    try:
        data = tomllib.loads(path.read_bytes().decode("utf-8"))
    except OSError as exc:
        raise MeshoptBatchError(f"--budget {path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise MeshoptBatchError(f"--budget {path}: not a TOML file (not UTF-8 text)") from None
    except tomllib.TOMLDecodeError as exc:
        raise MeshoptBatchError(f"--budget {path}: not valid TOML: {exc}") from None
    where = f"--budget {path}"
    extra = sorted(set(data) - {"rule"})
    if extra:
        raise MeshoptBatchError(f"{where}: unknown top-level key {extra[0]!r} (rules are [[rule]] tables)")
    rules = data.get("rule", [])
    if not isinstance(rules, list):
        raise MeshoptBatchError(f"{where}: 'rule' must be an array of tables: write [[rule]], not [rule]")
    return Budget(path, path.resolve().parent,
                  tuple(_rule(i, table, profiles, where) for i, table in enumerate(rules, start=1)))
