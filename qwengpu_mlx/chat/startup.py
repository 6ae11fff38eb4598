"""A line on stderr for each start-up step that takes over a second, and nothing for the rest.

Opening a chat model runs a few steps (fetch, load, the circuit); the quick ones should not
clutter the terminal, and a slow one should not look hung. :func:`timed` says what it is
doing once a second has gone by, and how long it took when it ends; :data:`STEPS` keeps
every step's time for the start-up bench.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator

QUIET_SECONDS = 1.0  # a step quicker than this says nothing
STEPS: list[tuple[str, float]] = []  # (what, seconds) of every step timed in this process


@contextmanager
def timed(log: Callable[[str], None], what: str) -> Iterator[None]:
    """Run a step; past :data:`QUIET_SECONDS` it is named on ``log``, and its time at the end."""
    start = time.perf_counter()
    timer = threading.Timer(QUIET_SECONDS, lambda: log(f"{what} ..."))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        seconds = time.perf_counter() - start
        STEPS.append((what, seconds))
        if seconds > QUIET_SECONDS:
            log(f"{what}: {seconds:.1f} s")
