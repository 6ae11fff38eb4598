"""The shared tail of the float32 routines: normalise a significand, round it to nearest
even and pack it into a binary32 bit pattern, in the machine's integer instructions.

Every arithmetic routine (``float_addmul``, ``float_fma``) reduces its operands to one
32-bit significand ``S`` and an exponent register ``n``, then ends here:

* ``S`` (below ``2^31``) holds the exact result's top bits with a *sticky* bit in bit 0
  (set when any lower bit of the exact result is non-zero); bit 30 of ``S`` carries the
  biased exponent ``n + 1 + bias`` (``bias`` is 0 or 1, the routine's choice, so that it
  can hand over the exponent it already has without an instruction to adjust it).
* :func:`normalise` shifts ``S`` left until bit 30 is its leading one, but never below the
  smallest normal exponent: a *sentinel* bit ``2^30 >> (n + bias)`` ORed into a copy of
  ``S`` stops the shift there, so one loop block (three instructions: shift, count,
  compare) does both jobs. A data-dependent loop costs one step per bit of cancellation
  and 7 instructions of ROM, where a binary search of shifts costs 15 instructions and
  5 steps every time; most adds need 0 or 1 shift.
* :func:`denormalise` (products only: a sum of floats is never below the smallest
  subnormal's grid) shifts right while the exponent is below the smallest normal's,
  keeping the bits shifted out as the sticky bit (a shift back that differs from ``S``).
* :func:`round_pack`: bits 6..0 are the rounding bits; ``(S + 0x3F + lsb) >> 7`` rounds
  to nearest even, and ``n * 2^23 + m`` packs it, the implicit bit of ``m`` adding the
  one to the exponent field. A carry out of the rounding (1.111..1 -> 10.0) lands in the
  exponent by itself, a subnormal that rounds up to the smallest normal too; an
  overflow passes ``0x7F800000`` and one unsigned ``min`` makes it infinity.

Costs (instructions): normalise 7 (+1 to apply the count), denormalise 7, round and
pack 7 (+1 for the sign). Registers live at once: ``S``, ``n``, ``T`` and the count.
"""

from __future__ import annotations

from qwengpu_mlx.core.isa import Imm, Op

from qwengpu_mlx.host.division import Emitter
from qwengpu_mlx.host.ir import LLabel, LTerm, VPred, VReg

SIGN = 0x80000000
MAGNITUDE = 0x7FFFFFFF
INF = 0x7F800000
CANONICAL_NAN = 0x7FFFFFFF
"""The NaN an NVIDIA GPU's float arithmetic writes for every NaN result (PTX: the
result of an operation on NaNs is the canonical NaN)."""


class FloatEmitter(Emitter):
    """``division.Emitter`` with the float routines' own label and register names."""

    def label(self, what: str) -> str:
        return self.fresh(f"$f_{what}")

    def reg(self, prefix: str = "%fv") -> str:
        return self.fresh(prefix)

    def pred(self) -> str:
        return self.fresh("%fp")


def normalise(em: FloatEmitter, S: VReg, n: VReg, out: list, *, bias: int,
              start_normal: VPred | None = None) -> tuple[VReg, VReg]:
    """``(S << k, n - k)`` for the ``k`` that puts ``S``'s leading one at bit 30, at most
    ``n + bias``. ``start_normal``: lanes where the caller knows ``S`` is 0 and the result
    is overridden later (a zero operand), which skip the loop instead of counting to 30."""
    k, n2 = leading_shift(em, S, n, out, bias=bias, start_normal=start_normal)
    S2 = em.reg()
    out.append(em.ins(Op.SHL, S2, (S, k)))
    return VReg(S2), n2


def leading_shift(em: FloatEmitter, S: VReg, n: VReg, out: list, *, bias: int,
                  start_normal: VPred | None = None) -> tuple[VReg, VReg]:
    """``(k, n - k)``: the left shift :func:`normalise` applies (a routine with a wider
    significand applies it to both words)."""
    sent, T, k, n2 = em.reg(), em.reg(), em.reg(), em.reg()
    p = em.pred()
    loop, done = em.label("norm"), em.label("normed")
    out += [em.ins(Op.SHR, sent, (Imm(1 << (30 - bias)), n)),
            em.ins(Op.OR, T, (S, VReg(sent)))]
    if start_normal is not None:
        out.append(em.ins(Op.MOV, T, (Imm(1 << 30),), guard=start_normal))
    out += [em.ins(Op.MOV, k, (Imm(0),)),
            em.ins(Op.SETP, p, (VReg(T), Imm(1 << 30)), cmp="lt"),
            LTerm("bra", done, VPred(p, True), em.line),
            LLabel(loop),
            em.ins(Op.SHL, T, (VReg(T), Imm(1))),
            em.ins(Op.ADD, k, (VReg(k), Imm(1))),
            em.ins(Op.SETP, p, (VReg(T), Imm(1 << 30)), cmp="lt"),
            LTerm("bra", loop, VPred(p), em.line),
            LLabel(done),
            em.ins(Op.SUB, n2, (n, VReg(k)))]
    return VReg(k), VReg(n2)


def denormalise(em: FloatEmitter, S: VReg, n: VReg, out: list, *, bias: int = 0) -> tuple[VReg, VReg]:
    """Where ``n + bias < 0`` (below the smallest normal), ``S >> -(n + bias)`` with the
    bits shifted out kept as the sticky bit, and ``n = -bias``; elsewhere both as they were."""
    r, n2, Sr, back = em.reg(), em.reg(), em.reg(), em.reg()
    p = em.pred()
    out += [em.ins(Op.SUB, r, (Imm(-bias & 0xFFFFFFFF), n)),
            em.ins(Op.MAX, r, (VReg(r), Imm(0)), signed=True),
            em.ins(Op.MAX, n2, (n, Imm(-bias & 0xFFFFFFFF)), signed=True),
            em.ins(Op.SHR, Sr, (S, VReg(r))),
            em.ins(Op.SHL, back, (VReg(Sr), VReg(r))),
            em.ins(Op.SETP, p, (VReg(back), S), cmp="ne"),
            em.ins(Op.OR, Sr, (VReg(Sr), Imm(1)), guard=VPred(p))]
    return VReg(Sr), VReg(n2)


def round_pack(em: FloatEmitter, S: VReg, n: VReg, out: list, *, bias: int) -> VReg:
    """The magnitude's bit pattern, rounded to nearest even, infinity on overflow."""
    t, lsb, S1, S2, m, P = (em.reg() for _ in range(6))
    out += [em.ins(Op.SHR, t, (S, Imm(7))),
            em.ins(Op.AND, lsb, (VReg(t), Imm(1))),
            em.ins(Op.ADD, S1, (S, VReg(lsb))),
            em.ins(Op.ADD, S2, (VReg(S1), Imm(0x3F + (bias << 30)))),
            em.ins(Op.SHR, m, (VReg(S2), Imm(7))),
            em.ins(Op.MAD, P, (n, Imm(1 << 23), VReg(m))),
            em.ins(Op.MIN, P, (VReg(P), Imm(INF)))]
    return VReg(P)
