"""The report's stages on a terminal while it runs.

One line as each stage starts and as it ends (its name, its jobs, the elapsed time), and under
them one tqdm bar of the jobs done with the stages now running and the elapsed time, redrawn
every second (a stage may run for minutes without a job ending).  The command shows it only on
a terminal (:func:`meshopt_batch_app.progress.wanted`: stdout and stderr terminals, no
``--json``, no ``--no-progress``); otherwise nothing is drawn and tqdm is not loaded.  The bar
and its formats are the ones every long command draws (:mod:`meshopt_batch_app.progress`).

Jobs are named ``STAGE`` or ``STAGE/DETAIL`` (``simulate/city-batched/forsyth``); the calls may
come from helper threads (the workers' notices, their jobs' ends).
"""

from __future__ import annotations

import sys
import threading
import time

from ..progress import BAR_FORMAT, REDRAW_SECONDS

__all__ = ["ReportProgress", "stage_of"]


def stage_of(label: str) -> str:
    """The stage a job's label names (the part before the first ``/``)."""
    return label.split("/", 1)[0]


class _Stage:
    def __init__(self, jobs: int):
        self.jobs, self.started, self.done = jobs, 0, 0
        self.t0 = None
        self.inner = ""          # a stage of this process: its own count ("12/40")


class ReportProgress:
    """Stages and jobs of one report run (nothing at all when not ``enabled``).

    Parameters
    ----------
    stages : dict
        Every stage's name and its number of jobs, in the order they are listed.
    enabled : bool
        Draw on stderr.
    """

    def __init__(self, stages: dict[str, int], enabled: bool):
        self.enabled = enabled
        self.t0 = time.monotonic()
        self.stages = {name: _Stage(jobs) for name, jobs in stages.items()}
        self._lock = threading.RLock()
        self._bar = None
        self._stop = threading.Event()
        self._redraw = None
        if enabled:
            from tqdm import tqdm  # lazy: only a terminal that shows the bar needs tqdm

            self._bar = tqdm(total=sum(stages.values()), desc="report", unit=" jobs", file=sys.stderr,
                             dynamic_ncols=True, leave=False, bar_format=BAR_FORMAT)
            self._redraw = threading.Thread(target=self._keep_drawing, name="report-progress", daemon=True)
            self._redraw.start()

    def _elapsed(self) -> str:
        s = int(time.monotonic() - self.t0)
        return f"{s // 60:02d}:{s % 60:02d}"

    def _say(self, text: str) -> None:
        self._bar.write(f"report [{self._elapsed()}] {text}", file=sys.stderr)

    def started(self, label: str) -> None:
        """The job ``label`` started (a stage's first job: one line)."""
        if self._bar is None:
            return
        with self._lock:
            st = self.stages.setdefault(stage_of(label), _Stage(1))
            st.started += 1
            if st.started == 1:
                st.t0 = time.monotonic()
                self._say(f"{stage_of(label)} started" + (f" ({st.jobs} jobs)" if st.jobs > 1 else ""))
            self._show()

    def finished(self, label: str) -> None:
        """The job ``label`` ended (a stage's last job: one line with the stage's time)."""
        if self._bar is None:
            return
        with self._lock:
            name = stage_of(label)
            st = self.stages.setdefault(name, _Stage(1))
            st.done += 1
            st.inner = ""
            self._bar.update(1)
            if st.done == st.jobs:
                self._say(f"{name} done in {time.monotonic() - (st.t0 or self.t0):.1f} s")
            self._show()

    def counter(self, total: int, desc: str):
        """A count inside one job of this process (``progress(total, desc)`` of the report's
        stage functions): shown beside the stage's name."""
        return _Counter(self, desc, total)

    def _show(self) -> None:
        running = []
        for name, st in self.stages.items():
            if st.started and st.done < st.jobs:
                count = st.inner or (f"{st.done}/{st.jobs}" if st.jobs > 1 else "")
                running.append(f"{name} {count}".strip())
        self._bar.set_postfix_str("; ".join(running), refresh=False)   # drawn within a second

    def _keep_drawing(self) -> None:
        while not self._stop.wait(REDRAW_SECONDS):
            with self._lock:
                self._bar.refresh()

    def close(self) -> None:
        self._stop.set()
        if self._redraw is not None:
            self._redraw.join()
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class _Counter:
    """What a stage function updates (``update``, ``set_postfix_str``, ``close``)."""

    def __init__(self, owner: ReportProgress, desc: str, total: int):
        self.owner, self.desc, self.total, self.n = owner, desc, total, 0
        self.note = ""

    def _push(self) -> None:
        owner = self.owner
        if owner._bar is None:
            return
        with owner._lock:
            st = owner.stages.get(self.desc)
            if st is not None:
                st.inner = f"{self.n}/{self.total}" + (f" {self.note}" if self.note else "")
                owner._show()

    def update(self, n: int = 1) -> None:
        self.n += n
        self._push()

    def set_postfix_str(self, note: str) -> None:
        self.note = note
        self._push()

    def close(self) -> None:
        pass
