"""Arithmetic, logic, comparison and selection (``add`` ... ``shr``, ``div``/``rem``, ``setp``,
``selp``) -> IR: the translation's ALU family.

Each ``op_NAME(tr, ins)`` translates one PTX instruction for the ``Translator`` ``tr``
(which binds it as its method ``op_NAME``) and returns its IR items; division,
remainder and ``mul.hi`` expand into ``division.py``'s routines.
"""

from __future__ import annotations

from qwengpu_mlx.core.isa import Imm, Op

from qwengpu_mlx.host import division
from qwengpu_mlx.host.ir import LInstr, VReg
from qwengpu_mlx.host.ptx_ast import ImmRef, PairRef
from qwengpu_mlx.host.translate_types import INT_TYPES32, INT_TYPES64, SUBWORD, unsupported

CMP_NAMES = {
    "eq": ("eq", None), "ne": ("ne", None),
    "lt": ("lt", None), "le": ("le", None), "gt": ("gt", None), "ge": ("ge", None),
    "lo": ("lt", False), "ls": ("le", False), "hi": ("gt", False), "hs": ("ge", False),
}

CLOSED_FORM_HINT = (
    ". If the kernel has no 64-bit integers (long, size_t), clang rewrote a loop into a closed formula "
    "(a sum over the loop becomes a product such as n*(n-1)/2, computed in 64 bits); keep the loop a loop "
    "by passing its accumulator through an empty asm in the body, `asm volatile(\"\" : \"+r\"(s));` "
    "(`#pragma unroll 1` does not stop this rewrite)")
"""Where clang's loop rewriting is the likely cause of 64-bit arithmetic, and the way around it
that works with clang 14 (an empty asm hides the accumulator's recurrence from the rewrite)."""


def _alu(tr, ins, op, nsrc, signed=None, allow_wide=False):
    t = tr.typ(ins)
    if t == "pred":
        return _pred_logic(tr, ins, op)
    if t in SUBWORD and op in (Op.AND, Op.OR, Op.XOR) and t[1:] == "16":
        return _logic16(tr, ins, op)
    if t in SUBWORD:
        raise unsupported(ins, f"{t[1:]}-bit integer arithmetic is not supported: compute in int "
                               f"(e.g. `int b = flag;` for a bool, `(int)s` for a short)")
    if t in INT_TYPES64 and not allow_wide:
        tr.check_no_wide(ins, hint=CLOSED_FORM_HINT)
    d = tr.dst(ins, ins.operands[0])
    tr.mark_wide(ins, d, t)
    pre: list = []
    srcs = tuple(tr.value(ins, o, pre) for o in ins.operands[1 : 1 + nsrc])
    sg = (t[0] == "s") if signed is None else signed
    return pre + [LInstr(op, d, srcs, guard=tr.guard_of(ins), signed=sg, line=ins.line, src=ins.src, text=ins.text)]


def _logic16(tr, ins, op):
    """``and/or/xor.b16`` (clang's code for ``bool``): exact on zero-extended operands."""
    d = tr.dst(ins, ins.operands[0])
    pre: list = []
    srcs = tuple(_canonical16(tr, ins, o, pre) for o in ins.operands[1:3])
    if ins.guard is None:
        tr.canon16.add(d)
    return pre + [LInstr(op, d, srcs, guard=tr.guard_of(ins), line=ins.line, src=ins.src, text=ins.text)]


def _pred_logic(tr, ins, op):
    table = {Op.AND: Op.PAND, Op.OR: Op.POR, Op.XOR: Op.PXOR, Op.NOT: Op.PNOT}
    if op not in table:
        raise unsupported(ins, "predicate operation not supported")
    d = tr.dst(ins, ins.operands[0])
    ps = tuple(tr.pred(ins, o) for o in ins.operands[1:])
    return [LInstr(table[op], d, psrcs=ps, guard=tr.guard_of(ins), line=ins.line, src=ins.src, text=ins.text)]


def _canonical16(tr, ins, opnd, pre: list):
    """A 16-bit operand zero-extended to 32 bits (so 32-bit compares and logic are exact)."""
    if isinstance(opnd, ImmRef):
        return Imm(opnd.value & 0xFFFF)
    v = tr.value(ins, opnd, pre)
    if isinstance(v, VReg) and v.name in tr.canon16:
        return v
    t = tr.fresh()
    pre.append(LInstr(Op.AND, t, (v, Imm(0xFFFF)), line=ins.line, src=ins.src, text=ins.text))
    return VReg(t)


def op_add(tr, ins):
    if "cc" in ins.mods or "sat" in ins.mods:
        raise unsupported(ins, "add with carry or saturation is not supported")
    return _alu(tr, ins, Op.ADD, 2, allow_wide=True)


def op_sub(tr, ins):
    if "cc" in ins.mods or "sat" in ins.mods:
        raise unsupported(ins, "sub with carry or saturation is not supported")
    return _alu(tr, ins, Op.SUB, 2, allow_wide=True)


def _emitter(tr, ins) -> division.Emitter:
    return division.Emitter(ins.line, ins.src, ins.text, tr.fresh)


def _int32_operands(tr, ins, what: str):
    """``(dst, srcs, pre)`` of a 32-bit two-operand instruction the lowering expands."""
    t = tr.typ(ins)
    if t not in INT_TYPES32:
        raise unsupported(ins, f"{what}.{t} is not supported (32-bit integers only)")
    pre: list = []
    srcs = tuple(tr.value(ins, o, pre) for o in ins.operands[1:3])
    return tr.dst(ins, ins.operands[0]), srcs, pre


def op_mul(tr, ins):
    if "hi" in ins.mods:
        if ins.guard:
            raise unsupported(ins, "a predicated mul.hi is not supported")
        d, (a, b), pre = _int32_operands(tr, ins, "mul.hi")
        if isinstance(a, Imm) and not isinstance(b, Imm):
            a, b = b, a
        return pre + division.mul_hi(_emitter(tr, ins), d, a, b, signed=tr.typ(ins) == "s32")
    if "wide" in ins.mods:
        d = tr.dst(ins, ins.operands[0])
        tr.wide.add(d)
        pre: list = []
        srcs = tuple(tr.value(ins, o, pre) for o in ins.operands[1:3])
        return pre + [LInstr(Op.MUL, d, srcs, guard=tr.guard_of(ins), line=ins.line, src=ins.src, text=ins.text)]
    return _alu(tr, ins, Op.MUL, 2, allow_wide=True)


def op_mul24(tr, ins):
    raise unsupported(ins, "mul24 is not supported")


def op_mad(tr, ins):
    if "hi" in ins.mods or "cc" in ins.mods:
        raise unsupported(ins, "mad.hi / mad.cc are not supported")
    if "wide" in ins.mods:
        d = tr.dst(ins, ins.operands[0])
        tr.wide.add(d)
        pre: list = []
        srcs = tuple(tr.value(ins, o, pre) for o in ins.operands[1:4])
        return pre + [LInstr(Op.MAD, d, srcs, guard=tr.guard_of(ins), line=ins.line, src=ins.src, text=ins.text)]
    return _alu(tr, ins, Op.MAD, 3, allow_wide=True)


def op_neg(tr, ins):
    return _alu(tr, ins, Op.NEG, 1)


def op_abs(tr, ins):
    return _alu(tr, ins, Op.ABS, 1)


def op_min(tr, ins):
    return _alu(tr, ins, Op.MIN, 2)


def op_max(tr, ins):
    return _alu(tr, ins, Op.MAX, 2)


def op_and(tr, ins):
    return _alu(tr, ins, Op.AND, 2)


def op_or(tr, ins):
    return _alu(tr, ins, Op.OR, 2)


def op_xor(tr, ins):
    return _alu(tr, ins, Op.XOR, 2)


def op_not(tr, ins):
    return _alu(tr, ins, Op.NOT, 1)


def op_shl(tr, ins):
    return _alu(tr, ins, Op.SHL, 2, allow_wide=True)


def op_shr(tr, ins):
    return _alu(tr, ins, Op.SHR, 2)


def op_div(tr, ins):
    return _divide(tr, ins, remainder=False)


def op_rem(tr, ins):
    return _divide(tr, ins, remainder=True)


def _divide(tr, ins, remainder: bool):
    """``div``/``rem`` as the shift-and-subtract routine the model runs (``division.py``)."""
    what = "rem" if remainder else "div"
    d, (n, dv), pre = _int32_operands(tr, ins, what)
    where = str(ins.src) if ins.src is not None else f"PTX line {ins.line}"
    trap = f"division by zero at {where} (`{ins.text.strip()}`)"
    return pre + division.divide(_emitter(tr, ins), d, n, dv, signed=tr.typ(ins) == "s32",
                                 remainder=remainder, trap=trap, guard=tr.guard_of(ins))


def op_setp(tr, ins):
    cmp_mod = next((m for m in ins.mods if m in CMP_NAMES), None)
    if cmp_mod is None:
        raise unsupported(ins, "comparison not supported")
    if any(m in ("and", "or", "xor") for m in ins.mods) or isinstance(ins.operands[0], PairRef):
        raise unsupported(ins, "setp with a combining predicate or two destinations is not supported")
    t = tr.typ(ins)
    if t in INT_TYPES64:
        tr.check_no_wide(ins, "64-bit comparison")
    cmp, forced = CMP_NAMES[cmp_mod]
    signed = (t[0] == "s") if forced is None else forced
    if t in SUBWORD and (t[1:] != "16" or (signed and cmp not in ("eq", "ne"))):
        raise unsupported(ins, f"{t[1:]}-bit {'signed ' if signed else ''}comparison is not supported: "
                               f"compare ints (e.g. `(int)s < 0`)")
    d = tr.dst(ins, ins.operands[0])
    pre: list = []
    if t in SUBWORD:  # 16-bit equality or unsigned order: exact on zero-extended operands
        srcs = tuple(_canonical16(tr, ins, o, pre) for o in ins.operands[1:3])
        signed = False
    else:
        srcs = tuple(tr.value(ins, o, pre) for o in ins.operands[1:3])
    return pre + [LInstr(Op.SETP, d, srcs, guard=tr.guard_of(ins), signed=signed, cmp=cmp,
                         line=ins.line, src=ins.src, text=ins.text)]


def op_selp(tr, ins):
    t = tr.typ(ins)
    d = tr.dst(ins, ins.operands[0])
    tr.mark_wide(ins, d, t)
    pre: list = []
    srcs = tuple(tr.value(ins, o, pre) for o in ins.operands[1:3])
    p = tr.pred(ins, ins.operands[3])
    return pre + [LInstr(Op.SELP, d, srcs, psrcs=(p,), guard=tr.guard_of(ins), line=ins.line, src=ins.src, text=ins.text)]
