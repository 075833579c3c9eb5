"""Report section 8: meshlets for mesh-shader GPUs (``meshopt-batch compare --meshlets``).

The numbers come from :func:`meshopt_batch.meshlets.meshlet_comparison.compare_meshlets`, the function
``compare --meshlets`` prints; this section lays them out (one table per limit pair) and draws
one mesh coloured by meshlet, our builder beside meshoptimizer's (or the greedy baseline when
``almeshopt`` is absent).
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
from matplotlib.collections import PolyCollection

from meshopt_batch.meshlets import analyze_meshlets, build_meshlets
from meshopt_batch.meshlets.meshlet_comparison import COMPARE_BUILDERS, compare_meshlets
from meshopt_batch.meshlets.meshoptimizer_meshlets import MISSING_REASON
from meshopt_batch.meshlets.meshoptimizer_meshlets import available as peer_available

from .document import Best, Figure, Section, Table
from .figures import batch_colours, new_figure

#: The report's limit pairs: NVIDIA's recommendation and AMD's equal limits.
REPORT_LIMITS = ((64, 126), (64, 64))
#: Meshes above this are left out of the section (time), with a note.
MAX_TRIANGLES = 400_000

_COLUMNS = {"builder": "builder", "meshlets": "meshlets", "vertices_per_triangle": "vert/tri",
            "vertex_fill": "v-fill", "triangle_fill": "t-fill", "vertex_duplication": "dup",
            "cone_culled": "cone", "cone_culled_meshlets": "cone#", "frustum_culled": "frustum",
            "lane_occupancy": "lanes", "seconds": "seconds"}


#: Best cells of the meshlet tables, per mesh: the least work, the fullest and most culled meshlets.
MESHLET_BEST = (
    Best("column", among=("meshlets", "vert/tri", "dup", "seconds"), group="mesh"),
    Best("column", among=("v-fill", "t-fill", "cone", "cone#", "frustum", "lanes"), group="mesh", lower=False),
)


def run_meshlets(meshes, progress=None) -> dict:
    """Every builder on every report mesh (up to :data:`MAX_TRIANGLES`) at :data:`REPORT_LIMITS`."""
    t0 = time.perf_counter()
    picked = {m.name: [m.mesh] for m in meshes if m.mesh.triangle_count <= MAX_TRIANGLES}
    left_out = [m.name for m in meshes if m.mesh.triangle_count > MAX_TRIANGLES]
    bar = progress(len(picked) * len(REPORT_LIMITS) * len(COMPARE_BUILDERS), "meshlets") if progress else None

    def tick(msg):
        if bar is not None:
            bar.set_postfix_str(msg)
            bar.update(1)

    rows = compare_meshlets(picked, limits=REPORT_LIMITS, progress=tick)
    if bar is not None:
        bar.close()
    return {"rows": rows, "left_out": left_out, "seconds": time.perf_counter() - t0}


def meshlet_section(data: dict, meshes) -> Section:
    sec = Section("meshlets", "8. Meshlets for mesh-shader GPUs (compare --meshlets)")
    names = [m for m in meshes if m.name not in data["left_out"]]
    sec.commands = [f"meshopt-batch compare {' '.join(m.shown for m in names)} --meshlets"]
    sec.paragraphs.append(
        "A mesh shader draws meshlets of at most V vertices and T triangles: paper 001's batch made "
        "explicit. 'batch' grows them with Algorithm 2's priorities (vertex reuse, valence, face "
        "distance, batch neighbourhood; the limits as the batch boundary), 'cone 0.25' adds the "
        "normal-cone weight, 'greedy' cuts the index buffer in its order, and 'meshoptimizer' is "
        "meshoptimizer's buildMeshlets. vert/tri is the mesh shader's vertex work (meshlet vertex "
        "counts summed, per triangle); cone and frustum are the fractions of meshlets culled, averaged "
        "over 64 seeded random views; cone# is meshlets culled by cone per view; lanes is the "
        "occupancy of one meshlet per workgroup of max(V, T) lanes. The tables are what "
        "`meshopt-batch compare --meshlets` prints (it also covers 128/128 and 64/96).")
    if data["left_out"]:
        sec.paragraphs.append(f"Left out for time (over {MAX_TRIANGLES:,} triangles): "
                              f"{', '.join(data['left_out'])}.")
    frame = pd.DataFrame([r for r in data["rows"] if "skipped" not in r])
    skipped = sorted({r["builder"] for r in data["rows"] if "skipped" in r})
    if skipped:
        sec.paragraphs.append(f"Skipped: {', '.join(skipped)} ({MISSING_REASON}).")
    for v, t in REPORT_LIMITS:
        part = frame[frame["limits"] == f"{v}/{t}"] if len(frame) else frame
        if not len(part):
            continue
        table = part[["mesh", *_COLUMNS]].rename(columns=_COLUMNS)
        sec.tables.append(Table(f"Meshlets at {v}/{t} (the best builder of each mesh bold per column)",
                                table.reset_index(drop=True), floatfmt="{:.4f}", best=MESHLET_BEST))
    if len(frame) and peer_available():
        sec.paragraphs.append(_verdict(frame))
    _meshlet_picture(sec, meshes)
    return sec


def _verdict(frame: pd.DataFrame) -> str:
    """Issue 19's bar in words, from the table's own rows."""
    notes = []
    for (mesh, limits), part in frame.groupby(["mesh", "limits"], sort=False):
        rows = part.set_index("builder")
        ours, peer = rows.loc["batch"], rows.loc["meshoptimizer"]
        cone_ours, cone_peer = rows.loc["batch cone 0.25"], rows.loc["meshoptimizer cone 0.25"]
        notes.append(f"{mesh} {limits}: vert/tri {ours['vertices_per_triangle']:.4f} vs "
                     f"{peer['vertices_per_triangle']:.4f}, meshlets {ours['meshlets']} vs {peer['meshlets']}, "
                     f"cone# {cone_ours['cone_culled_meshlets']:.1f} vs {cone_peer['cone_culled_meshlets']:.1f}")
    return "Ours against meshoptimizer (cone# at cone weight 0.25 each): " + "; ".join(notes) + "."


def _plot_meshlets(ax, positions, triangles, meshlet_of_triangle, title, elev=10, azim=0):
    """Painter's-algorithm projection with Lambert shading, each triangle coloured by meshlet."""
    pos = np.asarray(positions, np.float64)
    pos = pos - pos.mean(axis=0)
    a, e = np.radians(azim), np.radians(elev)
    rot_y = np.array([[np.cos(a), 0, np.sin(a)], [0, 1, 0], [-np.sin(a), 0, np.cos(a)]])
    rot_x = np.array([[1, 0, 0], [0, np.cos(e), -np.sin(e)], [0, np.sin(e), np.cos(e)]])
    corners = (pos @ (rot_x @ rot_y).T)[np.asarray(triangles, np.int64)]
    normals = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    lengths = np.linalg.norm(normals, axis=1)
    lengths[lengths == 0] = 1.0
    facing = normals[:, 2] / lengths
    keep = facing > 0
    colours = batch_colours(meshlet_of_triangle)[keep] * (0.35 + 0.65 * facing[keep])[:, None]
    order = np.argsort(corners[keep, :, 2].mean(axis=1))
    ax.add_collection(PolyCollection(corners[keep][order][:, :, :2], facecolors=np.clip(colours[order], 0, 1),
                                     edgecolors="none"))
    flat = corners.reshape(-1, 3)
    ax.set_xlim(flat[:, 0].min(), flat[:, 0].max())
    ax.set_ylim(flat[:, 1].min(), flat[:, 1].max())
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(title, fontsize=10)


def _meshlet_picture(sec, meshes):
    """The bunny (or the largest mesh) coloured by meshlet at 64/126: ours beside the peer."""
    pick = next((m for m in meshes if m.name == "bunny"), None) or max(meshes, key=lambda m: m.mesh.triangle_count)
    mesh = pick.mesh
    other = "meshoptimizer" if peer_available() else "greedy"
    fig, axes = new_figure(1, 2, 10, 5)
    words = []
    for ax, method in zip(axes, ("batch", other), strict=True):
        res = build_meshlets(mesh.triangles, mesh.positions, max_vertices=64, max_triangles=126, method=method)
        a = analyze_meshlets(res, mesh.positions)
        _plot_meshlets(ax, mesh.positions, res.triangles(), res.meshlet_of_triangle(),
                       f"{pick.name}, {method}: {a.meshlets} meshlets")
        words.append(f"{method} {a.meshlets:,} meshlets, {a.vertices_per_triangle:.4f} vertices per triangle")
    sec.figures.append(Figure(
        "mesh_meshlets", fig,
        f"{pick.name} ({mesh.triangle_count:,} triangles) coloured by meshlet at 64 vertices / 126 "
        f"triangles: {'; '.join(words)}. Round meshlets hold more triangles for their 64 vertices."))
