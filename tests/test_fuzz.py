"""Fuzzing the command line (issue 17): mutated glTF, scene and profile JSON, byte truncations
of every mesh format and hostile option values, each run through ``meshopt_batch_app.cli.main``
in this process.

Every run keeps the contract of :func:`test_fuzz_support.check_contract`: exit 0 or 2, no
traceback, exactly one ``meshopt-batch: error:`` line on 2, only one-line ``meshopt-batch:``
messages on 0, no file left behind (outputs only after a success, never a temporary).
Truncations are also held to what each format can tell: a cut binary file, glTF or GLB is
always refused; a cut PLY or OFF is refused or warned about; a cut ASCII STL is refused
unless its ``endsolid`` survived; a cut OBJ that ends inside a line is warned about.

The fast variant runs in ``make test`` (CI) with a fixed seed (``derandomize``) and
:data:`FAST` cases per test, 2,300 in all; the ``slow`` variant runs ten times as many with
random seeds.  The limits of generated meshes and of memory are lowered for the run
(:func:`small_limits`) so a mutated ``subdiv`` or accessor count exercises the refusal
without building gigabytes.
"""

from __future__ import annotations

import itertools
import json
import shutil
import tempfile
from pathlib import Path

import pytest
from compressed_samples import draco_sample, glb, meshopt_sample, read_glb
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_fuzz_support import (
    check_contract,
    gltf_document,
    mutate,
    profile_document,
    run_cli,
    sample_files,
    scene_document,
)

from meshopt_batch.support import limits

#: Cases per fuzz test in the fast (CI) variant; the slow variant runs ten times as many.
FAST = {"truncation": 800, "gltf": 600, "scene": 400, "profile": 300, "options": 200, "compressed": 300}
SIM = ("-n", "1", "--width", "32", "--height", "24", "--no-progress", "--json")


@pytest.fixture
def small_limits(monkeypatch):
    """Generated meshes of at most 20,000 triangles and 256 MiB of 'available' memory."""
    monkeypatch.setattr(limits, "MAX_GENERATED_TRIANGLES", 20_000)
    monkeypatch.setattr(limits, "available_memory", lambda: 256 << 20)


@pytest.fixture(scope="module")
def samples():
    folder = Path(tempfile.mkdtemp(prefix="fuzz-samples-"))
    yield {name: path.read_bytes() for name, path in sample_files(folder).items()}
    shutil.rmtree(folder, ignore_errors=True)


class Cases:
    """A fresh folder per case under one root; counts the cases run."""

    def __init__(self, root: Path):
        self.root = root
        self.count = 0
        self._ids = itertools.count()

    def folder(self) -> Path:
        self.count += 1
        path = self.root / f"case{next(self._ids)}"
        path.mkdir()
        return path


def fuzz(body, strategy, cases: int, slow: bool):
    """Run ``body(value)`` on ``cases`` values of ``strategy`` (fixed seed unless ``slow``)."""
    runner = settings(max_examples=cases * (10 if slow else 1), derandomize=not slow, database=None,
                      deadline=None, suppress_health_check=list(HealthCheck))(given(strategy)(body))
    runner()


def _variants(name):
    return pytest.mark.parametrize("slow", [pytest.param(False, id=f"{name}-fast"),
                                            pytest.param(True, id=f"{name}-slow", marks=pytest.mark.slow)])


# ----------------------------------------------------------------------------- truncations
_BINARY = ("ply_le.ply", "ply_be.ply", "stl_binary.stl", "glb.glb")


def _check_truncation(name: str, whole: bytes, cut: bytes, run) -> None:
    warned = any("ends without a line end" in line for line in run.err_lines)
    if name in _BINARY or name == "gltf.gltf":
        assert run.code == 2 or cut.strip() == whole.strip(), (name, len(cut), run.err)
    elif name in ("ply_ascii.ply", "off.off"):
        assert run.code == 2 or warned, (name, len(cut), run.err)
    elif name == "stl_ascii.stl":
        assert run.code == 2 or len(cut) >= whole.rindex(b"endsolid") + len(b"endsolid"), (len(cut), run.err)
    else:
        assert run.code == 2 or warned or cut.endswith(b"\n"), (name, len(cut), run.err)


@_variants("truncation")
def test_fuzz_truncations(samples, small_limits, tmp_path, slow):
    cases = Cases(tmp_path)
    names = sorted(samples)

    def body(value):
        name, size, write = value
        whole = samples[name]
        cut = whole[:size]
        folder = cases.folder()
        src = folder / f"cut{Path(name).suffix}"
        src.write_bytes(cut)
        if write:
            out = folder / "out.ply"
            run = run_cli("optimize", src, "-o", out, "-m", "tipsify", "-p", "fifo:8", "--json")
            check_contract(run, folder, {src.name}, {out.name})
        else:
            run = run_cli("analyze", src, "--json", "-p", "fifo:8")
            check_contract(run, folder, {src.name})
        _check_truncation(name, whole, cut, run)

    strategy = st.sampled_from(names).flatmap(lambda n: st.tuples(
        st.just(n), st.integers(0, len(samples[n]) - 1), st.sampled_from([False, False, False, True])))
    fuzz(body, strategy, FAST["truncation"], slow)
    assert cases.count >= FAST["truncation"]


# ----------------------------------------------------------------------------- glTF JSON
@_variants("gltf")
def test_fuzz_gltf_documents(small_limits, tmp_path, slow):
    cases = Cases(tmp_path)

    def body(value):
        data, command = value
        doc = mutate(gltf_document(), data)
        folder = cases.folder()
        src = folder / "doc.gltf"
        src.write_text(json.dumps(doc, allow_nan=True))
        if command == "optimize":
            out = folder / "out.glb"
            run = run_cli("optimize", src, "-o", out, "-m", "tipsify", "-p", "fifo:8", "--json")
            check_contract(run, folder, {src.name}, {out.name})
        elif command == "simulate":
            run = run_cli("simulate", src, *SIM)
            check_contract(run, folder, {src.name})
        else:
            run = run_cli("analyze", src, "--json", "-p", "fifo:8")
            check_contract(run, folder, {src.name})

    strategy = st.tuples(st.data(), st.sampled_from(["analyze"] * 5 + ["optimize"] * 2 + ["simulate"]))
    fuzz(body, strategy, FAST["gltf"], slow)
    assert cases.count >= FAST["gltf"]


# ----------------------------------------------------------------------------- scene JSON
@_variants("scene")
def test_fuzz_scene_documents(small_limits, tmp_path, slow):
    cases = Cases(tmp_path)

    def body(value):
        data, csv = value
        doc = mutate(scene_document(), data)
        folder = cases.folder()
        src = folder / "scene.json"
        src.write_text(json.dumps(doc, allow_nan=True))
        if csv:
            out = folder / "frames.csv"
            run = run_cli("simulate", src, *SIM, "--csv", out)
            check_contract(run, folder, {src.name}, {out.name})
        else:
            run = run_cli("simulate", src, *SIM)
            check_contract(run, folder, {src.name})

    fuzz(body, st.tuples(st.data(), st.sampled_from([False, False, False, True])), FAST["scene"], slow)
    assert cases.count >= FAST["scene"]


# ----------------------------------------------------------------------------- profile JSON
@_variants("profile")
def test_fuzz_profile_documents(samples, small_limits, tmp_path, slow):
    cases = Cases(tmp_path)

    def body(data):
        doc = mutate(profile_document(), data)
        folder = cases.folder()
        mesh = folder / "m.obj"
        mesh.write_bytes(samples["obj.obj"])
        prof = folder / "gpu.json"
        prof.write_text(json.dumps(doc, allow_nan=True))
        run = run_cli("analyze", mesh, "-p", prof, "--json")
        check_contract(run, folder, {mesh.name, prof.name})

    fuzz(body, st.data(), FAST["profile"], slow)
    assert cases.count >= FAST["profile"]


# ----------------------------------------------------------------------------- option values
def _number_text():
    return st.one_of(st.integers(-3, 40), st.sampled_from([2**31, 2**40, 10**30, 16385, -2**63]),
                     st.sampled_from(["nan", "inf", "-inf", "1e400", "0x10", "", "3.5", "١٢"])).map(str)


@_variants("options")
def test_fuzz_option_values(samples, small_limits, tmp_path, slow):
    cases = Cases(tmp_path)
    scene = json.dumps({"frames": 1, "objects": [{"mesh": "box"}], "camera": {"eye": [0, 0, 3]}})

    def body(value):
        kind, (a, b, c, d, e) = value
        folder = cases.folder()
        mesh = folder / "m.obj"
        mesh.write_bytes(samples["obj.obj"])
        inputs = {mesh.name}
        if kind == "simulate":
            src = folder / "s.json"
            src.write_text(scene)
            inputs.add(src.name)
            run = run_cli("simulate", src, "--no-progress", "--json", "--width", a, "--height", b,
                          "--tile", c, "--frames", d, "--first-frame", e)
        elif kind == "profile":
            run = run_cli("analyze", mesh, "--json", "-p", f"{['fifo', 'lru', 'nvidia_gl'][len(c) % 3]}:{a}")
        elif kind == "method":
            run = run_cli("compare", mesh, "--json", "-q", "-p", "fifo:8", "-m", f"tipsify:{a}")
        elif kind == "meshlets":
            out = folder / "m.npz"
            run = run_cli("meshlets", mesh, "-o", out, "--max-vertices", a, "--max-triangles", b,
                          "--cone-weight", c, "-m", "batch")
            check_contract(run, folder, inputs, {out.name})
            return
        else:
            out = folder / "o.ply"
            run = run_cli("optimize", mesh, "-o", out, "-m", "tipsify", "-p", "fifo:8", "--overdraw", a)
            check_contract(run, folder, inputs, {out.name})
            return
        check_contract(run, folder, inputs)

    strategy = st.tuples(st.sampled_from(["simulate", "profile", "method", "meshlets", "optimize"]),
                         st.lists(_number_text(), min_size=5, max_size=5))
    fuzz(body, strategy, FAST["options"], slow)
    assert cases.count >= FAST["options"]


# ----------------------------------------------------------------------------- compressed glTF
@pytest.fixture(scope="module")
def compressed():
    """Meshopt-compressed (EXT, KHR version 1) and Draco samples: (JSON, BIN chunk) each."""
    folder = Path(tempfile.mkdtemp(prefix="fuzz-compressed-"))
    meshopt_sample(folder / "ext.glb")
    meshopt_sample(folder / "khr.glb", extension="KHR_meshopt_compression", version=1)
    draco_sample(folder / "draco.glb")
    out = {name: read_glb(folder / f"{name}.glb") for name in ("ext", "khr", "draco")}
    shutil.rmtree(folder, ignore_errors=True)
    return out


@_variants("compressed")
def test_fuzz_compressed_documents(compressed, small_limits, tmp_path, slow):
    """Mutated extension objects and JSON, corrupt, cut and shifted stream bytes of
    meshopt-compressed and Draco files, through ``optimize`` (each mode of writing) and
    ``analyze``: a refusal names the buffer view; never a traceback or a file left behind."""
    cases = Cases(tmp_path)

    def body(value):
        name, data, damage, command = value
        doc, bin_data = compressed[name]
        doc, raw = json.loads(json.dumps(doc)), bytearray(bin_data)
        if damage == "json":
            doc = mutate(doc, data)
        else:
            start = data.draw(st.integers(0, max(len(raw) - 1, 0)), label="start")
            size = data.draw(st.integers(1, 64), label="size")
            if damage == "bytes":
                raw[start:start + size] = data.draw(st.binary(min_size=size, max_size=size), label="bytes")
            else:
                del raw[start:start + size]
        folder = cases.folder()
        src = folder / "in.glb"
        try:
            src.write_bytes(glb(doc, bytes(raw)) if isinstance(doc, dict) else json.dumps(doc).encode())
        except (TypeError, ValueError):
            src.write_text(json.dumps(doc, allow_nan=True, default=str))
        if command == "analyze":
            run = run_cli("analyze", src, "--json", "-p", "fifo:8")
            check_contract(run, folder, {src.name})
        else:
            out = folder / "out.glb"
            flag = {"optimize": [], "plain": ["--no-compress"], "compress": ["--compress"]}[command]
            run = run_cli("optimize", src, "-o", out, "-m", "tipsify", "-p", "fifo:8", "--json", *flag)
            check_contract(run, folder, {src.name}, {out.name})
        if run.code == 2 and damage != "json" and "bufferView" not in run.err:  # else it names what is wrong
            assert any(w in run.err for w in ("index", "accessor", "GLB", "buffer", "vertex position")), run.err

    strategy = st.tuples(st.sampled_from(["ext", "khr", "draco"]), st.data(),
                         st.sampled_from(["json", "json", "bytes", "cut"]),
                         st.sampled_from(["optimize", "optimize", "plain", "compress", "analyze"]))
    fuzz(body, strategy, FAST["compressed"], slow)
    assert cases.count >= FAST["compressed"]
