"""The tests' independent glTF reader: glTF-Transform with meshoptimizer's and Draco's own
decoders (``tests/gltf_triangles.js``, npm packages installed by ``make setup`` into
``.npm-tools/``), and the comparison of what two files draw.

:func:`read_triangles` gives, per triangle primitive, its triangles as tuples of every
corner's attribute values (attributes by semantic, then morph-target deltas), each value a
number: normalized integers as the glTF formula reads them, ``-0.0`` as ``0.0``, NaN as one
fixed value.  :func:`same_triangles` compares two such arrays as multisets, each triangle up
to a rotation of its corners (the ``TRIANGLES`` codec of meshopt compression may rotate
them), optionally with a tolerance on the columns a tolerant weld may change.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
NODE_MODULES = ROOT / ".npm-tools" / "node_modules"
SCRIPT = ROOT / "tests" / "gltf_triangles.js"
DTYPES = {5120: np.int8, 5121: np.uint8, 5122: np.int16, 5123: np.uint16, 5125: np.uint32, 5126: np.float32}
NAN_VALUE = 1e300  # where a NaN was: equal to itself here, as the same bits are in a file
PACKAGES = ("@gltf-transform/core", "@gltf-transform/extensions", "meshoptimizer", "draco3dgltf")


def reader_missing() -> str | None:
    """Why the independent reader cannot run here, or None."""
    if shutil.which("node") is None:
        return "node is not installed (the independent glTF reader runs on node)"
    for p in PACKAGES:
        if not (NODE_MODULES / p).is_dir():
            return f"npm package {p} is not installed in .npm-tools/ (run `make setup` with npm present)"
    return None


def _values(entry: dict) -> np.ndarray:
    raw = np.frombuffer(base64.b64decode(entry["data"]), DTYPES[entry["componentType"]])
    values = raw.astype(np.float64)
    if entry.get("normalized") and raw.dtype.kind in "iu":
        info = np.iinfo(raw.dtype)
        values = np.maximum(values / info.max, -1.0)
    values = values + 0.0  # -0.0 becomes 0.0
    values[np.isnan(values)] = NAN_VALUE
    count = values.size // entry["size"] if entry["size"] else 0
    return values.reshape(count, -1) if count else values.reshape(0, 1)


def _strip_fan(flat: np.ndarray, mode: int) -> np.ndarray:
    if mode == 4:
        return flat.reshape(-1, 3)
    n = flat.size - 2
    if n <= 0:
        return np.zeros((0, 3), np.int64)
    i = np.arange(n)
    if mode == 5:
        return np.stack([flat[i], flat[i + 1 + i % 2], flat[i + 2 - i % 2]], axis=1)
    return np.stack([flat[i + 1], flat[i + 2], np.full(n, flat[0])], axis=1)


def _run_reader(path: Path) -> subprocess.CompletedProcess:
    """glTF-Transform 4.5 knows EXT_meshopt_compression but not its KHR form; the KHR form
    differs in its name (same length) and in allowing the version-1 attribute codec and the
    COLOR filter, both of which meshoptimizer 1.3's decoder reads under either name.  So a
    KHR file is read through a copy beside it with the name changed."""
    env = dict(os.environ, NODE_PATH=str(NODE_MODULES))
    data = path.read_bytes()
    khr, ext = b'"KHR_meshopt_compression"', b'"EXT_meshopt_compression"'
    if khr not in data:
        return subprocess.run(["node", str(SCRIPT), str(path)], capture_output=True, text=True, env=env,
                              timeout=600, check=False)
    copy = path.with_name(f".{path.stem}.as-ext{path.suffix}")
    copy.write_bytes(data.replace(khr, ext))
    try:
        return subprocess.run(["node", str(SCRIPT), str(copy)], capture_output=True, text=True, env=env,
                              timeout=600, check=False)
    finally:
        copy.unlink()


def write_plain(path: Path, out: Path) -> None:
    """``path`` decoded by glTF-Transform and written without compression extensions."""
    env = dict(os.environ, NODE_PATH=str(NODE_MODULES))
    proc = subprocess.run(["node", str(SCRIPT), str(path), "--plain", str(out)], capture_output=True, text=True,
                          env=env, timeout=600, check=False)
    assert proc.returncode == 0, f"glTF-Transform could not rewrite {path}: {proc.stderr.strip()[-2000:]}"


def _primitives(path: Path) -> list[dict]:
    proc = _run_reader(Path(path))
    assert proc.returncode == 0, f"glTF-Transform could not read {path}: {proc.stderr.strip()[-2000:]}"
    return [p for p in json.loads(proc.stdout)["primitives"] if p["mode"] in (4, 5, 6)]


def read_animations(path: Path) -> list:
    """Every animation's samplers (interpolation, keys, values) and every skin's inverse bind
    matrices, as glTF-Transform reads them: what no optimization may change."""
    proc = _run_reader(Path(path))
    assert proc.returncode == 0, f"glTF-Transform could not read {path}: {proc.stderr.strip()[-2000:]}"
    got = json.loads(proc.stdout)
    samplers = [(s["interpolation"], _values(s["input"]).tolist(), _values(s["output"]).tolist())
                for anim in got["animations"] for s in anim]
    return samplers + [None if m is None else _values(m).tolist() for m in got["skins"]]


def _triangles(prim: dict, vertex_count: int) -> np.ndarray:
    if prim["indices"] is None:
        flat = np.arange(vertex_count, dtype=np.int64)
    else:
        entry = prim["indices"]
        flat = np.frombuffer(base64.b64decode(entry["data"]), DTYPES[entry["componentType"]]).astype(np.int64)
    return _strip_fan(flat, prim["mode"])


def read_triangles(path: Path) -> dict[tuple[int, int], np.ndarray]:
    """``(mesh, primitive) -> (T, 3, K)`` float64 corner values, read by glTF-Transform."""
    out = {}
    for prim in _primitives(path):
        columns = [_values(prim["attributes"][k]) for k in sorted(prim["attributes"])]
        for target in prim["targets"]:
            columns += [_values(target[k]) for k in sorted(target)]
        table = np.concatenate(columns, axis=1)
        out[(prim["mesh"], prim["primitive"])] = table[_triangles(prim, table.shape[0])]
    return out


def read_columns(path: Path) -> dict[tuple[int, int], list[str]]:
    """``(mesh, primitive) ->`` the attribute (``NORMAL``, ``target0.POSITION``...) of each
    column of :func:`read_triangles`' corners."""
    out = {}
    for prim in _primitives(path):
        names = [k for k in sorted(prim["attributes"]) for _ in range(_values(prim["attributes"][k]).shape[1])]
        for ti, target in enumerate(prim["targets"]):
            names += [f"target{ti}.{k}" for k in sorted(target) for _ in range(_values(target[k]).shape[1])]
        out[(prim["mesh"], prim["primitive"])] = names
    return out


def read_draws(path: Path) -> dict[tuple[int, int], tuple[np.ndarray, int]]:
    """``(mesh, primitive) -> (triangles as drawn, vertex count)``, read by glTF-Transform."""
    out = {}
    for prim in _primitives(path):
        count = _values(prim["attributes"]["POSITION"]).shape[0]
        out[(prim["mesh"], prim["primitive"])] = (_triangles(prim, count), count)
    return out


def canonical(corners: np.ndarray) -> np.ndarray:
    """``(T, 3, K)`` triangles, each rotated so its smallest corner (lexicographically) comes
    first, rows sorted: equal for two arrays holding the same triangles up to rotation."""
    if corners.shape[0] == 0:
        return corners.reshape(0, -1)
    t, _, k = corners.shape
    flat = corners.reshape(t * 3, k)
    _, rank = np.unique(flat, axis=0, return_inverse=True)
    rank = rank.reshape(t, 3)
    # ties (a repeated corner) pick the rotation whose rank triple is smallest
    rot = np.stack([np.roll(rank, -r, axis=1) for r in range(3)], axis=1)
    keys = (rot[:, :, 0] * (rank.max() + 1) + rot[:, :, 1]) * (rank.max() + 1) + rot[:, :, 2]
    first = np.argmin(keys, axis=1)
    idx = (first[:, None] + np.arange(3)[None, :]) % 3
    rotated = np.take_along_axis(corners, idx[:, :, None], axis=1).reshape(t, 3 * k)
    return rotated[np.lexsort(rotated.T[::-1])]


def same_triangles(a: np.ndarray, b: np.ndarray, *, tolerance: float = 0.0, exact_columns=None) -> bool:
    """Whether ``a`` and ``b`` (``(T, 3, K)``) hold the same triangles, as multisets, up to a
    rotation of each.  With ``tolerance``, columns outside ``exact_columns`` may differ by
    that much: rows are then matched after rounding those columns to a coarse grid."""
    if a.shape != b.shape:
        return False
    if tolerance == 0.0:
        return np.array_equal(canonical(a), canonical(b))
    k = a.shape[2]
    exact = np.zeros(k, bool)
    exact[list(exact_columns or [])] = True
    grid = max(tolerance * 1000.0, 1e-9)

    def key(c):
        r = c.copy()
        r[:, :, ~exact] = np.round(r[:, :, ~exact] / grid) * grid
        return r

    ka, kb = canonical(key(a)), canonical(key(b))
    if not np.array_equal(ka, kb):
        return False
    ca, cb = _sorted_like(a, key(a)), _sorted_like(b, key(b))
    return bool(np.all(np.abs(ca - cb) <= tolerance + 1e-12))


def _sorted_like(corners: np.ndarray, keys: np.ndarray) -> np.ndarray:
    t, _, k = corners.shape
    joint = np.concatenate([keys, corners], axis=2)
    return canonical(joint)[:, :].reshape(t, 3, 2 * k)[:, :, k:].reshape(t, 3 * k)
