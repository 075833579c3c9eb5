"""Triangle-order optimizers: one registry, one entry point, one result type.

Every optimizer takes an index buffer and returns the same triangles in a new order (each
triangle keeps its corners in order, so winding and provoking vertex are unchanged):

==========================  ==========================================================
``original``                the input order (a copy)
``hoppe``                   Hoppe 1999, greedy strip growing with cache-aware restarts
``tipsify``                 Sander, Nehab & Barczak 2007 (Tipsify)
``kcache``                  Lin & Yu 2006 (K-Cache)
``forsyth``                 Forsyth 2006, linear-speed vertex cache optimisation (TomF)
``batch``                   paper 001's batch-based optimizer (Algorithm 2); may renumber
                            vertices or append copies (16-bit boundary fix)
``meshoptimizer``           ``meshoptimizer.optimize_vertex_cache`` (optional package)
``meshoptimizer_fifo``      ``meshoptimizer.optimize_vertex_cache_fifo(cache_size)``
``meshoptimizer_strip``     ``meshoptimizer.optimize_vertex_cache_strip``
``batch+overdraw``          ``batch``, then Sander et al. 2007's overdraw cluster sort
                            within a bound on the predicted invocations (:mod:`.overdraw_order`)
``tipsify+overdraw``        ``tipsify``, then the same cluster sort
``overdraw``                the cluster sort as a post-pass on the input order
``meshoptimizer_overdraw``  ``meshoptimizer.optimize_overdraw`` (threshold 1.05) on its
                            ``optimize_vertex_cache`` order
==========================  ==========================================================

:func:`optimize` runs any of them and returns an :class:`OptimizeResult`;
:func:`optimize_mesh` applies it to a :class:`~meshopt_batch.geometry.mesh_record.Mesh`.  A method's
module is imported on first use, so a missing optional package only matters to the method
that needs it.  A new optimizer is a module in this package plus one :func:`register` line.

Contract of a method's function: ``fn(triangles, vertex_count, **params)`` (``profile=`` too
when the method is registered with ``uses_profile=True``, ``positions=`` the ``(V, 3)`` vertex
positions when registered with ``uses_positions=True``) returns either the reordered
``(T, 3)`` index array or an :class:`OptimizeResult`.  A method that can optimize for a target
of several profiles (:mod:`meshopt_batch.model.targets`) names a second function,
``for_targets="module:function"``, called as ``fn(triangles, vertex_count, target=..., **params)``.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass

import numpy as np

from ..geometry.mesh_record import Mesh
from ..model.profiles import Profile
from ..model.targets import Target, get_target
from ..support.errors import MeshoptBatchError
from ._util import prepare
from .optimize_result import OptimizeResult

__all__ = [
    "CLASSIC_METHODS",
    "DEFAULT_METHOD",
    "METHODS",
    "Method",
    "OptimizeResult",
    "available_methods",
    "get_method",
    "optimize",
    "optimize_mesh",
    "register",
]

#: The method the library and the command line use when none is named.
DEFAULT_METHOD = "batch"
#: The target profile-aware methods optimize for when none is named (every GPU family).
DEFAULT_PROFILE = "portable"
#: The profile of a method that optimizes for one profile only, when none is named (paper 001's).
SINGLE_PROFILE_DEFAULT = "nvidia_gl"


@dataclass(frozen=True)
class Method:
    """One registered optimizer.

    Attributes
    ----------
    name : str
        Method name (``--method`` on the command line).
    target : str
        ``"package.module:function"`` implementing it, imported on first use.
    title : str
        Short human title (table headers).
    uses_profile : bool
        The function takes ``profile=`` (it optimizes for a GPU model).
    requires : str or None
        Optional package the method needs (``None``: always available).
    uses_positions : bool
        The function takes ``positions=`` (the order depends on the geometry, not only the
        connectivity).
    for_targets : str or None
        ``"package.module:function"`` optimizing for a target of several profiles
        (``target=``); ``None``: the method takes one profile.
    """

    name: str
    target: str
    title: str
    uses_profile: bool = False
    requires: str | None = None
    uses_positions: bool = False
    for_targets: str | None = None

    @property
    def default_profile(self) -> str:
        """What the method optimizes for when no profile is named.

        ``portable`` where it can take a target of several profiles, else ``nvidia_gl``.
        """
        return DEFAULT_PROFILE if self.for_targets else SINGLE_PROFILE_DEFAULT

    @property
    def available(self) -> bool:
        """The optional package it needs (if any) is installed."""
        return self.requires is None or _has_module(self.requires)

    def function(self, *, for_targets: bool = False):
        """The implementing function, imported now.

        Parameters
        ----------
        for_targets : bool, keyword-only
            The function for a target of several profiles instead of the one-profile one.

        Returns
        -------
        callable
            The function.

        Raises
        ------
        MeshoptBatchError
            The optional package the method needs is not installed.
        """
        if not self.available:
            raise MeshoptBatchError(
                f"method {self.name!r} needs the optional package {self.requires!r} "
                f"(pip install 'meshopt-batch[compare]')")
        module_name, _, func_name = (self.for_targets if for_targets else self.target).partition(":")
        return getattr(importlib.import_module(module_name), func_name)

    def run(self, triangles, vertex_count: int | None = None, *, profile: Profile | Target | None = None,
            positions=None, **params) -> OptimizeResult:
        """Run the method on an index buffer (:func:`optimize` resolves the names first).

        Parameters
        ----------
        triangles : (T, 3) integer array_like
            The index buffer.
        vertex_count : int, optional
            Vertex buffer size (default: the largest index + 1).
        profile : Profile or Target, keyword-only
            What a profile-aware method optimizes for (default: :attr:`default_profile`).
        positions : (V, 3) array_like, keyword-only
            Vertex positions, for the methods that need them.
        **params
            The method's own parameters.

        Returns
        -------
        OptimizeResult
            The new order (and vertex remap, where the method renumbers).

        Raises
        ------
        MeshoptBatchError
            A target of several profiles for a one-profile method, positions missing, or a
            result that is not a reordering of the input.
        """
        tris, vcount = prepare(triangles, vertex_count)
        fn = None
        if self.uses_profile:
            target = get_target(profile if profile is not None else self.default_profile)
            if target.single:
                params["profile"] = target.first
            elif self.for_targets is None:
                raise MeshoptBatchError(f"method {self.name!r} optimizes for one profile, not the target "
                                        f"{target.name!r}: name one with --profile/-p")
            else:
                params["target"] = target
                fn = self.function(for_targets=True)
        if self.uses_positions:
            if positions is None:
                raise MeshoptBatchError(f"method {self.name!r} needs the vertex positions "
                                        "(optimize_mesh, or optimize(..., positions=))")
            params["positions"] = positions
        out = (fn or self.function())(tris, vcount, **params)
        if isinstance(out, np.ndarray):
            result = OptimizeResult(out)
        elif isinstance(out, OptimizeResult):
            result = out
        else:
            raise TypeError(f"method {self.name!r} returned {type(out).__name__}: the method contract "
                            "is an index array or an OptimizeResult")
        return _checked(self.name, triangles, tris, vcount, result)


METHODS: dict[str, Method] = {}

#: The four classic optimizers of paper 001's Tables 1-2, in the tables' column order.
CLASSIC_METHODS = ("hoppe", "kcache", "tipsify", "forsyth")


def register(name: str, target: str, title: str | None = None, *, uses_profile: bool = False,
             requires: str | None = None, uses_positions: bool = False, for_targets: str | None = None) -> Method:
    """Register an optimizer by ``"module:function"`` (imported on first use).

    Parameters
    ----------
    name : str
        The method's name (``--method``); an existing one is replaced.
    target : str
        ``"package.module:function"`` implementing it (the contract is in the module docstring).
    title : str, optional
        Short human title for tables (default: ``name``).
    uses_profile : bool, keyword-only
        The function takes ``profile=``.
    requires : str, keyword-only, optional
        An optional package the method needs.
    uses_positions : bool, keyword-only
        The function takes ``positions=``.
    for_targets : str, keyword-only, optional
        ``"package.module:function"`` optimizing for a target of several profiles.

    Returns
    -------
    Method
        The registered method.
    """
    METHODS[name] = Method(name, target, title or name, uses_profile, requires, uses_positions, for_targets)
    return METHODS[name]


register("original", "meshopt_batch.optimizers.original:optimize_original", "Original")
register("hoppe", "meshopt_batch.optimizers.hoppe:optimize_hoppe", "Hoppe")
register("kcache", "meshopt_batch.optimizers.kcache:optimize_kcache", "K-Cache")
register("tipsify", "meshopt_batch.optimizers.tipsify:optimize_tipsify", "Tipsify")
register("forsyth", "meshopt_batch.optimizers.forsyth:optimize_forsyth", "TomF")
register("batch", "meshopt_batch.optimizers.batch:optimize_batch", "Batching", uses_profile=True,
         for_targets="meshopt_batch.optimizers.portable:optimize_for_target")
register("meshoptimizer", "meshopt_batch.optimizers.meshoptimizer_orders:optimize_vertex_cache",
         "meshopt", requires="meshoptimizer")
register("meshoptimizer_fifo", "meshopt_batch.optimizers.meshoptimizer_orders:optimize_vertex_cache_fifo",
         "meshopt-fifo", requires="meshoptimizer")
register("meshoptimizer_strip", "meshopt_batch.optimizers.meshoptimizer_orders:optimize_vertex_cache_strip",
         "meshopt-strip", requires="meshoptimizer")
register("batch+overdraw", "meshopt_batch.optimizers.overdraw_order:optimize_batch_overdraw", "Batching+overdraw",
         uses_profile=True, uses_positions=True)
register("tipsify+overdraw", "meshopt_batch.optimizers.overdraw_order:optimize_tipsify_overdraw", "Tipsify+overdraw",
         uses_profile=True, uses_positions=True)
register("overdraw", "meshopt_batch.optimizers.overdraw_order:optimize_overdraw_pass", "overdraw pass",
         uses_profile=True, uses_positions=True)
register("meshoptimizer_overdraw", "meshopt_batch.optimizers.meshoptimizer_orders:optimize_overdraw",
         "meshopt-overdraw", requires="meshoptimizer", uses_positions=True)


def get_method(method: str | Method) -> Method:
    """The registered method of a name.

    Parameters
    ----------
    method : str or Method
        A name from :data:`METHODS` (a Method is returned as it is).

    Returns
    -------
    Method
        The method.

    Raises
    ------
    MeshoptBatchError
        Unknown name (the message lists the known ones).
    """
    if isinstance(method, Method):
        return method
    try:
        return METHODS[method]
    except (KeyError, TypeError):
        raise MeshoptBatchError(
            f"unknown optimization method {method!r} (known: {', '.join(METHODS)})") from None


def _has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def available_methods(include_optional: bool = True) -> list[str]:
    """The registered methods that can run here.

    Parameters
    ----------
    include_optional : bool
        List the methods that need an optional package (when it is installed); False: only
        those that need none.

    Returns
    -------
    list of str
        Method names, in registration order.
    """
    return [name for name, m in METHODS.items()
            if m.requires is None or (include_optional and m.available)]


def _checked(name: str, original, tris: np.ndarray, vcount: int, result: OptimizeResult) -> OptimizeResult:
    """The result in the caller's integer type, with an identity remap dropped."""
    out = np.asarray(result.triangles).reshape(-1, 3)
    if out.shape[0] != tris.shape[0]:
        raise MeshoptBatchError(f"optimizer {name!r} returned {out.shape[0]} triangles for {tris.shape[0]}")
    dtype = np.asarray(original).dtype
    if np.issubdtype(dtype, np.integer) and out.dtype != dtype and (
            result.vertex_remap is None or len(result.vertex_remap) <= np.iinfo(dtype).max + 1):
        out = out.astype(dtype)
    remap = result.vertex_remap
    if remap is not None:
        remap = np.asarray(remap, np.int64)
        if len(remap) == vcount and np.array_equal(remap, np.arange(vcount)):
            remap = None
    return OptimizeResult(out, remap, result.batch_starts, dict(result.stats))


def optimize(triangles, vertex_count: int | None = None, *, method: str | Method = DEFAULT_METHOD,
             profile: str | Profile | Target | None = None, positions=None, **params) -> OptimizeResult:
    """Reorder an index buffer with one registered method.

    Parameters
    ----------
    triangles : (T, 3) integer array_like, trimesh.Trimesh or Mesh
        Index buffer, or a mesh (its faces and vertex count, and its positions for the methods
        that need them); ``result.apply(mesh)`` then gives the same kind of mesh back.
    vertex_count : int, optional
        Vertex buffer size (default: the mesh's, or the largest index + 1).
    method : str or Method, keyword-only
        A name from :data:`METHODS` (default ``batch``).
    profile : str, Profile or Target, keyword-only
        What profile-aware methods (``batch``) optimize for: a profile, or a target of several
        (:func:`meshopt_batch.model.targets.get_target`: ``"portable"``, ``"nvidia_gl,amd"``...);
        default: ``portable`` (``nvidia_gl`` for the methods that take one profile only, the
        overdraw variants).  The others ignore it.
    positions : (V, 3) array_like, keyword-only
        Vertex positions, for the methods that need them (``batch+overdraw``...); the others
        ignore them.
    **params
        Method parameters, e.g. ``cache_size`` for hoppe/tipsify/kcache/forsyth and
        ``meshoptimizer_fifo``, ``use_distance`` for batch.

    Returns
    -------
    OptimizeResult
        ``triangles`` in the input's integer type; ``vertex_remap`` when the vertex buffer changed.

    Raises
    ------
    MeshoptBatchError
        An unknown method or profile, or the method's own refusal of its input.

    References
    ----------
    .. [1] B. Kerbl, M. Kenzel, E. Ivanchenko, D. Schmalstieg, M. Steinberger, "Revisiting the
       Vertex Cache: Understanding and Optimizing Vertex Processing on the modern GPU",
       Proc. ACM Comput. Graph. Interact. Tech. 1(2), 2018 (paper 001), Algorithm 2.

    Examples
    --------
    >>> import trimesh
    >>> from meshopt_batch import optimize
    >>> mesh = trimesh.creation.icosphere(3)
    >>> result = optimize(mesh)                     # one order for every GPU family
    >>> shipped = result.apply(mesh)                # a new Trimesh, attributes renumbered
    """
    m = get_method(method)
    triangles, vertex_count, mesh_positions = _index_buffer_of(triangles, vertex_count)
    if positions is None:
        positions = mesh_positions
    target = get_target(profile if profile is not None else m.default_profile) if m.uses_profile else None
    return m.run(triangles, vertex_count, profile=target, positions=positions, **params)


def _index_buffer_of(data, vertex_count):
    """(triangles, vertex count, positions or None) of an index buffer, a Mesh or a Trimesh."""
    if isinstance(data, Mesh):
        return data.triangles, vertex_count or data.vertex_count, data.positions
    faces = getattr(data, "faces", None)
    vertices = getattr(data, "vertices", None)
    if faces is not None and vertices is not None and not isinstance(data, np.ndarray):
        return np.asarray(faces), vertex_count or len(vertices), np.asarray(vertices)
    return data, vertex_count, None


def optimize_mesh(mesh: Mesh, *, method: str | Method = DEFAULT_METHOD,
                  profile: str | Profile | Target | None = None, **params) -> Mesh:
    """A mesh with its triangles reordered by one registered method.

    Its vertex buffer is renumbered or grown where the method does so; every attribute
    follows its vertex.  See :func:`optimize`.

    Parameters
    ----------
    mesh : Mesh
        The mesh.
    method : str or Method, keyword-only
        A name from :data:`METHODS` (default ``batch``).
    profile : str, Profile or Target, keyword-only
        What profile-aware methods optimize for (default: the method's).
    **params
        Method parameters, as for :func:`optimize`.

    Returns
    -------
    Mesh
        The new mesh.
    """
    return optimize(mesh.triangles, mesh.vertex_count, method=method, profile=profile,
                    positions=mesh.positions, **params).apply(mesh)
