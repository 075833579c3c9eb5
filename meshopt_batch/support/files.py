"""Writing output files atomically: complete or not at all.

Every file the library and the command line write goes through :func:`atomic_write` (bytes or
text) or :func:`atomic_path` (for writers that want a path, such as ``pandas.to_csv`` or
``matplotlib.savefig``).  The data is written to a temporary file beside the target and moved
over it with :func:`os.replace`, so a reader sees the old file or the new one, never half of one.

Temporary files are named ``.<target name>.meshopt-batch-<pid>-<random>.tmp``.  A process
killed while writing leaves at most that one file; the next write of the same target removes
every stale temporary of its own name before it starts (:func:`remove_stale_temporaries`):
those of processes that are no longer running (a temporary of a live process, another run
writing the same file at the same time, is left to it).  Files that must appear together (a
run's images) are written into one staging folder, ``.meshopt-batch-<pid>-<random>.tmp``
inside their folder, with the same rule for stale ones (:func:`staging_directory`).

The written file gets the permissions a plain ``open()`` would give (``0o666 & ~umask``),
not ``mkstemp``'s ``0o600``.  A target that is a symbolic link is written through the link
(the link's target file is replaced; the link stays).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from .errors import MeshoptBatchError

__all__ = ["TEMP_MARK", "atomic_path", "atomic_write", "output_folder", "remove_stale_temporaries", "resolve_target",
           "staging_directory"]

#: The part of a temporary file's name that marks it as ours.
TEMP_MARK = ".meshopt-batch-"
_TEMP_SUFFIX = ".tmp"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def resolve_target(path: str | os.PathLike) -> Path:
    """The file a write to ``path`` replaces: ``path`` itself, or the file a symlink points to."""
    p = Path(path)
    if p.is_symlink():
        return Path(os.path.realpath(p))
    return p


def _temp_prefix(target: Path) -> str:
    return f".{target.name}{TEMP_MARK}"


def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except PermissionError:
        return True
    except (OSError, OverflowError, ValueError):
        return False
    return True


def _stale(name: str, prefix: str) -> bool:
    """Whether ``name`` is one of our temporaries with ``prefix`` whose writer is gone (a name
    without a process id, as older versions wrote, counts as gone)."""
    if not (name.startswith(prefix) and name.endswith(_TEMP_SUFFIX)):
        return False
    pid, sep, _rest = name[len(prefix):].partition("-")
    return not (sep and pid.isdigit() and int(pid) != os.getpid() and _process_alive(int(pid)))


def remove_stale_temporaries(target: str | os.PathLike) -> int:
    """Remove temporaries left by earlier, interrupted writes of ``target``; returns how many."""
    target = Path(target)
    directory = target.parent if str(target.parent) else Path(".")
    prefix = _temp_prefix(target)
    removed = 0
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return 0
    for entry in entries:
        if _stale(entry.name, prefix):
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
                removed += 1
    return removed


def output_folder(path: str | os.PathLike, what: str, *, create: bool = True) -> Path:
    """The folder ``path``, checked writable before any work is done; ``what`` names it in the
    one-line error (an option such as ``--out``).  ``create``: make it (with its parents) now;
    else only check that it is a folder, or could be made in the nearest folder that exists."""
    folder = Path(path)
    existing = folder
    while not create and not existing.exists() and existing.parent != existing:
        existing = existing.parent
    try:
        if create:
            folder.mkdir(parents=True, exist_ok=True)
        elif not existing.is_dir():
            raise FileExistsError
        with tempfile.TemporaryFile(dir=existing):
            pass
    except FileExistsError:
        raise MeshoptBatchError(f"{what} {path}: {existing} exists and is not a folder") from None
    except OSError as exc:
        raise MeshoptBatchError(f"{what} {path}: cannot write there ({exc.strerror or exc})") from None
    return folder


def staging_directory(directory: str | os.PathLike) -> Path:
    """A new hidden folder inside ``directory`` for files that must appear together; the
    caller moves them out (:func:`os.replace`) when all are written and removes the folder.
    Staging folders of earlier runs that were killed are removed first."""
    directory = Path(directory)
    prefix = TEMP_MARK
    with contextlib.suppress(OSError):
        for entry in os.scandir(directory):
            if _stale(entry.name, prefix) and entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", suffix=_TEMP_SUFFIX, dir=directory))


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """A temporary path to write, moved over ``path`` when the block ends without an error.

    Examples
    --------
    >>> with atomic_path("table.csv") as tmp:        # doctest: +SKIP
    ...     frame.to_csv(tmp, index=False)
    """
    target = resolve_target(path)
    directory = target.parent if str(target.parent) else Path(".")
    if not directory.is_dir():
        raise MeshoptBatchError(f"{path}: directory {directory} does not exist")
    remove_stale_temporaries(target)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f"{_temp_prefix(target)}{os.getpid()}-", suffix=_TEMP_SUFFIX,
                                   dir=directory)
    except OSError as exc:
        raise MeshoptBatchError(f"{path}: cannot write: {exc.strerror or exc}") from None
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and not isinstance(exc, MeshoptBatchError):
            raise MeshoptBatchError(f"{path}: cannot write: {exc.strerror or exc}") from None
        raise


def atomic_write(path: str | os.PathLike, data: bytes | str) -> Path:
    """Write ``data`` (bytes, or text as UTF-8) to ``path`` atomically; returns the path written.

    Raises
    ------
    MeshoptBatchError
        The directory does not exist or the file cannot be written (one line, names the file).
    """
    payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(payload)
    return resolve_target(path)
