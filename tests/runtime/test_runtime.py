"""The launch runtime: one path for every caller, a runner interface, cancel, an explicit store."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from qwengpu_mlx.core.machine import DEFAULT_MACHINE
from qwengpu_mlx.runtime import LaunchCancelled, LaunchRequest, Runner, launch_kernel, prompt_tokens, run_launch

from tests.support.cli import needs_clang
from tests.support.oracles import ORACLES

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "examples" / "kernels"

pytestmark = needs_clang


def dot_request() -> tuple[dict, LaunchRequest]:
    spec = json.loads((KERNELS / "dot.json").read_text())
    return spec, LaunchRequest(KERNELS / "dot.cu", spec["args"], kernel=spec["kernel"], block=spec["block"])


def test_the_circuit_runner_is_a_runner(store):
    runner = store.runner(DEFAULT_MACHINE)
    assert isinstance(runner, Runner)
    assert runner.machine == DEFAULT_MACHINE
    assert store.runner(DEFAULT_MACHINE) is runner and store.has_runner(DEFAULT_MACHINE)


class Recorder:
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


def test_launch_kernel_streams_every_token_and_checks(store):
    spec, req = dot_request()
    events = Recorder()
    launch = launch_kernel(req, store, events=events, check=True)
    assert launch.outputs == ORACLES["dot"](spec)
    assert events.tokens == launch.tokens  # every generated token streamed, in order
    assert events.begun[1] == launch.prompt == prompt_tokens(launch.program, DEFAULT_MACHINE)
    assert launch.check.exact and launch.min_margin > 0.4 and launch.min_state_margin > 0.9
    assert any("checking" in p for p in events.phases)
    assert launch.tokens_per_s > 0 and launch.prefill_seconds > 0


def test_cancel_stops_between_tokens_and_the_runner_runs_again(store):
    spec, req = dot_request()
    cancel = threading.Event()
    events = Recorder(cancel_after=5, cancel=cancel)
    with pytest.raises(LaunchCancelled):
        launch_kernel(req, store, events=events, cancel=cancel)
    assert len(events.tokens) == 5  # stopped at the next token
    launch = run_launch(events.begun[0], store.runner(DEFAULT_MACHINE))  # a fresh launch: state reset
    assert launch.outputs == ORACLES["dot"](spec)
