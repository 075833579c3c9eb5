"""glTF input hardening: external files, accessor memory, the node hierarchy, and output sets
written all or none.

* External buffer and image URIs must name regular files: ``/dev/zero``, a FIFO or a
  directory is refused with one line naming the URI (no endless read, no hang); a buffer
  file must hold its declared ``byteLength`` and only those bytes are read; what is read
  must fit in the memory available.
* The arrays a read materializes (accessors without a ``bufferView`` are zeros of any
  ``count``; one view can back many accessors; every primitive reads its own) are summed and
  checked against the memory available before anything is allocated.
* The nodes must form disjoint trees and a scene list roots: a cycle, a second parent or a
  listed child is refused with its JSON pointer.
* A ``.gltf`` output with companion files (``.bin``, textures) that cannot all be written
  is refused before any is written; :func:`~meshopt_batch.io.gltf.file_packaging.write_file_set`
  writes a set to temporaries and renames them only when all are written.

Every input is built in ``tmp_path``; the command line runs in this process (``main``).
"""

from __future__ import annotations

import errno
import json
import os
import threading
from pathlib import Path

import numpy as np
import pytest

from meshopt_batch.io import load_meshes, save_mesh
from meshopt_batch.io.gltf import file_packaging
from meshopt_batch.io.gltf.glb_container import serialize_gltf
from meshopt_batch.io.gltf.gltf_document import read_document
from meshopt_batch.support import limits
from meshopt_batch.support.errors import MeshError, MeshoptBatchError
from meshopt_batch.support.files import TEMP_MARK
from meshopt_batch_app.cli import main

ERROR = "meshopt-batch: error: "
GiB = 1 << 30
PNG = b"\x89PNG\r\n\x1a\n" + bytes(64)

# one triangle: three float32 positions (36 bytes), then three uint16 indices (6 + 2 padding)
POSITIONS = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32).tobytes()
INDICES = np.array([0, 1, 2, 0], np.uint16).tobytes()
BLOB = POSITIONS + INDICES


def triangle_doc(uri: str | None = "tri.bin", byte_length: int = len(BLOB)) -> dict:
    """A one-triangle document whose buffer is ``uri`` (None: the GLB's BIN chunk)."""
    buf = {"byteLength": byte_length} if uri is None else {"uri": uri, "byteLength": byte_length}
    return {
        "asset": {"version": "2.0"}, "scene": 0, "scenes": [{"nodes": [0]}], "nodes": [{"mesh": 0}],
        "meshes": [{"primitives": [{"attributes": {"POSITION": 0}, "indices": 1}]}],
        "buffers": [buf],
        "bufferViews": [{"buffer": 0, "byteLength": 36}, {"buffer": 0, "byteOffset": 36, "byteLength": 6}],
        "accessors": [{"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3",
                       "min": [0, 0, 0], "max": [1, 1, 0]},
                      {"bufferView": 1, "componentType": 5123, "count": 3, "type": "SCALAR"}],
    }


def write_gltf(folder: Path, doc: dict, name: str = "in.gltf", blob: bytes | None = BLOB) -> Path:
    """``doc`` as ``folder/name``, with ``tri.bin`` beside it (unless ``blob`` is None)."""
    folder.mkdir(parents=True, exist_ok=True)
    if blob is not None:
        (folder / "tri.bin").write_bytes(blob)
    path = folder / name
    path.write_text(json.dumps(doc))
    return path


def with_image(doc: dict, uri: str) -> dict:
    """``doc`` with one image file (a texture's base colour)."""
    doc.update(images=[{"uri": uri}], textures=[{"source": 0}],
               materials=[{"pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}}])
    doc["meshes"][0]["primitives"][0]["material"] = 0
    return doc


def one_error(capsys, code: int) -> str:
    """The one stderr line of a run that exited with 2 (without the prefix)."""
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(ERROR) and "Traceback" not in err, err
    return lines[0][len(ERROR):]


def left_in(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


def no_temporaries(folder: Path) -> None:
    left = [p for p in folder.rglob("*") if TEMP_MARK in p.name or p.name.endswith(".tmp")]
    assert not left, left


class FifoGuard:
    """Unblocks a reader stuck opening ``fifo`` (opens it for writing, closes it: EOF), so a
    regression fails the test instead of hanging it."""

    def __init__(self, fifo: Path):
        self.fifo, self.stop = fifo, threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self.stop.wait(0.2):
            try:
                fd = os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK)  # succeeds only with a reader waiting
            except OSError:
                continue
            os.close(fd)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(5)


# ----------------------------------------------------------------------------- external files
def test_buffer_uri_naming_dev_zero_is_refused_without_reading(tmp_path, capsys):
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero")
    src = write_gltf(tmp_path, triangle_doc("/dev/zero"), blob=None)
    msg = one_error(capsys, main(["analyze", str(src)]))
    assert msg == f"{src}: buffer 0 file '/dev/zero' is a character device, not a regular file"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("command", ["analyze", "optimize"])
def test_buffer_uri_naming_a_fifo_is_refused_without_waiting(tmp_path, capsys, command):
    src = write_gltf(tmp_path, triangle_doc("pipe.bin"), blob=None)
    os.mkfifo(tmp_path / "pipe.bin")
    out = tmp_path / "out" / "o.gltf"
    out.parent.mkdir()
    argv = [command, str(src)] + (["-o", str(out)] if command == "optimize" else [])
    with FifoGuard(tmp_path / "pipe.bin"):
        msg = one_error(capsys, main(argv))
    assert msg == f"{src}: buffer 0 file 'pipe.bin' is a FIFO (named pipe), not a regular file"
    assert left_in(out.parent) == set()


def test_buffer_uri_naming_a_directory_is_refused(tmp_path, capsys):
    (tmp_path / "sub").mkdir()
    src = write_gltf(tmp_path, triangle_doc("sub"), blob=None)
    msg = one_error(capsys, main(["analyze", str(src)]))
    assert msg == f"{src}: buffer 0 file 'sub' is a directory, not a regular file"


def test_missing_buffer_file_is_one_line(tmp_path, capsys):
    src = write_gltf(tmp_path, triangle_doc("absent.bin"), blob=None)
    msg = one_error(capsys, main(["analyze", str(src)]))
    assert msg.startswith(f"{src}: buffer 0 file 'absent.bin' is missing or unreadable (")


def test_buffer_file_shorter_than_its_byte_length_is_refused_before_reading(tmp_path, capsys):
    src = write_gltf(tmp_path, triangle_doc(byte_length=10**16))
    msg = one_error(capsys, main(["analyze", str(src)]))
    assert msg == f"{src}: buffer 0 file 'tri.bin' has 44 bytes, 10,000,000,000,000,000 declared (byteLength)"


def test_only_the_declared_bytes_of_a_buffer_file_are_read(tmp_path):
    src = write_gltf(tmp_path, triangle_doc(), blob=BLOB + b"\xff" * 4096)
    got = read_document(src.read_bytes(), src)
    assert got.stored == [BLOB]
    (mesh,) = load_meshes(src)
    assert mesh.positions.tolist() == [[0, 0, 0], [1, 0, 0], [0, 1, 0]]


def test_buffer_file_larger_than_the_memory_available_is_refused(tmp_path, capsys, monkeypatch):
    n = 64 << 20
    src = write_gltf(tmp_path, triangle_doc("big.bin", byte_length=n), blob=None)
    with open(tmp_path / "big.bin", "wb") as fh:  # sparse: no disk space used
        fh.truncate(n)
    monkeypatch.setattr(limits, "available_memory", lambda: 32 << 20)
    msg = one_error(capsys, main(["analyze", str(src)]))
    assert msg == (f"{src}: reading buffer 0 file 'big.bin' ({n:,} bytes) needs about 64.0 MiB, more than "
                   "the 32.0 MiB of memory available")


def test_absolute_and_parent_uris_are_still_read(tmp_path, capsys):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "tri.bin").write_bytes(BLOB)
    for uri in (str(tmp_path / "data" / "tri.bin"), "../data/tri.bin"):
        src = write_gltf(tmp_path / "gltf", triangle_doc(uri), blob=None)
        assert main(["analyze", str(src)]) == 0, capsys.readouterr().err
        capsys.readouterr()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("source, output", [("in.gltf", "o.glb"), ("in.glb", "o.gltf")])
def test_image_uri_naming_a_fifo_is_refused_and_nothing_is_written(tmp_path, capsys, source, output):
    # the other container, so the output is packaged (not copied through): the image is
    # embedded (.glb) or copied (.gltf)
    if source == "in.glb":
        src = tmp_path / source
        src.write_bytes(serialize_gltf(with_image(triangle_doc(None), "tex.png"), BLOB, src))
    else:
        src = write_gltf(tmp_path, with_image(triangle_doc(), "tex.png"), name=source)
    os.mkfifo(tmp_path / "tex.png")
    out = tmp_path / "out"
    out.mkdir()
    with FifoGuard(tmp_path / "tex.png"):
        msg = one_error(capsys, main(["optimize", str(src), "-o", str(out / output)]))
    assert msg == f"{src}: image file 'tex.png' is a FIFO (named pipe), not a regular file"
    assert left_in(out) == set()


def test_image_file_larger_than_the_memory_available_is_refused(tmp_path, capsys, monkeypatch):
    src = write_gltf(tmp_path, with_image(triangle_doc(), "tex.png"))
    n = 256 << 20
    with open(tmp_path / "tex.png", "wb") as fh:
        fh.write(PNG)
        fh.truncate(n)
    monkeypatch.setattr(limits, "available_memory", lambda: 128 << 20)
    out = tmp_path / "out"
    out.mkdir()
    msg = one_error(capsys, main(["optimize", str(src), "-o", str(out / "o.glb")]))
    assert msg == (f"{src}: reading image file 'tex.png' ({n:,} bytes) needs about 256 MiB, more than the "
                   "128 MiB of memory available")
    assert left_in(out) == set()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_write_back_refuses_an_image_that_is_not_a_regular_file(tmp_path):
    src = write_gltf(tmp_path, with_image(triangle_doc(), "tex.png"))
    meshes = load_meshes(src)
    os.mkfifo(tmp_path / "tex.png")
    with FifoGuard(tmp_path / "tex.png"), pytest.raises(MeshError, match="image file 'tex.png' is a FIFO"):
        save_mesh(meshes, tmp_path / "o.glb", source=src)
    assert not (tmp_path / "o.glb").exists()


# ----------------------------------------------------------------------------- accessor memory
def zero_doc(counts: list[int], prims_per_accessor: int = 1) -> dict:
    """A document of VEC3 POSITION accessors without a bufferView (all zeros), each drawn by
    ``prims_per_accessor`` non-indexed triangle primitives."""
    return {
        "asset": {"version": "2.0"}, "scenes": [{"nodes": [0]}], "nodes": [{"mesh": 0}],
        "accessors": [{"componentType": 5126, "count": c, "type": "VEC3"} for c in counts],
        "meshes": [{"primitives": [{"attributes": {"POSITION": a}} for a in range(len(counts))
                                   for _ in range(prims_per_accessor)]}],
    }


def test_huge_zero_filled_accessor_is_refused_before_allocating(tmp_path, capsys, monkeypatch):
    # 1e9 VEC3 float32 is 11.2 GiB: fits 16 GiB alone (the schema's one-accessor check), not
    # with the read's copies
    monkeypatch.setattr(limits, "available_memory", lambda: 16 * GiB)
    src = write_gltf(tmp_path, zero_doc([10**9]), blob=None)
    assert src.stat().st_size < 1024
    for argv in (["analyze", str(src)], ["optimize", str(src), "-o", str(tmp_path / "o.glb")]):
        msg = one_error(capsys, main(argv))
        assert msg == (f"{src}: reading the triangle primitives' accessors (11.2 GiB of arrays, 3 copies; the "
                       "largest, /accessors/0, 1,000,000,000 VEC3 elements without a bufferView) needs about "
                       "33.5 GiB, more than the 16.0 GiB of memory available")
    assert left_in(tmp_path) == {"in.gltf"}


def test_accessors_that_fit_one_by_one_are_summed(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(limits, "available_memory", lambda: GiB)
    src = write_gltf(tmp_path, zero_doc([20_000_001] * 10), blob=None)  # 229 MiB each
    msg = one_error(capsys, main(["analyze", str(src)]))
    assert msg.startswith(f"{src}: reading the triangle primitives' accessors (2.2 GiB of arrays, 3 copies; ")
    assert msg.endswith("needs about 6.7 GiB, more than the 1.0 GiB of memory available")


def test_an_accessor_drawn_by_several_primitives_counts_once_per_read(tmp_path, capsys, monkeypatch):
    # 50 M vertices (572 MiB) read by 3 primitives: once fits 4 GiB, three times does not
    monkeypatch.setattr(limits, "available_memory", lambda: 4 * GiB)
    src = write_gltf(tmp_path, zero_doc([50_000_000], prims_per_accessor=3), blob=None)
    msg = one_error(capsys, main(["analyze", str(src)]))
    assert msg == (f"{src}: reading 3 triangle primitive(s) (1.7 GiB of arrays, 3 copies; the largest, "
                   "/accessors/0, 50,000,000 VEC3 elements without a bufferView) needs about 5.0 GiB, more "
                   "than the 4.0 GiB of memory available")


def test_an_accessor_larger_than_its_buffer_view_is_refused_by_the_view(tmp_path, capsys):
    doc = triangle_doc()
    doc["accessors"][0]["count"] = 4_000_000_000
    src = write_gltf(tmp_path, doc)
    msg = one_error(capsys, main(["analyze", str(src)]))
    assert msg == f"{src}: mesh 0 (mesh0) primitive 0: accessor 0 runs past the end of its bufferView"


def test_small_documents_still_read(tmp_path, capsys):
    src = write_gltf(tmp_path, zero_doc([3]), blob=None)
    assert main(["analyze", str(src)]) == 0, capsys.readouterr().err
    src = write_gltf(tmp_path, triangle_doc(), name="tri.gltf")
    assert main(["analyze", str(src)]) == 0, capsys.readouterr().err


# ----------------------------------------------------------------------------- output file sets
def glb_with_image(folder: Path) -> Path:
    """A GLB with an external image: its .gltf output is ``o.gltf``, ``o.bin`` and ``tex.png``."""
    folder.mkdir(parents=True, exist_ok=True)
    src = folder / "in.glb"
    src.write_bytes(serialize_gltf(with_image(triangle_doc(None), "tex.png"), BLOB, src))
    (folder / "tex.png").write_bytes(PNG)
    return src


@pytest.mark.parametrize("in_the_way", ["tex.png", "o.gltf"])
def test_a_directory_in_the_way_of_one_file_writes_none_of_the_set(tmp_path, capsys, in_the_way):
    src = glb_with_image(tmp_path / "src")
    out = tmp_path / "out"
    out.mkdir()
    (out / "o.bin").write_bytes(b"old")  # an existing companion must stay as it was
    (out / in_the_way).mkdir()
    msg = one_error(capsys, main(["optimize", str(src), "-o", str(out / "o.gltf")]))
    assert msg == f"{src}: output file {out / in_the_way} is a directory"
    assert left_in(out) == {"o.bin", in_the_way}
    assert (out / "o.bin").read_bytes() == b"old"
    no_temporaries(out)


def test_the_whole_set_is_written_when_nothing_is_in_the_way(tmp_path, capsys):
    src = glb_with_image(tmp_path / "src")
    out = tmp_path / "out"
    out.mkdir()
    assert main(["optimize", str(src), "-o", str(out / "o.gltf")]) == 0, capsys.readouterr().err
    assert left_in(out) == {"o.gltf", "o.bin", "tex.png"}
    assert (out / "tex.png").read_bytes() == PNG
    no_temporaries(out)


def test_a_copied_through_set_with_a_directory_in_the_way_writes_none(tmp_path, capsys):
    src = write_gltf(tmp_path / "src", with_image(triangle_doc(), "tex.png"))
    (src.parent / "tex.png").write_bytes(PNG)
    out = tmp_path / "out"
    out.mkdir()
    (out / "tex.png").mkdir()
    assert main(["optimize", str(src), "-o", str(out / "o.gltf")]) == 2
    capsys.readouterr()
    assert left_in(out) == {"tex.png"}


def test_write_file_set_removes_every_temporary_when_one_write_fails(tmp_path, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    (out / "o.bin").write_bytes(b"old")
    files = [(out / "o.gltf", b"{}"), (out / "o.bin", b"new"), (out / "textures" / "a.png", PNG)]
    real_open, calls = open, []

    def failing_open(path, mode="r", *args, **kw):
        calls.append(path)
        if len(calls) == 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_open(path, mode, *args, **kw)

    monkeypatch.setattr(file_packaging, "open", failing_open, raising=False)
    with pytest.raises(MeshoptBatchError, match=r"a\.png: cannot write: No space left on device"):
        file_packaging.write_file_set(files)
    assert left_in(out) == {"o.bin"}  # no o.gltf, no temporaries, the created folder removed
    assert (out / "o.bin").read_bytes() == b"old"


def test_write_file_set_writes_all_and_refuses_a_blocked_target_first(tmp_path):
    out = tmp_path / "out"
    files = [(out / "o.gltf", b"{}"), (out / "o.bin", b"new"), (out / "textures" / "a.png", PNG)]
    out.mkdir()
    (out / "o.bin").mkdir()
    with pytest.raises(Exception, match=r"output file .*o\.bin is a directory"):
        file_packaging.write_file_set(files)
    assert left_in(out) == {"o.bin"}
    (out / "o.bin").rmdir()
    file_packaging.write_file_set(files + [(out / "o.bin", b"duplicate")])
    assert (out / "o.gltf").read_bytes() == b"{}" and (out / "o.bin").read_bytes() == b"new"
    assert (out / "textures" / "a.png").read_bytes() == PNG
    no_temporaries(out)


# ------------------------------------------------------------------------------ node hierarchy
@pytest.mark.parametrize("nodes, scene_nodes, message", [
    ([{"mesh": 0, "children": [1]}, {"children": [0]}], [0],
     "/nodes/1: node 1 is its own ancestor (the nodes must form disjoint trees)"),
    ([{"mesh": 0, "children": [0]}], [0], "/nodes/0/children/0: node 0 is itself (the nodes must form disjoint trees)"),
    ([{"mesh": 0, "children": [2]}, {"children": [2]}, {}], [0, 1],
     "/nodes/1/children/0: node 2 is already a child of node 0 (the nodes must form disjoint trees)"),
    ([{"mesh": 0, "children": [1]}, {}], [0, 1], "/scenes/0/nodes/1: node 1 is not a root (a child of node 0)"),
])
def test_a_node_hierarchy_that_is_not_a_forest_is_refused(tmp_path, capsys, nodes, scene_nodes, message):
    doc = {**triangle_doc(), "nodes": nodes, "scenes": [{"nodes": scene_nodes}]}
    src = write_gltf(tmp_path, doc)
    assert one_error(capsys, main(["analyze", str(src)])) == f"{src}: {message}"
