"""A machine's circuit laid out for a dense Qwen3.5 checkpoint of a given shape.

The work is ``compiler.pipeline.compile_machine`` (schedule below the target MLP width,
fold onto physical dims with ``compiler.fold``, the shape's head geometry). This module
keeps the older entry point, ``dense_plan``, for its callers; ``DoesNotFit`` and
``SPREAD_SHARES`` are re-exported from where they live now.
"""

from __future__ import annotations

from qwengpu_mlx.machine import MachineConfig

from .assemble import Shape
from .fold import SPREAD_SHARES
from .machine_circuit import MachineCircuit
from .pipeline import compile_machine
from .reuse import Reuse
from .sizing import DoesNotFit

__all__ = ["DoesNotFit", "SPREAD_SHARES", "dense_plan"]


def dense_plan(machine: MachineConfig, shape: Shape) -> tuple[MachineCircuit, Reuse]:
    """(the MachineCircuit, its plan on ``shape``'s physical dims), or DoesNotFit naming what."""
    cm = compile_machine(machine, shape, fold=True)
    return cm.circuit, cm.reuse
