"""The model backend: the launch is written by the compiled circuit, token by token.

The host builds the prompt (launch geometry, ``PROG`` records for the ROM, ``MEM``
records for the inputs, ``GO``), then only appends the token the model chose (greedy)
until ``STOP`` or ``FAULT``. Results are read from the recurrent state of a memory
head (dual-rail bits, decoded with their margin), never computed here. ``--check``
replays the reference interpreter's trace against the decoded launch, step by step.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from qwengpu_mlx.errors import BarrierDeadlock, ExecutionError, MemoryFault, ResourceError, StepBudgetExceeded
from qwengpu_mlx.isa import Program
from qwengpu_mlx.machine import DEFAULT_MACHINE, MachineConfig, to_signed
from qwengpu_mlx.vocab import FAULT_CODES, Token, chunk_value, vocab_for

_CIRCUITS: dict = {}  # machine -> MachineCircuit (the compiler's full description)
_RUNNERS: dict = {}  # machine -> CircuitRunner (what launches run on)


def machine_circuit_for(machine: MachineConfig = DEFAULT_MACHINE):
    """The compiled MachineCircuit (layout, plan, gates): built once per process."""
    if machine not in _CIRCUITS:
        from qwengpu_mlx.compiler.machine_circuit import build_machine_circuit

        _CIRCUITS[machine] = build_machine_circuit(machine)
    return _CIRCUITS[machine]


def runner_for(machine: MachineConfig = DEFAULT_MACHINE):
    """The CircuitRunner for a machine: from the on-disk cache (checked, rebuilt when
    corrupt or stale: ``qwengpu_mlx.circuit_cache``) or compiled; once per process."""
    if machine not in _RUNNERS:
        from qwengpu_mlx.circuit_cache import cached_compact
        from qwengpu_mlx.runner import CircuitRunner

        _RUNNERS[machine] = CircuitRunner(cached_compact(machine, lambda: compact_circuit(machine_circuit_for(machine))))
    return _RUNNERS[machine]


def compact_circuit(mc, plan=None):
    """The compact circuit of ``plan`` (default: ``mc.plan``), knowing where the host reads memory."""
    from qwengpu_mlx.compiler.compact import compact

    cc = compact(mc.plan if plan is None else plan)
    cc.memory_head = tuple(mc.memory_head)
    return cc


def runner_ready(machine: MachineConfig = DEFAULT_MACHINE) -> bool:
    return machine in _RUNNERS


def circuit_for(machine: MachineConfig = DEFAULT_MACHINE):
    """(MachineCircuit, CircuitRunner) for a machine: built once per process."""
    return machine_circuit_for(machine), runner_for(machine)


def prompt_tokens(program: Program, machine: MachineConfig = DEFAULT_MACHINE) -> list[int]:
    """DIMS, the program as PROG records, the inputs as MEM records, GO."""
    from qwengpu_mlx.encoding import encode_program

    v = vocab_for(machine)
    toks = [v.id("DIMS", ntid=program.block_dim), v.id("GRID", nctaid=program.grid_dim)]
    for b, pieces in enumerate(encode_program(program, machine)):
        for p, value in enumerate(pieces):
            if value:
                toks += v.record(v.id("PROG", block=b, piece=p), value)
    for addr, value in enumerate(program.memory):
        if value:
            toks += v.record(v.id("MEM", item=v.input_item, addr=addr), value)
    toks.append(v.id("GO"))
    return toks


def check_supported(program: Program, machine: MachineConfig) -> None:
    """Refuse, before any token, what this circuit does not run yet."""
    from qwengpu_mlx.vocab import MAX_GRID

    if program.grid_dim > MAX_GRID:
        raise ResourceError(f"the model backend runs grids of up to {MAX_GRID} thread blocks "
                            f"(CTA tokens), not gridDim.x = {program.grid_dim}")


@dataclass
class ModelLaunch:
    prompt: list[int]
    tokens: list[int]  # generated, in order
    memory: list[int]
    margin_bits: float  # smallest decoded state-bit margin (fraction of the level)
    logit_margin: float  # smallest top-1 minus top-2 logit over generated tokens
    seconds: float
    steps: int
    decoded: list[Token] = field(default_factory=list)


def read_memory(runner, machine: MachineConfig) -> tuple[list[int], float]:
    """Memory words from the recurrent state of a memory head; and the worst bit margin."""
    layer, head = runner.memory_head
    S = runner.recurrent_state(layer, head)  # [Dv, Dk]; column w = word w
    words, worst = [], 1.0
    for w in range(machine.mem_words):
        col = S[:, w]
        b, nb = col[0:64:2], col[1:64:2]
        level = float(np.max(np.abs(col))) if np.any(col) else 0.0
        if level == 0.0:
            words.append(0)
            continue
        bits = (b > nb).astype(int)
        worst = min(worst, float(np.min(np.abs(b - nb)) / level))
        words.append(int(sum(int(x) << i for i, x in enumerate(bits))))
    return words, worst


def run_model(program: Program, machine: MachineConfig = DEFAULT_MACHINE, *, step_budget: int | None = None,
              on_token=None) -> ModelLaunch:
    """Run a launch on the compiled circuit; ``on_token(token_id, Token)`` streams it."""
    check_supported(program, machine)
    budget = step_budget or machine.step_budget
    v = vocab_for(machine)
    runner = runner_for(machine)
    runner.reset()
    prompt = prompt_tokens(program, machine)
    t0 = time.perf_counter()
    logits = runner.step(prompt)
    out: list[int] = []
    steps, logit_margin = 0, float("inf")
    stop_ids = {v.id("STOP")} | {v.id("FAULT", code=c) for c in FAULT_CODES}
    max_tokens = budget * (1 + 4 * (machine.slots_per_block * machine.lanes * 2) + machine.lanes) + 8
    while True:
        lg = np.array(logits)
        tok = int(np.argmax(lg))
        top2 = np.partition(lg, -2)[-2:]
        logit_margin = min(logit_margin, float(top2[1] - top2[0]))
        out.append(tok)
        t = v[tok]
        if on_token is not None:
            on_token(tok, t)
        if t.kind == "EXEC":
            steps += 1
            if steps > budget:
                raise StepBudgetExceeded(
                    f"step budget exceeded: the model's launch ran {budget} EXEC steps without finishing "
                    f"(block {t.get('block')}); an unbounded loop? raise --step-budget")
        if tok in stop_ids or len(out) > max_tokens:
            break
        logits = runner.step([tok])
    seconds = time.perf_counter() - t0
    memory, margin = read_memory(runner, machine)
    launch = ModelLaunch(prompt, out, memory, margin, logit_margin, seconds, steps, [v[i] for i in out])
    last = v[out[-1]]
    if last.kind == "FAULT":
        cls = {1: MemoryFault, 2: BarrierDeadlock}.get(last.get("code"), ExecutionError)
        raise cls(f"the model stopped the launch: {FAULT_CODES[last.get('code')]} (after {steps} steps)")
    if last.kind != "STOP":
        raise ExecutionError(f"the model's launch did not end with STOP after {len(out)} tokens")
    return launch


def decode_launch(tokens: list[Token]) -> list[dict]:
    """Group generated tokens into steps: EXEC, its VAL/PVAL/MEM records (values joined)."""
    steps: list[dict] = []
    i = 0
    while i < len(tokens):
        t = tokens[i]
        if t.kind == "EXEC":
            steps.append({"block": t.get("block"), "warp": t.get("warp"), "mask": t.get("mask"),
                          "vals": [], "pvals": [], "mems": []})
            i += 1
        elif t.kind in ("VAL", "MEM", "ENT", "WST") and i + 3 < len(tokens):
            value = chunk_value(tokens[i + 1:i + 4])
            if steps:
                if t.kind == "VAL":
                    steps[-1]["vals"].append((t.get("slot"), t.get("lane"), value))
                elif t.kind == "MEM":
                    steps[-1]["mems"].append((t.get("item"), t.get("addr"), value))
            i += 4
        elif t.kind == "PVAL":
            if steps:
                steps[-1]["pvals"].append((t.get("lane"), t.get("bits")))
            i += 1
        else:
            i += 1
    return steps


def check_against_reference(program: Program, launch: ModelLaunch, machine: MachineConfig) -> list[str]:
    """Replay the reference trace against the model's launch; return the mismatches."""
    from .reference import run_program

    ref = run_program(program, machine, trace=True)
    steps = decode_launch(launch.decoded)
    problems = []
    for i, rec in enumerate(ref.trace):
        if i >= len(steps):
            problems.append(f"step {i}: the model stopped; reference runs B{rec.block} w{rec.warp}")
            break
        st = steps[i]
        if (st["block"], st["warp"], st["mask"]) != (rec.block, rec.warp, rec.mask):
            problems.append(f"step {i}: model EXEC(B{st['block']}, w{st['warp']}, mask {st['mask']:04b}) "
                            f"!= reference (B{rec.block}, w{rec.warp}, mask {rec.mask:04b})")
            break
        blk = program.blocks[rec.block]
        last: dict = {}
        for lane, reg, value in rec.reg_writes:
            last[(lane, reg)] = value
        for slot, lane, value in st["vals"]:
            reg = blk.instrs[slot].dst
            exp = last.get((lane, reg))
            if exp is not None and exp != value:
                problems.append(f"step {i} B{rec.block} w{rec.warp} lane {lane} r{reg}: model {to_signed(value)} "
                                f"!= reference {to_signed(exp)}")
        # each word's value after the step (an atomic's word comes back once, final)
        mem_model = dict((addr, value) for _, addr, value in st["mems"])
        mem_ref = dict(rec.mem_writes)
        if mem_model != mem_ref:
            problems.append(f"step {i} B{rec.block} w{rec.warp}: memory after the step {sorted(mem_model.items())} "
                            f"!= reference {sorted(mem_ref.items())}")
    if len(steps) > len(ref.trace):
        problems.append(f"the model ran {len(steps)} steps, the reference {len(ref.trace)}")
    for w, (a, b) in enumerate(zip(launch.memory, ref.memory)):
        if a != b:
            problems.append(f"memory word {w}: model {to_signed(a)} != reference {to_signed(b)}")
    return problems
