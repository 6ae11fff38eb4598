"""What the chat shows while a prompt is prefilled: the tokens done of the total, their pace.

A slow base (a 4-bit base on a Linux CPU: seconds per prompt token) spends minutes in the
prefill of the system prompt and the tools before it writes a word; without a count the
chat looks stuck. :class:`PrefillDisplay` is the ``progress`` a ``ChatSession`` reports
into (mlx-lm's ``prompt_progress_callback`` form, ``(processed, total)``): on a terminal a
transient rich line (spinner, count, tokens/s, elapsed and remaining time) that appears only
once a prefill has taken a second and is gone before the reply streams; elsewhere (a pipe,
a log) a plain line through ``log`` at most every :data:`LINE_EVERY_S` seconds.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

QUIET_S = 1.0  # a prefill quicker than this shows nothing
LINE_EVERY_S = 15.0  # without a terminal: at most one line per this many seconds


def _count_text(done: int, total: int, seconds: float) -> str:
    pace = f", {done / seconds:.2f} tokens/s" if done and seconds > 0 else ""
    return f"{done:,} of {total:,} tokens{pace}"


class PrefillDisplay:
    """Call it with ``(done, total)``; a prefill ends when ``done == total``."""

    def __init__(self, console: Console | None, log: Callable[[str], None] = lambda s: None):
        self._console, self._log = console, log
        self._progress = self._timer = None
        self._task = None
        self._start = self._last_line = 0.0
        self._lock = threading.Lock()

    def __call__(self, done: int, total: int) -> None:
        now = time.perf_counter()
        if self._start == 0.0:
            self._begin(now, total)
        with self._lock:
            if self._progress is not None:
                self._progress.update(self._task, completed=done, total=total,
                                      count=_count_text(done, total, now - self._start))
        if self._console is None and now - self._last_line >= LINE_EVERY_S and 0 < done < total:
            self._last_line = now
            self._log(f"prefilling the prompt: {_count_text(done, total, now - self._start)}")
        if done >= total:
            self.close()

    def _begin(self, now: float, total: int) -> None:
        self._start = self._last_line = now
        if self._console is not None:
            self._timer = threading.Timer(QUIET_S, self._show, args=(total,))
            self._timer.daemon = True
            self._timer.start()

    def _show(self, total: int) -> None:
        """The live line, once the prefill has taken :data:`QUIET_S`."""
        with self._lock:
            if self._start == 0.0:  # ended meanwhile
                return
            self._progress = Progress(SpinnerColumn(), TextColumn("prefilling the prompt"), BarColumn(),
                                      TextColumn("{task.fields[count]}"), TimeElapsedColumn(), TimeRemainingColumn(),
                                      console=self._console, transient=True)
            self._task = self._progress.add_task("prefill", total=total, count=_count_text(0, total, 0.0))
            self._progress.start()

    def close(self) -> None:
        """End the line (the prefill finished, or the turn was stopped): the next prefill starts anew."""
        if self._timer is not None:
            self._timer.cancel()
        with self._lock:
            if self._progress is not None:
                self._progress.stop()
            self._progress = self._timer = self._task = None
            self._start = 0.0


def prefill_display(as_json: bool, stream, log: Callable[[str], None]) -> PrefillDisplay:
    """The chat's display: a live line on ``stream`` (stderr) when it is a terminal and the
    output is not JSON, else plain lines through ``log``."""
    live = not as_json and bool(getattr(stream, "isatty", lambda: False)())
    return PrefillDisplay(Console(file=stream) if live else None, log)
