"""Compile every kernel the commands use, ahead of a user's first run.

``python -m meshopt_batch_app.warm_kernels`` runs the commands (analyze, optimize with every
method, target and kernel-selecting option, compare, meshlets, probe through every simulated
counter, simulate of every shipped scene with every technique, a library run) on meshes it
makes, then the public functions whose kernels no command reaches (:func:`call_entry_points`),
so that each numba kernel is compiled for the argument types it is given and written to the
package's kernel cache (:mod:`meshopt_batch.support.kernel_cache`).  Then it imports every module of
the packages and writes the cache's manifest: the runtime it was built for, the hash of every
source file, the kernels compiled, those with no compiled entry (``uncovered``), the commands
that failed, and kernels with different options that share one cache entry.

The build runs it with ``NUMBA_CPU_NAME=generic`` (the default here; ``--host`` compiles for
this CPU only), so a wheel's kernels run on every CPU of its architecture.  A command that
fails is reported and the others still run; ``--strict`` makes a failure or an uncovered
kernel exit with status 1.  A kernel added to the packages is covered as soon as a command (or
an entry point here) reaches it; one that nothing reaches is listed as uncovered here, in the
manifest and by ``meshopt-batch --version``, and ``tests/test_install_fresh.py`` fails.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import inspect
import io
import json
import os
import pkgutil
import sys
import tempfile
import time
from pathlib import Path

from meshopt_batch.support import kernel_files

#: A torus with more than 2^16 vertices: the 16-bit index rules and 32-bit paths.
LARGE_TORUS = (400, 170)


def inputs(folder: Path) -> dict[str, str]:
    """Write the meshes the commands run on into ``folder``; returns their paths by role."""
    from meshes import torus  # lazy: loads numpy
    from meshopt_batch.io import save_mesh  # lazy: loads numpy and trimesh

    small = torus()
    large = torus(*LARGE_TORUS)
    paths = {}
    for suffix in (".obj", ".ply", ".glb"):
        paths[suffix] = str(save_mesh(small, folder / f"small{suffix}"))
    paths["large"] = str(save_mesh(large, folder / "large.glb"))
    library = folder / "library"
    library.mkdir()
    save_mesh(small, library / "a.glb")
    save_mesh(small, library / "b.obj")
    paths["library"] = str(library)
    return paths


def _choices(command: str, option: str) -> list[str]:
    """The values a subcommand's option accepts, read from its parser (so new ones are run too)."""
    from meshopt_batch_app.cli import build_parser  # lazy: the parser loads the subcommand modules

    sub = next(a for a in build_parser((command,))._actions if a.dest == "command").choices[command]
    action = next(a for a in sub._actions if option in a.option_strings)
    return list(action.choices or [])


def _methods() -> list[str]:
    from meshopt_batch.optimizers import available_methods  # lazy: loads numba

    return list(available_methods())


def _techniques() -> list[str]:
    from pipeline_model.techniques import available  # lazy: loads the pipeline model

    return list(available())


def _scenes() -> list[str]:
    from pipeline_model.scene.loading import shipped_scenes  # lazy: loads the pipeline model

    return list(shipped_scenes())


def _counters() -> list[str]:
    """``gpu_probe.simulated``'s counters (every public function taking ``(indices, vertex_count)``)."""
    from gpu_probe import simulated  # lazy: loads numba

    names = []
    for name, fn in vars(simulated).items():
        if name.startswith("_") or not inspect.isfunction(fn) or fn.__module__ != simulated.__name__:
            continue
        if list(inspect.signature(fn).parameters)[:2] == ["indices", "vertex_count"]:
            names.append(name)
    return names


def command_lines(paths: dict[str, str], out: Path) -> list[list[str]]:
    """Every command line the warm-up runs."""
    small, large, obj = paths[".glb"], paths["large"], paths[".obj"]
    lines = []
    for suffix in (".obj", ".ply", ".glb"):
        lines.append(["analyze", paths[suffix], "--json", "--overdraw", "--meshlets"])
    lines.append(["analyze", large])
    for target in ("portable", "nvidia_gl"):
        for src in (small, large, obj):
            lines.append(["optimize", src, "-o", str(out / f"o{len(lines)}{Path(src).suffix}"), "-p", target])
    for method in _methods():
        lines.append(["optimize", small, "-o", str(out / f"m{len(lines)}.glb"), "-m", method])
    for options in (["--compress"], ["--weld-tolerance", "1e-4"], ["-p", "llvmpipe"],
                    ["-m", "batch", "--queue", "fibheap", "-p", "nvidia_gl"]):
        lines.append(["optimize", small, "-o", str(out / f"v{len(lines)}.glb"), *options])
    lines.append(["optimize", large, "-o", str(out / "k.glb"), "-p", "nvidia_gl", "--keep-16bit-boundaries"])
    lines.append(["optimize", paths["library"], "-o", str(out / "library"), "--workers", "1", "--no-progress"])
    lines.append(["compare", obj, "--quiet"])
    lines.append(["compare", obj, "--meshlets", "--quiet"])
    lines.append(["compare", small, "--shipped", "--quiet"])
    for builder in _choices("meshlets", "--method") or ["batch"]:
        lines.append(["meshlets", small, "-o", str(out / f"ml{len(lines)}.npz"), "-m", builder])
    for counter in _counters():
        lines.append(["probe", obj, "--counter", f"gpu_probe.simulated:{counter}", "--experiments", "--fit"])
    for scene in _scenes():
        lines.append(["simulate", scene, "-n", "2", "--width", "96", "--height", "64", "--no-progress",
                      "-t", ",".join(_techniques()), "-m", "batch"])
    return lines


def run_commands(lines: list[list[str]], log) -> list[str]:
    """Run each command line in this process; returns the failures (one line each)."""
    from meshopt_batch_app.cli import main  # lazy: loads the subcommands

    failures = []
    for argv in lines:
        start = time.perf_counter()
        err = io.StringIO()
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
                code = main(argv)
        except BaseException as exc:  # a command's crash is a failure to report, not the end of the warm-up
            code = 1
            err.write(f"\n{type(exc).__name__}: {exc}")
        print(f"  {time.perf_counter() - start:6.1f} s  {' '.join(argv)}", file=log, flush=True)
        if code != 0:
            said = [line for line in err.getvalue().splitlines() if line.strip()]
            failures.append(f"{' '.join(argv)}: exit {code}: {' | '.join(said[-2:]) or '(no message)'}")
    return failures


def call_entry_points(paths: dict[str, str]) -> list[str]:
    """Public functions whose kernels no command reaches: the face adjacency, the direct-cache
    optimizer, every built-in profile's per-vertex invocations, the shading of an image and a
    depth query (``simulate --check-gl``, which needs OpenGL).  Returns the failures."""
    from meshopt_batch.geometry.mesh_topology import face_adjacency  # lazy: loads numba
    from meshopt_batch.io import load_mesh  # lazy: loads numpy and trimesh
    from meshopt_batch.model.prediction import predict  # lazy: loads numba
    from meshopt_batch.model.profiles import builtin_profile_names  # lazy: with the predictor
    from meshopt_batch.optimizers.renumber import optimize_for_direct_cache  # lazy: loads numba
    from pipeline_model.pipeline import run_frames  # lazy: loads the pipeline model
    from pipeline_model.raster import depth_at  # lazy: loads the pipeline model
    from pipeline_model.shading import shade_image  # lazy: loads numba

    def per_vertex():
        loaded = load_mesh(paths[".obj"]).triangles  # read-only, as a loaded mesh's are; and a copy
        for tris in (loaded, loaded.copy()):
            for name in builtin_profile_names():
                predict(tris, profile=name, per_vertex=True)

    calls = {
        "face_adjacency": lambda: face_adjacency(load_mesh(paths[".obj"]).triangles),
        "optimize_for_direct_cache": lambda: optimize_for_direct_cache(load_mesh(paths[".obj"]).triangles),
        "predict(per_vertex=True)": per_vertex,
        "shade_image": lambda: shade_image(1, [1, 0, 0, 0, 1, 0, 1, 0], [0.5, 1.5], [0.5, 0.5]),
    }

    def frame():
        _, geometry, _tiles = next(run_frames(_scenes()[0], [0]))
        depth_at(geometry, 0, 0, 0)

    calls["depth_at"] = frame
    failures = []
    for name, call in calls.items():
        try:
            call()
        except Exception as exc:  # reported, as a failed command is
            failures.append(f"{name}: {type(exc).__name__}: {exc}")
    return failures


def _import_all() -> list[str]:
    """Import every module of the packages (so every kernel is defined); returns the import failures."""
    failures = []
    for package in kernel_files.PACKAGES:
        root = importlib.import_module(package)
        for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
            if info.name.endswith("__main__"):
                continue
            try:
                importlib.import_module(info.name)
            except Exception as exc:  # an optional dependency missing: its kernels are reported uncovered
                failures.append(f"import {info.name}: {type(exc).__name__}: {exc}")
    return failures


def coverage() -> tuple[int, list[str], list[str], list[str]]:
    """Over every kernel of the packages: (how many have compiled entries, those that have none,
    the files holding kernels, kernels that share one cache entry with different options)."""
    from meshopt_batch.support import kernel_store  # lazy: loads numba

    compiled, uncovered, files, by_name = 0, [], set(), {}
    for kernel in kernel_store.cached_kernels():
        cache = kernel._cache
        files.add(cache._rel)
        by_name.setdefault(cache.index_name, []).append(kernel)
    for kernels in by_name.values():
        if kernels[0]._cache.entries():
            compiled += 1
        else:
            uncovered.append(f"{kernels[0]._cache._rel}:{kernels[0].py_func.__qualname__}")
    shared = [name for name, kernels in sorted(by_name.items())
              if len({repr(sorted(k.targetoptions.items())) for k in kernels}) > 1]
    return compiled, sorted(uncovered), sorted(files), shared


def write_manifest(compiled: int, uncovered: list[str], files: list[str], failures: list[str], cpu: str) -> dict:
    """Write the cache's manifest (see :mod:`meshopt_batch.support.kernel_cache`) and return it."""
    sources = {}
    for package in kernel_files.PACKAGES:
        for path in sorted((kernel_files.ROOT / package).rglob("*.py")):
            sources[path.relative_to(kernel_files.ROOT).as_posix()] = kernel_files.source_hash(path)
    data = {**kernel_files.runtime(), "cpu": cpu, "kernels": compiled, "uncovered": uncovered,
            "failures": failures, "kernel_sources": files, "sources": sources}
    target = kernel_files.SHIPPED_DIR / kernel_files.MANIFEST
    tmp = target.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, target)
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m meshopt_batch_app.warm_kernels",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--host", action="store_true", help="compile for this CPU only (default: numba's generic CPU)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a command fails or a kernel is uncovered")
    args = parser.parse_args(argv)
    if "numba" in sys.modules and not args.host and os.environ.get("NUMBA_CPU_NAME") != kernel_files.GENERIC_CPU:
        parser.error("numba is already loaded: set NUMBA_CPU_NAME=generic before starting Python, or pass --host")
    if not args.host:
        os.environ["NUMBA_CPU_NAME"] = kernel_files.GENERIC_CPU
        os.environ.pop("NUMBA_CPU_FEATURES", None)
    if kernel_files.write_dir() != kernel_files.SHIPPED_DIR:
        print(f"warm_kernels: {kernel_files.SHIPPED_DIR} is not writable (or NUMBA_CACHE_DIR is set): "
              "nothing to do", file=sys.stderr)
        return 2
    kernel_files.quiet()
    log = sys.stderr
    start = time.perf_counter()
    print(f"warm_kernels: compiling into {kernel_files.SHIPPED_DIR}", file=log, flush=True)
    with tempfile.TemporaryDirectory(prefix="meshopt-batch-warm-") as tmp:
        folder = Path(tmp)
        (folder / "out").mkdir()
        paths = inputs(folder)
        failures = run_commands(command_lines(paths, folder / "out"), log)
        failures += call_entry_points(paths)
    failures += _import_all()
    compiled, uncovered, files, shared = coverage()
    failures += [f"kernels with different options share the cache entry {name}" for name in shared]
    cpu = "host" if args.host else kernel_files.GENERIC_CPU
    write_manifest(compiled, uncovered, files, failures, cpu)
    print(f"warm_kernels: {compiled} kernels compiled in {time.perf_counter() - start:.0f} s", file=log)
    for line in failures:
        print(f"warm_kernels: failed: {line}", file=log)
    if uncovered:
        print(f"warm_kernels: no command reached {len(uncovered)} kernels: {', '.join(uncovered)}", file=log)
    return 1 if args.strict and (failures or uncovered) else 0


if __name__ == "__main__":
    sys.exit(main())
