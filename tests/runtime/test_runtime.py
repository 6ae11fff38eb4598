"""The launch runtime: one path for every caller, a runner interface, cancel, an explicit store."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from qwengpu_mlx.core.machine import PUBLISHED_MACHINE
from qwengpu_mlx.runtime import LaunchCancelled, LaunchEvents, LaunchRequest, Runner, launch, prompt_tokens

from tests.support.cli import needs_clang
from tests.support.launching import on_runner
from tests.support.oracles import ORACLES

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "examples" / "kernels"

pytestmark = needs_clang


def dot_request() -> tuple[dict, LaunchRequest]:
    spec = json.loads((KERNELS / "dot.json").read_text())
    return spec, LaunchRequest(KERNELS / "dot.cu", spec["args"], kernel=spec["kernel"], block=spec["block"],
                               machine=PUBLISHED_MACHINE)


def with_check(req: LaunchRequest) -> LaunchRequest:
    return LaunchRequest(req.source, req.args, kernel=req.kernel, block=req.block, machine=req.machine, check=True)


def test_the_circuit_runner_is_a_runner(store):
    runner = store.runner(PUBLISHED_MACHINE)
    assert isinstance(runner, Runner)
    assert runner.machine == PUBLISHED_MACHINE
    assert store.runner(PUBLISHED_MACHINE) is runner and store.has_runner(PUBLISHED_MACHINE)


class Recorder(LaunchEvents):
    def __init__(self, cancel_after: int | None = None, cancel: threading.Event | None = None):
        self.phases, self.tokens, self.begun = [], [], None
        self.cancel_after, self.cancel = cancel_after, cancel

    def phase(self, text):
        self.phases.append(text)

    def begin(self, program, prompt):
        self.begun = (program, prompt)

    def token(self, token_id, tok):
        self.tokens.append(token_id)
        if self.cancel_after is not None and len(self.tokens) >= self.cancel_after:
            self.cancel.set()


def test_a_launch_streams_every_token_and_checks(store):
    spec, req = dot_request()
    events = Recorder()
    result = launch(with_check(req), store=store, events=events)
    assert result.outputs == ORACLES["dot"](spec)
    assert events.tokens == result.tokens  # every generated token streamed, in order
    assert events.begun[1] == result.prompt == prompt_tokens(result.program, PUBLISHED_MACHINE)
    assert result.check.exact and result.min_margin > 0.4 and result.min_state_margin > 0.9
    assert any("checking" in p for p in events.phases)
    assert result.tokens_per_s > 0 and result.prefill_seconds > 0


def test_cancel_stops_between_tokens_and_the_runner_runs_again(store):
    spec, req = dot_request()
    cancel = threading.Event()
    events = Recorder(cancel_after=5, cancel=cancel)
    with pytest.raises(LaunchCancelled):
        launch(req, store=store, events=events, cancel=cancel)
    assert len(events.tokens) == 5  # stopped at the next token
    result = on_runner(events.begun[0], store.runner(PUBLISHED_MACHINE))  # a fresh launch: state reset
    assert result.outputs == ORACLES["dot"](spec)
