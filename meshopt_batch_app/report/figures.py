"""Plots shared by the report sections (matplotlib, Agg backend)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.collections import PolyCollection  # noqa: E402

from meshopt_batch.model.prediction import predict  # noqa: E402


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
    pred = predict(tris, profile=profile, vertex_count=len(positions), return_batches=True)
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


# ------------------------------------------------------------------ generic report plots
def new_figure(nrows=1, ncols=1, width=7.5, height=3.6, **kw):
    """A figure with ``nrows x ncols`` axes (always a flat list)."""
    kw.setdefault("layout", "constrained")
    fig, axes = plt.subplots(nrows, ncols, figsize=(width, height), squeeze=False, **kw)
    return fig, list(axes.ravel())


def grouped_bars(ax, frame, value, group, hue, groups=None, hues=None, fmt="{:.2f}", label_bars=False,
                 reference=None, reference_label=None):
    """Bars of ``frame[value]`` with one cluster per ``group`` and one colour per ``hue``.

    ``reference`` draws a horizontal dashed line (e.g. a published figure).
    """
    groups = list(dict.fromkeys(frame[group])) if groups is None else list(groups)
    hues = list(dict.fromkeys(frame[hue])) if hues is None else list(hues)
    width = 0.8 / max(len(hues), 1)
    lookup = {(g, h): v for g, h, v in zip(frame[group], frame[hue], frame[value], strict=True)}
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for j, h in enumerate(hues):
        xs, ys = [], []
        for i, g in enumerate(groups):
            v = lookup.get((g, h))
            if v is None or not np.isfinite(v):
                continue
            xs.append(i - 0.4 + width * (j + 0.5))
            ys.append(v)
        bars = ax.bar(xs, ys, width=width * 0.95, label=str(h), color=colours[j % len(colours)])
        if label_bars:
            for b, v in zip(bars, ys, strict=True):
                ax.annotate(fmt.format(v), (b.get_x() + b.get_width() / 2, b.get_height()),
                            ha="center", va="bottom", fontsize=6, rotation=90)
    if reference is not None:
        ax.axhline(reference, ls="--", lw=1, color="k", label=reference_label)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([str(g) for g in groups], rotation=30, ha="right", fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    return ax


def tile_overlay(ax, image, values, tiles_x, tiles_y, tile, cmap, vmin=None, vmax=None, alpha=0.65,
                 title=None, colorbar_label=None, ticks=None, ticklabels=None):
    """A rendered frame (drawn in grey) with a per-tile value map blended over it (NaN tiles
    stay clear, so the frame shows through)."""
    img = np.asarray(image)
    h, w = img.shape[:2]
    grid = np.asarray(values, dtype=np.float64).reshape(tiles_y, tiles_x)
    full = np.kron(grid, np.ones((tile, tile)))[:h, :w]
    luma = img[..., :3].astype(np.float64) @ np.array([0.299, 0.587, 0.114]) if img.ndim == 3 else img
    ax.imshow(luma, cmap="gray", vmin=0, vmax=255 * 1.3, interpolation="nearest")
    masked = np.ma.masked_invalid(full)
    im = ax.imshow(masked, cmap=cmap, vmin=vmin, vmax=vmax, alpha=alpha, interpolation="nearest")
    ax.set_xticks([])
    ax.set_yticks([])
    if title:
        ax.set_title(title, fontsize=9)
    cb = ax.figure.colorbar(im, ax=ax, fraction=0.035, pad=0.02, ticks=ticks)
    if ticklabels is not None:
        cb.ax.set_yticklabels(ticklabels)
    if colorbar_label:
        cb.set_label(colorbar_label, fontsize=8)
    return ax


def close(fig):
    """Release a figure once it has been written."""
    plt.close(fig)
