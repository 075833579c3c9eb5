"""A command's first run after a fresh install, against its second run (the peer).

Makes a fresh virtual environment, installs the project into it as a user does (``pip install
SOURCE``, not editable; SOURCE defaults to a clone of this repository's HEAD), and then, for
each command, from the state the install left (the package folder restored to it, an empty
home and user cache, no ``NUMBA_CACHE_DIR``): runs it twice in fresh processes and prints both
wall times and their ratio.  Issue 51's goals on 2 cores: first/second at most 2.0 for
``analyze`` and ``optimize -p nvidia_gl``, at most 1.5 for the default (portable)
``optimize``, of ``DamagedHelmet.glb``; the same with ``--read-only`` (the package folder not
writable by the user running the commands: as ``nobody`` when run as root).  The load average
is printed with each row, since the machine is shared.

    python benchmarks/bench_cold.py [--source DIR] [--venv DIR] [--read-only] [--mesh FILE]

``--venv DIR`` reuses an environment made by an earlier run (its package folder as installed
is kept beside it in ``DIR.installed``), skipping the install.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HELMET = ROOT.parent / "shared" / "gltf" / "DamagedHelmet" / "DamagedHelmet.glb"
PACKAGES = ("meshopt_batch", "gpu_probe", "pipeline_model", "meshes", "meshopt_batch_app")
#: Issue 51's goals: first run / second run.
GOALS = {"analyze": 2.0, "optimize -p nvidia_gl": 2.0, "optimize (portable)": 1.5}


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3]) if Path("/proc/loadavg").exists() else "?"


def _open_to_all(path: Path) -> None:
    """Let any user traverse ``path`` and its parents (``--read-only`` runs as another user)."""
    for p in [path, *path.parents]:
        if p == Path("/"):
            break
        try:
            p.chmod(p.stat().st_mode | 0o755)
        except OSError:
            break


def install(source: Path, venv: Path) -> float:
    """A fresh venv at ``venv`` with ``source`` installed; returns the install's seconds."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    start = time.perf_counter()
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(source)], check=True)
    return time.perf_counter() - start


def site_packages(venv: Path) -> Path:
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    out = subprocess.run([str(venv / "bin" / "python"), "-c", code], check=True, capture_output=True, text=True)
    return Path(out.stdout.strip())


def restore(site: Path, snapshot: Path) -> None:
    """The package folders as the install left them."""
    for name in PACKAGES:
        shutil.rmtree(site / name, ignore_errors=True)
        shutil.copytree(snapshot / name, site / name, symlinks=True)


def run(argv: list[str], env: dict, as_nobody: bool) -> tuple[float, str]:
    """Wall seconds of one fresh process of ``argv``, and its stderr; a failed run stops the benchmark."""
    prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if as_nobody else []
    start = time.perf_counter()
    proc = subprocess.run(prefix + argv, env=env, capture_output=True, text=True)
    took = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"{' '.join(argv)}: exit {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    return took, proc.stderr.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", type=Path, help="the tree to install (default: a clone of HEAD)")
    parser.add_argument("--venv", type=Path, help="reuse this environment (made by an earlier run)")
    parser.add_argument("--read-only", action="store_true", help="the package folder not writable by the runs")
    parser.add_argument("--mesh", type=Path, default=HELMET)
    args = parser.parse_args()
    if not args.mesh.is_file():
        print(f"no {args.mesh}: nothing to measure")
        return 0
    as_nobody = args.read_only and os.geteuid() == 0
    work = Path(tempfile.mkdtemp(prefix="bench-cold-"))
    _open_to_all(work)
    print(f"load before: {_load()}")
    if args.venv is None:
        source = args.source
        if source is None:
            source = work / "src"
            subprocess.run(["git", "clone", "-q", str(ROOT), str(source)], check=True)
        venv = work / "venv"
        took = install(source.resolve(), venv)
        print(f"pip install {source}: {took:.0f} s (load {_load()})")
        snapshot = venv.with_name(venv.name + ".installed")
        site = site_packages(venv)
        snapshot.mkdir()
        for name in PACKAGES:
            shutil.copytree(site / name, snapshot / name, symlinks=True)
    else:
        venv, snapshot = args.venv, args.venv.with_name(args.venv.name + ".installed")
        site = site_packages(venv)
    kernels = site / "meshopt_batch" / "_kernels"
    size = sum(f.stat().st_size for f in kernels.rglob("*") if f.is_file()) if kernels.is_dir() else 0
    print(f"environment: {venv}; shipped kernels: {size / 2**20:.1f} MiB")
    script = str(venv / "bin" / "meshopt-batch")
    out = work / "out"
    out.mkdir()
    _open_to_all(out)
    out.chmod(0o777)
    commands = {
        "analyze": [script, "analyze", str(args.mesh)],
        "optimize -p nvidia_gl": [script, "optimize", str(args.mesh), "-o", str(out / "out.glb"), "-p", "nvidia_gl"],
        "optimize (portable)": [script, "optimize", str(args.mesh), "-o", str(out / "out.glb")],
    }
    rows = []
    for label, argv in commands.items():
        restore(site, snapshot)
        if args.read_only and not as_nobody:
            subprocess.run(["chmod", "-R", "a-w", *[str(site / p) for p in PACKAGES]], check=True)
        home = Path(tempfile.mkdtemp(dir=work, prefix="home-"))
        home.chmod(0o777)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "XDG_", "PYTHON"))}
        env.update(HOME=str(home), MPLCONFIGDIR=str(home / "mpl"))
        first, note = run(argv, env, as_nobody)
        second, _ = run(argv, env, as_nobody)
        rows.append((label, first, second, _load(), note))
        if args.read_only and not as_nobody:
            subprocess.run(["chmod", "-R", "u+w", *[str(site / p) for p in PACKAGES]], check=True)
    version = subprocess.run([script, "--version"], capture_output=True, text=True).stdout.strip()
    restore(site, snapshot)
    mode = "read-only package, " if args.read_only else ""
    print(f"\n{mode}{args.mesh.name}: first run against second, fresh processes, empty user cache")
    print(f"{'command':24} {'first s':>8} {'second s':>9} {'ratio':>6} {'goal':>5}  load")
    for label, first, second, load, note in rows:
        print(f"{label:24} {first:8.1f} {second:9.1f} {first / second:6.2f} {GOALS[label]:5.1f}  {load}")
        if note:
            print(f"  first run's stderr: {note.splitlines()[-1][:300]}")
    if version:
        print("\n" + version)
    return 0


if __name__ == "__main__":
    sys.exit(main())
