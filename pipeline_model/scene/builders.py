"""Builders of the shipped pipeline-model scenes (the data files ``meshes/scenes/*.json``).

The JSON files are generated from these functions (deterministic: a seeded
``numpy.random.default_rng``) and committed; ``python -m pipeline_model.scene.builders``
rewrites them and ``tests/test_scene.py`` checks that the committed files equal the builders'
output.  The format is documented in :mod:`pipeline_model.scene.schema`.  The builders live
here, not beside the data, because the static batches are sized with
:func:`~pipeline_model.scene.mesh_resolution.resolve_mesh` (``meshes`` imports only the core).

==================  ===========================================================================
scene               what it exercises
==================  ===========================================================================
city-unordered      ~100 opaque lit buildings, trees, a statue (the Stanford bunny when
                    ``../shared/meshes`` is there, an icosphere otherwise) and moving cars along
                    a street; the camera drives down the street.  Objects are submitted
                    **far to near** each frame and the ground first: the worst case for early-Z
                    (VRO, EVR, DR and the oracle have most to win).
city-ordered        the same city drawn **near to far**, the ground last: baseline close to the
                    oracle.
city-batched        the same street with its buildings baked into **static batches** (one draw
                    per material, up to 65,535 vertices, parts in the level's listing order),
                    as mobile engines submit static geometry: an object-level sort (VRO) can
                    order only whole batches, a primitive-level one (EVR) works inside them.
hud-over-3d         a 3D scene (orbiting camera, spinning objects) under HUD layers drawn last
                    with a screen-space camera: opaque NWOZ panels (minimap, bottom bar) and
                    translucent NWOZ panels (status bar, reticle), a moving minimap marker and
                    an animated health bar (EVR + RE: 3D primitives hidden by opaque HUD panels
                    need not enter the tile signatures).  A camera cut at frame 30 jumps to a
                    second viewpoint (``"cuts": [30]``: DSR's first frame after it is reported
                    apart from the MSSIM rule).
sprites-2d          painter's-algorithm 2D game: background, parallax hills, ~150 static platform
                    and decoration sprites, a few moving sprites and translucent particles, all
                    NWOZ with depth testing off (RE skips most tiles).
low-frequency       an orthographic 2.5D scene scrolling slowly: large flat and smooth (lit,
                    low-frequency noise) regions beside fine checker and stripe textures (DSR).
statues             high-poly scanned statues (the dragon, Happy Buddha, armadillo and bunny of
                    ``../shared/meshes``; procedural folded knots of tori when absent), several
                    instances filling most of the screen, drawn near to far as an engine sorts
                    opaque objects, under a slowly orbiting camera: what overdraw is left is
                    mostly *inside* the meshes, where the triangle order decides it (issue 20).
==================  ===========================================================================

Meshes used in the scenes' index buffers are shuffled copies (``"shuffle": SEED``) or the shared
scanned meshes in their file order, so the mesh optimizers of ``meshopt_batch`` change the
vertex-shader count of every scene.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from meshes import SCENES_DIR
from meshopt_batch.support.files import atomic_write

from .mesh_resolution import resolve_mesh

__all__ = ["BATCH_MAX_VERTICES", "SCENES_DIR", "SCENE_BUILDERS", "build", "city", "dumps",
           "hud_over_3d", "low_frequency", "sprites_2d", "statues", "write_all"]
W, H = 1196, 768


def _r(x, nd=3):
    """Round floats for compact, stable JSON."""
    if isinstance(x, (list, tuple, np.ndarray)):
        return [_r(v, nd) for v in x]
    if isinstance(x, (float, np.floating)):
        v = round(float(x), nd)
        return int(v) if v == int(v) else v
    if isinstance(x, np.integer):
        return int(x)
    return x


# --------------------------------------------------------------------------- city
#: edge of a building facade quad in world units (about 20-60 pixels at the street's distances)
BUILDING_CELL = 1.5
#: the 400 x 400 ground plane's grid (8-unit cells, as a game's tiled terrain)
GROUND_DIVISIONS = 50


def _city_objects(rng):
    meshes = {
        "ground": {"shape": "plane", "nx": GROUND_DIVISIONS, "nz": GROUND_DIVISIONS},
        "statue": {"shared": "bunny", "normalize": True,
                   "fallback": {"library": "icosphere", "subdiv": 3, "fallback": {"shape": "sphere"}}},
        "plinth": {"shape": "cylinder", "segments": 32},
        "tree": {"shared": "tree_quaternius_birch8", "normalize": True,
                 "fallback": {"shape": "cone", "segments": 24, "shuffle": 11}},
        "car": {"shape": "box", "divisions": 2, "shuffle": 5},
    }
    objects = []
    objects.append({"name": "ground", "mesh": "ground", "layer": "ground",
                    "scale": [400, 1, 400], "position": [0, 0, -100],
                    "state": {"lit": True, "colour": {"kind": "checker", "base": [0.42, 0.44, 0.4],
                                                      "second": [0.36, 0.37, 0.35], "frequency": 40}}})
    palette = [(0.75, 0.68, 0.55), (0.55, 0.6, 0.7), (0.7, 0.5, 0.45), (0.6, 0.65, 0.55),
               (0.8, 0.78, 0.72), (0.5, 0.5, 0.55)]
    k = 0
    for j in range(12):                    # rows along the street (-z)
        z = 14 - 17.0 * j
        for side in (-1, 1):
            for c in range(4):             # columns away from the street
                x = side * (13 + 15.0 * c)
                w = rng.uniform(7, 11)
                d = rng.uniform(7, 12)
                h = rng.uniform(10, 42) * (1.0 + 0.25 * c)
                base = palette[int(rng.integers(len(palette)))]
                kind = ["stripes", "checker", "noise"][int(rng.integers(3))]
                variant = int(rng.integers(4))
                # game-like tessellation: quads of about BUILDING_CELL world units on every
                # face (one quad per window bay), so a facade is many small triangles
                div = [max(1, int(round(v / BUILDING_CELL))) for v in (w, h, d)]
                mname = "building-{}x{}x{}".format(*div)
                if mname not in meshes:
                    meshes[mname] = {"shape": "box", "divisions": div, "shuffle": 100 + variant}
                objects.append({
                    "name": f"building-{j}-{'L' if side < 0 else 'R'}{c}",
                    "mesh": mname, "layer": "world",
                    "position": _r([x + rng.uniform(-1, 1), h / 2, z + rng.uniform(-1.5, 1.5)]),
                    "scale": _r([w, h, d]),
                    "state": {"lit": True, "shader_cost": _r(float(rng.choice([1.0, 1.5, 2.0, 3.0]))),
                              "colour": {"kind": kind, "base": _r(list(base)),
                                         "second": _r([0.25 * b for b in base]),
                                         "frequency": int(rng.choice([6, 8, 12]))}},
                })
                k += 1
    for j in range(10):                    # trees on both pavements
        for side in (-1, 1):
            s = rng.uniform(4.5, 7.0)
            objects.append({"name": f"tree-{j}-{'L' if side < 0 else 'R'}", "mesh": "tree",
                            "layer": "world",
                            "position": _r([side * 7.0, 0, 8 - 17.0 * j + rng.uniform(-2, 2)]),
                            "rotation": [0, _r(rng.uniform(0, 360)), 0], "scale": _r(s),
                            "state": {"lit": True, "colour": {"kind": "noise", "base": [0.3, 0.55, 0.25],
                                                              "second": [0.15, 0.3, 0.1], "frequency": 12}}})
    objects.append({"name": "plinth", "mesh": "plinth", "layer": "world", "position": [0, 0, -176],
                    "scale": [9, 3, 9],
                    "state": {"lit": True, "colour": {"kind": "stripes", "base": [0.7, 0.7, 0.68],
                                                      "second": [0.55, 0.55, 0.52], "frequency": 10}}})
    objects.append({"name": "statue", "mesh": "statue", "layer": "world", "position": [0, 3, -176],
                    "rotation": [0, 20, 0], "scale": 12,
                    "state": {"lit": True, "shader_cost": 2.0, "colour": {"kind": "lit", "base": [0.8, 0.7, 0.45]}},
                    "animation": {"spin": [0, 0.5, 0]}})
    for i in range(6):                     # cars driving both ways
        lane = -2.5 if i % 2 else 2.5
        v = 0.45 if i % 2 else -0.6
        objects.append({"name": f"car-{i}", "mesh": "car", "layer": "world",
                        "position": _r([lane, 0.9, -20.0 * i - rng.uniform(0, 8)]),
                        "scale": [1.8, 1.5, 4.2],
                        "state": {"lit": True, "colour": {"kind": "flat", "base": _r(list(rng.uniform(0.2, 0.9, 3)))}},
                        "animation": {"velocity": [0, 0, v]}})
    return meshes, objects


def city(ordered: bool, batched: bool = False) -> dict:
    rng = np.random.default_rng(2024)
    meshes, objects = _city_objects(rng)
    if batched:
        meshes, objects = _static_batches(meshes, objects, seed=77)
    for i, o in enumerate(objects):
        o["object_id"] = i
    if batched:
        layers = [{"name": "ground", "order": "listed"}, {"name": "world", "order": "back-to-front"}]
        desc = ("City street with the buildings baked into static batches (one draw per material, "
                "parts in listing order) after the ground, the other objects far to near: VRO can "
                "sort only whole batches, EVR reorders primitives inside them.")
    elif ordered:
        layers = [{"name": "world", "order": "front-to-back"}, {"name": "ground", "order": "listed"}]
        desc = ("City street, opaque objects submitted near to far each frame and the ground "
                "last: early-Z already removes most overshading (baseline close to oracle).")
    else:
        layers = [{"name": "ground", "order": "listed"}, {"name": "world", "order": "back-to-front"}]
        desc = ("City street, opaque objects submitted far to near each frame after the ground: "
                "the worst case for early-Z (VRO, EVR, DR, oracle have most to win).")
    return {
        "name": "city-batched" if batched else "city-ordered" if ordered else "city-unordered",
        "description": desc,
        "frames": 60, "width": W, "height": H, "clear": [0.55, 0.7, 0.9], "seed": 7,
        "light": {"direction": [0.35, 1.0, 0.25]},
        "camera": {"projection": "perspective", "fovy": 60, "near": 0.5, "far": 400,
                   "path": [{"frame": 0, "eye": [0.5, 5.5, 34], "target": [0, 6, -20]},
                            {"frame": 60, "eye": [-0.5, 6.5, -62], "target": [0, 7, -170]},
                            {"frame": 120, "eye": [0, 9, -130], "target": [0, 10, -176]}]},
        "meshes": meshes, "layers": layers, "objects": objects,
    }


#: vertices a static batch may hold (16-bit indices, as engines' static batching)
BATCH_MAX_VERTICES = 65535


def _static_batches(meshes: dict, objects: list, seed: int) -> tuple[dict, list]:
    """Bake the buildings into static batches, as an engine's static batching does.

    Static geometry that shares a material is merged into one mesh, one draw, up to
    :data:`BATCH_MAX_VERTICES` vertices per batch; here the buildings' material is their
    pattern kind (stripes, checker, noise).  Parts are appended in the level's listing order (a
    seeded permutation, as objects sit in an editor's list).  Everything else is kept as it is.
    """
    rng = np.random.default_rng(seed)
    buildings = [o for o in objects if o["name"].startswith("building-")]
    rest = [o for o in objects if not o["name"].startswith("building-")]
    verts = {k: resolve_mesh(v).vertex_count for k, v in meshes.items()
             if k.startswith("building-")}
    batches: dict[str, list] = {}
    for i in rng.permutation(len(buildings)):
        o = buildings[int(i)]
        kind = o["state"]["colour"]["kind"]
        open_ = batches.setdefault(kind, [[]])
        if sum(verts[m["mesh"]] for m in open_[-1]) + verts[o["mesh"]] > BATCH_MAX_VERTICES:
            open_.append([])
        open_[-1].append(o)
    out_meshes = {k: v for k, v in meshes.items() if not k.startswith("building-")}
    out_objects = []
    for kind, groups in batches.items():
        for g, members in enumerate(groups):
            name = f"static-batch-{kind}-{g}"
            out_meshes[name] = {"merge": [{"mesh": meshes[m["mesh"]], "position": m["position"],
                                           "scale": m["scale"]} for m in members]}
            out_objects.append({"name": name, "mesh": name, "layer": "world",
                                "state": members[0]["state"]})
    return out_meshes, rest[:1] + out_objects + rest[1:]


# --------------------------------------------------------------------------- hud over 3d
#: the first frame of hud-over-3d's second shot (a camera cut, the scene's "cuts")
HUD_CUT = 30


def hud_over_3d() -> dict:
    rng = np.random.default_rng(7)
    meshes = {
        "ground": {"shape": "plane", "nx": 4},
        "ring": {"library": "torus", "n_major": 48, "n_minor": 16, "shuffle": 3,
                 "fallback": {"shape": "torus", "segments": 48, "sides": 16, "shuffle": 3}},
        "ball": {"library": "icosphere", "subdiv": 3, "shuffle": 4, "fallback": {"shape": "sphere", "shuffle": 4}},
        "crate": {"shape": "box", "divisions": 3, "shuffle": 6},
        "pillar": {"shape": "cylinder", "segments": 24, "stacks": 6, "shuffle": 8},
        "statue": {"shared": "armadillo_86k", "normalize": True, "fallback": {"shape": "torus", "shuffle": 9}},
        "panel": {"shape": "quad"},
    }
    objects = [{"name": "ground", "mesh": "ground", "layer": "world", "scale": [120, 1, 120],
                "state": {"lit": True, "colour": {"kind": "checker", "base": [0.5, 0.5, 0.45],
                                                  "second": [0.3, 0.32, 0.3], "frequency": 20}}}]
    kinds = ["ring", "ball", "crate", "pillar"]
    for i in range(28):
        a = 2 * np.pi * i / 28
        r = 10 + 14 * (i % 3)
        m = kinds[i % 4]
        s = float(rng.uniform(2.0, 4.0))
        pos = [r * np.sin(a), s / 2 if m != "pillar" else 0, r * np.cos(a)]
        if m == "ring":
            pos[1] = s * 0.6
        o = {"name": f"{m}-{i}", "mesh": m, "layer": "world", "position": _r(pos),
             "scale": _r([s, s * (3 if m == "pillar" else 1), s]),
             "state": {"lit": True, "shader_cost": _r(float(rng.choice([1.0, 2.0, 4.0]))),
                       "colour": {"kind": ["lit", "noise", "stripes", "checker"][i % 4],
                                  "base": _r(list(rng.uniform(0.3, 0.95, 3))),
                                  "second": _r(list(rng.uniform(0.05, 0.4, 3))), "frequency": 6}}}
        if m in ("ring", "crate"):
            o["animation"] = {"spin": [0, _r(float(rng.uniform(1, 3))), 0]}
        objects.append(o)
    objects.append({"name": "statue", "mesh": "statue", "layer": "world", "position": [0, 0, 0],
                    "scale": 9, "state": {"lit": True, "colour": {"kind": "lit", "base": [0.75, 0.65, 0.5]}}})

    def panel(name, x, y, w, h, state, layer="hud-opaque", animation=None):
        o = {"name": name, "mesh": "panel", "layer": layer, "position": _r([x + w / 2, y + h / 2, 0]),
             "scale": _r([w, h, 1]), "state": state}
        if animation:
            o["animation"] = animation
        return o

    opaque = {"depth_test": False, "depth_write": False, "cull": "none"}
    trans = {"depth_test": False, "depth_write": False, "cull": "none", "blend": True}
    objects += [
        panel("bottom-bar", 0, H - 96, W, 96, {**opaque, "colour": {"kind": "stripes", "base": [0.16, 0.18, 0.22],
                                                                 "second": [0.12, 0.13, 0.16], "frequency": 40}}),
        panel("minimap", 16, 16, 224, 224, {**opaque, "colour": {"kind": "checker", "base": [0.2, 0.35, 0.25],
                                                              "second": [0.15, 0.28, 0.2], "frequency": 8}}),
        panel("minimap-marker", 120, 120, 12, 12, {**opaque, "colour": [0.95, 0.85, 0.2]},
              animation={"oscillate": {"axis": [1, 0, 0], "amplitude": 60, "period": 90}}),
        panel("weapon", W - 320, H - 240, 288, 208, {**opaque, "shader_cost": 2.0,
                                                    "colour": {"kind": "noise", "base": [0.45, 0.45, 0.5],
                                                               "second": [0.25, 0.25, 0.3], "frequency": 6}}),
        panel("health-back", 32, H - 72, 400, 40, {**opaque, "colour": [0.25, 0.05, 0.05]}),
        panel("health", 32, H - 72, 400, 40, {**opaque, "colour": [0.8, 0.1, 0.1]},
              animation={"keyframes": [{"frame": 0, "position": [232, H - 52, 0], "scale": [400, 40, 1]},
                                       {"frame": 60, "position": [152, H - 52, 0], "scale": [240, 40, 1]}]}),
        panel("status-bar", 0, 0, W, 48, {**trans, "alpha": 0.5, "colour": [0.05, 0.05, 0.1]}, layer="hud-translucent"),
        panel("reticle", W / 2 - 40, H / 2 - 40, 80, 80, {**trans, "alpha": 0.35, "colour": [0.9, 0.9, 0.9]},
              layer="hud-translucent"),
        panel("message", W / 2 - 260, 72, 520, 64,
              {**trans, "alpha": 0.6, "colour": {"kind": "stripes", "base": [0.1, 0.2, 0.4],
                                                 "second": [0.05, 0.1, 0.25], "frequency": 30}},
              layer="hud-translucent"),
    ]
    for i, o in enumerate(objects):
        o["object_id"] = i
    # Two shots with a camera cut between them: an orbit around the statue (radius 48, 14 up,
    # from 10 degrees at 0.5 degrees per frame), then from frame HUD_CUT a lower, closer orbit
    # from the opposite side.  Keyframes every 5 frames along each arc, and the two shots'
    # keys at frames HUD_CUT - 1 and HUD_CUT, so the camera jumps between two frames.
    centre = np.array([0.0, 2.0, 0.0])

    def orbit_key(f, start, radius, height):
        a = np.radians(start + 0.5 * f)
        eye = centre + [radius * np.sin(a), height, radius * np.cos(a)]
        return {"frame": f, "eye": _r(list(eye)), "target": _r(list(centre))}

    path = [orbit_key(f, 10, 48, 14) for f in (*range(0, HUD_CUT, 5), HUD_CUT - 1)]
    path += [orbit_key(f, 175, 34, 8) for f in (HUD_CUT, *range(HUD_CUT + 5, 61, 5))]
    return {
        "name": "hud-over-3d",
        "description": "3D scene under opaque and translucent NWOZ HUD layers drawn last "
                       "(screen-space camera, depth test off).",
        "frames": 60, "width": W, "height": H, "clear": [0.35, 0.45, 0.6], "seed": 3,
        "light": {"direction": [-0.3, 1.0, 0.5]},
        "camera": {"projection": "perspective", "fovy": 55, "near": 0.5, "far": 300, "path": path},
        "cuts": [HUD_CUT],
        "meshes": meshes,
        "layers": [{"name": "world", "order": "listed"},
                   {"name": "hud-opaque", "order": "listed", "camera": {"projection": "screen", "size": [W, H]}},
                   {"name": "hud-translucent", "order": "listed", "camera": {"projection": "screen", "size": [W, H]}}],
        "objects": objects,
    }


# --------------------------------------------------------------------------- sprites 2d
def sprites_2d() -> dict:
    rng = np.random.default_rng(11)
    meshes = {"sprite": {"shape": "quad"}, "blob": {"shape": "quad", "nx": 2}}
    nwoz = {"depth_test": False, "depth_write": False, "cull": "none"}
    objects = [
        {"name": "sky", "mesh": "sprite", "layer": "background", "position": [W / 2, H / 2, 0], "scale": [W, H, 1],
         "state": {**nwoz, "colour": {"kind": "noise", "base": [0.55, 0.75, 0.95], "second": [0.8, 0.88, 0.98],
                                      "frequency": 3}}},
    ]
    for i in range(5):                     # parallax hills (static)
        w = rng.uniform(300, 520)
        h = rng.uniform(120, 260)
        x = rng.uniform(0, W)
        objects.append({"name": f"hill-{i}", "mesh": "sprite", "layer": "background",
                        "position": _r([x, H - 140 - h / 2 + 40, 0]), "scale": _r([w, h, 1]),
                        "state": {**nwoz, "colour": {"kind": "stripes", "base": [0.35, 0.6, 0.35],
                                                     "second": [0.3, 0.52, 0.3], "frequency": 5}}})
    objects.append({"name": "ground", "mesh": "sprite", "layer": "world", "position": [W / 2, H - 70, 0],
                    "scale": [W, 140, 1],
                    "state": {**nwoz, "colour": {"kind": "checker", "base": [0.55, 0.4, 0.25],
                                                 "second": [0.45, 0.32, 0.2], "frequency": 16}}})
    # platforms of 32x32 blocks
    for p in range(9):
        n = int(rng.integers(3, 9))
        x0 = rng.uniform(0, W - 32 * n)
        y = rng.uniform(140, H - 220)
        for b in range(n):
            objects.append({"name": f"block-{p}-{b}", "mesh": "sprite", "layer": "world",
                            "position": _r([x0 + 32 * b + 16, y, 0]), "scale": [32, 32, 1],
                            "state": {**nwoz, "colour": {"kind": "checker", "base": [0.7, 0.45, 0.2],
                                                         "second": [0.5, 0.3, 0.12], "frequency": 2}}})
    for i in range(60):                    # decorations: coins, bushes, signs (static)
        s = float(rng.uniform(12, 40))
        objects.append({"name": f"deco-{i}", "mesh": "sprite", "layer": "world",
                        "position": _r([rng.uniform(0, W), rng.uniform(120, H - 60), 0]), "scale": _r([s, s, 1]),
                        "state": {**nwoz, "colour": {"kind": ["flat", "noise", "stripes"][i % 3],
                                                     "base": _r(list(rng.uniform(0.3, 1.0, 3))),
                                                     "second": _r(list(rng.uniform(0.0, 0.4, 3))),
                                                     "frequency": 2}}})
    # a few moving sprites: player, enemies, a bird; translucent particles
    objects.append({"name": "player", "mesh": "blob", "layer": "actors", "position": [200, H - 172, 0],
                    "scale": [48, 64, 1], "animation": {"velocity": [3, 0, 0]},
                    "state": {**nwoz, "shader_cost": 2.0, "colour": {"kind": "noise", "base": [0.2, 0.3, 0.9],
                                                                     "second": [0.9, 0.8, 0.6], "frequency": 3}}})
    for i in range(3):
        objects.append({"name": f"enemy-{i}", "mesh": "blob", "layer": "actors",
                        "position": _r([300 + 280 * i, H - 164, 0]), "scale": [40, 48, 1],
                        "animation": {"oscillate": {"axis": [1, 0, 0], "amplitude": 40 + 10 * i, "period": 50 + 7 * i}},
                        "state": {**nwoz, "colour": {"kind": "stripes", "base": [0.8, 0.2, 0.2],
                                                     "second": [0.4, 0.05, 0.05], "frequency": 4}}})
    objects.append({"name": "bird", "mesh": "blob", "layer": "actors", "position": [1100, 120, 0],
                    "scale": [36, 24, 1], "animation": {"velocity": [-4, 0.5, 0]},
                    "state": {**nwoz, "colour": [0.15, 0.15, 0.15]}})
    for i in range(4):
        objects.append({"name": f"particle-{i}", "mesh": "sprite", "layer": "effects",
                        "position": _r([600 + 30 * i, 300 + 20 * i, 0]), "scale": [40, 40, 1],
                        "animation": {"oscillate": {"axis": [0, 1, 0], "amplitude": 30, "period": 40, "phase": 45 * i}},
                        "state": {**nwoz, "blend": True, "alpha": 0.4, "colour": [1.0, 0.9, 0.5]}})
    objects.append({"name": "score", "mesh": "sprite", "layer": "effects", "position": [W - 150, 40, 0],
                    "scale": [260, 48, 1],
                    "state": {**nwoz, "colour": {"kind": "stripes", "base": [0.95, 0.95, 0.95],
                                                 "second": [0.2, 0.2, 0.2], "frequency": 12}}})
    for i, o in enumerate(objects):
        o["object_id"] = i
    screen = {"projection": "screen", "size": [W, H]}
    return {
        "name": "sprites-2d",
        "description": "Painter's-algorithm 2D game: NWOZ layers with depth testing off, mostly "
                       "static, a few moving sprites and translucent particles.",
        "frames": 60, "width": W, "height": H, "clear": [0, 0, 0], "seed": 5,
        "camera": screen,
        "meshes": meshes,
        "layers": [{"name": n, "order": "listed"} for n in ("background", "world", "actors", "effects")],
        "objects": objects,
    }


# --------------------------------------------------------------------------- low frequency
def low_frequency() -> dict:
    rng = np.random.default_rng(13)
    meshes = {"card": {"shape": "quad"},
              "dune": {"library": "icosphere", "subdiv": 4, "shuffle": 2,
                       "fallback": {"shape": "sphere", "segments": 48, "rings": 24, "shuffle": 2}},
              "mesh-card": {"shape": "quad", "nx": 8, "shuffle": 1}}
    objects = [
        {"name": "sky", "mesh": "card", "position": [60, 14, -40], "scale": [400, 30, 1],
         "state": {"colour": [0.62, 0.78, 0.95]}},
        {"name": "haze", "mesh": "mesh-card", "position": [60, 2, -35], "scale": [400, 8, 1],
         "state": {"colour": {"kind": "noise", "base": [0.7, 0.8, 0.9], "second": [0.78, 0.85, 0.93],
                              "frequency": 2}}},
        {"name": "sea", "mesh": "card", "position": [60, -12, -30], "scale": [400, 22, 1],
         "state": {"colour": [0.15, 0.35, 0.6]}},
        {"name": "sun", "mesh": "dune", "position": [-2, 11, -38], "scale": [5, 5, 1],
         "state": {"colour": [1.0, 0.92, 0.6]}, "animation": {"velocity": [0.05, 0, 0]}},
    ]
    x = -30.0
    i = 0
    while x < 140:                          # alternating smooth and detailed regions
        w = float(rng.uniform(8, 16))
        if i % 3 == 0:
            objects.append({"name": f"dune-{i}", "mesh": "dune", "position": _r([x + w / 2, -12, -20]),
                            "scale": _r([w * 1.3, w * 0.6, 4]),
                            "state": {"lit": True, "colour": {"kind": "lit", "base": [0.85, 0.72, 0.45]}}})
        elif i % 3 == 1:
            objects.append({"name": f"wall-{i}", "mesh": "mesh-card", "position": _r([x + w / 2, -9, -10]),
                            "scale": _r([w * 0.6, 5, 1]),
                            "state": {"colour": {"kind": "checker", "base": [0.8, 0.8, 0.78],
                                                 "second": [0.2, 0.22, 0.25], "frequency": 24}}})
        else:
            objects.append({"name": f"fence-{i}", "mesh": "mesh-card", "position": _r([x + w / 2, -11, -12]),
                            "scale": _r([w * 0.8, 3, 1]),
                            "state": {"colour": {"kind": "stripes", "base": [0.5, 0.3, 0.15],
                                                 "second": [0.3, 0.18, 0.08], "frequency": 16}}})
        x += w + float(rng.uniform(4, 12))
        i += 1
    objects.append({"name": "ground", "mesh": "mesh-card", "position": [60, -19, -5], "scale": [400, 6, 1],
                    "state": {"colour": {"kind": "noise", "base": [0.82, 0.7, 0.45], "second": [0.76, 0.64, 0.4],
                                         "frequency": 3}}})
    for k, o in enumerate(objects):
        o["object_id"] = k
    return {
        "name": "low-frequency",
        "description": "Orthographic 2.5D scene scrolling slowly: large flat and smooth regions "
                       "beside fine checker and stripe textures (dynamic sampling rate).",
        "frames": 60, "width": W, "height": H, "clear": [0.62, 0.78, 0.95], "seed": 9,
        "light": {"direction": [-0.4, 0.8, 0.6]},
        "camera": {"projection": "orthographic", "height": 44, "near": 1, "far": 100,
                   "eye": [0, 0, 20], "target": [0, 0, 0], "velocity": [0.1, 0, 0]},
        "meshes": meshes,
        "objects": objects,
    }


# --------------------------------------------------------------------------- statues
def _folded_knot(seed: int) -> dict:
    """Fallback for an absent scanned statue: three interlocked tori baked into one index
    buffer (deep folds: most views look through several layers of one mesh)."""
    torus = {"library": "torus", "n_major": 96, "n_minor": 24, "major_radius": 1.0, "minor_radius": 0.35,
             "fallback": {"shape": "torus", "segments": 96, "sides": 24}}
    return {"merge": [{"mesh": torus, "position": [0, 1.2, 0], "rotation": [90, 0, 0]},
                      {"mesh": torus, "position": [0.6, 1.2, 0], "rotation": [0, 0, 0]},
                      {"mesh": torus, "position": [-0.6, 1.2, 0], "rotation": [0, 60 + 30 * seed, 0]}],
            "normalize": True}


#: (mesh, shared scan, x, z, scale, turn) of the statues: two rows around the orbit's centre
STATUES = (("dragon", "dragon_100k", -0.75, 0.5, 1.6, 30), ("buddha", "happy_buddha_100k", 0.75, 0.55, 1.5, -20),
           ("armadillo", "armadillo_86k", 0.0, -0.15, 1.4, 180), ("dragon", "dragon_100k", 0.8, -0.85, 1.6, 210),
           ("buddha", "happy_buddha_100k", -0.8, -0.9, 1.5, 160), ("bunny", "bunny", 0.05, 1.15, 1.0, 0))
#: frames of the statues scene (a short orbit: the scene is the report's most expensive per frame)
STATUES_FRAMES = 12


def statues() -> dict:
    meshes = {"ground": {"shape": "plane", "nx": 4}}
    for i, (name, shared, *_rest) in enumerate(STATUES):
        meshes.setdefault(name, {"shared": shared, "normalize": True, "fallback": _folded_knot(i)})
    objects = [{"name": "ground", "mesh": "ground", "layer": "floor", "scale": [12, 1, 12],
                "state": {"lit": True, "colour": {"kind": "checker", "base": [0.5, 0.5, 0.48],
                                                  "second": [0.38, 0.38, 0.36], "frequency": 12}}}]
    tints = ([0.82, 0.74, 0.55], [0.7, 0.72, 0.78], [0.78, 0.62, 0.5], [0.62, 0.75, 0.62],
             [0.8, 0.8, 0.76], [0.75, 0.6, 0.7])
    for k, (name, _shared, x, z, scale, turn) in enumerate(STATUES):
        objects.append({"name": f"{name}-{k}", "mesh": name, "layer": "statues", "position": [x, 0, z],
                        "rotation": [0, turn, 0], "scale": scale,
                        "state": {"lit": True, "shader_cost": 2.0, "colour": {"kind": "lit", "base": tints[k]}}})
    for i, o in enumerate(objects):
        o["object_id"] = i
    # a slow orbit (0.75 degrees a frame) around the group, close enough for the statues to fill
    # most of the screen; keyframes every 4 frames
    centre = np.array([0.0, 0.75, 0.0])

    def key(f):
        a = np.radians(25 + 0.75 * f)
        eye = centre + [2.8 * np.sin(a), 0.25, 2.8 * np.cos(a)]
        return {"frame": f, "eye": _r(list(eye)), "target": _r(list(centre))}

    return {
        "name": "statues",
        "description": "High-poly scanned statues (several instances) filling most of the screen, "
                       "drawn near to far, under a slowly orbiting camera: the overdraw left is "
                       "inside the meshes, where the triangle order decides it.",
        "frames": STATUES_FRAMES, "width": W, "height": H, "clear": [0.2, 0.22, 0.26], "seed": 20,
        "light": {"direction": [0.4, 1.0, 0.6]},
        "camera": {"projection": "perspective", "fovy": 46, "near": 0.2, "far": 40,
                   "path": [key(f) for f in range(0, STATUES_FRAMES + 1, 4)]},
        "meshes": meshes,
        "layers": [{"name": "statues", "order": "front-to-back"}, {"name": "floor", "order": "listed"}],
        "objects": objects,
    }


SCENE_BUILDERS = {
    "city-unordered": lambda: city(False),
    "city-ordered": lambda: city(True),
    "city-batched": lambda: city(False, batched=True),
    "hud-over-3d": hud_over_3d,
    "sprites-2d": sprites_2d,
    "low-frequency": low_frequency,
    "statues": statues,
}


def build(name: str) -> dict:
    """The JSON-ready dict of a shipped scene."""
    return SCENE_BUILDERS[name]()


def dumps(d: dict) -> str:
    """The committed text form (objects one per line, so diffs stay readable)."""
    head = {k: v for k, v in d.items() if k != "objects"}
    lines = ["{"]
    for k, v in head.items():
        lines.append(f"  {json.dumps(k)}: {json.dumps(v)},")
    lines.append('  "objects": [')
    objs = d.get("objects", [])
    for i, o in enumerate(objs):
        lines.append("    " + json.dumps(o) + ("," if i + 1 < len(objs) else ""))
    lines.append("  ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def write_all(directory: Path = SCENES_DIR) -> list[Path]:
    """Write every shipped scene's JSON file into ``directory``; the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    out = []
    for name in SCENE_BUILDERS:
        p = directory / f"{name}.json"
        atomic_write(p, dumps(build(name)))
        out.append(p)
    return out


if __name__ == "__main__":
    for p in write_all():
        print(p)
