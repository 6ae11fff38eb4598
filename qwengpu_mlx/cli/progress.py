"""Progress on stderr for the command line's long work (rich's live display).

A cold first launch spends tens of seconds building the circuit, then a prefill and
hundreds of generated tokens; without a word on the terminal it looks hung. The
display is one transient line (a spinner, the phase, the token count, the elapsed
time) that disappears when the work ends, so stdout and the final lines stay clean.

When it shows (:func:`wanted`): stderr is a terminal, ``--trace`` is off (the trace is
its own progress), and ``--json`` is off unless ``--progress`` is given. A pipe or a
log file never gets the escape codes.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager

from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from qwengpu_mlx.runtime.launch import LaunchEvents


def wanted(ns, stream=None) -> bool:
    """Whether the command in ``ns`` should show progress on ``stream`` (stderr)."""
    stream = stream or sys.stderr
    if getattr(ns, "trace", False):
        return False
    if getattr(ns, "json", False) and not getattr(ns, "progress", False):
        return False
    return bool(getattr(stream, "isatty", lambda: False)())


class Display(LaunchEvents):
    """The live line: :meth:`phase` names the work, :meth:`token` counts generated tokens.

    Also a runtime ``LaunchEvents`` sink, so a launch reports into it directly; ``trace``
    (a callable) still hears every token, ``steps`` every reference step."""

    def __init__(self, console: Console | None, trace=None, steps=None):
        self._progress = None
        self._trace = trace
        self._steps = steps
        self.tokens = 0
        if console is not None:
            self._progress = Progress(SpinnerColumn(), TextColumn("{task.description}"),
                                      TextColumn("{task.fields[count]}"), TimeElapsedColumn(),
                                      console=console, transient=True)
            self._task = self._progress.add_task("starting", count="")

    def __enter__(self):
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(self, *exc):
        if self._progress is not None:
            self._progress.stop()
        return False

    def phase(self, text: str) -> None:
        if self._progress is not None:
            self._progress.update(self._task, description=text, count="")

    def counted(self, text: str, done: int, total: int) -> None:
        """A phase and how far it got (``done`` of ``total``; ``total`` 0: a phase with no count)."""
        if self._progress is not None:
            self._progress.update(self._task, description=text, count=f"{done:,} of {total:,}" if total else "")

    def begin(self, program, prompt) -> None:
        self.tokens = 0

    def token(self, tok_id, tok) -> None:
        self.tokens += 1
        if self._trace is not None:
            self._trace(tok_id, tok)
        if self._progress is not None:
            if self.tokens == 1:
                self._progress.update(self._task, description="generating the launch")
            self._progress.update(self._task, count=f"{self.tokens} tokens")


    def step(self, record) -> None:
        if self._steps is not None:
            self._steps(record)


def display(ns, trace=None, steps=None) -> Display:
    """A :class:`Display` on stderr when :func:`wanted`, else a silent one (still a sink)."""
    return Display(Console(stderr=True) if wanted(ns) else None, trace=trace, steps=steps)


@contextmanager
def phase(ns, text: str):
    """One named piece of long work (a circuit build, a checkpoint write) under a spinner."""
    with display(ns) as d:
        d.phase(text)
        yield d
