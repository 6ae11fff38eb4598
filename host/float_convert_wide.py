"""Conversions between floats and 64-bit integers: ``(float)n`` and ``sum / n`` where ``n``
is a ``size_t`` or ``long long`` (``cvt.rn.f32.u64``, ``cvt.rn.f32.s64``), and
``(long long)x`` (``cvt.rzi.s64.f32``, :func:`float_to_wide`).

The value is a pair of words (``wide64``: ``lo``, ``hi``). Where ``hi`` is 0 it is the
32-bit conversion of ``lo``. Otherwise the 64 bits are shifted so that their leading one
is bit 31 of one word ``m``: ``m = (hi << n) | (lo >> (32 - n))`` with ``n`` the leading
zeros of ``hi``, and any bit of ``lo`` shifted out is ORed into ``m``'s bit 0 as a sticky
bit (it lies below the rounding bit, so it decides only ties and directed roundings, as
the dropped bits do). ``m``'s 32-bit conversion is then the value rounded once, divided by
``2^(32 - n)``: adding ``32 - n`` to the float's exponent field is exact (the result is a
normal float at most 2^64). A signed value converts its magnitude (the pair negated) and
takes the sign back, so only the modes symmetric in the sign (``rn``, ``rz``) are offered
for it; an unsigned value takes every mode the 32-bit conversion does.
"""

from __future__ import annotations

from qwengpu_mlx.core.isa import Imm, Op

from qwengpu_mlx.host import wide64
from qwengpu_mlx.host.float_convert import (FLOAT_MODES, INT_RANGES, SIGN, ConvertEmitter, float_to_int, int_to_float,
                                            leading_one_at_31)
from qwengpu_mlx.host.ir import LInstr, VPred, VReg
from qwengpu_mlx.host.translate_types import unsupported

SIGNED_MODES = ("rn", "rz")
"""The roundings of a signed 64-bit source: those that round the magnitude the same for either sign."""


def is_wide_to_float(ins) -> bool:
    """A ``cvt`` to ``.f32`` from ``.s64``/``.u64``."""
    types = [m for m in ins.mods if m in ("f32", "s64", "u64") or m in INT_RANGES]
    return ins.opcode == "cvt" and types[:1] == ["f32"] and types[1:] in (["s64"], ["u64"])


def op_cvt_wide_to_float(tr, ins) -> list:
    """``cvt.<mode>.f32.<s64|u64> d, a``: the routine on ``a``'s pair, written under the guard."""
    name = f"`cvt{''.join('.' + m for m in ins.mods)}`"
    modes = [m for m in ins.mods if m in FLOAT_MODES]
    signed = "s64" in ins.mods
    if len(modes) != 1 or len(ins.operands) != 2:
        raise unsupported(ins, f"{name}: conversion not supported (an integer converts to a float with .rn, .rz, "
                               f".rm or .rp)")
    if signed and modes[0] not in SIGNED_MODES:
        raise unsupported(ins, f"{name}: a signed 64-bit integer converts to a float rounded to nearest (.rn, "
                               f"as (float)n) or toward zero (.rz) here; convert an unsigned value, or an int")
    pre: list = []
    em = ConvertEmitter(ins.line, ins.src, ins.text, tr.fresh)
    lo, hi = (_in_register(em, w, pre) for w in wide64.halves(tr, ins, ins.operands[1], pre))
    d, guard = tr.dst(ins, ins.operands[0]), tr.guard_of(ins)
    target = d if guard is None else tr.fresh("%cr")
    items = wide_to_float(em, target, lo, hi, modes[0], signed)
    if target != d:
        items.append(LInstr(Op.MOV, d, (VReg(target),), guard=guard, line=ins.line, src=ins.src, text=ins.text))
    return pre + items


def _in_register(em, word, pre: list):
    """A constant word moved into a register (the routine shifts and compares its words)."""
    if not isinstance(word, Imm):
        return word
    r = em.reg()
    pre.append(em.ins(Op.MOV, r, (word,)))
    return VReg(r)


def wide_to_float(em: ConvertEmitter, dst: str, lo, hi, mode: str, signed: bool) -> list:
    """``dst`` = the 64-bit integer ``(lo, hi)`` rounded by ``mode`` to a float."""
    out: list = []
    sign = None
    if signed:
        lo, hi, sign = _magnitude(em, lo, hi, out)
    m, exponent = _leading_word(em, lo, hi, out)
    f = em.reg()
    out += int_to_float(em, f, m, mode, signed=False)
    out.append(em.ins(Op.ADD, dst, (VReg(f), exponent)))
    if sign is not None:
        out.append(em.ins(Op.OR, dst, (VReg(dst), sign)))
    return out


def _magnitude(em, lo, hi, out: list) -> tuple[VReg, VReg, VReg]:
    """``|(lo, hi)|`` as an unsigned pair (2^63 for the most negative) and the sign bit."""
    sign, nlo, nhi = em.reg(), em.reg(), em.reg()
    negative, carry = em.pred(), em.pred()
    out += [em.ins(Op.AND, sign, (hi, Imm(SIGN))),
            em.ins(Op.SETP, negative, (hi, Imm(0)), cmp="lt", signed=True),
            em.ins(Op.SUB, nlo, (Imm(0), lo)),                     # two's complement: -lo, ~hi + (lo == 0)
            em.ins(Op.NOT, nhi, (hi,)),
            em.ins(Op.SETP, carry, (lo, Imm(0)), cmp="eq"),
            em.ins(Op.ADD, nhi, (VReg(nhi), Imm(1)), guard=VPred(carry)),
            em.ins(Op.SELP, nlo, (VReg(nlo), lo), psrcs=(VPred(negative),)),
            em.ins(Op.SELP, nhi, (VReg(nhi), hi), psrcs=(VPred(negative),))]
    return VReg(nlo), VReg(nhi), VReg(sign)


def _leading_word(em, lo, hi, out: list) -> tuple[VReg, VReg]:
    """``(m, e)``: the word whose 32-bit conversion, plus ``e`` in the exponent field, is the
    pair's value rounded once (``lo`` and 0 where ``hi`` is 0)."""
    t, n = leading_one_at_31(em, hi, out)
    rest, gap, dropped, e = em.reg(), em.reg(), em.reg(), em.reg()
    wide, sticky = em.pred(), em.pred()
    out += [em.ins(Op.SUB, gap, (Imm(31), n)),
            em.ins(Op.SHR, rest, (lo, Imm(1))),                   # lo >> (32 - n) as two shifts below 32
            em.ins(Op.SHR, rest, (VReg(rest), VReg(gap))),
            em.ins(Op.OR, rest, (VReg(rest), t)),
            em.ins(Op.SHL, dropped, (lo, n)),
            em.ins(Op.SETP, sticky, (VReg(dropped), Imm(0)), cmp="ne"),
            em.ins(Op.OR, rest, (VReg(rest), Imm(1)), guard=VPred(sticky)),
            em.ins(Op.SHL, e, (n, Imm(23))),
            em.ins(Op.SUB, e, (Imm(32 << 23), VReg(e))),               # (32 - n) << 23
            em.ins(Op.SETP, wide, (hi, Imm(0)), cmp="ne"),
            em.ins(Op.SELP, rest, (VReg(rest), lo), psrcs=(VPred(wide),)),
            em.ins(Op.SELP, e, (VReg(e), Imm(0)), psrcs=(VPred(wide),))]
    return VReg(rest), VReg(e)


# --------------------------------------------------------------------------- float -> 64-bit integer


def is_float_to_wide(ins) -> bool:
    """A ``cvt`` to ``.s64``/``.u64`` from ``.f32``."""
    types = [m for m in ins.mods if m in ("f32", "s64", "u64") or m in INT_RANGES]
    return ins.opcode == "cvt" and types[1:] == ["f32"] and types[:1] in (["s64"], ["u64"])


def op_cvt_float_to_wide(tr, ins) -> list:
    """``cvt.rzi.<s64|u64>.f32 d, x`` (C's ``(long long)x``): the low word, and the high word
    where the pair's high word is kept (``wide64_plan``), written under the guard."""
    name = f"`cvt{''.join('.' + m for m in ins.mods)}`"
    if "rzi" not in ins.mods or len(ins.operands) != 2:
        raise unsupported(ins, f"{name}: a float converts to a 64-bit integer toward zero here (.rzi, as "
                               f"(long long)x); round it first (rintf, floorf) or convert to int")
    pre: list = []
    em = ConvertEmitter(ins.line, ins.src, ins.text, tr.fresh)
    x = _in_register(em, tr.value(ins, ins.operands[1], pre), pre)
    d, guard = tr.dst(ins, ins.operands[0]), tr.guard_of(ins)
    lo, hi = em.reg(), em.reg()
    items = float_to_wide(em, lo, hi, x, signed="s64" in ins.mods)
    moves = [LInstr(Op.MOV, d, (VReg(lo),), guard=guard, line=ins.line, src=ins.src, text=ins.text)]
    if d in tr.wide_plan.pairs:
        moves.append(LInstr(Op.MOV, d + wide64.HIGH, (VReg(hi),), guard=guard, line=ins.line, src=ins.src,
                            text=ins.text))
    return pre + items + moves


def float_to_wide(em: ConvertEmitter, lo: str, hi: str, x, signed: bool) -> list:
    """``(lo, hi)`` = the float ``x`` truncated to a 64-bit integer, saturated as PTX says
    (NaN 0). Below 2^31 (2^32 unsigned) it is the 32-bit conversion, extended; above, the
    float is an integer: its 24-bit significand shifted left by ``exponent - 23`` (8 to 40
    places) across the two words, negated for a negative signed value."""
    out: list = []
    small_to = "s32" if signed else "u32"
    out += float_to_int(em, lo, x, "rzi", small_to)
    out.append(em.ins(Op.SHR, hi, (VReg(lo), Imm(31)), signed=True) if signed else em.ins(Op.MOV, hi, (Imm(0),)))
    blo, bhi = _shifted_significand(em, x, out)
    if signed:
        blo, bhi = _negated_where_negative(em, x, blo, bhi, out)
    mag, big, over, nan = em.reg(), em.pred(), em.pred(), em.pred()
    limit = 0x5F000000 if signed else 0x5F800000                      # 2^63, 2^64
    out += [em.ins(Op.AND, mag, (x, Imm(0x7FFFFFFF))),
            em.ins(Op.SETP, big, (VReg(mag), Imm(0x4F000000 if signed else 0x4F800000)), cmp="ge", signed=False),
            em.ins(Op.MOV, lo, (blo,), guard=VPred(big)),
            em.ins(Op.MOV, hi, (bhi,), guard=VPred(big)),
            em.ins(Op.SETP, over, (VReg(mag), Imm(limit)), cmp="ge", signed=False)]
    if signed:
        top = em.reg()
        out += [em.ins(Op.SHR, top, (x, Imm(31)), signed=True),           # -1 where negative, else 0
                em.ins(Op.NOT, top, (VReg(top),)),                          # INT64_MAX's low word, or INT64_MIN's
                em.ins(Op.MOV, lo, (VReg(top),), guard=VPred(over)),
                em.ins(Op.XOR, top, (VReg(top), Imm(0x80000000))),          # its high word
                em.ins(Op.MOV, hi, (VReg(top),), guard=VPred(over))]
    else:
        out += [em.ins(Op.MOV, lo, (Imm(0xFFFFFFFF),), guard=VPred(over)),
                em.ins(Op.MOV, hi, (Imm(0xFFFFFFFF),), guard=VPred(over))]
        negative = em.pred()
        out += [em.ins(Op.SETP, negative, (x, Imm(0x80000000)), cmp="ge", signed=False),   # any negative: 0
                em.ins(Op.MOV, lo, (Imm(0),), guard=VPred(negative)),
                em.ins(Op.MOV, hi, (Imm(0),), guard=VPred(negative))]
    out += [em.ins(Op.SETP, nan, (VReg(mag), Imm(0x7F800000)), cmp="gt", signed=False),
            em.ins(Op.MOV, lo, (Imm(0),), guard=VPred(nan)),
            em.ins(Op.MOV, hi, (Imm(0),), guard=VPred(nan))]
    return out


def _shifted_significand(em, x, out: list) -> tuple[VReg, VReg]:
    """The pair ``m << k`` for ``|x| = m 2^k`` with ``k`` from 8 to 40 (garbage elsewhere)."""
    m, k, k1, back, k2, blo, bhi, hi2 = (em.reg() for _ in range(8))
    wide = em.pred()
    out += [em.ins(Op.AND, m, (x, Imm(0x7FFFFF))),
            em.ins(Op.OR, m, (VReg(m), Imm(0x800000))),
            em.ins(Op.SHR, k, (x, Imm(23))),
            em.ins(Op.AND, k, (VReg(k), Imm(0xFF))),
            em.ins(Op.SUB, k, (VReg(k), Imm(150))),
            em.ins(Op.MIN, k1, (VReg(k), Imm(31)), signed=True),
            em.ins(Op.MAX, k1, (VReg(k1), Imm(1)), signed=True),
            em.ins(Op.SHL, blo, (VReg(m), VReg(k1))),
            em.ins(Op.SUB, back, (Imm(32), VReg(k1))),
            em.ins(Op.SHR, bhi, (VReg(m), VReg(back))),
            em.ins(Op.SUB, k2, (VReg(k), Imm(32))),
            em.ins(Op.MAX, k2, (VReg(k2), Imm(0)), signed=True),
            em.ins(Op.AND, k2, (VReg(k2), Imm(31))),
            em.ins(Op.SHL, hi2, (VReg(m), VReg(k2))),
            em.ins(Op.SETP, wide, (VReg(k), Imm(32)), cmp="ge", signed=True),
            em.ins(Op.MOV, blo, (Imm(0),), guard=VPred(wide)),
            em.ins(Op.MOV, bhi, (VReg(hi2),), guard=VPred(wide))]
    return VReg(blo), VReg(bhi)


def _negated_where_negative(em, x, lo: VReg, hi: VReg, out: list) -> tuple[VReg, VReg]:
    """``-(lo, hi)`` in the lanes where ``x`` is negative."""
    nlo, nhi = em.reg(), em.reg()
    negative, carry = em.pred(), em.pred()
    out += [em.ins(Op.SETP, negative, (x, Imm(0)), cmp="lt", signed=True),
            em.ins(Op.SUB, nlo, (Imm(0), lo)),
            em.ins(Op.NOT, nhi, (hi,)),
            em.ins(Op.SETP, carry, (lo, Imm(0)), cmp="eq"),
            em.ins(Op.ADD, nhi, (VReg(nhi), Imm(1)), guard=VPred(carry)),
            em.ins(Op.SELP, nlo, (VReg(nlo), lo), psrcs=(VPred(negative),)),
            em.ins(Op.SELP, nhi, (VReg(nhi), hi), psrcs=(VPred(negative),))]
    return VReg(nlo), VReg(nhi)
