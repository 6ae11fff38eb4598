"""The native step keeps each mixer's conv state as a ring of three rows (``Ring`` in
``circuit_step.cpp``: a step overwrites the oldest row); ``NativeStep.layer_states`` gives
it oldest row first. Expected values: the MLX-ops runner's conv states (rows that move one
back each step) after the same tokens, every layer, in the same order."""

import json
from pathlib import Path

import numpy as np

from qwengpu_mlx.core.machine import PUBLISHED_MACHINE
from qwengpu_mlx.runtime.circuit_runner import CircuitRunner
from qwengpu_mlx.runtime.prompt import prompt_tokens
from tests.support.launching import bound_program, on_runner

KERNELS = Path(__file__).resolve().parents[2] / "examples" / "kernels"


def test_the_conv_ring_reads_back_as_the_mlx_runners_conv_states(store, module):
    machine = PUBLISHED_MACHINE
    cc = store.compact(machine)
    native, ops = CircuitRunner(cc, machine, native=module), CircuitRunner(cc, machine)
    spec = json.loads((KERNELS / "shfl_broadcast.json").read_text())
    prog = bound_program(KERNELS / "shfl_broadcast.cu", spec["kernel"], args=spec["args"], block=spec["block"],
                         grid=spec["grid"], machine=machine)
    launch = on_runner(prog, native)
    native.reset()
    fed = [prompt_tokens(prog, machine)] + [[t] for t in launch.tokens[:40]]
    layers = [L for L, mz in enumerate(ops.mixers) if mz is not None]
    for i, tokens in enumerate(fed):  # the ring's oldest row goes round many times
        native.step(tokens), ops.step(tokens)
        if i < len(fed) - 3:
            continue
        for L in layers:  # three steps in a row: the oldest row is each of the three once
            got = native.native.layer_states(native._packed, L)[0]
            want = np.array(ops.conv_state[L]).reshape(got.shape)
            assert np.array_equal(got, want), f"conv state of layer {L} after step {i}"
