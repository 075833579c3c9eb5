"""Compiled kernels that reach the user: the package's kernel cache (meshopt_batch.support.kernel_cache).

Cheap (run by ``make test``): every kernel of the packages gets the package's cache whatever
is imported first, and ``import meshopt_batch`` loads no numba; a copied package tree whose
kernels were compiled for the generic CPU serves a process on this CPU from a read-only
folder, and a kernel it lacks is compiled once, said once on stderr and kept in the user's
cache; ``--version``'s kernel lines say ready, stale or missing.

Slow (``-m slow``): a fresh virtual environment with the project installed as a user installs
it (``pip install`` of a copy of this tree: the build compiles the kernels), an empty user
cache: the build reached every kernel and the first commands compile nothing -- writable,
read-only (as ``nobody``) and in a Dask worker process.  numba's own cache log
(``NUMBA_DEBUG_CACHE``) is the witness: a compile writes "data saved", a load "data loaded".
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from meshopt_batch.support import kernel_cache, kernel_files

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("meshopt_batch", "gpu_probe", "pipeline_model", "meshes", "meshopt_batch_app")


@pytest.fixture
def shared_tmp():
    """A temporary folder every user may enter (``tmp_path`` is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="mb-fresh-"))
    path.chmod(0o755)
    yield path
    subprocess.run(["chmod", "-R", "u+w", str(path)], check=False)
    shutil.rmtree(path, ignore_errors=True)


def _env(home: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "XDG_", "PYTHON"))}
    env.update(HOME=str(home), MPLCONFIGDIR=str(home / "mpl"), **extra)
    return env


def _as_reader(argv: list[str]) -> list[str]:
    """``argv`` run by a user who cannot write the package (``nobody`` when the tests run as root)."""
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv] if os.geteuid() == 0 else argv


def _home(parent: Path, name: str) -> Path:
    home = parent / name
    home.mkdir()
    home.chmod(0o777)
    return home


def _copy_tree(dest: Path) -> Path:
    """The packages' sources (no compiled kernels, no bytecode) copied to ``dest``."""
    for name in PACKAGES:
        shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__", "_kernels"))
    return dest


def test_every_kernel_gets_the_package_cache_and_import_loads_no_numba():
    script = textwrap.dedent("""
        import importlib, json, pkgutil, sys
        import meshopt_batch
        loaded = "numba" in sys.modules
        for package in ("meshopt_batch", "gpu_probe", "pipeline_model", "meshopt_batch_app"):
            for info in pkgutil.walk_packages(importlib.import_module(package).__path__, package + "."):
                if not info.name.endswith("__main__"):
                    try:
                        importlib.import_module(info.name)
                    except ImportError:  # not this test's topic: a module that fails defines no kernel
                        pass
        import gc
        from numba.core.caching import NullCache
        from numba.core.dispatcher import Dispatcher
        from meshopt_batch.support import kernel_files
        from meshopt_batch.support.kernel_store import KernelCache
        ours = [d for d in gc.get_objects() if isinstance(d, Dispatcher)
                and kernel_files.relative_source(d.py_func.__code__.co_filename)]
        other = [d.py_func.__qualname__ for d in ours if not isinstance(d._cache, (KernelCache, NullCache))]
        print(json.dumps({"numba_at_import": loaded, "kernels": len(ours), "other_cache": other}))
    """)
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True)
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found["numba_at_import"] is False
    assert found["kernels"] > 150
    assert found["other_cache"] == []


_KERNEL_RUN = textwrap.dedent("""
    import json, sys
    import numpy as np
    from meshopt_batch.geometry import mesh_topology as topology
    from meshopt_batch.support import kernel_files
    for name in sys.argv[1:]:
        topology.vertex_faces(np.array([[0, 1, 2], [2, 1, 3]], np.uint32), 4, dtype=np.dtype(name))
    kernel = topology._vertex_faces
    print(json.dumps({"hits": sum(kernel.stats.cache_hits.values()), "misses": sum(kernel.stats.cache_misses.values()),
                      "write_dir": str(kernel_files.write_dir())}))
""")


def _kernel_run(tree: Path, home: Path, dtypes: list[str], reader: bool, **env) -> tuple[dict, str]:
    argv = [sys.executable, "-c", _KERNEL_RUN, *dtypes]
    proc = subprocess.run(_as_reader(argv) if reader else argv, cwd=home, env=_env(home, PYTHONPATH=str(tree), **env),
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


def test_generic_kernels_in_a_read_only_tree_serve_this_cpu_and_a_missing_one_is_said_once(shared_tmp):
    tree = _copy_tree(shared_tmp / "tree")
    builder = _home(shared_tmp, "builder")
    # The build: compiled for the generic CPU into the tree's own cache folder.
    built, err = _kernel_run(tree, builder, ["int64"], reader=False, NUMBA_CPU_NAME="generic")
    assert built == {"hits": 0, "misses": 1, "write_dir": str(tree / "meshopt_batch" / "_kernels")}
    shipped = tree / "meshopt_batch" / "_kernels" / "meshopt_batch" / "geometry"
    assert sorted(p.suffix for p in shipped.glob("mesh_topology._vertex_faces-*")) == [".nbc", ".nbi"]
    if os.geteuid() != 0:
        subprocess.run(["chmod", "-R", "a-w", str(tree)], check=True)
    # A user on this CPU who cannot write the tree: loaded, nothing compiled, nothing said.
    user = _home(shared_tmp, "user")
    kept = user / ".cache" / "meshopt-batch" / "kernels"
    first, err = _kernel_run(tree, user, ["int64"], reader=True)
    assert (first["hits"], first["misses"], err) == (1, 0, "")
    assert first["write_dir"].startswith(str(kept))
    # A kernel the build did not compile (int32 lists): compiled, said once, kept for the next run.
    second, err = _kernel_run(tree, user, ["int64", "int32"], reader=True)
    assert (second["hits"], second["misses"]) == (1, 1)
    assert err.startswith("meshopt-batch: note: compiling meshopt_batch/geometry/mesh_topology.py:_vertex_faces: "
                          f"no compiled kernels in {tree / 'meshopt_batch' / '_kernels'}; this run is slower, "
                          f"later runs load it from {kept}")
    assert len(err.strip().splitlines()) == 1
    third, err = _kernel_run(tree, user, ["int64", "int32"], reader=True)
    assert (third["hits"], third["misses"], err) == (2, 0, "")


def _with_manifest(monkeypatch, folder: Path, **fields) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    source = "meshopt_batch/geometry/mesh_topology.py"
    data = {**kernel_files.runtime(), "cpu": "generic", "kernels": 7, "uncovered": [], "failures": [],
            "kernel_sources": [source], "sources": {source: kernel_files.source_hash(ROOT / source)}}
    data.update(fields)
    (folder / kernel_files.MANIFEST).write_text(json.dumps(data))
    monkeypatch.setattr(kernel_files, "SHIPPED_DIR", folder)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(folder.parent / "numba-cache"))
    kernel_files.manifest.cache_clear()
    kernel_files.write_dir.cache_clear()


@pytest.fixture
def fresh_caches():
    yield
    kernel_files.manifest.cache_clear()
    kernel_files.write_dir.cache_clear()


def test_version_lines_say_ready_stale_changed_or_missing(tmp_path, monkeypatch, fresh_caches):
    folder = tmp_path / "_kernels"
    new_dir = tmp_path / "numba-cache" / "meshopt-batch"
    _with_manifest(monkeypatch, folder)
    platform = kernel_files.runtime()["platform"]
    numba = kernel_files.runtime()["numba"]
    lines = kernel_cache.kernel_status()
    assert lines[0] == f"kernels: ready: 7 compiled ahead for numba {numba}, {platform}, generic CPU"
    assert lines[1] == f"kernel cache: {folder}; new kernels: {kernel_files.write_dir()} (NUMBA_CACHE_DIR)"
    assert kernel_files.write_dir().parent == new_dir

    _with_manifest(monkeypatch, folder, numba="0.1.0", uncovered=["meshopt_batch/x.py:f"])
    lines = kernel_cache.kernel_status()
    assert lines[0] == (f"kernels: stale, built for another runtime (numba 0.1.0 -> {numba}): "
                        "each compiles on its first use")
    assert lines[1] == "kernels no command reached (compiled on first use): meshopt_batch/x.py:f"

    _with_manifest(monkeypatch, folder, sources={"meshopt_batch/geometry/mesh_topology.py": "0" * 64})
    assert kernel_cache.kernel_status()[0] == ("kernels: 0 of 1 kernel sources as compiled; changed since: "
                                               "meshopt_batch/geometry/mesh_topology.py "
                                               "(their kernels compile on first use)")

    (folder / kernel_files.MANIFEST).unlink()
    kernel_files.manifest.cache_clear()
    assert kernel_cache.kernel_status()[0] == ("kernels: not compiled ahead (no manifest.json in the cache): "
                                               "each compiles on its first use")


_EXTERNAL = textwrap.dedent('''
    import glob
    import os

    import llvmlite.binding as llvm
    import meshoptimizer
    from numba import njit, types

    library = glob.glob(os.path.join(os.path.dirname(meshoptimizer.__file__), "_meshoptimizer*.so"))[0]
    llvm.load_library_permanently(library)
    _optimize = types.ExternalFunction("meshopt_optimizeVertexCache",
                                       types.void(types.voidptr, types.voidptr, types.uintp, types.uintp))


    @njit(cache=True)
    def optimize_vertex_cache(destination, indices, vertex_count):
        _optimize(destination.ctypes, indices.ctypes, indices.size, vertex_count)
        return destination
''')

_EXTERNAL_RUN = textwrap.dedent("""
    import json
    import numpy as np
    from meshopt_batch import _external_probe as probe
    indices = np.array([0, 1, 2, 3, 4, 5, 2, 1, 6], np.uint32)
    out = probe.optimize_vertex_cache(np.zeros_like(indices), indices, 7)
    kernel = probe.optimize_vertex_cache
    print(json.dumps({"out": out.tolist(), "hits": sum(kernel.stats.cache_hits.values()),
                      "misses": sum(kernel.stats.cache_misses.values())}))
""")


def test_a_kernel_calling_meshoptimizers_c_library_loads_compiled(shared_tmp):
    """numba code calling a C function of meshoptimizer's extension module (an ExternalFunction
    resolved through ``load_library_permanently``): compiled generic, loaded on this CPU from a
    read-only tree, and its result is the C library's own."""
    import meshoptimizer
    import numpy as np

    tree = _copy_tree(shared_tmp / "tree")
    (tree / "meshopt_batch" / "_external_probe.py").write_text(_EXTERNAL)
    indices = np.array([0, 1, 2, 3, 4, 5, 2, 1, 6], np.uint32)
    expected = np.zeros_like(indices)
    meshoptimizer.optimize_vertex_cache(expected, indices, indices.size, 7)
    runs = []
    for home, reader, env in ((_home(shared_tmp, "builder"), False, {"NUMBA_CPU_NAME": "generic"}),
                              (_home(shared_tmp, "user"), True, {})):
        argv = [sys.executable, "-c", _EXTERNAL_RUN]
        proc = subprocess.run(_as_reader(argv) if reader else argv, cwd=home,
                              env=_env(home, PYTHONPATH=str(tree), **env), capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        if os.geteuid() != 0:
            subprocess.run(["chmod", "-R", "a-w", str(tree)], check=True)
    out = expected.tolist()
    assert runs == [{"out": out, "hits": 0, "misses": 1}, {"out": out, "hits": 1, "misses": 0}]


def test_the_warm_up_of_this_tree_reached_every_kernel():
    """``make setup`` runs the warm-up on the source tree (CI too): when its manifest is that of
    the sources as they are, no command failed and every kernel of the packages was compiled --
    a new kernel that no command reaches is listed here (add a command line or an entry point
    to meshopt_batch_app/warm_kernels.py)."""
    built = kernel_files.manifest()
    current = {path.relative_to(ROOT).as_posix(): kernel_files.source_hash(path)
               for package in kernel_files.PACKAGES for path in (ROOT / package).rglob("*.py")}
    if built is None or kernel_files.mismatch(built) or built["sources"] != current:
        pytest.skip("no warm-up of these sources here (make setup or python -m meshopt_batch_app.warm_kernels)")
    assert (built["failures"], built["uncovered"]) == ([], [])


_DEBUG_CACHE = {"NUMBA_DEBUG_CACHE": "1", "PYTHONUNBUFFERED": "1"}


def _compiled(stdout: str) -> list[str]:
    """numba's cache log lines of entries written (a kernel compiled) in a run."""
    return [line for line in stdout.splitlines() if line.startswith("[cache] data saved to")]


def _loaded(stdout: str) -> int:
    return sum(line.startswith("[cache] data loaded from") for line in stdout.splitlines())


@pytest.mark.slow
def test_a_fresh_install_finds_every_kernel_compiled(shared_tmp):
    """``pip install`` of a copy of this tree into a new venv (the build compiles the kernels),
    then the first commands of a user with an empty cache: nothing compiled, writable or not,
    in a Dask worker process too."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout.split("\n")
    source = shared_tmp / "src"
    for rel in filter(None, listed):
        if (ROOT / rel).is_file():
            (source / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, source / rel)
    venv = shared_tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    build = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(source)], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-3000:]
    check_installed(venv, shared_tmp)


def check_installed(venv: Path, shared_tmp: Path) -> None:
    """The checks of a fresh install in ``venv`` (scratch files in ``shared_tmp``)."""
    import meshes
    from meshopt_batch.io import save_mesh

    purelib = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = Path(subprocess.run([str(venv / "bin" / "python"), "-c", purelib], cwd=shared_tmp, capture_output=True,
                               text=True, check=True).stdout.strip())
    built = json.loads((site / "meshopt_batch" / "_kernels" / kernel_files.MANIFEST).read_text())
    assert (built["failures"], built["uncovered"], built["cpu"]) == ([], [], "generic")
    assert built["kernels"] > 150

    data = _home(shared_tmp, "data")
    mesh = str(save_mesh(meshes.torus(96, 48), data / "torus.glb"))
    library = data / "library"
    library.mkdir()
    save_mesh(meshes.torus(), library / "a.glb")
    script = str(venv / "bin" / "meshopt-batch")
    version = subprocess.run([script, "--version"], cwd=shared_tmp, capture_output=True, text=True,
                             env=_env(_home(shared_tmp, "v")))
    if version.returncode == 0:
        assert f"kernels: ready: {built['kernels']} compiled ahead" in version.stdout

    def first_run(argv, reader, name):
        home = _home(shared_tmp, name)
        proc = subprocess.run(_as_reader(argv) if reader else argv, cwd=home, env=_env(home, **_DEBUG_CACHE),
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return proc

    out = str(data / "out.glb")
    for argv, reader in (([script, "analyze", mesh], False),
                         ([script, "optimize", mesh, "-o", out, "-p", "nvidia_gl"], False),
                         ([script, "optimize", mesh, "-o", out], True),
                         ([script, "simulate", "statues", "-n", "2", "--width", "64", "--height", "48",
                           "--no-progress"], True)):
        proc = first_run(argv, reader, f"home{len(argv)}{reader}")
        assert _compiled(proc.stdout) == [] and _loaded(proc.stdout) > 3, argv
        assert "meshopt-batch: note" not in proc.stderr

    # A Dask worker in a new process: a local cluster, the library run sent to it (as root: here
    # Python lives in a folder only root may enter, so a process nobody starts cannot start another).
    cluster = textwrap.dedent(f"""
        import subprocess, sys
        from dask.distributed import LocalCluster
        with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                          dashboard_address=None) as c:
            run = subprocess.run([{script!r}, "optimize", {str(library)!r}, "-o", {str(data / 'lib-out')!r},
                                  "--scheduler", c.scheduler_address, "--no-progress"])
        sys.exit(run.returncode)
    """)
    proc = first_run([str(venv / "bin" / "python"), "-c", cluster], False, "dask")
    assert _compiled(proc.stdout) == [] and _loaded(proc.stdout) > 3
    assert (data / "lib-out" / "manifest.jsonl").is_file()
