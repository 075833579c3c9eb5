"""Start-up and the words every command shares (issue 48): ``--version``, what ``--help``
imports, the lazy public API, and progress shown on a terminal only.

Times are not asserted here (``benchmarks/bench_startup.py`` measures them); what a command
imports is, since that is what the time is made of.
"""

import fcntl
import importlib.metadata
import io
import json
import os
import struct
import subprocess
import sys
import termios
import time

import pytest

import meshes
import meshopt_batch
from meshopt_batch.io import save_mesh
from meshopt_batch_app.cli import SUBCOMMANDS

#: Modules no parser needs: the kernels, the tables, the codecs, the progress bars.
HEAVY = ("numpy", "numba", "pandas", "scipy", "trimesh", "psutil", "DracoPy", "meshopt", "matplotlib", "tqdm",
         "moderngl", "wgpu", "dask")


def test_version_prints_the_package_version():
    proc = subprocess.run([sys.executable, "-m", "meshopt_batch_app", "--version"], capture_output=True, text=True,
                          timeout=120)
    installed = importlib.metadata.version("meshopt-batch")
    assert (proc.returncode, proc.stdout.splitlines()[0], proc.stderr) == (0, f"meshopt-batch {installed}", "")
    assert meshopt_batch.__version__ == installed
    from meshopt_batch_app.version import version_text

    assert version_text().splitlines()[0] == f"meshopt-batch {installed}"


def test_help_and_version_import_no_core_module():
    """``--help`` (which lists every command), each command's ``--help`` and ``--version``
    import none of the heavy modules: each prints what it imported beyond the parser."""
    lines = [["--help"], ["--version"], *([name, "--help"] for name in SUBCOMMANDS)]
    code = f"""
import contextlib, io, json, sys
from meshopt_batch_app.cli import main
found = {{}}
for argv in {lines!r}:
    with contextlib.redirect_stdout(io.StringIO()) as out:
        try:
            main(argv)
        except SystemExit as exc:
            assert exc.code == 0, (argv, exc.code)
    assert out.getvalue(), argv
    found[" ".join(argv)] = [m for m in {HEAVY!r} if m in sys.modules]
print(json.dumps(found))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert len(found) == len(lines)
    assert found == {k: [] for k in found}


def test_help_names_the_core_defaults():
    """The parsers name the core's defaults without importing the core: the same names."""
    from meshopt_batch.evaluation.method_comparison import DEFAULT_PROFILES
    from meshopt_batch.meshlets import METHODS
    from meshopt_batch.optimizers import DEFAULT_METHOD
    from meshopt_batch.optimizers.portable.tuning import WINDOW_WORK
    from meshopt_batch_app.commands import compare, meshlets, optimize

    assert optimize.DEFAULT_METHOD_NAME == DEFAULT_METHOD
    assert optimize.DEFAULT_EFFORT * 1_000_000 == WINDOW_WORK
    assert compare.DEFAULT_PROFILE_NAMES == DEFAULT_PROFILES
    assert meshlets.METHOD_NAMES == METHODS


def test_the_public_api_is_imported_on_first_use():
    code = """
import sys
import meshopt_batch
assert "numba" not in sys.modules and "numpy" not in sys.modules, "import meshopt_batch loaded the kernels"
from meshopt_batch import Target, get_target, load_mesh, optimize, optimize_file, predict, save_mesh
missing = [name for name in meshopt_batch.__all__ if getattr(meshopt_batch, name, None) is None]
assert not missing, missing
print(predict([[0, 1, 2], [2, 1, 3]], 4, profile="nvidia_gl").invocations, get_target("portable").name)
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["4", "portable"]


# ----------------------------------------------------------------------------- progress
def _on_terminal(argv, *, stdout_terminal=True):
    """Run the command line with stderr (and stdout unless ``stdout_terminal`` is false: then a
    pipe) on a 100x30 pseudo-terminal; returns the exit code, what the terminal received and
    what the stdout pipe received."""
    main_fd, term = os.openpty()
    fcntl.ioctl(term, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "meshopt_batch_app", *map(str, argv)], stdin=subprocess.DEVNULL,
                            stdout=term if stdout_terminal else subprocess.PIPE, stderr=term)
    os.close(term)
    shown = bytearray()
    while True:
        try:
            chunk = os.read(main_fd, 65536)
        except OSError:                      # EIO: every writer closed its end
            break
        if not chunk:
            break
        shown += chunk
    os.close(main_fd)
    piped = proc.stdout.read().decode() if proc.stdout is not None else ""
    assert proc.wait(timeout=300) is not None
    return proc.returncode, shown.decode(errors="replace"), piped


@pytest.fixture(scope="module")
def torus(tmp_path_factory):
    path = tmp_path_factory.mktemp("progress") / "torus.ply"
    save_mesh(meshes.torus(24, 12), path)
    return path


def test_optimize_shows_progress_on_a_terminal(torus, tmp_path):
    code, shown, _ = _on_terminal(["optimize", torus, "-o", tmp_path / "o.ply", "-p", "nvidia_gl"])
    assert code == 0, shown
    assert "optimize torus.ply:" in shown and "1/1" in shown and "vertex buffers" in shown and "[00:0" in shown
    assert f"wrote {tmp_path / 'o.ply'}" in shown


@pytest.mark.parametrize("extra, stdout_terminal", [
    (["--no-progress"], True),
    (["--json"], True),
    ([], False),                               # stdout read by a program: no progress, even on stderr
])
def test_optimize_is_silent_off_a_terminal_and_when_asked(torus, tmp_path, extra, stdout_terminal):
    out = tmp_path / "o.ply"
    code, shown, piped = _on_terminal(["optimize", torus, "-o", out, "-p", "nvidia_gl", *extra],
                                      stdout_terminal=stdout_terminal)
    assert code == 0, shown
    assert "optimize torus.ply:" not in shown and "vertex buffers" not in shown and "\r" not in shown.replace(
        "\r\n", "")
    printed = shown if stdout_terminal else piped
    if "--json" in extra:
        assert json.loads(printed)["output"] == str(out)
    else:
        assert f"wrote {out}" in printed
    if not stdout_terminal:
        assert shown == ""


def test_optimize_silent_when_not_a_terminal(torus, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "meshopt_batch_app", "optimize", str(torus), "-o",
                           str(tmp_path / "o.ply"), "-p", "nvidia_gl"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stderr == "" and "wrote" in proc.stdout


def test_compare_counts_its_runs_on_a_terminal(torus):
    code, shown, _ = _on_terminal(["compare", torus, "-p", "fifo:8", "-m", "tipsify,batch"])
    assert code == 0, shown
    assert "compare:" in shown and "runs" in shown and "3 runs" in shown and "torus: batch for fifo:8" in shown
    code, shown, _ = _on_terminal(["compare", torus, "-p", "fifo:8", "-m", "tipsify", "-q"])
    assert code == 0 and "compare:" not in shown and "runs" not in shown


def test_a_bar_keeps_its_elapsed_time_moving(monkeypatch):
    """While one step runs for long the bar is redrawn each second, so its elapsed time moves."""
    from meshopt_batch_app.progress import Progress

    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    with Progress("search", unit=" vertex buffers") as bar:
        bar.done_of(0, 1)
        deadline = time.monotonic() + 30
        while "00:01" not in stream.getvalue() and time.monotonic() < deadline:
            time.sleep(0.1)
    assert "search:" in stream.getvalue() and "0/1 vertex buffers [00:01" in stream.getvalue()
    with Progress("search", enabled=False) as bar:          # disabled: nothing, and no thread
        bar.done_of(0, 1)
        bar.step("x")
    assert bar._redraw is None


def test_run_as_the_program_numpy_blas_has_one_thread_unless_the_environment_says(tmp_path):
    """The program gives OpenBLAS one thread (its idle threads would spin on the cores the
    compiled loops use); ``OPENBLAS_NUM_THREADS`` set by the user wins.  Read after the
    command ran, from the process's own BLAS."""
    path = tmp_path / "torus.ply"
    save_mesh(meshes.torus(8, 6), path)
    code = """
import atexit, json, sys
from meshopt_batch_app.cli import main

def report():
    from threadpoolctl import threadpool_info
    print(json.dumps([p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]), file=sys.stderr)

atexit.register(report)
sys.argv = ["meshopt-batch", "analyze", sys.argv[1], "--json"]
main()
"""
    for given, want in ((None, 1), ("2", 2)):
        env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
        if given is not None:
            env["OPENBLAS_NUM_THREADS"] = given
        proc = subprocess.run([sys.executable, "-c", code, str(path)], env=env, capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0, proc.stderr
        threads = json.loads(proc.stderr.strip().splitlines()[-1])
        assert threads and set(threads) == {want}
