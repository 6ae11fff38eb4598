"""Robust inside a host model: a random Qwen3.5 host's hidden states share the residual stream.

The host (Gated DeltaNet and full-attention layers, massive-activation dims at 1e3-1e4)
runs in front of the circuit on the launch's own tokens; its last residual is added to
residual dims the circuit never touches, so every circuit RMSNorm sees it, as in the
combined model. The launch must stay exact: outputs equal to the NumPy oracle and every
step equal to the reference replay. ``bench/host_robustness.py`` finds the limit.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from qwengpu_mlx.core.readout import read_outputs
from tests.support.host_front import HostFront, random_host
from qwengpu_mlx.core.machine import PUBLISHED_MACHINE
from tests.support.runner_wide import WideCircuitRunner as CircuitRunner
from tests.support.launching import bound_program, on_runner

from tests.support.cli import needs_clang
from tests.support.oracles import ORACLES

ROOT = Path(__file__).resolve().parents[2]
MASSIVE = {7: 1e3, 100: 3e3, 200: 1e4}

pytestmark = needs_clang


@pytest.fixture(scope="module")
def setup(store):
    mc = store.machine_circuit(PUBLISHED_MACHINE)
    free = np.arange(mc.lay.used, mc.plan.shape.hidden)
    spec = json.loads((ROOT / "examples/kernels/dot.json").read_text())
    prog = bound_program(ROOT / "examples/kernels/dot.cu", args=spec["args"], block=spec["block"])
    return free, prog, spec, random_host(massive=MASSIVE)


def test_host_is_qwen35_shaped_with_massive_activations(setup):
    free, _, _, host = setup
    kinds = [layer.is_linear for layer in host.layers]
    assert kinds == [True, True, True, False]  # full attention every 4th layer
    h = np.array(HostFront(host, free).hidden(list(range(40))))
    assert np.all(np.abs(h[:, 200]) > 5e3) and np.all(np.abs(h[:, 7]) > 5e2)
    others = np.delete(h, list(MASSIVE), axis=1)
    assert np.abs(others).max() < 100  # ordinary dims stay ordinary


@pytest.mark.parametrize("scale, r_below", [(1, 1.0), (2500, 0.55)])
def test_dot_exact_with_host_in_front(store, setup, scale, r_below):
    free, prog, spec, host = setup
    front = HostFront(host, free, scale)
    runner = CircuitRunner(store.compact(PUBLISHED_MACHINE), PUBLISHED_MACHINE, front=front)
    launch = on_runner(prog, runner, step_budget=40, check=True)
    assert read_outputs(prog, launch.memory) == ORACLES["dot"](spec)
    assert launch.check.exact, launch.check.problems
    assert front.min_ratio < r_below  # the host really did shrink the signal
