"""One entry point from a machine to the plan its weights come from: :func:`compile_machine`.

The stages, each a function returning what it made (never a message to parse):

``build``     every gate and head at the earliest layer its inputs allow (``machine_circuit.build_circuit``):
              a MachineCircuit (its plan, where the host reads memory)
``finalize``  class constants and class-2 copies (``CircuitPlan.finalize``): the finalized plan
``schedule``  gates and heads spread to a width cap (``schedule.schedule_plan``): a ScheduleOutcome
``order``     every gate and head reads what blocks below it wrote (``order.check_order``), else ValueError
``fold``      for a dense shape: values folded onto its physical dims (``fold.fold_onto``): a Reuse

``build`` itself is the list of the circuit's stages (``machine_circuit``); finalize and
schedule are passes over the built plan, which they change in place (a copy of a plan
of 45,000 gates per pass would only cost time) and say what they did by what they return.

The narrow shape (``machine_circuit.NARROW``) is the compiler's logical one: one residual
dim per value, run by the compact path. Any other shape is a dense checkpoint's (such as
``sizing.QWEN35_2B``): the logical plan is scheduled below its MLP width to leave room for
the fold's clear gates, at each share of ``fold.SPREAD_SHARES`` until one fits, and
folded. A shape the circuit cannot fit raises :class:`~compiler.sizing.DoesNotFit`, whose
``misfits`` say which width, how much is needed and how much the shape has.
"""

from __future__ import annotations

from dataclasses import dataclass

from qwengpu_mlx.core.machine import DEFAULT_MACHINE, MachineConfig
from qwengpu_mlx.core.machine_support import check_circuit_supports

from qwengpu_mlx.compiler.assemble import CircuitPlan, Shape
from qwengpu_mlx.compiler.compact import compact
from qwengpu_mlx.compiler.fold import SPREAD_SHARES, fit_shape, fold_onto, residual_misfit, spread_units
from qwengpu_mlx.compiler.machine_circuit import MLP_UNITS, NARROW, MachineCircuit, build_circuit, memory_heads_in
from qwengpu_mlx.compiler.order import check_order
from qwengpu_mlx.compiler.reuse import Reuse
from qwengpu_mlx.compiler.schedule import ScheduleOutcome, schedule_plan
from qwengpu_mlx.compiler.sizing import DoesNotFit


@dataclass
class CompiledMachine:
    """A compiled machine: its logical circuit and the plan its weights come from."""

    machine: MachineConfig
    shape: Shape  # the shape asked for
    circuit: MachineCircuit  # built, finalized and scheduled: one residual dim per value
    plan: CircuitPlan  # what the weights come from: ``circuit.plan``, or the folded ``reuse.plan``
    schedule: ScheduleOutcome  # what the schedule pass did to ``circuit.plan``
    reuse: Reuse | None = None  # the fold onto a dense shape's dims (None: the logical shape)
    share: float | None = None  # share of the shape's MLP width the logical gates were spread to (folded)

    @property
    def folded(self) -> bool:
        return self.reuse is not None

    @property
    def memory_heads(self) -> tuple[tuple[int, int], ...]:
        """(layer, head index) of the memory heads the host reads words from, in ``plan``, in word order."""
        return memory_heads_in(self.plan, self.circuit.memory_head_names)

    def compact(self):
        """The compact circuit of ``plan`` (``compiler.compact``), knowing where the host reads memory."""
        cc = compact(self.plan)
        cc.memory_heads = self.memory_heads
        return cc


def build_stage(machine: MachineConfig, shape: Shape = NARROW, dense: bool = False) -> MachineCircuit:
    """Every stage's gates and heads at the earliest layers their inputs allow (``dense``: in
    the form a dense checkpoint holds, ``machine_circuit.fewest_dims``)."""
    return build_circuit(machine, shape, dense=dense)


def finalize_stage(plan: CircuitPlan) -> CircuitPlan:
    """Class constants and copies: decisions that do not move with the signal ratio."""
    plan.finalize()
    return plan


def schedule_stage(plan: CircuitPlan, units: int, heads: int) -> ScheduleOutcome:
    """Gates spread to at most ``units`` per MLP where they have slack, heads towards ``heads`` per layer.

    Returns what happened (a machine whose critical layers cannot be brought under
    ``units`` keeps the stages' layers; ``describe()`` says it in words).
    """
    return schedule_plan(plan, units, heads)


def logical_circuit(machine: MachineConfig, shape: Shape = NARROW, *, units: int = MLP_UNITS,
                    heads: int | None = None, dense: bool = False) -> tuple[MachineCircuit, ScheduleOutcome]:
    """build, finalize, schedule, then the dataflow order checked (``compiler.order``): the
    logical plan, one residual dim per value.

    ``heads``: the most a layer keeps after scheduling (None: the shape's own linear
    heads). The narrow circuit the CLI runs keeps a memory stage's heads in one layer (the
    large machine's 1,024 words are 32 heads a stage): a layer with a mixer costs every
    token its norm and projections, so fewer such layers make a faster step; a dense
    shape's fold is scheduled for that shape's heads (``fold_attempt``).
    """
    circuit = build_stage(machine, shape, dense)
    plan = finalize_stage(circuit.plan)
    outcome = schedule_stage(plan, units, shape.linear_heads if heads is None else heads)
    check_order(plan)  # one dim per value here: the fold below may give a dim several writers
    return circuit, outcome


@dataclass
class FoldAttempt:
    circuit: MachineCircuit
    schedule: ScheduleOutcome
    reuse: Reuse
    share: float


def fold_attempt(machine: MachineConfig, shape: Shape, share: float) -> FoldAttempt:
    """The logical plan spread to ``share`` of the shape's MLP width, then folded onto its dims.

    Where the MLPs cannot be brought that low, the plan is spread to the full width (less
    room for the clear gates). DoesNotFit when a width other than the residual is short.
    """
    circuit, outcome = logical_circuit(machine, units=spread_units(shape, share), heads=shape.linear_heads,
                                       dense=True)
    if not outcome.mlps_spread:  # too tight: the full width, less room for clears
        circuit, outcome = logical_circuit(machine, units=shape.intermediate, heads=shape.linear_heads, dense=True)
    return FoldAttempt(circuit, outcome, fold_onto(circuit.plan, shape), share)


def fold_search(machine: MachineConfig, shape: Shape) -> FoldAttempt:
    """The fold with the fewest physical dims over the spread shares; DoesNotFit if even that is too wide."""
    best = None
    for share in SPREAD_SHARES:
        a = fold_attempt(machine, shape, share)
        if best is None or a.reuse.physical < best.reuse.physical:
            best = a
        if a.reuse.physical <= shape.hidden or a.reuse.physical > 1.2 * shape.hidden:
            break  # it fits; or it is so far over that no other share will make it fit
    misfit = residual_misfit(best.reuse, shape)
    if misfit is not None:
        raise DoesNotFit([misfit])
    fit_shape(best.reuse.plan, shape)
    return best


def compile_machine(machine: MachineConfig = DEFAULT_MACHINE, shape: Shape = NARROW, *,
                    fold: bool | None = None) -> CompiledMachine:
    """The machine's circuit for ``shape``: logical at the narrow shape, folded for a dense one.

    ``fold`` None folds every shape but the narrow one. Raises DoesNotFit (with typed
    ``misfits``) when the circuit does not fit a dense shape, and ResourceError, before
    any weight, for a machine the circuit does not support (``machine_support``).
    """
    check_circuit_supports(machine)
    if fold is None:
        fold = shape != NARROW
    if not fold:
        circuit, outcome = logical_circuit(machine, shape)
        return CompiledMachine(machine, shape, circuit, circuit.plan, outcome)
    a = fold_search(machine, shape)
    return CompiledMachine(machine, shape, a.circuit, a.reuse.plan, a.schedule, a.reuse, a.share)
