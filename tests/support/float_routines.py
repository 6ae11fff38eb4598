"""Run a float routine's IR (``host/float_*.py``) on one lane, with the machine's semantics.

The routines are lists of ``LInstr`` over virtual registers with labels and branches.
This harness executes them for one lane, every instruction through the reference
interpreter's own ALU and comparison (``reference.alu_value``, ``_Run.compare``'s
rules), so hundreds of operand pairs run in well under a second; the kernels in
``examples/kernels/float_*.cu`` run the same routines through the whole lowering.
It also counts what the routine costs: instructions, and the blocks entered (steps
are what the lowering's machine blocks make of them; ``bench`` measures those).
"""

from __future__ import annotations

from itertools import count

from qwengpu_mlx.core.isa import Imm, Op
from qwengpu_mlx.core.machine import to_signed
from qwengpu_mlx.core.reference import alu_value

from qwengpu_mlx.host.float_pack import FloatEmitter
from qwengpu_mlx.host.ir import LInstr, LLabel, LTerm, VPred, VReg

M32 = 0xFFFFFFFF


def emitter() -> FloatEmitter:
    ids = count()
    return FloatEmitter(1, None, "test", lambda prefix: f"{prefix}{next(ids)}")


def _compare(cmp: str, a: int, b: int, signed: bool) -> bool:
    if signed:
        a, b = to_signed(a), to_signed(b)
    return {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[cmp]


class Lane:
    """One lane's registers and predicates while a routine runs."""

    def __init__(self, inputs: dict[str, int]):
        self.regs = {k: v & M32 for k, v in inputs.items()}
        self.preds: dict[str, bool] = {}
        self.steps = 0  # instructions executed

    def val(self, s) -> int:
        if isinstance(s, Imm):
            return s.value & M32
        return self.regs[s.name]

    def pred(self, p: VPred) -> bool:
        return self.preds[p.name] != p.negated

    def execute(self, it: LInstr) -> None:
        self.steps += 1
        if it.guard is not None and not self.pred(it.guard):
            return
        if it.op is Op.SETP:
            a, b = (self.val(s) for s in it.srcs)
            self.preds[it.dst] = _compare(it.cmp, a, b, it.signed)
        elif it.op in (Op.PAND, Op.POR, Op.PXOR, Op.PNOT, Op.PMOV):
            ps = [self.pred(p) for p in it.psrcs]
            self.preds[it.dst] = {Op.PAND: lambda: ps[0] and ps[1], Op.POR: lambda: ps[0] or ps[1],
                                  Op.PXOR: lambda: ps[0] != ps[1], Op.PNOT: lambda: not ps[0],
                                  Op.PMOV: lambda: ps[0]}[it.op]()
        elif it.op is Op.SELP:
            a, b = (self.val(s) for s in it.srcs)
            self.regs[it.dst] = a if self.pred(it.psrcs[0]) else b
        else:
            self.regs[it.dst] = alu_value(it.op, [self.val(s) for s in it.srcs], signed=it.signed)


def run(items: list, inputs: dict[str, int], limit: int = 10_000) -> Lane:
    """Execute the routine's items from the top; labels are jump targets."""
    labels = {it.name: i for i, it in enumerate(items) if isinstance(it, LLabel)}
    lane = Lane(inputs)
    pc = 0
    while pc < len(items):
        it = items[pc]
        pc += 1
        if isinstance(it, LTerm):
            if it.kind == "bra" and (it.guard is None or lane.pred(it.guard)):
                pc = labels[it.target]
        elif isinstance(it, LInstr):
            lane.execute(it)
            limit -= 1
            if limit < 0:
                raise RuntimeError("routine did not finish")
    return lane


def binary(routine, a: int, b: int, **kw) -> int:
    """The bit pattern ``routine(em, dst, a, b, **kw)`` leaves in ``dst``."""
    items = routine(emitter(), "%d", VReg("%a"), VReg("%b"), **kw)
    return run(items, {"%a": a, "%b": b}).regs["%d"]


def predicate(routine, a: int, b: int, **kw) -> bool:
    items = routine(emitter(), "%d", VReg("%a"), VReg("%b"), **kw)
    return run(items, {"%a": a, "%b": b}).preds["%d"]


def instruction_count(items: list) -> int:
    return sum(isinstance(it, LInstr) for it in items)


def ternary(routine, a: int, b: int, c: int) -> int:
    """The bit pattern ``routine(em, dst, a, b, c)`` leaves in ``dst``."""
    items = routine(emitter(), "%d", VReg("%a"), VReg("%b"), VReg("%c"))
    return run(items, {"%a": a, "%b": b, "%c": c}).regs["%d"]
