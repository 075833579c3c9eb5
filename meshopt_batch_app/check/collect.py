"""The files ``check`` judges and what ``optimize`` reaches on each, from the cache or computed.

Files: each PATH that is a file (a mesh format, :data:`..library.discovery.MESH_SUFFIXES`), and
every mesh file under each PATH that is a folder, found as ``optimize DIR`` finds them
(:func:`..library.discovery.discover`).  A file named twice is judged once.

Each file is hashed with its external files and keyed as the library runner keys it
(:mod:`..library.fingerprint`).  A key found in the cache (:mod:`.cache`), or known from a
baseline manifest as ``optimize``'s own output (:mod:`.provenance`), is judged from there; the
others are optimized exactly as ``optimize DIR`` optimizes a file, by the library's worker
(:func:`..library.worker.optimize_one`, the same options), into a temporary folder that is
removed as soon as the file's figures are read: nothing is written beside the assets.  The
cache keeps each file's record and its output's (:func:`.provenance.output_record`).  Files
with equal keys (copies of one asset) are computed once.  Several files run on the library's
process pool (:class:`..library.local.LocalBackend`, largest first within the memory budget,
:func:`..library.dispatch.run_jobs`); a single one runs in this process.
"""

from __future__ import annotations

import posixpath
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from meshopt_batch.assets.file_optimization import WRITABLE_SUFFIXES, AssetOptions
from meshopt_batch.support.errors import MeshoptBatchError

from ..library.discovery import FALLBACK_SUFFIX, MESH_SUFFIXES, discover
from ..library.dispatch import Job, run_jobs
from ..library.fingerprint import Fingerprint, cache_key, fingerprint, options_fingerprint
from ..library.local import LocalBackend, default_workers
from ..library.memory import default_budget, estimate_memory, estimate_triangles
from ..library.worker import Task, one_line, optimize_one
from .cache import ResultCache
from .provenance import PROVENANCE, output_key, output_record

__all__ = ["Checked", "Computed", "collect", "compute", "find_files"]

HASH_THREADS = 4


@dataclass
class Checked:
    """One file to judge.

    Attributes
    ----------
    display : str
        As messages name it: a PATH as given, or a folder PATH joined with the file's path in it.
    path : Path
        Absolute.
    output_name : str
        The name its optimized output would have (its own suffix, or ``.ply``).
    fp : Fingerprint or None
        Hashes; None when the file could not be read.
    key : str
        The content-cache key.
    fields : dict or None
        Its record: the worker's fields plus ``bytes_in`` (None until found or computed).
    cached : bool
        Whether ``fields`` came from the cache or a baseline (not computed now).
    vouched : bool
        Whether they came from a baseline manifest that vouches for the file as ``optimize``'s output.
    """

    display: str
    path: Path
    output_name: str
    fp: Fingerprint | None = None
    key: str = ""
    fields: dict | None = None
    cached: bool = False
    vouched: bool = False


@dataclass
class Computed:
    """What finding the figures took: files computed, from the cache (``outputs`` of them known
    as ``optimize``'s own output, :mod:`.provenance`) and vouched for by a baseline, seconds, workers."""

    computed: int = 0
    cached: int = 0
    outputs: int = 0
    vouched: int = 0
    seconds: float = 0.0
    workers: int = 0
    compute_seconds: list = field(default_factory=list)


def _output_name(name: str) -> str:
    suffix = PurePosixPath(name).suffix.lower()
    return name if suffix in WRITABLE_SUFFIXES else str(PurePosixPath(name).with_suffix(FALLBACK_SUFFIX))


def find_files(paths: list[str]) -> tuple[list[Checked], list[Path]]:
    """The files of ``paths`` and the folders among them (resolved).

    Raises
    ------
    MeshoptBatchError
        A path that does not exist, or a file that is not a mesh format.
    """
    files: list[Checked] = []
    folders: list[Path] = []
    seen: set[Path] = set()

    def add(display: str, path: Path, output: str) -> None:
        real = path.resolve()
        if real not in seen:
            seen.add(real)
            files.append(Checked(display, path.absolute(), PurePosixPath(output).name))

    for given in paths:
        p = Path(given)
        if p.is_dir():
            folders.append(p.resolve())
            for f in discover(p):
                add(posixpath.normpath(posixpath.join(Path(given).as_posix(), f.path)), p / f.path, f.output)
        elif p.is_file():
            if p.suffix.lower() not in MESH_SUFFIXES:
                raise MeshoptBatchError(f"{given}: not a mesh file (check reads {', '.join(MESH_SUFFIXES)})")
            add(given, p, _output_name(p.name))
        else:
            raise MeshoptBatchError(f"{given}: no such file or folder")
    return files, folders


def collect(files: list[Checked], options: AssetOptions, cache: ResultCache, vouched: dict | None = None) -> None:
    """Hash every file (a few threads), key it, and take its record from the cache, else from
    ``vouched`` (key -> record: the outputs a baseline manifest vouches for, :mod:`.provenance`;
    kept in the cache)."""
    opts = options_fingerprint(options)
    vouched = vouched or {}

    def one(item: Checked) -> None:
        try:
            item.fp = fingerprint(item.path)
        except OSError as exc:
            item.fields = {"status": "failed", "error": f"{item.display}: cannot read: {exc.strerror or exc}"}
            return
        item.key = cache_key(item.fp, opts, item.output_name)
        found = cache.get(item.key)
        if found is None and item.key in vouched:
            found, item.vouched = vouched[item.key], True
            cache.put(item.key, found)   # known without the baseline from now on
        if found is not None:
            item.fields, item.cached = {**found, "bytes_in": item.fp.bytes}, True

    with ThreadPoolExecutor(HASH_THREADS) as pool:
        list(pool.map(one, files))


def _task(item: Checked, folder: Path, index: int, options: AssetOptions) -> Task:
    out = folder / str(index)
    out.mkdir()
    return Task(item.display, str(item.path), str(out / item.output_name), item.output_name, options)


def compute(files: list[Checked], options: AssetOptions, cache: ResultCache, *, workers: int | None = None,
            progress: bool = False) -> Computed:
    """Optimize (into a temporary folder) every file without a record; keep each record in the cache."""
    start = time.perf_counter()
    todo = [f for f in files if f.fields is None]
    stats = Computed(cached=sum(f.cached and not f.vouched for f in files), vouched=sum(f.vouched for f in files),
                     outputs=sum(f.cached and not f.vouched and f.fields.get("provenance") == PROVENANCE
                                 for f in files))
    groups: dict[str, list[Checked]] = {}
    for item in todo:
        groups.setdefault(item.key, []).append(item)
    if not groups:
        return stats
    leaders = list(groups.values())
    opts = options_fingerprint(options)
    with tempfile.TemporaryDirectory(prefix="meshopt-batch-check-") as tmp:
        tasks = [_task(members[0], Path(tmp), i, options) for i, members in enumerate(leaders)]

        def finish(index: int, fields: dict) -> None:
            shutil.rmtree(Path(tmp) / str(index), ignore_errors=True)
            leader = leaders[index][0]
            cache.put(leader.key, fields)
            written = output_record(fields)
            if written is not None and output_key(fields, opts, leader.output_name) != leader.key:
                cache.put(output_key(fields, opts, leader.output_name), written)
            stats.computed += 1
            stats.compute_seconds.append(fields.get("seconds", 0.0))
            for member in leaders[index]:
                record = dict(fields)
                if "error" in record:
                    record["error"] = record["error"].replace(leaders[index][0].display, member.display)
                member.fields = {**record, "bytes_in": member.fp.bytes}
            bar.update(1)

        from tqdm import tqdm  # lazy: a run judged from the cache draws no bar

        bar = tqdm(total=len(tasks), unit=" files", desc="check: optimize", file=sys.stderr, dynamic_ncols=True,
                   disable=not progress)
        with bar:
            slots = max(1, min(workers or default_workers(), len(tasks)))
            stats.workers = slots
            if slots == 1:
                for i, task in enumerate(tasks):
                    finish(i, optimize_one(task))
            else:
                _in_pool(tasks, leaders, slots, finish)
    stats.seconds = time.perf_counter() - start
    return stats


def _in_pool(tasks: list[Task], leaders: list[list[Checked]], slots: int, finish) -> None:
    jobs = [Job(i, task, estimate_memory(leaders[i][0].fp.bytes,
                                         estimate_triangles(leaders[i][0].path, leaders[i][0].fp.document)))
            for i, task in enumerate(tasks)]
    backend = LocalBackend(slots)
    try:
        run_jobs(jobs, backend, default_budget(slots), lambda job, fields: finish(job.index, fields),
                 lambda job, message: finish(job.index, {"status": "failed", "transient": True,
                                                         "error": one_line(f"{job.payload.path}: {message}",
                                                                           job.payload)}))
    except BaseException:
        backend.close(cancel=True)
        raise
    backend.close()
