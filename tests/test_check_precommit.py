"""The pre-commit hooks of ``.pre-commit-hooks.yaml``, run by pre-commit itself in a git repository.

A hook repository is made from this checkout's ``.pre-commit-hooks.yaml`` (committed there, so
the file as it is now is what runs), a project repository uses it by path and ``rev``, and
``pre-commit install`` puts the hook into the project's ``.git/hooks``: a ``git commit`` that
adds a mesh in a shuffled order fails with check's table, one that adds its optimized version
(the fix the table names, for the default target) passes, one without meshes skips the hook.
The ``language: python`` hook installs this package into an environment of pre-commit's own
(every dependency, from the package index); it has the same entry and file pattern, and is
checked here by pre-commit's manifest validation.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import yaml

import meshes
from meshopt_batch.io import save_mesh

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _env(tmp_path: Path) -> dict:
    """Tools of this environment first; git and pre-commit isolated from the user's settings."""
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
            "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "artist",
            "GIT_AUTHOR_EMAIL": "artist@example.com", "GIT_COMMITTER_NAME": "artist",
            "GIT_COMMITTER_EMAIL": "artist@example.com"}


def _git(cwd: Path, env: dict, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """``git ARGS``; its ``stdout`` holds stderr too (where git shows a hook's output)."""
    proc = subprocess.run(["git", *args], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=300)
    assert not check or proc.returncode == 0, proc.stdout
    return proc


def test_the_hooks_manifest_is_valid_for_pre_commit():
    proc = subprocess.run([str(BIN / "pre-commit"), "validate-manifest", str(ROOT / ".pre-commit-hooks.yaml")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"meshopt-batch-check", "meshopt-batch-check-system"}
    assert {h["language"] for h in hooks.values()} == {"python", "system"}
    assert {(h["entry"], h["files"], h["require_serial"]) for h in hooks.values()} == \
        {("meshopt-batch check", r"(?i)\.(gltf|glb|obj|ply)$", True)}


def test_the_hook_fails_a_commit_of_an_unoptimized_mesh_and_passes_its_optimized_version(tmp_path):
    env = _env(tmp_path)
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    shutil.copy(ROOT / ".pre-commit-hooks.yaml", hooks)
    _git(hooks, env, "init", "-q")
    _git(hooks, env, "add", ".pre-commit-hooks.yaml")
    _git(hooks, env, "commit", "-q", "-m", "hooks")
    rev = _git(hooks, env, "rev-parse", "HEAD").stdout.strip()

    project = tmp_path / "project"
    project.mkdir()
    _git(project, env, "init", "-q")
    (project / ".pre-commit-config.yaml").write_text(yaml.safe_dump({"repos": [{
        "repo": str(hooks), "rev": rev,
        "hooks": [{"id": "meshopt-batch-check-system"}]}]}))
    _git(project, env, "add", ".pre-commit-config.yaml")
    _git(project, env, "commit", "-q", "-m", "pre-commit")
    proc = subprocess.run([str(BIN / "pre-commit"), "install"], cwd=project, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0 and (project / ".git" / "hooks" / "pre-commit").is_file(), proc.stderr

    (project / "notes.txt").write_text("no meshes here\n")
    _git(project, env, "add", "notes.txt")
    proc = _git(project, env, "commit", "-m", "notes")
    assert "meshopt-batch check (installed)" in proc.stdout and "Skipped" in proc.stdout

    (project / "assets").mkdir()
    mesh = meshes.torus(40, 20)
    order = np.random.default_rng(0).permutation(mesh.triangle_count)
    save_mesh(mesh.with_triangles(np.asarray(mesh.triangles)[order]), project / "assets" / "torus.ply")
    _git(project, env, "add", "assets/torus.ply")
    proc = _git(project, env, "commit", "-m", "add a torus", check=False)
    assert proc.returncode != 0
    assert "meshopt-batch check (installed)" in proc.stdout and "Failed" in proc.stdout
    table = next(line for line in proc.stdout.splitlines() if line.startswith("unoptimized"))
    assert table.split()[1:3] == ["assets/torus.ply", "-"]
    assert table.endswith("meshopt-batch optimize assets/torus.ply -o assets/torus.ply")
    assert _git(project, env, "rev-list", "--count", "HEAD").stdout.strip() == "2"

    fix = subprocess.run([str(BIN / "meshopt-batch"), "optimize", "assets/torus.ply", "-o", "assets/torus.ply"],
                         cwd=project, env=env, capture_output=True, text=True, timeout=300)
    assert fix.returncode == 0, fix.stderr
    _git(project, env, "add", "assets/torus.ply")
    proc = _git(project, env, "commit", "-m", "add an optimized torus")
    assert "meshopt-batch check (installed)" in proc.stdout and "Passed" in proc.stdout
    assert _git(project, env, "rev-list", "--count", "HEAD").stdout.strip() == "3"
