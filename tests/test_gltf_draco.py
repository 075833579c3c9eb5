"""Draco in, valid and identical out (issue 52): ``gltf-transform draco`` then ``optimize``.

The reference is three.js: its GLTFLoader with its DRACOLoader (the glTF build of the Draco
decoder it ships) and meshopt decoder, run under node (``tests/three_geometry.js``).  From
the Draco file three decodes each primitive's attributes; :func:`in_range` brings them into
the ranges glTF allows, written here from the specification's words and the Khronos
validator's rule (float colours clamped to [0, 1]; a vertex whose float weights are negative
or sum further from 1 than the validator's float32 allowance, 2e-7 per non-zero weight,
rescaled to sum 1 with its largest weight taking the float32 remainder; a joint with weight 0
set to 0).  Then:

* this tool's reader (DracoPy) decodes every Draco primitive to exactly those values, vertex
  by vertex, and ``optimize`` names the same counts in its Draco note;
* what ``optimize`` writes (meshopt-compressed by default, plain with ``--no-compress``)
  draws, read back by three, exactly those triangles (a multiset, each triangle up to the
  rotation the meshopt index codec may apply);
* the Khronos validator reports nothing about the outputs that it did not report about the
  original asset or the Draco file.  The validator cannot see into compressed data, so the
  plain output carries the value checks; two samples made here show that the check can fail:
  glTF-Transform's own decoding of their Draco files draws ``ACCESSOR_NON_CLAMPED``,
  ``ACCESSOR_WEIGHTS_NON_NORMALIZED`` and ``ACCESSOR_JOINTS_USED_ZERO_WEIGHT``.

Every ``../shared/gltf`` asset goes through glTF-Transform's command line (``draco``, run by
``tests/gltf_transform_batch.js`` in one node process) and through ``optimize -p nvidia_gl``
(the target does not change which values are written).
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import math
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from compressed_samples import glb, grid, read_glb
from independent_reader import NODE_MODULES, same_triangles, write_plain
from test_gltf_delivery import assets, problems, tools_missing, validate

from meshopt_batch.io.gltf.gltf_document import read_accessor, read_document
from meshopt_batch_app.cli import main

ROOT = Path(__file__).resolve().parent.parent
THREE_SCRIPT = ROOT / "tests" / "three_geometry.js"
BATCH_SCRIPT = ROOT / "tests" / "gltf_transform_batch.js"
TYPED = {"Float32Array": np.float32, "Uint8Array": np.uint8, "Uint16Array": np.uint16, "Uint32Array": np.uint32,
         "Int8Array": np.int8, "Int16Array": np.int16}
ROUNDING = 2e-7  # the validator's allowance per non-zero weight (ACCESSOR_WEIGHTS_NON_NORMALIZED)
SAMPLE_PROBLEMS = {"colours": {"ACCESSOR_NON_CLAMPED"},
                   "skinned": {"ACCESSOR_WEIGHTS_NON_NORMALIZED", "ACCESSOR_JOINTS_USED_ZERO_WEIGHT"}}


def missing() -> str | None:
    reason = tools_missing()
    if reason is None and not (NODE_MODULES / "three").is_dir():
        reason = "three is not installed in .npm-tools/ (run `make setup` with npm present)"
    return reason


def _node(script: Path, *args) -> list[str]:
    proc = subprocess.run(["node", str(script), *map(str, args)], capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, NODE_PATH=str(NODE_MODULES)))
    assert proc.returncode == 0, f"{script.name}: {proc.stderr[-2000:]}"
    return proc.stdout.splitlines()


# --- what three.js reads ---------------------------------------------------------------------

@dataclass
class Drawn:
    attributes: dict[str, np.ndarray]  # semantic -> (count, components), as decoded
    index: np.ndarray | None


def _array(entry: dict) -> np.ndarray:
    flat = np.frombuffer(base64.b64decode(entry["data"]), TYPED[entry["type"]])
    return flat.reshape(-1, entry["itemSize"]) if "itemSize" in entry else flat


def three_read(paths: list[Path]) -> dict[Path, dict[tuple[int, int], Drawn]]:
    """Per file, ``(mesh, primitive) ->`` what three's loader decodes (triangle meshes)."""
    out = {}
    for line, path in zip(_node(THREE_SCRIPT, *paths), paths, strict=True):
        got = json.loads(line)
        out[path] = {(p["mesh"], p["primitive"]): Drawn({k: _array(v) for k, v in p["attributes"].items()},
                                                        None if p["index"] is None else _array(p["index"]))
                     for p in got["primitives"] if p["mode"] == 4}
    return out


def corners(drawn: Drawn) -> np.ndarray:
    """``(T, 3, K)``: every triangle's corners, each corner its attributes by semantic."""
    table = np.concatenate([drawn.attributes[k].astype(np.float64) for k in sorted(drawn.attributes)], axis=1)
    index = np.arange(table.shape[0]) if drawn.index is None else drawn.index.astype(np.int64)
    return table[index.reshape(-1, 3)]


# --- point 2, written from the specification --------------------------------------------------

@dataclass
class Counts:
    colours: int = 0
    weights: int = 0
    joints: int = 0


def _weights_row(row: list[float]) -> list[float] | None:
    """One vertex's weights (validator order: component by component over the sets) brought
    to sum 1, or None when they already do within float32 rounding."""
    total = np.float32(0)
    for w in row:
        total = np.float32(total + np.float32(w))
    nonzero = sum(w > 0 for w in row)
    if abs(float(total) - 1.0) <= ROUNDING * nonzero and min(row) >= 0:
        return None
    positive = [max(float(w), 0.0) for w in row]
    s = math.fsum(positive)
    if s == 0:
        return None
    scaled = [float(np.float32(w / s)) for w in positive]
    big = scaled.index(max(scaled))
    scaled[big] = float(np.float32(1.0 - math.fsum(w for i, w in enumerate(scaled) if i != big)))
    return scaled


def in_range(attributes: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], Counts]:
    """A primitive's decoded attributes with colours, weights and joints in glTF's ranges."""
    out = {k: v.copy() for k, v in attributes.items()}
    counts = Counts()
    for sem, v in out.items():
        if sem.startswith("COLOR_") and v.dtype == np.float32:
            counts.colours += int(np.count_nonzero((v < 0) | (v > 1)))
            out[sem] = np.clip(v, 0, 1)
    sets = sorted(int(k.split("_")[1]) for k in out if k.startswith("WEIGHTS_"))
    if sets and all(out[f"WEIGHTS_{n}"].dtype == np.float32 for n in sets):
        weights = np.stack([out[f"WEIGHTS_{n}"] for n in sets], axis=1)  # (V, sets, 4)
        for i in range(weights.shape[0]):
            fixed = _weights_row(weights[i].T.reshape(-1).tolist())
            if fixed is not None:
                weights[i] = np.array(fixed, np.float32).reshape(4, len(sets)).T
                counts.weights += 1
        for s, n in enumerate(sets):
            out[f"WEIGHTS_{n}"] = weights[:, s, :]
    for n in sets:
        joints = out.get(f"JOINTS_{n}")
        if joints is not None:
            unused = (out[f"WEIGHTS_{n}"] == 0) & (joints != 0)
            counts.joints += int(unused.sum())
            joints[unused] = 0
    return out, counts


def expected(three_draco: dict[tuple[int, int], Drawn]) -> tuple[dict[tuple[int, int], Drawn], Counts]:
    total = Counts()
    out = {}
    for key, drawn in three_draco.items():
        attrs, counts = in_range(drawn.attributes)
        out[key] = Drawn(attrs, drawn.index)
        for f in ("colours", "weights", "joints"):
            setattr(total, f, getattr(total, f) + getattr(counts, f))
    return out, total


def note_counts(notes: list[str]) -> Counts:
    """The counts named in ``optimize``'s Draco note (0 where it names none)."""
    note = next(n for n in notes if "KHR_draco_mesh_compression primitive(s) decoded" in n)

    def count(words: str) -> int:
        head = note.split(words)[0] if words in note else ""
        return int(head.split()[-1].replace(",", "")) if head else 0

    return Counts(count(" colour component(s) clamped"), count(" vertices' skin weights renormalized"),
                  count(" joint(s) with weight 0 set to 0"))


# --- inputs and runs --------------------------------------------------------------------------

def _write_sample(path: Path, attributes: dict, triangles: np.ndarray, skin: bool = False) -> None:
    """A one-primitive ``.glb`` of plain accessors (semantic -> (array, componentType, type))."""
    binary, views, accessors, prim = bytearray(), [], [], {"attributes": {}}

    def add(data: bytes, target: int | None) -> int:
        binary.extend(b"\x00" * (-len(binary) % 4))
        views.append({"buffer": 0, "byteOffset": len(binary), "byteLength": len(data)}
                     | ({"target": target} if target else {}))
        binary.extend(data)
        return len(views) - 1

    for sem, (array, component, kind) in attributes.items():
        acc = {"bufferView": add(array.tobytes(), 34962), "componentType": component, "count": len(array),
               "type": kind}
        if sem == "POSITION":
            acc |= {"min": array.min(0).tolist(), "max": array.max(0).tolist()}
        accessors.append(acc)
        prim["attributes"][sem] = len(accessors) - 1
    accessors.append({"bufferView": add(triangles.astype(np.uint16).tobytes(), 34963), "componentType": 5123,
                      "count": triangles.size, "type": "SCALAR"})
    prim["indices"] = len(accessors) - 1
    doc = {"asset": {"version": "2.0"}, "scene": 0, "scenes": [{"nodes": [0]}], "nodes": [{"mesh": 0}],
           "meshes": [{"primitives": [prim]}], "accessors": accessors, "bufferViews": views}
    if skin:  # three joints in a row along x
        ibm = np.tile(np.eye(4, dtype=np.float32), (3, 1, 1))
        ibm[:, 3, 0] = -np.arange(3) * 11.5
        accessors.append({"bufferView": add(ibm.tobytes(), None), "componentType": 5126, "count": 3, "type": "MAT4"})
        doc["nodes"] = [{"mesh": 0, "skin": 0}, {"children": [2]}, {"children": [3], "translation": [11.5, 0, 0]},
                        {"translation": [11.5, 0, 0]}]
        doc["scenes"] = [{"nodes": [0, 1]}]
        doc["skins"] = [{"joints": [1, 2, 3], "inverseBindMatrices": len(accessors) - 1}]
    doc["buffers"] = [{"byteLength": len(binary)}]
    path.write_bytes(glb(doc, bytes(binary)))


def make_samples(folder: Path) -> dict[str, Path]:
    """Two valid assets Draco's quantization takes out of range: colours whose channels span
    different ranges (quantized on the widest one's grid, a channel ending at 1 can come back
    above it), and skin weights with small third weights (some quantized to 0)."""
    g = grid(24)
    v = len(g.positions)
    rng = np.random.default_rng(3)
    colours = rng.random((v, 4))
    colours[:, 1] = 0.1 + 0.9 * colours[:, 1]
    colours[:, 2] = 0.05 + 0.95 * colours[:, 2]
    colours[::7] = 1.0
    colours[3::7, 0] = 0.0
    x = g.positions[:, 0] / g.positions[:, 0].max()
    weights = np.stack([1 - x, x, np.zeros(v), np.zeros(v)], axis=1)
    weights[::5, 2] = rng.random(v)[::5] * 1e-3
    weights = (weights / weights.sum(axis=1, keepdims=True)).astype(np.float32)
    joints = np.where(weights > 0, np.array([0, 1, 2, 0], np.uint8), 0).astype(np.uint8)
    out = {"colours": folder / "colours" / "colours.glb", "skinned": folder / "skinned" / "skinned.glb"}
    for p in out.values():
        p.parent.mkdir()
    _write_sample(out["colours"], {"POSITION": (g.positions, 5126, "VEC3"),
                                   "COLOR_0": (colours.astype(np.float32), 5126, "VEC4")}, g.triangles)
    _write_sample(out["skinned"], {"POSITION": (g.positions, 5126, "VEC3"), "JOINTS_0": (joints, 5121, "VEC4"),
                                   "WEIGHTS_0": (weights, 5126, "VEC4")}, g.triangles, skin=True)
    return out


def draco_pack(sources: list[Path], folder: Path) -> dict[Path, Path]:
    """``gltf-transform draco`` of each source (one node process); the sources it wrote a
    Draco primitive for, with their packed files."""
    out = {}
    for line in _node(BATCH_SCRIPT, "draco", folder, *sources):
        if line.startswith('{"input"'):
            got = json.loads(line)
            if got["ok"] and "KHR_draco_mesh_compression" in read_glb(Path(got["output"]))[0].get("extensionsUsed", []):
                out[Path(got["input"])] = Path(got["output"])
    return out


def optimize(*argv) -> dict:
    """``optimize ARGV -p nvidia_gl --json`` in this process: its report."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["optimize", *map(str, argv), "-p", "nvidia_gl", "--json"])
    assert code == 0, err.getvalue()
    return json.loads(out.getvalue())


@dataclass
class Run:
    source: Path
    packed: Path
    out: Path  # default: meshopt-compressed
    plain: Path  # --no-compress
    notes: list[str]


@dataclass
class Runs:
    runs: dict[str, Run]  # by asset (folder) name
    samples: dict[str, Path]
    reports: dict[Path, dict]  # the validator's, of every source, Draco file and output
    three: dict[Path, dict]  # three's reading of every Draco file and output
    expected: dict[str, tuple[dict, Counts]]  # by asset: three's decoding of its Draco file, in range


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Runs:
    """The samples and every shared asset through ``gltf-transform draco`` and ``optimize``
    (compressed and ``--no-compress``), validated and read by three, once for the module."""
    reason = missing()
    if reason:
        pytest.skip(reason)
    folder = tmp_path_factory.mktemp("draco")
    samples = make_samples(folder)
    packed = draco_pack([*samples.values(), *assets()], folder)
    runs = {}
    for src, p in packed.items():
        out, plain = p.with_suffix(".out.glb"), p.with_suffix(".plain.glb")
        notes = optimize(p, "-o", out)["notes"]
        optimize(p, "-o", plain, "--no-compress")
        runs[src.parent.name] = Run(src, p, out, plain, notes)
    files = [p for r in runs.values() for p in (r.source, r.packed, r.out, r.plain)]
    reports = dict(zip(files, validate(files), strict=True))
    three = three_read([p for r in runs.values() for p in (r.packed, r.out, r.plain)])
    return Runs(runs, samples, reports, three, {name: expected(three[r.packed]) for name, r in runs.items()})


def test_gltf_transform_compresses_assets_with_colours_and_skins(runs):
    assert {"colours", "skinned", "CesiumMan", "CornellBox", "DamagedHelmet", "Fox"} <= set(runs.runs), \
        sorted(runs.runs)


def test_this_readers_draco_values_are_threes_in_glTFs_ranges(runs):
    """DracoPy's decoding, vertex by vertex, equals three's after the range rules."""
    for name, run in runs.runs.items():
        want, _ = runs.expected[name]
        got = read_document(run.packed.read_bytes(), run.packed)
        for (mi, pi), drawn in want.items():
            prim = got.doc["meshes"][mi]["primitives"][pi]
            for sem, values in drawn.attributes.items():
                ours = read_accessor(got.doc, got.buffers, prim["attributes"][sem])[0]
                assert ours.dtype == values.dtype and np.array_equal(ours.view(np.uint8), values.view(np.uint8)), \
                    f"{name} mesh {mi} primitive {pi} {sem}: decoded values differ from three's"
            if drawn.index is not None:
                ours = read_accessor(got.doc, got.buffers, prim["indices"])[0].reshape(-1)
                assert np.array_equal(ours, drawn.index), f"{name} mesh {mi} primitive {pi}: indices"


def test_the_draco_note_names_what_was_brought_into_range(runs):
    counts = {name: runs.expected[name][1] for name in runs.runs}
    for name, run in runs.runs.items():
        assert note_counts(run.notes) == counts[name], (name, run.notes)
    assert counts["colours"].colours > 0 and counts["colours"].weights == counts["colours"].joints == 0
    assert counts["skinned"].weights > 0 and counts["skinned"].joints > 0 and counts["skinned"].colours == 0
    assert counts["Fox"].weights > 0 and counts["CesiumMan"].weights > 0  # weights quantized off their sum


def test_outputs_draw_what_three_decodes_from_the_draco_file(runs):
    for name, run in runs.runs.items():
        want, _ = runs.expected[name]
        for out in (run.out, run.plain):
            for key, drawn in want.items():
                assert same_triangles(corners(drawn), corners(runs.three[out][key])), \
                    f"{name} ({out.name}) mesh {key[0]} primitive {key[1]} draws otherwise"


def test_the_validator_reports_nothing_new(runs):
    for name, run in runs.runs.items():
        a, b = problems(runs.reports[run.source]), problems(runs.reports[run.packed])
        before = {code: max(a.get(code, 0), b.get(code, 0)) for code in set(a) | set(b)}
        for out in (run.out, run.plain):
            new = {code: n for code, n in problems(runs.reports[out]).items() if n > before.get(code, 0)}
            assert not new, f"{name} ({out.name}): new validator errors/warnings {new}"


def test_the_samples_draco_files_decode_out_of_range_elsewhere(runs, tmp_path):
    """The check can fail: glTF-Transform's decoding of the samples' Draco files, written
    plain, draws the validator's range problems that the outputs do not."""
    for name, src in runs.samples.items():
        baseline = tmp_path / f"{name}.gltf-transform.glb"
        write_plain(runs.runs[name].packed, baseline)
        original, decoded = validate([src, baseline])
        assert not problems(original)
        assert set(problems(decoded)) == SAMPLE_PROBLEMS[name], problems(decoded)
