"""What a launch runs on: the runner interface.

A launch needs only this of a model: start from empty state, feed tokens and get the
logits of the last one, read the recurrent state of a head, and know which head holds
memory. The compact circuit runner (``qwengpu_mlx.runtime.circuit_runner.CircuitRunner``) is one
implementation; a combined Qwen3.5 + circuit model is another. Launch token ids are
the machine vocabulary's (``vocab.py``); a runner over a larger vocabulary maps them.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from qwengpu_mlx.core.machine import MachineConfig


@runtime_checkable
class Runner(Protocol):
    machine: MachineConfig
    memory_heads: tuple[tuple[int, int], ...]  # (layer, head) whose state rows are the memory words, in order
    track_margins: bool  # measure every gate's margin while stepping (slower)
    min_margin: float  # smallest gate margin since reset(), in bits (0.5 is perfect)

    def reset(self) -> None:
        """Forget every token: empty recurrent and conv state."""

    def step(self, tokens: list[int]):
        """Feed ``tokens`` (a prompt or one token); the logits of the last one."""

    def recurrent_state(self, layer: int, head: int) -> np.ndarray:
        """The state [Dv, Dk] of ``head`` in ``layer``, as float32."""
