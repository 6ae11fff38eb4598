"""The exact reference interpreter of the SIMT machine (``docs/MACHINE.md``).

:func:`run_program` runs a lowered :class:`~qwengpu_mlx.core.isa.Program` on a
:class:`~qwengpu_mlx.core.machine.MachineConfig` and returns the final memory, the step
count and a per-step trace. The model backend is replayed against that trace step by
step, so everything here is deterministic and follows the specification literally:

* thread blocks run one after another (``ctaid.x = 0 .. gridDim.x-1``), memory persists;
* within a thread block the lowest-numbered runnable warp runs until it reaches a
  barrier or exits, then the lowest runnable warp runs next;
* one machine block for one warp is one step (one ``EXEC(b, w)`` token); the step
  budget counts steps over the whole grid;
* divergence uses an IPDOM reconvergence stack per warp (GPGPU-Sim style); a branch
  with ``reconv=None`` reconverges only at exit;
* a barrier releases when every live (not exited) thread of the thread block waits
  at a barrier; if no warp can run and some live thread is not at a barrier the
  launch stops with :class:`~qwengpu_mlx.core.errors.BarrierDeadlock`.

Step numbers in :class:`StepRecord` are 0-based and count over the whole grid, so
``result.trace[i].step == i``. Errors raised while running
(:class:`StepBudgetExceeded`, :class:`BarrierDeadlock`, :class:`MemoryFault`) carry the
partial run as ``err.result`` (a :class:`RunResult`: memory as it was when the launch
stopped, the steps completed and their trace).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from qwengpu_mlx.core import isa
from qwengpu_mlx.core.errors import (
    BarrierDeadlock,
    DivisionByZero,
    ExecutionError,
    MemoryFault,
    ResourceError,
    StepBudgetExceeded,
)
from qwengpu_mlx.core.isa import Imm, Instr, Op, Pred, Reg, Special, TermKind
from qwengpu_mlx.core.machine import DEFAULT_MACHINE, OPERAND_SPECIALS, MachineConfig, to_signed

EXIT_PC = -1
"""Sentinel block index: "reconverge only at exit" (a branch with ``reconv=None``)."""


# --------------------------------------------------------------------------- semantics


def alu_value(op: Op, a: list[int], *, signed: bool = False, bits: int = 32) -> int:
    """The value of an ALU instruction on unsigned operands (the machine's semantics).

    The lowering folds constant instructions with this same function.
    """
    M = (1 << bits) - 1
    if op is Op.MOV:
        return a[0]
    if op is Op.ADD:
        return (a[0] + a[1]) & M
    if op is Op.SUB:
        return (a[0] - a[1]) & M
    if op is Op.MUL:
        return (a[0] * a[1]) & M
    if op is Op.MAD:
        return (a[0] * a[1] + a[2]) & M
    if op is Op.NEG:
        return (-a[0]) & M
    if op is Op.ABS:
        return abs(to_signed(a[0], bits)) & M
    if op in (Op.MIN, Op.MAX):
        x, y = (to_signed(a[0], bits), to_signed(a[1], bits)) if signed else (a[0], a[1])
        r = min(x, y) if op is Op.MIN else max(x, y)
        return r & M
    if op is Op.AND:
        return a[0] & a[1]
    if op is Op.OR:
        return a[0] | a[1]
    if op is Op.XOR:
        return a[0] ^ a[1]
    if op is Op.NOT:
        return ~a[0] & M
    if op is Op.SHL:
        return (a[0] << a[1]) & M if a[1] < bits else 0
    if op is Op.SHR:
        if signed:
            return (to_signed(a[0], bits) >> min(a[1], bits - 1)) & M
        return a[0] >> a[1] if a[1] < bits else 0
    raise ValueError(f"not an ALU operation: {op}")


# --------------------------------------------------------------------------- records


@dataclass
class StepRecord:
    """What one ``EXEC(b, w)`` step did."""

    step: int  # 0-based, counted over the whole grid
    ctaid: int
    block: int
    warp: int
    mask: int  # active lanes, bit l = lane l
    reg_writes: list[tuple[int, int, int]] = field(default_factory=list)  # (lane, reg, value)
    pred_writes: list[tuple[int, int, bool]] = field(default_factory=list)  # (lane, pred, value)
    mem_writes: list[tuple[int, int]] = field(default_factory=list)  # (word, new value)
    next: tuple[int, int, int] | None = None  # (block, warp, mask) next in this thread block
    barrier_release: bool = False  # this step completed a barrier
    # what the step did, in the detail a check of the model's launch asks for
    mem_items: list[tuple[int, int, int, int, bool]] = field(default_factory=list)  # (slot, lane, word, value, atomic)
    event: str = ""  # the terminator's effect: continue, pop, diverge, barrier, exit
    pushes: list[tuple[str, int, int, int, int]] = field(default_factory=list)  # (role, level, pc, rpc, mask)
    released: list[int] = field(default_factory=list)  # warps a barrier release made ready
    warps_after: list["WarpStatus"] = field(default_factory=list)  # every warp of the thread block


@dataclass(frozen=True)
class WarpStatus:
    """A warp after a step: ``state`` is ready, wait or done; ``pc``/``mask`` its top entry."""

    state: str
    depth: int | None  # index of the top stack entry; None when done
    exited: int  # lanes that existed and exited
    pc: int
    mask: int


@dataclass
class RunResult:
    memory: list[int]  # final memory image, unsigned 32-bit
    steps: int
    trace: list[StepRecord]
    registers: list[list[list[int]]]  # [warp][lane][reg] of the last thread block run
    predicates: list[list[list[bool]]] = field(default_factory=list)  # [warp][lane][pred]
    max_stack_depth: int = 0  # deepest reconvergence stack any warp reached


# --------------------------------------------------------------------------- formatting


def _mask_str(mask: int, lanes: int) -> str:
    """Lane 0 first: ``1011`` means lanes 0, 2 and 3 are active."""
    return "".join("1" if mask >> lane & 1 else "0" for lane in range(lanes))


def _signed_str(value: int) -> str:
    return str(to_signed(value))


def format_step(rec: StepRecord, lanes: int = 4) -> str:
    """One line for a trace, e.g.

    ``step 12 cta 0 B3 w1 mask 1011 r5[l0]=7 p1[l2]=T mem[3]=9 -> B4 w1 mask 1111``.

    Masks are written lane 0 first. Values are shown as signed 32-bit decimals. A step
    that completed a barrier shows ``bar.release``; the last step of a thread block
    shows ``-> end``.
    """
    parts = [f"step {rec.step} cta {rec.ctaid} B{rec.block} w{rec.warp} mask {_mask_str(rec.mask, lanes)}"]
    parts += [f"r{reg}[l{lane}]={_signed_str(v)}" for lane, reg, v in rec.reg_writes]
    parts += [f"p{p}[l{lane}]={'T' if v else 'F'}" for lane, p, v in rec.pred_writes]
    parts += [f"mem[{word}]={_signed_str(v)}" for word, v in rec.mem_writes]
    if rec.barrier_release:
        parts.append("bar.release")
    if rec.next is None:
        parts.append("-> end")
    else:
        b, w, m = rec.next
        parts.append(f"-> B{b} w{w} mask {_mask_str(m, lanes)}")
    return " ".join(parts)


def _lane_list(mask: int, lanes: int) -> str:
    return ",".join(str(lane) for lane in range(lanes) if mask >> lane & 1)


# --------------------------------------------------------------------------- validation

_ARITY: dict[Op, tuple[int, int]] = {op: (n, np) for op, (n, np, _) in isa.OPERAND_COUNTS.items()}


def check_runs_on(program: isa.Program, machine: MachineConfig = DEFAULT_MACHINE) -> None:
    """Raise :class:`ResourceError` (sizes, geometry) or ``ValueError`` (a malformed
    program, i.e. a lowering bug) when ``program`` cannot run on ``machine``."""
    m = machine
    if not 1 <= program.block_dim <= m.max_block_dim:
        raise ResourceError(
            f"blockDim.x = {program.block_dim} does not fit the machine: a thread block holds "
            f"1 to {m.max_block_dim} threads ({m.max_warps} warps of {m.lanes} lanes)"
        )
    if program.grid_dim < 1:
        raise ResourceError(f"gridDim.x = {program.grid_dim}: a launch needs at least 1 thread block")
    if len(program.memory) != m.mem_words:
        raise ResourceError(
            f"the memory image has {len(program.memory)} words; the machine's memory is "
            f"exactly {m.mem_words} 32-bit words"
        )
    if not program.blocks:
        raise ResourceError("the program has no blocks")
    if len(program.blocks) > m.rom_blocks:
        raise ResourceError(
            f"the program needs {len(program.blocks)} machine blocks; the ROM holds {m.rom_blocks}"
        )
    nblocks = len(program.blocks)

    def check_pred(p: Pred | None, where: str) -> None:
        if p is not None and not 0 <= p.index < m.preds:
            raise ResourceError(
                f"{where}: predicate p{p.index} is outside the machine's {m.preds} predicate registers"
            )

    def check_target(t: int | None, what: str, where: str, allow_none: bool = False) -> None:
        if t is None and allow_none:
            return
        if t is None or not 0 <= t < nblocks:
            raise ValueError(f"{where}: {what} B{t} is not a block of the program (B0..B{nblocks - 1})")

    for i, block in enumerate(program.blocks):
        where = f"B{i}"
        if block.index != i:
            raise ValueError(f"block at position {i} says it is B{block.index}")
        if len(block.instrs) > m.slots_per_block:
            raise ResourceError(
                f"{where} holds {len(block.instrs)} instructions; a machine block holds "
                f"{m.slots_per_block}"
            )
        for ins in block.instrs:
            w = f"{where}: {ins}"
            if ins.op not in _ARITY:
                raise ValueError(f"{w}: unknown operation {ins.op!r}")
            nsrc, npsrc = _ARITY[ins.op]
            if len(ins.srcs) != nsrc or len(ins.psrcs) != npsrc:
                raise ValueError(
                    f"{w}: {ins.op.value} takes {nsrc} value and {npsrc} predicate operands, "
                    f"got {len(ins.srcs)} and {len(ins.psrcs)}"
                )
            for s in ins.srcs:
                if isinstance(s, Reg):
                    if not 0 <= s.index < m.regs:
                        raise ResourceError(f"{w}: register r{s.index} is outside the machine's {m.regs} rows")
                elif isinstance(s, Special):
                    if s.name not in OPERAND_SPECIALS:
                        raise ValueError(f"{w}: unknown special register %{s.name}")
                elif not isinstance(s, Imm):
                    raise ValueError(f"{w}: bad operand {s!r}")
            for p in ins.psrcs:
                check_pred(p, w)
            check_pred(ins.guard, w)
            if ins.dst is not None:
                if ins.writes_pred:
                    check_pred(Pred(ins.dst), w)
                elif not 0 <= ins.dst < m.regs:
                    raise ResourceError(f"{w}: register r{ins.dst} is outside the machine's {m.regs} rows")
            if ins.pdst is not None:
                check_pred(Pred(ins.pdst), w)
            if ins.op is Op.SETP and ins.cmp not in isa.CMP_OPS:
                raise ValueError(f"{w}: setp needs a comparison out of {isa.CMP_OPS}")
            if ins.op is Op.SHFL and ins.mode not in isa.SHFL_MODES:
                raise ValueError(f"{w}: shfl needs a mode out of {isa.SHFL_MODES}")
        t = block.term
        if t.kind in (TermKind.JUMP, TermKind.BARRIER):
            check_target(t.target, "target", where)
        elif t.kind is TermKind.BRANCH:
            check_target(t.target, "target", where)
            check_target(t.fallthrough, "fallthrough", where)
            check_target(t.reconv, "reconvergence block", where, allow_none=True)
            if t.pred is None:
                raise ValueError(f"{where}: branch without a predicate")
            check_pred(t.pred, where)
        elif t.kind is not TermKind.EXIT:
            raise ValueError(f"{where}: unknown terminator {t.kind!r}")


# --------------------------------------------------------------------------- warps


class _Entry:
    __slots__ = ("pc", "rpc", "mask")

    def __init__(self, pc: int, rpc: int, mask: int):
        self.pc, self.rpc, self.mask = pc, rpc, mask


class _Warp:
    def __init__(self, index: int, mask: int):
        self.index = index
        self.exists = mask  # lanes of this warp that exist in the thread block
        self.live = mask  # lanes that exist and have not exited
        self.stack: list[_Entry] = [_Entry(0, EXIT_PC, mask)]
        self.waiting = False
        self.wait_mask = 0
        self.wait_block = -1

    @property
    def done(self) -> bool:
        return not self.stack

    @property
    def runnable(self) -> bool:
        return bool(self.stack) and not self.waiting

    def settle(self) -> None:
        """Drop empty entries, then pop while the top entry has reached its
        reconvergence block."""
        st = self.stack
        if any(e.mask == 0 for e in st):
            st[:] = [e for e in st if e.mask]
        while st and st[-1].pc == st[-1].rpc:
            st.pop()
        if st and st[-1].pc == EXIT_PC:  # cannot happen: such an entry's lanes all exited
            raise ExecutionError(
                f"internal error: warp {self.index} lanes {st[-1].mask:#x} wait for a reconvergence at exit"
            )

    def status(self) -> WarpStatus:
        exited = self.exists & ~self.live
        if self.done:
            return WarpStatus("done", None, exited, 0, 0)
        top = self.stack[-1]
        return WarpStatus("wait" if self.waiting else "ready", len(self.stack) - 1, exited, top.pc, top.mask)

    def push(self, role: str, pc: int, rpc: int, mask: int, pushed: list) -> None:
        # An entry that starts at its reconvergence block would be popped as soon as it
        # is exposed: never pushing it gives the same steps (as GPGPU-Sim does).
        if mask and pc != rpc:
            pushed.append((role, len(self.stack), pc, rpc, mask))
            self.stack.append(_Entry(pc, rpc, mask))

    def diverge(self, taken_pc: int, taken: int, other_pc: int, other: int, reconv: int) -> list:
        """Split the top entry; return the entries pushed as (role, level, pc, rpc, mask)."""
        top = self.stack.pop()
        pushed: list = []
        # The top entry becomes the reconvergence entry, unless it would reconverge at
        # the same block (then it would be popped right after the two sides).
        if reconv != top.rpc:
            pushed.append(("reconverge", len(self.stack), reconv, top.rpc, top.mask))
            self.stack.append(_Entry(reconv, top.rpc, top.mask))
        self.push("other", other_pc, reconv, other, pushed)
        self.push("taken", taken_pc, reconv, taken, pushed)
        return pushed

    def exit_lanes(self, mask: int) -> None:
        self.live &= ~mask
        for e in self.stack:
            e.mask &= ~mask


# --------------------------------------------------------------------------- the launch


class _Launch:
    def __init__(self, program, machine, budget, keep_trace, on_step):
        self.p = program
        self.m = machine
        self.M = machine.word_mask
        self.bits = machine.word_bits
        self.budget = budget
        self.keep_trace = keep_trace
        self.on_step = on_step
        self.memory = [v & self.M for v in program.memory]
        self.steps = 0
        self.trace: list[StepRecord] = []
        self.max_depth = 0
        self.regs: list[list[list[int]]] = []
        self.preds: list[list[list[bool]]] = []
        self.ctaid = 0

    # ---- results

    def result(self) -> RunResult:
        return RunResult(
            memory=list(self.memory),
            steps=self.steps,
            trace=self.trace,
            registers=[[list(r) for r in w] for w in self.regs],
            predicates=[[list(p) for p in w] for w in self.preds],
            max_stack_depth=self.max_depth,
        )

    def fail(self, err: Exception) -> Exception:
        err.result = self.result()  # type: ignore[attr-defined]
        return err

    # ---- operands

    def value(self, op, warp: int, lane: int) -> int:
        if isinstance(op, Reg):
            return self.regs[warp][lane][op.index]  # row 0 is never written
        if isinstance(op, Imm):
            return op.value & self.M
        name = op.name
        lanes = self.m.lanes
        tid = warp * lanes + lane
        if name == "tid.x":
            v = tid
        elif name == "tid.x*4":
            v = 4 * tid
        elif name == "ntid.x":
            v = self.p.block_dim
        elif name == "ctaid.x":
            v = self.ctaid
        elif name == "nctaid.x":
            v = self.p.grid_dim
        elif name == "laneid":
            v = tid % lanes
        elif name == "warpid":
            v = tid // lanes
        else:  # rejected by check_runs_on
            raise ValueError(f"unknown special register %{name}")
        return v & self.M

    def pred(self, p: Pred, warp: int, lane: int) -> bool:
        v = self.preds[warp][lane][p.index]
        return (not v) if p.negated else v

    # ---- one instruction

    def alu(self, ins: Instr, a: list[int]) -> int:
        return alu_value(ins.op, a, signed=ins.signed, bits=self.bits)

    def compare(self, ins: Instr, a: int, b: int) -> bool:
        if ins.signed:
            a, b = to_signed(a, self.bits), to_signed(b, self.bits)
        c = ins.cmp
        if c == "eq":
            return a == b
        if c == "ne":
            return a != b
        if c == "lt":
            return a < b
        if c == "le":
            return a <= b
        if c == "gt":
            return a > b
        if c == "ge":
            return a >= b
        raise ValueError(f"unknown comparison {c!r}")

    def address(self, ins: Instr, rec: StepRecord, warp: int, lane: int) -> int:
        addr = (self.value(ins.srcs[0], warp, lane) + ins.offset) & self.M
        limit = 4 * self.m.mem_words
        if (addr >= limit or addr % 4) and ins.trap:
            raise self.fail(DivisionByZero(
                f"{ins.trap}: the divisor is 0 on lane {lane} of warp {warp} (thread {warp * self.m.lanes + lane} "
                f"of thread block {rec.ctaid}), at step {rec.step}; a real GPU returns an undefined value, "
                f"this machine stops the launch"))
        if addr >= limit or addr % 4:
            why = (
                f"is outside the memory (bytes 0..{limit - 1}, {self.m.mem_words} words)"
                if addr >= limit
                else "is not a multiple of 4 (word-aligned addresses only)"
            )
            raise self.fail(
                MemoryFault(
                    f"memory fault at step {rec.step} (thread block {rec.ctaid}, block B{rec.block}, "
                    f"warp {warp}, lane {lane}): {ins.op.value} address {addr} {why}: {self.element(addr)}"
                )
            )
        return addr // 4

    def element(self, addr: int) -> str:
        """``a[-1]``: the array element a faulting byte address stands for.

        The array it lies in, or, with one array, its index there (before or past
        its ends); with several arrays the word and the layout, since the machine
        code does not say which array an address came from. Addresses far from
        every array (a wrapped index, an address the lowering knows to be outside
        memory) are said to be so."""
        regions = [*self.p.arrays, *self.p.shared]
        s = to_signed(addr, self.bits)
        if not regions or abs(s) >= 1 << 24:
            return ("far outside every array (2^24 bytes or more away: a huge index, e.g. one loaded from "
                    "memory or grown in a loop, or a 64-bit offset past 32 bits)")
        word, rest = s // 4, ("" if s % 4 == 0 else f" + {s % 4} bytes")
        inside = [r for r in regions if r.base <= word < r.base + r.length]
        if inside or len(regions) == 1:
            r = (inside or regions)[0]
            return f"{r.name}[{word - r.base}]{rest}"
        layout = ", ".join(f"{r.name}: words {r.base}..{r.base + r.length - 1}" for r in regions)
        return f"word {word}{rest}, outside every array ({layout})"

    def execute(self, ins: Instr, rec: StepRecord, warp: int, mask: int, slot: int = 0) -> None:
        lanes = [
            lane
            for lane in range(self.m.lanes)
            if mask >> lane & 1 and (ins.guard is None or self.pred(ins.guard, warp, lane))
        ]
        if not lanes:
            return
        regs, preds = self.regs[warp], self.preds[warp]
        op = ins.op

        def write(lane: int, value: int) -> None:
            if ins.dst is not None and ins.dst != 0:
                regs[lane][ins.dst] = value
                rec.reg_writes.append((lane, ins.dst, value))

        def pwrite(lane: int, index: int | None, value: bool) -> None:
            if index is not None:
                preds[lane][index] = value
                rec.pred_writes.append((lane, index, value))

        if op is Op.SHFL:
            self.shfl(ins, warp, lanes, write, pwrite)
            return
        for lane in lanes:
            if op is Op.SETP:
                a, b = (self.value(s, warp, lane) for s in ins.srcs)
                pwrite(lane, ins.dst, self.compare(ins, a, b))
            elif op in isa.PRED_OPS:
                ps = [self.pred(p, warp, lane) for p in ins.psrcs]
                if op is Op.PAND:
                    v = ps[0] and ps[1]
                elif op is Op.POR:
                    v = ps[0] or ps[1]
                elif op is Op.PXOR:
                    v = ps[0] != ps[1]
                elif op is Op.PNOT:
                    v = not ps[0]
                else:  # PMOV
                    v = ps[0]
                pwrite(lane, ins.dst, v)
            elif op is Op.SELP:
                a, b = (self.value(s, warp, lane) for s in ins.srcs)
                write(lane, a if self.pred(ins.psrcs[0], warp, lane) else b)
            elif op is Op.LD:
                word = self.address(ins, rec, warp, lane)
                write(lane, self.memory[word])
            elif op is Op.ST:
                word = self.address(ins, rec, warp, lane)
                v = self.value(ins.srcs[1], warp, lane)
                self.memory[word] = v
                rec.mem_writes.append((word, v))
                rec.mem_items.append((slot, lane, word, v, False))
            elif op is Op.ATOM_ADD:
                word = self.address(ins, rec, warp, lane)
                old = self.memory[word]
                new = (old + self.value(ins.srcs[1], warp, lane)) & self.M
                self.memory[word] = new
                rec.mem_writes.append((word, new))
                rec.mem_items.append((slot, lane, word, new, True))
                write(lane, old)
            else:
                write(lane, self.alu(ins, [self.value(s, warp, lane) for s in ins.srcs]))

    def shfl(self, ins: Instr, warp: int, lanes: list[int], write, pwrite) -> None:
        m = self.m
        field_mask = (1 << m.lane_bits) - 1
        exists = [warp * m.lanes + j < self.p.block_dim for j in range(m.lanes)]
        results = []
        for lane in lanes:  # all lanes read ...
            b = self.value(ins.srcs[1], warp, lane) & field_mask
            c = self.value(ins.srcs[2], warp, lane)
            member = self.value(ins.srcs[3], warp, lane)
            clamp = c & field_mask
            segmask = (c >> 8) & field_mask
            max_lane = (lane & segmask) | (clamp & ~segmask & field_mask)
            min_lane = lane & segmask
            if ins.mode == "up":
                j = lane - b
                ok = j >= max_lane
            elif ins.mode == "down":
                j = lane + b
                ok = j <= max_lane
            elif ins.mode == "bfly":
                j = lane ^ b
                ok = j <= max_lane
            else:  # idx
                j = min_lane | (b & ~segmask & field_mask)
                ok = j <= max_lane
            src = j if ok and 0 <= j < m.lanes and exists[j] and member >> j & 1 else lane
            results.append((lane, self.value(ins.srcs[0], warp, src), ok))
        for lane, v, ok in results:  # ... then all write
            write(lane, v)
            pwrite(lane, ins.pdst, ok)

    # ---- scheduling

    @staticmethod
    def pick(warps: list[_Warp], current: int | None) -> int | None:
        if current is not None and warps[current].runnable:
            return current
        for w in warps:
            if w.runnable:
                return w.index
        return None

    def run_cta(self, ctaid: int) -> None:
        m, p = self.m, self.p
        self.ctaid = ctaid
        nwarps = -(-p.block_dim // m.lanes)
        warps = []
        for w in range(nwarps):
            n = min(m.lanes, p.block_dim - w * m.lanes)
            warps.append(_Warp(w, (1 << n) - 1))
        self.regs = [[[0] * m.regs for _ in range(m.lanes)] for _ in range(nwarps)]
        self.preds = [[[False] * m.preds for _ in range(m.lanes)] for _ in range(nwarps)]
        self.max_depth = max(self.max_depth, 1)

        current = self.pick(warps, None)
        while current is not None:
            warp = warps[current]
            top = warp.stack[-1]
            if self.steps >= self.budget:
                raise self.fail(
                    StepBudgetExceeded(
                        f"step budget exceeded: {self.steps} steps ran (budget {self.budget}); stopped "
                        f"before block B{top.pc} of warp {current} in thread block {ctaid} "
                        f"(an unbounded loop? raise --step-budget)"
                    )
                )
            block = p.blocks[top.pc]
            mask = top.mask
            rec = StepRecord(step=self.steps, ctaid=ctaid, block=top.pc, warp=current, mask=mask)
            for slot, ins in enumerate(block.instrs):
                self.execute(ins, rec, current, mask, slot)
            rec.event, rec.pushes = self.terminate(warp, block, top)
            self.max_depth = max(self.max_depth, len(warp.stack))
            self.steps += 1

            stopped = warp.done or warp.waiting
            rec.released = self.try_release(warps)
            rec.barrier_release = bool(rec.released)
            rec.warps_after = [w.status() for w in warps]
            nxt = self.pick(warps, None if stopped else current)
            if nxt is not None:
                t = warps[nxt].stack[-1]
                rec.next = (t.pc, nxt, t.mask)
            self.emit(rec)
            if nxt is None and not all(w.done for w in warps):
                raise self.fail(self.deadlock(warps, ctaid))
            current = nxt

    def terminate(self, warp: _Warp, block: isa.Block, top: _Entry) -> tuple[str, list]:
        """Apply the block's terminator; return (event, pushed entries) for the record."""
        t = block.term
        event, pushed = "continue", []
        depth = len(warp.stack)
        if t.kind is TermKind.JUMP:
            top.pc = t.target
        elif t.kind is TermKind.BRANCH:
            taken = 0
            for lane in range(self.m.lanes):
                if top.mask >> lane & 1 and self.pred(t.pred, warp.index, lane):
                    taken |= 1 << lane
            if taken == top.mask:
                top.pc = t.target
            elif taken == 0:
                top.pc = t.fallthrough
            else:
                reconv = EXIT_PC if t.reconv is None else t.reconv
                pushed = warp.diverge(t.target, taken, t.fallthrough, top.mask & ~taken, reconv)
                event = "diverge"
        elif t.kind is TermKind.BARRIER:
            warp.waiting = True
            warp.wait_mask = top.mask
            warp.wait_block = block.index
            top.pc = t.target
            event = "barrier"
        else:  # EXIT
            warp.exit_lanes(top.mask)
            event = "exit"
        warp.settle()
        if event == "continue" and len(warp.stack) < depth:
            event = "pop"
        return event, pushed

    @staticmethod
    def try_release(warps: list[_Warp]) -> list[int]:
        """Release the barrier when every live thread waits at one; the warps released."""
        waiting = [w for w in warps if w.waiting]
        if not waiting:
            return []
        for w in warps:
            if w.done:
                continue
            if not w.waiting or w.wait_mask != w.live:
                return []
        for w in waiting:
            w.waiting = False
            w.wait_mask = 0
        return [w.index for w in waiting]

    def deadlock(self, warps: list[_Warp], ctaid: int) -> BarrierDeadlock:
        lanes = self.m.lanes
        waiting = [w for w in warps if w.waiting]
        blocks = sorted({w.wait_block for w in waiting})
        wait_desc = "; ".join(
            f"warp {w.index} lanes {_lane_list(w.wait_mask, lanes)} (bar.sync in B{w.wait_block})"
            for w in waiting
        )
        blocked = []
        for w in warps:
            if w.done:
                continue
            stuck = w.live & ~(w.wait_mask if w.waiting else 0)
            if stuck:
                blocked.append(f"warp {w.index} lanes {_lane_list(stuck, lanes)}")
        return BarrierDeadlock(
            f"barrier deadlock in thread block {ctaid} at bar.sync in "
            f"{', '.join(f'B{b}' for b in blocks)}: waiting: {wait_desc}; blocked (live, not at the "
            f"barrier): {'; '.join(blocked)}. A barrier was reached in divergent code: the other "
            f"lanes of a diverged warp are stuck under the waiting lanes on its reconvergence stack"
        )

    def emit(self, rec: StepRecord) -> None:
        if self.keep_trace:
            self.trace.append(rec)
        if self.on_step is not None:
            self.on_step(rec)

    def run(self) -> RunResult:
        for ctaid in range(self.p.grid_dim):
            self.run_cta(ctaid)
        return self.result()


def run_program(
    program: isa.Program,
    machine: MachineConfig = DEFAULT_MACHINE,
    *,
    step_budget: int | None = None,
    trace: bool = True,
    on_step: Callable[[StepRecord], None] | None = None,
) -> RunResult:
    """Run ``program`` (its whole grid) and return the final memory, step count and trace.

    ``step_budget`` (default ``machine.step_budget``) bounds the steps of the whole grid:
    a launch may run exactly that many steps; the next one raises
    :class:`StepBudgetExceeded`. ``trace=False`` keeps no trace (``on_step`` is still
    called for every step). Raises :class:`ResourceError` / ``ValueError`` before
    running when the program does not fit (see :func:`check_runs_on`).
    """
    check_runs_on(program, machine)
    budget = machine.step_budget if step_budget is None else step_budget
    return _Launch(program, machine, budget, trace, on_step).run()


__all__ = [
    "EXIT_PC",
    "WarpStatus",
    "RunResult",
    "StepRecord",
    "check_runs_on",
    "format_step",
    "run_program",
]
