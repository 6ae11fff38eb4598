"""Arithmetic, logic, comparison and selection (``add`` ... ``shr``, ``div``/``rem``, ``setp``,
``selp``) -> IR: the translation's ALU family.

Each ``op_NAME(tr, ins)`` translates one PTX instruction for the ``Translator`` ``tr``
(which binds it as its method ``op_NAME``) and returns its IR items; division,
remainder and ``mul.hi`` expand into ``division.py``'s routines.
"""

from __future__ import annotations

from qwengpu_mlx.core.isa import Imm, Op

from qwengpu_mlx.host import division, narrow
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


PLAIN16 = (Op.ADD, Op.SUB, Op.MUL, Op.MAD, Op.NEG, Op.NOT, Op.AND, Op.OR, Op.XOR, Op.SHL)
"""16-bit operations whose low 16 bits come out right from any upper bits: the plain 32-bit
instruction (``narrow.py``'s invariant)."""


def _alu(tr, ins, op, nsrc, signed=None, allow_wide=False):
    t = tr.typ(ins)
    if t == "pred":
        return _pred_logic(tr, ins, op)
    if t in SUBWORD and t[1:] == "8":
        raise unsupported(ins, f"8-bit arithmetic `{ins.opcode}.{t}` is not PTX (8-bit types are for "
                               f"ld, st and cvt only)")
    if t in SUBWORD and op not in PLAIN16:
        return _alu16_extended(tr, ins, op, nsrc)
    if t in INT_TYPES64 and not allow_wide:
        tr.check_no_wide(ins, hint=CLOSED_FORM_HINT)
    d = tr.dst(ins, ins.operands[0])
    tr.mark_wide(ins, d, t)
    pre: list = []
    srcs = tuple(tr.value(ins, o, pre) for o in ins.operands[1 : 1 + nsrc])
    sg = (t[0] == "s") if signed is None else signed
    return pre + [LInstr(op, d, srcs, guard=tr.guard_of(ins), signed=sg, line=ins.line, src=ins.src, text=ins.text)]


def _alu16_extended(tr, ins, op, nsrc):
    """``shr``/``min``/``max``/``abs`` ``.s16``/``.u16``: the operands extended by the type's
    signedness, then the 32-bit instruction (exact: a 16-bit value's extension is its value).
    A shift amount is a 32-bit operand in PTX and is read as it is."""
    t = tr.typ(ins)
    signed = t[0] == "s"
    d = tr.dst(ins, ins.operands[0])
    pre: list = []
    srcs = []
    for k, o in enumerate(ins.operands[1 : 1 + nsrc]):
        if op is Op.SHR and k == 1:
            srcs.append(tr.value(ins, o, pre))
        else:
            srcs.append(narrow.extended(tr, ins, o, 16, signed, pre))
    return pre + [LInstr(op, d, tuple(srcs), guard=tr.guard_of(ins), signed=signed, line=ins.line,
                         src=ins.src, text=ins.text)]


def _pred_logic(tr, ins, op):
    table = {Op.AND: Op.PAND, Op.OR: Op.POR, Op.XOR: Op.PXOR, Op.NOT: Op.PNOT}
    if op not in table:
        raise unsupported(ins, "predicate operation not supported")
    d = tr.dst(ins, ins.operands[0])
    ps = tuple(tr.pred(ins, o) for o in ins.operands[1:])
    return [LInstr(table[op], d, psrcs=ps, guard=tr.guard_of(ins), line=ins.line, src=ins.src, text=ins.text)]


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
    """``(dst, srcs, pre)`` of a two-operand instruction the lowering expands: a 16-bit
    one's operands extended by its signedness (the 32-bit routine is then exact)."""
    t = tr.typ(ins)
    if t not in INT_TYPES32 and t not in ("s16", "u16"):
        raise unsupported(ins, f"{what}.{t} is not supported (16- and 32-bit integers only)")
    pre: list = []
    if t in INT_TYPES32:
        srcs = tuple(tr.value(ins, o, pre) for o in ins.operands[1:3])
    else:
        srcs = tuple(narrow.extended(tr, ins, o, 16, t[0] == "s", pre) for o in ins.operands[1:3])
    return tr.dst(ins, ins.operands[0]), srcs, pre


def op_mul(tr, ins):
    t = tr.typ(ins)
    if "hi" in ins.mods and t in SUBWORD:
        return _mul_hi16(tr, ins)
    if "hi" in ins.mods:
        if ins.guard:
            raise unsupported(ins, "a predicated mul.hi is not supported")
        d, (a, b), pre = _int32_operands(tr, ins, "mul.hi")
        if isinstance(a, Imm) and not isinstance(b, Imm):
            a, b = b, a
        return pre + division.mul_hi(_emitter(tr, ins), d, a, b, signed=t == "s32")
    if "wide" in ins.mods and t in SUBWORD:
        d, srcs, pre = _int32_operands(tr, ins, "mul.wide")
        return pre + [LInstr(Op.MUL, d, srcs, guard=tr.guard_of(ins), line=ins.line, src=ins.src, text=ins.text)]
    if "wide" in ins.mods:
        d = tr.dst(ins, ins.operands[0])
        tr.wide.add(d)
        pre: list = []
        srcs = tuple(tr.value(ins, o, pre) for o in ins.operands[1:3])
        return pre + [LInstr(Op.MUL, d, srcs, guard=tr.guard_of(ins), line=ins.line, src=ins.src, text=ins.text)]
    return _alu(tr, ins, Op.MUL, 2, allow_wide=True)


def _mul_hi16(tr, ins, dst: str | None = None):
    """``mul.hi.s16``/``.u16`` (clang's division of a short by a constant): the extended
    operands' 32-bit product is exact (|a b| <= 2^30), its bits 16..31 the high half."""
    t = tr.typ(ins)
    d, srcs, pre = _int32_operands(tr, ins, "mul.hi")
    p = tr.fresh()
    mk = lambda *x, **k: LInstr(*x, line=ins.line, src=ins.src, text=ins.text, **k)  # noqa: E731
    return pre + [mk(Op.MUL, p, srcs),
                  mk(Op.SHR, dst or d, (VReg(p), Imm(16)), signed=t == "s16", guard=None if dst else tr.guard_of(ins))]


def op_mad(tr, ins):
    t = tr.typ(ins)
    if "cc" in ins.mods:
        raise unsupported(ins, "mad.cc (carry) is not supported")
    if t in SUBWORD and ("hi" in ins.mods or "wide" in ins.mods):
        return _mad16(tr, ins)
    if "hi" in ins.mods:
        raise unsupported(ins, "mad.hi.32 is not supported (write `__umulhi(a, b) + c`)")
    if "wide" in ins.mods:
        d = tr.dst(ins, ins.operands[0])
        tr.wide.add(d)
        pre: list = []
        srcs = tuple(tr.value(ins, o, pre) for o in ins.operands[1:4])
        return pre + [LInstr(Op.MAD, d, srcs, guard=tr.guard_of(ins), line=ins.line, src=ins.src, text=ins.text)]
    return _alu(tr, ins, Op.MAD, 3, allow_wide=True)


def _mad16(tr, ins):
    """``mad.wide.s16`` (32-bit ``a b + c`` of extended halves) and ``mad.hi.s16``."""
    d = tr.dst(ins, ins.operands[0])
    pre: list = []
    c = tr.value(ins, ins.operands[3], pre)
    mk = lambda *x, **k: LInstr(*x, guard=tr.guard_of(ins), line=ins.line, src=ins.src, text=ins.text, **k)  # noqa: E731
    if "wide" in ins.mods:
        _, srcs, pre2 = _int32_operands(tr, ins, "mad.wide")
        return pre + pre2 + [mk(Op.MAD, d, srcs + (c,))]
    h = tr.fresh()
    return pre + _mul_hi16(tr, ins, dst=h) + [mk(Op.ADD, d, (VReg(h), c))]


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
    return pre + division.divide(_emitter(tr, ins), d, n, dv, signed=tr.typ(ins)[0] == "s",
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
    if t in SUBWORD and t[1:] != "16":
        raise unsupported(ins, f"8-bit comparison `setp.{t}` is not PTX (8-bit types are for ld, st and cvt)")
    d = tr.dst(ins, ins.operands[0])
    pre: list = []
    if t in SUBWORD:
        srcs = _compared16(tr, ins, signed and cmp not in ("eq", "ne"), pre)
        signed = signed and cmp not in ("eq", "ne")
    else:
        srcs = tuple(tr.value(ins, o, pre) for o in ins.operands[1:3])
    return pre + [LInstr(Op.SETP, d, srcs, guard=tr.guard_of(ins), signed=signed, cmp=cmp,
                         line=ins.line, src=ins.src, text=ins.text)]


def _compared16(tr, ins, signed: bool, pre: list) -> tuple:
    """The two operands of a 16-bit comparison, extended by its signedness; equality holds
    under either extension, so operands already both sign-extended are compared as they are."""
    if not signed:
        pre_try: list = []
        vals = [tr.value(ins, o, pre_try) for o in ins.operands[1:3]]
        if all(narrow.is_extended(tr, v, 16, True) for v in vals):
            pre.extend(pre_try)
            return tuple(vals)
    return tuple(narrow.extended(tr, ins, o, 16, signed, pre) for o in ins.operands[1:3])


def op_selp(tr, ins):
    t = tr.typ(ins)
    d = tr.dst(ins, ins.operands[0])
    tr.mark_wide(ins, d, t)
    pre: list = []
    srcs = tuple(tr.value(ins, o, pre) for o in ins.operands[1:3])
    p = tr.pred(ins, ins.operands[3])
    return pre + [LInstr(Op.SELP, d, srcs, psrcs=(p,), guard=tr.guard_of(ins), line=ins.line, src=ins.src, text=ins.text)]
