"""Raster stage: whole-frame tile renderer (numba), matching llvmpipe's rules bit for bit.

Signature (as in .notes/PIPELINE.md, with additive keyword arguments marked *)::

    render_frame(frame, tiles, *, order=None, skip=None, rate=None, depth_prefill=None,
                 hsr_pass=False, record_occlusion=False, record_prim_visibility=False,
                 previous_colour=None, previous_depth=None*, depth_func="less"*,
                 clear_colour=(0, 0, 0)*, clear_depth=1.0*, record_writer=False*,
                 tie_break="none"*, parallel=None*, setup=None*, reuse=None*,
                 owe_colours=True*, hsr_depth=None*) -> RasterResult

``RasterResult``: ``colour`` uint8 (H, W, 3), ``depth`` float32 (H, W), ``shaded`` / ``covered``
int32 (H, W) per-pixel fragment counts, ``tile_counters`` int64 (n_tiles, len(COUNTER_NAMES))
with ``counter(name)`` and ``totals()``, ``shader_cycles`` float64 (n_tiles,), and the optional
records below. Per-tile counters: ``fragments_rasterized`` (each fragment once, also under DR),
``early_z_killed``, ``fragments_shaded``, ``samples`` (sample positions of a rendered tile),
``blended``, ``tiles_rendered`` (0/1), ``tile_triangles`` (list length), ``hsr_fragments``
(fragments DR's depth-only pass rasterized; they are also in fragments_rasterized),
``textured_fragments`` (shaded fragments of checker/stripes/noise draws).

Per tile (row-major, top-left first), each triangle of the tile's list in order (``tiles`` or the
``order`` override) is rasterized into a tile-sized depth and colour buffer, then the tile is
flushed into the frame. Nothing is kept across frames; memory is O(frame + tile).

Rasterization rules are Mesa llvmpipe's, checked pixel for pixel by ``gpu_probe.gl_reference``:
coverage and the depth plane in :mod:`pipeline_model.raster_setup`, the depth test, shading and
blending of each fragment in :mod:`pipeline_model.raster_kernel`.

Options:

* ``order``: per-tile triangle lists to render instead of ``tiles`` (a TileLists or an
  ``(offsets, tri)`` CSR pair over the same tiles); VRO/EVR reorderings.
* ``skip``: bool per tile; a skipped tile is not rendered and keeps ``previous_colour`` (and
  ``previous_depth`` when given; otherwise the clear values) (RE).
* ``rate``: int8 per tile, k in 0..4: the tile is sampled with superfragments of 2^k x 2^k pixels
  (aligned to the tile), each sampled once at its centre (coverage, depth, shading) and
  replicated to its pixels (DSR). Counters count samples; per-pixel arrays count replicated.
* ``depth_prefill``: float32 (H, W) depth buffer loaded before rendering (oracle). For WOZ
  opaque draws a fragment then passes when its depth equals the prefilled depth and passes the
  compare against ``clear_depth``; with less/greater only the first such fragment per pixel
  passes (later equal fragments would have failed the strict test), so the image equals the
  baseline's when the prefill is the baseline's final depth.
* ``hsr_pass`` (DR): per tile a depth-only pass over the WOZ opaque (non-blend, depth-tested)
  triangles records the final depth and the triangle that wrote it; the shading pass then
  shades, of those triangles, only the fragment that wrote the final depth of its pixel (depth
  EQUAL plus the owner identity, which keeps near-ties identical to the baseline); other draws
  are tested normally against that depth. Fragments are counted as rasterized once.
* ``hsr_depth`` (with ``hsr_pass``, a strict depth test, no tie-break and no records): the
  depth-only pass's result given, float32 (H, W), e.g. :func:`hsr_depth_from` a baseline
  render; only the shading pass is drawn, with the WOZ opaque draws' fragments passed as under
  ``depth_prefill`` (the first fragment at the pixel's depth: the pass's owner) and counted as
  ``hsr_fragments``. Every output equals the full DR render's.
* ``record_occlusion`` (VRO): for every depth comparison between an incoming fragment and a
  stored depth written by a *different* object, the relation (occluder, occluded) is recorded:
  (stored, incoming) when the incoming fragment fails, (incoming, stored) when it passes. The
  first relation seen for an unordered pair wins (tiles in row-major order, lists in order);
  results: ``occlusion_pairs`` (K, 2) object ids in first-seen order, ``occlusion_counts`` (K,)
  comparisons supporting the kept direction, ``occlusion_conflicts`` (K,) against it. Each
  chunk of tile rows (one per thread under ``parallel``) records into its own (objects x
  objects) tables, numbering first relations in its own tile order; the chunks are merged in
  row order (:func:`~pipeline_model.raster_occlusion.merge_chunks`), so the result is
  bit-identical to a serial pass. Fewer chunks (down to one, i.e. serial) when the tables would
  exceed ``raster_occlusion.OCC_TABLE_BYTES``. ``occlusion_log`` keeps the first sightings tile
  by tile (:func:`~pipeline_model.raster_occlusion.read_log`; None if a chunk's log filled up),
  so that another render of the frame can take tiles from this one (``reuse``).
* ``record_prim_visibility`` (EVR): per entry of the rendered lists (aligned with
  ``result.vis_tri`` / ``result.vis_offsets``): ``prim_visible`` (any fragment passed the depth
  test), ``prim_zmin`` / ``prim_zmax`` over the entry's rasterized fragments (inf / -inf when it
  covered no sample of the tile).

* ``record_writer``: ``writer_entry`` int32 (H, W), the index in the rendered lists (as
  ``vis_tri``) of the entry whose fragment last wrote the pixel's colour *without* blending
  (-1: background). EVR's Layer Buffer is ``layer[writer_entry]``.
* ``tie_break``: ``"none"`` (GL: an equal depth fails less/greater and passes lequal/gequal)
  or ``"program"``: when the incoming depth equals the stored one, the fragment passes iff it
  would have in program order, i.e. its triangle index is smaller (less/greater) or larger
  (lequal/gequal) than that of the triangle that wrote the stored depth (a cleared or prefilled
  value counts as written before everything). With it, a reordering of WOZ opaque triangles
  (VRO, EVR) produces the program-order image bit for bit.
* ``parallel``: tiles are independent, so tile rows run on all numba threads
  (``numba.set_num_threads`` / ``NUMBA_NUM_THREADS``), or on the calling thread alone with
  ``parallel=False`` (the same compiled kernel on one thread); results are bit-identical either
  way, ``record_occlusion`` included (per-chunk tables, see above). Default: parallel unless
  the environment variable ``MESHOPT_BATCH_RASTER_THREADS=1``.
* ``setup``: a cached :func:`setup_triangles` of the frame (it depends on the frame only).
* ``owe_colours``: with it (the default), where overwrites are frequent a replacing fragment's
  colour is computed only if nothing replaces it before the colour is read (see
  :mod:`pipeline_model.raster_kernel`); every output is the same bits without it, which
  shades each fragment when it passes (the reference the tests compare against).
* ``reuse``: an earlier result of this frame rendered with the same options except ``order``,
  ``skip``, ``rate`` and the previous buffers; it may hold more records than asked for, and
  another ``tie_break`` if it drew ``tiles`` themselves (lists in program order, where the
  tie-break changes nothing) (checked, :func:`lends_tiles`; ``ValueError`` otherwise, and with
  ``record_occlusion`` when the earlier result has no ``occlusion_log``). Every tile both
  renders draw, at the same rate and from the same list, is copied from it instead of drawn
  (:mod:`pipeline_model.raster_reuse`); under ``record_occlusion`` the two renders' logs are
  joined in tile order and replayed (:func:`~pipeline_model.raster_occlusion.join_logs`), so the
  record is the one a full render makes (VRO with RE takes VRO's tiles). The result is
  bit-identical to a full render. ``result.extra["tiles_reused"]`` counts them.

DR and oracle give images identical to the baseline as long as blended draws do not write depth
(translucent draws are NWOZ in our scenes); the test suite checks it.

Under that same condition the oracle's render *is* DR's shading pass: with a strict depth test
(less/greater), DR's depth-only pass leaves every pixel at its final depth and names its first
fragment at that depth, which is the fragment the oracle lets through; the draws outside the
pass test against the same depths in both. So :func:`oracle_from_hsr` gives the oracle's result
from a DR render of the same frame (every array equal; ``hsr_fragments`` is 0) instead of
drawing the frame again, and refuses (``None``) whenever a condition does not hold.  The other
way round, the baseline's final depth *is* what DR's depth-only pass leaves, so DR draws only its
shading pass when :func:`hsr_depth_from` gives it that depth (``hsr_depth``); where no draw
is WOZ opaque its render is the baseline's, and where every draw is, its shading pass shades
the baseline's last writer of each pixel alone, read from the baseline's writer record
(:func:`hsr_from_baseline`, :mod:`.raster_hsr`).

Modules: this one holds the public API (:func:`render_frame`, :class:`RasterResult`);
:mod:`.raster_setup` the per-triangle set-up and the single-pixel queries :func:`covers` /
:func:`depth_at`; :mod:`.raster_kernel` the compiled per-tile renderer; :mod:`.raster_occlusion`
the merge of VRO's per-chunk occlusion records and of their per-tile logs; :mod:`.raster_reuse`
the tiles a render takes from another; :mod:`.raster_hsr` DR's shading pass counted from the
baseline's writer record.
"""

from __future__ import annotations

import os
import weakref
from contextlib import contextmanager
from dataclasses import dataclass, field

import numba
import numpy as np

from .binning import TileLists
from .frame import FrameGeometry
from .raster_hsr import shading_pass_counts
from .raster_kernel import (
    COUNTER_NAMES,
    DEPTH_FUNCS,
    F_BLEND,
    F_TEST,
    F_WRITE,
    N_COUNTERS,
    render_tiles,
)
from .raster_occlusion import (
    first_seen_pairs,
    join_logs,
    log_capacity,
    merge_chunks,
    occlusion_chunks,
    read_log,
    tables_from_log,
)
from .raster_reuse import copy_tiles, reusable_tiles
from .raster_setup import TriangleSetup, covers, depth_at, setup_triangles

__all__ = ["RasterResult", "render_frame", "lends_tiles", "oracle_from_hsr", "hsr_depth_from",
           "hsr_from_baseline", "setup_triangles", "TriangleSetup", "DEPTH_FUNCS", "COUNTER_NAMES",
           "depth_at", "covers"]

#: Default for ``render_frame(parallel=None)``: tiles on all numba threads (results identical).
_DEFAULT_PARALLEL = os.environ.get("MESHOPT_BATCH_RASTER_THREADS", "") != "1"


@contextmanager
def _threads(n: int | None):
    """numba's threads for this thread's compiled calls set to ``n`` inside the block (None:
    unchanged), and restored after it."""
    if n is None:
        yield
        return
    before = numba.get_num_threads()
    numba.set_num_threads(n)
    try:
        yield
    finally:
        numba.set_num_threads(before)


@dataclass(eq=False)
class RasterResult:
    """Output of :func:`render_frame` (images y down, row 0 = top of the screen)."""

    colour: np.ndarray          # uint8 (H, W, 3)
    depth: np.ndarray           # float32 (H, W)
    shaded: np.ndarray          # int32 (H, W): shaded fragments landing on each pixel
    covered: np.ndarray         # int32 (H, W): rasterized fragments landing on each pixel
    tile_counters: np.ndarray   # int64 (n_tiles, len(COUNTER_NAMES))
    shader_cycles: np.ndarray   # float64 (n_tiles,): sum of shader_cost over shaded fragments
    tiles_x: int
    tiles_y: int
    tile: int
    occlusion_pairs: np.ndarray | None = None      # int32 (K, 2) (occluder, occluded) object ids
    occlusion_counts: np.ndarray | None = None     # int64 (K,)
    occlusion_conflicts: np.ndarray | None = None  # int64 (K,)
    # (tiles, pairs, counts): first sightings per tile in tile order (raster_occlusion.read_log)
    occlusion_log: tuple | None = None
    vis_offsets: np.ndarray | None = None  # int64 (n_tiles + 1,): CSR of the rendered lists
    vis_tri: np.ndarray | None = None      # int32 (M,): triangle of each entry
    prim_visible: np.ndarray | None = None  # bool (M,)
    prim_zmin: np.ndarray | None = None     # float32 (M,)
    prim_zmax: np.ndarray | None = None     # float32 (M,)
    writer_entry: np.ndarray | None = None  # int32 (H, W): list entry of the last opaque writer
    extra: dict = field(default_factory=dict)
    # what a later render of the frame needs to take tiles from this one (``reuse=``): the
    # frame (weak reference), the rendered lists, skip, rate, prefill and the other options
    inputs: dict | None = field(default=None, repr=False)

    def counter(self, name: str) -> np.ndarray:
        """Per-tile values of one counter (``COUNTER_NAMES`` or ``shader_cycles``)."""
        if name == "shader_cycles":
            return self.shader_cycles
        return self.tile_counters[:, COUNTER_NAMES.index(name)]

    def totals(self) -> dict:
        """Frame totals: every counter summed, covered pixels and overshading."""
        out = {name: int(self.tile_counters[:, i].sum()) for i, name in enumerate(COUNTER_NAMES)}
        out["shader_cycles"] = float(self.shader_cycles.sum())
        out["tiles_skipped"] = int(self.tile_counters.shape[0] - out["tiles_rendered"])
        cov = int(np.count_nonzero(self.covered))
        out["pixels_covered"] = cov
        out["overshading"] = out["fragments_shaded"] / cov if cov else 0.0
        return out


def _interleaved_rows(tiles_y: int, n_threads: int) -> np.ndarray:
    """Tile rows dealt round-robin to ``n_threads`` contiguous blocks (rows 0, k, 2k, ...,
    then 1, k + 1, ...): the threads' static shares of the rows then hold alternating rows,
    so a busy band of the screen (a skyline, a crowd) is split between them."""
    return np.concatenate([np.arange(i, tiles_y, n_threads, dtype=np.int32)
                           for i in range(max(n_threads, 1))])


def _options(depth_func, clear_depth, clear_colour, tie_break, hsr_pass, record_writer,
             record_prim_visibility) -> tuple:
    """A render's options as :func:`_lends` compares them (kept in ``RasterResult.inputs``)."""
    return (DEPTH_FUNCS[depth_func], float(np.float32(clear_depth)), _colour_option(clear_colour),
            tie_break, bool(hsr_pass), bool(record_writer), bool(record_prim_visibility))


def _colour_option(clear_colour) -> tuple:
    """A clear colour as a render's options hold it (three floats)."""
    return tuple(float(c) for c in np.asarray(clear_colour, np.float64).reshape(3))


def _lends(ri: dict, options: tuple, tiles: TileLists) -> bool:
    """Whether a render with inputs ``ri`` draws every tile both renders draw from the same list
    as a render with ``options`` does: the same depth function, clear values and DR pass, at
    least the records asked for, and the same tie-break, or lists in program order (the
    frame's own ``tiles``, where an equal depth is settled as in program order either way)."""
    func, depth, colour, tie, hsr, writer, vis = options
    r_func, r_depth, r_colour, r_tie, r_hsr, r_writer, r_vis = ri["options"]
    if (func, depth, colour, hsr) != (r_func, r_depth, r_colour, r_hsr):
        return False
    if (writer and not r_writer) or (vis and not r_vis):
        return False
    if tie == r_tie:
        return True
    return ((ri["offsets"] is tiles.offsets and ri["tri"] is tiles.tri)
            or (np.array_equal(ri["offsets"], tiles.offsets) and np.array_equal(ri["tri"], tiles.tri)))


def _of_frame(ref: RasterResult, frame: FrameGeometry, tiles: TileLists) -> bool:
    """Whether ``ref`` is a render of ``frame`` on the tile grid of ``tiles``."""
    ri = ref.inputs
    return (ri is not None and ri["frame"]() is frame
            and (ref.tile, ref.tiles_x, ref.tiles_y) == (tiles.tile, tiles.tiles_x, tiles.tiles_y))


def lends_tiles(ref: RasterResult, frame: FrameGeometry, tiles: TileLists, *, depth_prefill=None,
                hsr_pass: bool = False, record_occlusion: bool = False, record_prim_visibility: bool = False,
                depth_func: str = "less", clear_colour=(0.0, 0.0, 0.0), clear_depth: float = 1.0,
                record_writer: bool = False, tie_break: str = "none", hsr_depth=None, **per_tile) -> bool:
    """Whether ``render_frame(frame, tiles, reuse=ref, ...)`` accepts ``ref`` (see the module
    docstring), for the same keyword arguments; ``per_tile``: the rest (order, skip, rate, the
    previous buffers, setup...), which do not decide it."""
    ri = ref.inputs
    if not _of_frame(ref, frame, tiles):
        return False
    if hsr_depth is not None or depth_prefill is not None or ri["prefill"] is not None:
        return False
    if record_occlusion and ref.occlusion_log is None:
        return False
    options = _options(depth_func, clear_depth, clear_colour, tie_break, hsr_pass, record_writer,
                       record_prim_visibility)
    return _lends(ri, options, tiles)


def _tiles_from(ref: RasterResult, frame, tiles, options, prefill, skip, rate, offsets, tri,
                record_occlusion) -> np.ndarray:
    """The tiles of this render that ``ref`` (an earlier render of the same frame, see
    :func:`_lends`) drew identically (:func:`~pipeline_model.raster_reuse.reusable_tiles`)."""
    ri = ref.inputs
    if record_occlusion and ref.occlusion_log is None:
        raise ValueError("reuse: the reference has no log of its occlusion records per tile; "
                         "render it in full")
    if not _of_frame(ref, frame, tiles):
        raise ValueError("reuse: the reference is not a render of this frame and tile grid")
    same_prefill = ((prefill is None and ri["prefill"] is None)
                    or (prefill is not None and ri["prefill"] is not None
                        and np.array_equal(prefill, ri["prefill"])))
    if not _lends(ri, options, tiles) or not same_prefill:
        raise ValueError("reuse: the reference was rendered with other options "
                         "(only order, skip, rate and the previous buffers may differ; it may "
                         "hold more records, and a tie-break on lists in program order)")
    return reusable_tiles(skip, rate, offsets, tri, ri["skip"], ri["rate"], ri["offsets"],
                          ri["tri"])


def _csr(obj, n_tiles):
    """The ``order`` override as contiguous ``(offsets, tri)`` arrays, or None."""
    if obj is None:
        return None
    if isinstance(obj, TileLists):
        off, tri = obj.offsets, obj.tri
    else:
        off, tri = obj
    off = np.ascontiguousarray(off, np.int64)
    tri = np.ascontiguousarray(tri, np.int32)
    if off.shape != (n_tiles + 1,):
        raise ValueError(f"order: offsets must have n_tiles + 1 = {n_tiles + 1} entries")
    return off, tri


def render_frame(frame: FrameGeometry, tiles: TileLists, *, order=None, skip=None, rate=None,
                 depth_prefill=None, hsr_pass: bool = False, record_occlusion: bool = False,
                 record_prim_visibility: bool = False, previous_colour=None, previous_depth=None,
                 depth_func: str = "less", clear_colour=(0.0, 0.0, 0.0),
                 clear_depth: float = 1.0, record_writer: bool = False,
                 tie_break: str = "none", parallel: bool | None = None,
                 setup: TriangleSetup | None = None,
                 reuse: RasterResult | None = None, owe_colours: bool = True,
                 hsr_depth=None) -> RasterResult:
    """Render one frame tile by tile (see the module docstring for every option)."""
    W, H, T = frame.width, frame.height, tiles.tile
    if (tiles.width, tiles.height) != (W, H):
        raise ValueError("tiles were binned for another screen size")
    tiles_x, tiles_y = tiles.tiles_x, tiles.tiles_y
    n_tiles = tiles_x * tiles_y
    off, tri = _csr(order, n_tiles) or (tiles.offsets, tiles.tri)
    if depth_func not in DEPTH_FUNCS:
        raise ValueError(f"depth_func must be one of {sorted(DEPTH_FUNCS)}")
    if tie_break not in ("none", "program"):
        raise ValueError('tie_break must be "none" or "program"')
    if hsr_pass and depth_prefill is not None:
        raise ValueError("hsr_pass and depth_prefill are two different techniques; pick one")
    if hsr_depth is not None:
        if not hsr_pass or depth_func not in ("less", "greater") or tie_break != "none":
            raise ValueError("hsr_depth is DR's (hsr_pass) depth-only pass under a strict depth test "
                             "(less or greater) without tie-break")
        if record_occlusion or record_prim_visibility or record_writer:
            raise ValueError("hsr_depth takes no records")
    s = setup if setup is not None else setup_triangles(frame)

    skip_a = np.zeros(n_tiles, np.bool_) if skip is None else np.ascontiguousarray(skip, np.bool_)
    rate_a = np.zeros(n_tiles, np.int8) if rate is None else np.ascontiguousarray(rate, np.int8)
    if skip_a.shape != (n_tiles,) or rate_a.shape != (n_tiles,):
        raise ValueError("skip and rate need one value per tile")
    if rate_a.size and (rate_a.min() < 0 or (1 << int(rate_a.max())) > T):
        raise ValueError("rate values must be in 0..log2(tile)")
    prefill_hsr = hsr_depth is not None
    given = hsr_depth if prefill_hsr else depth_prefill
    use_prefill = given is not None
    prefill = np.ascontiguousarray(given, np.float32) if use_prefill else np.zeros((1, 1), np.float32)
    if use_prefill and prefill.shape != (H, W):
        raise ValueError(f"{'hsr_depth' if prefill_hsr else 'depth_prefill'} must be (H, W)")
    use_pc = previous_colour is not None
    prev_c = np.ascontiguousarray(previous_colour, np.uint8) if use_pc else np.zeros((1, 1, 3), np.uint8)
    use_pd = previous_depth is not None
    prev_d = np.ascontiguousarray(previous_depth, np.float32) if use_pd else np.zeros((1, 1), np.float32)
    if use_pc and prev_c.shape != (H, W, 3):
        raise ValueError("previous_colour must be (H, W, 3) uint8")
    if use_pd and prev_d.shape != (H, W):
        raise ValueError("previous_depth must be (H, W)")

    options = _options(depth_func, clear_depth, clear_colour, tie_break, hsr_pass, record_writer,
                       record_prim_visibility)
    reused = None
    # per tile for the kernel: 0 draw, 1 skipped (previous or clear values), 2 copied afterwards
    tile_mode = skip_a.astype(np.int8)
    if reuse is not None:
        reused = _tiles_from(reuse, frame, tiles, options,
                             prefill if use_prefill else None,
                             skip_a, rate_a, off, tri, record_occlusion)
        tile_mode[reused] = 2

    dflags = (frame.depth_test.astype(np.int8) * F_TEST + frame.depth_write.astype(np.int8) * F_WRITE
              + frame.blend.astype(np.int8) * F_BLEND).astype(np.int8)
    obj_ids, dobj = np.unique(frame.object_id, return_inverse=True)
    dobj = dobj.astype(np.int32).reshape(-1)
    n_obj = len(obj_ids)
    if parallel is None:
        parallel = _DEFAULT_PARALLEL
    if record_occlusion:
        # one (objects x objects) table pair per chunk of tile rows; chunks = threads, fewer
        # when the tables would exceed OCC_TABLE_BYTES (down to 1: the serial order itself)
        n_chunks = occlusion_chunks(tiles_y, n_obj) if parallel else 1
        occ_first = np.zeros((n_chunks, n_obj, n_obj), np.int64)
        occ_count = np.zeros((n_chunks, n_obj, n_obj), np.int64)
        row_order = np.arange(tiles_y, dtype=np.int32)
        occ_log = np.empty((n_chunks, log_capacity(tiles_x, tiles_y, n_chunks), 3), np.int32)
        occ_log_count = np.empty((n_chunks, occ_log.shape[1]), np.int64)
    else:
        n_chunks = tiles_y  # one tile row per prange iteration
        occ_first = np.zeros((1, 1, 1), np.int64)
        occ_count = np.zeros((1, 1, 1), np.int64)
        row_order = _interleaved_rows(tiles_y, numba.get_num_threads() if parallel else 1)
        occ_log = np.zeros((1, 0, 3), np.int32)
        occ_log_count = np.zeros((1, 0), np.int64)
    occ_log_n = np.zeros(max(n_chunks, 1), np.int64)
    seq = np.zeros(max(n_chunks, 1), np.int64)
    m = tri.shape[0]
    if record_prim_visibility:
        vis = np.zeros(m, np.uint8)
        zmin = np.full(m, np.inf, np.float32)
        zmax = np.full(m, -np.inf, np.float32)
    else:
        vis = np.zeros(1, np.uint8)
        zmin = np.zeros(1, np.float32)
        zmax = np.zeros(1, np.float32)

    colour = np.empty((H, W, 3), np.uint8)
    depth = np.empty((H, W), np.float32)
    shaded = np.zeros((H, W), np.int32)
    covered = np.zeros((H, W), np.int32)
    counters = np.zeros((n_tiles, N_COUNTERS), np.int64)
    cycles = np.zeros(n_tiles, np.float64)
    # filled by the kernel (rendered tiles at flush, skipped ones with -1), in parallel
    writer = np.empty((H, W), np.int32) if record_writer else np.full((1, 1), -1, np.int32)
    clear_col = np.asarray(clear_colour, np.float64).reshape(3)
    with _threads(None if parallel else 1):
        render_tiles(W, H, T, tiles_x, tiles_y, s.rec, s.rec64, s.recf,
                     dflags, frame.alpha, frame.shader_cost, frame.colour_kind, frame.colour_params, dobj,
                     off, tri, row_order, tile_mode, rate_a, use_prefill, prefill, bool(hsr_pass) and not prefill_hsr,
                     prefill_hsr, bool(record_occlusion), occ_first, occ_count, seq, n_chunks,
                     bool(record_occlusion), occ_log, occ_log_count, occ_log_n,
                     bool(record_prim_visibility), vis, zmin, zmax, bool(record_writer), writer,
                     tie_break == "program", bool(owe_colours), use_pc, prev_c, use_pd, prev_d,
                     DEPTH_FUNCS[depth_func], np.float32(clear_depth), clear_col,
                     colour, depth, shaded, covered, counters, cycles)
        if reused is not None and reused.any():
            ri = reuse.inputs
            copy_tiles(reused, W, H, T, tiles_x, off, ri["offsets"],
                       colour, depth, shaded, covered, counters, cycles,
                       reuse.colour, reuse.depth, reuse.shaded, reuse.covered, reuse.tile_counters,
                       reuse.shader_cycles, bool(record_writer), writer,
                       reuse.writer_entry if record_writer else writer,
                       bool(record_prim_visibility), vis, zmin, zmax,
                       reuse.prim_visible if record_prim_visibility else vis,
                       reuse.prim_zmin if record_prim_visibility else zmin,
                       reuse.prim_zmax if record_prim_visibility else zmax)
    res = RasterResult(colour=colour, depth=depth, shaded=shaded, covered=covered,
                       tile_counters=counters, shader_cycles=cycles, tiles_x=tiles_x,
                       tiles_y=tiles_y, tile=T)
    res.inputs = {"frame": weakref.ref(frame), "offsets": off, "tri": tri, "skip": skip_a,
                  "rate": rate_a, "prefill": prefill if use_prefill else None, "options": options}
    if reused is not None:
        res.extra["tiles_reused"] = int(reused.sum())
    if record_occlusion:
        res.occlusion_log = read_log(occ_log, occ_log_count, occ_log_n)
        if reused is not None and reused.any():
            if res.occlusion_log is None:   # this render's own log filled up: draw every tile
                return render_frame(frame, tiles, order=order, skip=skip, rate=rate, depth_prefill=depth_prefill,
                                    hsr_pass=hsr_pass, record_occlusion=True,
                                    record_prim_visibility=record_prim_visibility,
                                    previous_colour=previous_colour, previous_depth=previous_depth,
                                    depth_func=depth_func, clear_colour=clear_colour, clear_depth=clear_depth,
                                    record_writer=record_writer, tie_break=tie_break, parallel=parallel,
                                    setup=s, owe_colours=owe_colours, hsr_depth=hsr_depth)
            res.occlusion_log = join_logs(res.occlusion_log, reuse.occlusion_log, reused)
            first, count = tables_from_log(res.occlusion_log, n_obj)
        else:
            first, count = merge_chunks(occ_first, occ_count, seq)
        res.occlusion_pairs, res.occlusion_counts, res.occlusion_conflicts = first_seen_pairs(
            first, count, obj_ids)
    if record_writer:
        res.writer_entry = writer
    if record_prim_visibility:
        res.vis_offsets = off
        res.vis_tri = tri
        res.prim_visible = vis.astype(np.bool_)
        res.prim_zmin = zmin
        res.prim_zmax = zmax
    return res


def hsr_depth_from(baseline: RasterResult, frame: FrameGeometry, tiles: TileLists, *,
                   depth_func: str = "less", clear_depth: float = 1.0) -> np.ndarray | None:
    """What DR's depth-only pass of ``frame`` leaves (``render_frame(hsr_depth=...)``), taken
    from ``baseline``, a render of the same frame in program order; ``None`` when it cannot be.

    It can when no draw both blends and writes depth (then the depth writes of the baseline are
    those of the pass: its WOZ opaque draws, in the same order), under a strict depth test (less
    or greater: the pass's owner of a pixel is the first fragment at its final depth, the one
    the prefill lets through), and when ``baseline`` drew ``tiles`` in their order, every tile at
    full rate, none skipped, with no prefill, no DR pass, no tie-break and this depth function
    and clear depth.
    """
    ri = baseline.inputs
    if not _of_frame(baseline, frame, tiles):
        return None
    func, depth_clear, _colour, tie_break, hsr_pass, _writer, _vis = ri["options"]
    if (depth_func not in ("less", "greater") or DEPTH_FUNCS[depth_func] != func
            or depth_clear != float(np.float32(clear_depth)) or tie_break != "none" or hsr_pass
            or ri["prefill"] is not None or ri["skip"].any() or ri["rate"].any()):
        return None
    if not ((ri["offsets"] is tiles.offsets and ri["tri"] is tiles.tri)
            or (np.array_equal(ri["offsets"], tiles.offsets) and np.array_equal(ri["tri"], tiles.tri))):
        return None
    if np.any(frame.depth_test & frame.depth_write & frame.blend):
        return None
    return baseline.depth


def hsr_from_baseline(baseline: RasterResult, frame: FrameGeometry, tiles: TileLists, *,
                      depth_func: str = "less", clear_depth: float = 1.0,
                      clear_colour=None) -> RasterResult | None:
    """DR's render of a frame (``render_frame(hsr_pass=True)``) taken from ``baseline``, or
    ``None`` unless :func:`hsr_depth_from` holds and one of two cases applies:

    * no draw is WOZ opaque: DR's depth-only pass draws nothing, so its shading pass draws what
      the baseline drew (every counter equal, ``hsr_fragments`` 0); the result shares
      ``baseline``'s arrays;
    * every draw is WOZ opaque and ``baseline`` kept its writer record (``record_writer``):
      DR shades each pixel's last writer alone (:mod:`.raster_hsr`); the result shares the
      baseline's colours, depth and coverage and has its own shaded counts and counters.

    ``clear_colour``, when given, must be the baseline's.  The result holds none of the
    baseline's records (read-only, as every result).
    """
    if hsr_depth_from(baseline, frame, tiles, depth_func=depth_func, clear_depth=clear_depth) is None:
        return None
    options = baseline.inputs["options"]
    if clear_colour is not None and _colour_option(clear_colour) != options[2]:
        return None
    woz_opaque = frame.depth_test & frame.depth_write & ~frame.blend
    any_woz = bool(woz_opaque.any())
    if not any_woz:
        shaded, counters, cycles = baseline.shaded, baseline.tile_counters, baseline.shader_cycles
    elif woz_opaque.all() and baseline.writer_entry is not None:
        ri = baseline.inputs
        shaded, counters, cycles = shading_pass_counts(
            baseline.writer_entry, ri["offsets"], ri["tri"], frame.draw, frame.colour_kind,
            frame.shader_cost, baseline.tile_counters)
    else:
        return None
    res = RasterResult(colour=baseline.colour, depth=baseline.depth, shaded=shaded,
                       covered=baseline.covered, tile_counters=counters, shader_cycles=cycles,
                       tiles_x=baseline.tiles_x, tiles_y=baseline.tiles_y, tile=baseline.tile)
    res.inputs = {**baseline.inputs, "options": options[:4] + (True, False, False),
                  "prefill": baseline.depth if any_woz else None}
    res.extra["from_baseline"] = True
    return res


def oracle_from_hsr(hsr: RasterResult, frame: FrameGeometry, tiles: TileLists,
                    depth_prefill: np.ndarray, *, depth_func: str = "less",
                    clear_colour=(0.0, 0.0, 0.0), clear_depth: float = 1.0) -> RasterResult | None:
    """The result of ``render_frame(frame, tiles, depth_prefill=depth_prefill)`` (the oracle),
    taken from ``hsr``, a render of the same frame with ``hsr_pass=True`` (DR); ``None`` when
    it cannot be (see the module docstring).

    It can when: no draw both blends and writes depth; ``hsr`` drew ``tiles`` in their order,
    every tile at full rate, none skipped, with a strict depth test (less or greater), no
    tie-break and no records, and with the depth function and clear values asked for here; and
    ``depth_prefill`` is ``hsr``'s final depth, bit for bit. The result has its own arrays,
    ``hsr``'s with the ``hsr_fragments`` counter at 0.
    """
    ri = hsr.inputs
    if not _of_frame(hsr, frame, tiles):
        return None
    func, depth_clear, colour_clear, tie_break, hsr_pass, rec_writer, rec_vis = ri["options"]
    if (DEPTH_FUNCS.get(depth_func) != func or depth_clear != float(np.float32(clear_depth))
            or colour_clear != _colour_option(clear_colour)):
        return None
    if (not hsr_pass or tie_break != "none" or rec_writer or rec_vis or func not in (1, 4)
            or hsr.occlusion_pairs is not None):
        return None
    same_lists = ((ri["offsets"] is tiles.offsets and ri["tri"] is tiles.tri)
                  or (np.array_equal(ri["offsets"], tiles.offsets) and np.array_equal(ri["tri"], tiles.tri)))
    if not same_lists:
        return None
    if ri["skip"].any() or ri["rate"].any():
        return None
    if np.any(frame.depth_test & frame.depth_write & frame.blend):
        return None
    prefill = np.ascontiguousarray(depth_prefill, np.float32)
    if prefill.shape != hsr.depth.shape or not np.array_equal(prefill.view(np.uint32),
                                                              hsr.depth.view(np.uint32)):
        return None
    counters = hsr.tile_counters.copy()
    counters[:, COUNTER_NAMES.index("hsr_fragments")] = 0
    res = RasterResult(colour=hsr.colour.copy(), depth=hsr.depth.copy(), shaded=hsr.shaded.copy(),
                       covered=hsr.covered.copy(), tile_counters=counters,
                       shader_cycles=hsr.shader_cycles.copy(), tiles_x=hsr.tiles_x,
                       tiles_y=hsr.tiles_y, tile=hsr.tile)
    res.inputs = {**ri, "prefill": prefill, "options": ri["options"][:4] + (False,) + ri["options"][5:]}
    res.extra["from_hsr"] = True
    return res
