"""Compressed delivery on the real assets of ``../shared/gltf`` through the real packers (issue 30).

Each asset goes through ``gltfpack -c``, ``gltfpack -cc``, ``gltf-transform meshopt`` and
``gltf-transform draco`` (npm, installed by ``make setup`` into ``.npm-tools/``), and gltfpack's
other forms (``-c -cf``: a fallback with data in its own file; ``-cc -ce khr``:
KHR_meshopt_compression with the version-1 codec), then through ``optimize`` with its default
target and ``--effort 0`` (the portable target's screened starts without the window search:
what is delivered is the point here, not how far the search gets; ``tests/test_portable.py``
holds the search).  The output must:

* exit 0 and read back in glTF-Transform with meshoptimizer's and Draco's own decoders (the
  independent reader, ``tests/independent_reader.py``) as the packer's triangles: per
  primitive, every triangle's tuple of corner attribute values, as a multiset, up to a
  rotation of each triangle (a Draco file's colours, joints and weights are brought into
  glTF's ranges: ``test_gltf_draco`` compares those with three.js's decoding);
* add no error or warning to what the Khronos validator says about the packer's output;
* be at most 1.02x the packer's bytes (Draco excepted: it is written with meshopt
  compression and its bytes are stated by ``benchmarks/bench_delivery.py``);
* predict, per primitive, no more invocations than the packer's order on any profile of the
  target ``optimize`` used (its default), and fewer in total on some profile where the
  packer's order was not kept everywhere.

``optimize --compress`` on the original assets and ``--no-compress`` on a packed one are
held to the same reader and validator.  The default run takes five assets; the ``slow``
variant every asset.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from independent_reader import (
    NODE_MODULES,
    read_animations,
    read_columns,
    read_draws,
    read_triangles,
    reader_missing,
    same_triangles,
    write_plain,
)

from meshes import shared_meshes_dir
from meshopt_batch.model.prediction import predict
from meshopt_batch.model.profiles import get_profile
from meshopt_batch_app.cli import main

ROOT = Path(__file__).resolve().parent.parent
SHARED_GLTF = shared_meshes_dir().parent / "gltf"
BIN = NODE_MODULES / ".bin"
VALIDATOR_SCRIPT = ROOT / "tests" / "gltf_validator.js"
PACKERS = {
    "gltfpack-c": lambda src, out: [str(BIN / "gltfpack"), "-i", str(src), "-o", str(out), "-c"],
    "gltfpack-cc": lambda src, out: [str(BIN / "gltfpack"), "-i", str(src), "-o", str(out), "-cc"],
    "gltf-transform-meshopt": lambda src, out: [str(BIN / "gltf-transform"), "meshopt", str(src), str(out)],
    "gltf-transform-draco": lambda src, out: [str(BIN / "gltf-transform"), "draco", str(src), str(out)],
    # the same packer's other forms: a fallback with data in a file of its own, and the KHR extension
    "gltfpack-c-cf": lambda src, out: [str(BIN / "gltfpack"), "-i", str(src), "-o", str(out), "-c", "-cf"],
    "gltfpack-cc-khr": lambda src, out: [str(BIN / "gltfpack"), "-i", str(src), "-o", str(out), "-cc", "-ce", "khr"],
}
FAST_ASSETS = ("BrainStem", "CesiumMan", "ClearCoatTest", "Fox", "MorphPrimitivesTest")
SIZE_RATIO = 1.02


def assets() -> list[Path]:
    return sorted(SHARED_GLTF.glob("*/*.gltf")) + sorted(SHARED_GLTF.glob("*/*.glb"))


def tools_missing() -> str | None:
    reason = reader_missing()
    if reason:
        return reason
    for tool in ("gltfpack", "gltf-transform"):
        if not (BIN / tool).exists():
            return f"{tool} is not installed in .npm-tools/ (run `make setup` with npm present)"
    if not (NODE_MODULES / "gltf-validator").is_dir():
        return "gltf-validator is not installed in .npm-tools/ (run `make setup` with npm present)"
    return None


def target_profiles(report: dict) -> list:
    """The profiles ``optimize`` judged its orders on (its target), from its report."""
    names = next((list(p["profiles"]) for p in report.get("primitives", []) if p.get("profiles")), None)
    return [get_profile(n) for n in (names or [report["profile"]])]


def pack(packer: str, src: Path, folder: Path) -> Path:
    out = folder / f"{src.stem}.{packer}.glb"
    if not out.exists():
        proc = subprocess.run(PACKERS[packer](src, out), capture_output=True, text=True, timeout=600,
                              env=dict(os.environ, NODE_PATH=str(NODE_MODULES)))
        assert proc.returncode == 0, f"{packer} {src.name}: {proc.stderr[-1000:]}"
    return out


def validate(paths: list[Path]) -> list[dict]:
    env = dict(os.environ, NODE_PATH=str(NODE_MODULES))
    proc = subprocess.run(["node", str(VALIDATOR_SCRIPT), *map(str, paths)], capture_output=True, text=True,
                          env=env, timeout=600, check=True)
    return [json.loads(line) for line in proc.stdout.splitlines()]


def problems(report: dict) -> dict[str, int]:
    return {code: n for code, n in report["counts"].items() if report["severities"][code] <= 1}


def new_problems(before: Path, after: Path) -> dict[str, int]:
    a, b = validate([before, after])
    return {code: n for code, n in problems(b).items() if n > problems(a).get(code, 0)}


def optimize(capsys, *argv) -> dict:
    capsys.readouterr()
    code = main(["optimize", *map(str, argv), "--json", "--effort", "0"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


#: Attributes whose Draco-decoded values are brought into glTF's ranges (colours clamped,
#: weights renormalized, unused joints 0): test_gltf_draco compares them with three.js's decoding.
DRACO_RANGED = ("COLOR_", "JOINTS_", "WEIGHTS_")


def check_same_drawing(reference: Path, out: Path, skip: tuple[str, ...] = ()) -> None:
    """``out`` draws ``reference``'s triangles; attributes whose names start with ``skip``
    are left out of the comparison."""
    a, b = read_triangles(reference), read_triangles(out)
    names = read_columns(reference)
    assert a.keys() == b.keys()
    for key in a:
        keep = [c for c, name in enumerate(names[key]) if not name.startswith(skip)] if skip else slice(None)
        assert same_triangles(a[key][:, :, keep], b[key][:, :, keep]), \
            f"{out.name}: mesh {key[0]} primitive {key[1]} draws otherwise"


@pytest.fixture(scope="module")
def packed_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("packed")


def _cases():
    """Every asset through every packer; assets outside :data:`FAST_ASSETS` are ``slow``."""
    return [pytest.param(src, packer, id=f"{src.stem}-{packer}",
                         marks=[] if src.parent.name in FAST_ASSETS else [pytest.mark.slow])
            for src in assets() for packer in PACKERS]


@pytest.mark.parametrize("src,packer", _cases())
def test_packed_asset_is_optimized_and_delivered_as_it_came(tmp_path, capsys, packed_dir, src, packer):
    reason = tools_missing()
    if reason:
        pytest.skip(reason)
    packed = pack(packer, src, packed_dir)
    out = tmp_path / packed.name
    report = optimize(capsys, packed, "-o", out)
    check_same_drawing(packed, out, DRACO_RANGED if packer == "gltf-transform-draco" else ())
    assert not new_problems(packed, out), f"{out.name}: new validator errors/warnings {new_problems(packed, out)}"
    if packer != "gltf-transform-draco":
        assert report["bytes_after"] <= SIZE_RATIO * report["bytes_before"], (report["bytes_after"],
                                                                               report["bytes_before"])
    if packer == "gltfpack-c-cf":
        assert (out.parent / f"{out.stem}.fallback.bin").is_file()
    before, after = read_draws(packed), read_draws(out)
    kept_everywhere = all(p.get("order") == "input" for p in report.get("primitives", []))
    lower = []
    for prof in target_profiles(report):
        total_before = total_after = 0
        for key, (tris, count) in before.items():
            a = predict(tris, count, profile=prof).invocations
            b = predict(after[key][0], after[key][1], profile=prof).invocations
            assert b <= a, f"{out.name} {prof.name} mesh {key[0]} primitive {key[1]}: {a} -> {b}"
            total_before, total_after = total_before + a, total_after + b
        lower.append(total_after < total_before)
    assert kept_everywhere or any(lower), "a new order was taken but no profile's total is lower"


@pytest.mark.parametrize("name,pays", [("CesiumMan/CesiumMan.glb", True), ("Fox/Fox.glb", True),
                                       ("BrainStem/BrainStem.glb", True),
                                       ("AnimatedMorphCube/AnimatedMorphCube.glb", True),
                                       ("BoxInterleaved/BoxInterleaved.gltf", True),
                                       ("SimpleSparseAccessor/SimpleSparseAccessor.gltf", False)])
def test_compress_writes_ext_meshopt_compression_readable_by_the_independent_reader(tmp_path, capsys, name, pays):
    reason = tools_missing()
    if reason:
        pytest.skip(reason)
    src = SHARED_GLTF / name
    if not src.is_file():
        pytest.skip(f"{src} is not present")
    out = tmp_path / (src.stem + ".glb")
    report = optimize(capsys, src, "-o", out, "--compress")
    check_same_drawing(src, out)
    assert read_animations(out) == read_animations(src)  # moved to views of their kind, values kept
    assert not new_problems(src, out)
    doc = json.loads(out.read_bytes()[20:20 + int.from_bytes(out.read_bytes()[12:16], "little")])
    if pays:
        assert out.stat().st_size < report["bytes_before"]
        assert "EXT_meshopt_compression" in doc["extensionsRequired"]
        assert doc["buffers"][-1] == {"byteLength": doc["buffers"][-1]["byteLength"],
                                      "extensions": {"EXT_meshopt_compression": {"fallback": True}}}
    else:  # a few hundred bytes per view: no stream pays for its extension object
        assert "extensionsRequired" not in doc and any("written plain" in n for n in report["notes"])


def test_no_compress_decodes_a_packed_asset_to_plain_data(tmp_path, capsys, packed_dir):
    """Plain data is what this tool's decoder read: exactly the packer's values, except where a
    filter stored them (gltfpack -cc's octahedral normals), where meshoptimizer's C++ and
    JavaScript decoders differ by up to one quantization step."""
    reason = tools_missing()
    if reason:
        pytest.skip(reason)
    src = SHARED_GLTF / "CesiumMan" / "CesiumMan.glb"
    if not src.is_file():
        pytest.skip(f"{src} is not present")
    for packer in ("gltfpack-c", "gltfpack-cc", "gltf-transform-draco"):
        packed = pack(packer, src, packed_dir)
        out = tmp_path / f"plain-{packer}.glb"
        optimize(capsys, packed, "-o", out, "--no-compress")
        text = out.read_bytes()[:20 + int.from_bytes(out.read_bytes()[12:16], "little")]
        assert b"meshopt_compression" not in text and b"draco" not in text
        if packer == "gltfpack-cc":
            a, b, names = read_triangles(packed), read_triangles(out), read_columns(packed)
            for key in a:
                exact = [c for c, n in enumerate(names[key]) if n != "NORMAL"]
                assert same_triangles(a[key], b[key], tolerance=1.01 / 127, exact_columns=exact)
        else:
            check_same_drawing(packed, out, DRACO_RANGED if packer == "gltf-transform-draco" else ())
        baseline = tmp_path / f"baseline-{packer}.glb"
        write_plain(packed, baseline)  # the packed data as glTF-Transform decodes it, uncompressed
        assert not new_problems(baseline, out)


def test_a_library_of_packed_assets_keeps_their_compression(tmp_path, capsys, packed_dir):
    reason = tools_missing()
    if reason:
        pytest.skip(reason)
    lib = tmp_path / "lib"
    lib.mkdir()
    for name in ("Fox/Fox.glb", "BoxInterleaved/BoxInterleaved.gltf"):
        src = SHARED_GLTF / name
        if not src.is_file():
            pytest.skip(f"{src} is not present")
        shutil.copy(pack("gltfpack-c", src, packed_dir), lib / f"{src.stem}.glb")
    capsys.readouterr()
    assert main(["optimize", str(lib), "-o", str(tmp_path / "out"), "--json", "-j", "1"]) == 0
    for packed in lib.iterdir():
        out = tmp_path / "out" / packed.name
        check_same_drawing(packed, out)
        assert b"EXT_meshopt_compression" in out.read_bytes()[:4000]
