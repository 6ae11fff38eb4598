"""One launch on a runner: the model writes it, token by token, greedily.

The host feeds the prompt, then only appends the token the model chose until ``STOP``
or ``FAULT``; results are read from the recurrent state of the memory head, never
computed here. Everything a launch needs is passed in (program, runner, callbacks);
the result is a :class:`Launch`.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from qwengpu_mlx.core.errors import (ExecutionError, LaunchTimeout, StepBudgetExceeded,
                                TokenBudgetExceeded)
from qwengpu_mlx.core.isa import MEM_OPS, Op, Program, TermKind
from qwengpu_mlx.core.vocab import ENT_ITEMS, FAULT_CODES, RECORD_TOKENS, Token, vocab_for

from qwengpu_mlx.core.readout import read_memory, read_outputs
from qwengpu_mlx.runtime.check import check_launch
from qwengpu_mlx.runtime.expect import LaunchExpectation
from qwengpu_mlx.runtime.fault import model_fault
from qwengpu_mlx.runtime.native_step import top_two
from qwengpu_mlx.runtime.prompt import check_launchable, prompt_tokens


class LaunchCancelled(Exception):
    """The caller's cancel event was set: the launch stopped between two tokens."""


@dataclass
class Launch:
    """What one launch produced: the model's tokens and the memory read from its state (or,
    on the reference backend, the interpreter's memory and steps)."""

    program: Program
    prompt: list[int]
    tokens: list[int]  # generated, in order
    decoded: list[Token]
    memory: list[int]  # every word, from the recurrent state
    steps: int  # EXEC tokens
    prefill_seconds: float
    generate_seconds: float
    min_state_margin: float | None  # smallest dual-rail bit margin of the memory read (1.0 is perfect)
    logit_margin: float | None  # smallest top-1 minus top-2 logit over the generated tokens
    min_margin: float | None = None  # smallest gate margin (0.5 is perfect); None unless measured
    check: object = None  # a CheckReport when the launch was checked
    ended: str = "STOP"  # the last token's kind
    build_seconds: float = 0.0  # getting the runner (circuit build or cache read), 0 when it was ready
    backend: str = "model"  # "reference": the interpreter ran it (no tokens, no margins)

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


BOUNDARY_KINDS = ("CTA", "EXEC", "STOP", "FAULT")  # the tokens that start a new segment


class LaunchBounds:
    """The most tokens a correct launch of ``program`` can write, per step and in all.

    Why: the step budget counts EXEC tokens, so a model that stops writing them (a
    circuit whose weights are damaged but hash right loops on ``MEM ... PVAL``) would run
    to a program-blind bound (every record kind of every slot and lane, per step: 413,704
    tokens for the default budget), hours on a CPU.
    What one step writes follows from its block alone (``expect.py`` derives the exact
    records; this counts the most of each kind): ``VAL`` records for its returned
    registers and ``PVAL`` tokens when it writes a live-out predicate, per active lane;
    a ``MEM`` record per store or atomic slot and active lane; the SIMT stack entries a
    branch can push; a ``WST`` record per warp. A thread block's start is its ``CTA``
    token and a ``WST`` record per warp.
    """

    def __init__(self, program: Program, machine, step_budget: int):
        ex = LaunchExpectation(program, machine)
        self.machine, self.step_budget = machine, step_budget
        self.warps = -(-program.block_dim // machine.lanes)
        self.cta_tokens = self.warps * RECORD_TOKENS  # after the CTA token
        self._blocks = {b.index: self._block_counts(b, ex) for b in program.blocks}
        full = (1 << min(machine.lanes, program.block_dim)) - 1
        self.max_step = max((self.after_exec(b, full) for b in self._blocks), default=0)
        # one EXEC more than the budget: the step budget trips at that EXEC, before this bound
        self.total = program.grid_dim * (1 + self.cta_tokens) + (step_budget + 1) * (1 + self.max_step) + 1

    @staticmethod
    def _block_counts(block, ex) -> tuple[int, int]:
        """(tokens per active lane, stack-entry tokens) of one step of ``block``."""
        stores = sum(1 for ins in block.instrs if ins.op in MEM_OPS and ins.op is not Op.LD)
        per_lane = (len(ex.returned[block.index]) + stores) * RECORD_TOKENS + (1 if ex.pemit[block.index] else 0)
        ents = ENT_ITEMS * RECORD_TOKENS if block.term.kind is TermKind.BRANCH else 0
        return per_lane, ents

    def after_exec(self, block: int, mask: int) -> int:
        """The most tokens one step of ``block`` on the lanes of ``mask`` writes after its EXEC
        (the most of any block when the model named one the program does not have)."""
        counts = self._blocks.get(block)
        if counts is None:
            return self.max_step
        per_lane, ents = counts
        lanes = bin(mask & ((1 << self.machine.lanes) - 1)).count("1")
        return per_lane * lanes + ents + self.warps * RECORD_TOKENS

    def after(self, tok: Token) -> int:
        """The most tokens that may follow the boundary token ``tok`` before the next one."""
        if tok.kind == "EXEC":
            return self.after_exec(tok.get("block"), tok.get("mask"))
        return self.cta_tokens  # CTA (STOP and FAULT end the launch)


class _Progress:
    """How far a launch got, for the messages of the bounds that stop it."""

    def __init__(self, bounds: LaunchBounds, deadline: float | None, timeout: float | None):
        self.bounds, self.deadline, self.timeout = bounds, deadline, timeout
        self.start = time.monotonic()
        self.steps = 0
        self.since = 0  # tokens since the last boundary token
        self.allowed = bounds.cta_tokens  # before the first CTA: as after one
        self.boundary: Token | None = None
        self.prefill_seconds: float | None = None  # set once the prompt has been fed

    def where(self, tokens: int) -> str:
        """How far the launch got: prefill, steps, tokens, the last boundary token."""
        if self.prefill_seconds is None:
            return "before the prefill"
        at = f" (the last {self.boundary})" if self.boundary is not None else ""
        return (f"the prefill ({self.prefill_seconds:.1f} s), {self.steps} EXEC steps and {tokens} generated "
                f"tokens{at}")

    def check_time(self, tokens: int) -> None:
        """Raise :class:`LaunchTimeout` once the deadline has passed."""
        if self.deadline is None or time.monotonic() < self.deadline:
            return
        took = time.monotonic() - self.start
        bound = f"--timeout {self.timeout:g} s" if self.timeout is not None else "the deadline"
        err = LaunchTimeout(f"time bound exceeded: {bound} passed ({took:.1f} s) and the launch was stopped after "
                            f"{self.where(tokens)}; give it more time or a smaller launch")
        raise _attach(err, self.steps, tokens)

    def count(self, t: Token, tokens: int) -> None:
        """Count one generated token; raise :class:`TokenBudgetExceeded` past either token bound."""
        b = self.bounds
        if t.kind in BOUNDARY_KINDS:
            self.since, self.allowed, self.boundary = 0, b.after(t), t
        else:
            self.since += 1
        if self.since > self.allowed:
            what = (f"one step of B{self.boundary.get('block')} on its lanes"
                    if self.boundary is not None and self.boundary.kind == "EXEC" else "a thread block's start")
            err = TokenBudgetExceeded(
                f"token bound exceeded (per step): the model wrote {self.since} tokens after {self.boundary or 'GO'} "
                f"without a new EXEC, CTA, STOP or FAULT; {what} writes at most {self.allowed} (stopped after "
                f"{self.where(tokens)}). The circuit's weights may be damaged: delete the circuit cache to rebuild it")
            err.bound = "step"
            raise _attach(err, self.steps, tokens)
        if tokens > b.total:
            err = TokenBudgetExceeded(
                f"token bound exceeded (launch): {tokens} tokens, more than a launch of this program within "
                f"{b.step_budget} steps can write ({b.total}); stopped after {self.where(tokens)}")
            err.bound = "launch"
            raise _attach(err, self.steps, tokens)


def _attach(err: ExecutionError, steps: int, tokens: int) -> ExecutionError:
    """How far the launch got, on the error (for callers that report it)."""
    err.steps, err.tokens = steps, tokens  # type: ignore[attr-defined]
    return err


def _deadline(timeout: float | None) -> float | None:
    """``time.monotonic()`` at which ``timeout`` seconds from now have passed (None: no bound)."""
    if timeout is None:
        return None
    if not (timeout > 0 and math.isfinite(timeout)):
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    return time.monotonic() + timeout


def generate_launch(program: Program, runner, *, step_budget: int | None = None,
               on_token: Callable[[int, Token], None] | None = None,
               cancel: threading.Event | None = None, check: bool = False,
               on_prompt: Callable[[list[int]], None] | None = None,
               on_checking: Callable[[], None] | None = None, timeout: float | None = None) -> Launch:
    """Run ``program`` on ``runner``; ``on_token(id, Token)`` streams the launch. The loop
    behind ``runtime.launch``, which every caller uses.

    Bounds: ``step_budget`` EXEC steps (default the machine's), the tokens a launch of
    ``program`` can write within them (:class:`LaunchBounds`: ``TokenBudgetExceeded``),
    and, when given, ``timeout`` seconds from now (``LaunchTimeout``, checked between
    tokens and after the prefill).

    ``on_prompt(prompt)`` hears the prompt before its prefill, ``on_checking()`` before the check.

    ``check``: measure gate margins while running and compare the launch with the
    reference (``Launch.check``). A launch the model ends with ``FAULT`` raises the
    matching error (``MemoryFault``, ``BarrierDeadlock``), with the launch attached as
    ``error.launch``; ``LaunchCancelled`` when ``cancel`` is set.
    """
    machine = runner.machine
    check_launchable(program, machine)
    budget = step_budget or machine.step_budget
    progress = _Progress(LaunchBounds(program, machine, budget), _deadline(timeout), timeout)
    runner.reset()
    tracked = runner.track_margins
    runner.track_margins = tracked or check
    try:
        launch = _generate(program, runner, progress, on_token, cancel, on_prompt)
    finally:
        runner.track_margins = tracked
    if check:
        if on_checking is not None:
            on_checking()
        launch.check = check_launch(program, launch.tokens, machine, memory=launch.memory)
    if launch.ended == "FAULT":
        err = model_fault(program, machine, launch.decoded[-1].get("code"), launch.steps)
        err.launch = launch  # type: ignore[attr-defined]
        raise err
    if launch.ended != "STOP":
        raise ExecutionError(f"the model's launch did not end with STOP after {len(launch.tokens)} tokens")
    return launch


def _greedy_step(runner) -> Callable[[list[int]], tuple[int, float]]:
    """Feed tokens to ``runner``; ``(greedy next token, its logit margin)`` (``top_two``).
    A runner with ``step_top_two`` gives that pair itself (the native step: one pass over
    the logits instead of the vocabulary's logits through MLX and NumPy each token)."""
    fast = getattr(runner, "step_top_two", None)
    if fast is not None:
        return fast
    return lambda tokens: top_two(np.array(runner.step(tokens)))


def _generate(program, runner, progress: _Progress, on_token, cancel, on_prompt) -> Launch:
    """Greedy generation until STOP or FAULT, under the step, token and time bounds."""
    machine = runner.machine
    budget = progress.bounds.step_budget
    v = vocab_for(machine)
    prompt = prompt_tokens(program, machine)
    if on_prompt is not None:
        on_prompt(prompt)
    stop_ids = {v.id("STOP")} | {v.id("FAULT", code=c) for c in FAULT_CODES}
    progress.check_time(0)
    advance = _greedy_step(runner)
    t0 = time.perf_counter()
    tok, margin = advance(prompt)
    t1 = time.perf_counter()
    progress.prefill_seconds = t1 - t0
    out: list[int] = []
    steps, logit_margin = 0, float("inf")
    while True:
        if cancel is not None and cancel.is_set():
            raise LaunchCancelled()
        progress.check_time(len(out))
        logit_margin = min(logit_margin, margin)
        out.append(tok)
        t = v[tok]
        if on_token is not None:
            on_token(tok, t)
        if t.kind == "EXEC":
            steps += 1
            progress.steps = steps
            if steps > budget:
                raise StepBudgetExceeded(
                    f"step budget exceeded: the model's launch ran {budget} EXEC steps without finishing "
                    f"(block {t.get('block')}); an unbounded loop? raise --step-budget")
        if tok in stop_ids:
            break
        progress.count(t, len(out))
        tok, margin = advance([tok])
    t2 = time.perf_counter()
    memory, state_margin = read_memory(runner, machine)
    gate = runner.min_margin if runner.track_margins and np.isfinite(runner.min_margin) else None
    return Launch(program, prompt, out, [v[i] for i in out], memory, steps, t1 - t0, t2 - t1, state_margin,
                  logit_margin, gate, ended=v[out[-1]].kind)
