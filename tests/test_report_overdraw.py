"""The report's overdraw tables and paragraph (issue 20) on a small scene of folded knots: every
order of the scope runs on it, and the paragraph's figures are the runs' own."""

import importlib.util
import json
from dataclasses import replace

import pytest

from meshopt_batch_app.report.document import Section
from meshopt_batch_app.report.scope import OVERDRAW_ORDERS, SCOPES, get_scope
from meshopt_batch_app.report.simulate_section import matrix_frame, overdraw_tables, run_simulations
from pipeline_model.scene.builders import _folded_knot

HAS_MESHOPTIMIZER = importlib.util.find_spec("meshoptimizer") is not None


@pytest.fixture(scope="module")
def knots_run(tmp_path_factory):
    scene = {"name": "knots", "frames": 2, "width": 128, "height": 96, "clear": [0, 0, 0],
             "light": {"direction": [0.3, 1, 0.4]},
             "camera": {"projection": "perspective", "fovy": 50, "near": 0.1, "far": 20,
                        "eye": [0.2, 0.8, 2.2], "target": [0, 0.5, 0], "velocity": [0.02, 0, 0]},
             "meshes": {"knot": _folded_knot(0)},
             "objects": [{"name": "a", "mesh": "knot", "object_id": 0, "position": [-0.3, 0, 0],
                          "state": {"lit": True, "colour": {"kind": "lit", "base": [0.8, 0.7, 0.5]}}},
                         {"name": "b", "mesh": "knot", "object_id": 1, "position": [0.35, 0, -0.4],
                          "rotation": [0, 70, 0], "state": {"lit": True}}]}
    path = tmp_path_factory.mktemp("knots") / "knots.json"
    path.write_text(json.dumps(scene))
    scope = replace(SCOPES["smoke"], scenes=(str(path),), overdraw_scenes=(str(path),), frames=2, size=None)
    data = run_simulations(scope, check_gl=False)
    return scope, data


def test_scope_orders():
    full = get_scope("full")
    assert full.orders_for("statues") == ("original", "forsyth", "batch", *OVERDRAW_ORDERS)
    assert full.orders_for("city-unordered") == ("original", "forsyth", "batch")
    assert "batch+overdraw, meshoptimizer_overdraw on statues" in full.describe()


def test_every_order_runs_on_an_overdraw_scene(knots_run):
    scope, data = knots_run
    scene = scope.scenes[0]
    expected = list(scope.orders_for(scene))
    if not HAS_MESHOPTIMIZER:
        expected.remove("meshoptimizer_overdraw")
    assert sorted(o for s, o in data["runs"]) == sorted(expected)
    assert data["commands"][-1] == f"# and on {scene} with --method batch+overdraw / --method meshoptimizer_overdraw"


def test_overdraw_tables_and_paragraph_state_the_runs_figures(knots_run):
    scope, data = knots_run
    scene = scope.scenes[0]
    m = matrix_frame(data)
    sec = Section("simulate", "t")
    overdraw_tables(sec, data, m, scope)
    work, cost = sec.tables
    assert "work per order" in work.title and "cost table" in cost.title
    runs = {o: data["runs"][(scene, o)].totals for (s, o) in data["runs"]}
    assert list(work.frame["order"]) == [o for o in scope.orders_for(scene) if o in runs]
    assert list(work.frame.columns) == ["order", "vertex inv.", "frag. shaded", "overshading", "VRO overshading",
                                        "EVR overshading", "DR overshading"]
    for _, row in work.frame.iterrows():
        tot = runs[row["order"]]
        assert row["vertex inv."] == tot.loc["baseline", "vertex_invocations"]
        assert row["frag. shaded"] == tot.loc["baseline", "fragments_shaded"]
        assert row["DR overshading"] == tot.loc["dr", "overshading"] == 1.0
    for _, row in cost.frame.iterrows():
        tot = runs[row["order"]]
        assert row["Mcycles"] == tot.loc["baseline", "cycles"] / 1e6
        assert row["EVR speed-up"] == tot.loc["baseline", "cycles"] / tot.loc["evr", "cycles"]
    (text,) = sec.paragraphs
    def saved(tech):
        return int(runs["batch"].loc[tech, "fragments_shaded"] - runs["batch+overdraw"].loc[tech, "fragments_shaded"])

    gain, dr_gain = saved("baseline"), saved("dr")
    assert text.startswith(f"Does mesh-level ordering still pay on {scene}?")
    assert f"The mesh-level gain is {gain:,} fragments" in text
    assert f"under DR {dr_gain:,} fragments" in text
    assert "so on this model" in text
