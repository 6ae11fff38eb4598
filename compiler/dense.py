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

SPREAD_SHARES = (0.8, 0.75, 0.85, 0.7, 0.9)
"""Shares of the target MLP width the logical gates are spread to, tried in turn: the
rest is room for the clear gates of dim reuse, and how many dims the fold needs depends
on where that room falls."""


class DoesNotFit(ValueError):
    """The machine's circuit needs more than the shape has; the message names what."""


def _scheduled(machine: MachineConfig, units: int, heads: int) -> MachineCircuit:
    mc = MachineCircuit(machine)
    mc.build()
    mc.plan.finalize()
    mc.schedule(units=units, heads=heads)
    return mc


def _fold(machine: MachineConfig, shape: Shape, share: float) -> tuple[MachineCircuit, Reuse]:
    mc = _scheduled(machine, int(shape.intermediate * share) // 2 * 2, shape.linear_heads)
    if mc.scheduled.startswith("MLPs not spread"):  # too tight: the full width, less room for clears
        mc = _scheduled(machine, shape.intermediate, shape.linear_heads)
    n = needs(mc.plan)
    problems = [p for p in misfits(n, shape) if not p.startswith("residual:")]
    if problems:
        raise DoesNotFit("; ".join(problems))
    return mc, reuse_dims(mc.plan, units=shape.intermediate)


def dense_plan(machine: MachineConfig, shape: Shape) -> tuple[MachineCircuit, Reuse]:
    """(the MachineCircuit, its plan on ``shape``'s physical dims), or DoesNotFit naming what."""
    best = None
    for share in SPREAD_SHARES:
        mc, r = _fold(machine, shape, share)
        if best is None or r.physical < best[1].physical:
            best = (mc, r)
        if r.physical <= shape.hidden or r.physical > 1.2 * shape.hidden:
            break  # it fits; or it is so far over that no other share will make it fit
    mc, r = best
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
