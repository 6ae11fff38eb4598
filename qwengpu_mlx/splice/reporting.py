"""How the splice's long work reports itself: ``progress(what, done, total)``.

A build of a real base runs for minutes (loading, calibration, dozens of shards); the
caller (the command line's live line, a bench's log) hears each step. ``total`` 0
names a phase that has no count (loading through mlx-lm)."""

from __future__ import annotations

from typing import Callable

Progress = Callable[[str, int, int], None]


def no_progress(what: str, done: int, total: int) -> None:
    """The default ``progress``: nothing is reported."""
