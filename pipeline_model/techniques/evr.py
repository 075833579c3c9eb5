"""Early Visibility Resolution (EVR), Anglada et al., paper 003 sec. III-V.

Per tile, the farthest visible point (FVP) of frame N predicts which primitives of frame N+1 are
occluded in that tile:

* **WOZ** primitives (opaque, depth-tested, depth-writing) resolve visibility with the Z buffer:
  the FVP is ``Zfar``, the largest depth left in the tile's Z buffer (sec. III.A).
* **NWOZ** primitives (everything else: no depth write, no depth test, or blended) resolve it by
  order.  The **Layer Generator Table** (sec. V.A) gives each primitive a per-tile layer id: the
  tile's counter goes up when a primitive of a new draw arrives, always for NWOZ, for WOZ only if
  the previous primitive was NWOZ (so a run of WOZ draws shares one layer).  The counter starts
  as if the cleared background were an NWOZ layer 0, so the first draw of a tile gets layer 1.
  The **Layer Buffer** keeps, per pixel, the layer of the last *opaque* fragment written
  (blended fragments do not update it); ``Lfar`` is its minimum over the tile (sec. V.B).
* The **FVP Table** (sec. V.C) stores per tile either ``Zfar`` or ``Lfar`` and the FVP-type bit.
  The paper sets the type by comparing ``Lfar`` with the ZR register (layer of the last visible
  WOZ fragment); since a layer id here is either all-WOZ or all-NWOZ, the type is simply the type
  of layer ``Lfar`` (layer 0, the background, counts as WOZ: ``Zfar`` is then 1.0 and nothing is
  predicted).

A primitive is predicted occluded in a tile when the previous FVP is a layer and its layer is
below ``Lfar``, or when the previous FVP is a Z value, the primitive is WOZ and its closest vertex
(``Znear``) is farther than ``Zfar`` (sec. III.C).  Algorithm 1 then splits each tile's list in
two: WOZ primitives predicted visible go to the first list, predicted occluded to the second, and
an NWOZ primitive first moves the second list to the end of the first (so NWOZ primitives keep
their order relative to everything).  Mispredictions cost only Early-Z efficiency.

EVR + RE (sec. IV.B) leaves predicted-occluded primitives out of the tile signature.  The paper's
Table I argument has holes that this model closes, because a skipped tile must be exactly right:

1. *Stale reference.*  A primitive left out while mispredicted (visible) can later move behind
   the FVP again while the tile is skipped with its colours.  Fix: when a tile is rendered, its
   reference signature (the one the next frame is compared with) is recomputed with the FVP that
   this very frame produced, so both frames are filtered by the same FVP.  A WOZ primitive whose
   ``Znear`` is beyond that frame's own ``Zfar`` provably left no colour and no depth: the last
   depth writer of every pixel is in front of it and overwrote it.
2. *Translucent depth writers.*  That overwrite argument needs the last depth writer of a pixel to
   be opaque; tiles with a blended depth-writing primitive leave nothing out by depth.
3. *Layers over depth-tested geometry.*  A primitive below ``Lfar`` is hidden only if what covers
   it cannot be pierced: layer exclusion is used only when every primitive of the tile at or
   above ``Lfar`` has its depth test off (a HUD, 2D sprites).  Then the suffix alone decides the
   colours, and equal signatures mean an equal suffix.
4. *Float rounding.*  Depth exclusion compares ``Zfar`` with a lower bound of the triangle's
   fragment depths (:func:`fragment_depth_floor`: ``Znear`` less the float32 plane error bound),
   not with ``Znear`` itself.

State carried between frames: the FVP Table (and, with RE, the Signature Buffer).

References
----------
Anglada, M., de Lucas, E., Parcerisa, J.-M., Aragon, J. L., Gonzalez, A. (2019).  Early Visibility
Resolution for Removing Ineffectual Computations in the Graphics Pipeline.  HPCA (paper 003), sec. III-V: FVP, Layer
Generator Table, Layer Buffer, FVP Table, Algorithm 1 (two-list reordering), EVR-aided RE.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np

from pipeline_model.techniques import re as _re
from pipeline_model.techniques._shared import frame_cache, reorder_extra
from pipeline_model.techniques.base import RenderRequest, Technique
from pipeline_model.techniques.dsr import DSRController

__all__ = [
    "Z_MARGIN",
    "FVPTable",
    "woz_draws",
    "assign_layers",
    "predict_occluded",
    "reorder_two_lists",
    "fvp_from_writer",
    "fragment_depth_floor",
    "re_exclusion",
    "prediction_stats_entries",
    "EVR",
]

#: Safety margin for the depth exclusion of EVR+RE (see module docstring, point 4): the
#: raster's float32 depth plane, anchored at the screen origin and evaluated with two FMAs, can
#: land a few ulps of ``S = 1 + |dz/dx| * max|x| + |dz/dy| * max|y|`` below the smallest vertex
#: depth; the bound used is ``Z_MARGIN * (1 + 2 * S)``, ten times that error and more.
Z_MARGIN = 1e-6


@nb.njit(cache=True)
def _depth_floor(xy, z, width, height, margin):
    n = xy.shape[0]
    out = np.empty(n)
    for t in range(n):
        x0, y0 = xy[t, 0, 0], xy[t, 0, 1]
        e1x, e1y = xy[t, 1, 0] - x0, xy[t, 1, 1] - y0
        e2x, e2y = xy[t, 2, 0] - x0, xy[t, 2, 1] - y0
        z0 = np.float64(z[t, 0])
        dz1 = np.float64(z[t, 1]) - z0
        dz2 = np.float64(z[t, 2]) - z0
        det = e1x * e2y - e2x * e1y
        gx = 0.0
        gy = 0.0
        if det != 0.0:
            gx = (dz1 * e2y - dz2 * e1y) / det
            gy = (dz2 * e1x - dz1 * e2x) / det
        mx = float(width)
        my = float(height)
        zmin = z0
        for k in range(3):
            mx = max(mx, abs(xy[t, k, 0]))
            my = max(my, abs(xy[t, k, 1]))
            zmin = min(zmin, np.float64(z[t, k]))
        s = 1.0 + abs(gx) * mx + abs(gy) * my
        out[t] = zmin - margin * (1.0 + 2.0 * s)
    return out


def fragment_depth_floor(frame) -> np.ndarray:
    """(N,) a lower bound on the depth of every fragment of each triangle (float64).

    ``Znear`` (the smallest vertex depth) less the float32 plane-evaluation error bound of
    :data:`Z_MARGIN`; used by EVR+RE's depth exclusion, where an off-by-an-ulp would matter.
    """
    return _depth_floor(frame.xy, frame.z, frame.width, frame.height, Z_MARGIN)


@dataclass
class FVPTable:
    """Per tile: ``zfar`` (float32), ``lfar`` (int32) and ``is_layer`` (FVP-type bit)."""

    zfar: np.ndarray
    lfar: np.ndarray
    is_layer: np.ndarray

    @classmethod
    def empty(cls, n_tiles: int) -> FVPTable:
        """No knowledge: Zfar = 1 (far plane), nothing predicted occluded."""
        return cls(np.ones(n_tiles, np.float32), np.zeros(n_tiles, np.int32),
                   np.zeros(n_tiles, np.bool_))

    def updated(self, new: FVPTable, rendered: np.ndarray) -> FVPTable:
        """Entries of rendered tiles from ``new``, the others kept (a skipped tile is unchanged)."""
        return FVPTable(np.where(rendered, new.zfar, self.zfar),
                        np.where(rendered, new.lfar, self.lfar),
                        np.where(rendered, new.is_layer, self.is_layer))


def woz_draws(frame) -> np.ndarray:
    """WOZ per draw: opaque, depth-tested, depth-writing (the primitives EVR may move)."""
    return np.asarray(frame.depth_test & frame.depth_write & ~frame.blend, np.bool_)


@nb.njit(cache=True)
def _assign_layers(offsets, tri, draw, woz):
    layer = np.empty(tri.shape[0], np.int32)
    for t in range(offsets.shape[0] - 1):
        last_cmd = -1
        cur = 0
        last_woz = False  # the cleared background acts as an NWOZ layer 0
        for i in range(offsets[t], offsets[t + 1]):
            d = draw[tri[i]]
            w = woz[d]
            if d != last_cmd:
                if (not w) or (not last_woz):
                    cur += 1
                last_cmd = d
            last_woz = w
            layer[i] = cur
    return layer


def assign_layers(offsets, tri, draw, woz) -> np.ndarray:
    """Layer Generator Table: layer id per CSR entry (program-order bins), paper 003 sec. V.A."""
    return _assign_layers(np.asarray(offsets, np.int64), np.asarray(tri),
                          np.asarray(draw, np.int32), np.asarray(woz, np.bool_))


@nb.njit(cache=True)
def _predict(offsets, tri, draw, layer, znear, woz, zfar, lfar, is_layer):
    occ = np.zeros(tri.shape[0], np.bool_)
    for t in range(offsets.shape[0] - 1):
        for i in range(offsets[t], offsets[t + 1]):
            if is_layer[t]:
                occ[i] = layer[i] < lfar[t]
            else:
                occ[i] = woz[draw[tri[i]]] and znear[tri[i]] > zfar[t]
    return occ


def predict_occluded(offsets, tri, draw, layer, znear, woz, fvp: FVPTable) -> np.ndarray:
    """Occlusion prediction per CSR entry from the previous frame's FVP Table (sec. III.C)."""
    return _predict(np.asarray(offsets, np.int64), np.asarray(tri), np.asarray(draw, np.int32),
                    layer, np.asarray(znear, np.float32), np.asarray(woz, np.bool_),
                    fvp.zfar, fvp.lfar, fvp.is_layer)


@nb.njit(cache=True)
def _reorder(offsets, tri, draw, woz, occ):
    perm = np.empty(tri.shape[0], np.int64)
    second = np.empty(tri.shape[0], np.int64)
    for t in range(offsets.shape[0] - 1):
        k = offsets[t]
        ns = 0
        for i in range(offsets[t], offsets[t + 1]):
            if woz[draw[tri[i]]]:
                if occ[i]:
                    second[ns] = i
                    ns += 1
                else:
                    perm[k] = i
                    k += 1
            else:
                for j in range(ns):
                    perm[k] = second[j]
                    k += 1
                ns = 0
                perm[k] = i
                k += 1
        for j in range(ns):
            perm[k] = second[j]
            k += 1
    return perm


def reorder_two_lists(offsets, tri, draw, woz, occluded) -> np.ndarray:
    """Algorithm 1 of paper 003: per-tile order with predicted-occluded WOZ primitives deferred.

    Returns the permutation of CSR entries (``tri[perm]`` is the new order; the tile offsets do
    not change).
    """
    return _reorder(np.asarray(offsets, np.int64), np.asarray(tri), np.asarray(draw, np.int32),
                    np.asarray(woz, np.bool_), np.asarray(occluded, np.bool_))


@nb.njit(cache=True, parallel=True)
def _fvp_writer(offsets, tri, perm, draw, layer, woz, depth, writer, tiles_x, tile):
    n_tiles = offsets.shape[0] - 1
    h, w = depth.shape
    zfar = np.empty(n_tiles, np.float32)
    lfar = np.empty(n_tiles, np.int32)
    is_layer = np.zeros(n_tiles, np.bool_)
    for t in nb.prange(n_tiles):
        y0 = (t // tiles_x) * tile
        x0 = (t % tiles_x) * tile
        zf = np.float32(0.0)
        lf = np.int32(2**31 - 1)
        last = -1
        lv = np.int32(0)
        for y in range(y0, min(y0 + tile, h)):
            for x in range(x0, min(x0 + tile, w)):
                if depth[y, x] > zf:
                    zf = depth[y, x]
                e = writer[y, x]
                if e != last:  # neighbouring pixels mostly share their writer
                    last = e
                    lv = layer[perm[e]] if e >= 0 else np.int32(0)
                if lv < lf:
                    lf = lv
        zfar[t] = zf
        lfar[t] = lf
        if lf > 0:
            for i in range(offsets[t], offsets[t + 1]):
                if layer[i] == lf:
                    is_layer[t] = not woz[draw[tri[i]]]
                    break
    return zfar, lfar, is_layer


def fvp_from_writer(offsets, tri, perm, draw, layer, woz, depth, writer_entry, tiles_x: int,
                    tile: int) -> FVPTable:
    """FVP Table entries from a rendered frame (sec. V.B-C).

    ``depth`` is the final (H, W) depth buffer.  The Layer Buffer (layer of the last opaque
    fragment written, 0 where none) is read through the raster's ``writer_entry`` (index into
    the rendered, reordered lists ``tri[perm]``; -1: background): the layer of pixel p is
    ``layer[perm[writer_entry[p]]]``.  ``Zfar`` is the tile's largest depth, ``Lfar`` its
    smallest layer, and the FVP is a layer when layer ``Lfar`` is NWOZ.  One pass over the
    buffers, no full-size Layer Buffer (``tests/reference_kernels.py`` builds one and checks
    that both agree).
    """
    zfar, lfar, is_layer = _fvp_writer(
        np.asarray(offsets, np.int64), np.asarray(tri), np.asarray(perm, np.int64),
        np.asarray(draw, np.int32), np.asarray(layer, np.int32), np.asarray(woz, np.bool_),
        np.asarray(depth, np.float32), np.asarray(writer_entry, np.int32), int(tiles_x), int(tile))
    return FVPTable(zfar, lfar, is_layer)


@nb.njit(cache=True)
def _prediction_counts(offsets, tri, perm, draw, woz, rendered, pred, vis):
    tp = fp = fn = tn = 0
    for t in range(offsets.shape[0] - 1):
        if not rendered[t]:
            continue
        for i in range(offsets[t], offsets[t + 1]):
            e = perm[i]
            if not woz[draw[tri[e]]]:
                continue
            p = pred[e]
            o = not vis[i]
            if p and o:
                tp += 1
            elif p:
                fp += 1
            elif o:
                fn += 1
            else:
                tn += 1
    return tp, fp, fn, tn


def prediction_stats_entries(offsets, tri, perm, draw, woz, rendered, predicted,
                             visible) -> dict:
    """Confusion counts of predicted-occluded vs really occluded (no fragment passed early-Z)
    over the (tile, WOZ primitive) pairs of rendered tiles, in one pass: entry ``i`` of the
    reordered lists is CSR entry ``perm[i]``, ``predicted`` is per CSR entry and ``visible``
    (any fragment passed early-Z) per reordered entry.  Keys: ``pairs``, ``true_occluded``,
    ``false_occluded``, ``missed_occluded``, ``true_visible``."""
    tp, fp, fn, tn = _prediction_counts(
        np.asarray(offsets, np.int64), np.asarray(tri), np.asarray(perm, np.int64),
        np.asarray(draw, np.int32), np.asarray(woz, np.bool_), np.asarray(rendered, np.bool_),
        np.asarray(predicted, np.bool_), np.asarray(visible, np.bool_))
    return {"pairs": int(tp + fp + fn + tn), "true_occluded": int(tp), "false_occluded": int(fp),
            "missed_occluded": int(fn), "true_visible": int(tn)}


@nb.njit(cache=True)
def _exclusion(offsets, tri, draw, layer, zfloor, woz, blend, depth_test, depth_write,
               zfar, lfar, is_layer):
    ex = np.zeros(tri.shape[0], np.bool_)
    for t in range(offsets.shape[0] - 1):
        a, b = offsets[t], offsets[t + 1]
        if is_layer[t]:
            ok = True
            for i in range(a, b):
                if layer[i] >= lfar[t] and depth_test[draw[tri[i]]]:
                    ok = False
                    break
            if ok:
                for i in range(a, b):
                    ex[i] = layer[i] < lfar[t]
        else:
            ok = True
            for i in range(a, b):
                d = draw[tri[i]]
                if blend[d] and depth_write[d] and depth_test[d]:
                    ok = False
                    break
            if ok:
                for i in range(a, b):
                    p = tri[i]
                    ex[i] = woz[draw[p]] and zfloor[p] > zfar[t]
    return ex


def re_exclusion(offsets, tri, frame, layer, zfloor, fvp: FVPTable) -> np.ndarray:
    """CSR entries EVR+RE leaves out of the tile signatures (prediction + soundness guards).

    ``zfloor`` (N,) bounds every fragment depth of each triangle from below
    (:func:`fragment_depth_floor`).
    """
    return _exclusion(np.asarray(offsets, np.int64), np.asarray(tri), frame.draw, layer,
                      np.asarray(zfloor, np.float64), woz_draws(frame), frame.blend,
                      frame.depth_test, frame.depth_write, fvp.zfar, fvp.lfar, fvp.is_layer)


# -------------------------------------------------------------------------- technique


def znear_of(frame) -> np.ndarray:
    """(N,) ``Znear``, each triangle's smallest vertex depth: ``frame.z.min(axis=1)`` as two
    element-wise minimums (the same values; numpy's per-row reduction over three columns is
    ~30x slower)."""
    z = frame.z
    return np.minimum(np.minimum(z[:, 0], z[:, 1]), z[:, 2])


def _zfloor(frame):
    return frame_cache(frame, "evr_zfloor", lambda: fragment_depth_floor(frame))


def _frame_layers(frame, tiles):
    woz = frame_cache(frame, "evr_woz", lambda: woz_draws(frame))
    layer = frame_cache(frame, "evr_layer",
                        lambda: assign_layers(tiles.offsets, tiles.tri, frame.draw, woz))
    znear = frame_cache(frame, "evr_znear", lambda: znear_of(frame))
    return woz, layer, znear


class EVR(Technique):
    """EVR as a pipeline technique; ``re=True`` gives ``evr+re``, ``dsr=True`` ``evr+dsr``.

    Uses from the raster stage the final depth buffer (Zfar), the entry that last wrote each
    pixel's colour without blending (``record_writer``: the Layer Buffer is that entry's layer)
    and the per-(tile, triangle) visibility (prediction accuracy).
    """

    aggregate = {"occlusion_prediction_accuracy": "mean", "mssim": "min",
                 "samples_per_pixel": "mean"}

    def __init__(self, re: bool = False, dsr: bool = False, dsr_params=None, quality: bool = True,
                 paper_exclusion: bool = False):
        self.use_re, self.use_dsr = bool(re), bool(dsr)
        #: EVR+RE exactly as paper 003 sec. IV.B words it (predicted occluded -> out of the
        #: signature, reference = that signature).  Not exact (module docstring); for tests.
        self.paper_exclusion = bool(paper_exclusion)
        self._dsr_opts = (dsr_params, quality)
        self.name = "evr" + ("+re" if re else "") + ("+dsr" if dsr else "")
        self.exact = not dsr
        self.reset()

    def reset(self) -> None:
        self.fvp: FVPTable | None = None
        self.buffer = _re.RenderingElimination() if self.use_re else None
        self.dsr = DSRController(*self._dsr_opts) if self.use_dsr else None
        self.stats = {"pairs": 0, "true_occluded": 0, "false_occluded": 0, "missed_occluded": 0,
                      "true_visible": 0}
        self._cur = None

    def begin_frame(self, ctx) -> RenderRequest:
        frame, tiles = ctx.frame, ctx.tiles
        offs, tri = tiles.offsets, tiles.tri
        if self.fvp is None or self.fvp.zfar.shape[0] != frame.n_tiles:
            self.fvp = FVPTable.empty(frame.n_tiles)
        woz, layer, znear = _frame_layers(frame, tiles)
        pred = predict_occluded(offs, tri, frame.draw, layer, znear, woz, self.fvp)
        perm = reorder_two_lists(offs, tri, frame.draw, woz, pred)
        req = RenderRequest(order=(offs, tri[perm]), record_prim_visibility=True,
                            extra={"record_writer": True, **reorder_extra()})
        skip = sig = None
        if self.buffer is not None:
            ex = pred if self.paper_exclusion else re_exclusion(offs, tri, frame, layer,
                                                                 _zfloor(frame), self.fvp)
            sig = _re.frame_signatures(ctx, include=~ex)
            skip = self.buffer.decide(sig)
            req.skip = skip if skip.any() else None
        if self.dsr is not None:
            req.rate = self.dsr.rate(ctx)
        self._cur = (pred, perm, skip, sig)
        return req

    def end_frame(self, ctx, result) -> dict:
        frame, tiles = ctx.frame, ctx.tiles
        offs, tri = tiles.offsets, tiles.tri
        pred, perm, skip, sig = self._cur
        woz, layer, znear = _frame_layers(frame, tiles)
        rendered = np.ones(frame.n_tiles, np.bool_) if skip is None else ~skip
        # Layer Buffer: layer of the entry that last wrote each pixel without blending (0: none)
        new = fvp_from_writer(offs, tri, perm, frame.draw, layer, woz, result.depth,
                              result.writer_entry, frame.tiles_x, frame.tile)
        had_fvp = bool(self.fvp.zfar.min() < 1.0 or self.fvp.is_layer.any())
        self.fvp = self.fvp.updated(new, rendered)
        out = {}
        if self.buffer is not None and self.paper_exclusion:
            self.buffer.commit(sig, rendered)
        elif self.buffer is not None:
            # reference signature: this frame filtered by the FVP it produced (docstring, 1.)
            ex = re_exclusion(offs, tri, frame, layer, _zfloor(frame), self.fvp)
            self.buffer.commit(_re.frame_signatures(ctx, include=~ex), rendered)
        if had_fvp:
            # accuracy over (tile, WOZ primitive) pairs of rendered tiles: predicted occluded vs
            # no fragment passing early-Z in this (reordered) render
            st = prediction_stats_entries(offs, tri, perm, frame.draw, woz, rendered, pred,
                                          result.prim_visible)
            for k in self.stats:
                self.stats[k] += st[k]
            if st["pairs"]:
                out["occlusion_prediction_accuracy"] = \
                    (st["true_occluded"] + st["true_visible"]) / st["pairs"]
        out["evr_predicted_occluded"] = int(np.count_nonzero(pred))
        if self.dsr is not None:
            out.update(self.dsr.update(ctx, result))
        return out

    def summary(self) -> dict:
        s = self.stats
        n = s["pairs"]
        said_occluded = s["true_occluded"] + s["false_occluded"]
        were_occluded = s["true_occluded"] + s["missed_occluded"]
        out = {"occlusion_prediction_accuracy": (s["true_occluded"] + s["true_visible"]) / n
               if n else None,
               "occlusion_prediction_precision": s["true_occluded"] / said_occluded
               if said_occluded else None,
               "occlusion_prediction_recall": s["true_occluded"] / were_occluded
               if were_occluded else None}
        if self.dsr is not None:
            out.update(self.dsr.summary())
        return out
