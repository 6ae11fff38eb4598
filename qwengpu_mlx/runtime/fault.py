"""The error for a launch the model ended with ``FAULT``, naming what faulted.

The model's ``FAULT`` token carries only its code (memory fault, deadlock); the
faulting address is inside the step and never written out. The reference interpreter
runs the same program exactly and names the array and index (``a[200]``, or "far
outside every array"), so the error quotes its account, or says that the two
disagree (then ``--check`` shows where).
"""

from __future__ import annotations

from qwengpu_mlx.core.errors import BarrierDeadlock, DivisionByZero, ExecutionError, MemoryFault
from qwengpu_mlx.core.isa import Program
from qwengpu_mlx.core.machine import MachineConfig
from qwengpu_mlx.core.reference import run_program
from qwengpu_mlx.core.vocab import FAULT_CODES

__all__ = ["model_fault"]


def model_fault(program: Program, machine: MachineConfig, code: int | None, steps: int) -> ExecutionError:
    """``MemoryFault``/``BarrierDeadlock`` (else ``ExecutionError``) for the model's FAULT(code)."""
    cls = {1: MemoryFault, 2: BarrierDeadlock}.get(code, ExecutionError)
    what = FAULT_CODES.get(code, f"fault code {code}")
    head = f"the model stopped the launch: {what} (after {steps} steps)"
    try:
        run_program(program, machine, trace=False)
    except DivisionByZero as ref:
        if cls is MemoryFault:  # the division routine's trap: say what it means first
            return DivisionByZero(f"{ref} (the model stopped the launch at the division's trap after {steps} steps)")
        return cls(f"{head}, but the reference interpreter stops otherwise: {ref} (rerun with --check)")
    except cls as ref:
        return cls(f"{head}; the reference interpreter finds: {ref}")
    except ExecutionError as ref:
        return cls(f"{head}, but the reference interpreter stops otherwise: {ref} (rerun with --check)")
    return cls(f"{head}, but the reference interpreter runs the launch to its end (rerun with --check)")
