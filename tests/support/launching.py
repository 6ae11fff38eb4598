"""Launches for tests, all through the runtime's one entry (``qwengpu_mlx.runtime.launch``).

Short spellings of the requests the tests make most: a kernel file on the reference
interpreter, a kernel file bound to a program, a bound program on a runner the test
holds, a token callback as an events sink.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from qwengpu_mlx.core.machine import PUBLISHED_MACHINE, MachineConfig
from qwengpu_mlx.runtime import Launch, LaunchEvents, LaunchRequest, bind_request, launch


def reference(source: str | Path, kernel: str | None = None, *, args: dict, block: int | tuple = 4,
              grid: int | tuple = 1, machine: MachineConfig = PUBLISHED_MACHINE, step_budget: int | None = None,
              frontend: str = "clang", shared: int = 0) -> Launch:
    """The kernel's launch on the reference interpreter (outputs, steps)."""
    return launch(LaunchRequest(source=Path(source), kernel=kernel, args=args, block=block, grid=grid,
                                shared=shared, machine=machine, step_budget=step_budget, frontend=frontend,
                                backend="reference"))


def bound_program(source: str | Path, kernel: str | None = None, *, args: dict, block=4, grid=1,
            machine: MachineConfig = PUBLISHED_MACHINE, few_tokens: bool = True, shared: int = 0):
    """The kernel compiled and bound for one launch (``shared``: its dynamic shared memory, in bytes)."""
    return bind_request(LaunchRequest(source=Path(source), kernel=kernel, args=args, block=block, grid=grid,
                                      machine=machine, few_tokens=few_tokens, shared=shared))


def on_runner(prog, runner, *, events: LaunchEvents | None = None, cancel=None, **fields) -> Launch:
    """A bound program on ``runner`` (``fields``: check, step_budget, timeout)."""
    return launch(LaunchRequest(program=prog, machine=runner.machine, **fields), runner=runner, events=events,
                  cancel=cancel)


def run_reference(prog, machine: MachineConfig = PUBLISHED_MACHINE, step_budget: int | None = None) -> Launch:
    """A bound program on the reference interpreter."""
    return launch(LaunchRequest(program=prog, machine=machine, step_budget=step_budget, backend="reference"))


class TokenEvents(LaunchEvents):
    """Calls ``on_token(token_id, Token)`` for every launch token."""

    def __init__(self, on_token: Callable[[int, object], None]):
        self.on_token = on_token

    def token(self, token_id: int, tok) -> None:
        self.on_token(token_id, tok)
