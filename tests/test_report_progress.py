"""The report's progress: every stage named on a terminal as it starts, with the elapsed time
and a bar of the jobs done; nothing at all when stdout is not a terminal."""

from __future__ import annotations

import fcntl
import os
import re
import struct
import subprocess
import sys
import termios

import pytest

import meshes
from meshopt_batch import save_mesh
from meshopt_batch_app.report.build import MAIN_STAGES, WORKER_STAGES


def _report_on_terminal(argv, stdout_terminal: bool):
    """``meshopt-batch report ARGV`` with stderr on a 160-column pseudo-terminal, stdout on it
    too or on a pipe; returns the exit code, what the terminal showed and what the pipe got."""
    main_fd, term = os.openpty()
    fcntl.ioctl(term, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "meshopt_batch_app.cli", "report", *map(str, argv)],
                            stdin=subprocess.DEVNULL, stderr=term,
                            stdout=term if stdout_terminal else subprocess.PIPE)
    os.close(term)
    shown = bytearray()
    while True:
        try:
            chunk = os.read(main_fd, 1 << 16)
        except OSError:                      # EIO: the command closed the terminal's last writer
            break
        if not chunk:
            break
        shown += chunk
    os.close(main_fd)
    piped = proc.stdout.read().decode() if proc.stdout is not None else ""
    proc.wait(timeout=600)
    return proc.returncode, shown.decode(errors="replace"), piped


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """The smallest report that still runs every stage: one small mesh, one scene, one frame,
    no assets and no results files."""
    root = tmp_path_factory.mktemp("report-progress")
    mesh = root / "ico.ply"
    save_mesh(meshes.icosphere(1), mesh)
    (root / "empty").mkdir()
    return root, ["--scope", "smoke", "--mesh", mesh, "--scene", "sprites-2d", "--frames", "1",
                  "--assets", root / "empty", "--results", root / "empty"]


def test_report_names_each_stage_on_a_terminal(tiny):
    root, args = tiny
    code, shown, _ = _report_on_terminal([*args, "--out", root / "shown"], stdout_terminal=True)
    assert code == 0, shown[-3000:]
    lines = [line.strip() for line in shown.replace("\r", "\n").splitlines()]
    for stage in (*MAIN_STAGES, *WORKER_STAGES, "simulate"):
        said = re.escape(stage)
        assert any(re.fullmatch(rf"report \[\d\d:\d\d\] {said} started( \(\d+ jobs\))?", x) for x in lines), stage
        assert any(re.fullmatch(rf"report \[\d\d:\d\d\] {said} done in \d+\.\d s", x) for x in lines), stage
    # the scene's three triangle orders are the simulate stage's jobs, counted on the bar
    jobs = len(MAIN_STAGES) + len(WORKER_STAGES) + 3
    assert "simulate started (3 jobs)" in shown and f"/{jobs} jobs [00:" in shown
    assert "report written:" in shown


def test_report_is_silent_when_stdout_is_not_a_terminal(tiny):
    root, args = tiny
    code, shown, piped = _report_on_terminal([*args, "--out", root / "piped"], stdout_terminal=False)
    assert code == 0, shown
    assert shown == ""                      # not a character on stderr, although it is a terminal
    assert piped.startswith("report written:") and "simulate" in piped
