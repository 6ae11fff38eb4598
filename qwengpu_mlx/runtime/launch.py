"""The one launch path: kernel source -> program -> runner -> launch -> outputs -> check.

Every caller enters here: the command line (``run``, ``check``), the dashboard, the
benches and the chat. :func:`prepare` plays NVRTC (compile and bind); :func:`launch_kernel`
gets the runner from a :class:`CircuitStore`, runs the launch on it
(``generate.run_launch``) and optionally checks it; :func:`run_reference` runs the same
program on the reference interpreter. Progress goes to a :class:`LaunchEvents` sink.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol

from qwengpu_mlx.core.isa import Program
from qwengpu_mlx.core.machine import DEFAULT_MACHINE, MachineConfig

from qwengpu_mlx.runtime.generate import Launch, run_launch
from qwengpu_mlx.core.readout import read_outputs
from qwengpu_mlx.runtime.store import CircuitStore


@dataclass
class LaunchRequest:
    """A kernel launch as a user states it."""

    source: Path
    args: dict = field(default_factory=dict)  # parameter name -> list of ints, int, or text
    kernel: str | None = None
    block: int = 4
    grid: int = 1
    machine: MachineConfig = DEFAULT_MACHINE
    frontend: str = "clang"


class LaunchEvents(Protocol):
    """What a caller hears while a launch runs (all optional to act on)."""

    def phase(self, text: str) -> None: ...

    def begin(self, program: Program, prompt: list[int]) -> None: ...

    def token(self, token_id: int, tok) -> None: ...


class QuietEvents:
    def phase(self, text: str) -> None:
        pass

    def begin(self, program: Program, prompt: list[int]) -> None:
        pass

    def token(self, token_id: int, tok) -> None:
        pass


@dataclass
class Prepared:
    compiled: object  # host.launch.CompiledKernel
    program: Program


def prepare(req: LaunchRequest) -> Prepared:
    """Compile the kernel and bind the launch's arguments (the host's NVRTC + driver part)."""
    from qwengpu_mlx.host.launch import bind, compile_kernel

    ck = compile_kernel(req.source, req.kernel, frontend=req.frontend)
    return Prepared(ck, bind(ck, req.args, block=req.block, grid=req.grid, machine=req.machine))


def launch_kernel(req: LaunchRequest, store: CircuitStore, *, events: LaunchEvents | None = None,
                  cancel: threading.Event | None = None, check: bool = False,
                  step_budget: int | None = None, timeout: float | None = None) -> Launch:
    """Compile, bind, run on the store's circuit for ``req.machine``, optionally check.

    ``timeout``: seconds the launch itself may run (``generate.run_launch``)."""
    ev = events or QuietEvents()
    ev.phase(f"compiling {Path(req.source).name}")
    program = prepare(req).program
    return launch_program(program, store, req.machine, events=ev, cancel=cancel, check=check,
                          step_budget=step_budget, timeout=timeout)


def launch_program(program: Program, store: CircuitStore, machine: MachineConfig, *,
                   events: LaunchEvents | None = None, cancel: threading.Event | None = None,
                   check: bool = False, step_budget: int | None = None, runner=None,
                   timeout: float | None = None) -> Launch:
    """Run a bound program on the store's runner for ``machine`` (see :func:`launch_kernel`),
    or on ``runner`` when given (a combined checkpoint's circuit, ``splice.runner``).

    ``timeout`` bounds the launch (prefill and generation), not the circuit's build: a
    first launch's build is a one-off of a few seconds the user did not ask to bound."""
    from qwengpu_mlx.runtime.generate import LaunchCancelled
    from qwengpu_mlx.runtime.prompt import check_launchable

    ev = events or QuietEvents()
    check_launchable(program, machine)  # before the runner is built (run_launch checks again, cheaply)
    t0 = time.perf_counter()
    if runner is None:
        if not store.has_runner(machine):
            ev.phase("loading the circuit (built on first use, then read from the cache)")
        runner = store.runner(machine)
    build_seconds = time.perf_counter() - t0
    if cancel is not None and cancel.is_set():
        raise LaunchCancelled()

    def begin(prompt: list[int]) -> None:
        ev.begin(program, prompt)
        ev.phase(f"prefill: {len(prompt)} prompt tokens")

    launch = run_launch(program, runner, step_budget=step_budget, on_token=ev.token, cancel=cancel, check=check,
                        timeout=timeout, on_prompt=begin, on_checking=lambda: ev.phase("checking against the reference interpreter"))
    launch.build_seconds = build_seconds
    return launch


@dataclass
class ReferenceLaunch:
    program: Program
    memory: list[int]
    steps: int

    @property
    def outputs(self) -> dict[str, list[int]]:
        return read_outputs(self.program, self.memory)


def run_reference(program: Program, machine: MachineConfig, *, step_budget: int | None = None,
                  on_step: Callable | None = None) -> ReferenceLaunch:
    """The same program on the exact interpreter (``--backend reference``)."""
    from qwengpu_mlx.core.reference import run_program

    res = run_program(program, machine, step_budget=step_budget, trace=False, on_step=on_step)
    return ReferenceLaunch(program, res.memory, res.steps)
