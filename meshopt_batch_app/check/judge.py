"""The order rules of ``check``: unoptimized, and regression against a baseline.

*Unoptimized.*  A file is unoptimized on a profile when its own order predicts more than
``1 + S`` times the invocations ``optimize`` reaches on it (``S``: the slack, ``--slack``,
default 0.01).  Both figures are sums over the file's draws.  A primitive is named as well when
its own figure is more than ``1 + S`` times its reachable one *and* what optimizing it would
save exceeds ``S`` of the whole file's reachable figure: the primitive alone makes its file
unoptimized.  A primitive is not judged alone against its own reachable figure: the optimizer
does not reach the same order from every start, so running ``optimize`` again on its own output
can find an order a few percent better for a small primitive while the file's total stays
within ``S``, and an optimized file must hold.  ``optimize`` never writes an order that
predicts more than its input on any profile, so the reachable figure is at most the file's own.
A file known as ``optimize``'s own output is judged with its own figures as the reachable ones
(:mod:`.provenance`).

*Regression.*  Against a baseline (:mod:`.baseline`): a file, or a primitive paired with its
baseline one (:func:`.figures.match_primitives`), whose ASR (invocations per triangle) on a
profile exceeds ``1 + S`` times the baseline's; a primitive or file that the baseline has and
the checked files lack, or the other way round.  While the triangles stay the same the ASR
ratio is the invocation ratio; a primitive edited in place is judged by its shading rate.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from .figures import FileFigures, match_primitives

__all__ = ["KINDS", "Fixes", "Violation", "regressions", "unoptimized"]

#: Kinds of violation, in the order a table lists them.
KINDS = ("error", "unoptimized", "regression", "removed", "added", "budget")


@dataclass(frozen=True)
class Violation:
    """One thing that does not hold.

    Attributes
    ----------
    kind : str
        One of :data:`KINDS`.
    file : str
        The file as the command line named it (a folder's files: folder joined with the path).
    primitive : str
        Its label (:class:`.figures.PrimitiveFigures`), or ``""`` for the whole file.
    profile : str
        The profile of an order figure, ``""`` otherwise.
    measure : str
        What ``figure`` and ``limit`` are: ``asr``, ``triangles``, ``vertices``, ``bytes``.
    figure, limit : float or None
        The file's (or primitive's) value and the most it may be.
    ratio : float or None
        ``figure / limit`` before the slack: own over reachable, or over the baseline.
    message : str
        One line saying what is wrong, with the figures.
    fix : str
        What to run or do to fix it.
    rule : str
        A budget rule's label (``rule 2 (characters/**)``), ``""`` otherwise.
    """

    kind: str
    file: str
    primitive: str
    profile: str
    measure: str
    figure: float | None
    limit: float | None
    ratio: float | None
    message: str
    fix: str
    rule: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Fixes:
    """The commands a violation's ``fix`` names: optimize one file, accept the current figures."""

    optimize: str
    accept: str

    def optimize_file(self, file: str) -> str:
        return self.optimize.format(file=file)


def _asr(invocations: int, triangles: int) -> float:
    return invocations / triangles if triangles else 0.0


def unoptimized(file: str, figs: FileFigures, slack: float, fixes: Fixes) -> list[Violation]:
    """The unoptimized rule (module docstring) on every profile of ``figs``."""
    out: list[Violation] = []
    if not figs.triangles:
        return out
    fix = fixes.optimize_file(file)
    for name, own in figs.own.items():
        reach = figs.reachable.get(name)
        if not reach or own <= (1 + slack) * reach:
            continue
        out.append(Violation(
            "unoptimized", file, "", name, "asr", _asr(own, figs.triangles), _asr(reach, figs.triangles) * (1 + slack),
            own / reach, f"{file}: predicts {own / reach:.4f}x the invocations optimize reaches on {name} "
            f"(ASR {_asr(own, figs.triangles):.3f}, reachable {_asr(reach, figs.triangles):.3f})", fix))
        for prim in figs.primitives:
            p_own, p_reach = prim.own.get(name), prim.reachable.get(name)
            if not p_reach or p_own <= (1 + slack) * p_reach or p_own - p_reach <= slack * reach:
                continue
            out.append(Violation(
                "unoptimized", file, prim.label, name, "asr", _asr(p_own, prim.triangles),
                _asr(p_reach, prim.triangles) * (1 + slack), p_own / p_reach,
                f"{file}: {prim.label} predicts {p_own / p_reach:.4f}x the invocations optimize reaches on {name} "
                f"(ASR {_asr(p_own, prim.triangles):.3f}, reachable {_asr(p_reach, prim.triangles):.3f}; "
                f"{p_own - p_reach} of the file's {own - reach} avoidable)", fix))
    return out


def _worse(file: str, label: str, name: str, cur: tuple[int, int], base: tuple[int, int], slack: float,
           fix: str) -> Violation | None:
    """A regression of one profile's ASR, from (invocations, triangles) now and in the baseline."""
    now, then = _asr(*cur), _asr(*base)
    if not then or now <= (1 + slack) * then:
        return None
    what = label or "the file"
    return Violation("regression", file, label, name, "asr", now, then * (1 + slack), now / then,
                     f"{file}: {what} predicts {now / then:.4f}x its baseline's ASR on {name} "
                     f"({now:.3f}, baseline {then:.3f})", fix)


def regressions(file: str, cur: FileFigures, base: FileFigures, slack: float, fixes: Fixes) -> list[Violation]:
    """The regression rule (module docstring) of one file against its baseline record."""
    out: list[Violation] = []

    def fix(name: str) -> str:
        # optimize helps when the file is itself over what optimize reaches; otherwise accept it
        own, reach = cur.own.get(name), cur.reachable.get(name)
        return fixes.optimize_file(file) if reach and own > (1 + slack) * reach else fixes.accept

    for name, own in cur.own.items():
        if name in base.own:
            v = _worse(file, "", name, (own, cur.triangles), (base.own[name], base.triangles), slack, fix(name))
            out += [v] if v else []
    if not base.primitives:  # a baseline written before manifests had primitives: the file only
        return out
    pairs, removed, added = match_primitives(base.primitives, cur.primitives)
    for old, new in pairs:
        for name, own in new.own.items():
            if name in old.own:
                v = _worse(file, new.label, name, (own, new.triangles), (old.own[name], old.triangles), slack,
                           fix(name))
                out += [v] if v else []
    for prim in removed:
        out.append(Violation("removed", file, prim.label, "", "triangles", 0, None, None,
                             f"{file}: {prim.label} ({prim.triangles} triangles) is in the baseline, not in the file",
                             fixes.accept))
    for prim in added:
        out.append(Violation("added", file, prim.label, "", "triangles", prim.triangles, None, None,
                             f"{file}: {prim.label} ({prim.triangles} triangles) is not in the baseline",
                             fixes.accept))
    return out
