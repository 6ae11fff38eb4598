"""An example's launch beside the native step twice over, sparse and dense: what the tests of
the native step's skips compare token by token (the dense step, every channel and head, is
their expected value)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from qwengpu_mlx.core.machine import MachineConfig
from qwengpu_mlx.runtime.circuit_runner import CircuitRunner
from qwengpu_mlx.runtime.native_step import NativeStep, SparseRows
from qwengpu_mlx.runtime.prompt import prompt_tokens
from tests.support.launching import bound_program, on_runner

KERNELS = Path(__file__).resolve().parents[2] / "examples" / "kernels"


@dataclass
class StepPair:
    fed: list[int]  # the prompt and the launch's tokens but the last: what a step is fed
    rows: SparseRows  # each token's embedding row
    sparse: NativeStep
    dense: NativeStep


def step_pair(store, module, machine: MachineConfig, name: str = "dot") -> StepPair:
    """Example ``name`` (``examples/kernels/NAME.cu`` with its launch file) run on ``machine``'s
    runner for its tokens, and the native step of its narrow circuit, sparse and dense."""
    spec = json.loads((KERNELS / f"{name}.json").read_text())
    prog = bound_program(KERNELS / f"{name}.cu", spec["kernel"], args=spec["args"], block=spec["block"],
                         grid=spec["grid"], machine=machine)
    launch = on_runner(prog, store.runner(machine))
    circuit = CircuitRunner(store.compact(machine), machine)
    rows = SparseRows.of(np.array(circuit.embedding), np.array(circuit.embedding_pos))
    return StepPair(prompt_tokens(prog, machine) + launch.tokens[:-1], rows,
                    NativeStep(circuit.narrow, module), NativeStep(circuit.narrow, module, sparse=False))
