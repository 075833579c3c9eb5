"""The published figures the report puts beside its own (data, with their sources).

Each anchor names the paper, the place in it, the published value and how the report computes
its own value from the sections' data frames; the comparison table is built in
:func:`anchors_section`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .document import Section, Table

#: (id, paper, where, what, published value as text, published number or None)
PUBLISHED = (
    ("bunny_batch", "001", "Table 1", "bunny ASR with the batch optimizer, NVIDIA", "0.82", 0.82),
    ("bunny_tomf", "001", "Table 1", "bunny ASR with TomF (Forsyth), NVIDIA", "0.88", 0.88),
    ("vro_overshading", "000", "sec. 6, Fig. 16", "VRO overshading relative to the baseline", "~0.81x", 0.81),
    ("dr_overshading", "000", "sec. 6, Fig. 16", "DR overshading relative to the baseline", "~0.7x", 0.70),
    ("evr_overshading", "003", "sec. VII, Fig. 8", "EVR overshading relative to the baseline",
     "~0.80x (20% fewer vainly shaded fragments)", 0.80),
    ("re_skipped", "003", "sec. VII, Fig. 9", "tiles skipped by RE", "49%", 49.0),
    ("evr_re_skipped", "003", "sec. VII, Fig. 9", "tiles skipped by EVR+RE", "54%", 54.0),
    ("dsr_samples", "004", "sec. 7, Fig. 12", "DSR average samples per fragment", "0.36", 0.36),
    ("dsr_mssim", "004", "sec. 7", "DSR frames below MSSIM 0.95", "0", 0.0),
)


def _mean(series) -> float:
    v = pd.to_numeric(pd.Series(series), errors="coerce").dropna()
    return float(v.mean()) if len(v) else np.nan


def ours(compare_df: pd.DataFrame | None, matrix: pd.DataFrame | None, order: str) -> dict:
    """Our value for every anchor id (NaN where the data is missing) and how it was taken."""
    out: dict[str, tuple[float, str]] = {}
    if compare_df is not None and len(compare_df):
        nv = compare_df[(compare_df["mesh"] == "bunny") & (compare_df["profile"] == "nvidia_gl")]
        for key, method in (("bunny_batch", "batch"), ("bunny_tomf", "forsyth")):
            v = nv[nv["method"] == method]["asr"]
            out[key] = (float(v.iloc[0]) if len(v) else np.nan, "bunny, nvidia_gl profile (model)")
    if matrix is not None and len(matrix):
        own = matrix[matrix["order"] == order]
        n = own["scene"].nunique()
        where = f"mean over {n} scenes, {order} order"
        for key, tech, col in (("vro_overshading", "vro", "overshading_vs_baseline"),
                               ("dr_overshading", "dr", "overshading_vs_baseline"),
                               ("evr_overshading", "evr", "overshading_vs_baseline"),
                               ("re_skipped", "re", "tiles_skipped_pct"),
                               ("evr_re_skipped", "evr+re", "tiles_skipped_pct"),
                               ("dsr_samples", "dsr", "samples_per_pixel")):
            if col in own:
                out[key] = (_mean(own[own["technique"] == tech][col]), where)
        if "mssim_min" in own:
            d = own[own["technique"] == "dsr"]["mssim_min"]
            out["dsr_mssim"] = (float((pd.to_numeric(d, errors="coerce") < 0.95).sum()) if len(d) else np.nan,
                                f"scenes whose lowest DSR frame MSSIM < 0.95 ({n} scenes)")
    return out


def anchors_section(compare_df, matrix, order: str) -> Section:
    sec = Section("anchors", "5. Published figures beside ours")
    mine = ours(compare_df, matrix, order)
    rows = []
    for key, paper, where, what, text, _ in PUBLISHED:
        val, how = mine.get(key, (np.nan, "not computed in this run"))
        rows.append({"paper": paper, "where": where, "figure": what, "published": text,
                     "this report": val, "how ours is taken": how})
    df = pd.DataFrame(rows)
    sec.tables.append(Table("Published anchors and this report's values", df, floatfmt="{:.3f}"))
    have = [r for r in rows if np.isfinite(r["this report"])]
    sec.paragraphs.append(
        f"{len(have)} of {len(rows)} published figures have a counterpart in this run. The papers "
        "measured real GPUs (paper 001) and a cycle-accurate simulator on traces of Android games "
        "(papers 000, 003, 004); this report measures the batch model on the same meshes and its own "
        "open pipeline model on its own synthetic scenes, so agreement in direction and size is "
        "what to look for, not equal digits.")
    return sec
