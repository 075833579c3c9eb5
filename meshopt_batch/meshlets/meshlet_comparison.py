"""Meshlet builders side by side: the figures of :mod:`.analysis` per mesh, limits and builder.

This is what ``meshopt-batch compare --meshlets`` prints, the report's meshlet section shows
and ``benchmarks/bench_meshlets.py`` times.  A mesh with several index buffers (glTF
primitives) is built primitive by primitive and its figures combined
(:func:`~.analysis.combine_analyses`).  The peer (``meshoptimizer``) is skipped, with the
reason, when ``almeshopt`` is not installed.
"""

from __future__ import annotations

import time

from .analysis import DEFAULT_SEED, DEFAULT_VIEWS, MeshletAnalysis, analyze_meshlets, combine_analyses
from .meshlet_build import build_meshlets
from .meshoptimizer_meshlets import MISSING_REASON
from .meshoptimizer_meshlets import available as peer_available

__all__ = ["COMPARE_LIMITS", "COMPARE_BUILDERS", "builder_label", "meshlet_figures", "compare_meshlets"]

#: NVIDIA's 64/126, AMD's equal limits 64/64 and 128/128, meshoptimizer's suggested 64/96.
COMPARE_LIMITS = ((64, 126), (64, 64), (128, 128), (64, 96))
#: (method, cone weight): ours with and without the cone weight, the baseline, the peer.
COMPARE_BUILDERS = (("batch", 0.0), ("batch", 0.25), ("greedy", 0.0), ("meshoptimizer", 0.0),
                    ("meshoptimizer", 0.25))


def builder_label(method: str, cone_weight: float) -> str:
    return f"{method} cone {cone_weight:g}" if cone_weight else method


def meshlet_figures(meshes, *, method: str, max_vertices: int, max_triangles: int,
                    cone_weight: float = 0.0, views: int = DEFAULT_VIEWS,
                    seed: int = DEFAULT_SEED) -> tuple[MeshletAnalysis, float, list]:
    """Build and analyse every mesh (primitive) of one draw list.

    Returns
    -------
    (combined figures, build seconds summed over the primitives, the MeshletResult of each)
    """
    parts, results, seconds = [], [], 0.0
    for mesh in meshes:
        t0 = time.perf_counter()
        res = build_meshlets(mesh.triangles, mesh.positions, max_vertices=max_vertices,
                             max_triangles=max_triangles, method=method, cone_weight=cone_weight)
        seconds += time.perf_counter() - t0
        results.append(res)
        parts.append(analyze_meshlets(res, mesh.positions, views=views, seed=seed))
    return combine_analyses(parts), seconds, results


def compare_meshlets(meshes_by_name: dict, *, limits=COMPARE_LIMITS, builders=COMPARE_BUILDERS,
                     views: int = DEFAULT_VIEWS, seed: int = DEFAULT_SEED, progress=None) -> list[dict]:
    """One row per mesh, limits and builder.

    Parameters
    ----------
    meshes_by_name : dict
        ``name -> list of Mesh`` (the primitives of one file).
    limits : sequence of (max_vertices, max_triangles)
    builders : sequence of (method, cone_weight)
    progress : callable, optional
        Called with a short message after each row.

    Returns
    -------
    list of dict
        ``mesh, limits, builder, method, cone_weight`` and either the figures of
        :class:`~.analysis.MeshletAnalysis` plus ``cone_culled_meshlets`` (cone-culled
        fraction times meshlets: how many a view culls on average) and ``seconds``, or
        ``skipped`` with the reason.
    """
    rows = []
    for name, meshes in meshes_by_name.items():
        for max_v, max_t in limits:
            for method, weight in builders:
                row = {"mesh": name, "limits": f"{max_v}/{max_t}", "builder": builder_label(method, weight),
                       "method": method, "cone_weight": float(weight)}
                if method == "meshoptimizer" and not peer_available():
                    rows.append({**row, "skipped": MISSING_REASON})
                    continue
                figures, seconds, _ = meshlet_figures(meshes, method=method, max_vertices=max_v,
                                                      max_triangles=max_t, cone_weight=weight,
                                                      views=views, seed=seed)
                rows.append({**row, **figures.to_dict(),
                             "cone_culled_meshlets": figures.cone_culled * figures.meshlets,
                             "seconds": seconds})
                if progress is not None:
                    progress(f"{name} {max_v}/{max_t} {row['builder']}")
    return rows
