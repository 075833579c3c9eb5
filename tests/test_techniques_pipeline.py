"""VRO, EVR, RE, EVR+RE, VRO+RE, DSR and EVR+DSR on the shipped scenes (issue 7).

Frames are compared with the baseline's pixel for pixel (``check_images``); counters come from
the pipeline's own rows.  Runs are short (a few frames of the scenes' own 1196 x 768 screen:
DSR's thresholds are for that tile-to-scene scale) to keep the suite fast;
``benchmarks/bench_techniques.py`` runs 60 frames.
"""

import json

import pytest

from pipeline_model.pipeline import simulate
from pipeline_model.scene import shipped_scenes
from pipeline_model.techniques import create as create_technique

EXACT = ["vro", "evr", "re", "evr+re", "vro+re"]
W, H, FRAMES = None, None, 4

_RUNS: dict = {}


def _run(scene, techniques=("baseline", *EXACT, "dsr", "evr+dsr"), frames=FRAMES):
    key = (scene, tuple(techniques), frames)
    if key not in _RUNS:
        _RUNS[key] = simulate(scene, techniques=list(techniques), frames=frames, width=W, height=H,
                              check_images=True, progress=False)
    return _RUNS[key]


def _rows(res, tech):
    return [r for r in res.rows if r["technique"] == tech]


def _sum(res, tech, key):
    return sum(r[key] for r in _rows(res, tech))


SCENES = shipped_scenes()


def test_shipped_scenes_present():
    for s in ("city-ordered", "city-unordered", "hud-over-3d", "sprites-2d", "low-frequency"):
        assert s in SCENES


@pytest.mark.parametrize("scene", SCENES)
def test_exact_techniques_are_bit_identical(scene):
    res = _run(scene)
    for tech in EXACT:
        diffs = [r["image_diff_pixels"] for r in _rows(res, tech)]
        assert diffs == [0] * len(diffs), (scene, tech, diffs)


def test_re_skips_most_tiles_of_sprites_2d():
    res = _run("sprites-2d")
    rows = _rows(res, "re")[1:]  # frame 0 has no previous signatures
    skipped = sum(r["tiles_skipped"] for r in rows)
    total = sum(r["tiles_skipped"] + r["tiles_rendered"] for r in rows)
    assert skipped > 0.5 * total


RE_FAMILY = ["re", "evr+re", "vro+re"]


@pytest.mark.parametrize("scene", SCENES)
def test_re_family_overshading_counts_the_frames_covered_pixels(scene):
    # A skipped tile keeps last frame's picture, so it keeps that picture's covered pixels: the
    # overshading denominator is the frame's coverage, the same as the baseline's, and RE's
    # overshading drops with the fragments of the tiles it skipped.  (EVR's and VRO's reordering
    # may shade a little more than program order on an ordered scene, so the overshading bound
    # is checked for plain RE, which renders the tiles it keeps exactly as the baseline does.)
    res = _run(scene)
    base = _rows(res, "baseline")
    for tech in RE_FAMILY:
        rows = _rows(res, tech)
        assert [r["covered_pixels"] for r in rows] == [r["covered_pixels"] for r in base], (scene, tech)
    for r, b in zip(_rows(res, "re"), base, strict=True):
        assert r["overshading"] <= b["overshading"] + 1e-12, (scene, r["frame"])
        if r["tiles_skipped"] == 0:
            assert r["overshading"] == pytest.approx(b["overshading"]), (scene, r["frame"])
    if scene == "sprites-2d":
        assert sum(r["tiles_skipped"] for r in _rows(res, "re")) > 0
        assert res.technique_totals("re")["overshading"] < res.technique_totals("baseline")["overshading"]


@pytest.mark.parametrize("scene", SCENES)
def test_evr_re_skips_at_least_as_many_tiles_as_re(scene):
    res = _run(scene)
    assert _sum(res, "evr+re", "tiles_skipped") >= _sum(res, "re", "tiles_skipped")


def test_evr_re_skips_strictly_more_on_hud_over_3d():
    res = _run("hud-over-3d")
    assert _sum(res, "evr+re", "tiles_skipped") > _sum(res, "re", "tiles_skipped")


def test_vro_and_evr_reduce_overshading_on_city_unordered():
    res = _run("city-unordered")
    base = _sum(res, "baseline", "fragments_shaded")
    for tech in ("vro", "evr"):
        assert _sum(res, tech, "fragments_shaded") < 0.8 * base, tech
    s = res.summaries
    assert s["vro"]["vro_nodes_per_frame"] > 0 and s["vro"]["vro_edges_per_frame"] > 0
    assert 0.0 <= s["evr"]["occlusion_prediction_accuracy"] <= 1.0


def test_dsr_low_frequency_rate_and_quality():
    res = _run("low-frequency")
    for tech in ("dsr", "evr+dsr"):
        s = res.summaries[tech]
        assert s["samples_per_pixel"] < 0.6, s
        assert s["mssim_min"] >= 0.95, s
        assert s["mssim_frames_below_threshold"] == []
        assert all("mssim" in r for r in _rows(res, tech))


def test_evr_dsr_takes_dsrs_analysis_and_keeps_its_own_figures(monkeypatch):
    """dsr and evr+dsr draw the same pictures: the second analyses a frame only when its
    inputs differ, and each technique's rows are those it gets when run alone."""
    from pipeline_model.techniques import dsr as dsr_module

    updates = []
    original = dsr_module.DSRState.update
    monkeypatch.setattr(dsr_module.DSRState, "update",
                        lambda self, *a, **k: updates.append(1) or original(self, *a, **k))
    scene = "low-frequency"
    both = simulate(scene, techniques=["dsr", "evr+dsr"], frames=FRAMES, progress=False)
    assert len(updates) == FRAMES
    for tech in ("dsr", "evr+dsr"):
        alone = simulate(scene, techniques=[tech], frames=FRAMES, progress=False)
        assert _rows(both, tech) == _rows(alone, tech), tech
        assert both.summaries[tech]["mssim_min"] == alone.summaries[tech]["mssim_min"]
    assert len(updates) == 3 * FRAMES


@pytest.mark.parametrize("scene", SCENES)
def test_dsr_quality_rule_on_every_scene(scene):
    res = _run(scene)
    s = res.summaries["dsr"]
    assert s["mssim_min"] >= 0.95, (scene, s)


def test_json_fields():
    res = _run("hud-over-3d")
    text = json.dumps(res.to_json(), default=str)
    assert "samples_per_pixel" in text and "mssim_min" in text
    assert "occlusion_prediction_accuracy" in text


def test_techniques_reset_between_runs():
    # one RE object through two runs: the second must start from an empty signature table, so
    # its frames repeat the first run's exactly (frame 0 skips no tile)
    re_once = create_technique("re")
    runs = [simulate("sprites-2d", techniques=[create_technique("baseline"), re_once], frames=3, width=W,
                     height=H, progress=False) for _ in range(2)]
    first, second = ([(r["frame"], r["tiles_skipped"], r["tiles_rendered"]) for r in _rows(run, "re")]
                     for run in runs)
    assert first == second
    assert first[0][1] == 0 and any(skipped > 0 for _, skipped, _ in first[1:])


# ----------------------------------------------------------- EVR+RE soundness (paper holes)
def _quad(name, oid, x, y, w, h, z, colour, **extra):
    state = {"cull": "none", "colour": colour, **extra.pop("state", {})}
    return {"name": name, "mesh": "quad", "layer": "s", "position": [x, y, z], "scale": [w, h, 1],
            "state": state, "object_id": oid, **extra}


_CHECKER = {"kind": "checker", "base": [0.9, 0.2, 0.2], "second": [0.1, 0.1, 0.8], "frequency": 3}


def _screen_scene(name, objects):
    return {"name": name, "frames": 6, "width": 64, "height": 32, "objects": objects,
            "layers": [{"name": "s", "order": "listed",
                        "camera": {"projection": "screen", "size": [64, 32]}}]}


# A mispredicted primitive (left out while visible) moves further back while still visible.
STALE_REFERENCE = _screen_scene("stale-reference", [
    _quad("A", 1, 16, 16, 32, 32, 0.3, [0.2, 0.8, 0.2]),
    _quad("Q", 2, 48, 16, 32, 32, 0.35, [0.8, 0.8, 0.2], visible=[0, 1]),
    _quad("P", 3, 48, 16, 32, 32, 0.4, _CHECKER, visible=[2, 5],
          animation={"keyframes": [{"frame": 2, "position": [48, 16, 0.4]},
                                   {"frame": 5, "position": [51, 16, 0.7]}]}),
])
# A depth-tested NWOZ overlay covers everything (FVP = its layer); a WOZ object comes in front.
PIERCED_LAYER = _screen_scene("pierced-layer", [
    _quad("F", 1, 32, 16, 64, 32, 0.5, [0.2, 0.8, 0.2]),
    _quad("M", 2, 20, 16, 16, 16, 0.6, _CHECKER,
          animation={"keyframes": [{"frame": 2, "position": [20, 16, 0.6]},
                                   {"frame": 3, "position": [22, 16, 0.1]},
                                   {"frame": 5, "position": [26, 16, 0.1]}]}),
    _quad("D", 3, 32, 16, 64, 32, 0.2, [0.3, 0.3, 0.9], state={"depth_write": False}),
])


@pytest.mark.parametrize("scene", [STALE_REFERENCE, PIERCED_LAYER], ids=["stale", "pierced"])
def test_evr_re_exact_where_the_papers_wording_is_not(scene):
    from pipeline_model.techniques.evr import EVR

    paper = EVR(re=True, paper_exclusion=True)
    paper.name = "evr+re-paper"
    res = simulate(scene, techniques=["baseline", paper, "evr+re"], check_images=True,
                   progress=False)
    ours = [r["image_diff_pixels"] for r in _rows(res, "evr+re")]
    theirs = [r["image_diff_pixels"] for r in _rows(res, "evr+re-paper")]
    assert ours == [0] * 6
    assert max(theirs) > 0  # the rule as worded in paper 003 shows stale tiles here
    assert _sum(res, "evr+re", "tiles_skipped") > 0


@pytest.mark.parametrize("scene", ["hud-over-3d", "city-batched"])
def test_dsr_default_thresholds_hold_at_the_quick_reports_size(scene):
    # the quick report renders at 598 x 384; thresholds searched at 1196 x 768 alone gave 0.943 on
    # hud-over-3d's frame 1 there, so the defaults are searched at both sizes
    res = simulate(scene, ["baseline", "dsr"], frames=5, width=598, height=384, progress=False)
    summ = res.summaries["dsr"]
    assert summ["mssim_frames_below_threshold"] == [] and summ["mssim_min"] >= 0.95
    assert "dsr_params_note" not in summ
    small = simulate(scene, ["baseline", "dsr"], frames=2, width=256, height=160, progress=False)
    assert "256x160" in small.summaries["dsr"]["dsr_params_note"]
