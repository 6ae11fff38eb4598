"""``div.rn.f32`` and ``rcp.rn.f32`` (correctly rounded ``a / b`` and ``1 / b``) as routines
of the machine's integer instructions, bit for bit an NVIDIA GPU's result.

The significands (subnormal ones first shifted up to a leading one at bit 23, one block
per bit) are divided by restoring long division, one quotient bit per iteration: the
trial subtraction ``t = r - my`` gives the bit as its sign (``t >> 31``: no compare),
``r = t + nb * my`` restores where it did not fit, ``q = 2 q + nb`` collects the bits
(inverted; one subtraction at the end rights them) above a sentinel 1 whose arrival at
bit 26 ends the loop: 6 instructions, 2 blocks per bit. 26 bits (``mx 2^25 / my``) are
24 significant bits, the rounding bit and one more; the remainder's non-zero-ness is the
sticky bit, and ``float_pack``'s tail normalises (at most one shift), goes below the
normal range where the quotient does, rounds and packs.

A loop of 2 blocks is the shortest ROM for the quotient (the straight-line alternative,
a Newton-Raphson reciprocal from ``mul.hi``-style 16-bit products with a final
correction, is some 60 instructions more); it costs 52 steps, the same for every operand.

Special operands (PTX ``div.rn.f32``, IEEE-754): ``0/0``, ``inf/inf`` and a NaN operand
give the canonical NaN; ``x/0`` and ``inf/y`` infinity; ``0/y`` and ``x/inf`` zero; the
sign is always the XOR of the operands'. 75 instructions in 30 machine blocks (a
kernel of one division fits the published machine's 32), 77 steps for normal operands
(+1 per bit of a subnormal operand), 8 registers; ``rcp`` is ``div`` with a constant
1.0 that the lowering folds into the instructions that read it.
"""

from __future__ import annotations

from qwengpu_mlx.core.isa import Imm, Op

from qwengpu_mlx.host.float_addmul import exponent_less_one, leading_one_at_23, significand
from qwengpu_mlx.host.float_pack import (CANONICAL_NAN, INF, MAGNITUDE, SIGN, FloatEmitter, denormalise,
                                         normalise, round_pack)
from qwengpu_mlx.host.ir import LLabel, LTerm, VPred, VReg

ONE = 0x3F800000


def divide(em: FloatEmitter, dst: str, a, b) -> list:
    """``dst = a / b`` rounded to nearest even: the routine's items."""
    out: list = []
    sg, X, Y = em.reg(), em.reg(), em.reg()
    xz, yz, xi, yi = (em.pred() for _ in range(4))
    out += [em.ins(Op.XOR, sg, (a, b)),
            em.ins(Op.AND, X, (a, Imm(MAGNITUDE))),
            em.ins(Op.AND, Y, (b, Imm(MAGNITUDE))),
            em.ins(Op.SETP, xz, (VReg(X), Imm(0)), cmp="eq"),
            em.ins(Op.SETP, yz, (VReg(Y), Imm(0)), cmp="eq")]
    ex = exponent_less_one(em, VReg(X), out)
    ey = exponent_less_one(em, VReg(Y), out)
    mx = significand(em, VReg(X), ex, 0, out)
    my = significand(em, VReg(Y), ey, 0, out)
    leading_one_at_23(em, mx, ex, xz, out)
    leading_one_at_23(em, my, ey, yz, out)
    n = em.reg()
    out += [em.ins(Op.SUB, n, (ex, ey)),
            em.ins(Op.ADD, n, (VReg(n), Imm(126)))]      # bit 30 of S (quotient bit 25): field n + 1
    S = _quotient(em, mx, my, out)
    S, n2 = normalise(em, S, VReg(n), out, bias=0)
    S, n2 = denormalise(em, S, n2, out)
    P = round_pack(em, S, n2, out, bias=0)
    nan, same, edge = em.pred(), em.pred(), em.pred()
    big, sb = em.reg(), em.reg()
    out += [em.ins(Op.SETP, xi, (VReg(X), Imm(INF)), cmp="ge"),
            em.ins(Op.SETP, yi, (VReg(Y), Imm(INF)), cmp="ge"),
            em.ins(Op.POR, edge, psrcs=(VPred(xz), VPred(yi))),
            em.ins(Op.MOV, P.name, (Imm(0),), guard=VPred(edge)),       # 0 / y, x / inf
            em.ins(Op.POR, edge, psrcs=(VPred(xi), VPred(yz))),
            em.ins(Op.MOV, P.name, (Imm(INF),), guard=VPred(edge)),     # x / 0, inf / y
            em.ins(Op.MAX, big, (VReg(X), VReg(Y))),
            em.ins(Op.SETP, nan, (VReg(big), Imm(INF)), cmp="gt"),      # a NaN operand
            em.ins(Op.SETP, same, (VReg(X), VReg(Y)), cmp="eq"),
            em.ins(Op.POR, edge, psrcs=(VPred(xz), VPred(xi))),
            em.ins(Op.PAND, same, psrcs=(VPred(same), VPred(edge))),      # 0 / 0, inf / inf
            em.ins(Op.POR, nan, psrcs=(VPred(nan), VPred(same))),
            em.ins(Op.AND, sb, (VReg(sg), Imm(SIGN))),
            em.ins(Op.OR, dst, (P, VReg(sb))),
            em.ins(Op.MOV, dst, (Imm(CANONICAL_NAN),), guard=VPred(nan))]
    return out


def reciprocal(em: FloatEmitter, dst: str, b) -> list:
    """``dst = 1 / b`` rounded to nearest even (``rcp.rn.f32``)."""
    return divide(em, dst, Imm(ONE), b)


def _quotient(em: FloatEmitter, mx: VReg, my: VReg, out: list) -> VReg:
    """``floor(mx 2^25 / my) << 5``, bit 0 set when the division leaves a remainder."""
    r, q, t, nb = em.reg(), em.reg(), em.reg(), em.reg()
    more, rest = em.pred(), em.pred()
    loop = em.label("div")
    out += [em.ins(Op.MOV, r, (mx,)),
            em.ins(Op.MOV, q, (Imm(1),)),                               # the sentinel
            LLabel(loop),
            em.ins(Op.SUB, t, (VReg(r), my)),
            em.ins(Op.SHR, nb, (VReg(t), Imm(31))),                     # 1: my did not fit
            em.ins(Op.MAD, r, (VReg(nb), my, VReg(t))),                 # restored where it did not
            em.ins(Op.MAD, q, (VReg(q), Imm(2), VReg(nb))),
            em.ins(Op.SHL, r, (VReg(r), Imm(1))),
            em.ins(Op.SETP, more, (VReg(q), Imm(1 << 26)), cmp="lt"),
            LTerm("bra", loop, VPred(more), em.line),
            em.ins(Op.SUB, q, (Imm((1 << 27) - 1), VReg(q))),           # the bits righted, sentinel gone
            em.ins(Op.SHL, q, (VReg(q), Imm(5))),
            em.ins(Op.SETP, rest, (VReg(r), Imm(0)), cmp="ne"),
            em.ins(Op.OR, q, (VReg(q), Imm(1)), guard=VPred(rest))]
    return VReg(q)
