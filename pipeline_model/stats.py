"""Counters per frame and technique, and the per-event cycle / energy cost table.

The papers' figures come from a cycle-accurate simulator (Teapot) with McPAT power models of a
Mali-450-like GPU (paper 000 Table 2, paper 003 Table II: 400 MHz, 1 V, 32 nm, 1196x768 screen,
16x16 tiles, one vertex processor, four fragment processors, a rasterizer of 16 attributes per
cycle, an early-Z unit of one quad per cycle, 4 bytes/cycle of main-memory bandwidth).  Those
papers do not publish per-event energies, so this model uses a **documented per-event cost
table** whose throughputs follow Table 2 and whose energies are order-of-magnitude estimates for
a 32 nm mobile GPU; every number is data (:data:`DEFAULT_COSTS`) that a user can override with a
JSON file (``meshopt-batch simulate --costs FILE``, :func:`load_costs`).  Ratios between
techniques (speed-up, energy reduction), not absolute values, are what the model is for.

Timing model
------------
``cycles = geometry_cycles + raster_cycles``.  The geometry pipeline runs vertex shading,
primitive assembly and the polygon list builder one after the other
(``vertex_invocations * vertex_shader_cycles + triangles_in * primitive_assembly_cycles +
tile_triangle_pairs * polygon_list_cycles + (vertex fetch + parameter-buffer writes) /
bandwidth``; parameter-buffer bytes are the binning stage's, :mod:`pipeline_model.binning`).  The raster
pipeline processes tiles one at a time; inside a tile its stages overlap, so a tile takes the
slowest of: fetching its display list (``tile_triangle_pairs * tile_fetch_cycles`` plus
parameter-buffer reads / bandwidth), rasterization and early-Z (``fragments_rasterized *
raster_cycles_per_fragment``), fragment shading (``shader_cost * fragment_shader_cycles / 4
processors`` per shaded fragment, plus blending) and the colour flush (bytes / bandwidth).
A skipped tile (Rendering Elimination) costs ``tile_skip_cycles``.  DR's hidden-surface-removal
pass runs on duplicated hardware in parallel with the previous tile (paper 000 sec. 4.2,
"parallel DR"): it adds energy but only the part of its time that exceeds the tile's other work.

Energy model
------------
``energy = sum(events * energy_per_event) + cycles * static_energy_per_cycle`` in nanojoules.

Counters (one row per technique and frame, see :data:`COUNTERS`)
-------------------------------------------------------------------
vertex_invocations, triangles_in / culled / clipped / binned, tile_triangle_pairs,
fragments_rasterized (main pass), hsr_fragments (DR's extra depth-only pass over the opaque
WOZ triangles), early_z_killed,
fragments_shaded, fragments_blended, samples (shaded samples: superfragments count once under
DSR), covered_pixels (pixels of the frame's picture covered by at least one fragment, the
overshading denominator, see below), overshading (fragments_shaded / covered_pixels),
shader_cycles, tiles_rendered, tiles_skipped,
parameter_bytes_written / parameter_bytes_read, vertex_bytes, texture_bytes, colour_bytes,
memory_bytes, geometry_cycles, raster_cycles, cycles, energy (nJ).

Overshading and covered pixels
------------------------------
Overshading is "shaded fragments per covered pixel" **of the frame**: the numerator is the work a
technique did (fragments it shaded), the denominator the coverage of the picture it produced.
A tile that Rendering Elimination skips (RE, EVR+RE, VRO+RE) shades nothing, but its pixels are
still in the picture: the tile keeps the previous frame's colours, which by construction (equal
signature) are the picture of that tile in this frame too.  So the covered pixels of a skipped
tile are those of the last frame in which the *same technique* rendered it, carried from frame
to frame per tile (:func:`covered_per_tile` with ``previous=``; the frame loop,
:func:`pipeline_model.pipeline.simulate`, keeps the per-tile counts of each technique as it keeps
its previous colours).  For every exact technique (DR, oracle, VRO, EVR, RE and their
combinations) covered_pixels therefore equals the baseline's on every frame, and RE's overshading
drops by the fragments of the tiles it skipped instead of counting only the rendered tiles.  DSR
keeps its own definition: a pixel that a replicated superfragment wrote is covered (the raster
stage's per-pixel ``covered`` counts replicated fragments), so its denominator is the coverage
of the picture it produced at its sampling rates.  Called without ``covered_tiles``,
:func:`frame_counters` counts the pixels covered in the rendered tiles only (no history).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numba
import numpy as np

from meshopt_batch.support.errors import MeshoptBatchError

__all__ = ["DEFAULT_COSTS", "COUNTERS", "load_costs", "frame_counters", "covered_per_tile",
           "totals", "cost_table_markdown"]

#: Per-event costs.  Each entry: (value, unit, where the number comes from).
DEFAULT_COSTS: dict[str, dict[str, Any]] = {
    # ---- clock / memory (Table 2)
    "clock_hz": {"value": 400e6, "unit": "Hz", "why": "Table 2: 400 MHz"},
    "memory_bytes_per_cycle": {"value": 4.0, "unit": "B/cycle",
                               "why": "Table 2: 4 bytes/cycle, dual channel"},
    "fragment_processors": {"value": 4, "unit": "units", "why": "Table 2: 4 fragment processors"},
    # ---- cycles per event
    "vertex_shader_cycles": {"value": 24.0, "unit": "cycles/invocation",
                             "why": "1 vertex processor (Table 2), ~24 instructions: MVP, normal, uv"},
    "primitive_assembly_cycles": {"value": 1.0, "unit": "cycles/triangle",
                                  "why": "Table 2: primitive assembly 1 triangle/cycle"},
    "polygon_list_cycles": {"value": 1.0, "unit": "cycles/tile-triangle pair",
                            "why": "one display-list entry written per cycle"},
    "tile_fetch_cycles": {"value": 1.0, "unit": "cycles/tile-triangle pair",
                          "why": "tile scheduler reads one primitive per cycle"},
    "raster_cycles_per_fragment": {"value": 0.25, "unit": "cycles/fragment",
                                   "why": "early-Z one quad-fragment per cycle (Table 2); rasterizer "
                                          "16 attributes/cycle keeps up with 4 attributes/fragment"},
    "fragment_shader_cycles": {"value": 8.0, "unit": "cycles/fragment at shader_cost 1",
                               "why": "~8 instructions per fragment on one processor, divided "
                                      "by the 4 fragment processors"},
    "blend_cycles": {"value": 0.25, "unit": "cycles/blended fragment",
                     "why": "colour buffer read-modify-write, one quad per cycle"},
    "tile_skip_cycles": {"value": 4.0, "unit": "cycles/skipped tile",
                         "why": "signature compare (RE) and scheduler bookkeeping"},
    # ---- bytes per event
    "vertex_bytes": {"value": 32.0, "unit": "B/invocation",
                     "why": "position 12 + normal 12 + uv 8 fetched per vertex-shader invocation"},
    "texture_bytes_per_fragment": {"value": 1.0, "unit": "B/textured shaded fragment",
                                   "why": "a 4-byte texel per fragment, ~1/4 missing the 8 KB "
                                          "texture caches (64-byte lines, 2x2 quad locality)"},
    "colour_bytes_per_pixel": {"value": 4.0, "unit": "B/pixel flushed",
                               "why": "RGBA8 colour buffer flushed once per rendered tile (TBR)"},
    # ---- energy per event (nJ) -- order-of-magnitude estimates for 32 nm, 1 V
    "energy_vertex_invocation": {"value": 0.5, "unit": "nJ",
                                 "why": "~24 ALU instructions x ~20 pJ incl. register file"},
    "energy_triangle": {"value": 0.05, "unit": "nJ", "why": "primitive assembly, clip, cull, setup"},
    "energy_tile_pair": {"value": 0.03, "unit": "nJ", "why": "tile cache access per display-list entry"},
    "energy_fragment_rasterized": {"value": 0.02, "unit": "nJ",
                                   "why": "interpolation + on-chip depth buffer access"},
    "energy_fragment_shaded": {"value": 0.16, "unit": "nJ at shader_cost 1",
                               "why": "~8 instructions x ~20 pJ"},
    "energy_fragment_blended": {"value": 0.01, "unit": "nJ", "why": "on-chip colour buffer RMW"},
    "energy_dram_byte": {"value": 0.1, "unit": "nJ/B", "why": "LPDDR3 ~10-20 pJ/bit incl. I/O"},
    "static_energy_per_cycle": {"value": 0.3, "unit": "nJ/cycle",
                                "why": "~120 mW leakage + clock tree at 400 MHz"},
}

COUNTERS = (
    "vertex_invocations", "triangles_in", "triangles_culled", "triangles_clipped",
    "triangles_binned", "tile_triangle_pairs", "fragments_rasterized", "hsr_fragments",
    "early_z_killed", "fragments_shaded", "fragments_blended", "samples", "covered_pixels",
    "overshading", "shader_cycles", "tiles_rendered", "tiles_skipped",
    "parameter_bytes_written", "parameter_bytes_read", "vertex_bytes", "texture_bytes",
    "colour_bytes", "memory_bytes", "geometry_cycles", "raster_cycles", "cycles", "energy",
)

#: Counters that are ratios (recomputed, not summed, in totals).
RATIO_COUNTERS = ("overshading",)


def load_costs(source: str | Path | Mapping | None = None) -> dict[str, float]:
    """The cost table as ``name -> value``, with overrides from a JSON file or mapping.

    The JSON may map names to numbers or to ``{"value": number, ...}`` objects (the layout of
    :data:`DEFAULT_COSTS`); unknown names are an error so a typo cannot silently do nothing.
    """
    costs = {k: float(v["value"]) for k, v in DEFAULT_COSTS.items()}
    if source is None:
        return costs
    if isinstance(source, Mapping):
        data = dict(source)
        where = "cost table"
    else:
        where = str(source)
        try:
            data = json.loads(Path(source).read_text())
        except OSError as exc:
            raise MeshoptBatchError(f"{where}: cannot read cost table ({exc.strerror})") from None
        except json.JSONDecodeError as exc:
            raise MeshoptBatchError(f"{where}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    if not isinstance(data, dict):
        raise MeshoptBatchError(f"{where}: expected an object of cost name -> value")
    for k, v in data.items():
        if k not in costs:
            raise MeshoptBatchError(f"{where}: unknown cost {k!r} (known: {', '.join(costs)})")
        if isinstance(v, dict):
            v = v.get("value")
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise MeshoptBatchError(f"{where}: cost {k!r} must be a non-negative number")
        costs[k] = float(v)
    return costs


def _tile_pixels(width: int, height: int, tile: int) -> np.ndarray:
    """Pixels of every tile that lie on screen, in tile order (row-major)."""
    tx = (width + tile - 1) // tile
    ty = (height + tile - 1) // tile
    wx = np.minimum(tile, width - np.arange(tx) * tile)
    wy = np.minimum(tile, height - np.arange(ty) * tile)
    return (wy[:, None] * wx[None, :]).ravel().astype(np.float64)


def covered_per_tile(frame, result, previous: np.ndarray | None = None) -> np.ndarray:
    """Covered pixels of the frame's picture per tile (int64, tile order, row-major).

    Rendered tiles count their pixels covered by at least one fragment (``result.covered``;
    replicated superfragments count under DSR).  A tile the technique skipped (Rendering
    Elimination) shows the previous frame's picture of that tile, so it takes ``previous[t]``,
    this technique's per-tile counts of the previous frame (0 when there are none).
    """
    n_tiles = frame.n_tiles
    T = int(frame.tile)
    H, W = result.covered.shape[:2]
    out = _covered_counts(np.ascontiguousarray(result.covered), T)
    if out.size != n_tiles:
        raise ValueError(f"covered buffer {W}x{H} does not split into the frame's {n_tiles} tiles")
    rendered = result.counter("tiles_rendered") > 0
    if not rendered.all():
        prev = (np.asarray(previous, np.int64).reshape(-1) if previous is not None
                and np.size(previous) == n_tiles else np.zeros(n_tiles, np.int64))
        out = np.where(rendered, out, prev)
    return out


@numba.njit(cache=True, nogil=True)
def _covered_counts(covered, T):
    """Pixels with a nonzero count per T x T tile (row-major tiles, partial edge tiles): per
    row of tiles, each column's covered pixels first (one loop along whole screen rows, which
    vectorises), then the columns summed per tile."""
    H, W = covered.shape
    tx = (W + T - 1) // T
    out = np.zeros(((H + T - 1) // T) * tx, np.int64)
    columns = np.empty(W, np.int32)
    for r0 in range(0, H, T):
        columns[:] = 0
        for y_ in range(r0, min(H, r0 + T)):
            y = np.uint64(y_)
            for x in range(np.uint64(W)):
                columns[x] += covered[y, x] != 0
        row = (r0 // T) * tx
        for t in range(tx):
            n = 0
            for x in range(np.uint64(t * T), np.uint64(min(W, t * T + T))):
                n += columns[x]
            out[row + t] = n
    return out


def frame_counters(frame, tiles, result, costs: Mapping[str, float], *, hsr: bool = False,
                   covered_tiles: np.ndarray | None = None) -> dict:
    """All counters of one frame rendered by one technique.

    ``frame`` is the :class:`~pipeline_model.frame.FrameGeometry`, ``tiles`` the binning
    result (:class:`~pipeline_model.binning.TileLists`), ``result`` the
    :class:`~pipeline_model.raster.RasterResult` (every per-tile counter of
    ``raster.COUNTER_NAMES``); ``hsr`` says DR's depth-only pass ran (its fragments are the
    raster stage's ``hsr_fragments``).
    ``covered_tiles`` is :func:`covered_per_tile` of this frame with the technique's carried
    counts (the overshading denominator); without it, skipped tiles count no covered pixels.
    """
    c = costs
    n_tiles = frame.n_tiles
    bw = c["memory_bytes_per_cycle"]
    out: dict[str, float] = {}
    out["vertex_invocations"] = int(frame.vertex_invocations.sum())
    out["triangles_in"] = int(frame.triangles_in.sum())
    out["triangles_culled"] = int(frame.triangles_culled.sum())
    out["triangles_clipped"] = int(frame.triangles_clipped.sum())

    # ---- tiling (shared by all techniques of the frame)
    # parameter-buffer bytes come from the binning stage (its documented record sizes)
    tri = np.asarray(tiles.tri)
    pairs = int(tri.shape[0])
    binned = int(tiles.triangles_binned)
    offsets = np.asarray(tiles.offsets)
    pairs_per_tile = np.diff(offsets).astype(np.float64)
    out["triangles_binned"] = binned
    out["tile_triangle_pairs"] = pairs
    pb_written = float(tiles.bytes_written)
    pb_read = float(tiles.bytes_read)
    pb_read_per_tile = pairs_per_tile * (pb_read / pairs) if pairs else np.zeros(n_tiles)

    # ---- raster counters (per tile)
    def tile_counter(name):
        return result.counter(name).astype(np.float64)

    rast = tile_counter("fragments_rasterized")
    shaded = tile_counter("fragments_shaded")
    killed = tile_counter("early_z_killed")
    blended = tile_counter("blended")
    samples = tile_counter("samples")
    shader_cyc = tile_counter("shader_cycles")
    textured = tile_counter("textured_fragments")
    rendered = (tile_counter("tiles_rendered") > 0).astype(np.float64)
    hsr_tile = tile_counter("hsr_fragments")

    if covered_tiles is None:
        covered_tiles = covered_per_tile(frame, result)
    covered_pixels = int(np.sum(covered_tiles))

    out["fragments_rasterized"] = int(rast.sum())
    out["hsr_fragments"] = int(hsr_tile.sum())
    out["early_z_killed"] = int(killed.sum())
    out["fragments_shaded"] = int(shaded.sum())
    out["fragments_blended"] = int(blended.sum())
    out["samples"] = int(samples.sum())
    out["covered_pixels"] = covered_pixels
    out["overshading"] = out["fragments_shaded"] / covered_pixels if covered_pixels else 0.0
    out["shader_cycles"] = float(shader_cyc.sum())
    out["tiles_rendered"] = int(rendered.sum())
    out["tiles_skipped"] = int(n_tiles - rendered.sum())

    # ---- bytes
    vertex_bytes = out["vertex_invocations"] * c["vertex_bytes"]
    texture_bytes = textured * c["texture_bytes_per_fragment"]
    tile_px = _tile_pixels(frame.width, frame.height, frame.tile)
    colour_bytes = rendered * tile_px * c["colour_bytes_per_pixel"]
    pb_read_tile = pb_read_per_tile * rendered
    out["parameter_bytes_written"] = float(pb_written)
    out["parameter_bytes_read"] = float(pb_read_tile.sum())
    out["vertex_bytes"] = float(vertex_bytes)
    out["texture_bytes"] = float(texture_bytes.sum())
    out["colour_bytes"] = float(colour_bytes.sum())
    out["memory_bytes"] = (out["parameter_bytes_written"] + out["parameter_bytes_read"] + vertex_bytes
                           + out["texture_bytes"] + out["colour_bytes"])

    # ---- cycles
    geometry = (out["vertex_invocations"] * c["vertex_shader_cycles"]
                + out["triangles_in"] * c["primitive_assembly_cycles"]
                + pairs * c["polygon_list_cycles"]
                + (pb_written + vertex_bytes) / bw)
    fetch = pairs_per_tile * c["tile_fetch_cycles"] + pb_read_per_tile / bw
    raster = rast * c["raster_cycles_per_fragment"]
    shade = (shader_cyc * c["fragment_shader_cycles"] / max(c["fragment_processors"], 1)
             + blended * c["blend_cycles"] + texture_bytes / bw)
    flush = colour_bytes / bw
    main = np.maximum.reduce([fetch, raster, shade, flush])
    hsr_t = hsr_tile * c["raster_cycles_per_fragment"] + (fetch if hsr else 0.0)
    # parallel DR: the HSR pass of tile i+1 overlaps tile i; only its excess costs time
    tile_time = np.maximum(main, hsr_t)
    tile_time = np.where(rendered > 0, tile_time, c["tile_skip_cycles"])
    out["geometry_cycles"] = float(geometry)
    out["raster_cycles"] = float(tile_time.sum())
    out["cycles"] = out["geometry_cycles"] + out["raster_cycles"]

    # ---- energy (nJ)
    e = (out["vertex_invocations"] * c["energy_vertex_invocation"]
         + out["triangles_in"] * c["energy_triangle"]
         + (pairs + float((pairs_per_tile * rendered).sum()) + float((pairs_per_tile * rendered).sum() if hsr else 0.0))
         * c["energy_tile_pair"]
         + (out["fragments_rasterized"] + out["hsr_fragments"]) * c["energy_fragment_rasterized"]
         + out["shader_cycles"] * c["energy_fragment_shaded"]
         + out["fragments_blended"] * c["energy_fragment_blended"]
         + out["memory_bytes"] * c["energy_dram_byte"]
         + out["cycles"] * c["static_energy_per_cycle"])
    out["energy"] = float(e)
    return out


def totals(rows: list[dict]) -> dict:
    """Sum of per-frame counters, ratios recomputed from the sums."""
    out: dict[str, float] = {}
    if not rows:
        return out
    keys = [k for k in rows[0] if k not in ("technique", "frame")]
    for k in keys:
        vals = [r.get(k) for r in rows]
        if k in RATIO_COUNTERS:
            continue
        if all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
               for v in vals if v is not None):
            s = sum(v for v in vals if v is not None)
            out[k] = int(s) if all(isinstance(v, (int, np.integer)) for v in vals if v is not None) else float(s)
    cov = out.get("covered_pixels", 0)
    out["overshading"] = out.get("fragments_shaded", 0) / cov if cov else 0.0
    return out


def cost_table_markdown(costs: Mapping[str, float] | None = None) -> str:
    """The cost table as a Markdown table (for the report)."""
    vals = load_costs(costs) if costs is not None else load_costs()
    lines = ["| cost | value | unit | basis |", "|---|---:|---|---|"]
    for k, meta in DEFAULT_COSTS.items():
        lines.append(f"| `{k}` | {vals[k]:g} | {meta['unit']} | {meta['why']} |")
    return "\n".join(lines)
