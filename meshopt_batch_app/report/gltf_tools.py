"""The Node tools the report runs beside its own glTF output: ``gltfpack`` and the Khronos validator.

Both are optional (``make setup`` installs them into ``.npm-tools/`` when npm is present); each
finder returns the reason it is missing instead of raising, so the report can say what it left
out.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

__all__ = ["NPM_TOOLS", "find_gltfpack", "find_validator", "run_gltfpack", "validate"]

#: Where ``make setup`` installs the Node tools.
NPM_TOOLS = Path(__file__).resolve().parents[2] / ".npm-tools" / "node_modules"

#: Validates each file named on the command line with the npm package ``gltf-validator``
#: (external buffers and images read beside the file); prints one JSON line per file with the
#: number of issues per code and each code's severity (0 error, 1 warning, 2 info, 3 hint).
_VALIDATE_JS = r"""
const fs = require('fs'), path = require('path'), gltf = require('gltf-validator');
const read = (dir) => (uri) => new Promise((resolve, reject) => {
  try { resolve(new Uint8Array(fs.readFileSync(path.join(dir, decodeURIComponent(uri))))); }
  catch (err) { reject(String(err)); }
});
(async () => {
  for (const file of process.argv.slice(1)) {
    const result = await gltf.validateBytes(new Uint8Array(fs.readFileSync(file)),
      {uri: path.basename(file), maxIssues: 0, externalResourceFunction: read(path.dirname(file))});
    const codes = {};
    for (const m of result.issues.messages) {
      codes[m.code] = codes[m.code] || {count: 0, severity: m.severity};
      codes[m.code].count += 1;
    }
    process.stdout.write(JSON.stringify({file, codes}) + '\n');
  }
})().catch((err) => { process.stderr.write(String(err) + '\n'); process.exit(2); });
"""


def find_gltfpack() -> tuple[str | None, str]:
    """The ``gltfpack`` executable (``.npm-tools`` first, then ``PATH``), or None and why not."""
    local = NPM_TOOLS / ".bin" / "gltfpack"
    if local.exists():
        return str(local), ""
    found = shutil.which("gltfpack")
    if found:
        return found, ""
    return None, "gltfpack is not installed (`make setup` installs it with npm)"


def find_validator() -> tuple[bool, str]:
    """Whether the Khronos validator can run here, and why not."""
    if shutil.which("node") is None:
        return False, "node is not installed (the Khronos glTF validator runs on it)"
    if not (NPM_TOOLS / "gltf-validator").is_dir():
        return False, "the Khronos glTF validator is not installed (`make setup` installs it with npm)"
    return True, ""


def run_gltfpack(exe: str, src: Path, dst: Path, timeout: float = 300) -> str | None:
    """``gltfpack -noq -i SRC -o DST`` (no quantization: the like-for-like comparison); the
    last line of its complaint when it fails, else None."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        proc = subprocess.run([exe, "-noq", "-i", str(src), "-o", str(dst)], capture_output=True, text=True,
                              timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"gltfpack did not run: {exc}"
    if proc.returncode or not dst.exists():
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        return lines[-1] if lines else f"gltfpack exited with {proc.returncode}"
    return None


def validate(paths: list[Path], timeout: float = 600) -> dict[Path, dict]:
    """Every file's validator issues as ``{code: {"count", "severity"}}``; files the run did
    not reach are absent (a failed run gives ``{}``)."""
    if not paths:
        return {}
    env = dict(os.environ, NODE_PATH=str(NPM_TOOLS))
    try:
        proc = subprocess.run(["node", "-e", _VALIDATE_JS, *map(str, paths)], capture_output=True, text=True,
                              env=env, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    out = {}
    for line in proc.stdout.splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        out[Path(rec["file"])] = rec["codes"]
    return out
