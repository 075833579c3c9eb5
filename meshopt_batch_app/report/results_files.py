"""The measured-results files of a ``results/`` folder, read and grouped by GPU and API.

``benchmarks/bench_probe.py --results``, ``bench_block_rule.py``, ``bench_assets_gpu.py`` and
the raster check write their raw measurements as ``<gpu>_<what>_<date>.<ext>`` (CSV, JSON,
NPZ, PNG, a machine log).  What a file holds is recognised from its contents (its columns or
fields), not from its name, and so are the renderer, the driver and the date it was measured
with; files are grouped by (renderer, API).  A file that names no renderer (a fitted profile,
a per-order summary, a figure, the machine log) joins the group of the same date whose file
names share the longest prefix with its own.  A new file of a known kind appears in the report
without a code change; a file of an unknown kind is still listed.

What the report reads of a file of a known kind is checked when it is read
(:data:`CSV_COLUMNS`, :func:`_check_json`, :func:`_check_npz`): a missing column or field, or a
value of the wrong type (``measured`` = ``abc``, ``"predictions": 5``), refuses the whole
results folder with one line naming the file and the column or JSON pointer, before the report
runs anything, as an unreadable file does.
"""

from __future__ import annotations

import json
import os
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from meshopt_batch.model.profiles import Profile, get_profile
from meshopt_batch.support.errors import MeshoptBatchError
from meshopt_batch.support.json_values import describe, pointer

__all__ = ["GPUResults", "ResultsFile", "default_results_dir", "read_results", "read_results_file"]

_DATE = re.compile(r"(\d{4}-\d{2}-\d{2})")

#: What a CSV holds, recognised by columns it must have (first match wins).
CSV_KINDS = (
    ("accuracy", {"measured", "predicted", "profile", "order", "kind"}),
    ("mse", {"profile", "mse", "exact_cases", "cases"}),
    ("optimizers", {"method", "numbering", "measured", "measured_asr"}),
    ("assets", {"asset", "variant", "measured"}),
    ("waves", {"waves", "batches", "waves_equal_to_a_batch"}),
    ("block_fix", {"fix_numbering", "vertex_copies", "measured"}),
    ("raster_check", {"scene", "frame", "coverage_diff_pixels", "shaded_diff_pixels"}),
    ("mse_by_order", {"profile", "original"}),
)

#: The columns of a CSV kind that the report reads and what each holds: ``"int"`` whole
#: numbers (at most 2^53) in every row, ``"num"`` finite numbers or empty cells, ``"text"`` anything (read as
#: text, an empty cell as "").  A name ending in ``?`` is checked only when the column is there.
#: The columns named after a profile (``nvidia_gl``, ``nvidia_gl_asr``) are numbers too.
CSV_COLUMNS = {
    "accuracy": {"mesh": "text", "order": "text", "kind": "text", "profile": "text", "triangles": "num",
                 "measured": "int", "predicted": "int"},
    "optimizers": {"mesh": "text", "method": "text", "numbering": "text", "triangles": "num",
                   "measured": "int", "measured_asr": "num"},
    "assets": {"asset": "text", "variant": "text", "vertices": "num", "measured": "int"},
    "waves": {"profile": "text", "waves": "int", "batches": "int", "waves_equal_to_a_batch": "int",
              "invocations_model": "int", "invocations_waves": "int"},
    "raster_check": {"scene": "text", "frame": "num", "coverage_diff_pixels": "int", "shaded_diff_pixels": "int",
                     "shaded_total_model?": "num", "shaded_total_gl?": "num", "depth_diff_pixels?": "num"},
}

#: Human names of the kinds.
KIND_NAMES = {
    "experiments": "experiments and fit (paper 001 sec. 3.3)",
    "accuracy": "predicted vs measured ASR per profile",
    "mse": "MSE per profile",
    "mse_by_order": "MSE per profile and order",
    "optimizers": "measured ASR of every optimizer",
    "assets": "glTF asset draws",
    "waves": "waves vs batches (sec. 3.2)",
    "block_fix": "2^16 block fix",
    "raster_check": "raster check per frame",
    "block_rule": "2^16 block-rule draws",
    "renumber": "vertex renumbering",
    "probe": "probe of one mesh",
    "profile": "fitted profile",
    "figure": "figure",
    "log": "machine log",
    "table": "table",
    "record": "record",
}


@dataclass
class ResultsFile:
    """One results file: what it holds, what it was measured on, and its data.

    Attributes
    ----------
    path : Path
    kind : str
        A key of :data:`KIND_NAMES`.
    renderer, driver, date : str or None
        As the file's contents state them (``date`` falls back to the file name's).
    api : str or None
        ``OpenGL``, or the WebGPU backend (``Vulkan (WebGPU)``, ...) the file names; None when
        it names none (the OpenGL tools write no API field).
    records : int
        Rows (CSV), draws (block-rule NPZ), recorded draws (experiments) or 0.
    data : object
        A DataFrame (CSV), a dict (JSON, NPZ arrays) or None.
    by_name : bool
        The contents name no renderer: the file was grouped by its name and date.
    """

    path: Path
    kind: str
    renderer: str | None = None
    api: str | None = None
    driver: str | None = None
    date: str | None = None
    records: int = 0
    data: object = None
    by_name: bool = False


@dataclass
class GPUResults:
    """Every results file measured on one renderer through one API."""

    renderer: str
    api: str
    files: list = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.renderer} ({self.api})"

    @property
    def drivers(self) -> list[str]:
        return list(dict.fromkeys(f.driver for f in self.files if f.driver))

    @property
    def dates(self) -> list[str]:
        return sorted({f.date for f in self.files if f.date})

    def of_kind(self, kind: str) -> list[ResultsFile]:
        return [f for f in self.files if f.kind == kind]


def default_results_dir() -> Path:
    """``$MESHOPT_BATCH_RESULTS``, else the repository's ``results/`` beside the package."""
    env = os.environ.get("MESHOPT_BATCH_RESULTS")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "results"


def _api(record: dict) -> str | None:
    api = record.get("api")
    if not api:
        return None
    if str(api).lower() == "wgpu":
        return f"{record.get('backend') or 'WebGPU'} (WebGPU)"
    return "OpenGL" if str(api).lower() == "gl" else str(api)


def _first(frame: pd.DataFrame, column: str):
    if column not in frame.columns:
        return None
    values = frame[column].dropna()
    return str(values.iloc[0]) if len(values) else None


class _BadResults(ValueError):
    """A results file whose contents the report cannot use (the message names the place)."""


def _profile_column(name: str, kind: str) -> bool:
    """Whether the column ``name`` of a ``kind`` CSV holds a profile's predictions."""
    if kind == "optimizers":
        if not name.endswith("_asr") or name == "measured_asr":
            return False
        name = name[:-4]
    elif kind != "assets" or name in CSV_COLUMNS["assets"]:
        return False
    if name.endswith(".json"):
        return False
    try:
        get_profile(name)
    except (MeshoptBatchError, OSError, ValueError):
        return False
    return True


def _check_column(frame: pd.DataFrame, column: str, holds: str) -> None:
    """Check (and normalise in place) one column of a CSV: see :data:`CSV_COLUMNS`."""
    values = frame[column]
    if holds == "text":
        frame[column] = [v if isinstance(v, str) else ("" if pd.isna(v) else str(v)) for v in values]
        return
    if pd.api.types.is_bool_dtype(values):
        numbers = pd.Series(np.nan, index=values.index)
    else:
        numbers = pd.to_numeric(values, errors="coerce")
    with np.errstate(invalid="ignore"):
        bad = (numbers.isna() & values.notna()) | (numbers.notna() & ~np.isfinite(numbers.astype(float)))
        if holds == "int":      # whole, and exact in a float64 (a count, not an overflow)
            bad |= numbers.isna() | (numbers.notna() & ((numbers.astype(float) % 1 != 0)
                                                         | (numbers.astype(float).abs() > 2.0**53)))
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        value = values.iloc[row]
        value = value.item() if isinstance(value, np.generic) else value
        got = "an empty cell" if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)) \
            else repr(value)
        want = "a whole number (at most 2^53) in every row" if holds == "int" else "a finite number"
        raise _BadResults(f"column {column!r}, row {row + 1}: expected {want}, got {got}")
    if holds == "int" and not pd.api.types.is_integer_dtype(values):
        frame[column] = numbers.astype(np.int64)
    elif not pd.api.types.is_numeric_dtype(values):
        frame[column] = numbers.astype(float)


def _check_csv(frame: pd.DataFrame, kind: str) -> None:
    """The columns of a ``kind`` CSV that the report reads: there, and of the right type."""
    for name, holds in CSV_COLUMNS.get(kind, {}).items():
        column = name.rstrip("?")
        if column not in frame.columns:
            if name.endswith("?"):
                continue
            raise _BadResults(f"no column {column!r} (a file of {KIND_NAMES[kind]} needs it)")
        _check_column(frame, column, holds)
    for column in frame.columns:
        if isinstance(column, str) and _profile_column(column, kind):
            _check_column(frame, column, "num")


def _read_csv(path: Path) -> ResultsFile:
    frame = pd.read_csv(path)
    cols = set(frame.columns)
    kind = next((k for k, need in CSV_KINDS if need <= cols), "table")
    _check_csv(frame, kind)
    renderer, driver = _first(frame, "renderer"), _first(frame, "driver")
    if renderer and " / " in renderer and driver is None:
        renderer, driver = renderer.split(" / ", 1)
    record = {k: _first(frame, k) for k in ("api", "backend")}
    return ResultsFile(path, kind, renderer, _api(record), driver, _first(frame, "date"), len(frame), frame)


def _expect(value, ok: bool, where: tuple, what: str):
    if not ok:
        raise _BadResults(f"{pointer(*where) or '/'}: expected {what}, got {describe(value)}")
    return value


def _whole(value, where: tuple) -> int:
    return _expect(value, isinstance(value, int) and not isinstance(value, bool) and value >= 0, where,
                   "a whole number >= 0")


def _object(value, where: tuple, optional: bool = False) -> dict:
    if optional and value is None:
        return {}
    return _expect(value, isinstance(value, dict), where, "an object" + (" or null" if optional else ""))


def _array(value, where: tuple, optional: bool = False) -> list:
    if optional and value is None:
        return []
    return _expect(value, isinstance(value, list), where, "an array" + (" or null" if optional else ""))


def _check_json(data: dict, kind: str) -> None:
    """The fields of a ``kind`` JSON results file that the report reads: there, and of the right
    type (places named by JSON pointer)."""
    for key in ("renderer", "driver", "version", "date", "api", "backend"):
        if data.get(key) is not None:
            _expect(data[key], isinstance(data[key], str), (key,), "a string")
    if kind == "probe":
        _expect(data["mesh"], isinstance(data["mesh"], str), ("mesh",), "a string")
        for i, p in enumerate(_array(data["predictions"], ("predictions",), optional=True)):
            _object(p, ("predictions", i))
            if "profile" not in p:
                raise _BadResults(f"{pointer('predictions', i)}: no 'profile'")
            _expect(p["profile"], isinstance(p["profile"], str), ("predictions", i, "profile"), "a string")
            if p.get("exact") is not None:
                _expect(p["exact"], isinstance(p["exact"], bool), ("predictions", i, "exact"), "true or false")
    elif kind == "experiments":
        fit = _object(data["fit"], ("fit",))
        if "profile" not in fit:
            raise _BadResults("/fit: no 'profile'")
        prof = _object(fit["profile"], ("fit", "profile"))
        for key in ("name", "memory"):
            _expect(prof.get(key), isinstance(prof.get(key), str), ("fit", "profile", key), "a string")
        for key in ("max_size", "max_uniques", "memory_size"):
            _whole(prof.get(key), ("fit", "profile", key))
        if prof.get("boundary_16bit") is not None:
            _expect(prof["boundary_16bit"], isinstance(prof["boundary_16bit"], bool),
                    ("fit", "profile", "boundary_16bit"), "true or false")
        try:
            Profile.from_dict(prof)
        except (MeshoptBatchError, TypeError, ValueError) as exc:
            raise _BadResults(f"/fit/profile: {exc}") from None
        for name, rep in _object(fit.get("reproduction"), ("fit", "reproduction"), optional=True).items():
            _object(rep, ("fit", "reproduction", name))
            for key in ("draws", "mismatches"):
                _whole(rep.get(key), ("fit", "reproduction", name, key))
        for i, row in enumerate(_array(data.get("verification_rows"), ("verification_rows",), optional=True)):
            _object(row, ("verification_rows", i))
            for key in ("measured", "predicted"):
                _whole(row.get(key), ("verification_rows", i, key))
    elif kind == "renumber":
        _array(data.get("rows"), ("rows",), optional=True)


def _read_json(path: Path) -> ResultsFile:
    data = json.loads(path.read_text())
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    if "mesh" in data and "measured" in data and "predictions" in data:
        kind = "probe"
    elif "experiments" in data and "fit" in data:
        kind = "experiments"
    elif "large_probe" in data:
        kind = "renumber"
    elif "max_size" in data and "memory" in data:
        kind = "profile"
    else:
        kind = "record"
    _check_json(data, kind)
    records = {"probe": 1, "renumber": len(data.get("rows") or []),
               "experiments": sum(int(v["draws"]) for v in (data["fit"].get("reproduction") or {}).values())
               if kind == "experiments" else 0}.get(kind, 0)
    driver = data.get("driver") or data.get("version")
    return ResultsFile(path, kind, data.get("renderer"), _api(data), driver, data.get("date"), records, data)


def _read_npz(path: Path) -> ResultsFile:
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    scalars = {k: str(v) for k, v in arrays.items() if v.ndim == 0}
    totals = [k for k in arrays if k.endswith("__totals")]
    kind = "block_rule" if totals else "record"
    if totals:
        seed = arrays.get("seed")
        if seed is None or seed.ndim != 0 or not np.issubdtype(seed.dtype, np.integer) or int(seed) < 0:
            raise _BadResults("array 'seed': expected a whole number >= 0 (block-rule draws are "
                              "regenerated from it)" + ("" if seed is not None else ", found none"))
        for k in totals:
            if arrays[k].ndim != 1 or not np.issubdtype(arrays[k].dtype, np.integer):
                raise _BadResults(f"array {k!r}: expected a 1-D array of whole numbers, got "
                                  f"{arrays[k].dtype} with shape {arrays[k].shape}")
    records = int(sum(arrays[k].size for k in totals))
    return ResultsFile(path, kind, scalars.get("renderer"), _api(scalars), scalars.get("version"),
                       scalars.get("date"), records, arrays)


def read_results_file(path: str | Path) -> ResultsFile:
    """Read one results file (see the module docstring).

    Raises
    ------
    MeshoptBatchError
        The file cannot be read or parsed (one line naming the file).
    """
    path = Path(path)
    suffix = path.suffix.lower()
    try:
        if suffix == ".csv":
            out = _read_csv(path)
        elif suffix == ".json":
            out = _read_json(path)
        elif suffix == ".npz":
            out = _read_npz(path)
        else:
            path.stat()
            out = ResultsFile(path, {".png": "figure", ".log": "log", ".txt": "log"}.get(suffix, "record"))
    except _BadResults as exc:
        raise MeshoptBatchError(f"{path}: {exc}") from None
    except (OSError, ValueError, KeyError, UnicodeDecodeError, zipfile.BadZipFile, pd.errors.ParserError,
            RecursionError) as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise MeshoptBatchError(f"{path}: unreadable results file ({reason})") from None
    if out.date is None:
        m = _DATE.search(path.name)
        out.date = m.group(1) if m else None
    elif len(out.date) > 10 and _DATE.match(out.date):
        out.date = out.date[:10]
    return out


def _stem(names: list[str]) -> str:
    """What the names of one group's files share: their common prefix, or for a single file its
    name without the date and the last word before it."""
    if len(names) == 1:
        head = _DATE.split(names[0])[0].rstrip("_")
        return head.rsplit("_", 1)[0] + "_" if "_" in head else head
    return os.path.commonprefix(names)


def read_results(folder: str | Path) -> list[GPUResults]:
    """Every results file of ``folder`` (not its subfolders, not hidden files), grouped by
    renderer and API.

    A file that names its renderer and API starts or joins that group.  One that names its
    renderer only (the OpenGL tools write no API field) joins the group of that renderer
    whose files' common name prefix begins its name, else that renderer's OpenGL group.  One
    that names no renderer joins the group whose prefix begins its name, the same date first.

    Raises
    ------
    MeshoptBatchError
        ``folder`` is not a folder, or one of its files cannot be read.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise MeshoptBatchError(f"{folder}: no such results folder")
    files = [read_results_file(p) for p in sorted(folder.iterdir()) if p.is_file() and not p.name.startswith(".")]
    groups: dict[tuple, GPUResults] = {}
    for f in files:
        if f.renderer and f.api:
            groups.setdefault((f.renderer, f.api), GPUResults(f.renderer, f.api)).files.append(f)
    stems = {key: _stem([f.path.name for f in g.files]) for key, g in groups.items()}

    def best(f, keys):
        fits = [(f.date in g.dates, len(stems[k]), k) for k in keys
                if (g := groups[k]) is not None and f.path.name.startswith(stems[k])]
        return max(fits)[2] if fits else None

    for f in files:
        if f.renderer and not f.api:
            key = best(f, [k for k in stems if k[0] == f.renderer]) or (f.renderer, "OpenGL")
            groups.setdefault(key, GPUResults(*key)).files.append(f)
            f.api = key[1]
    stems.update({key: _stem([f.path.name for f in g.files]) for key, g in groups.items()})
    for f in files:
        if not f.renderer:
            key = best(f, list(groups)) or ("unknown renderer", "")
            groups.setdefault(key, GPUResults(*key)).files.append(f)
            f.renderer, f.api, f.by_name = *key, True
    for group in groups.values():
        group.files.sort(key=lambda f: f.path.name)
    return list(groups.values())
