"""Integer division, remainder and the high half of a product as routines of machine instructions.

The machine's ALUs add, multiply (low half), shift, compare and select; they do not
divide. Rather than a divider in the circuit (a 32-bit restoring divider is 32
compare-and-subtract stages deep: some 64 more layers), the lowering writes each
``div``/``rem``/``mul.hi`` as a short routine of instructions the circuit already runs
exactly, and the model executes it step by step like any other code. The host never
divides a kernel's value; it only splits constants (as clang does when it writes them).

* ``mul.hi.{u32,s32} d, a, b`` (what clang emits for division by a constant): 16-bit
  halves, three multiply-adds whose partial sums never pass 32 bits, and for ``.s32`` the
  correction ``hi_s = hi_u - (a < 0 ? b : 0) - (b < 0 ? a : 0)``. Straight-line: 11 to 17
  instructions, the same for every value.
* ``div``/``rem`` ``.{u32,s32}`` by a register or an immediate: shift and subtract with
  a data-dependent length. An up loop doubles ``t = d << k`` while ``2t <= n`` (one block
  per doubling); a down loop subtracts ``t`` where it fits and halves it, and stops as
  soon as the remainder is below ``d`` (two blocks per quotient bit). So the cost grows
  with ``log2(n / d)``: about ``3 log2(q) + 4`` steps, 96 at most. ``.s32`` divides the
  magnitudes (``abs(INT_MIN)`` is ``2^31`` unsigned) and gives the quotient the sign of
  ``n ^ d`` and the remainder the dividend's sign: truncation toward zero, and
  ``INT_MIN / -1`` wraps to ``INT_MIN``.
* Division by zero stores to :data:`TRAP_ADDRESS`, outside memory on both backends: the
  launch stops with a memory fault there, and the instruction's ``trap`` text (the ``.cu``
  line) makes the reference name it as a division by zero.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from qwengpu_mlx.core.isa import Imm, Op

from qwengpu_mlx.host.ir import LInstr, LLabel, LTerm, VPred, VReg

__all__ = ["TRAP_ADDRESS", "divide", "mul_hi"]

TRAP_ADDRESS = 0x7FFFFFFC
"""A word-aligned byte address outside memory on every machine (the same as the
lowering's poison address): a store there faults on both backends."""

M32 = 0xFFFFFFFF


@dataclass
class Emitter:
    """Makes the routine's instructions, all carrying the PTX instruction's origin."""

    line: int
    src: object
    text: str
    fresh: Callable[[str], str]

    def ins(self, op: Op, dst, srcs=(), **kw) -> LInstr:
        return LInstr(op, dst, tuple(srcs), line=self.line, src=self.src, text=self.text, **kw)

    def reg(self, prefix: str = "%dv") -> str:
        return self.fresh(prefix)

    def label(self, what: str) -> str:
        return self.fresh(f"$div_{what}")


def _split_constant(b: int) -> tuple[Imm, Imm]:
    return Imm(b & 0xFFFF), Imm((b >> 16) & 0xFFFF)


def mul_hi(em: Emitter, dst: str, a, b, signed: bool) -> list:
    """``dst = (a * b) >> 32`` in 32-bit pieces: ``a = ah 2^16 + al``, ``b = bh 2^16 + bl``."""
    out: list = []
    al, ah = em.reg(), em.reg()
    out += [em.ins(Op.AND, al, (a, Imm(0xFFFF))), em.ins(Op.SHR, ah, (a, Imm(16)))]
    if isinstance(b, Imm):
        bl, bh = _split_constant(b.value)
    else:
        bl, bh = VReg(em.reg()), VReg(em.reg())
        out += [em.ins(Op.AND, bl.name, (b, Imm(0xFFFF))), em.ins(Op.SHR, bh.name, (b, Imm(16)))]
    p0, t, mid, m, mid2, u, v = (em.reg() for _ in range(7))
    hi = em.reg() if signed else dst
    hi_u = em.reg()
    out += [
        em.ins(Op.MUL, p0, (VReg(al), bl)),                    # al bl < 2^32
        em.ins(Op.SHR, t, (VReg(p0), Imm(16))),
        em.ins(Op.MAD, mid, (VReg(al), bh, VReg(t))),          # al bh + (al bl >> 16) < 2^32
        em.ins(Op.AND, m, (VReg(mid), Imm(0xFFFF))),
        em.ins(Op.MAD, mid2, (VReg(ah), bl, VReg(m))),         # ah bl + (mid & 0xffff) < 2^32
        em.ins(Op.SHR, u, (VReg(mid), Imm(16))),
        em.ins(Op.MAD, hi_u, (VReg(ah), bh, VReg(u))),
        em.ins(Op.SHR, v, (VReg(mid2), Imm(16))),
        em.ins(Op.ADD, hi, (VReg(hi_u), VReg(v))),
    ]
    if signed:
        out += _signed_correction(em, dst, hi, a, b)
    return out


def _signed_correction(em: Emitter, dst: str, hi: str, a, b) -> list:
    """``hi - (a < 0 ? b : 0) - (b < 0 ? a : 0)``: the signed high half from the unsigned one."""
    out: list = []
    sa, x, h1 = em.reg(), em.reg(), em.reg()
    out += [em.ins(Op.SHR, sa, (a, Imm(31)), signed=True),   # all ones where a < 0
            em.ins(Op.AND, x, (VReg(sa), b)),
            em.ins(Op.SUB, h1, (VReg(hi), VReg(x)))]
    if isinstance(b, Imm):
        if b.value >> 31 & 1:
            return out + [em.ins(Op.SUB, dst, (VReg(h1), a))]
        return out + [em.ins(Op.MOV, dst, (VReg(h1),))]
    sb, y = em.reg(), em.reg()
    return out + [em.ins(Op.SHR, sb, (b, Imm(31)), signed=True),
                  em.ins(Op.AND, y, (VReg(sb), a)),
                  em.ins(Op.SUB, dst, (VReg(h1), VReg(y)))]


def divide(em: Emitter, dst: str, n, d, *, signed: bool, remainder: bool, trap: str,
           guard: VPred | None = None) -> list:
    """``dst = n / d`` (or ``n % d``): the routine's items, labels and branches included.

    A guarded division branches around the routine where its guard fails, so the
    lanes that do not divide neither trap nor write ``dst``."""
    out: list = []
    skip = None
    if guard is not None:
        skip = em.label("skip")
        out.append(LTerm("bra", skip, VPred(guard.name, not guard.negated), em.line))
    an, ad = _magnitudes(em, n, d, signed, out)
    out += _trap_if_zero(em, ad, trap)
    q, r = _unsigned_loops(em, an, ad, out)
    out += _result(em, dst, q, r, n, d, signed=signed, remainder=remainder)
    if skip is not None:
        out.append(LLabel(skip))
    return out


def _magnitudes(em: Emitter, n, d, signed: bool, out: list):
    """The operands the unsigned loops divide: ``|n|`` and ``|d|`` for ``.s32``."""
    if not signed:
        return n, d
    an, ad = em.reg(), em.reg()
    out += [em.ins(Op.ABS, an, (n,)), em.ins(Op.ABS, ad, (d,))]
    return VReg(an), VReg(ad)


def _trap_if_zero(em: Emitter, d, trap: str) -> list:
    pz, addr = em.reg("%dz"), em.reg()
    return [em.ins(Op.SETP, pz, (d, Imm(0)), cmp="eq"),
            em.ins(Op.MOV, addr, (Imm(TRAP_ADDRESS),)),
            em.ins(Op.ST, None, (VReg(addr), Imm(0)), guard=VPred(pz), space="global", trap=trap)]


def _unsigned_loops(em: Emitter, n, d, out: list):
    """Shift and subtract; returns the quotient and remainder registers."""
    q, r, h, t, b = (em.reg() for _ in range(5))
    p_up, p_fit, p_more = em.reg("%dp"), em.reg("%dp"), em.reg("%dp")
    up, down = em.label("up"), em.label("down")
    out += [
        em.ins(Op.MOV, r, (n,)), em.ins(Op.MOV, q, (Imm(0),)), em.ins(Op.SHR, h, (n, Imm(1))),
        em.ins(Op.MOV, t, (d,)), em.ins(Op.MOV, b, (Imm(1),)),
        em.ins(Op.SETP, p_up, (VReg(t), VReg(h)), cmp="le"),
        LTerm("bra", down, VPred(p_up, True), em.line),
        LLabel(up),                                   # t <= n / 2: doubling stays <= n
        em.ins(Op.SHL, t, (VReg(t), Imm(1))), em.ins(Op.SHL, b, (VReg(b), Imm(1))),
        em.ins(Op.SETP, p_up, (VReg(t), VReg(h)), cmp="le"),
        LTerm("bra", up, VPred(p_up), em.line),
        LLabel(down),                                 # r < 2t here; after the body r < t
        em.ins(Op.SETP, p_fit, (VReg(r), VReg(t)), cmp="ge"),
        em.ins(Op.SUB, r, (VReg(r), VReg(t)), guard=VPred(p_fit)),
        em.ins(Op.OR, q, (VReg(q), VReg(b)), guard=VPred(p_fit)),
        em.ins(Op.SHR, t, (VReg(t), Imm(1))), em.ins(Op.SHR, b, (VReg(b), Imm(1))),
        em.ins(Op.SETP, p_more, (VReg(r), d), cmp="ge"),  # r >= d: a lower bit remains
        LTerm("bra", down, VPred(p_more), em.line),
    ]
    return VReg(q), VReg(r)


def _result(em: Emitter, dst: str, q: VReg, r: VReg, n, d, *, signed: bool, remainder: bool) -> list:
    """The quotient with the sign of ``n ^ d``, the remainder with the sign of ``n``."""
    if not signed:
        return [em.ins(Op.MOV, dst, (r if remainder else q,))]
    ps, neg = em.reg("%dp"), em.reg()
    out: list = []
    if remainder:
        out.append(em.ins(Op.SETP, ps, (n, Imm(0)), cmp="lt", signed=True))
        value = r
    else:
        s = em.reg()
        out += [em.ins(Op.XOR, s, (n, d)), em.ins(Op.SETP, ps, (VReg(s), Imm(0)), cmp="lt", signed=True)]
        value = q
    return out + [em.ins(Op.NEG, neg, (value,)), em.ins(Op.SELP, dst, (VReg(neg), value), psrcs=(VPred(ps),))]
