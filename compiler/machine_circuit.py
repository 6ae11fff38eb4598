"""The whole SIMT machine as a Qwen3.5 circuit: :func:`build_circuit` runs its stages in order.

Stages (docs/CIRCUIT.md, "Pass layout"), each a module that takes the
:class:`~compiler.wiring.CircuitWiring` (the plan being built) and the products of the
stages before it, adds gates (MLPs) and memory heads (DeltaNet mixers), and returns its own:

``context``   the last EXEC (block, warp, mask), the launch geometry, the last record header: a Context
``fetch``     ROM row of the block, field decoders, register and predicate reads: a Fetch
``slot(s)``   operand mux, ALU families, memory read / atomics, guard merge (``compiler.slot``): a SlotIO per slot
``control``   SIMT stack, warp scheduling, the next EXEC and the step's records (``compiler.control``)
``latch``     this step's results held in single-row heads for the emission passes: Latches
``emit``      the next token: VAL / PVAL / MEM / ENT / WST records, then EXEC, CTA, STOP or FAULT

``compiler.pipeline.compile_machine`` runs build, finalize, schedule (and the fold for a
dense shape). Each stage's gates and heads are noted as its own on the layers they land
in (``compiler.placement``).

Every pass runs every stage; only EXEC passes write latches, only record tokens write
registers and memory, so the other passes' datapath values are harmless.
"""

from __future__ import annotations

from dataclasses import dataclass

from qwengpu_mlx.core.machine import DEFAULT_MACHINE, MachineConfig

from qwengpu_mlx.compiler.assemble import CircuitPlan, Shape
from qwengpu_mlx.compiler.context import Context, context
from qwengpu_mlx.compiler.control import control_state
from qwengpu_mlx.compiler.control_early import EarlyControl
from qwengpu_mlx.compiler.control_late import LateControl
from qwengpu_mlx.compiler.emit import EmitStage
from qwengpu_mlx.compiler.fetch import Fetch, fetch, fetch_slot
from qwengpu_mlx.compiler.latch import LatchStage
from qwengpu_mlx.compiler.levels import DEFAULT_LEVELS, Levels
from qwengpu_mlx.compiler.memory_parts import header_parts, part_count
from qwengpu_mlx.compiler.residual import ResidualLayout
from qwengpu_mlx.compiler.sizing import QWEN35_2B
from qwengpu_mlx.compiler.slot import SlotStage
from qwengpu_mlx.compiler.wiring import CircuitWiring

MAX_LAYERS = 48
"""A sanity bound on the circuit's depth: the published machine needs 45 layers (the
published system's count); the large machine's memory address takes one MLP more per
slot (a two-stage thermometer), and its schedule 47."""
MLP_UNITS = QWEN35_2B.intermediate  # every MLP is spread to Qwen3.5-2B's width

NARROW = Shape(hidden=1 << 17, intermediate=16384, linear_heads=80, key_dim=128, value_dim=64,
               attn_heads=1, kv_heads=1, head_dim=64)


def memory_heads_in(plan, names: list[str]) -> tuple[tuple[int, int], ...]:
    """(layer, head index) of the heads ``names`` in ``plan``, in the order named."""
    where = {h.name: (i, h.index) for i, lp in enumerate(plan.layers)
             for h in (lp.mixer.heads if lp.mixer is not None else [])}
    missing = [n for n in names if n not in where]
    if missing:
        raise LookupError(f"no head {missing[0]!r}")
    return tuple(where[n] for n in names)


@dataclass(frozen=True)
class MachineCircuit:
    """A built circuit: the plan every stage wrote into, one residual dim per value.

    The later passes (``CircuitPlan.finalize``, ``schedule.schedule_plan``) work on
    ``plan`` in place; the memory heads are found by name, wherever they moved.
    """

    machine: MachineConfig
    plan: CircuitPlan
    memory_head_names: list  # the heads the host reads memory words from, words in order

    @property
    def lay(self) -> ResidualLayout:
        """The residual layout: which dims hold what (``plan.layout``)."""
        return self.plan.layout

    @property
    def memory_heads(self) -> tuple[tuple[int, int], ...]:
        """(layer, head index) of each memory head the host reads words from, in word order."""
        return memory_heads_in(self.plan, self.memory_head_names)


def build_circuit(machine: MachineConfig = DEFAULT_MACHINE, shape: Shape = NARROW,
                  levels: Levels = DEFAULT_LEVELS, *, dense: bool = False) -> MachineCircuit:
    """Every stage in turn, each at the earliest layers its inputs allow (module doc).

    ``dense``: the circuit a dense checkpoint holds (folded onto a fixed hidden size), in
    the form :func:`fewest_dims` picks for the machine.
    """
    cw = CircuitWiring(machine, shape, levels, fewest_dims=dense and fewest_dims(machine, shape))
    with cw.stage("context"):
        ctx = context(cw, 0)
    with cw.stage("fetch"):
        fetched = fetch(cw, ctx, 1, zero_keys=zero_keys(cw))
    with cw.stage("control.state"):
        state = control_state(cw, ctx, 1)
    with cw.stage("control.early"):
        candidates = EarlyControl(cw, ctx, fetched, state).build(2)
    slots, decodes, slot_end = build_slots(cw, ctx, fetched, state.exist, 2)
    with cw.stage("control.late"):
        records, L = LateControl(cw, ctx, fetched, state, candidates).build(slot_end[-1], slots)
    with cw.stage("latch"):
        latches, L = LatchStage(cw, ctx, fetched, records, slot_end).build(L, slots)
    with cw.stage("emit"):
        EmitStage(cw, ctx, fetched, decodes, state.exist, latches).build(L)
    return MachineCircuit(machine, finish(cw), slots[0].memory_heads)


def fewest_dims(machine: MachineConfig, shape: Shape) -> bool:
    """Whether the machine's dense circuit takes the form with the fewest residual dims:
    the EXEC block and the ENT row in binary, decoded by the ROM and stack heads' SiLU,
    and ``ONE2``-decoded register and memory keys. The compact form's one-hots and
    exact-zero keys let the native step skip the rows a kernel never names, but plain
    keys and queries take residual dims no other value may have held (``compiler.reuse``):
    on the large machine (memory over several parts) that form needs some 2,400 dims at
    Qwen3.5-2B's shape, which has 2,048. The published machines' dense circuit fits in its
    compact form and stays the one their checkpoints hold."""
    return part_count(machine.mem_words, shape.key_dim) > 1


def zero_keys(cw: CircuitWiring) -> bool:
    """Whether the register and memory heads' keys (and the memory queries) are exact zeros
    off their own headers and addresses (``memory_parts``): on a machine whose memory
    spreads over several heads per reader (the large one), where most of those heads and
    rows are never touched by a small kernel. The published machines keep ``ONE2``-decoded
    keys: their fold for a dense checkpoint lets a decoded key's inputs reuse dims, which an
    exact-zero key (a plain key, ``compiler.reuse``) may not."""
    return part_count(cw.m.mem_words, cw.plan.shape.key_dim) > 1 and not cw.fewest_dims


def build_slots(cw: CircuitWiring, ctx: Context, fetched: Fetch, exist: list, L: int) -> tuple[list, list, list]:
    """The block's slots from layer ``L``, each after the one before (it may read their results).

    Returns (each slot's SlotIO, each slot's decode, per slot the first layer that sees its results).
    """
    slots, decodes, slot_end = [], [fetched.slot0], []
    mem_keys = None
    if zero_keys(cw):
        with cw.stage("memory.keys"):
            mem_keys = header_parts(cw, 1, cw.plan.shape.key_dim)
    for s in range(cw.m.slots_per_block):
        if s:
            with cw.stage(f"slot{s}.fetch"):
                decodes.append(fetch_slot(cw, ctx, fetched, s, L))
        with cw.stage(f"slot{s}"):
            io, L = SlotStage(cw, ctx, fetched, decodes[s], exist, mem_keys).build(s, L, slots)
        slots.append(io)
        slot_end.append(L)
    return slots, decodes, slot_end


def finish(cw: CircuitWiring) -> CircuitPlan:
    """The plan's depth checked, its vocabulary, token embedding and final-norm dims set."""
    plan = cw.plan
    if len(plan.layers) > MAX_LAYERS:
        raise ValueError(f"circuit needs {len(plan.layers)} layers > {MAX_LAYERS}")
    plan.vocab = cw.vocab.names()
    plan.embedding_sparse = cw.t.sparse_matrix(cw.ONE, cw.K)
    plan.final_norm_dims = cw.t.out_dims
    return plan
