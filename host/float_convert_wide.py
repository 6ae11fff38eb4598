"""A 64-bit integer to a float (``cvt.rn.f32.u64``, ``cvt.rn.f32.s64``): ``(float)n`` and
``sum / n`` where ``n`` is a ``size_t`` or ``long long``.

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
from qwengpu_mlx.host.float_convert import FLOAT_MODES, INT_RANGES, SIGN, ConvertEmitter, int_to_float, leading_one_at_31
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
