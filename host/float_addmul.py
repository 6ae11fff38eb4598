"""``add.f32``/``sub.f32`` and ``mul.f32`` (round to nearest even) as routines of the
machine's integer instructions, bit for bit an NVIDIA GPU's result.

A float is its binary32 pattern in a register. Both routines split the operands into
exponent and significand with integer shifts and masks, compute the exact result's top
bits with a sticky bit, and end in ``float_pack``'s shared normalise/round/pack tail.
Subnormals are kept (no flush to zero: clang without fast-math), a NaN result is the
canonical ``0x7FFFFFFF`` the GPU writes, infinities and signed zeros follow IEEE-754.

**add** (``a + b``; ``sub`` flips ``b``'s sign first, 1 more): order the magnitudes
(unsigned ``max``/``min``: no branch), take ``E - 1`` of each (``max(e - 1, 0)`` covers
subnormals, whose exponent is 1 with no implicit bit) and the significands at bit 29
(``X << 6 - (E - 1) << 29`` leaves the implicit bit exactly where the field was),
shift the smaller right by the exponent difference keeping a sticky bit, add or
subtract, then normalise (left only: the sum of two floats is on the grid of the
smaller). Exact cancellation gives +0 (-0 only for -0 + -0). A NaN operand, or inf - inf
(``Y + 1 > inf`` after the subtraction's ``max``: one comparison for both), gives the
canonical NaN; an infinite operand gives infinity with the larger operand's sign.
52 instructions (``sub`` 53) in 20 machine blocks, 20 + k steps where k is the
normalising shift (1 for most adds, 0 on a carry, up to 24 on cancellation: one
3-instruction block each, where a binary search of shifts would cost 15 instructions
of ROM and 5 steps every time); 11 registers at most (``bench/float_cost.py``).

**mul**: the significands' 48-bit product from 12-bit halves (four products and two
multiply-adds whose sums stay below 2^32, as ``division.mul_hi`` does with 16-bit
halves, which would need two more shifts here), its bits 47..17 with bits 16..0 as the
sticky bit (``(mx << 15) * my`` is zero exactly when they are), then the tail with the
right shift for subnormal results. Zero times infinity and NaN operands give the
canonical NaN (``max(|a|, |b|) - (min != 0) > 0x7F7FFFFF``: one comparison); a zero
operand skips the normalising loop. A subnormal operand is first shifted up to a
leading one at bit 23 (one block per bit, none for normal operands), so the product
keeps its significant bits above the 17 folded into sticky. 70 instructions in 28
machine blocks, 27 steps for normal operands (+1 per bit a subnormal operand lacks),
12 registers at most.
"""

from __future__ import annotations

from qwengpu_mlx.core.isa import Imm, Op

from qwengpu_mlx.host.float_pack import (CANONICAL_NAN, INF, MAGNITUDE, SIGN, FloatEmitter, denormalise,
                                         normalise, round_pack)
from qwengpu_mlx.host.ir import LLabel, LTerm, VPred, VReg


def exponent_less_one(em: FloatEmitter, X, out: list) -> VReg:
    """``max(field - 1, 0)`` of a magnitude's exponent field: ``E - 1`` where a subnormal's
    ``E`` is 1 (the field it would have if it carried the implicit bit)."""
    e = em.reg()
    out += [em.ins(Op.SHR, e, (X, Imm(23))),
            em.ins(Op.SUB, e, (VReg(e), Imm(1))),
            em.ins(Op.MAX, e, (VReg(e), Imm(0)), signed=True)]
    return VReg(e)


def significand(em: FloatEmitter, X, e1: VReg, shift: int, out: list) -> VReg:
    """The significand with its implicit bit (none for a subnormal) at ``23 + shift``:
    ``(X << shift) - e1 << (23 + shift)``, exact modulo 2^32 since the result fits."""
    xs, m = em.reg(), em.reg()
    if shift:
        out.append(em.ins(Op.SHL, xs, (X, Imm(shift))))
        X = VReg(xs)
    out.append(em.ins(Op.MAD, m, (e1, Imm((-1 << (23 + shift)) & 0xFFFFFFFF), X)))
    return VReg(m)


def shift_right_sticky(em: FloatEmitter, m: VReg, d, out: list) -> VReg:
    """``m >> d`` with bit 0 set when a 1 was shifted out (any ``d``, 32 and more too)."""
    y, back = em.reg(), em.reg()
    p = em.pred()
    out += [em.ins(Op.SHR, y, (m, d)),
            em.ins(Op.SHL, back, (VReg(y), d)),
            em.ins(Op.SETP, p, (VReg(back), m), cmp="ne"),
            em.ins(Op.OR, y, (VReg(y), Imm(1)), guard=VPred(p))]
    return VReg(y)


def add(em: FloatEmitter, dst: str, a, b, *, negate_b: bool = False) -> list:
    """``dst = a + b`` (``a - b`` with ``negate_b``): the routine's items."""
    out: list = []
    if negate_b:
        nb = em.reg()
        out.append(em.ins(Op.XOR, nb, (b, Imm(SIGN))))
        b = VReg(nb)
    ma, mb, X, Y, sg = (em.reg() for _ in range(5))
    less = em.pred()
    out += [em.ins(Op.AND, ma, (a, Imm(MAGNITUDE))),
            em.ins(Op.AND, mb, (b, Imm(MAGNITUDE))),
            em.ins(Op.MAX, X, (VReg(ma), VReg(mb))),
            em.ins(Op.MIN, Y, (VReg(ma), VReg(mb))),
            em.ins(Op.SETP, less, (VReg(ma), VReg(mb)), cmp="lt"),
            em.ins(Op.SELP, sg, (b, a), psrcs=(VPred(less),))]      # the larger's sign
    ex = exponent_less_one(em, VReg(X), out)
    ey = exponent_less_one(em, VReg(Y), out)
    mx = significand(em, VReg(X), ex, 6, out)
    my = significand(em, VReg(Y), ey, 6, out)
    d = em.reg()
    out.append(em.ins(Op.SUB, d, (ex, ey)))
    ya = shift_right_sticky(em, my, VReg(d), out)
    S, opp = _sum(em, a, b, mx, ya, out)
    zero = em.pred()
    out += [em.ins(Op.SETP, zero, (S, Imm(0)), cmp="eq"),          # exact cancellation:
            em.ins(Op.MOV, ex.name, (Imm(0),), guard=VPred(zero)),  # the sentinel stops at once,
            em.ins(Op.AND, sg, (a, b), guard=VPred(zero))]          # +0 unless both are -0
    S, n = normalise(em, S, ex, out, bias=1)
    P = round_pack(em, S, n, out, bias=1)
    nan, inf = em.pred(), em.pred()
    y1 = em.reg()
    out += [em.ins(Op.SETP, inf, (VReg(X), Imm(INF)), cmp="ge"),
            em.ins(Op.MOV, P.name, (Imm(INF),), guard=VPred(inf)),
            em.ins(Op.ADD, y1, (VReg(Y), Imm(1))),
            em.ins(Op.MAX, X, (VReg(X), VReg(y1)), guard=VPred(opp)),  # inf - inf passes inf
            em.ins(Op.SETP, nan, (VReg(X), Imm(INF)), cmp="gt")]
    return out + _signed_result(em, dst, P, VReg(sg), nan)


def _sum(em: FloatEmitter, a, b, mx: VReg, ya: VReg, out: list) -> tuple[VReg, str]:
    """``mx + ya``, or ``mx - ya`` where the signs differ; returns it and that predicate."""
    xs, S = em.reg(), em.reg()
    opp = em.pred()
    out += [em.ins(Op.XOR, xs, (a, b)),
            em.ins(Op.SETP, opp, (VReg(xs), Imm(0)), cmp="lt", signed=True),
            em.ins(Op.ADD, S, (mx, ya)),
            em.ins(Op.SUB, S, (mx, ya), guard=VPred(opp))]
    return VReg(S), opp


def _signed_result(em: FloatEmitter, dst: str, P: VReg, sign_of: VReg, nan: str) -> list:
    """``dst = P | sign(sign_of)``, the canonical NaN where ``nan``."""
    sb = em.reg()
    return [em.ins(Op.AND, sb, (sign_of, Imm(SIGN))),
            em.ins(Op.OR, dst, (P, VReg(sb))),
            em.ins(Op.MOV, dst, (Imm(CANONICAL_NAN),), guard=VPred(nan))]


def mul(em: FloatEmitter, dst: str, a, b) -> list:
    """``dst = a * b``: the routine's items."""
    out: list = []
    sg, ma, mb, X, Y = (em.reg() for _ in range(5))
    zero, inf, nan = em.pred(), em.pred(), em.pred()
    out += [em.ins(Op.XOR, sg, (a, b)),
            em.ins(Op.AND, ma, (a, Imm(MAGNITUDE))),
            em.ins(Op.AND, mb, (b, Imm(MAGNITUDE))),
            em.ins(Op.MAX, X, (VReg(ma), VReg(mb))),   # the product is symmetric: only the smaller
            em.ins(Op.MIN, Y, (VReg(ma), VReg(mb))),   # can be subnormal with a result above zero
            em.ins(Op.SETP, zero, (VReg(Y), Imm(0)), cmp="eq")]
    ex = exponent_less_one(em, VReg(X), out)
    ey = exponent_less_one(em, VReg(Y), out)
    mx = significand(em, VReg(X), ex, 0, out)
    my = significand(em, VReg(Y), ey, 0, out)
    leading_one_at_23(em, my, ey, zero, out)
    n = em.reg()
    out += [em.ins(Op.ADD, n, (ex, ey)),
            em.ins(Op.SUB, n, (VReg(n), Imm(125)))]          # bit 47 of the product: field n + 1
    S = product_top(em, mx, my, out)
    S, n2 = normalise(em, S, VReg(n), out, bias=0, start_normal=VPred(zero))
    S, n2 = denormalise(em, S, n2, out)
    P = round_pack(em, S, n2, out, bias=0)
    out += [em.ins(Op.MOV, P.name, (Imm(0),), guard=VPred(zero)),
            em.ins(Op.SETP, inf, (VReg(X), Imm(INF)), cmp="ge"),
            em.ins(Op.MOV, P.name, (Imm(INF),), guard=VPred(inf)),
            em.ins(Op.MIN, Y, (VReg(Y), Imm(1))),       # 0 * inf: inf - 0 > inf - 1
            em.ins(Op.SUB, X, (VReg(X), VReg(Y))),
            em.ins(Op.SETP, nan, (VReg(X), Imm(INF - 1)), cmp="gt")]
    return out + _signed_result(em, dst, P, VReg(sg), nan)


def leading_one_at_23(em: FloatEmitter, m: VReg, e: VReg, zero: str, out: list) -> None:
    """A subnormal significand shifted up to bit 23, its exponent down with it (below 0):
    the product then keeps its 24 significant bits above the 17 it folds into sticky. One
    block per shift; none for a normal operand; a zero one is left out (its result is 0)."""
    p = em.pred()
    loop, done = em.label("subn"), em.label("subn_done")
    out += [em.ins(Op.MOV, m.name, (Imm(1 << 23),), guard=VPred(zero)),
            em.ins(Op.SETP, p, (m, Imm(1 << 23)), cmp="lt"),
            LTerm("bra", done, VPred(p, True), em.line),
            LLabel(loop),
            em.ins(Op.SHL, m.name, (m, Imm(1))),
            em.ins(Op.SUB, e.name, (e, Imm(1))),
            em.ins(Op.SETP, p, (m, Imm(1 << 23)), cmp="lt"),
            LTerm("bra", loop, VPred(p), em.line),
            LLabel(done)]


def product_top(em: FloatEmitter, mx: VReg, my: VReg, out: list) -> VReg:
    """Bits 47..17 of ``mx * my`` (both below 2^24), bit 0 ORed with any of bits 16..0."""
    S = product_high(em, mx, my, 17, out)
    x15, lo = em.reg(), em.reg()
    sticky = em.pred()
    out += [em.ins(Op.SHL, x15, (mx, Imm(15))),
            em.ins(Op.MUL, lo, (VReg(x15), my)),                      # product's bits 16..0, << 15
            em.ins(Op.SETP, sticky, (VReg(lo), Imm(0)), cmp="ne"),
            em.ins(Op.OR, S.name, (S, Imm(1)), guard=VPred(sticky))]
    return S


def product_high(em: FloatEmitter, mx: VReg, my: VReg, drop: int, out: list) -> VReg:
    """``(mx * my) >> drop`` for significands below 2^24 and ``drop`` of 17 or more (so
    it fits 32 bits): 12-bit halves, ``hh 2^24 + (xh yl + xl yh) 2^12 + xl yl`` with every
    partial sum below 2^26."""
    xh, xl, yh, yl, low, mid, t, hh, S = (em.reg() for _ in range(9))
    out += [em.ins(Op.SHR, xh, (mx, Imm(12))), em.ins(Op.AND, xl, (mx, Imm(0xFFF))),
            em.ins(Op.SHR, yh, (my, Imm(12))), em.ins(Op.AND, yl, (my, Imm(0xFFF))),
            em.ins(Op.MUL, low, (VReg(xl), VReg(yl))),                # < 2^24
            em.ins(Op.MUL, mid, (VReg(xh), VReg(yl))),
            em.ins(Op.MAD, mid, (VReg(xl), VReg(yh), VReg(mid))),     # < 2^25
            em.ins(Op.SHR, t, (VReg(low), Imm(12))),
            em.ins(Op.ADD, t, (VReg(mid), VReg(t))),                  # (product - hh 2^24) >> 12
            em.ins(Op.SHR, t, (VReg(t), Imm(drop - 12))),
            em.ins(Op.MUL, hh, (VReg(xh), VReg(yh))),
            em.ins(Op.MAD, S, (VReg(hh), Imm(1 << (24 - drop)), VReg(t)))]
    return VReg(S)
