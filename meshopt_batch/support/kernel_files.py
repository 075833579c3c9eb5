"""Where the compiled numba kernels live, what they were built for, and the one note when one is missing.

The shipped folder :data:`SHIPPED_DIR` (inside the installed package) holds the kernels a
build compiled and their :data:`MANIFEST`: the runtime they were built for (:func:`runtime`),
the SHA-256 of every source file of :data:`PACKAGES`, the files holding kernels, the kernel
count and the kernels no command reached.  Kernels compiled later go to :func:`write_dir`.
This module loads no numba (``meshopt-batch --version`` reads it).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import sys
import sysconfig
import tempfile
from functools import cache, lru_cache
from pathlib import Path

#: The packages whose kernels this cache holds (one distribution).
PACKAGES = ("meshopt_batch", "gpu_probe", "pipeline_model", "meshopt_batch_app")
#: The folder holding the packages (site-packages, or the repository for an editable install).
ROOT = Path(__file__).resolve().parents[2]
#: The compiled kernels inside the installed package.
SHIPPED_DIR = Path(__file__).resolve().parents[1] / "_kernels"
#: The file in :data:`SHIPPED_DIR` that says what the build compiled.
MANIFEST = "manifest.json"
#: The CPU name numba compiles portable code for (``NUMBA_CPU_NAME=generic``).
GENERIC_CPU = "generic"

_notes = {"said": False, "quiet": False}


def relative_source(path: str | os.PathLike) -> str | None:
    """``path`` relative to :data:`ROOT` (POSIX form) when it is a source file of :data:`PACKAGES`, else None."""
    try:
        rel = Path(path).resolve().relative_to(ROOT)
    except (ValueError, OSError):
        return None
    return rel.as_posix() if len(rel.parts) > 1 and rel.parts[0] in PACKAGES else None


@cache
def _hash_file(path: str, mtime_ns: int, size: int) -> str:
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def source_hash(path: str | os.PathLike) -> str:
    """SHA-256 of a source file's bytes: what its kernels' cache entries hold for (the install's file times do not
    matter).

    Raises
    ------
    OSError
        When the file cannot be read.
    """
    st = os.stat(path)
    return _hash_file(os.fspath(path), st.st_mtime_ns, st.st_size)


def _writable(folder: Path) -> bool:
    """Whether files can be created in ``folder`` (made if missing), tried as numba does."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
    except OSError:
        return False
    return True


@lru_cache(maxsize=1)
def write_dir() -> Path | None:
    """The folder kernels compiled in this process are written to, or None when none is writable.

    ``NUMBA_CACHE_DIR`` when set (numba's own setting), else :data:`SHIPPED_DIR` when writable,
    else a per-user folder (``$XDG_CACHE_HOME`` or ``~/.cache``), one per installed location.
    """
    key = hashlib.sha256(str(ROOT).encode()).hexdigest()[:12]
    if os.environ.get("NUMBA_CACHE_DIR"):
        candidates = [Path(os.environ["NUMBA_CACHE_DIR"]) / "meshopt-batch" / key]
    else:
        user = Path(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"))
        candidates = [SHIPPED_DIR] + ([user / "meshopt-batch" / "kernels" / key] if user.is_absolute() else [])
    return next((c for c in candidates if _writable(c)), None)


@lru_cache(maxsize=1)
def manifest() -> dict | None:
    """The shipped kernels' manifest, or None when absent or unreadable."""
    try:
        data = json.loads((SHIPPED_DIR / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    fields = isinstance(data, dict) and isinstance(data.get("sources"), dict)
    return data if fields and isinstance(data.get("kernel_sources"), list) else None


def runtime() -> dict:
    """What compiled kernels must have been built for: numba, llvmlite, Python and platform."""
    return {
        "numba": _version("numba"),
        "llvmlite": _version("llvmlite"),
        "python": sys.implementation.cache_tag,
        "platform": sysconfig.get_platform(),
    }


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def mismatch(built: dict) -> list[str]:
    """``field built -> running`` for each field of :func:`runtime` the build differs in."""
    now = runtime()
    return [f"{key} {built.get(key)} -> {now[key]}" for key in now if built.get(key) != now[key]]


def changed_sources(built: dict) -> list[str]:
    """The files holding kernels whose bytes differ from the build's (or that are gone)."""
    changed = []
    for rel in sorted(built["kernel_sources"]):
        try:
            same = source_hash(ROOT / rel) == built["sources"].get(rel)
        except OSError:
            same = False
        if not same:
            changed.append(rel)
    return changed


def quiet(flag: bool = True) -> None:
    """Silence :func:`note` (the warm-up compiles on purpose)."""
    _notes["quiet"] = flag


def note(text: str) -> None:
    """Say ``text`` on stderr, at most once per process (the first thing worth saying wins)."""
    if _notes["said"] or _notes["quiet"]:
        return
    _notes["said"] = True
    print(f"meshopt-batch: note: {text}", file=sys.stderr, flush=True)


def note_miss(kernel: str, source: str) -> None:
    """A kernel of ``source`` (relative to :data:`ROOT`) was not found compiled: say why, once.

    Silent in a source tree (an editable install or a checkout: :data:`ROOT` holds
    ``pyproject.toml``), where compiling on first use is a developer's normal, and where the
    source differs from the build's (an edit compiles as it would without this cache).
    """
    if _notes["said"] or _notes["quiet"] or (ROOT / "pyproject.toml").is_file():
        return
    built = manifest()
    if built is None:
        why = f"no compiled kernels in {SHIPPED_DIR}"
    elif mismatch(built):
        why = f"the compiled kernels in {SHIPPED_DIR} are for another runtime ({', '.join(mismatch(built))})"
    else:
        try:
            edited = source_hash(ROOT / source) != built["sources"].get(source)
        except OSError:
            edited = True
        if edited:
            return
        why = "not among the compiled kernels for these argument types"
    where = write_dir()
    keep = f"later runs load it from {where}" if where else "it cannot be kept: no writable cache folder"
    note(f"compiling {kernel}: {why}; this run is slower, {keep}")
