"""A machine's circuit laid out for a dense Qwen3.5 checkpoint of a given shape.

The compact path runs the compiler's logical plan (one residual dim per value). A
standard checkpoint has a fixed hidden size, intermediate size and head count in every
layer, so for one the plan is scheduled a little below the target MLP width (the clear
gates of dim reuse need room), its values folded onto physical dims
(``compiler.reuse``), and its builders given the shape's head geometry. The result is
an ordinary :class:`CircuitPlan`: ``weights()`` gives the checkpoint, ``compact()``
the fast path over the very same weights.
"""

from __future__ import annotations

from dataclasses import replace

from qwengpu_mlx.machine import MachineConfig

from .assemble import CircuitPlan, Shape
from .machine_circuit import MachineCircuit
from .reuse import Reuse, reuse_dims
from .sizing import misfits, needs

SPREAD_SHARE = 0.75  # of the target MLP width for the logical gates; the rest is room for clear gates


class DoesNotFit(ValueError):
    """The machine's circuit needs more than the shape has; the message names what."""


def dense_plan(machine: MachineConfig, shape: Shape) -> tuple[MachineCircuit, Reuse]:
    """(the MachineCircuit, its plan on ``shape``'s physical dims), or DoesNotFit."""
    mc = MachineCircuit(machine)
    mc.build()
    mc.plan.finalize()
    units = int(shape.intermediate * SPREAD_SHARE) // 2 * 2
    mc.schedule(units=units, heads=shape.linear_heads)
    if mc.scheduled.startswith("MLPs not spread"):  # too tight: the full width, less room for clears
        mc = MachineCircuit(machine)
        mc.build()
        mc.plan.finalize()
        mc.schedule(units=shape.intermediate, heads=shape.linear_heads)
    n = needs(mc.plan)
    problems = [p for p in misfits(n, shape) if not p.startswith("residual:")]
    if n.heads_max > shape.linear_heads:
        problems.append(f"linear attention: {n.heads_max} heads in one layer, the shape has {shape.linear_heads}")
    if problems:
        raise DoesNotFit("; ".join(dict.fromkeys(problems)))
    r = reuse_dims(mc.plan, units=shape.intermediate)
    if r.physical > shape.hidden:
        raise DoesNotFit(f"residual: {r.physical} dims after reuse ({r.logical} values), the shape has "
                         f"{shape.hidden}")
    plan: CircuitPlan = r.plan
    plan.shape = replace(shape)
    plan.layout.hidden = shape.hidden
    for lp in plan.layers:
        if lp.mlp is not None:
            lp.mlp.intermediate = shape.intermediate
        if lp.mixer is not None:
            lp.mixer.H, lp.mixer.Dk, lp.mixer.Dv = shape.linear_heads, shape.key_dim, shape.value_dim
    return mc, r
