"""What a report covers: meshes, scenes, frames, resolution (``--scope full``, ``quick`` and ``smoke``).

The scope only chooses inputs and sizes; every number in the report is computed by the
library's own public functions (``compare``, ``gpu_probe``, ``simulate``), so each section can
print the command line that reproduces its figures.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import meshes as procedural
from meshes import MESH_SUFFIXES
from meshopt_batch.io import load_mesh, save_mesh
from meshopt_batch.support.errors import MeshoptBatchError

#: Triangle orders of the end-to-end matrix on every scene: the mesh's own, Forsyth (TomF),
#: paper 001's batch.
ORDERS = ("original", "forsyth", "batch")
#: Orders added on the overdraw scenes (issue 20): the batch order with Sander et al.'s cluster
#: sort within 5 % more invocations, and meshoptimizer's optimize_overdraw (threshold 1.05).
OVERDRAW_ORDERS = ("batch+overdraw", "meshoptimizer_overdraw")
#: Scenes of self-occluding high-poly meshes filling the screen, where the overdraw orders run
#: (elsewhere they would cost report time and change little).
OVERDRAW_SCENES = ("statues",)


@dataclass(frozen=True)
class Scope:
    """Sizes of one report run.

    Attributes
    ----------
    name : str
        ``full``, ``quick`` or ``smoke`` (the test suite's: every section and figure kind,
        smallest inputs).
    procedural : tuple
        Procedural meshes as ``(generator, args)`` of :mod:`meshes`.
    shared : str
        ``"all"`` (every file of ../shared/meshes up to ``max_shared_triangles``),
        ``"bunny"`` or ``"none"``.
    max_shared_triangles : int or None
        The largest shared mesh taken (None: every one).
    frames : int or None
        Frames per simulated scene (None: the scene's own count).
    size : tuple or None
        Render resolution ``(width, height)`` (None: the scene's own, 1196 x 768).
    probe_orders : tuple of str
        Triangle orders the predicted-vs-measured scatter measures.
    probe_random : int
        Random index buffers the fitted profile is verified on.
    compare_profiles : tuple of str or None
        GPU profiles of the compare tables (None: every built-in).
    orders : tuple of str
        Triangle orders of the simulate matrix on every scene.
    overdraw_orders, overdraw_scenes : tuple of str
        Orders run in addition on the overdraw scenes, and those scenes.
    scenes : tuple of str or None
        The scenes simulated (None: every shipped scene).
    mesh_paths : tuple of Path
        Mesh files given with ``--mesh`` (instead of the shared meshes).
    workers : int or None
        Processes the report's jobs run on beside this one (the shipped-order table, the
        real assets, the real-GPU files, the simulate matrix's cells; None: one per core;
        1: all in this process).
    shipped_max_triangles : int or None
        Meshes above this are left out of the shipped-order table (time; None: none).
    assets_dir : str or None
        glTF assets of the real-assets section (None: ``../shared/gltf``).
    asset_pick : tuple or None
        ``(min triangles, max triangles, count)``: only the ``count`` largest assets in that
        range (None: every asset).
    results_dir : str or None
        Committed GPU measurements (None: the repository's ``results/``).
    block_rule_stride : int or None
        Predict every n-th 2^16 block-rule draw of the results again (None: none; their
        buffers take seconds to regenerate).
    """

    name: str
    procedural: tuple = ()
    shared: str = "all"
    max_shared_triangles: int | None = 400_000
    frames: int | None = None
    size: tuple | None = None
    probe_orders: tuple = ("original", "shuffled", "optimized")
    probe_random: int = 120
    compare_profiles: tuple | None = None
    orders: tuple = ORDERS
    overdraw_orders: tuple = OVERDRAW_ORDERS
    overdraw_scenes: tuple = OVERDRAW_SCENES
    scenes: tuple | None = None
    mesh_paths: tuple = ()
    workers: int | None = None
    shipped_max_triangles: int | None = None
    assets_dir: str | None = None
    asset_pick: tuple | None = None
    results_dir: str | None = None
    block_rule_stride: int | None = None

    def command(self, out_dir) -> str:
        """The ``meshopt-batch report`` command line that runs this scope.

        Parameters
        ----------
        out_dir : str or Path
            The report's folder, as ``--out``.

        Returns
        -------
        str
            The command line.
        """
        parts = [f"meshopt-batch report --out {out_dir}"]
        if self.name != "full":
            parts.append(f"--scope {self.name}")
        if self.mesh_paths:
            parts.append("--mesh " + ",".join(str(p) for p in self.mesh_paths))
        if self.scenes:
            parts.append("--scene " + ",".join(self.scenes))
        if self.frames != SCOPES[self.name].frames:
            parts.append(f"--frames {self.frames}")
        if self.assets_dir:
            parts.append(f"--assets {self.assets_dir}")
        if self.results_dir:
            parts.append(f"--results {self.results_dir}")
        return " ".join(p for p in parts if p)

    @property
    def all_orders(self) -> tuple:
        """Every order the matrix runs somewhere, the common ones first."""
        return tuple(dict.fromkeys(self.orders + self.overdraw_orders))

    def orders_for(self, scene: str) -> tuple:
        """The orders the simulate matrix runs on one scene.

        Parameters
        ----------
        scene : str
            A scene's name.

        Returns
        -------
        tuple of str
            :attr:`all_orders` on the overdraw scenes, else :attr:`orders`.
        """
        return self.all_orders if scene in self.overdraw_scenes else self.orders

    def describe(self) -> str:
        """One line saying what the scope simulates (frames, resolution, orders).

        Returns
        -------
        str
            The line.
        """
        res = f"{self.size[0]}x{self.size[1]}" if self.size else "each scene's own resolution"
        frames = f"{self.frames} frames" if self.frames else "each scene's own frame count"
        extra = (f", and {', '.join(self.overdraw_orders)} on {', '.join(self.overdraw_scenes)}"
                 if self.overdraw_orders and self.overdraw_scenes else "")
        return (f"scope '{self.name}': {frames} per scene at {res}, triangle orders "
                f"{', '.join(self.orders)}{extra}")


_PROCEDURAL_FULL = (("icosphere", (4,)), ("uv_sphere", (48, 96)), ("torus", (96, 48)),
                    ("grid", (64,)))
_PROCEDURAL_QUICK = (("icosphere", (4,)), ("uv_sphere", (32, 64)), ("torus", (64, 32)),
                     ("grid", (48,)))

SCOPES = {
    "full": Scope("full", procedural=_PROCEDURAL_FULL, shared="all", max_shared_triangles=2_000_000,
                  shipped_max_triangles=400_000, block_rule_stride=1),
    "quick": Scope("quick", procedural=_PROCEDURAL_QUICK, shared="bunny", frames=4,
                   size=(598, 384), probe_orders=("original", "shuffled"),
                   probe_random=30, orders=("original", "batch"), overdraw_orders=(),
                   asset_pick=(100, 12_000, 3)),
    "smoke": Scope("smoke", procedural=(("icosphere", (2,)), ("grid", (12,))), shared="none",
                   frames=2, size=(160, 100), probe_orders=("original",),
                   probe_random=10, compare_profiles=("nvidia_gl", "amd", "llvmpipe"),
                   workers=1, asset_pick=(100, 1_000, 1)),
}


def get_scope(name: str, meshes=None, scenes=None, frames=None, assets=None, results=None) -> Scope:
    """The named scope, with the command line's choices applied.

    Parameters
    ----------
    name : str
        ``full``, ``quick`` or ``smoke`` (:data:`SCOPES`).
    meshes : iterable of str, optional
        ``--mesh``: mesh files or folders, instead of the shared meshes.
    scenes : iterable of str, optional
        ``--scene``: the scenes simulated.
    frames : int, optional
        ``--frames``: frames per scene (at least 1).
    assets : str, optional
        ``--assets``: the glTF assets' folder (must exist).
    results : str, optional
        ``--results``: the GPU measurements' folder (must exist).

    Returns
    -------
    Scope
        The scope.

    Raises
    ------
    MeshoptBatchError
        An unknown scope, a missing file or folder, or a bad frame count.
    """
    try:
        scope = SCOPES[name]
    except KeyError:
        raise MeshoptBatchError(f"unknown report scope {name!r} (known: {', '.join(SCOPES)})") from None
    if meshes:
        paths = []
        for m in meshes:
            p = Path(m)
            if p.is_dir():
                found = sorted(q for q in p.iterdir() if q.is_file() and q.suffix.lower() in MESH_SUFFIXES)
                if not found:
                    raise MeshoptBatchError(f"{p}: no mesh files ({', '.join(MESH_SUFFIXES)}) in this folder")
                paths += found
            elif p.is_file():
                paths.append(p)
            else:
                raise MeshoptBatchError(f"{m}: no such file or folder")
        scope = replace(scope, shared="none", mesh_paths=tuple(paths), max_shared_triangles=None)
    if scenes:
        scope = replace(scope, scenes=tuple(scenes))
    if frames is not None:
        if frames < 1:
            raise MeshoptBatchError("--frames must be at least 1")
        scope = replace(scope, frames=int(frames))
    for option, folder in (("--assets", assets), ("--results", results)):
        if folder is not None and not Path(folder).is_dir():
            raise MeshoptBatchError(f"{option} {folder}: no such folder")
    if assets is not None:
        scope = replace(scope, assets_dir=str(assets))
    if results is not None:
        scope = replace(scope, results_dir=str(results))
    return scope


@dataclass
class MeshInput:
    """One mesh of the report: its name, the mesh, and a file the probe can load.

    ``shown`` is the path the report's commands name (procedural meshes are copied into the
    report folder's ``meshes/`` so that the commands can be run as printed).
    """

    name: str
    mesh: object
    path: Path
    procedural: bool = False
    shown: str = ""

    def __post_init__(self):
        self.shown = self.shown or str(self.path)


def collect_meshes(scope: Scope, workdir: Path) -> tuple[list[MeshInput], list[str]]:
    """The procedural meshes (written as PLY into ``workdir`` for the probe) and the files.

    Returns the meshes and notes on what was left out (missing folder, too many triangles).
    """
    out: list[MeshInput] = []
    notes: list[str] = []
    for gen, args in scope.procedural:
        m = getattr(procedural, gen)(*args)
        path = workdir / f"{m.name}.ply"
        save_mesh(m, path)
        out.append(MeshInput(m.name, m, path, procedural=True))
    files = list(scope.mesh_paths)
    if scope.shared != "none":
        shared = procedural.shared_meshes()
        if not shared:
            notes.append(f"no shared meshes found in {procedural.shared_meshes_dir()} (set "
                         "$MESHOPT_BATCH_SHARED_MESHES or pass --mesh): only procedural meshes")
        if scope.shared == "bunny":
            shared = [p for p in shared if p.stem == "bunny"]
        files += shared
    for path in files:
        mesh = load_mesh(path)
        if (scope.max_shared_triangles is not None and not scope.mesh_paths
                and mesh.triangle_count > scope.max_shared_triangles):
            notes.append(f"{path.name} left out: {mesh.triangle_count:,} triangles is above this "
                         f"scope's {scope.max_shared_triangles:,} (pass it with --mesh to include it)")
            continue
        out.append(MeshInput(Path(path).stem, mesh, Path(path)))
    return out, notes


def make_workdir() -> tempfile.TemporaryDirectory:
    return tempfile.TemporaryDirectory(prefix="meshopt-report-")
