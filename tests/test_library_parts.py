"""The parts of a library run on their own: schedule, memory estimate, manifest, cache key."""

import json
import struct

import pytest

import meshes
from meshopt_batch.assets.file_optimization import AssetOptions
from meshopt_batch.io import save_mesh
from meshopt_batch.model.profiles import get_profile
from meshopt_batch.optimizers import get_method
from meshopt_batch.support.errors import MeshoptBatchError
from meshopt_batch_app.library.dispatch import Job, WorkerLost, run_jobs
from meshopt_batch_app.library.fingerprint import cache_key, fingerprint, options_fingerprint
from meshopt_batch_app.library.manifest import ManifestWriter, read_manifest, write_manifest
from meshopt_batch_app.library.memory import estimate_memory, estimate_triangles, parse_size

OPTIONS = AssetOptions(get_method("batch"), get_profile("nvidia_gl"), {"use_distance": True})


class FakeBackend:
    """Runs nothing: records what is in flight at each start; results come back in start order."""

    def __init__(self, slots, lose=()):
        self.slots = slots
        self.flight, self.log, self.lose, self.restarts = [], [], set(lose), 0

    def submit(self, job):
        self.flight.append(job)
        self.log.append((job.index, sorted(j.index for j in self.flight)))
        return (job.index, len(self.log))

    def wait(self, futures):
        return [futures[0]]

    def result(self, future):
        job = next(j for j in self.flight if j.index == future[0])
        self.flight.remove(job)
        if job.index in self.lose:
            raise WorkerLost("worker process died")
        return {"index": job.index}

    def restart(self):
        self.restarts += 1


def run(jobs, backend, budget):
    done, lost = [], []
    run_jobs(jobs, backend, budget, lambda j, f: done.append(f["index"]), lambda j, m: lost.append((j.index, m)))
    return done, lost


def test_largest_first_within_slots():
    backend = FakeBackend(2)
    done, _ = run([Job(i, None, m) for i, m in enumerate([1, 5, 3, 4, 2])], backend, budget=100)
    assert [i for i, _ in backend.log] == [1, 3, 2, 4, 0]
    assert max(len(f) for _, f in backend.log) == 2
    assert sorted(done) == [0, 1, 2, 3, 4]


def test_memory_budget_never_exceeded_and_the_largest_is_not_overtaken():
    backend = FakeBackend(4)
    sizes = [6, 5, 4, 1, 1]
    run([Job(i, None, m) for i, m in enumerate(sizes)], backend, budget=7)
    for _, flight in backend.log:
        assert len(flight) == 1 or sum(sizes[i] for i in flight) <= 7
    assert backend.log == [(0, [0]), (1, [1]), (2, [2]), (3, [2, 3]), (4, [2, 3, 4])]


def test_a_file_over_the_budget_runs_alone():
    backend = FakeBackend(2)
    run([Job(0, None, 50), Job(1, None, 2), Job(2, None, 1)], backend, budget=10)
    assert backend.log[0] == (0, [0])


def test_jobs_with_one_lock_never_overlap():
    backend = FakeBackend(3)
    run([Job(0, None, 3, "a"), Job(1, None, 2, "a"), Job(2, None, 1, "b")], backend, budget=100)
    assert backend.log == [(0, [0]), (2, [0, 2]), (1, [1, 2])]


def test_lost_worker_retries_alone_then_fails():
    backend = FakeBackend(2, lose={0})
    done, lost = run([Job(0, None, 5), Job(1, None, 4), Job(2, None, 3)], backend, budget=100)
    assert lost == [(0, "worker process died")]
    assert sorted(done) == [1, 2]
    alone_runs = [flight for i, flight in backend.log if i == 0]
    assert alone_runs == [[0], [0]]
    assert backend.restarts == 2


def test_parse_size():
    assert parse_size("512M") == 512 << 20
    assert parse_size("1.5GiB") == 3 << 29
    assert parse_size("4g") == 4 << 30
    assert parse_size("1000") == 1000
    for bad in ("lots", "0", "-1G", "5X"):
        with pytest.raises(MeshoptBatchError, match="--max-memory"):
            parse_size(bad)


def test_triangle_estimates_read_headers(tmp_path):
    torus = meshes.torus(12, 7)
    save_mesh(torus, tmp_path / "t.ply")
    save_mesh(torus, tmp_path / "t.glb")
    save_mesh(torus, tmp_path / "t.gltf")
    (tmp_path / "t.off").write_text("OFF\n# comment\n4 2 0\n0 0 0\n1 0 0\n0 1 0\n1 1 0\n3 0 1 2\n3 1 3 2\n")
    (tmp_path / "t.stl").write_bytes(b"\0" * 80 + struct.pack("<I", 3) + b"\0" * 150)
    (tmp_path / "t.obj").write_bytes(b"x" * 4000)
    docs = {s: fingerprint(tmp_path / f"t{s}").document for s in (".glb", ".gltf")}
    assert estimate_triangles(tmp_path / "t.ply") == 168
    assert estimate_triangles(tmp_path / "t.glb", docs[".glb"]) == 168
    assert estimate_triangles(tmp_path / "t.gltf", docs[".gltf"]) == 168
    assert estimate_triangles(tmp_path / "t.off") == 2
    assert estimate_triangles(tmp_path / "t.stl") == 3
    assert estimate_triangles(tmp_path / "t.obj") == 100
    assert estimate_memory(1000, 10) == (16 << 20) + 3000 + 4000


def test_manifest_skips_a_cut_line_and_the_last_entry_of_a_path_wins(tmp_path):
    path = tmp_path / "manifest.jsonl"
    with ManifestWriter(path) as w:
        w.append({"path": "b", "status": "failed", "error": "x"})
        w.append({"path": "a", "status": "ok"})
        w.append({"path": "b", "status": "ok"})
    with open(path, "ab") as fh:
        fh.write(b'{"path":"c","sta')
    entries = read_manifest(path)
    assert entries == {"a": {"path": "a", "status": "ok"}, "b": {"path": "b", "status": "ok"}}
    write_manifest(path, entries.values())
    assert path.read_text() == '{"path":"a","status":"ok"}\n{"path":"b","status":"ok"}\n'


def test_cache_key_follows_content_options_version_and_references(tmp_path):
    (tmp_path / "a").mkdir()
    doc = {"asset": {"version": "2.0"}, "buffers": [{"uri": "data.bin"}], "images": [{"uri": "tex%20a.png"}]}
    (tmp_path / "a" / "m.gltf").write_text(json.dumps(doc))
    (tmp_path / "a" / "data.bin").write_bytes(b"1234")
    fp = fingerprint(tmp_path / "a" / "m.gltf")
    assert fp.references["tex a.png"] == "missing"
    assert fp.bytes == (tmp_path / "a" / "m.gltf").stat().st_size + 4
    opts = options_fingerprint(OPTIONS)
    key = cache_key(fp, opts, "m.gltf")
    (tmp_path / "b").mkdir()
    for name in ("m.gltf", "data.bin"):
        (tmp_path / "b" / name).write_bytes((tmp_path / "a" / name).read_bytes())
    assert cache_key(fingerprint(tmp_path / "b" / "m.gltf"), opts, "m.gltf") == key
    assert cache_key(fp, opts, "m.gltf", version="0.0.0") != key
    assert cache_key(fp, opts, "m.glb") != key
    other = options_fingerprint(AssetOptions(OPTIONS.method, get_profile("amd"), OPTIONS.method_params))
    assert cache_key(fp, other, "m.gltf") != key
    assert cache_key(fp, options_fingerprint(AssetOptions(OPTIONS.method, OPTIONS.target, {})), "m.gltf") != key
    (tmp_path / "b" / "data.bin").write_bytes(b"1235")
    assert cache_key(fingerprint(tmp_path / "b" / "m.gltf"), opts, "m.gltf") != key
