"""Every model launch is bounded by steps, by tokens and, when asked, by time.

The token bounds come from the program (``generate.LaunchBounds``): a correct launch
never reaches them (checked against the complete launch the reference implies, for
every conformance kernel), and a model that writes records without ever writing an
EXEC (a damaged circuit) stops within one step's worth of tokens. Fake runners play the
broken models; one real launch shows the bounds let a good one through.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from qwengpu_mlx.core.errors import LaunchTimeout, TokenBudgetExceeded
from qwengpu_mlx.core.machine import PUBLISHED_MACHINE
from tests.support.launching import bound_program, on_runner
from qwengpu_mlx.runtime.generate import RECORD_TOKENS, LaunchBounds
from qwengpu_mlx.core.vocab import vocab_for

from tests.support.cli import needs_clang
from tests.support.oracles import machine_of

pytestmark = needs_clang

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "examples" / "kernels"
DOT_ARGS = ["--arg", "a=1,2,3", "--arg", "b=4,5,6", "--arg", "out=0", "--arg", "n=3"]


def _program(name: str, machine=PUBLISHED_MACHINE):

    spec = json.loads((KERNELS / f"{name}.json").read_text())
    return bound_program(KERNELS / f"{name}.cu", spec["kernel"], args=spec["args"], block=spec["block"],
                         grid=spec["grid"], machine=machine, shared=spec.get("shared", 0))


class ScriptedRunner:
    """A runner whose 'model' writes ``head`` then ``loop`` forever (ids of the launch vocabulary)."""

    def __init__(self, head: list[int], loop: list[int], machine=PUBLISHED_MACHINE, delay: float = 0.0):
        self.machine, self.memory_heads, self.track_margins, self.min_margin = machine, ((0, 0),), False, float("inf")
        self.head, self.loop, self.delay = head, loop, delay
        self.size = len(vocab_for(machine))
        self.reset()

    def reset(self) -> None:
        self.written = 0  # tokens chosen so far

    def step(self, tokens):
        if self.delay:
            time.sleep(self.delay)
        i = self.written
        tok = self.head[i] if i < len(self.head) else self.loop[(i - len(self.head)) % len(self.loop)]
        self.written += 1
        logits = np.zeros(self.size, dtype=np.float32)
        logits[tok] = 1.0
        return logits

    def recurrent_state(self, layer, head):  # pragma: no cover - a bounded launch never reads it
        raise AssertionError("the launch should have been stopped")


def _cta_start(v, warps: int) -> list[int]:
    """CTA(0) and a WST record per warp (payload chunks all 0: the fake does not care)."""
    out = [v.id("CTA", ctaid=0)]
    for w in range(warps):
        out += [v.id("WST", warp=w), v.id("C0", value=0), v.id("C1", value=0), v.id("C2", value=0)]
    return out


def test_the_bounds_hold_every_conformance_launch():
    """Per step and in all, no correct launch exceeds its bound (the reference's expected
    launch, every conformance kernel), and the launch bound is far under the old one."""
    from qwengpu_mlx.runtime.check import reference_run
    from qwengpu_mlx.runtime.expect import expected_segments

    old_bound = 413_704  # the program-blind bound this replaces, for the default budget
    for path in sorted(KERNELS.glob("*.json")):
        m = machine_of(json.loads(path.read_text()))
        v = vocab_for(m)
        prog = _program(path.stem, m)
        ref = reference_run(prog, m, budget=m.step_budget)
        segs = expected_segments(prog, m, ref.trace, fault=ref.fault, inside_step=ref.inside_step)
        bounds = LaunchBounds(prog, m, m.step_budget)
        assert sum(len(s.tokens) for s in segs) <= bounds.total < old_bound, path.stem
        for s in segs:
            head = v[s.tokens[0]]
            if head.kind in ("CTA", "EXEC"):
                assert len(s.tokens) - 1 <= bounds.after(head), (path.stem, s.where)


def test_a_model_that_never_writes_exec_stops_at_the_step_token_bound():
    """A damaged circuit's loop: records (MEM ... PVAL) forever, never an EXEC."""
    prog = _program("dot")
    v = vocab_for(PUBLISHED_MACHINE)
    bounds = LaunchBounds(prog, PUBLISHED_MACHINE, PUBLISHED_MACHINE.step_budget)
    loop = [v.id("MEM", item=0, addr=6), v.id("C0", value=1), v.id("C1", value=0), v.id("C2", value=0),
            v.id("PVAL", lane=0, bits=1)]
    runner = ScriptedRunner(_cta_start(v, bounds.warps), loop)
    t = time.perf_counter()
    with pytest.raises(TokenBudgetExceeded, match=r"token bound exceeded \(per step\)") as e:
        on_runner(prog, runner)
    assert time.perf_counter() - t < 5
    assert e.value.bound == "step" and e.value.steps == 0
    assert e.value.tokens == 1 + bounds.cta_tokens + 1  # stopped at the first token past a thread block's start
    assert "CTA(0)" in str(e.value) and "damaged" in str(e.value)


def test_a_model_that_repeats_thread_block_starts_stops_at_the_launch_token_bound():
    """Each CTA token starts a new segment, so only the bound on the whole launch can stop this one."""
    prog = _program("dot")
    v = vocab_for(PUBLISHED_MACHINE)
    bounds = LaunchBounds(prog, PUBLISHED_MACHINE, 10)
    runner = ScriptedRunner([], _cta_start(v, bounds.warps))
    with pytest.raises(TokenBudgetExceeded, match=r"token bound exceeded \(launch\)") as e:
        on_runner(prog, runner, step_budget=10)
    assert e.value.bound == "launch" and e.value.tokens == bounds.total + 1
    assert f"({bounds.total})" in str(e.value) and "within 10 steps" in str(e.value)


def test_a_model_that_loops_forever_is_stopped_by_the_timeout():
    """Well-formed steps forever (EXEC without records is within every bound): only time stops it."""
    prog = _program("dot")
    v = vocab_for(PUBLISHED_MACHINE)
    warps = LaunchBounds(prog, PUBLISHED_MACHINE, 1).warps
    runner = ScriptedRunner(_cta_start(v, warps), [v.id("EXEC", block=1, warp=0, mask=7)], delay=0.002)
    t = time.perf_counter()
    with pytest.raises(LaunchTimeout, match="time bound exceeded: --timeout 0.3 s") as e:
        on_runner(prog, runner, step_budget=10**9, timeout=0.3)
    assert 0.3 <= time.perf_counter() - t < 5
    assert e.value.steps > 10 and f"{e.value.steps} EXEC steps" in str(e.value)
    assert "EXEC(1, 0, 7)" in str(e.value)  # how far it got: the last step's token


def test_a_real_launch_completes_under_the_bounds_and_a_short_timeout_stops_it(store):
    prog = _program("dot")
    runner = store.runner(PUBLISHED_MACHINE)
    with pytest.raises(LaunchTimeout, match="time bound exceeded") as e:
        on_runner(prog, runner, timeout=1e-6)
    assert e.value.tokens == 0
    launch = on_runner(prog, runner, timeout=600)  # the runner is reset: a fresh launch
    assert launch.ended == "STOP" and launch.outputs["out"] == [32]
    bounds = LaunchBounds(prog, PUBLISHED_MACHINE, PUBLISHED_MACHINE.step_budget)
    assert len(launch.tokens) <= bounds.total
    assert bounds.cta_tokens == bounds.warps * RECORD_TOKENS


def test_cli_timeout_is_an_error_that_says_how_far_the_launch_got(store, capsys):
    from qwengpu_mlx.cli.main import main

    store.runner(PUBLISHED_MACHINE)  # the circuit is in the (test session's) cache
    rc = main(["run", str(KERNELS / "dot.cu"), *DOT_ARGS, "--timeout", "0.000001",
               "--machine", "published"])  # that circuit's machine, whichever is the default: none is built here
    err = capsys.readouterr().err
    assert rc == 1 and err.startswith("error: time bound exceeded: --timeout 1e-06 s")  # a launch that fails
    assert "generated tokens" in err or "before the prefill" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon"])
def test_cli_timeout_must_be_a_finite_positive_number(value, capsys):
    from qwengpu_mlx.cli.main import main

    with pytest.raises(SystemExit) as e:
        main(["run", str(KERNELS / "dot.cu"), *DOT_ARGS, "--timeout", value])
    assert e.value.code == 2 and "--timeout" in capsys.readouterr().err


def test_step_budget_help_says_what_the_default_costs():
    from qwengpu_mlx.cli.main import build_parser

    run = build_parser()._subparsers._group_actions[0].choices["run"]
    text = " ".join(run.format_help().split())
    assert "about an hour" in text and "--timeout" in text and "4096" in text
