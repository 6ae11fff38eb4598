"""``sqrt.rn.f32`` (what ``sqrtf`` is without fast-math: correctly rounded) as a routine of the
machine's integer instructions, bit for bit an NVIDIA GPU's result.

The significand (a subnormal one first shifted up to bit 23) is placed at the top of a
register so that, read as a fraction ``F`` in [1/4, 1), ``a = F 4^h`` for an integer
``h`` (a shift of 7 or 8 by the exponent's parity). The root's bits then come one per
iteration by the restoring digit-by-digit method: bring down the operand's next two
bits (``r = 4 r + top``), try ``4 R + 1`` (kept as ``2 W + 1`` with ``W = 2 R``), subtract
where it fits. Bits are exhausted after 13 iterations and zeros come down after that,
as they should. 26 root bits (``W`` reaching ``2^26`` ends the loop: no counter) are 24
significant bits and two rounding bits, the remainder's non-zero-ness the sticky bit;
a square root of a positive float is always normal, so only ``float_pack.round_pack``
follows. The loop is 9 instructions, 3 blocks per bit: 78 steps, the same for every
operand (a Newton-Raphson root from 16-bit partial products would be straight-line
but several times the ROM). 46 instructions in 15 machine blocks, 89 steps, 8 registers.

Special operands: ``sqrt(+-0) = +-0``, ``sqrt(+inf) = +inf``, a NaN or a negative
operand (``-inf`` too) the canonical NaN.
"""

from __future__ import annotations

from qwengpu_mlx.core.isa import Imm, Op

from qwengpu_mlx.host.float_addmul import exponent_less_one, leading_one_at_23, significand
from qwengpu_mlx.host.float_pack import CANONICAL_NAN, INF, MAGNITUDE, FloatEmitter, round_pack
from qwengpu_mlx.host.ir import LLabel, LTerm, VPred, VReg


def square_root(em: FloatEmitter, dst: str, a) -> list:
    """``dst = sqrt(a)`` rounded to nearest even: the routine's items."""
    out: list = []
    X, parity, M, n = em.reg(), em.reg(), em.reg(), em.reg()
    zero, inf, nan, negative = (em.pred() for _ in range(4))
    out += [em.ins(Op.AND, X, (a, Imm(MAGNITUDE))),
            em.ins(Op.SETP, zero, (VReg(X), Imm(0)), cmp="eq")]
    e = exponent_less_one(em, VReg(X), out)
    m = significand(em, VReg(X), e, 0, out)
    leading_one_at_23(em, m, e, zero, out)
    out += [em.ins(Op.AND, parity, (e, Imm(1))),
            em.ins(Op.ADD, parity, (VReg(parity), Imm(7))),
            em.ins(Op.SHL, M, (m, VReg(parity))),                # F = M / 2^32 in [1/4, 1)
            em.ins(Op.SHR, n, (e, Imm(1)), signed=True),
            em.ins(Op.ADD, n, (VReg(n), Imm(63)))]              # root bit 25 (S bit 30): field n + 1
    S = _root_bits(em, VReg(M), out)
    P = round_pack(em, S, VReg(n), out, bias=0)
    return out + [
        em.ins(Op.SETP, inf, (VReg(X), Imm(INF)), cmp="ge"),
        em.ins(Op.SETP, nan, (VReg(X), Imm(INF)), cmp="gt"),
        em.ins(Op.SETP, negative, (a, Imm(0)), cmp="lt", signed=True),
        em.ins(Op.PAND, negative, psrcs=(VPred(negative), VPred(zero, True))),
        em.ins(Op.POR, nan, psrcs=(VPred(nan), VPred(negative))),
        em.ins(Op.SELP, dst, (a, P), psrcs=(VPred(zero),)),        # +-0 keeps its sign
        em.ins(Op.MOV, dst, (Imm(INF),), guard=VPred(inf)),
        em.ins(Op.MOV, dst, (Imm(CANONICAL_NAN),), guard=VPred(nan))]


def _root_bits(em: FloatEmitter, M: VReg, out: list) -> VReg:
    """``floor(sqrt(F) 2^26) << 5`` for ``F = M / 2^32``, bit 0 set when the root is inexact."""
    r, W, one, top, t, S = (em.reg() for _ in range(6))
    fits, more, rest = em.pred(), em.pred(), em.pred()
    loop = em.label("sqrt")
    out += [em.ins(Op.MOV, r, (Imm(0),)),
            em.ins(Op.MOV, W, (Imm(0),)),
            em.ins(Op.MIN, one, (M, Imm(1))),        # 1 (M is never 0), a register the loop's mad reads
            LLabel(loop),
            em.ins(Op.SHR, top, (M, Imm(30))),
            em.ins(Op.MAD, r, (VReg(r), Imm(4), VReg(top))),      # the next two bits come down
            em.ins(Op.SHL, M.name, (M, Imm(2))),
            em.ins(Op.MAD, t, (VReg(W), Imm(2), VReg(one))),      # 4 R + 1
            em.ins(Op.SETP, fits, (VReg(r), VReg(t)), cmp="ge"),
            em.ins(Op.SUB, r, (VReg(r), VReg(t)), guard=VPred(fits)),
            em.ins(Op.ADD, W, (VReg(t), Imm(1))),                 # 2 (2 R + 1)
            em.ins(Op.SUB, W, (VReg(W), Imm(2)), guard=VPred(fits, True)),  # 2 (2 R)
            em.ins(Op.SETP, more, (VReg(W), Imm(1 << 26)), cmp="lt"),
            LTerm("bra", loop, VPred(more), em.line),
            em.ins(Op.SHL, S, (VReg(W), Imm(4))),                 # R << 5
            em.ins(Op.SETP, rest, (VReg(r), Imm(0)), cmp="ne"),
            em.ins(Op.OR, S, (VReg(S), Imm(1)), guard=VPred(rest))]
    return VReg(S)
