"""``fma.rn.f32`` (``a * b + c`` with one rounding, what clang contracts ``a * b + c`` into)
as a routine of the machine's integer instructions, bit for bit an NVIDIA GPU's result.

The product of two 24-bit significands has 48 bits, and where ``c`` nearly cancels it
every one of them can reach the result, so the sum is formed exactly in a 64-bit window
of two registers (``hi``, ``lo``):

* the product at ``P << 14`` (``hi = P >> 18`` from 12-bit halves as in ``mul``,
  ``lo = (mx << 14) * my``: the low word is one multiply), its bit 47 at window bit 61;
  ``c``'s significand with its implicit bit also at bit 61 (``hi`` only). Both carry
  their exponent there; the one with the larger exponent stays, the other shifts right
  by the difference with a sticky bit (a 32-bit jump, then a shift of both words; one
  shifted-out bit is all the rounding needs to know of what fell off the window);
* a 64-bit add (or subtraction as the add of the two's complement), negated if ``c``
  was the larger after all (same exponents), which flips the sign;
* the window drops to 32 bits: a 31-bit jump where ``hi`` is 0 (cancellation; 31 keeps bit 31 clear), the
  shared normalising loop on ``hi`` (``float_pack.leading_shift``) and the shift of both
  words by its count, ``lo``'s remaining bits becoming the sticky bit; then
  ``float_pack``'s subnormal shift and round/pack.

The special operands are settled first into one register and one predicate (so they do
not hold registers through the body): a NaN operand, ``0 * inf`` or ``inf - inf`` give
the canonical NaN; an infinite product or ``c`` gives that infinity; a zero product
gives ``c`` exactly (``+0`` for ``+0 + -0``, as a sum of zeros is). 141 instructions in
53 machine blocks, 53 steps for normal operands (more where the sum cancels: one per
normalising shift; a subnormal operand adds one per bit it lacks), 12 registers at
most: the large machine's ROM (a saxpy is 57 blocks of 128).
"""

from __future__ import annotations

from dataclasses import dataclass

from qwengpu_mlx.core.isa import Imm, Op

from qwengpu_mlx.host.float_addmul import exponent_less_one, leading_one_at_23, product_high, significand
from qwengpu_mlx.host.float_pack import (CANONICAL_NAN, INF, MAGNITUDE, SIGN, FloatEmitter, denormalise,
                                         leading_shift, round_pack)
from qwengpu_mlx.host.ir import VPred, VReg


@dataclass(frozen=True)
class Window:
    """An exact result on its way to the shared 64-bit tail (:func:`window_result`): the
    window's words (``hi``'s bit 62 of the window is field ``e + 2``), the sign in
    ``sign``'s bit 31, and the result ``special`` holds where the predicate
    ``is_special`` does. ``float_unit`` enters the tail from other fronts (a division's
    quotient) by writing these same names."""

    hi: VReg
    lo: VReg
    e: VReg
    sign: VReg
    special: VReg
    is_special: str

NO_EXPONENT = (-512) & 0xFFFFFFFF
"""The exponent given to a zero ``c``: below any product's, so the product is the operand
that stays and ``c`` (zero) shifts out of the window without a sticky bit."""


def fma(em: FloatEmitter, dst: str, a, b, c) -> list:
    """``dst = a * b + c`` rounded once: the routine's items."""
    out: list = []
    window = fma_window(em, a, b, c, out)
    return out + window_result(em, dst, window)


def fma_window(em: FloatEmitter, a, b, c, out: list, *, compact: bool = False) -> Window:
    """The front of the fma: ``a * b + c`` exactly in the 64-bit window, its exponent and
    sign, and the special operands' result, appended to ``out``; ``compact``: without
    what only repeats a result (``_specials``), for ``float_unit``'s ROM."""
    sp, ma, mb, X, Y, mc, xs = (em.reg() for _ in range(7))
    zp, zc, opp = em.pred(), em.pred(), em.pred()
    out += [em.ins(Op.XOR, sp, (a, b)),
            em.ins(Op.AND, ma, (a, Imm(MAGNITUDE))),
            em.ins(Op.AND, mb, (b, Imm(MAGNITUDE))),
            em.ins(Op.MAX, X, (VReg(ma), VReg(mb))),
            em.ins(Op.MIN, Y, (VReg(ma), VReg(mb))),
            em.ins(Op.AND, mc, (c, Imm(MAGNITUDE))),
            em.ins(Op.SETP, zp, (VReg(Y), Imm(0)), cmp="eq"),
            em.ins(Op.SETP, zc, (VReg(mc), Imm(0)), cmp="eq"),
            em.ins(Op.XOR, xs, (VReg(sp), c)),
            em.ins(Op.SETP, opp, (VReg(xs), Imm(0)), cmp="lt", signed=True)]
    special, is_special = _specials(em, c, VReg(sp), VReg(X), VReg(Y), VReg(mc), zp, zc, opp, out, compact)
    ex = exponent_less_one(em, VReg(X), out)
    ey = exponent_less_one(em, VReg(Y), out)
    ec = exponent_less_one(em, VReg(mc), out)
    mx = significand(em, VReg(X), ex, 0, out)
    my = significand(em, VReg(Y), ey, 0, out)
    ch = significand(em, VReg(mc), ec, 6, out)
    leading_one_at_23(em, my, ey, zp, out)
    ep, d, s, e, sign = (em.reg() for _ in range(5))
    c_big = em.pred()
    out += [em.ins(Op.ADD, ep, (ex, ey)),
            em.ins(Op.SUB, ep, (VReg(ep), Imm(125))),         # window bit 61 (product bit 47): field ep + 1
            em.ins(Op.MOV, ec.name, (Imm(NO_EXPONENT),), guard=VPred(zc)),
            em.ins(Op.SUB, d, (VReg(ep), ec)),
            em.ins(Op.SETP, c_big, (VReg(d), Imm(0)), cmp="lt", signed=True),
            em.ins(Op.ABS, s, (VReg(d),)),
            em.ins(Op.MIN, s, (VReg(s), Imm(63))),
            em.ins(Op.MAX, e, (VReg(ep), ec), signed=True),
            em.ins(Op.SELP, sign, (c, VReg(sp)), psrcs=(VPred(c_big),))]
    x14, wl = em.reg(), em.reg()
    out += [em.ins(Op.SHL, x14, (mx, Imm(14))),                 # first: mx and my die in product_high
            em.ins(Op.MUL, wl, (VReg(x14), my))]                # the product's low bits, << 14
    wh = product_high(em, mx, my, 18, out)
    bh, bl, sh, sl = (em.reg() for _ in range(4))
    out += [em.ins(Op.SELP, bh, (ch, wh), psrcs=(VPred(c_big),)),
            em.ins(Op.SELP, bl, (Imm(0), VReg(wl)), psrcs=(VPred(c_big),)),
            em.ins(Op.SELP, sh, (wh, ch), psrcs=(VPred(c_big),)),
            em.ins(Op.SELP, sl, (VReg(wl), Imm(0)), psrcs=(VPred(c_big),))]
    sh2, sl2 = _shift_right_sticky64(em, VReg(sh), VReg(sl), VReg(s), out)
    _negate64(em, sh2, sl2, VPred(opp), out)
    rh, rl = _add64(em, VReg(bh), VReg(bl), sh2, sl2, out)
    _absolute64(em, rh, rl, VReg(sign), out)
    return Window(rh, rl, VReg(e), VReg(sign), special, is_special)


def window_result(em: FloatEmitter, dst: str, w: Window) -> list:
    """The tail: the window's top 32 bits from its leading one, below the normal range
    where the exponent is, rounded, packed and signed; +0 for an exact 0, ``special``
    where ``is_special`` holds."""
    out: list = []
    S, n, zero = _to_32_bits(em, w.hi, w.lo, w.e, out)
    S, n = denormalise(em, S, n, out, bias=1)
    P = round_pack(em, S, n, out, bias=1)
    sb = em.reg()
    return out + [em.ins(Op.AND, sb, (w.sign, Imm(SIGN))),
                  em.ins(Op.OR, dst, (P, VReg(sb))),
                  em.ins(Op.MOV, dst, (Imm(0),), guard=VPred(zero)),       # exact cancellation: +0
                  em.ins(Op.MOV, dst, (w.special,), guard=VPred(w.is_special))]


def _specials(em: FloatEmitter, c, sp: VReg, X: VReg, Y: VReg, mc: VReg, zp: str, zc: str, opp: str,
              out: list, compact: bool = False) -> tuple[VReg, str]:
    """The result where an operand is special, and the predicate of those lanes: a zero
    product (``c``; for ``c`` = +-0 the sign of ``sp & c``), an infinite ``c`` (itself),
    an infinite product (``sp``'s infinity), and the canonical NaN for a NaN operand,
    ``0 * inf`` (``max - (min != 0)`` above ``0x7F7FFFFF``) and ``inf - inf``. ``compact``:
    without the move of an infinite ``c``, which the non-zero ``c``'s move made already."""
    v, spi, y1, x1 = (em.reg() for _ in range(4))
    ci, pi, nan, q, special = (em.pred() for _ in range(5))
    out += [em.ins(Op.AND, v, (c, sp)),
            em.ins(Op.MOV, v, (c,), guard=VPred(zc, True)),
            em.ins(Op.SETP, ci, (mc, Imm(INF)), cmp="ge")]
    if not compact:
        out.append(em.ins(Op.MOV, v, (c,), guard=VPred(ci)))
    out += [em.ins(Op.SETP, pi, (X, Imm(INF)), cmp="ge"),
            em.ins(Op.AND, spi, (sp, Imm(SIGN))),
            em.ins(Op.OR, v, (VReg(spi), Imm(INF)), guard=VPred(pi)),
            em.ins(Op.MIN, y1, (Y, Imm(1))),
            em.ins(Op.SUB, x1, (X, VReg(y1))),
            em.ins(Op.SETP, nan, (VReg(x1), Imm(INF - 1)), cmp="gt"),
            em.ins(Op.SETP, q, (mc, Imm(INF)), cmp="gt"),
            em.ins(Op.POR, nan, psrcs=(VPred(nan), VPred(q))),
            em.ins(Op.PAND, q, psrcs=(VPred(pi), VPred(ci))),
            em.ins(Op.PAND, q, psrcs=(VPred(q), VPred(opp))),
            em.ins(Op.POR, nan, psrcs=(VPred(nan), VPred(q))),
            em.ins(Op.MOV, v, (Imm(CANONICAL_NAN),), guard=VPred(nan)),
            em.ins(Op.POR, special, psrcs=(VPred(zp), VPred(pi))),
            em.ins(Op.POR, special, psrcs=(VPred(special), VPred(ci)))]
    return VReg(v), special


def _shift_right_sticky64(em: FloatEmitter, hi: VReg, lo: VReg, s: VReg, out: list) -> tuple[VReg, VReg]:
    """``(hi, lo) >> s`` for ``s`` in 0..63, bit 0 of the result ORed with every bit shifted out."""
    jam, u, lost, h2, l1, l2 = (em.reg() for _ in range(6))
    far, sticky = em.pred(), em.pred()
    out += [em.ins(Op.SETP, far, (s, Imm(32)), cmp="ge"),
            em.ins(Op.MIN, jam, (lo, Imm(1))),
            em.ins(Op.OR, lo.name, (hi, VReg(jam)), guard=VPred(far)),   # a 32-bit jump, lo jammed
            em.ins(Op.MOV, hi.name, (Imm(0),), guard=VPred(far)),
            em.ins(Op.SUB, s.name, (s, Imm(32)), guard=VPred(far)),
            em.ins(Op.SUB, u, (Imm(32), s)),
            em.ins(Op.SHL, lost, (lo, VReg(u))),                          # 0 for s = 0: a shift of 32
            em.ins(Op.SHR, h2, (hi, s)),
            em.ins(Op.SHR, l1, (lo, s)),
            em.ins(Op.SHL, l2, (hi, VReg(u))),
            em.ins(Op.OR, l1, (VReg(l1), VReg(l2))),
            em.ins(Op.SETP, sticky, (VReg(lost), Imm(0)), cmp="ne"),
            em.ins(Op.OR, l1, (VReg(l1), Imm(1)), guard=VPred(sticky))]
    return VReg(h2), VReg(l1)


def _negate64(em: FloatEmitter, hi: VReg, lo: VReg, where: VPred, out: list) -> None:
    """``(hi, lo) = -(hi, lo)`` (two's complement) on the lanes ``where`` holds, in place."""
    carry = em.pred()
    out += [em.ins(Op.NOT, hi.name, (hi,), guard=where),
            em.ins(Op.NEG, lo.name, (lo,), guard=where),
            em.ins(Op.SETP, carry, (lo, Imm(0)), cmp="eq"),
            em.ins(Op.PAND, carry, psrcs=(VPred(carry), where)),
            em.ins(Op.ADD, hi.name, (hi, Imm(1)), guard=VPred(carry))]


def _add64(em: FloatEmitter, ah: VReg, al: VReg, bh: VReg, bl: VReg, out: list) -> tuple[VReg, VReg]:
    rh, rl = em.reg(), em.reg()
    carry = em.pred()
    out += [em.ins(Op.ADD, rl, (al, bl)),
            em.ins(Op.SETP, carry, (VReg(rl), al), cmp="lt"),
            em.ins(Op.ADD, rh, (ah, bh)),
            em.ins(Op.ADD, rh, (VReg(rh), Imm(1)), guard=VPred(carry))]
    return VReg(rh), VReg(rl)


def _absolute64(em: FloatEmitter, hi: VReg, lo: VReg, sign: VReg, out: list) -> None:
    """A negative sum (``c`` and the product had one exponent and the smaller won) made
    positive, its sign flipped."""
    negative = em.pred()
    out.append(em.ins(Op.SETP, negative, (hi, Imm(0)), cmp="lt", signed=True))
    _negate64(em, hi, lo, VPred(negative), out)
    out.append(em.ins(Op.XOR, sign.name, (sign, Imm(SIGN)), guard=VPred(negative)))


def _to_32_bits(em: FloatEmitter, hi: VReg, lo: VReg, e: VReg, out: list) -> tuple[VReg, VReg, str]:
    """The window's top 32 bits from its leading one (at most down to the smallest
    normal's place), the rest as the sticky bit: ``(S, n, zero)`` for ``float_pack`` with
    bias 1 (window bit 62 is field ``e + 2``); ``zero``: the sum is exactly 0."""
    jump, zero, sticky = em.pred(), em.pred(), em.pred()
    out += [em.ins(Op.SETP, jump, (hi, Imm(0)), cmp="eq"),
            em.ins(Op.SHR, hi.name, (lo, Imm(1)), guard=VPred(jump)),   # a jump of 31: bit 31 stays clear
            em.ins(Op.SHL, lo.name, (lo, Imm(31)), guard=VPred(jump)),
            em.ins(Op.SUB, e.name, (e, Imm(31)), guard=VPred(jump)),
            em.ins(Op.SETP, zero, (hi, Imm(0)), cmp="eq")]
    k, n = leading_shift(em, hi, e, out, bias=1, start_normal=VPred(zero))
    S, u, t, lost = (em.reg() for _ in range(4))
    out += [em.ins(Op.SHL, S, (hi, k)),
            em.ins(Op.SUB, u, (Imm(32), k)),
            em.ins(Op.SHR, t, (lo, VReg(u))),
            em.ins(Op.OR, S, (VReg(S), VReg(t))),
            em.ins(Op.SHL, lost, (lo, k)),
            em.ins(Op.SETP, sticky, (VReg(lost), Imm(0)), cmp="ne"),
            em.ins(Op.OR, S, (VReg(S), Imm(1)), guard=VPred(sticky))]
    return VReg(S), n, zero
