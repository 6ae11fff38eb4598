"""One launch on a runner: the model writes it, token by token, greedily.

The host feeds the prompt, then only appends the token the model chose until ``STOP``
or ``FAULT``; results are read from the recurrent state of the memory head, never
computed here. Everything a launch needs is passed in (program, runner, callbacks);
the result is a :class:`Launch`.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from qwengpu_mlx.errors import BarrierDeadlock, ExecutionError, MemoryFault, StepBudgetExceeded
from qwengpu_mlx.isa import Program
from qwengpu_mlx.vocab import FAULT_CODES, Token, vocab_for

from .prompt import check_launchable, prompt_tokens
from .readout import read_memory, read_outputs


class LaunchCancelled(Exception):
    """The caller's cancel event was set: the launch stopped between two tokens."""


@dataclass
class Launch:
    """What one launch produced (the model's tokens, memory read from its state)."""

    program: Program
    prompt: list[int]
    tokens: list[int]  # generated, in order
    decoded: list[Token]
    memory: list[int]  # every word, from the recurrent state
    steps: int  # EXEC tokens
    prefill_seconds: float
    generate_seconds: float
    min_state_margin: float  # smallest dual-rail bit margin of the memory read (1.0 is perfect)
    logit_margin: float  # smallest top-1 minus top-2 logit over the generated tokens
    min_margin: float | None = None  # smallest gate margin (0.5 is perfect); None unless measured
    check: object = None  # a CheckReport when the launch was checked
    ended: str = "STOP"  # the last token's kind
    build_seconds: float = 0.0  # getting the runner (circuit build or cache read), 0 when it was ready

    @property
    def outputs(self) -> dict[str, list[int]]:
        """Every pointer parameter after the launch, as signed 32-bit integers."""
        return read_outputs(self.program, self.memory)

    @property
    def seconds(self) -> float:
        return self.prefill_seconds + self.generate_seconds

    @property
    def tokens_per_s(self) -> float:
        """Generated tokens per second of generation (the prefill not counted)."""
        return len(self.tokens) / self.generate_seconds if self.generate_seconds > 0 else 0.0


def max_launch_tokens(machine, budget: int) -> int:
    """A bound on a launch's length: every record of every step, for ``budget`` steps."""
    return budget * (1 + 4 * (machine.slots_per_block * machine.lanes * 2) + machine.lanes) + 8


def run_launch(program: Program, runner, *, step_budget: int | None = None,
               on_token: Callable[[int, Token], None] | None = None,
               cancel: threading.Event | None = None, check: bool = False,
               on_prompt: Callable[[list[int]], None] | None = None,
               on_checking: Callable[[], None] | None = None) -> Launch:
    """Run ``program`` on ``runner``; ``on_token(id, Token)`` streams the launch.

    ``on_prompt(prompt)`` hears the prompt before its prefill, ``on_checking()`` before the check.

    ``check``: measure gate margins while running and compare the launch with the
    reference (``Launch.check``). A launch the model ends with ``FAULT`` raises the
    matching error (``MemoryFault``, ``BarrierDeadlock``), with the launch attached as
    ``error.launch``; ``LaunchCancelled`` when ``cancel`` is set.
    """
    machine = runner.machine
    check_launchable(program, machine)
    budget = step_budget or machine.step_budget
    runner.reset()
    tracked = runner.track_margins
    runner.track_margins = tracked or check
    try:
        launch = _generate(program, runner, budget, on_token, cancel, on_prompt)
    finally:
        runner.track_margins = tracked
    if check:
        from .check import check_launch

        if on_checking is not None:
            on_checking()
        launch.check = check_launch(program, launch.tokens, machine, memory=launch.memory)
    if launch.ended == "FAULT":
        code = launch.decoded[-1].get("code")
        cls = {1: MemoryFault, 2: BarrierDeadlock}.get(code, ExecutionError)
        err = cls(f"the model stopped the launch: {FAULT_CODES[code]} (after {launch.steps} steps)")
        err.launch = launch  # type: ignore[attr-defined]
        raise err
    if launch.ended != "STOP":
        raise ExecutionError(f"the model's launch did not end with STOP after {len(launch.tokens)} tokens")
    return launch


def _generate(program, runner, budget, on_token, cancel, on_prompt) -> Launch:
    machine = runner.machine
    v = vocab_for(machine)
    prompt = prompt_tokens(program, machine)
    if on_prompt is not None:
        on_prompt(prompt)
    stop_ids = {v.id("STOP")} | {v.id("FAULT", code=c) for c in FAULT_CODES}
    limit = max_launch_tokens(machine, budget)
    t0 = time.perf_counter()
    logits = runner.step(prompt)
    t1 = time.perf_counter()
    out: list[int] = []
    steps, logit_margin = 0, float("inf")
    while True:
        if cancel is not None and cancel.is_set():
            raise LaunchCancelled()
        lg = np.array(logits)
        tok = int(np.argmax(lg))
        top2 = np.partition(lg, -2)[-2:]
        logit_margin = min(logit_margin, float(top2[1] - top2[0]))
        out.append(tok)
        t = v[tok]
        if on_token is not None:
            on_token(tok, t)
        if t.kind == "EXEC":
            steps += 1
            if steps > budget:
                raise StepBudgetExceeded(
                    f"step budget exceeded: the model's launch ran {budget} EXEC steps without finishing "
                    f"(block {t.get('block')}); an unbounded loop? raise --step-budget")
        if tok in stop_ids or len(out) > limit:
            break
        logits = runner.step([tok])
    t2 = time.perf_counter()
    memory, state_margin = read_memory(runner, machine)
    gate = runner.min_margin if runner.track_margins and np.isfinite(runner.min_margin) else None
    return Launch(program, prompt, out, [v[i] for i in out], memory, steps, t1 - t0, t2 - t1, state_margin,
                  logit_margin, gate, ended=v[out[-1]].kind)
