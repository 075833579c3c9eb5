"""Targets of several profiles: the ``portable`` order, its guarantees, its API.

* :mod:`meshopt_batch.model.targets` resolves ``portable``, sets and profile files once;
* single-profile ``batch`` output is byte-identical to the release before targets (digests
  recorded from commit 7e11418 on procedural meshes and the shared bunny);
* the portable order keeps every triangle (corners in cyclic order), and predicts no more
  invocations than meshoptimizer's order and the input's on every profile;
* the starts screened (the chosen order, the batch candidate nearest to meshoptimizer's order
  where that order is chosen, the breadth-first layers where they beat it somewhere), the search
  from the best of them, the one objective and the choice, the same result on any number of cores;
* "never worse" in :func:`meshopt_batch.vertices.vertex_set.optimize_vertex_set` holds per profile;
* ``optimize`` takes a ``trimesh.Trimesh`` and ``apply`` returns one with every attribute;
* ``optimize_file`` with keyword options; ``compare --shipped``.

The window search itself (its loop, moves, work bound) is tested in ``test_portable_search.py``.
"""

from __future__ import annotations

import hashlib
import json

import meshoptimizer
import numpy as np
import pytest
import trimesh

import meshes
from meshopt_batch import get_target, optimize, optimize_file, predict
from meshopt_batch.io import load_mesh, save_mesh
from meshopt_batch.model.targets import PORTABLE
from meshopt_batch.optimizers import get_method
from meshopt_batch.optimizers.portable import optimize_for_target
from meshopt_batch.optimizers.portable.candidates import Pool
from meshopt_batch.optimizers.portable.objective import caps, choose, objective
from meshopt_batch.optimizers.portable.starts import add_in_blocks
from meshopt_batch.optimizers.portable.tuning import CODEC_SLACK, TABLE
from meshopt_batch.support.errors import MeshoptBatchError
from meshopt_batch.vertices.index_codec import codec_bits, raw_codec_bits
from meshopt_batch.vertices.vertex_fetch import first_use_order
from meshopt_batch.vertices.vertex_set import SetOptions, judged, optimize_vertex_set
from meshopt_batch_app.cli import main


def _digest(result) -> str:
    remap = b"" if result.vertex_remap is None else np.ascontiguousarray(result.vertex_remap).tobytes()
    return hashlib.sha256(np.ascontiguousarray(result.triangles).tobytes() + remap).hexdigest()[:16]


def _corner_sets(tris) -> np.ndarray:
    """Each triangle rotated so its smallest index comes first (winding kept), sorted."""
    t = np.asarray(tris, np.int64).reshape(-1, 3)
    k = np.argmin(t, axis=1)
    rot = np.stack([t[np.arange(len(t)), (k + i) % 3] for i in range(3)], axis=1)
    return rot[np.lexsort(rot.T[::-1])]


def _reference(tris, count):
    flat = np.ascontiguousarray(tris, np.uint32).reshape(-1)
    dst = np.empty_like(flat)
    meshoptimizer.optimize_vertex_cache(dst, flat, flat.size, count)
    out = dst.reshape(-1, 3).astype(np.int64)
    order = first_use_order([out], count)
    inverse = np.empty(count, np.int64)
    inverse[order] = np.arange(count)
    return inverse[out]


def test_targets_resolve_once():
    t = get_target("portable")
    assert [p.name for p in t.profiles] == list(PORTABLE) and not t.single
    assert get_target(t) is t
    assert get_target("amd").single and get_target("amd").first.name == "amd"
    assert [p.name for p in get_target("nvidia_gl, lru:15").profiles] == ["nvidia_gl", "lru:15"]
    assert [p.name for p in get_target(["amd", "intel"]).profiles] == ["amd", "intel"]
    assert [p.name for p in t.evaluation_profiles(70_000)][:2] == ["nvidia_gl+16bit", "nvidia_dx+16bit"]
    assert [p.name for p in t.evaluation_profiles(65_536)][:2] == ["nvidia_gl", "nvidia_dx"]
    with pytest.raises(MeshoptBatchError, match="listed twice"):
        get_target("portable,amd")
    with pytest.raises(MeshoptBatchError, match="unknown profile"):
        get_target("nvidia_gl,mali")


def test_target_takes_profile_files(tmp_path):
    path = tmp_path / "gpu.json"
    path.write_text(get_target("amd").first.to_json().replace('"amd"', '"my_gpu"'))
    t = get_target(f"nvidia_gl,{path}")
    assert [p.name for p in t.profiles] == ["nvidia_gl", "my_gpu"]


# Recorded with the code of commit 7e11418 (before targets and auxiliary memories existed).
_PROCEDURAL_DIGESTS = {
    ("torus", (40, 24), "nvidia_gl"): "ac40df683ffc1032", ("torus", (40, 24), "amd"): "f2f3c5acd5a26939",
    ("torus", (40, 24), "llvmpipe"): "7bdddb209e143b72", ("torus", (40, 24), "lru:15"): "175fa9f99869818d",
    ("icosphere", (3,), "nvidia_dx"): "e1576f74b66b056b", ("icosphere", (3,), "intel"): "a15dd527dcadb59a",
    ("grid", (30,), "nvidia_gl"): "a55f58a8a2da15f7", ("grid", (30,), "llvmpipe"): "55e695b3a0ad4b0c",
}


@pytest.mark.parametrize("key", sorted(_PROCEDURAL_DIGESTS))
def test_single_profile_output_is_byte_identical(key):
    name, args, profile = key
    mesh = getattr(meshes, name)(*args)
    res = optimize(mesh.triangles, mesh.vertex_count, method="batch", profile=profile)
    assert _digest(res) == _PROCEDURAL_DIGESTS[key]


def _shared_mesh(name: str):
    """A mesh of ``../shared/meshes``; the test is skipped where it is not there."""
    path = meshes.shared_mesh_path(name)
    if path is None:
        pytest.skip(f"../shared/meshes/{name}.ply is not here")
    return load_mesh(path)


@pytest.mark.parametrize("profile, use_distance, digest", [
    ("nvidia_gl", True, "bc6a289c76f498f2"), ("nvidia_gl", False, "afcb36151bb05b4f"),
    ("amd", True, "61072f796dfa9085"), ("intel", True, "4a5e03b40ded40e9")])
def test_single_profile_bunny_is_byte_identical(profile, use_distance, digest):
    mesh = _shared_mesh("bunny")
    res = optimize(mesh.triangles, mesh.vertex_count, method="batch", profile=profile, use_distance=use_distance)
    assert _digest(res) == digest


def _shuffled(mesh, seed=3):
    rng = np.random.default_rng(seed)
    return np.asarray(mesh.triangles)[rng.permutation(mesh.triangle_count)]


@pytest.mark.parametrize("mesh", [meshes.icosphere(4), meshes.torus(60, 30), meshes.uv_sphere(24, 48)],
                         ids=lambda m: m.name)
def test_portable_keeps_triangles_and_beats_references_everywhere(mesh):
    tris = _shuffled(mesh)
    target = get_target("portable")
    res = optimize_for_target(tris, mesh.vertex_count, target=target)
    out = np.asarray(res.triangles, np.int64)
    source = np.asarray(res.vertex_remap, np.int64)
    assert np.array_equal(np.sort(source), np.arange(mesh.vertex_count))   # a permutation: no copies
    assert np.array_equal(_corner_sets(source[out]), _corner_sets(tris))
    got = judged(out, len(source), target)
    assert got == list(res.stats["invocations"].values())
    for other in (_reference(tris, mesh.vertex_count), tris):
        assert all(a <= b for a, b in zip(got, judged(other, mesh.vertex_count, target), strict=True))


def test_portable_beats_meshoptimizer_on_a_scan():
    mesh = _shared_mesh("dragon_res3")
    target = get_target("portable")
    res = optimize_for_target(mesh.triangles, mesh.vertex_count, target=target)
    assert res.stats["candidate"].startswith("batch@")
    assert "layers" not in res.stats["candidates"]          # a scan's layers are long fronts: not tried
    ref = judged(_reference(mesh.triangles, mesh.vertex_count), mesh.vertex_count, target)
    got = list(res.stats["invocations"].values())
    assert all(a < b for a, b in zip(got, ref, strict=True))
    assert codec_bits(res.triangles).raw <= 1.03 * codec_bits(_reference(mesh.triangles, mesh.vertex_count)).raw


def test_never_worse_refuses_a_trade_between_gpus_and_keeps_the_input():
    # the torus in rows: Hoppe's order shades fewer vertices on four profiles and more on
    # intel's FIFO, which the rows serve better; for a target of several GPUs that is refused
    mesh = meshes.torus(48, 24)
    tris = np.asarray(mesh.triangles, np.int64)
    target = get_target("portable")
    res = optimize(tris, mesh.vertex_count, method="hoppe", profile=target)
    hoppe = np.asarray(res.triangles, np.int64)
    if res.vertex_remap is not None:
        hoppe = np.asarray(res.vertex_remap, np.int64)[hoppe]
    names = [p.name for p in target.profiles]
    before = dict(zip(names, judged(tris, mesh.vertex_count, target), strict=True))
    after = dict(zip(names, judged(hoppe, mesh.vertex_count, target), strict=True))
    assert after["intel"] > before["intel"] and after["nvidia_gl"] < before["nvidia_gl"]
    outcome = optimize_vertex_set(None, [tris], mesh.vertex_count, SetOptions(get_method("hoppe"), target))
    buf = outcome.buffers[0]
    assert buf.order == "input" and buf.after_all == buf.before_all == before
    back = buf.triangles if outcome.source is None else outcome.source[buf.triangles]
    assert np.array_equal(back, tris)
    # the batch method's order for the same rows is at or below them everywhere, so it is taken
    outcome = optimize_vertex_set(None, [tris], mesh.vertex_count, SetOptions(get_method("batch"), target))
    buf = outcome.buffers[0]
    assert buf.order == "optimized" and all(buf.after_all[k] <= buf.before_all[k] for k in buf.before_all)
    back = buf.triangles if outcome.source is None else outcome.source[buf.triangles]
    assert np.array_equal(_corner_sets(back), _corner_sets(tris))
    shuffled = _shuffled(mesh)
    outcome = optimize_vertex_set(None, [shuffled], mesh.vertex_count, SetOptions(get_method("batch"), target))
    buf = outcome.buffers[0]
    assert buf.order == "optimized"
    assert all(buf.after_all[k] < buf.before_all[k] for k in buf.before_all)


def test_the_search_refines_an_input_that_binds_and_stays_below_it_everywhere():
    # a 48 x 48 grid row by row: intel's FIFO of 128 shades each vertex once, no candidate
    # order matches that, so the portable order starts from the best one that does and folds rows
    mesh = meshes.grid(48)
    tris = np.asarray(mesh.triangles, np.int64)
    target = get_target("portable")
    res = optimize_for_target(tris, mesh.vertex_count, target=target)
    name = res.stats["candidate"]
    assert name.endswith(" + search")
    cands = res.stats["candidates"]
    start = cands[name.removesuffix(" + search")]["invocations"]
    reference = cands["meshoptimizer"]["invocations"]
    got = res.stats["invocations"]
    given = dict(zip(got, judged(tris, mesh.vertex_count, target), strict=True))
    # each profile within its cap: meshoptimizer's and the input's, or the start's where it was above
    assert all(got[p] <= max(min(reference[p], given[p]), start[p]) for p in got)
    assert all(got[p] <= given[p] for p in got)
    assert got["intel"] == mesh.vertex_count         # every vertex still shaded once on intel
    assert cands[name]["objective"] < cands[name.removesuffix(" + search")]["objective"]
    back = np.asarray(res.vertex_remap)[np.asarray(res.triangles, np.int64)]
    assert np.array_equal(_corner_sets(back), _corner_sets(tris))
    assert _digest(optimize_for_target(tris, mesh.vertex_count, target=target)) == _digest(res)


def _screened(res) -> list[str]:
    return [s["start"] for s in res.stats["searches"] if s["stage"] == "screen"]


def test_the_starts_screened_are_the_choice_the_nearest_candidate_the_layers_and_a_good_input():
    # a shuffled sphere: meshoptimizer's order is the choice before the search, so the batch
    # candidate nearest to it (the lowest worst ratio) is screened too; a sphere's breadth-first
    # layers are its rings, which Intel's FIFO reuses better than meshoptimizer's order; the
    # shuffled input is worse than meshoptimizer's order on every profile, so it is no start
    mesh = meshes.uv_sphere(16, 32)
    tris = _shuffled(mesh)
    target = get_target("portable")
    assert optimize_for_target(tris, mesh.vertex_count, target=target, window_work=0).stats["candidate"] == \
        "meshoptimizer"
    res = optimize_for_target(tris, mesh.vertex_count, target=target)
    cands = res.stats["candidates"]
    reference = cands["meshoptimizer"]["invocations"]

    def worst(name):
        return max(cands[name]["invocations"][p] / reference[p] for p in reference)
    batch = [n for n in cands if n.startswith("batch@") and " + " not in n]
    nearest = min(batch, key=lambda n: (worst(n), cands[n]["objective"]))
    assert _screened(res) == ["meshoptimizer", nearest, "layers"]
    assert cands["layers"]["invocations"]["intel"] < reference["intel"]
    # the search goes on from the screened order with the lowest objective and is the choice
    screened = {s: cands.get(f"{s} + screen", cands[s])["objective"] for s in _screened(res) if s != "input"}
    best = min(screened, key=screened.get)
    assert res.stats["candidate"] == f"{best} + search"
    # the result given again beats meshoptimizer's order somewhere: the input is a start again
    again = optimize_for_target(np.asarray(res.triangles, np.int64), len(res.vertex_remap), target=target)
    assert "input" in _screened(again)
    assert cands[res.stats["candidate"]]["objective"] < screened[best]
    given = dict(zip(reference, judged(tris, mesh.vertex_count, target), strict=True))
    assert all(res.stats["invocations"][p] <= min(reference[p], given[p]) for p in reference)
    assert codec_bits(res.triangles).raw <= CODEC_SLACK * codec_bits(_reference(tris, mesh.vertex_count)).raw


def test_a_scan_screens_no_layers_and_the_work_bound_holds_for_the_whole_run():
    mesh = meshes.torus(60, 30)
    tris = _shuffled(mesh)
    target = get_target("portable")
    for work in (0, 200_000, 2_000_000):
        res = optimize_for_target(tris, mesh.vertex_count, target=target, window_work=work)
        done = sum(s["work"] for s in res.stats["searches"])
        # each search stops at its first trial past the bound: a window and its judgement past it
        assert done <= work + len(res.stats["searches"]) * 20_000
        assert (done == 0) == (work == 0) and bool(res.stats["searches"]) == (work > 0)
    dragon = _shared_mesh("dragon_res3")
    res = optimize_for_target(dragon.triangles, dragon.vertex_count, target=target)
    assert "layers" not in _screened(res) and "layers" not in res.stats["candidates"]   # long fronts


def test_the_result_is_the_same_on_any_number_of_cores(monkeypatch, tmp_path):
    import meshopt_batch.support.parallel as parallel
    mesh = meshes.uv_sphere(16, 32)
    tris = _shuffled(mesh)
    target = get_target("portable")
    src = tmp_path / "in.ply"
    save_mesh(mesh.with_triangles(tris), src)
    runs = []
    for count in (1, 2, 4):
        monkeypatch.setattr(parallel, "cores", lambda count=count: count)
        runs.append((_digest(optimize_for_target(tris, mesh.vertex_count, target=target)),
                     optimize_file(src, tmp_path / f"out{count}.ply").profiles,
                     (tmp_path / f"out{count}.ply").read_bytes()))
    assert runs[0] == runs[1] == runs[2]


def test_the_objective_is_the_sum_of_the_ratios_plus_the_worst_and_chooses_within_the_caps():
    reference = np.array([100, 200, 50])
    assert objective([100, 200, 50], reference) == pytest.approx(4.0)
    assert objective([90, 200, 55], reference) == pytest.approx(0.9 + 1 + 1.1 + 1.1)
    assert list(caps(reference, [120, 150, 50], [95, 170, 60])) == [100, 170, 60]
    given = np.array([110, 210, 60])
    candidates = {"meshoptimizer": reference, "a": np.array([95, 195, 50]), "b": np.array([80, 180, 51]),
                  "c": np.array([99, 199, 49])}
    codec = {"meshoptimizer": 10.0, "a": 10.0, "b": 10.0, "c": 10.5}.__getitem__
    # b is lowest but above meshoptimizer's order on one profile; c is over the codec slack
    assert choose(candidates, "meshoptimizer", given, codec) == "a"
    assert choose({**candidates, "a": np.array([95, 201, 50])}, "meshoptimizer", given, codec) == "meshoptimizer"
    # where meshoptimizer's order and ours are above the input somewhere, ours within the input's figures
    assert choose(candidates, "meshoptimizer", np.array([90, 300, 60]), codec) == "b"
    assert choose(candidates, "meshoptimizer", np.array([10, 10, 10]), codec) is None


def test_every_tuned_constant_is_in_one_table_with_what_it_was_tuned_on():
    import meshopt_batch.optimizers.portable.tuning as tuning
    names = {row.name for row in TABLE}
    constants = {n for n in tuning.__all__ if n.isupper() and n != "TABLE"}
    assert names == constants
    assert all(row.tuned_on and getattr(tuning, row.name) is row.value for row in TABLE)


def test_a_set_of_two_profiles_is_never_worse_on_either():
    mesh = meshes.icosphere(3)
    tris = _shuffled(mesh, 7)
    options = SetOptions(get_method("forsyth"), get_target("nvidia_gl,amd"))
    buf = optimize_vertex_set(None, [tris], mesh.vertex_count, options).buffers[0]
    assert set(buf.before_all) == {"nvidia_gl", "amd"}
    assert all(buf.after_all[k] <= buf.before_all[k] for k in buf.before_all)


def test_methods_without_targets_say_so():
    mesh = meshes.icosphere(2)
    with pytest.raises(MeshoptBatchError, match="one profile"):
        optimize(mesh.triangles, mesh.vertex_count, method="batch+overdraw", positions=mesh.positions,
                 profile="portable")
    res = optimize(mesh.triangles, mesh.vertex_count, method="batch+overdraw", positions=mesh.positions)
    assert res.stats["profile"] == "nvidia_gl"     # a one-profile method's default


def test_trimesh_in_trimesh_out():
    rng = np.random.default_rng(0)
    tm = trimesh.creation.icosphere(4)
    tm.faces = tm.faces[rng.permutation(len(tm.faces))]
    tm.vertex_attributes["heat"] = rng.random(len(tm.vertices))
    tm.visual = trimesh.visual.ColorVisuals(tm, vertex_colors=rng.integers(0, 255, (len(tm.vertices), 4), np.uint8))
    res = optimize(tm)
    out = res.apply(tm)
    assert isinstance(out, trimesh.Trimesh) and out is not tm
    assert len(out.faces) == len(tm.faces) and len(out.vertices) == len(tm.vertices)

    def corners(m):
        rows = np.concatenate([m.vertices[m.faces].reshape(-1, 3), m.vertex_attributes["heat"][m.faces].reshape(-1, 1),
                               np.asarray(m.visual.vertex_colors)[m.faces].reshape(-1, 4)], axis=1)
        tri = rows.reshape(-1, 3, 8)
        keys = [tuple(sorted(map(tuple, t))) for t in tri]
        return sorted(keys)

    assert corners(out) == corners(tm)
    before = predict(tm.faces, len(tm.vertices), profile="amd").invocations
    assert predict(out.faces, len(out.vertices), profile="amd").invocations < before


def test_optimize_file_with_keyword_options(tmp_path):
    src = tmp_path / "in.ply"
    mesh = meshes.torus(40, 20)
    save_mesh(mesh.with_triangles(_shuffled(mesh)), src)
    report = optimize_file(src, tmp_path / "out.ply")
    assert report.target == "portable" and set(report.profiles) == set(PORTABLE)
    assert all(v["after"] < v["before"] for v in report.profiles.values())
    single = optimize_file(src, tmp_path / "nv.ply", profile="nvidia_gl", weld=False)
    assert single.target == "nvidia_gl" and single.after["invocations"] < single.before["invocations"]
    with pytest.raises(MeshoptBatchError, match="unknown option"):
        optimize_file(src, tmp_path / "x.ply", colour=True)


def test_compare_shipped_cli(tmp_path, capsys):
    src = tmp_path / "in.ply"
    mesh = meshes.icosphere(3)
    save_mesh(mesh.with_triangles(_shuffled(mesh)), src)
    assert main(["compare", str(src), "--shipped", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = {r["order"]: r for r in out["table"]}
    assert rows["meshoptimizer"]["worst"] == pytest.approx(1.0)
    assert set(rows) >= {"input", "batch@nvidia_gl", "batch@amd", "batch@portable", "hoppe", "forsyth"}
    assert rows["batch@portable"]["worst"] <= 1.0
    assert main(["compare", str(src), "--shipped", "-p", "nvidia_gl,amd"]) == 0
    text = capsys.readouterr().out
    assert "batch@nvidia_gl,amd" in text and "worst" in text


def test_codec_bits_ignores_vertex_numbers():
    mesh = meshes.icosphere(3)
    tris = _shuffled(mesh)
    perm = np.random.default_rng(1).permutation(mesh.vertex_count)
    assert codec_bits(tris) == codec_bits(perm[tris], mesh.vertex_count)
    assert codec_bits(_reference(tris, mesh.vertex_count)).raw < codec_bits(tris).raw
    # the optimizer's raw-only figure is the same number, without the zlib pass
    assert raw_codec_bits(perm[tris], mesh.vertex_count) == codec_bits(tris).raw
    assert raw_codec_bits(np.zeros((0, 3), np.int64)) == codec_bits(np.zeros((0, 3), np.int64)).raw == 0.0


def _miss_everywhere_else(numbered, vertex_count, profiles):
    from meshopt_batch.model.reuse_kernels import run_kernel

    free = np.full(numbered.shape[0], 7, np.uint8)
    for p in profiles:
        if not p.boundary_16bit:
            marks = np.zeros(numbered.shape[0], np.uint8)
            run_kernel(p, numbered, vertex_count, np.zeros(numbered.shape[0] + 1, np.int64),
                       np.zeros(0, np.int64), marks)
            free &= marks
    return free


def test_numbering_in_blocks_leaves_the_other_gpus_exactly_as_they_were():
    from meshopt_batch.optimizers.batch.boundary16 import mixed_batches, number_in_blocks

    mesh = meshes.grid(300)                       # 90,601 vertices: two 2^16 blocks
    numbered = _reference(mesh.triangles, mesh.vertex_count)
    target = get_target("portable")
    profiles = target.evaluation_profiles(mesh.vertex_count)
    free = _miss_everywhere_else(numbered, mesh.vertex_count, profiles)
    out, remap = number_in_blocks(numbered, mesh.vertex_count, free, modulus=256)
    assert np.array_equal(remap[out], numbered)                       # the same triangles, in order
    assert np.array_equal(np.unique(remap), np.arange(mesh.vertex_count))
    assert np.array_equal(out % 256, numbered % 256)                  # llvmpipe's slots
    assert out.max() < remap.shape[0] < 1.05 * mesh.vertex_count
    before, after = judged(numbered, mesh.vertex_count, target), judged(out, remap.shape[0], target)
    for p, a, b in zip(profiles, after, before, strict=True):
        assert (a < b) if p.boundary_16bit else (a == b), p.name
    assert mixed_batches(out, remap.shape[0]) < mixed_batches(numbered, mesh.vertex_count) // 10
    # without residues llvmpipe is no longer bound to its slots; with no corner free, nothing moves
    loose = judged(*(lambda o, r: (o, r.shape[0]))(*number_in_blocks(numbered, mesh.vertex_count, free)), target)
    assert loose[2:4] == before[2:4]
    same, ident = number_in_blocks(numbered, mesh.vertex_count, np.zeros(numbered.shape[0], np.uint8), modulus=256)
    assert np.array_equal(same, numbered) and np.array_equal(ident, np.arange(mesh.vertex_count))
    with pytest.raises(ValueError, match="first use"):
        number_in_blocks(numbered[::-1], mesh.vertex_count, free[::-1])
    with pytest.raises(ValueError, match="modulus"):
        number_in_blocks(numbered, mesh.vertex_count, free, modulus=300)


def test_portable_past_two_to_the_sixteen_vertices_numbers_meshoptimizers_order_in_blocks():
    mesh = meshes.grid(370)                       # 273,800 triangles: above LARGE, no batch candidate
    target = get_target("portable")
    res = optimize_for_target(mesh.triangles, mesh.vertex_count, target=target)
    assert set(res.stats["candidates"]) == {"meshoptimizer", "meshoptimizer in blocks"}
    assert res.stats["candidate"] == "meshoptimizer in blocks"
    source = np.asarray(res.vertex_remap, np.int64)
    assert np.array_equal(_corner_sets(source[np.asarray(res.triangles, np.int64)]), _corner_sets(mesh.triangles))
    got = judged(res.triangles, len(source), target)
    ref = judged(_reference(mesh.triangles, mesh.vertex_count), mesh.vertex_count, target)
    assert got[0] < ref[0] and got[1] < ref[1] and got[2:] == ref[2:]


def test_portable_numbers_bunny_sub2_in_blocks():
    mesh = _shared_mesh("bunny_sub2")
    target = get_target("portable")
    res = optimize_for_target(mesh.triangles, mesh.vertex_count, target=target)
    assert res.stats["candidate"] == "meshoptimizer in blocks"
    got = judged(res.triangles, len(res.vertex_remap), target)
    ref = judged(_reference(mesh.triangles, mesh.vertex_count), mesh.vertex_count, target)
    assert got[0] < 0.85 * ref[0] and got[2:] == ref[2:]   # NVIDIA; AMD, Intel, llvmpipe exactly as they were


def test_numbering_in_blocks_grows_and_keeps_residues_when_copies_crowd_one_residue():
    from meshopt_batch.optimizers.batch.boundary16 import number_in_blocks

    filled = np.arange(3 * 22_000).reshape(-1, 3)                  # past the first block
    old = 256 * (np.arange(2_000) % 250)                            # earlier vertices, one residue
    new = 66_000 + np.arange(4_000).reshape(-1, 2)
    tris = np.concatenate((filled, np.column_stack((old, new))))
    count = 70_000
    out, remap = number_in_blocks(tris, count, np.full(tris.shape[0], 7, np.uint8), modulus=256)
    assert np.array_equal(remap[out], tris) and np.array_equal(out % 256, tris % 256)
    blocks = out >> 16
    assert np.all(blocks.min(axis=1) == blocks.max(axis=1))         # no triangle spans two blocks
    assert remap.shape[0] > 3 << 16            # the copies' column took more blocks than first allocated
    portable = get_target("portable")
    res = optimize_for_target(tris, count, target=portable)
    assert res.stats["vertices_out"] <= 1.25 * count               # such a numbering is not taken


def test_a_candidate_numbered_otherwise_is_numbered_in_blocks_from_its_first_use():
    mesh = meshes.grid(300)
    tris = np.asarray(mesh.triangles, np.int64)
    pool = Pool(tris, mesh.vertex_count, get_target("portable"))
    flat = np.ascontiguousarray(tris, np.uint32).reshape(-1)
    order = np.empty_like(flat)
    meshoptimizer.optimize_vertex_cache(order, flat, flat.size, mesh.vertex_count)
    order = order.reshape(-1, 3).astype(np.int64)                       # in the input's numbers
    shuffle = np.random.default_rng(3).permutation(mesh.vertex_count)    # new -> input vertex
    inverse = np.empty_like(shuffle)
    inverse[shuffle] = np.arange(mesh.vertex_count)
    pool.add("shuffled", inverse[order], shuffle)
    add_in_blocks(pool)
    blocks = pool["shuffled in blocks"]
    assert np.array_equal(_corner_sets(blocks.original), _corner_sets(tris))
    assert list(blocks.invocations[2:4]) == list(pool["shuffled"].invocations[2:4])   # AMD, Intel
