"""Write ``reference/registries.md``: the GPU profiles, optimizers, techniques and shipped scenes.

Run by mkdocs-gen-files at build time, from the registries the code resolves names with
(:data:`meshopt_batch.model.profiles.BUILTIN_PROFILES`, :data:`meshopt_batch.optimizers.METHODS`,
:data:`pipeline_model.techniques.REGISTRY`, the scene files of ``meshes/scenes``, the report's
published figures), so a new profile, method, technique or scene appears without a
documentation edit.
"""

from __future__ import annotations

import json

import mkdocs_gen_files

import meshes
from meshopt_batch.model.profiles import BUILTIN_PROFILES
from meshopt_batch.optimizers import METHODS
from meshopt_batch_app.report.anchors import PUBLISHED
from pipeline_model.techniques import REGISTRY


def _cell(text) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _table(header: list[str], rows: list[list]) -> list[str]:
    return (["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            + ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows] + [""])


def main() -> None:
    """Write the page."""
    lines = [
        "# Profiles, optimizers, techniques, scenes and published figures",
        "",
        "The names the command line and the Python API accept, listed from the code's own "
        "registries when this site was built.",
        "",
        "## GPU profiles",
        "",
        "`-p NAME` (`profile=`) names one of these, a classic cache (`fifo:N`, `lru:N`), a profile "
        "file written by `meshopt-batch probe --fit --save-profile FILE`, any of them with `+16bit` "
        "(NVIDIA's 2^16 block rule), or a target of several (`portable`, `-p A,B,FILE.json`). "
        "`MAX_SIZE` and `MAX_UNIQUES` bound a batch's indices and shaded vertices (0: unbounded); the "
        "memory keeps vertices for reuse. See [the batch model](../method/batch-model.md).",
        "",
    ]
    lines += _table(["profile", "MAX_SIZE", "MAX_UNIQUES", "memory", "size", "what it models", "source"],
                    [[f"`{p.name}`", p.max_size, p.max_uniques, p.memory, p.memory_size, p.description, p.source]
                     for p in BUILTIN_PROFILES.values()])
    lines += ["## Triangle-order optimizers", "",
              "`-m NAME` (`method=`); a method that needs an optional package names it "
              "(`pip install 'meshopt-batch[compare]'`).", ""]
    lines += _table(["method", "title", "implemented by", "takes a profile", "needs positions", "needs"],
                    [[f"`{m.name}`", m.title, f"`{m.target}`", "yes" if m.uses_profile else "",
                      "yes" if m.uses_positions else "", m.requires or ""] for m in METHODS.values()])
    lines += ["## Pipeline-model techniques", "",
              "`simulate -t NAME`; see [the techniques](../method/techniques.md).", ""]
    lines += _table(["technique", "class", "fixed options"],
                    [[f"`{name}`", f"`{entry.target}`" if isinstance(entry.target, str) else entry.target,
                      ", ".join(f"{k}={v}" for k, v in entry.options.items())] for name, entry in REGISTRY.items()])
    lines += ["## Shipped scenes", "",
              "`meshopt-batch simulate NAME`; each is a JSON file in `meshes/scenes/` written by "
              "`python -m pipeline_model.scene.builders` (the format is documented in "
              "`pipeline_model/scene/schema.py`).", ""]
    rows = []
    for path in sorted(meshes.SCENES_DIR.glob("*.json")):
        scene = json.loads(path.read_text())
        rows.append([f"`{path.stem}`", scene.get("frames", ""), scene.get("description", "")])
    lines += _table(["scene", "frames", "what it exercises"], rows)
    lines += ["## Published figures", "",
              "The figures of the papers that `meshopt-batch report` puts beside its own "
              "(`meshopt_batch_app.report.anchors`); the papers are cited in full in "
              "[References](../references.md).", ""]
    lines += _table(["figure", "paper", "where", "published"],
                    [[what, paper, where, value] for _id, paper, where, what, value in PUBLISHED])
    with mkdocs_gen_files.open("reference/registries.md", "w") as fh:
        fh.write("\n".join(lines))


main()
