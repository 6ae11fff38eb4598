"""Idle heads on the sparse native step: a head with live key channels whose key is far below
SiLU's cut-off (-88) has no key, and the step skips its SiLUs (``may_key`` in
``circuit_step.cpp``). Expected values: the dense step (every channel's SiLU, every head)
over the same tokens, bit for bit; the profile shows such heads were met and skipped.
"""

import json
from pathlib import Path

import numpy as np

from qwengpu_mlx.core.machine import LARGE_MACHINE
from qwengpu_mlx.runtime.circuit_runner import CircuitRunner
from qwengpu_mlx.runtime.native_step import NativeStep
from qwengpu_mlx.runtime.prompt import prompt_tokens
from tests.support.launching import bound_program, on_runner

KERNELS = Path(__file__).resolve().parents[2] / "examples" / "kernels"


def test_idle_heads_are_met_and_their_skip_changes_no_bit(store, module):
    machine = LARGE_MACHINE
    runner = store.runner(machine)
    spec = json.loads((KERNELS / "dot.json").read_text())
    prog = bound_program(KERNELS / "dot.cu", spec["kernel"], args=spec["args"], block=spec["block"],
                         grid=spec["grid"], machine=machine)
    launch = on_runner(prog, runner)
    cc = store.compact(machine)
    narrow = CircuitRunner(cc, machine).narrow
    sparse, dense = NativeStep(narrow, module), NativeStep(narrow, module, sparse=False)
    sparse.start_profile()
    rows = runner._rows
    states = sparse.zeros(), dense.zeros()
    for i, t in enumerate(prompt_tokens(prog, machine) + launch.tokens[:-1]):
        x = rows.embed(t, sparse.width)
        (a, ma), (b, mb) = sparse(x, states[0], True), dense(x, states[1], True)
        assert np.array_equal(a.view(np.uint32), b.view(np.uint32)) and ma == mb, f"token {i}"
    _, work = sparse.profile_report()
    idle = work["heads visited"] - work["heads run (key or state)"]
    live_keys = work["conv outputs non-zero"]
    assert idle > 10 and live_keys > 0  # heads with live channels and no key were met, per token
    assert np.array_equal(states[0][1].view(np.uint32), states[1][1].view(np.uint32))
