"""A library run: every mesh file of DIR optimized into OUTDIR, content-cached and resumable.

Steps of :func:`optimize_library`:

1. Take OUTDIR's run marker (``OUTDIR/.meshopt-batch-run``, locked with ``flock``: one run
   per OUTDIR at a time).  A marker left behind means the last run was interrupted: this
   run *resumes* it.  Remove the temporaries of interrupted writes anywhere under OUTDIR.
2. Find the inputs (:mod:`.discovery`) and hash each with its external files on a few
   threads (:mod:`.fingerprint`); each file's cache key follows.
3. Reuse: a file whose previous manifest entry has the same key, and whose output (and a
   ``.gltf`` output's external files) still hash as recorded, is not redone.  Its status
   becomes ``cached``, or stays what the interrupted run wrote when resuming, so that after
   a ``kill -9`` and a rerun every file reads ``ok`` once.  A file that failed with the same
   key fails again without running (the step is deterministic), unless its worker died
   (``transient``: memory, a crash), which is retried.
4. Share: files with equal keys (copies of one asset) are optimized once; the others get
   a copy of its output (``copied_from``).
5. Run the rest (:mod:`.dispatch` on :mod:`.local` or :mod:`.cluster`), appending each
   entry to the manifest as it comes (:mod:`.manifest`); a failed file's stale output from
   an earlier run is removed, so OUTDIR holds no output that disagrees with its input.
6. Rewrite the manifest compactly, ordered by path, and remove the marker.  A run that fails
   before it hands any file to a worker (no scheduler at the address) removes it too.

Outputs of files no longer in DIR are removed from OUTDIR (those that still hash as the
manifest recorded and that no current file uses) and dropped from the manifest.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import posixpath
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from tqdm import tqdm

from meshopt_batch.assets.file_optimization import AssetOptions
from meshopt_batch.support.errors import MeshoptBatchError
from meshopt_batch.support.files import atomic_path

from .cluster import DaskBackend, check_address
from .discovery import LibraryFile, check_folders, discover, is_temporary
from .dispatch import Job, run_jobs
from .fingerprint import Fingerprint, cache_key, fingerprint, options_fingerprint, reference_hashes, sha256_file
from .local import LocalBackend, default_workers
from .manifest import MANIFEST_NAME, ManifestWriter, read_manifest, write_manifest
from .memory import default_budget, estimate_memory, estimate_triangles
from .worker import Task

__all__ = ["RUN_MARKER", "LibraryResult", "LibrarySettings", "optimize_library", "sweep_temporaries"]

RUN_MARKER = ".meshopt-batch-run"
HASH_THREADS = 4
_RESULT_FIELDS = ("invocations", "triangles", "vertices_before", "vertices_after", "output_sha256",
                  "output_references", "bytes_out", "warnings", "primitives")


@dataclass
class LibrarySettings:
    """How a library run executes (the options of the files themselves are AssetOptions).

    Attributes
    ----------
    workers : int or None
        Worker processes on this machine (default: one per core).
    scheduler : str or None
        A Dask scheduler's address (``tcp://HOST:PORT``): run on that cluster instead.
    max_memory : int or None
        Bytes the files being optimized at once may take (default: the memory available).
    progress : bool or None
        Show a progress bar (None: when stderr is a terminal).
    """

    workers: int | None = None
    scheduler: str | None = None
    max_memory: int | None = None
    progress: bool | None = None


@dataclass
class LibraryResult:
    """What a library run did: the manifest's entries (ordered by path) and its timing.

    Attributes
    ----------
    entries : list of dict
        One manifest entry per input file, ordered by path.
    manifest : pathlib.Path
        ``OUTDIR/manifest.jsonl``.
    seconds : float
        Time the run took.
    workers : int
        Worker slots used.
    computed : int
        Files optimized in this run (the others came from the cache).
    counts : dict
        Files per status (``ok``, ``cached``, ``failed``, ``passed-through``).
    removed : list of str
        Output files removed because their input is no longer in the library.
    """

    entries: list[dict]
    manifest: Path
    seconds: float
    workers: int
    computed: int = 0
    counts: dict = field(default_factory=dict)
    #: output files removed because their input is no longer in the library
    removed: list[str] = field(default_factory=list)

    @property
    def failed(self) -> list[dict]:
        """The entries of the files that failed."""
        return [e for e in self.entries if e["status"] == "failed"]


@dataclass
class _Input:
    file: LibraryFile
    fp: Fingerprint
    key: str
    memory: int


def sweep_temporaries(out: Path) -> int:
    """Remove every atomic-write temporary under ``out``; returns how many."""
    removed = 0
    for folder, _dirs, files in os.walk(out):
        for name in files:
            if is_temporary(name):
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(folder, name))
                    removed += 1
    return removed


@contextlib.contextmanager
def _run_marker(out: Path):
    """Hold OUTDIR's run marker; yields whether an interrupted run left it behind."""
    path = out / RUN_MARKER
    resumed = path.exists()
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise MeshoptBatchError(f"{out}: another meshopt-batch run is writing this folder") from None
        state = {"resumed": resumed, "finished": False, "dispatched": False}
        try:
            yield state
        except BaseException:
            # an error before any file went to a worker (e.g. no scheduler) interrupted nothing
            if not resumed and not state["dispatched"]:
                state["finished"] = True
            raise
        finally:
            if state["finished"]:
                os.unlink(path)
    finally:
        os.close(fd)


def _inspect(source: Path, files: list[LibraryFile], options: AssetOptions) -> list[_Input]:
    opts = options_fingerprint(options)

    def one(f: LibraryFile) -> _Input:
        path = source / f.path
        fp = fingerprint(path)
        key = cache_key(fp, opts, PurePosixPath(f.output).name)
        return _Input(f, fp, key, estimate_memory(fp.bytes, estimate_triangles(path, fp.document)))

    with ThreadPoolExecutor(HASH_THREADS) as pool:
        return list(pool.map(one, files))


def _output_intact(out: Path, entry: dict) -> bool:
    target = out / entry.get("output", "")
    try:
        if entry.get("output_sha256") != sha256_file(target):
            return False
    except OSError:
        return False
    refs = entry.get("output_references") or {}
    return not refs or reference_hashes(target.parent, sorted(refs))[0] == refs


def _reuse(out: Path, inputs: list[_Input], previous: dict, resumed: bool) -> dict[str, dict]:
    def check(item: _Input):
        prev = previous.get(item.file.path)
        if prev is None or prev.get("key") != item.key or prev.get("output") != item.file.output:
            return None
        if prev["status"] == "failed":
            return None if prev.get("transient") else prev
        start = time.perf_counter()
        if not _output_intact(out, prev):
            return None
        if resumed:
            return prev
        return {**prev, "status": "cached", "seconds": round(time.perf_counter() - start, 4)}

    with ThreadPoolExecutor(HASH_THREADS) as pool:
        found = pool.map(check, inputs)
    return {item.file.path: entry for item, entry in zip(inputs, found, strict=True) if entry is not None}


def _base_entry(item: _Input) -> dict:
    entry = {"path": item.file.path, "output": item.file.output, "key": item.key,
             "input_sha256": item.fp.sha256, "bytes_in": item.fp.bytes}
    if item.fp.references:
        entry["references"] = item.fp.references
    return entry


def _copy_output(out: Path, donor: dict, item: _Input) -> dict:
    """The output of an equal-keyed file copied to ``item``'s output path; its entry."""
    start = time.perf_counter()
    src, dst = out / donor["output"], out / item.file.output
    refs = sorted(uri for uri in donor.get("output_references") or {} if _beside(uri))
    pairs = [(src, dst)] + [(src.parent / uri, dst.parent / uri) for uri in refs]
    for a, b in pairs:
        b.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(b) as tmp:
            shutil.copyfile(a, tmp)
    entry = _base_entry(item)
    entry.update({k: donor[k] for k in _RESULT_FIELDS if k in donor})
    if "warnings" in entry:
        entry["warnings"] = [w.replace(donor["path"], item.file.path) for w in entry["warnings"]]
    entry["status"] = "ok" if donor.get("triangles") else "passed-through"
    entry["copied_from"] = donor["path"]
    entry["seconds"] = round(time.perf_counter() - start, 4)
    return entry


def _beside(uri: str) -> bool:
    """An external file's URI that names a file beside the output or below it (one this tool
    copied there); a URI with ".." was referred to, not copied."""
    return ".." not in uri.split("/") and not posixpath.isabs(uri)


def _unlink_if_ours(out: Path, rel: str, sha: str) -> bool:
    """Remove ``OUTDIR/rel`` when it lies inside OUTDIR (links followed) and still hashes as
    the manifest recorded; whether it was removed."""
    target = out / rel
    with contextlib.suppress(OSError):
        if target.parent.resolve().is_relative_to(out.resolve()) and sha256_file(target) == sha:
            target.unlink()
            return True
    return False


def _remove_stale_output(out: Path, previous: dict | None) -> None:
    if previous and previous.get("output_sha256"):
        _unlink_if_ours(out, previous["output"], previous["output_sha256"])


def _remove_outputs_of_deleted_inputs(out: Path, inputs: list[_Input], previous: dict, done: dict) -> list[str]:
    """Remove the outputs (and a ``.gltf`` output's external files) that the previous manifest
    recorded for inputs no longer in the library, and the folders that leaves empty; returns the
    removed files' paths relative to ``out``.

    Only files this tool wrote are removed: each must still hash as the manifest recorded, and
    none may be an output or external file of a current input.  Runs before the manifest is
    rewritten, so a crash here leaves the records for the next run to finish the job.
    """
    current = {item.file.path for item in inputs}
    keep = {item.file.output for item in inputs}
    for entry in done.values():
        folder = posixpath.dirname(entry["output"])
        keep.update(posixpath.normpath(posixpath.join(folder, uri)) for uri in entry.get("output_references") or {})
    removed = []
    for path, entry in sorted(previous.items()):
        if path in current or not entry.get("output_sha256"):
            continue
        folder = posixpath.dirname(entry["output"])
        files = [(entry["output"], entry["output_sha256"])]
        # external files copied beside the output (a URI with ".." was referred to, not copied)
        files += [(posixpath.normpath(posixpath.join(folder, uri)), sha)
                  for uri, sha in sorted((entry.get("output_references") or {}).items()) if _beside(uri)]
        for rel, sha in files:
            if rel not in keep and _unlink_if_ours(out, rel, sha):
                removed.append(rel)
    for folder in sorted({(out / rel).parent for rel in removed}, key=lambda p: -len(p.parts)):
        with contextlib.suppress(OSError):  # folders left empty go too (deepest first)
            while folder != out and folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
                folder = folder.parent
    return removed


def _make_backend(settings: LibrarySettings, jobs: int):
    if settings.scheduler:
        return DaskBackend(settings.scheduler, settings.workers)
    return LocalBackend(max(1, min(settings.workers or default_workers(), jobs)))


def optimize_library(source: str | os.PathLike, out: str | os.PathLike, options: AssetOptions,
                     settings: LibrarySettings | None = None) -> LibraryResult:
    """Optimize every mesh file under ``source`` into the same relative path under ``out``.

    Each file is written as ``optimize_file`` writes it; ``out/manifest.jsonl`` records every
    file, and a rerun reuses what is unchanged (content cache) and finishes an interrupted run.

    Parameters
    ----------
    source : str or os.PathLike
        The library's folder.
    out : str or os.PathLike
        The output folder (made when absent); it mirrors ``source``.
    options : AssetOptions
        The options of every file (as for one file).
    settings : LibrarySettings, optional
        Workers, Dask scheduler, memory budget, progress bar.

    Returns
    -------
    LibraryResult
        The manifest's entries, counts per status and timing.

    Raises
    ------
    MeshoptBatchError
        Bad folders, a bad scheduler address or settings, another run holding ``out``.
        A file that cannot be optimized does not raise: its entry is ``failed``.
    """
    settings = settings or LibrarySettings()
    start = time.perf_counter()
    source, out = Path(source).absolute(), Path(out).absolute()
    check_folders(source, out)
    if settings.scheduler:
        check_address(settings.scheduler)
    if settings.workers is not None and settings.workers < 1:
        raise MeshoptBatchError(f"--workers {settings.workers}: must be at least 1")
    out.mkdir(parents=True, exist_ok=True)
    with _run_marker(out) as state:
        sweep_temporaries(out)
        inputs = _inspect(source, discover(source, out), options)
        previous = read_manifest(out / MANIFEST_NAME)
        done = _reuse(out, inputs, previous, state["resumed"])
        removed = _remove_outputs_of_deleted_inputs(out, inputs, previous, done)
        write_manifest(out / MANIFEST_NAME, done.values())
        todo = [item for item in inputs if item.file.path not in done]
        result = _run(source, out, options, settings, todo, done, previous, len(inputs), state)
        entries = [done[item.file.path] for item in inputs]
        write_manifest(out / MANIFEST_NAME, entries)
        state["finished"] = True
    counts = {}
    for e in entries:
        counts[e["status"]] = counts.get(e["status"], 0) + 1
    return LibraryResult(entries, out / MANIFEST_NAME, time.perf_counter() - start, result["workers"],
                         result["computed"], counts, removed)


class _Run:
    """The part of a library run that computes: jobs out, entries into the manifest."""

    def __init__(self, source: Path, out: Path, options: AssetOptions, done: dict, previous: dict,
                 writer: ManifestWriter, bar):
        self.source, self.out, self.options = source, out, options
        self.done, self.previous, self.writer, self.bar = done, previous, writer, bar
        self.followers: dict[int, list[_Input]] = {}
        self.leaders: dict[int, _Input] = {}
        self.computed = 0

    def finish(self, entry: dict) -> None:
        if entry["status"] == "failed":
            _remove_stale_output(self.out, self.previous.get(entry["path"]))
        self.done[entry["path"]] = entry
        self.writer.append(entry)
        self.bar.update(1)

    def job(self, leader: _Input, followers: list[_Input]) -> Job:
        index = len(self.leaders)
        output = self.out / leader.file.output
        output.parent.mkdir(parents=True, exist_ok=True)
        task = Task(leader.file.path, str(self.source / leader.file.path), str(output), leader.file.output,
                    self.options)
        self.leaders[index], self.followers[index] = leader, followers
        lock = str(PurePosixPath(leader.file.output).parent) if output.suffix.lower() == ".gltf" else None
        return Job(index, task, leader.memory, lock)

    def share(self, donor: dict, members: list[_Input]) -> list[Job]:
        """Copy ``donor``'s output to each member; after a failure, one job per member."""
        if donor["status"] == "failed":
            return [self.job(item, []) for item in members]
        for item in members:
            self.finish(_copy_output(self.out, donor, item))
        return []

    def on_result(self, job: Job, fields: dict) -> list[Job]:
        self.computed += 1
        entry = {**_base_entry(self.leaders[job.index]), **fields}
        self.finish(entry)
        return self.share(entry, self.followers.pop(job.index))

    def on_lost(self, job: Job, message: str) -> None:
        self.on_result(job, {"status": "failed", "error": message, "transient": True, "seconds": 0.0})

    def plan(self, todo: list[_Input]) -> list[Job]:
        donors: dict[str, dict] = {}
        for entry in self.done.values():
            donors.setdefault(entry.get("key"), entry)
        groups: dict[str, list[_Input]] = {}
        for item in todo:
            groups.setdefault(item.key, []).append(item)
        jobs = []
        for key, members in groups.items():
            if key in donors:
                jobs += self.share(donors[key], members)
            else:
                jobs.append(self.job(members[0], members[1:]))
        return jobs


def _run(source, out, options, settings, todo, done, previous, total, state) -> dict:
    bar = tqdm(total=total, initial=len(done), unit=" files", desc="optimize", file=sys.stderr,
               dynamic_ncols=True, disable=None if settings.progress is None else not settings.progress)
    backend = None
    with ManifestWriter(out / MANIFEST_NAME) as writer:
        run = _Run(source, out, options, done, previous, writer, bar)
        try:
            jobs = run.plan(todo)
            if jobs:
                backend = _make_backend(settings, len(jobs))
                budget = settings.max_memory or default_budget(backend.slots)
                state["dispatched"] = True
                run_jobs(jobs, backend, budget, run.on_result, run.on_lost)
                backend.close()
        except BaseException:
            if backend is not None:
                backend.close(cancel=True)
            raise
        finally:
            bar.close()
    return {"workers": backend.slots if backend is not None else 0, "computed": run.computed}
