"""8- and 16-bit values on the 32-bit machine: what a register is known to hold, and
how an operand is extended where its upper bits matter.

**The invariant.** A PTX register of 16 (or 8) bits lives in a 32-bit machine register
whose low 16 (8) bits are its value; the upper bits are unspecified. ``add``, ``sub``,
``mul.lo``, ``mad.lo``, ``neg``, ``not``, ``and``, ``or``, ``xor``, ``shl`` and ``selp``
give the right low bits from any upper bits, so they run as the plain 32-bit instruction
(no extra step). Every instruction whose result depends on the upper bits (``shr``,
``setp``, ``min``/``max``, ``abs``, ``div``/``rem``, ``mul.hi``/``mul.wide``, a widening
``cvt``, a store) first extends its operand by the instruction's signedness.

**What is known.** :func:`register_facts` says, for every PTX register, which
extensions its 32-bit content is certainly equal to (``z8``: zero-extended from 8 bits,
``s8``, ``z16``, ``s16``), so an extension already done (a byte just loaded, a
``cvt.s32.s16`` result, ``and x, 255``) is not done again. It is a greatest fixpoint
over every definition of the register (loops define a register in several places), so
a fact holds on every path and for every lane.
"""

from __future__ import annotations

from qwengpu_mlx.core.isa import Imm, Op

from qwengpu_mlx.host.ir import LInstr, VPred, VReg
from qwengpu_mlx.host.ptx_ast import ImmRef, PairRef, PtxInstr, PtxKernel, RegRef

M32 = 0xFFFFFFFF
FACTS = frozenset({"z8", "s8", "z16", "s16"})
_IMPLIED = {"z8": {"z8", "z16", "s16"}, "s8": {"s8", "s16"}, "z16": {"z16"}, "s16": {"s16"}}
NONE: frozenset = frozenset()


def ext_facts(bits: int, signed: bool) -> frozenset:
    """What a value extended from ``bits`` bits (by its signedness) is also known to be."""
    if bits >= 32:
        return NONE
    return frozenset(_IMPLIED[("s" if signed else "z") + str(bits)])


def value_facts(v: int) -> frozenset:
    """The facts a 32-bit constant satisfies."""
    v &= M32
    sv = v - (1 << 32) if v >> 31 else v
    out = set()
    for bits in (8, 16):
        if v < 1 << bits:
            out.add(f"z{bits}")
        if -(1 << (bits - 1)) <= sv < 1 << (bits - 1):
            out.add(f"s{bits}")
    return frozenset(out)


def type_bits(t: str) -> int:
    return int(t[1:]) if t[1:].isdigit() else 32


def instr_type(ins: PtxInstr) -> str:
    """The instruction's (last) integer type modifier, ``b32`` when it names none."""
    for m in reversed(ins.mods):
        if m[:1] in "sub" and m[1:] in ("8", "16", "32", "64"):
            return m
    return "b32"


def _defined(ins: PtxInstr) -> list[str]:
    if not ins.operands or ins.opcode in ("st", "red", "bra", "bar", "barrier", "ret", "exit"):
        return []
    d = ins.operands[0]
    if isinstance(d, RegRef):
        return [d.name]
    if isinstance(d, PairRef):
        return [d.first.name, d.second.name]
    return []


def _operand_facts(opnd, facts: dict) -> frozenset:
    if isinstance(opnd, RegRef):
        return facts.get(opnd.name, NONE)
    if isinstance(opnd, ImmRef):
        return value_facts(opnd.value)
    return NONE


def _cvt_facts(ins: PtxInstr, src: frozenset) -> frozenset:
    types = [m for m in ins.mods if m[:1] in "sub" and m[1:] in ("8", "16", "32", "64")]
    if len(types) != 2 or "sat" in ins.mods:
        return NONE
    to, frm = types
    wt, wf = type_bits(to), type_bits(frm)
    if wt == 8:
        return ext_facts(8, to[0] == "s")  # a byte result is made canonical
    if wf < 32 and wt > wf:
        return ext_facts(wf, frm[0] == "s")
    return src  # the same 32-bit content: a move


def _shift_facts(ins: PtxInstr, t: str) -> frozenset:
    if type_bits(t) == 16:
        return ext_facts(16, t[0] == "s")
    k = ins.operands[2] if len(ins.operands) > 2 else None
    if isinstance(k, ImmRef) and type_bits(t) == 32:
        if k.value >= 24:
            return ext_facts(8, t[0] == "s")
        if k.value >= 16:
            return ext_facts(16, t[0] == "s")
    return NONE


def def_facts(ins: PtxInstr, facts: dict) -> frozenset:
    """What the register ``ins`` defines holds after it (as this package lowers it)."""
    op, t = ins.opcode, instr_type(ins)
    srcs = [_operand_facts(o, facts) for o in ins.operands[1:]]
    bits = type_bits(t)
    if op == "mov" and len(srcs) == 1:
        return srcs[0]
    if op == "ld":
        return ext_facts(bits, t[0] == "s") if bits < 32 else NONE
    if op == "cvt":
        return _cvt_facts(ins, srcs[0] if srcs else NONE)
    if op in ("or", "xor", "selp") and len(srcs) >= 2:
        return srcs[0] & srcs[1]
    if op == "and" and len(srcs) == 2:
        z = {f for f in srcs[0] | srcs[1] if f[0] == "z"}
        return (srcs[0] & srcs[1]) | frozenset(f for g in z for f in _IMPLIED[g])
    if op == "shr":
        return _shift_facts(ins, t)
    if op in ("min", "max") and bits == 16:
        return ext_facts(16, t[0] == "s")
    if op in ("min", "max") and len(srcs) == 2:
        return srcs[0] & srcs[1]
    if op in ("popc", "clz"):
        return ext_facts(8, False)
    if op == "bfind":
        return ext_facts(8, True)
    if op in ("div", "rem") and t == "u16" or (op == "rem" and t == "s16"):
        return ext_facts(16, t[0] == "s")
    if op == "mul" and "hi" in ins.mods and bits == 16:
        return ext_facts(16, t[0] == "s")
    if op == "bfe" and isinstance(ins.operands[-1], ImmRef) and 0 < ins.operands[-1].value <= 16:
        return ext_facts(8 if ins.operands[-1].value <= 8 else 16, t[0] == "s")
    return NONE


def register_facts(kernel: PtxKernel) -> dict[str, frozenset]:
    """Every register's facts: the intersection over all its definitions, to a fixpoint."""
    defs = [(ins, _defined(ins)) for ins in kernel.body if isinstance(ins, PtxInstr)]
    facts = {r: FACTS for _, names in defs for r in names}
    changed = True
    while changed:
        changed = False
        new = {r: FACTS for r in facts}
        for ins, names in defs:
            f = def_facts(ins, facts) if len(names) == 1 else NONE
            for r in names:
                new[r] = new[r] & f
        if new != facts:
            facts, changed = new, True
    return facts


def facts_of(tr) -> dict[str, frozenset]:
    """The translator's register facts, computed once per kernel."""
    got = getattr(tr, "narrow_facts", None)
    if got is None:
        got = tr.narrow_facts = register_facts(tr.kernel)
    return got


def _mk(ins: PtxInstr, op: Op, dst: str, srcs, guard: VPred | None = None, **kw) -> LInstr:
    return LInstr(op, dst, tuple(srcs), guard=guard, line=ins.line, src=ins.src, text=ins.text, **kw)


def extension_code(ins: PtxInstr, dst: str, v, bits: int, signed: bool, tmp: str,
                   guard: VPred | None = None) -> list:
    """``dst`` = ``v`` extended from ``bits`` bits: ``and`` (zero) or ``shl``+``shr.s`` (sign)."""
    if not signed:
        return [_mk(ins, Op.AND, dst, (v, Imm((1 << bits) - 1)), guard)]
    return [_mk(ins, Op.SHL, tmp, (v, Imm(32 - bits)), guard),
            _mk(ins, Op.SHR, dst, (VReg(tmp), Imm(32 - bits)), guard, signed=True)]


def is_extended(tr, v, bits: int, signed: bool) -> bool:
    """``v`` (an IR operand) already equals its extension from ``bits`` bits."""
    want = ("s" if signed else "z") + str(bits)
    if isinstance(v, Imm):
        return want in value_facts(v.value)
    return isinstance(v, VReg) and want in facts_of(tr).get(v.name, NONE)


def extend_imm(value: int, bits: int, signed: bool) -> int:
    value &= (1 << bits) - 1
    if signed and value >> (bits - 1):
        value -= 1 << bits
    return value & M32


def extended(tr, ins: PtxInstr, opnd, bits: int, signed: bool, pre: list):
    """An IR operand holding ``opnd`` extended from ``bits`` bits; code goes to ``pre``."""
    v = tr.value(ins, opnd, pre)
    if bits >= 32 or is_extended(tr, v, bits, signed):
        return v
    if isinstance(v, Imm):
        return Imm(extend_imm(v.value, bits, signed))
    d = tr.fresh()
    pre.extend(extension_code(ins, d, v, bits, signed, tr.fresh()))
    return VReg(d)


def extend_into(tr, ins: PtxInstr, dst: str, opnd, bits: int, signed: bool) -> list:
    """``dst`` = ``opnd`` extended (under the instruction's guard): a move when it already is."""
    pre: list = []
    v = tr.value(ins, opnd, pre)
    g = tr.guard_of(ins)
    if bits >= 32 or is_extended(tr, v, bits, signed):
        return pre + [_mk(ins, Op.MOV, dst, (v,), g)]
    if isinstance(v, Imm):
        return pre + [_mk(ins, Op.MOV, dst, (Imm(extend_imm(v.value, bits, signed)),), g)]
    return pre + extension_code(ins, dst, v, bits, signed, tr.fresh(), g)
