"""Report section 6: the model's raster held against the local OpenGL, frame by frame.

The numbers are the ``gl_check`` record that :func:`pipeline_model.pipeline.simulate` keeps when
the application passes :class:`meshopt_batch_app.glcheck.GLFrameCheck` (``meshopt-batch simulate
SCENE --check-gl``), i.e. :func:`meshopt_batch_app.glcheck.check_frame_against_gl` on every frame
of the scenes' own-order runs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .document import Figure, Section, Table
from .figures import new_figure


def gl_table(sim: dict, order: str) -> pd.DataFrame:
    rows = []
    for (scene, o), res in sim["runs"].items():
        gl_check = res.checks.get("gl_check")
        if o != order or gl_check is None:
            continue
        frames = gl_check["frames"]
        reasons: dict[str, int] = {}
        for f in frames:
            for k, v in (f.get("reasons") or {}).items():
                reasons[k] = reasons.get(k, 0) + int(v)
        tm = sum(int(f["shaded_total_model"]) for f in frames)
        tg = sum(int(f["shaded_total_gl"]) for f in frames)
        rows.append({
            "scene": scene, "renderer": gl_check["renderer"], "frames": len(frames),
            "coverage diff. pixels": sum(int(f["coverage_diff_pixels"]) for f in frames),
            "shaded diff. pixels": sum(int(f["shaded_diff_pixels"]) for f in frames),
            "shaded (model)": tm, "shaded (GL)": tg,
            "shaded diff. %": 100.0 * abs(tm - tg) / tg if tg else 0.0,
            "why they differ": ", ".join(f"{n} px {k}" for k, n in sorted(reasons.items())) or "-",
        })
    return pd.DataFrame(rows)


def glcheck_section(sim: dict, scope) -> Section:
    sec = Section("glcheck", "6. The model against a real OpenGL renderer (simulate --check-gl)")
    order = scope.orders[0]
    if sim.get("gl_reason"):
        sec.paragraphs.append(
            f"The raster check was not run: {sim['gl_reason']}. Install Mesa's EGL/OpenGL runtime "
            "(`scripts/install-system-deps.sh`, or `apt-get install libegl1 libgl1 libegl-mesa0 "
            "libgl1-mesa-dri`) and re-run the report.")
        return sec
    df = gl_table(sim, order)
    if not len(df):
        sec.paragraphs.append("No scene finished its simulation, so nothing was checked.")
        return sec
    sec.commands = [c for c in sim["commands"] if "--check-gl" in c]
    cov, sh = int(df["coverage diff. pixels"].sum()), int(df["shaded diff. pixels"].sum())
    frames = int(df["frames"].sum())
    worst = df.loc[df["shaded diff. %"].idxmax()]
    sec.paragraphs.append(
        f"Every frame of the {order}-order runs ({frames} frames over {len(df)} scenes) was also drawn "
        f"by {df['renderer'].iloc[0]} in the model's program order with each draw's depth state, "
        "counting per pixel the fragments that pass the depth test (each adds one to a float colour "
        "buffer by additive blending) and, with depth testing off, the fragments covering it. "
        "Pixels whose coverage differs: "
        f"{cov}; pixels whose shaded-fragment count differs: {sh}; the largest difference in shaded "
        f"fragments is {worst['shaded diff. %']:.4f}% ({worst['scene']}). "
        + ("The overshading figures above therefore come from a raster that counts exactly what a real "
           "OpenGL implementation counts." if cov == 0 and sh == 0 else
           "Where counts differ, the last column gives the reason the check found for each pixel."))
    sec.tables.append(Table("Model vs OpenGL, per scene (sums over the checked frames)", df,
                            floatfmt="{:.4f}"))
    fig, (ax,) = new_figure(1, 1, 7.5, 3.4)
    x = np.arange(len(df))
    ax.bar(x - 0.2, df["shaded (model)"] / 1e6, 0.4, label="model")
    ax.bar(x + 0.2, df["shaded (GL)"] / 1e6, 0.4, label=str(df["renderer"].iloc[0])[:40])
    ax.set_xticks(x)
    ax.set_xticklabels(df["scene"], rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("shaded fragments (millions)")
    ax.legend(fontsize=7)
    ax.grid(True, axis="y", alpha=0.3)
    sec.figures.append(Figure(
        "glcheck_bars", fig,
        "Shaded fragments (early-Z survivors) summed over the checked frames, model vs OpenGL: "
        + "; ".join(f"{r['scene']} {r['shaded (model)']:,} vs {r['shaded (GL)']:,}" for _, r in df.iterrows())
        + "."))
    return sec
