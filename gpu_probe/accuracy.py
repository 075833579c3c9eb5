"""Predicted versus measured ASR per profile (paper 001 sec. 3.4, Fig. 2).

:func:`accuracy_table` measures every draw of a set of meshes in several triangle orders on
this machine's GPU (or any counter of :mod:`gpu_probe.counters`) once,
predicts the same draws with every profile (the built-in batch
profiles and global ``fifo:N`` / ``lru:N`` caches of many sizes) and returns one row per
(draw, order, profile). :func:`mse_table` reduces it to the mean squared error of the ASR
per profile, and :func:`plot_accuracy` draws Fig. 2: MSE against cache size for the FIFO
and LRU caches, with the batch profiles as horizontal lines.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd

from meshopt_batch.model.prediction import predict
from meshopt_batch.model.profiles import builtin_profile_names, get_profile
from meshopt_batch.support.files import atomic_path

from .corpus import ORDERS, load_draws, ordered, shared_mesh_paths
from .counters import gl_counter

CACHE_SIZES = (4, 6, 8, 10, 12, 14, 16, 20, 24, 32, 48, 64, 96, 128, 256)


def default_profiles(cache_sizes=CACHE_SIZES) -> list[str]:
    """Built-in batch profiles, ``nvidia_gl+16bit`` (the 2^16 block rule) and ``fifo:N`` and
    ``lru:N`` for every size."""
    return (builtin_profile_names() + ["nvidia_gl+16bit"] + [f"fifo:{n}" for n in cache_sizes]
            + [f"lru:{n}" for n in cache_sizes])


def accuracy_table(meshes=None, orders=ORDERS, profiles=None, seed: int = 0,
                   max_triangles: int | None = 200_000, progress=None, counter=None):
    """Measured and predicted ASR for every (draw, order, profile).

    Parameters
    ----------
    meshes : iterable of paths, optional
        Default: the shared test meshes (:func:`gpu_probe.corpus.shared_mesh_paths`) with at
        most ``max_triangles`` triangles.
    orders : iterable of str
        Triangle orders (``original``, ``shuffled``, ``optimized``).
    profiles : iterable of str, optional
        Default: :func:`default_profiles`.
    seed : int
        Seed of the ``shuffled`` order.
    max_triangles : int or None
        The largest shared mesh taken by default (None: every one).
    progress : callable, optional
        Called with a short text (draw and order) before each measurement.
    counter : counter, optional
        Where the measured counts come from (:mod:`gpu_probe.counters`); default this
        machine's GPU through OpenGL.

    Returns
    -------
    pandas.DataFrame
        Columns ``mesh, draw, order, triangles, renderer, measured, measured_asr, profile,
        kind, cache_size, predicted, predicted_asr, error_asr, sq_error``.
    """
    if meshes is None:
        meshes = shared_mesh_paths(max_triangles=max_triangles)
    profiles = list(profiles) if profiles is not None else default_profiles()
    profs = [get_profile(p) for p in profiles]
    counter = gl_counter() if counter is None else counter
    renderer = counter.info["renderer"]
    rows = []
    for path in meshes:
        for draw in load_draws(path):
            for order in orders:
                tri = ordered(draw, order, seed)
                if progress:
                    progress(f"{draw.name} {order}")
                m = counter.measure(tri, draw.vertex_count, draw.index_dtype, per_vertex=False)
                for spec, prof in zip(profiles, profs, strict=True):
                    p = predict(tri, draw.vertex_count, profile=prof).invocations
                    kind = spec.split(":")[0] if ":" in spec else "batch"
                    size = int(spec.split(":")[1]) if ":" in spec else None
                    rows.append({
                        "mesh": Path(path).name, "draw": draw.name, "order": order,
                        "triangles": draw.triangle_count, "renderer": renderer,
                        "measured": m.invocations, "measured_asr": m.asr,
                        "profile": prof.name, "kind": kind, "cache_size": size,
                        "predicted": int(p), "predicted_asr": p / max(draw.triangle_count, 1),
                    })
    df = pd.DataFrame(rows)
    if len(df):
        df["error_asr"] = df["predicted_asr"] - df["measured_asr"]
        df["sq_error"] = df["error_asr"] ** 2
    return df


def mse_table(df):
    """MSE of the ASR per profile (mean over draws and orders), best first.

    Parameters
    ----------
    df : pandas.DataFrame
        The rows of :func:`accuracy_table`.

    Returns
    -------
    pandas.DataFrame
        Index ``profile``; columns ``kind, cache_size, mse, max_abs_error, exact_cases,
        cases``.
    """
    g = df.groupby("profile", sort=False)
    out = g.agg(kind=("kind", "first"), cache_size=("cache_size", "first"),
                mse=("sq_error", "mean"),
                max_abs_error=("error_asr", lambda s: float(np.abs(s).max())),
                exact_cases=("error_asr", lambda s: int((s == 0).sum())),
                cases=("error_asr", "size"))
    return out.sort_values("mse")


def mse_by_order(df):
    """MSE of the ASR per profile and order (rows profiles, columns orders)."""
    return df.pivot_table(index="profile", columns="order", values="sq_error", aggfunc="mean")


def plot_accuracy(df, path, title: str | None = None) -> Path:
    """Fig. 2 of paper 001: MSE of predicted ASR vs cache size, batch profiles as lines.

    Parameters
    ----------
    df : pandas.DataFrame
        The rows of :func:`accuracy_table`.
    path : str or Path
        The PNG to write (atomically; its folder is made).
    title : str, optional
        The plot's title (default: names the renderer).

    Returns
    -------
    pathlib.Path
        The file written.

    References
    ----------
    .. [1] B. Kerbl, M. Kenzel, E. Ivanchenko, D. Schmalstieg, M. Steinberger, "Revisiting the
       Vertex Cache: Understanding and Optimizing Vertex Processing on the modern GPU",
       Proc. ACM Comput. Graph. Interact. Tech. 1(2), 2018 (paper 001), Fig. 2.
    """
    import matplotlib  # lazy: plotting libraries load only when a plot is drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: as above

    mse = mse_table(df)
    floor = 1e-6                       # an exact profile (MSE 0) is drawn at the floor
    fig, ax = plt.subplots(figsize=(7.5, 4.5), dpi=120)
    for kind, style in (("fifo", "o-"), ("lru", "s-")):
        part = mse[mse["kind"] == kind].sort_values("cache_size")
        if len(part):
            ax.plot(part["cache_size"], np.maximum(part["mse"], floor), style,
                    label=f"global {kind.upper()} cache", ms=4)
    batch = mse[mse["kind"] == "batch"]
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (name, row) in enumerate(batch.iterrows()):
        val = max(row["mse"], floor)
        lab = f"{name} (batch model)"
        if row["mse"] == 0:
            lab += " - exact, MSE 0 drawn at 1e-6"
        ax.axhline(val, ls="--", lw=1.2, color=colours[(i + 2) % len(colours)], label=lab)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("cache size (entries)")
    ax.set_ylabel("MSE of predicted ASR")
    renderer = df["renderer"].iloc[0] if len(df) else ""
    ax.set_title(title or f"Prediction error vs measured ASR on {renderer}", fontsize=9)
    ax.legend(fontsize=7, loc="best")
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png")
    plt.close(fig)
    return path


def run_accuracy(out_dir=None, **kw):
    """Table + MSE summary (+ PNG in ``out_dir``); returns ``(df, mse, seconds)``."""
    t0 = time.perf_counter()
    df = accuracy_table(**kw)
    mse = mse_table(df)
    if out_dir is not None:
        plot_accuracy(df, Path(out_dir) / "accuracy.png")
    return df, mse, time.perf_counter() - t0
