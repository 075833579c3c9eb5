"""The "one order shipped to every GPU" table that opens report section 1.

The numbers are :func:`meshopt_batch.evaluation.shipped_orders.compare_shipped`'s, the function ``meshopt-batch
compare --shipped`` prints: for each order ``optimize`` writes (for each single profile, for the
``portable`` target) and the classic ones, its invocations on every GPU profile relative to
meshoptimizer's order (what gltfpack writes), geometric mean over the meshes, with the worst
case over profiles and meshes.
"""

from __future__ import annotations

import time

import pandas as pd

from meshopt_batch.evaluation.shipped_orders import REFERENCE, ShippedResult, compare_shipped

from .document import Best, Table

__all__ = ["run_shipped", "shipped_paragraph", "shipped_table"]

TARGET = "portable"


def run_shipped(meshes, scope, progress=None) -> dict:
    """:func:`compare_shipped` on the scope's meshes up to ``scope.shipped_max_triangles``."""
    t0 = time.perf_counter()
    cap = scope.shipped_max_triangles
    picked = [m for m in meshes if cap is None or m.mesh.triangle_count <= cap]
    left_out = [m for m in meshes if m not in picked]
    if not picked:
        return {"available": False, "reason": "no mesh within this scope's size limit", "meshes": [],
                "left_out": left_out, "seconds": time.perf_counter() - t0}
    bar = progress(len(picked), "shipped") if progress else None
    seen = set()

    def tick(msg):
        if bar is not None:
            bar.set_postfix_str(msg)
            mesh = msg.split(":", 1)[0]
            if mesh not in seen:
                seen.add(mesh)
                bar.update(1)

    result = compare_shipped([m.path for m in picked], target=TARGET, progress=tick)
    if bar is not None:
        bar.close()
    return {"available": True, "result": result, "meshes": picked, "left_out": left_out,
            "seconds": time.perf_counter() - t0}


def shipped_frame(result: ShippedResult) -> pd.DataFrame:
    """The all-mesh table with its orders as the first column."""
    wide = result.table().reset_index()
    wide = wide.rename(columns={wide.columns[0]: "order"})
    wide.columns.name = None
    return wide


def shipped_table(data: dict) -> Table:
    result = data["result"]
    return Table(f"One order shipped to every GPU: invocations relative to {REFERENCE}'s order "
                 f"(geometric mean over {len(result.meshes)} meshes)", shipped_frame(result),
                 floatfmt="{:.3f}", best=Best("column", among=tuple(c for c in shipped_frame(result).columns[1:])))


def shipped_paragraph(data: dict) -> str:
    result = data["result"]
    text = (f"Each row is the order `meshopt-batch optimize` writes (`batch@P`: optimized for profile P alone; "
            f"`batch@{result.target.name}`: for all of {', '.join(result.profiles)} at once) or a classic "
            f"optimizer's, each kept only where it is not worse than the input on every profile, on "
            f"{', '.join(result.meshes)}. A cell is the order's vertex-shader invocations on that GPU "
            f"divided by those of {REFERENCE}'s order with vertices numbered by first use (what gltfpack "
            "writes), geometric mean over the meshes: below 1 is less work. 'worst' is the largest "
            "ratio over every profile and mesh, 'mean' the mean over profiles, 'codec' the index "
            "buffer's size under meshoptimizer's index codec relative to the reference's and "
            "'codec_bits' its bits per triangle. The best of each column is bold. Buffers over 2^16 "
            "vertices are judged with NVIDIA's 2^16 rule.")
    if data["left_out"]:
        text += (" Left out for time: " + ", ".join(f"{m.name} ({m.mesh.triangle_count:,} triangles)"
                                                    for m in data["left_out"])
                 + f"; `meshopt-batch compare --shipped {' '.join(m.shown for m in data['left_out'])}` "
                 "gives their rows.")
    return text
