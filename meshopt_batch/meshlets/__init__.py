"""Meshlets for mesh-shader GPUs: builders, culling bounds, validity and the figures that decide
mesh-shader cost.

A mesh shader draws a mesh as meshlets of at most ``V`` vertices and ``T`` triangles (NVIDIA
recommends 64/126; AMD prefers equal limits such as 64/64 or 128/128; meshoptimizer suggests
64/96).  A meshlet is paper 001's batch made explicit, so the batch optimizer's priorities
(Algorithm 2) build them here.

==================  ===============================================================
method              builder
==================  ===============================================================
``batch``           Algorithm 2's priorities, the limits as the batch boundary, an
                    optional normal-cone weight (:mod:`.batch`; default)
``greedy``          the index buffer cut in its order (:mod:`.greedy`; baseline)
``meshoptimizer``   meshoptimizer's ``buildMeshlets`` via the optional ``almeshopt``
                    package (:mod:`.meshoptimizer_meshlets`; the peer)
==================  ===============================================================

Flat API::

    result = build_meshlets(triangles, positions, max_vertices=64, max_triangles=126)
    bounds = meshlet_bounds(result, positions)
    figures = analyze_meshlets(result, positions)
    validate_meshlets(result, triangles)

The layout of :class:`MeshletResult` is meshoptimizer's (see :mod:`.meshlet_result`).
"""

from __future__ import annotations

from .analysis import MeshletAnalysis, analyze_meshlets, combine_analyses, random_views
from .bounds import MeshletBounds, cone_culled, frustum_culled, meshlet_bounds
from .meshlet_build import DEFAULT_METHOD, METHODS, available_methods, build_meshlets
from .meshlet_result import MeshletResult
from .validate import meshlet_problems, validate_meshlets

__all__ = [
    "DEFAULT_METHOD",
    "METHODS",
    "MeshletAnalysis",
    "MeshletBounds",
    "MeshletResult",
    "analyze_meshlets",
    "available_methods",
    "build_meshlets",
    "combine_analyses",
    "cone_culled",
    "frustum_culled",
    "meshlet_bounds",
    "meshlet_problems",
    "random_views",
    "validate_meshlets",
]
