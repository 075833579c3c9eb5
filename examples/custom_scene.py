"""Write a small animated scene in the JSON scene format and run it on the pipeline model.

The format is documented in ``pipeline_model/scene/schema.py``; the same dict saved as a .json file
runs with ``meshopt-batch simulate my-scene.json``.

Run: .venv/bin/python examples/custom_scene.py
"""

import json

from meshopt_batch.support.files import atomic_write
from pipeline_model.pipeline import simulate

scene = {
    "name": "spheres-behind-a-wall",
    "frames": 30,
    "camera": {"eye": [0, 3, 14], "target": [0, 1, 0], "near": 0.5, "far": 100},
    "meshes": {"ball": {"shape": "sphere", "segments": 32, "rings": 16, "shuffle": 1},
               "wall": {"shape": "box", "divisions": 4}},
    # the balls are submitted first, the wall that hides most of them last: early-Z cannot help
    "objects": [
        *({"name": f"ball-{i}", "mesh": "ball", "position": [2.5 * i - 5, 1, -4], "scale": 2,
           "state": {"lit": True, "shader_cost": 3, "colour": {"kind": "noise", "base": [0.9, 0.4, 0.2],
                                                                "second": [0.3, 0.1, 0.05], "frequency": 6}},
           "animation": {"oscillate": {"axis": [0, 1, 0], "amplitude": 1.5, "period": 30, "phase": 40 * i}}}
          for i in range(5)),
        {"name": "wall", "mesh": "wall", "position": [0, 1, 0], "scale": [14, 5, 0.5],
         "state": {"lit": True, "colour": {"kind": "checker", "base": [0.8, 0.8, 0.75],
                                           "second": [0.5, 0.5, 0.45], "frequency": 6}}},
    ],
}

atomic_write("spheres-behind-a-wall.json", json.dumps(scene, indent=1))

run = simulate("spheres-behind-a-wall.json", ["baseline", "dr", "oracle"], frames=10,
               width=598, height=384)
print(run.totals[["fragments_shaded", "overshading", "cycles", "energy"]])
