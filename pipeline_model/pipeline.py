"""The frame loop of the TBR pipeline model: scene -> geometry -> tiling -> raster per technique.

:func:`simulate` runs a scene for a number of frames.  Per frame, the geometry stage
(:mod:`pipeline_model.geometry`) and the polygon list builder (:mod:`pipeline_model.binning`)
run **once** and their output is shared by every technique of the run; each technique then
renders the frame through the raster stage (:func:`pipeline_model.raster.render_frame`) with
the options it asks for (:class:`~pipeline_model.techniques.base.RenderRequest`), and learns
from the result for the next frame (:mod:`pipeline_model.techniques.base` describes the
hooks).  Counters and the cycle/energy estimate come from :mod:`pipeline_model.stats`.

Example::

    from pipeline_model.pipeline import simulate
    run = simulate("city-unordered", ["baseline", "dr", "oracle"], frames=20)
    print(run.totals[["fragments_shaded", "overshading", "cycles", "energy"]])
    run.to_json()            # the object `meshopt-batch simulate --json` prints
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd
from PIL import Image
from threadpoolctl import threadpool_limits
from tqdm import tqdm

from meshopt_batch.model.profiles import Profile, get_profile
from meshopt_batch.optimizers import Method, get_method
from meshopt_batch.support.errors import MeshoptBatchError
from meshopt_batch.support.files import output_folder, staging_directory
from meshopt_batch.support.limits import check_frames as check_frame_range
from meshopt_batch.support.limits import check_screen, check_tile

from . import binning, raster
from . import stats as _stats
from .geometry import DEFAULT_PROFILE, GeometryStage
from .scene import Scene, load_scene
from .techniques import create as _create_technique
from .techniques.base import RenderRequest, Technique

__all__ = ["FrameCheck", "FrameContext", "SimulationResult", "simulate", "run_frames", "save_png",
           "JSON_COUNTERS"]

#: Counters every technique entry and per-frame row of the JSON output carries (issue 6).
JSON_COUNTERS = ("vertex_invocations", "fragments_rasterized", "fragments_shaded", "overshading",
                 "tiles_rendered", "tiles_skipped", "cycles", "energy")


class FrameCheck(Protocol):
    """A per-frame check a run calls after the techniques (e.g. the application's OpenGL
    cross-check of the raster stage, ``meshopt-batch simulate --check-gl``).

    ``name`` is the key of its record in :attr:`SimulationResult.checks` (and in the JSON);
    ``describe()`` gives the record's fixed fields (e.g. the renderer string); the check is
    called once per frame with the frame's geometry, tile lists and baseline raster result and
    returns that frame's dict, collected under ``"frames"``.
    """

    name: str

    def describe(self) -> dict: ...

    def __call__(self, index: int, frame, tiles, baseline) -> dict: ...


class FrameContext:
    """One frame as the techniques see it (shared by all techniques of the frame).

    Attributes
    ----------
    index : int                   frame number
    spec : FrameSpec              the scene's draw calls for this frame
    frame : FrameGeometry         geometry-stage output (program order)
    tiles : TileLists             binning output (program order per tile)
    previous_colour : ndarray     this technique's final colours of the previous frame (or None)
    shared : dict                 per-frame cache shared by the techniques (baseline result...)
    """

    def __init__(self, index: int, spec, frame, tiles, clear=(0.0, 0.0, 0.0),
                 baseline_records: frozenset = frozenset()):
        self.index = int(index)
        self.spec = spec
        self.frame = frame
        self.tiles = tiles
        self.clear = tuple(clear)
        self.previous_colour: np.ndarray | None = None
        self.technique: str | None = None
        self.shared: dict[str, Any] = {}
        self.raster_seconds = 0.0
        # records the baseline render also keeps, so that it can lend its tiles to the renders
        # that ask for them (the run's earlier frames say which); those this frame asks for
        self.baseline_records = frozenset(baseline_records)
        self.asked_records: set[str] = set()

    # --------------------------------------------------------------- raster
    def render(self, request: RenderRequest | None = None, **kwargs) -> Any:
        """Run the raster stage on this frame (the baseline render is shared, not redone).

        Results may be shared between techniques of the frame: treat them, and the arrays
        given in a request, as read-only.
        """
        request = request or RenderRequest()
        if request.is_default() and not kwargs:
            return self.baseline()
        kw = request.raster_kwargs()
        kw.update(kwargs)
        if kw.get("skip") is not None and "previous_colour" not in kw and self.previous_colour is not None:
            kw["previous_colour"] = self.previous_colour
        return self._render(**kw)

    def _render(self, **kw):
        kw.setdefault("clear_colour", self.clear)
        # techniques often ask for the same render (a compound technique's first frame is its
        # part's): renders are kept per frame by the content of the arguments they read
        digests = self.shared.setdefault("digests", {})
        renders = self.shared.setdefault("renders", _RenderTable(digests, self.tiles.tile))
        args = dict(kw)
        known = renders.get(args)
        if known is not None:
            return known
        if "setup" not in self.shared:   # triangle set-up, shared by all renders of the frame
            self.shared["setup"] = raster.setup_triangles(self.frame)
        kw.setdefault("setup", self.shared["setup"])
        # the first render with the same options but for the per-tile inputs lends its tiles
        # (RE's and DSR's renders take the baseline's or EVR's tiles they draw alike, VRO+RE's
        # take VRO's); a DR render given its depth pass by the baseline neither lends nor takes
        self._dr_depth_from_baseline(kw)
        first_by_options = self.shared.setdefault("first_by_options", _RenderTable(digests))
        options = first = None
        self.asked_records.update(k for k in _LENT_RECORDS if kw.get(k))
        if "reuse" not in kw and "hsr_depth" not in kw:
            options = {k: v for k, v in kw.items() if k not in _PER_TILE_INPUTS}
            # the baseline lends every tile drawn in program order at full rate; a render in
            # another order takes tiles first from one with its options (EVR's, VRO's)
            baseline = self.shared.get("baseline")
            lends = baseline is not None and raster.lends_tiles(baseline, self.frame, self.tiles, **kw)
            first = first_by_options.get(options)
            if first is not None and not (lends and kw.get("order") is None):
                kw["reuse"] = first
            elif lends:
                kw["reuse"] = baseline
        t0 = time.perf_counter()
        result = self._oracle_from_dr(kw, renders.results())
        if result is None and "hsr_depth" in kw:
            result = raster.hsr_from_baseline(self.shared["baseline"], self.frame, self.tiles,
                                              clear_colour=kw["clear_colour"], **_depth_options(kw))
        if result is None:
            result = raster.render_frame(self.frame, self.tiles, **kw)
        self.raster_seconds += time.perf_counter() - t0
        renders.put(args, result)
        if options is not None and first is None:
            first_by_options.put(options, result)
        return result

    def _dr_depth_from_baseline(self, kw):
        """A DR render (``hsr_pass`` alone) is given its depth-only pass from this frame's
        baseline render when :func:`~pipeline_model.raster.hsr_depth_from` shows they are the
        same (``hsr_depth``): only its shading pass is drawn."""
        if not kw.get("hsr_pass") or not set(kw) <= _HSR_ARGUMENTS or "baseline" not in self.shared:
            return
        depth = raster.hsr_depth_from(self.shared["baseline"], self.frame, self.tiles, **_depth_options(kw))
        if depth is not None:
            kw["hsr_depth"] = depth

    def _oracle_from_dr(self, kw, earlier):
        """An oracle render (depth prefill alone) taken from this frame's DR render, when
        :func:`~pipeline_model.raster.oracle_from_hsr` shows they are the same; else None."""
        if "depth_prefill" not in kw or not set(kw) <= _ORACLE_ARGUMENTS:
            return None
        options = {k: kw[k] for k in ("depth_func", "clear_colour", "clear_depth") if k in kw}
        for other in earlier:
            result = raster.oracle_from_hsr(other, self.frame, self.tiles, kw["depth_prefill"], **options)
            if result is not None:
                return result
        return None

    def baseline(self):
        """The frame rendered in program order at full rate (computed once per frame)."""
        if "baseline" not in self.shared:
            self.shared["baseline"] = self._render(**dict.fromkeys(self.baseline_records, True))
        return self.shared["baseline"]

    def final_depth(self) -> np.ndarray:
        """The frame's final depth buffer (float32 H x W), from the baseline render."""
        return np.asarray(self.baseline().depth, np.float32)


def _depth_options(kw) -> dict:
    """The depth function and clear depth among render arguments (as given)."""
    return {k: kw[k] for k in ("depth_func", "clear_depth") if k in kw}


#: Arguments of a DR render that may take its depth-only pass from the baseline's.
_HSR_ARGUMENTS = frozenset({"hsr_pass", "setup", "depth_func", "clear_colour", "clear_depth"})

#: Arguments of a render :func:`~pipeline_model.raster.oracle_from_hsr` may answer.
_ORACLE_ARGUMENTS = frozenset({"depth_prefill", "setup", "depth_func", "clear_colour", "clear_depth"})

#: Records the baseline render keeps once a run's renders have asked for them, so that it lends
#: its tiles to those renders (EVR's: most of its tiles keep program order).
_LENT_RECORDS = ("record_prim_visibility", "record_writer")

#: Render arguments a render may differ in and still take tiles from another (``reuse=``).
_PER_TILE_INPUTS = frozenset({"order", "skip", "rate", "previous_colour", "previous_depth"})


class _RenderTable:
    """Results of one frame's renders by their arguments.

    Entries are grouped by :func:`_shape_key` (small values by content, large arrays by type
    and shape), which arguments with equal :func:`_render_key` always share; only the entries
    of one group are told apart by content, so a render whose group is empty (most of them)
    hashes none of its arrays.  ``tile``: compare the arguments as the raster reads them
    (:func:`_read_arguments`); None: as given.
    """

    def __init__(self, digests: dict, tile: int | None = None):
        self.digests = digests
        self.tile = tile
        self.groups: dict = {}

    def _key(self, entry: list):
        if entry[1] is None:
            read = entry[0] if self.tile is None else _read_arguments(entry[0], self.tile)
            entry[1] = _render_key(read, self.digests)
        return entry[1]

    def get(self, args: dict):
        """The result stored for arguments equal to ``args``, or None."""
        group = self.groups.get(_shape_key(args, self.tile))
        if not group:
            return None
        probe = [args, None]
        for entry in group:
            if self._key(entry) == self._key(probe):
                return entry[2]
        return None

    def put(self, args: dict, result) -> None:
        """Store ``result`` for ``args`` (not changed afterwards, as every render argument)."""
        self.groups.setdefault(_shape_key(args, self.tile), []).append([args, None, result])

    def results(self):
        """Every stored result, in the order stored."""
        return [entry[2] for group in self.groups.values() for entry in group]


#: Arrays up to this size are keyed by content in :func:`_shape_key`.
_SMALL_ARRAY_BYTES = 1 << 14


def _shape_key(value, tile=None):
    """:func:`_render_key` with large arrays and tile lists by type and shape alone, and with
    the previous frame's buffers (under ``tile``, as :func:`_read_arguments` reads them) only
    where a tile is skipped: arguments with equal render keys have equal shape keys."""
    if isinstance(value, dict):
        skip = value.get("skip")
        skipped = skip is not None and bool(np.any(skip))
        return tuple((k, ("previous", np.shape(v)) if k in _PREVIOUS else _shape_key(v))
                     for k, v in sorted(value.items())
                     if k != "setup" and not (tile is not None and k in _PREVIOUS
                                              and (v is None or not skipped)))
    if isinstance(value, np.ndarray):
        if value.nbytes <= _SMALL_ARRAY_BYTES:
            return _render_key(value)
        return ("array", value.dtype.str, value.shape)
    if isinstance(value, binning.TileLists):
        return ("tiles", value.tile, value.offsets.shape, value.tri.shape)
    if isinstance(value, (tuple, list)):
        return (type(value).__name__,) + tuple(_shape_key(v) for v in value)
    return ("value", repr(value))


#: The previous frame's buffers among render arguments.
_PREVIOUS = ("previous_colour", "previous_depth")


def _render_key(value, digests=None):
    """A hashable digest of render arguments: arrays and tile lists by content, the rest by
    value (the triangle set-up, a function of the frame, is left out).  ``digests`` keeps each
    array's digest by identity (with the array, so that no other takes its id) for the frame:
    a render's arguments, like its results, are not changed once given."""
    if isinstance(value, dict):
        return tuple((k, _render_key(v, digests)) for k, v in sorted(value.items()) if k != "setup")
    if isinstance(value, np.ndarray):
        known = digests.get(id(value)) if digests is not None else None
        if known is not None and known[0] is value:
            return known[1]
        a = np.ascontiguousarray(value)
        key = ("array", a.dtype.str, a.shape, hashlib.sha1(a.data).digest())
        if digests is not None:
            digests[id(value)] = (value, key)
        return key
    if isinstance(value, binning.TileLists):
        return ("tiles", value.tile, _render_key(value.offsets, digests), _render_key(value.tri, digests))
    if isinstance(value, (tuple, list)):
        return (type(value).__name__,) + tuple(_render_key(v, digests) for v in value)
    return ("value", repr(value))


def _read_arguments(kw, tile):
    """The render arguments as the raster stage reads them: the previous frame's buffers only
    in the tiles ``skip`` marks (the others are drawn or taken from another render)."""
    previous = [k for k in _PREVIOUS if kw.get(k) is not None]
    if not previous:
        return kw
    skip = kw.get("skip")
    out = {k: v for k, v in kw.items() if k not in previous}
    if skip is None or not np.any(skip):
        return out
    for k in previous:
        buffer = np.asarray(kw[k])
        if buffer.ndim < 2 or np.size(skip) != -(-buffer.shape[0] // tile) * -(-buffer.shape[1] // tile):
            return kw                  # not what the raster accepts: it says so itself
        h, w = buffer.shape[:2]
        tiles = np.asarray(skip, bool).reshape(-(-h // tile), -(-w // tile))
        digest = hashlib.sha1(repr((buffer.dtype.str, buffer.shape)).encode())
        for row, marked in enumerate(tiles):
            # runs of skipped tiles along the tile row, one block of pixels each
            edges = np.flatnonzero(np.diff(np.concatenate(([0], marked.view(np.int8), [0]))))
            for first, end in zip(edges[::2], edges[1::2], strict=True):
                block = buffer[row * tile:(row + 1) * tile, first * tile:end * tile]
                digest.update(np.ascontiguousarray(block).data)
                digest.update(b"|%d,%d" % (row, first))
        out[k] = ("skipped tiles", digest.digest())
    return out


@dataclass
class SimulationResult:
    """Counters of a run (pandas DataFrames), summaries, optional images and GL check."""

    scene: str
    frames: int
    first_frame: int
    width: int
    height: int
    tile: int
    techniques: list
    optimizer: str | None
    profile: str
    rows: list = field(default_factory=list)                 # per-frame dicts
    summaries: dict = field(default_factory=dict)            # technique -> summary() dict
    aggregates: dict = field(default_factory=dict)           # technique -> {counter: how}
    images: dict = field(default_factory=dict)               # technique -> [colour arrays]
    checks: dict = field(default_factory=dict)               # FrameCheck.name -> record
    timings: dict = field(default_factory=dict)
    fallbacks: list = field(default_factory=list)
    costs: dict = field(default_factory=dict)

    @property
    def per_frame(self):
        """pandas DataFrame, one row per (technique, frame)."""
        return pd.DataFrame(self.rows)

    def technique_totals(self, name: str) -> dict:
        rows = [r for r in self.rows if r["technique"] == name]
        tot = _stats.totals(rows)
        how = self.aggregates.get(name, {})
        for k, mode in how.items():
            vals = [r[k] for r in rows if r.get(k) is not None]
            if not vals:
                continue
            if mode == "mean":
                tot[k] = float(np.mean(vals))
            elif mode == "min":
                tot[k] = float(np.min(vals))
            elif mode == "max":
                tot[k] = float(np.max(vals))
            elif mode == "last":
                tot[k] = vals[-1]
        tot.update(self.summaries.get(name, {}))
        return tot

    @property
    def totals(self):
        """pandas DataFrame, one row per technique (summed counters, ratios recomputed)."""
        return pd.DataFrame({name: self.technique_totals(name) for name in self.techniques}).T

    def to_json(self) -> dict:
        """The ``meshopt-batch simulate --json`` object (issue 6 contract, plus extras)."""
        out: dict[str, Any] = {
            "scene": self.scene,
            "frames": self.frames,
            "first_frame": self.first_frame,
            "width": self.width,
            "height": self.height,
            "tile": self.tile,
            "optimizer": self.optimizer,
            "profile": self.profile,
            "techniques": {name: _jsonable(self.technique_totals(name)) for name in self.techniques},
            "per_frame": [_jsonable(r) for r in self.rows],
        }
        if self.fallbacks:
            out["mesh_fallbacks"] = list(self.fallbacks)
        for name, record in self.checks.items():
            out[name] = _jsonable(record)
        out["timings"] = _jsonable(self.timings)
        return out


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating,)):
        v = float(x)
        return v if np.isfinite(v) else None
    if isinstance(x, float):
        return x if np.isfinite(x) else None
    if isinstance(x, (np.bool_,)):
        return bool(x)
    return x


def save_png(path: str | Path, colour: np.ndarray) -> None:
    """Write an (H, W, 3) uint8 image as a lossless PNG."""
    a = np.asarray(colour)
    if a.dtype != np.uint8:
        a = np.clip(a, 0, 255).astype(np.uint8)
    Image.fromarray(np.ascontiguousarray(a[..., :3])).save(str(path), format="PNG", optimize=False)


def simulate(scene: str | Path | Scene | dict,
             techniques: Sequence[str | Technique] = ("baseline",),
             *,
             frames: int | None = None,
             method: str | Method | None = None,
             profile: str | Profile = DEFAULT_PROFILE,
             width: int | None = None,
             height: int | None = None,
             tile: int = 16,
             progress: bool | None = None,
             costs: Any = None,
             images_dir: str | Path | None = None,
             keep_images: bool = False,
             image_callback: Callable[[str, int, np.ndarray], None] | None = None,
             frame_checks: Sequence[FrameCheck] = (),
             check_images: bool = False,
             first_frame: int = 0,
             technique_options: dict | None = None,
             guard_band: float | None = None) -> SimulationResult:
    """Run ``scene`` for ``frames`` frames under every technique and count the work.

    Parameters
    ----------
    scene : shipped scene name, JSON/glTF path, :class:`~pipeline_model.scene.Scene` or dict
    techniques : names (see :func:`pipeline_model.techniques.available`) or
        :class:`~pipeline_model.techniques.base.Technique` objects
    frames : number of frames (default: the scene's own count), starting at ``first_frame``
    method : mesh optimizer (name or :class:`~meshopt_batch.optimizers.Method`) applied to
        every mesh's index buffer (``forsyth``, ``batch``...); ``None`` keeps the scene's order
    profile : vertex-reuse profile for the vertex-shader count (default ``fifo:16``)
    width, height, tile : screen and tile size (default: the scene's size, 16)
    progress : tqdm bar on stderr (None: only when stderr is a terminal)
    costs : cost-table overrides (JSON path or mapping), see :mod:`pipeline_model.stats`
    images_dir : write every final frame as ``DIR/<technique>_<frame:04d>.png`` (lossless); the
        files appear only when the whole run succeeded
    keep_images : keep the final colours in ``result.images`` (memory: W*H*3 bytes per frame)
    image_callback : called as ``fn(technique, frame, colour)`` for every rendered frame
    frame_checks : :class:`FrameCheck` objects called on every frame's baseline (the
        application passes its OpenGL cross-check here); records in ``result.checks``
    check_images : compare every exact technique's frame with the baseline's; the per-frame
        rows gain ``image_diff_pixels``
    technique_options : ``{name: {option: value}}`` passed to the technique constructors
    """
    t_start = time.perf_counter()
    method_obj = get_method(method) if method is not None else None
    prof = get_profile(profile)
    sc = load_scene(scene)
    n_frames, first_frame = check_frame_range(frames if frames is not None else sc.frames, first_frame)
    W, H = check_screen(width or sc.width, height or sc.height)
    tile = check_tile(tile)
    cost_table = _stats.load_costs(costs)
    opts = technique_options or {}
    techs = []
    for t in techniques:
        if isinstance(t, str):
            techs.append(_create_technique(t, **opts.get(t, {})))
        elif isinstance(t, Technique):
            techs.append(t)
        else:
            raise MeshoptBatchError(f"a technique is a name or a Technique object, not {type(t).__name__}")
    names = [t.name for t in techs]
    if len(set(names)) != len(names):
        raise MeshoptBatchError(f"technique listed twice: {names}")
    for t in techs:
        t.reset()

    geom = GeometryStage(profile=prof, method=method_obj,
                         **({} if guard_band is None else {"guard_band": guard_band}))
    sc.load_meshes()  # absent mesh files are known (and fall back) before frame 0
    check_frames: dict[str, list] = {c.name: [] for c in frame_checks}

    staging = None
    final_dir = None
    if images_dir is not None:
        final_dir = output_folder(images_dir, "--images")
        staging = staging_directory(final_dir)

    result = SimulationResult(scene=sc.name, frames=n_frames, first_frame=first_frame, width=W,
                              height=H, tile=tile, techniques=names,
                              optimizer=method_obj.name if method_obj is not None else None,
                              profile=prof.name, costs=cost_table)
    timings = {"geometry": 0.0, "binning": 0.0, "raster": {n: 0.0 for n in names},
               "techniques": {n: 0.0 for n in names}, **{c.name: 0.0 for c in frame_checks}}
    previous: dict[str, np.ndarray | None] = {n: None for n in names}
    # per-tile covered pixels of each technique's last picture: a tile RE skips keeps last
    # frame's colours and so its coverage (the overshading denominator, see pipeline_model.stats)
    previous_covered: dict[str, np.ndarray | None] = {n: None for n in names}
    bar = _progress(progress, n_frames * len(techs), sc.name)
    # BLAS on one thread while frames run: OpenBLAS's idle threads spin on a core after each
    # product, and the geometry stage's small products gain nothing from them while the
    # raster's threads, which follow, lose a core (measured: the first render of a frame
    # 1.4x slower on 2 cores)
    blas = threadpool_limits(limits=1, user_api="blas")
    asked: frozenset = frozenset()
    try:
        for fi in range(first_frame, first_frame + n_frames):
            t0 = time.perf_counter()
            spec = sc.frame(fi, W, H)
            frame = geom.process(spec, tile=tile)
            t1 = time.perf_counter()
            tiles = binning.bin_triangles(frame, tile)
            t2 = time.perf_counter()
            timings["geometry"] += t1 - t0
            timings["binning"] += t2 - t1
            ctx = FrameContext(fi, spec, frame, tiles, spec.clear, baseline_records=asked)
            for tech in techs:
                ctx.technique = tech.name
                ctx.previous_colour = previous[tech.name]
                r0 = ctx.raster_seconds
                s0 = time.perf_counter()
                req, res = tech.run(ctx)
                extra = tech.end_frame(ctx, res) or {}
                s1 = time.perf_counter()
                timings["raster"][tech.name] += ctx.raster_seconds - r0
                timings["techniques"][tech.name] += (s1 - s0) - (ctx.raster_seconds - r0)
                row: dict[str, Any] = {"technique": tech.name, "frame": fi}
                covered_tiles = _stats.covered_per_tile(frame, res, previous_covered[tech.name])
                previous_covered[tech.name] = covered_tiles
                row.update(_stats.frame_counters(frame, tiles, res, cost_table,
                                                 hsr=req.hsr_pass,
                                                 covered_tiles=covered_tiles))
                row.update(extra)
                if check_images and tech.exact:
                    row["image_diff_pixels"] = int(np.count_nonzero(
                        np.any(np.asarray(res.colour) != np.asarray(ctx.baseline().colour), axis=-1)))
                result.rows.append(row)
                colour = np.asarray(res.colour)
                previous[tech.name] = colour
                if staging is not None:
                    save_png(staging / f"{tech.name}_{fi:04d}.png", colour)
                if keep_images:
                    result.images.setdefault(tech.name, []).append(colour.copy())
                if image_callback is not None:
                    image_callback(tech.name, fi, colour)
                if bar is not None:
                    bar.update(1)
            for check in frame_checks:
                g0 = time.perf_counter()
                check_frames[check.name].append(dict(check(fi, frame, tiles, ctx.baseline())))
                timings[check.name] += time.perf_counter() - g0
            asked = asked | ctx.asked_records
        if staging is not None:
            for p in sorted(staging.iterdir()):
                os.replace(p, final_dir / p.name)
    finally:
        blas.restore_original_limits()
        if bar is not None:
            bar.close()
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)

    for tech in techs:
        result.summaries[tech.name] = dict(tech.summary() or {})
        result.aggregates[tech.name] = dict(tech.aggregate)
    for check in frame_checks:
        result.checks[check.name] = {**check.describe(), "frames": check_frames[check.name]}
    timings["total"] = time.perf_counter() - t_start
    timings["frames_per_second"] = n_frames / timings["total"] if timings["total"] > 0 else None
    result.timings = timings
    result.fallbacks = list(dict.fromkeys(sc.fallbacks))
    return result


def _progress(progress: bool | None, total: int, label: str):
    if progress is False:
        return None
    disable = None if progress is None else False
    return tqdm(total=total, desc=label, unit="frame", file=sys.stderr, disable=disable,
                leave=False, dynamic_ncols=True)


def run_frames(scene: str | Scene, frames: Iterable[int], *, method: str | Method | None = None,
               profile: str | Profile = DEFAULT_PROFILE, width=None, height=None, tile=16):
    """Yield ``(FrameSpec, FrameGeometry, TileLists)`` for the given frames (no raster)."""
    sc = load_scene(scene)
    geom = GeometryStage(profile=get_profile(profile), method=get_method(method) if method is not None else None)
    W = int(width or sc.width)
    H = int(height or sc.height)
    for fi in frames:
        spec = sc.frame(fi, W, H)
        frame = geom.process(spec, tile=tile)
        yield spec, frame, binning.bin_triangles(frame, tile)
