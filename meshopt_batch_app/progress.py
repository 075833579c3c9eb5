"""Progress of a long command on a terminal: the stage, a count or a bar, the elapsed time.

A bar is drawn on stderr by tqdm (as the library runner and the report draw theirs) only when
stdout and stderr are both terminals and the command line has neither ``--json`` nor
``--no-progress``: output read by a program, a pipe, a file or a CI log gets no progress
characters.  tqdm is imported only when a bar is shown.  While one step runs for long (one
vertex buffer searched for seconds) the elapsed time keeps moving: a bar is redrawn every
second by a helper thread, which ends with the bar.
"""

from __future__ import annotations

import sys
import threading

__all__ = ["Progress", "wanted"]

#: Seconds between redraws of a bar while it does not advance.
REDRAW_SECONDS = 1.0
#: What a bar shows: a count while the number of steps is unknown, a bar once it is known; the
#: elapsed time in both, no rate or remaining time (steps differ too much in size for either).
COUNT_FORMAT = "{desc}: {n_fmt}{unit} [{elapsed}{postfix}]"
BAR_FORMAT = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt}{unit} [{elapsed}{postfix}]"


def _terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # replaced or closed streams
        return False


def wanted(args) -> bool:
    """Whether the command of ``args`` shows progress: no ``--json``, no ``--no-progress``,
    and stdout and stderr both terminals."""
    if getattr(args, "json", False) or getattr(args, "no_progress", False):
        return False
    return _terminal(sys.stdout) and _terminal(sys.stderr)


class Progress:
    """A context manager around one tqdm bar (nothing at all when not ``enabled``).

    Parameters
    ----------
    desc : str
        The stage's name, shown first.
    unit : str
        What is counted (``" runs"``, ``" vertex buffers"``).
    enabled : bool
        Show it (:func:`wanted`).
    """

    def __init__(self, desc: str, *, unit: str = " steps", enabled: bool = True):
        self.desc, self.unit, self.enabled = desc, unit, enabled
        self._bar = None
        self._stop = threading.Event()
        self._redraw = None

    def __enter__(self) -> Progress:
        if self.enabled:
            from tqdm import tqdm  # lazy: only a terminal that shows the bar needs tqdm

            self._bar = tqdm(desc=self.desc, unit=self.unit, file=sys.stderr, dynamic_ncols=True, leave=False,
                             bar_format=COUNT_FORMAT)
            self._redraw = threading.Thread(target=self._keep_drawing, name="progress-redraw", daemon=True)
            self._redraw.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._redraw is not None:
            self._redraw.join()
        if self._bar is not None:
            self._bar.close()

    def _keep_drawing(self) -> None:
        while not self._stop.wait(REDRAW_SECONDS):
            self._bar.refresh()

    def step(self, note: str) -> None:
        """One more step started; ``note`` says which (shown after the count)."""
        if self._bar is not None:
            self._bar.n += 1
            self._bar.set_postfix_str(note)       # drawn now: a step can take long

    def done_of(self, done: int, total: int) -> None:
        """``done`` of ``total`` finished (the bar's length may change between calls)."""
        if self._bar is not None:
            self._bar.total = total
            self._bar.bar_format = BAR_FORMAT
            self._bar.n = done
            self._bar.refresh()
