"""Plots shared by the report sections (matplotlib, Agg backend)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.collections import PolyCollection  # noqa: E402

from ..reuse import predict  # noqa: E402


def batch_colours(batch_of_triangle: np.ndarray, seed: int = 7) -> np.ndarray:
    """A random but reproducible RGB colour per batch (paper 001 Fig. 3 style)."""
    rng = np.random.default_rng(seed)
    palette = rng.uniform(0.15, 0.95, size=(int(batch_of_triangle.max()) + 1, 3))
    return palette[batch_of_triangle]


def plot_mesh_batches(positions, triangles, profile="nvidia_gl", ax=None, title=None, elev=10, azim=0):
    """Draw a mesh with every triangle coloured by the batch the profile predicts for it.

    A painter's-algorithm projection (far triangles first) with Lambert shading; enough to see
    batch shapes as in paper 001 Fig. 3.
    """
    tris = np.asarray(triangles, dtype=np.int64)
    pred = predict(tris, profile, vertex_count=len(positions), return_batches=True)
    batch = np.zeros(len(tris), np.int64)
    batch[pred.batch_starts[1:]] = 1
    batch = np.cumsum(batch)
    pos = np.asarray(positions, dtype=np.float64)
    pos = pos - pos.mean(axis=0)
    a, e = np.radians(azim), np.radians(elev)
    rot_y = np.array([[np.cos(a), 0, np.sin(a)], [0, 1, 0], [-np.sin(a), 0, np.cos(a)]])
    rot_x = np.array([[1, 0, 0], [0, np.cos(e), -np.sin(e)], [0, np.sin(e), np.cos(e)]])
    view = pos @ (rot_x @ rot_y).T
    corners = view[tris]
    normals = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    lengths = np.linalg.norm(normals, axis=1)
    lengths[lengths == 0] = 1.0
    facing = normals[:, 2] / lengths
    keep = facing > 0
    shade = 0.35 + 0.65 * facing[keep]
    colours = batch_colours(batch)[keep] * shade[:, None]
    order = np.argsort(corners[keep, :, 2].mean(axis=1))
    polys = corners[keep][order][:, :, :2]
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 5))
    ax.add_collection(PolyCollection(polys, facecolors=np.clip(colours[order], 0, 1), edgecolors="none"))
    ax.set_xlim(view[:, 0].min(), view[:, 0].max())
    ax.set_ylim(view[:, 1].min(), view[:, 1].max())
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(title or f"{profile}: {pred.batches} batches, ASR {pred.asr:.3f}", fontsize=10)
    return ax, pred
