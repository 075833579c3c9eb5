"""The build backend: setuptools, with the numba kernels compiled into the wheel.

``pyproject.toml`` names this module as the PEP 517 backend (``backend-path``) and its
classes as setuptools commands:

* :func:`get_requires_for_build_wheel` adds the project's runtime dependencies to the build
  environment, because the warm-up runs the commands;
* :class:`BuildPy`, after copying the packages into the build folder, runs
  ``python -m meshopt_batch_app.warm_kernels`` there with ``NUMBA_CPU_NAME=generic``, so the
  wheel carries ``meshopt_batch/_kernels/`` (see :mod:`meshopt_batch.support.kernel_cache`); an
  editable install skips it (``make setup`` warms the source tree instead);
* :class:`BdistWheel` tags the wheel for this Python and platform: it holds machine code
  compiled for them by this numba.

A warm-up that fails leaves a wheel without compiled kernels and says so; such an install
says so again on its first run (``meshopt-batch: note: ...``) and compiles as numba does.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403 -- every other hook is setuptools' own
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_py import build_py

#: Variables that would send the warm-up's kernels elsewhere or change how they are compiled.
_CLEARED = ("NUMBA_CACHE_DIR", "NUMBA_CPU_FEATURES", "NUMBA_DISABLE_JIT", "NUMBA_CACHE_LOCATOR_CLASSES")


def get_requires_for_build_wheel(config_settings=None):
    """setuptools' build requirements plus the runtime dependencies the warm-up imports."""
    with open("pyproject.toml", "rb") as fh:
        dependencies = tomllib.load(fh)["project"]["dependencies"]
    return _setuptools.get_requires_for_build_wheel(config_settings) + list(dependencies)


def compile_kernels(build_lib: Path) -> bool:
    """Run the warm-up on the packages in ``build_lib``; True when it wrote a manifest."""
    target = build_lib / "meshopt_batch" / "_kernels"
    shutil.rmtree(target, ignore_errors=True)
    env = {k: v for k, v in os.environ.items() if k not in _CLEARED}
    env.update(NUMBA_CPU_NAME="generic", PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.pathsep.join(p for p in (str(build_lib), os.environ.get("PYTHONPATH")) if p))
    print(f"compiling the numba kernels into {target} (takes minutes)", file=sys.stderr, flush=True)
    run = subprocess.run([sys.executable, "-m", "meshopt_batch_app.warm_kernels"], cwd=build_lib, env=env)
    if run.returncode != 0 or not (target / "manifest.json").is_file():
        print(f"warning: the numba kernels were not compiled (warm-up exit {run.returncode}): "
              "the installed package compiles each on its first use", file=sys.stderr, flush=True)
        shutil.rmtree(target, ignore_errors=True)
        return False
    return True


class BuildPy(build_py):
    """``build_py``, then the kernels compiled into the build folder (not for an editable install)."""

    def run(self):
        super().run()
        if not self.editable_mode:
            compile_kernels(Path(self.build_lib).resolve())


class BdistWheel(bdist_wheel):
    """A wheel tagged for this Python and platform (it carries compiled kernels)."""

    def finalize_options(self):
        super().finalize_options()
        self.root_is_pure = False
