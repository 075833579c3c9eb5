"""One order shipped to every GPU: how the orders ``optimize`` writes fare on every profile.

An asset is optimized once and drawn on every GPU.  :func:`compare_shipped` writes, for each
mesh, the order ``meshopt-batch optimize`` would write for each single profile of a target
and for the target itself (``portable``), plus the classic optimizers and the input order,
and judges every one of them on every profile of the target, as a ratio to the order asset
pipelines ship today: meshoptimizer's ``optimize_vertex_cache`` with first-use vertex
numbering (what gltfpack writes).  A worst column says what the order costs on its least
favourable GPU; the index-codec columns (:mod:`meshopt_batch.vertices.index_codec`) what it costs
when shipped compressed.

Each order is written the way ``optimize`` writes a mesh (:func:`~meshopt_batch.vertices.vertex_set.
optimize_vertex_set` without welding, so every order keeps the input's vertices): the
method's order where it predicts fewer invocations than the input's, vertices renumbered in
first-use order where no index-keyed rule objects.  NVIDIA's profiles are judged with the
2^16 block rule where a buffer passes 2^16 vertices, as the hardware does
(:meth:`~meshopt_batch.model.targets.Target.evaluation_profiles`).

References
----------
Kerbl et al. 2018, Revisiting the Vertex Cache (paper 001), Algorithm 1 (the predictions).
Kapoulkine, meshoptimizer (``optimize_vertex_cache``, ``optimize_vertex_fetch``,
``encode_index_buffer``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..model.targets import Target, get_target
from ..optimizers import get_method
from ..optimizers.meshoptimizer_orders import optimize_vertex_cache
from ..support.errors import MeshoptBatchError
from ..support.files import atomic_path
from ..vertices.index_codec import codec_bits
from ..vertices.vertex_fetch import number_by_first_use
from ..vertices.vertex_set import SetOptions, judged, optimize_vertex_set
from .method_comparison import mesh_items

__all__ = ["REFERENCE", "ShippedResult", "compare_shipped", "default_orders"]

#: The order every ratio is taken against (what gltfpack ships).
REFERENCE = "meshoptimizer"
_CLASSIC = ("hoppe", "tipsify", "kcache", "forsyth")


def default_orders(target: Target) -> list[str]:
    """Row labels: the input, the reference, the batch order for each single profile of the
    target and for the target, then the classic optimizers."""
    singles = [f"batch@{p.name}" for p in target.ordered] if not target.single else []
    return ["input", REFERENCE] + singles + [f"batch@{target.name}"] + list(_CLASSIC)


def _reference_order(tris: np.ndarray, vertex_count: int) -> np.ndarray:
    """meshoptimizer's cache order, vertices numbered by first use (gltfpack's output)."""
    return number_by_first_use(optimize_vertex_cache(np.asarray(tris, np.int64), vertex_count), vertex_count)[0]


def _written(label: str, tris: np.ndarray, vertex_count: int, target: Target,
             target_params: dict | None = None) -> tuple[np.ndarray, int]:
    """The order ``optimize`` writes for ``label`` (no welding): (triangles, vertex count);
    ``target_params``: the method's options where it writes for several profiles."""
    if label == "input":
        return tris, vertex_count
    if label == REFERENCE:
        return _reference_order(tris, vertex_count), vertex_count
    name, _, aim = label.partition("@")
    method, aim_target = get_method(name), get_target(aim) if aim else target
    several = method.for_targets is not None and len(aim_target.profiles) > 1
    options = SetOptions(method, aim_target, dict(target_params or {}) if several else {})
    outcome = optimize_vertex_set(None, [tris], vertex_count, options)
    return outcome.buffers[0].triangles, outcome.vertices_after


@dataclass
class ShippedResult:
    """Outcome of :func:`compare_shipped`.

    Attributes
    ----------
    results : pandas.DataFrame
        Tidy, one row per (mesh, order, profile): ``invocations``, ``reference`` (the
        reference order's) and ``ratio``; profile ``codec`` rows hold raw index-codec bits per
        triangle in ``invocations``/``reference`` and ``codec_zlib`` after zlib.
    target : Target
    orders, meshes : list of str
    seconds : dict
        ``order -> seconds`` spent writing it, over all meshes.
    """

    results: pd.DataFrame
    target: Target
    orders: list
    meshes: list
    seconds: dict = field(default_factory=dict)

    @property
    def profiles(self) -> list[str]:
        return [p.name for p in self.target.profiles]

    def table(self, mesh: str | None = None) -> pd.DataFrame:
        """Rows orders, columns the target's profiles then ``worst``, ``mean``, ``codec`` (raw
        bits ratio) and ``codec_bits``: the ratio to the reference, for one mesh or (``None``)
        the geometric mean over every mesh (``worst``: the largest ratio of the row)."""
        df = self.results if mesh is None else self.results[self.results["mesh"] == mesh]
        if df.empty:
            raise MeshoptBatchError(f"no results for mesh {mesh!r}")
        ratios = df[df["profile"].isin(self.profiles)]
        wide = (np.log(ratios.set_index(["order", "profile", "mesh"])["ratio"])
                .groupby(level=["order", "profile"]).mean().unstack("profile"))
        wide = np.exp(wide)[self.profiles]
        per_mesh = ratios.groupby(["order", "mesh"])["ratio"].max().groupby(level="order").max()
        wide["worst"] = per_mesh
        wide["mean"] = wide[self.profiles].mean(axis=1)
        codec = df[df["profile"] == "codec"]
        wide["codec"] = np.exp(np.log(codec["ratio"]).groupby(codec["order"]).mean())
        wide["codec_bits"] = codec.groupby("order")["invocations"].mean()
        return wide.reindex([o for o in self.orders if o in wide.index])

    def to_text(self) -> str:
        """The all-mesh table, then one per mesh when there are several."""
        blocks = [_format(self.table(), f"ratio to {REFERENCE} (geometric mean over {len(self.meshes)} "
                          f"mesh(es)); worst: the largest ratio over profiles and meshes")]
        if len(self.meshes) > 1:
            for mesh in self.meshes:
                blocks.append(_format(self.table(mesh), f"{mesh}: ratio to {REFERENCE}"))
        blocks.append("seconds: " + ", ".join(f"{k} {v:.2f}" for k, v in self.seconds.items()))
        return "\n\n".join(blocks)

    def to_dict(self) -> dict:
        return {"target": self.target.to_dict(), "reference": REFERENCE, "orders": list(self.orders),
                "meshes": list(self.meshes), "profiles": self.profiles,
                "table": _records(self.table()),
                "per_mesh": {m: _records(self.table(m)) for m in self.meshes},
                "rows": self.results.to_dict(orient="records"), "seconds": self.seconds}

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    def to_csv(self, path) -> None:
        """Write the tidy table; the file appears complete or not at all."""
        with atomic_path(path) as tmp, open(tmp, "w", newline="") as fh:
            self.results.to_csv(fh, index=False)


def _records(wide: pd.DataFrame) -> list:
    return [{"order": order, **{k: (None if pd.isna(v) else float(v)) for k, v in row.items()}}
            for order, row in wide.iterrows()]


def _format(wide: pd.DataFrame, title: str) -> str:
    """A text table with the best value of each column marked ``*`` (lowest is best)."""
    cols = list(wide.columns)
    best = {c: wide[c].min() for c in cols}
    head = ["order"] + cols
    rows = [[str(order)] + [f"{row[c]:.3f}" + ("*" if np.isclose(row[c], best[c]) else " ") if c != "codec_bits"
                            else f"{row[c]:.2f}" for c in cols]
            for order, row in wide.iterrows()]
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    lines = [title, "  ".join(h.ljust(widths[0]) if i == 0 else h.rjust(widths[i]) for i, h in enumerate(head))]
    for r in rows:
        lines.append("  ".join(c.ljust(widths[0]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(r)))
    return "\n".join(lines)


def compare_shipped(meshes, *, target: str | Target = "portable", orders: Sequence[str] | None = None,
                    progress=None, target_params: dict | None = None) -> ShippedResult:
    """Write each mesh's orders and judge each on every profile of ``target`` (see the module
    docstring).

    Parameters
    ----------
    meshes : iterable
        Mesh file paths, Mesh objects or ``(name, triangles)`` pairs (as
        :func:`meshopt_batch.evaluation.method_comparison.compare`); a file's index buffers are summed.
    target : str or Target, keyword-only
        The profiles to judge on (default ``portable``).
    orders : list of str, optional
        Row labels (default :func:`default_orders`): ``input``, ``meshoptimizer``,
        ``batch@PROFILE``, ``batch@TARGET``, or any method name (written for ``target``).
    progress : callable, optional
        Called with a short message before each order is written.
    target_params : dict, keyword-only
        Options of the orders written for a target of several profiles (``batch@portable``),
        e.g. ``{"window_work": 40_000_000}`` (:func:`~meshopt_batch.optimizers.portable.
        optimize_for_target`).
    """
    target = get_target(target)
    labels = list(orders) if orders else default_orders(target)
    for label in labels:
        name, _, aim = label.partition("@")
        if name not in ("input", REFERENCE):
            get_method(name)
        if aim:
            get_target(aim)
    if REFERENCE not in labels:
        labels.insert(0, REFERENCE)
    items = mesh_items(meshes)
    rows, seconds = [], dict.fromkeys(labels, 0.0)
    for item in items:
        written = {}
        for label in labels:
            if progress is not None:
                progress(f"{item.name}: {label}")
            t0 = time.perf_counter()
            written[label] = [_written(label, np.asarray(t, np.int64).reshape(-1, 3), v, target, target_params)
                              for t, v in item.buffers]
            seconds[label] += time.perf_counter() - t0
        totals = {label: _judge_all(bufs, target) for label, bufs in written.items()}
        ref = totals[REFERENCE]
        for label in labels:
            for name, inv in totals[label].items():
                base = ref[name]
                rows.append({"mesh": item.name, "order": label, "profile": name, "invocations": inv,
                             "reference": base, "ratio": inv / base if base else 1.0})
    results = pd.DataFrame(rows, columns=["mesh", "order", "profile", "invocations", "reference", "ratio"])
    return ShippedResult(results, target, labels, [it.name for it in items], seconds)


def _judge_all(buffers: list, target: Target) -> dict:
    """Summed invocations per profile (by the target's profile names) and codec bits per
    triangle (``codec``: raw, ``codec_zlib``) of one mesh's written index buffers."""
    names = [p.name for p in target.profiles]
    out = dict.fromkeys(names, 0)
    raw = packed = 0.0
    tris = 0
    for t, v in buffers:
        for name, inv in zip(names, judged(t, v, target), strict=True):
            out[name] += inv
        bits = codec_bits(t, v)
        raw += bits.raw * bits.triangles
        packed += bits.zlib * bits.triangles
        tris += bits.triangles
    out["codec"] = raw / tris if tris else 0.0
    out["codec_zlib"] = packed / tris if tris else 0.0
    return out
