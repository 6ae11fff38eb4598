"""The one way into a launch: :func:`launch` takes a :class:`LaunchRequest`, returns a
:class:`~qwengpu_mlx.runtime.generate.Launch`.

Every caller enters here: the command line (``run``, ``check``, ``compile --emit
tokens``), the dashboard, the chat's tools, the trust probes, the benches and the tests.
A request names a kernel's source and arguments (compiled and bound here, by
:func:`bind_request`, the one place that plays NVRTC and the driver for a launch) or an
already bound program; it runs on the model (the store's runner for its machine, or a
runner the caller holds, e.g. a combined checkpoint's circuit) or on the reference
interpreter. Progress goes to a :class:`LaunchEvents` sink.
"""

from __future__ import annotations

import functools
import hashlib
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from qwengpu_mlx.core.isa import Program
from qwengpu_mlx.core.machine import DEFAULT_MACHINE, MachineConfig
from qwengpu_mlx.core.reference import run_program
from qwengpu_mlx.host.launch import CompiledKernel, bind, compile_kernel
from qwengpu_mlx.runtime.generate import Launch, LaunchCancelled, generate_launch
from qwengpu_mlx.runtime.prompt import check_launchable

if TYPE_CHECKING:  # the store hands out runners whose trust probes launch through here
    from qwengpu_mlx.runtime.store import CircuitStore

BACKENDS = ("model", "reference")


@dataclass(frozen=True)
class LaunchRequest:
    """A launch as a user states it: a kernel (``source``, ``kernel``, ``args``) or a bound
    ``program``, the launch's shape and machine, where it runs and what bounds it."""

    source: Path | None = None
    args: dict = field(default_factory=dict)  # parameter name -> list of ints, int, or text
    kernel: str | None = None
    block: int | tuple[int, ...] = 4  # blockDim: x, or (x, y) / (x, y, z)
    grid: int | tuple[int, ...] = 1  # gridDim, the same way
    shared: int = 0  # dynamic shared memory in bytes (what ``extern __shared__ T s[]`` holds)
    machine: MachineConfig = DEFAULT_MACHINE
    frontend: str = "clang"
    few_tokens: bool = True  # the lowering's token-saving packing (False: the plain one, to compare)
    program: Program | None = None  # bound already: source, args, block, grid and shared are not used
    backend: str = "model"  # or "reference": the exact interpreter
    check: bool = False  # compare the model's launch with the reference (Launch.check)
    step_budget: int | None = None  # EXEC steps (default: the machine's)
    timeout: float | None = None  # seconds the launch itself may run (not the circuit's build)

    def __post_init__(self):
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {self.backend!r}")
        if self.program is None and self.source is None:
            raise ValueError("a launch request needs a kernel source or a bound program")


class LaunchEvents:
    """What a caller hears while a launch runs; a sink overrides what it acts on."""

    def phase(self, text: str) -> None:
        """A new piece of work (compiling, loading the circuit, prefill, checking)."""

    def begin(self, program: Program, prompt: list[int]) -> None:
        """The prompt is about to be fed (model backend)."""

    def token(self, token_id: int, tok) -> None:
        """The model wrote one launch token."""

    def step(self, record) -> None:
        """The reference interpreter ran one step (reference backend)."""


QuietEvents = LaunchEvents  # a sink that hears nothing


@functools.lru_cache(maxsize=64)
def _compiled(source: Path, digest: str, kernel: str | None, frontend: str) -> CompiledKernel:
    """clang once per kernel file and content (``digest``): the chat launches the same few
    kernels for every expression."""
    return compile_kernel(source, kernel, frontend=frontend)


def compile_request(req: LaunchRequest) -> CompiledKernel:
    """The request's kernel, compiled (PTX, parsed, its parameters); a file that cannot be
    read is the front end's error."""
    path = Path(req.source)
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:  # missing, a directory, unreadable: the front end says which, at the user's path
        return compile_kernel(path, req.kernel, frontend=req.frontend)
    return _compiled(path.resolve(), digest, req.kernel, req.frontend)


def bind_request(req: LaunchRequest) -> Program:
    """The request's bound program: compile and bind (arguments become memory and
    immediates), or the program it carries."""
    if req.program is not None:
        return req.program
    return bind(compile_request(req), req.args, block=req.block, grid=req.grid, machine=req.machine,
                few_tokens=req.few_tokens, shared=req.shared)


def launch(req: LaunchRequest, *, store: CircuitStore | None = None, runner=None,
           events: LaunchEvents | None = None, cancel: threading.Event | None = None) -> Launch:
    """Run one launch. On the model: on ``runner`` when given, else on ``store``'s runner for
    ``req.machine`` (one of the two is needed);
    a launch the model ends with ``FAULT`` raises the matching error. On the reference: the
    exact interpreter, the same result type without tokens."""
    ev = events or QuietEvents()
    if req.program is None:
        ev.phase(f"compiling {Path(req.source).name}")
    program = bind_request(req)
    if req.backend == "reference":
        return _on_reference(program, req, ev)
    return _on_model(program, req, store, runner, ev, cancel)


def _on_model(program: Program, req: LaunchRequest, store: CircuitStore | None, runner, ev: LaunchEvents,
              cancel: threading.Event | None) -> Launch:
    """The model writes the launch; a first launch's circuit build is not under ``timeout``
    (a one-off of a few seconds the user did not ask to bound)."""
    machine = runner.machine if runner is not None else req.machine
    check_launchable(program, machine)  # before the runner is built (the loop checks again, cheaply)
    t0 = time.perf_counter()
    if runner is None:
        if store is None:
            raise ValueError("a launch on the model needs a CircuitStore or a runner")
        if not store.has_runner(machine):
            ev.phase("loading the circuit (built on first use, then read from the cache)")
        runner = store.runner(machine)
    build_seconds = time.perf_counter() - t0
    if cancel is not None and cancel.is_set():
        raise LaunchCancelled()

    def begin(prompt: list[int]) -> None:
        ev.begin(program, prompt)
        ev.phase(f"prefill: {len(prompt)} prompt tokens")

    result = generate_launch(program, runner, step_budget=req.step_budget, on_token=ev.token, cancel=cancel,
                             check=req.check, timeout=req.timeout, on_prompt=begin,
                             on_checking=lambda: ev.phase("checking against the reference interpreter"))
    result.build_seconds = build_seconds
    return result


def _on_reference(program: Program, req: LaunchRequest, ev: LaunchEvents) -> Launch:
    """The exact interpreter (``--backend reference``): memory and steps, no tokens."""
    ev.phase("running on the reference interpreter")
    t0 = time.perf_counter()
    res = run_program(program, req.machine, step_budget=req.step_budget, trace=False, on_step=ev.step)
    return Launch(program, [], [], [], res.memory, res.steps, 0.0, time.perf_counter() - t0,
                  min_state_margin=None, logit_margin=None, backend="reference")

