"""Compare triangle-order optimizers on meshes and GPU profiles (paper 001, Tables 1-2).

:func:`compare` optimizes every mesh once with every method, times each run, and evaluates
the resulting index buffers with the batch model (:func:`meshopt_batch.model.prediction.predict`) under
every profile.  The result is a tidy :class:`pandas.DataFrame` (one row per mesh, profile and
method) that :meth:`CompareResult.table` pivots into the paper's layout: rows meshes, columns
the original order, each method and the ideal "perfect reuse" ASR (referenced vertices per
triangle, i.e. every vertex shaded once).

Method specifications
---------------------
A method is a name from :data:`meshopt_batch.optimizers.METHODS`, optionally followed by
``:N`` to set its cache size (``tipsify:14``, ``kcache:10``, ``meshoptimizer_fifo:16``,
``hoppe:16``, ``forsyth:32``).  Paper 001 used Tipsify with 11 entries on NVIDIA and 14 on
AMD and K-Cache with 10; the plain names use the modules' defaults (Tipsify 11, K-Cache 10,
Hoppe 12, Forsyth 32).

Profile-aware methods (``batch``) optimize for the profile they are evaluated on, so they
run once per mesh *and profile*; every other method runs once per mesh and its order is
evaluated on all profiles.

Files with several index buffers (glTF primitives) are treated as the GPU sees them: each
primitive is optimized and evaluated on its own, then invocations, triangles and referenced
vertices are summed over the file's primitives (one row per file).
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..geometry.mesh_record import Mesh
from ..io import load_meshes
from ..model.prediction import predict
from ..model.profiles import get_profile
from ..model.targets import get_target
from ..optimizers import METHODS, available_methods, get_method, optimize
from ..support.errors import MeshoptBatchError
from ..support.files import atomic_path

__all__ = ["CompareResult", "MeshItem", "compare", "default_methods", "mesh_items", "parse_method", "DEFAULT_PROFILES"]

#: The GPU models of paper 001's Tables 1 (NVIDIA) and 2 (AMD, Intel).
DEFAULT_PROFILES = ("nvidia_gl", "amd", "intel")

_CACHE_PARAM = "cache_size"
_ORIGINAL = "original"


def default_methods() -> list[str]:
    """Original order, the four classic optimizers, the batch optimizer when it is
    importable, and meshoptimizer's three functions when that package is installed."""
    names = ["original", "hoppe", "kcache", "tipsify", "forsyth"]
    avail = set(available_methods())
    if "batch" in avail:
        names.append("batch")
    for extra in ("meshoptimizer", "meshoptimizer_fifo", "meshoptimizer_strip"):
        if extra in avail:
            names.append(extra)
    return names


def parse_method(spec: str) -> tuple[str, str, dict]:
    """``"tipsify:14"`` -> ``("tipsify:14", "tipsify", {"cache_size": 14})``."""
    text = str(spec).strip()
    name, sep, arg = text.partition(":")
    get_method(name)  # raises for an unknown name
    params: dict = {}
    if sep:
        if name in (_ORIGINAL, "batch", "meshoptimizer", "meshoptimizer_strip"):
            raise MeshoptBatchError(f"method {name!r} takes no cache size (got {text!r})")
        try:
            size = int(arg)
        except ValueError:
            raise MeshoptBatchError(f"method {text!r}: cache size must be an integer") from None
        if size < 3:
            raise MeshoptBatchError(f"method {text!r}: cache size must be at least 3")
        params[_CACHE_PARAM] = size
    return text, name, params


@dataclass
class MeshItem:
    """One input file (or array): its name and its index buffers."""

    name: str
    buffers: list  # [(triangles (T, 3), vertex_count)]


def mesh_items(meshes) -> list[MeshItem]:
    """Accept paths, Mesh objects, lists of Mesh (one file) or ``(name, triangles)`` pairs."""
    if isinstance(meshes, (str, os.PathLike, Mesh)) or (isinstance(meshes, tuple) and len(meshes) == 2
                                                        and isinstance(meshes[0], str)):
        meshes = [meshes]
    items = []
    for entry in meshes:
        if isinstance(entry, (str, os.PathLike)):
            path = Path(entry)
            parts = load_meshes(path)
            items.append(MeshItem(path.stem, [(np.asarray(m.triangles), m.vertex_count) for m in parts]))
        elif isinstance(entry, Mesh):
            items.append(MeshItem(entry.name or f"mesh{len(items)}",
                                  [(np.asarray(entry.triangles), entry.vertex_count)]))
        elif isinstance(entry, (list, tuple)) and entry and all(isinstance(m, Mesh) for m in entry):
            items.append(MeshItem(entry[0].name or f"mesh{len(items)}",
                               [(np.asarray(m.triangles), m.vertex_count) for m in entry]))
        elif isinstance(entry, tuple) and len(entry) == 2:
            name, tris = entry
            tris = np.asarray(tris)
            items.append(MeshItem(str(name), [(tris, int(tris.max()) + 1 if tris.size else 0)]))
        else:
            raise MeshoptBatchError(f"cannot compare {type(entry).__name__}: give paths, meshes or (name, triangles)")
    names = [it.name for it in items]
    for i, it in enumerate(items):  # keep row labels unique
        if names.count(it.name) > 1:
            it.name = f"{it.name}#{names[:i + 1].count(it.name)}"
    return items


def _referenced(tris: np.ndarray) -> int:
    return int(np.unique(np.asarray(tris).ravel()).size) if np.asarray(tris).size else 0


@dataclass
class CompareResult:
    """Outcome of :func:`compare`.

    Attributes
    ----------
    results : pandas.DataFrame
        Tidy table, one row per (mesh, profile, method): ``mesh, profile, method, asr,
        invocations, triangles, vertices, batches, acmr, atvr, perfect_asr, seconds``
        (``seconds``: time of the optimization whose order the row evaluates; 0 for the
        original order; ``vertices``: distinct vertices the optimized index buffers reference).
    times : pandas.DataFrame
        One row per optimizer run: ``mesh, method, profile, seconds`` (``profile`` is empty
        for methods that do not depend on it).
    """

    results: pd.DataFrame
    times: pd.DataFrame
    methods: list = field(default_factory=list)
    profiles: list = field(default_factory=list)
    meshes: list = field(default_factory=list)

    def table(self, profile: str, value: str = "asr") -> pd.DataFrame:
        """Paper-style table for one profile: rows meshes, columns methods then ``perfect``."""
        sub = self.results[self.results["profile"] == profile]
        if sub.empty:
            raise MeshoptBatchError(f"no results for profile {profile!r}")
        wide = sub.pivot(index="mesh", columns="method", values=value)
        wide = wide.reindex(index=self.meshes, columns=self.methods)
        if value == "asr":
            perfect = sub.groupby("mesh")["perfect_asr"].first().reindex(self.meshes)
            wide["perfect"] = perfect
        wide.columns.name = None
        return wide

    def time_table(self) -> pd.DataFrame:
        """Optimizer run times: rows meshes, columns methods (profile-aware methods get one
        column per profile, ``batch@nvidia_gl``)."""
        t = self.times.copy()
        t["column"] = np.where(t["profile"] == "", t["method"], t["method"] + "@" + t["profile"])
        wide = t.pivot(index="mesh", columns="column", values="seconds").reindex(index=self.meshes)
        order = [c for m in self.methods for c in [m] + [f"{m}@{p}" for p in self.profiles]
                 if c in wide.columns]
        wide = wide[order]
        wide.columns.name = None
        return wide

    def to_dict(self) -> dict:
        """JSON-ready summary (the ``--json`` output of ``meshopt-batch compare``)."""
        def clean(records):
            out = []
            for r in records:
                out.append({k: (None if isinstance(v, float) and math.isnan(v) else
                                (v.item() if hasattr(v, "item") else v)) for k, v in r.items()})
            return out

        return {
            "meshes": list(self.meshes),
            "methods": list(self.methods),
            "profiles": list(self.profiles),
            "results": clean(self.results.to_dict(orient="records")),
            "times": clean(self.times.to_dict(orient="records")),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    def to_csv(self, path) -> None:
        """Write the tidy table; the file appears complete or not at all."""
        with atomic_path(path) as tmp, open(tmp, "w", newline="") as fh:
            self.results.to_csv(fh, index=False)

    def to_text(self, digits: int = 3) -> str:
        """Human tables: one ASR table per profile, then the optimizer run times."""
        blocks = []
        for prof in self.profiles:
            wide = self.table(prof)
            blocks.append(f"ASR (vertex-shader invocations per triangle), profile {prof}\n"
                          + _format(wide, digits, best=True))
        blocks.append("optimizer run time [s]\n" + _format(self.time_table(), digits, best=False))
        return "\n\n".join(blocks)


def _format(wide: pd.DataFrame, digits: int, best: bool) -> str:
    """Plain-text table; with ``best`` the lowest value of each row (not counting the original
    order and the ideal) is marked with ``*``."""
    cols = list(wide.columns)
    header = ["mesh"] + cols
    rows = []
    for mesh, row in wide.iterrows():
        cand = [c for c in cols if c not in ("original", "perfect") and not pd.isna(row[c])]
        low = min((row[c] for c in cand), default=None)
        cells = [str(mesh)]
        for c in cols:
            v = row[c]
            if pd.isna(v):
                cells.append("-")
            else:
                text = f"{v:.{digits}f}"
                if best and low is not None and c in cand and v == low:
                    text += "*"
                cells.append(text)
        rows.append(cells)
    widths = [max(len(header[i]), *(len(r[i]) for r in rows)) if rows else len(header[i])
              for i in range(len(header))]
    lines = ["  ".join(h.ljust(widths[0]) if i == 0 else h.rjust(widths[i]) for i, h in enumerate(header))]
    for r in rows:
        lines.append("  ".join(c.ljust(widths[0]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(r)))
    return "\n".join(lines)


def _warm_up(name: str, params: dict, profile, tris: np.ndarray, vcount: int) -> None:
    """Compile the method's numba kernels for this index type so timings exclude the JIT."""
    small = tris[: min(len(tris), 64)]
    if len(small):
        optimize(small, vcount, method=name, profile=profile, **params)


def compare(meshes, methods: Sequence[str] | None = None, profiles: Sequence[str] | None = None, *,
            warm_up: bool = True, progress=None) -> CompareResult:
    """Optimize each mesh with each method and evaluate every result on every profile.

    Parameters
    ----------
    meshes : iterable
        Mesh file paths (any format :func:`meshopt_batch.io.load_meshes` reads), Mesh objects,
        lists of Mesh (one file's primitives) or ``(name, triangles)`` pairs.
    methods : list of str, optional
        Method specs (``"tipsify:14"``...); default :func:`default_methods`.  ``original`` is
        always evaluated (it is the baseline column) even when not listed.
    profiles : list of str, optional
        Profiles to evaluate on, ``portable`` standing for its five (default: ``nvidia_gl``,
        ``amd``, ``intel``, and
        ``nvidia_gl+16bit`` when an index buffer addresses more than 2^16 vertices).
    warm_up : bool
        Run each method once on a few triangles first so numba compile time is not timed.
    progress : callable, optional
        Called with a short message before each optimizer run (e.g. ``print`` to stderr).

    Returns
    -------
    CompareResult
    """
    specs = list(methods) if methods else default_methods()
    parsed = []
    seen = set()
    for spec in specs:
        for part in str(spec).split(","):
            if not part.strip():
                continue
            label, name, params = parse_method(part)
            if label in seen:
                continue
            seen.add(label)
            parsed.append((label, name, params))
    if _ORIGINAL not in seen:
        parsed.insert(0, (_ORIGINAL, _ORIGINAL, {}))
    for label, name, _ in parsed:
        info = get_method(name)
        if info.requires is not None and name not in available_methods():
            raise MeshoptBatchError(f"method {label!r} needs the optional package {info.requires!r} "
                                    "(pip install 'meshopt-batch[compare]')")
    prof_objs = list(get_target(list(profiles)).profiles) if profiles else [get_profile(p) for p in DEFAULT_PROFILES]
    prof_names = [p.name for p in prof_objs]
    if len(set(prof_names)) != len(prof_names):
        raise MeshoptBatchError("a profile is listed twice")
    items = mesh_items(meshes)
    if not items:
        raise MeshoptBatchError("no meshes to compare")
    if not profiles and any(vcount > (1 << 16) for item in items for _, vcount in item.buffers):
        prof_objs.append(get_profile("nvidia_gl+16bit"))   # NVIDIA's 2^16 block rule (measured on an H100)

    rows = []
    times = []
    warmed = set()
    for item in items:
        tri_total = sum(len(t) for t, _ in item.buffers)
        ref_total = sum(_referenced(t) for t, _ in item.buffers)
        perfect = ref_total / tri_total if tri_total else 0.0
        for label, name, params in parsed:
            info = METHODS[name]
            targets = prof_objs if info.uses_profile else [None]
            for target in targets:
                if progress is not None:
                    progress(f"{item.name}: {label}" + (f" for {target.name}" if target is not None else ""))
                outputs = []
                seconds = 0.0
                for tris, vcount in item.buffers:
                    key = (label, tris.dtype.str, target.name if target is not None else "")
                    if warm_up and name != _ORIGINAL and key not in warmed:
                        _warm_up(name, params, target, tris, vcount)
                        warmed.add(key)
                    t0 = time.perf_counter()
                    res = optimize(tris, vcount, method=name, profile=target, **params)
                    seconds += time.perf_counter() - t0
                    out = np.asarray(res.triangles)
                    if out.shape != tris.shape:
                        raise MeshoptBatchError(f"{label} changed the triangle count of {item.name}")
                    n_vert = len(res.vertex_remap) if res.vertex_remap is not None else vcount
                    outputs.append((out, max(n_vert, vcount)))
                if name == _ORIGINAL:
                    seconds = 0.0
                times.append({"mesh": item.name, "method": label,
                              "profile": target.name if target is not None else "", "seconds": seconds})
                evaluate = [target] if target is not None else prof_objs
                for prof in evaluate:
                    inv = bat = verts = 0
                    for out, n_vert in outputs:
                        pred = predict(out, profile=prof, vertex_count=n_vert)
                        inv += pred.invocations
                        bat += pred.batches
                        verts += pred.vertices
                    asr = inv / tri_total if tri_total else 0.0
                    rows.append({
                        "mesh": item.name, "profile": prof.name, "method": label, "asr": asr,
                        "invocations": inv, "triangles": tri_total, "vertices": verts, "batches": bat,
                        "acmr": asr, "atvr": inv / verts if verts else 0.0, "perfect_asr": perfect,
                        "seconds": seconds,
                    })
    results = pd.DataFrame(rows, columns=["mesh", "profile", "method", "asr", "invocations", "triangles",
                                          "vertices", "batches", "acmr", "atvr", "perfect_asr", "seconds"])
    times_df = pd.DataFrame(times, columns=["mesh", "method", "profile", "seconds"])
    return CompareResult(results, times_df, [p[0] for p in parsed], prof_names, [it.name for it in items])
