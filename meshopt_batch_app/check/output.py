"""What ``check`` prints and writes: the terminal table, the ``--json`` object, the JUnit file.

The table has one row per thing that does not hold, by file: the check, the file, the
primitive (``-`` for the whole file), the profile, the figure, its limit and what to run to fix
it.  A file or primitive over its limit on several profiles gets one row, at the profile where
it is furthest over, with the number of other profiles in brackets; a file lists at most
:data:`PRIMITIVE_ROWS` primitives per check, furthest over first (``--json`` lists them all).

The JUnit file (``--junit FILE``) has one ``testsuite`` and one ``testcase`` per file judged
(and one per baseline file that is gone), named by the file's path: a ``failure`` holds its
violations, an ``error`` a file that could not be read.  This is the layout GitHub Actions'
test reporters, GitLab's ``artifacts:reports:junit`` and Jenkins' JUnit plugin read.

References
----------
.. [1] Apache Ant's JUnit XML report (``testsuites``/``testsuite``/``testcase`` with ``failure``
   and ``error`` elements), the de-facto format of CI systems; GitLab's "Unit test reports"
   documentation lists the elements it reads.
"""

from __future__ import annotations

import socket
import time
import xml.etree.ElementTree as ET

from meshopt_batch.support.files import atomic_write

from .judge import KINDS, Violation

__all__ = ["junit_xml", "rows", "table"]

#: The longest primitive label a table cell shows (``--json`` has the whole label).
LABEL_WIDTH = 48
#: The most primitives a file's check lists in the table (furthest over first).
PRIMITIVE_ROWS = 5


def _figure(v: Violation) -> str:
    if v.figure is None:
        return "-"
    if v.measure in ("asr", "acmr"):
        against = {"unoptimized": " reachable", "regression": " baseline"}.get(v.kind, "")
        ratio = f" ({v.ratio:.4f}x{against})" if v.ratio is not None and against else ""
        return f"{v.measure.upper()} {v.figure:.3f}{ratio}"
    if v.kind == "removed":
        return "gone"
    if v.kind == "added":
        return "new"
    return f"{v.figure:g} {v.measure}"


def _limit(v: Violation) -> str:
    if v.limit is None:
        return "in the baseline" if v.kind == "removed" else "not in the baseline" if v.kind == "added" else "-"
    text = f"{v.limit:.3f}" if v.measure in ("asr", "acmr") else f"{v.limit:g}"
    return f"{text} {v.rule}" if v.rule else text


def rows(violations: list[Violation]) -> list[tuple[Violation, int]]:
    """One ``(worst violation, other profiles)`` per file, check, primitive and rule, in table
    order: by file, check and rule, the whole file first, then its primitives furthest over first."""
    groups: dict[tuple, list[Violation]] = {}
    for v in violations:
        groups.setdefault((v.file, KINDS.index(v.kind), v.rule, v.measure, v.primitive), []).append(v)
    out = []
    for key in groups:
        group = groups[key]
        worst = max(group, key=lambda v: v.ratio if v.ratio is not None else 0.0)
        out.append((key, worst, len(group) - 1))
    out.sort(key=lambda r: (r[0][:4], r[0][4] != "", -(r[1].ratio or 0.0), r[0][4]))
    return [(worst, more) for _key, worst, more in out]


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def table(violations: list[Violation]) -> list[str]:
    """The terminal table's lines (none when nothing is violated): at most
    :data:`PRIMITIVE_ROWS` primitives per file and check, then a line counting the others."""
    if not violations:
        return []
    cells = [("CHECK", "FILE", "PRIMITIVE", "PROFILE", "FIGURE", "LIMIT", "FIX")]
    shown: dict[tuple, int] = {}
    for v, more in rows(violations):
        group = (v.file, v.kind, v.rule)
        if v.primitive:
            shown[group] = shown.get(group, 0) + 1
            if shown[group] > PRIMITIVE_ROWS:
                continue
        profile = (v.profile or "-") + (f" (+{more})" if more and v.profile else "")
        cells.append((v.kind, v.file, _clip(v.primitive, LABEL_WIDTH) or "-", profile, _figure(v), _limit(v), v.fix))
    for (file, kind, _rule), count in shown.items():
        if count > PRIMITIVE_ROWS:
            at = max(i for i, c in enumerate(cells) if c[1] == file and c[0] == kind)
            cells.insert(at + 1, (kind, file, f"... {count - PRIMITIVE_ROWS} more primitives", "", "", "",
                                  "(--json lists every one)"))
    widths = [max(len(row[i]) for row in cells) for i in range(6)]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row[:6], widths, strict=True)) + "  " + row[6]
            for row in cells]


def junit_xml(path, cases: list[dict], properties: dict, seconds: float) -> None:
    """Write the JUnit file atomically.

    Parameters
    ----------
    cases : list of dict
        ``{"name", "seconds", "violations": [Violation], "error": str}`` per file.
    properties : dict
        Shown as the suite's properties (target, slack, how the reachable figures were found).
    """
    failures = sum(1 for c in cases if c["violations"] and not c.get("error"))
    errors = sum(1 for c in cases if c.get("error"))
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
    counts = {"tests": str(len(cases)), "failures": str(failures), "errors": str(errors), "skipped": "0",
              "time": f"{seconds:.3f}"}
    root = ET.Element("testsuites", {"name": "meshopt-batch check", **counts})
    suite = ET.SubElement(root, "testsuite", {"name": "meshopt-batch check", **counts, "timestamp": stamp,
                                              "hostname": socket.gethostname()})
    props = ET.SubElement(suite, "properties")
    for name, value in properties.items():
        ET.SubElement(props, "property", {"name": name, "value": str(value)})
    for case in cases:
        node = ET.SubElement(suite, "testcase", {"name": case["name"], "classname": "meshopt-batch check",
                                                 "file": case["name"], "time": f"{case.get('seconds', 0.0):.3f}"})
        if case.get("error"):
            ET.SubElement(node, "error", {"message": case["error"], "type": "error"}).text = case["error"]
        elif case["violations"]:
            vs = case["violations"]
            kinds = sorted({v.kind for v in vs}, key=KINDS.index)
            first = rows(vs)[0][0]
            summary = f"{len(vs)} violation(s) ({', '.join(kinds)}): {first.message}"
            text = "\n".join(f"{v.kind}: {v.message}; fix: {v.fix}" for v in vs)
            ET.SubElement(node, "failure", {"message": summary, "type": ",".join(kinds)}).text = text
    ET.indent(root)
    atomic_write(path, ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n")
