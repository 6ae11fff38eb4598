"""64-bit integer operations as pairs of 32-bit machine words: the instruction sequences.

A 64-bit value is ``(lo, hi)``; each function here takes the destination's two register
names (``dh`` None where only the low word is wanted) and the operands' halves (a
``VReg`` or an ``Imm`` each), and returns the machine instructions that compute them
exactly, modulo 2^64 as PTX does. A carry or borrow is a predicate from one unsigned
32-bit comparison (``lo < b.lo`` after an add, ``a.lo < b.lo`` before a subtract) and one
guarded ``add``/``sub`` of 1 to the high word. Instruction counts (the figures the
README gives): add/sub 4, and/or/xor/not 2, a shift by a constant 2-4 (by a variable
9-11), a comparison 3 (equality 2), ``mul.lo`` 15-17 (``division.mul_hi`` of the low
words plus two ``mad``), ``mul.wide`` 12-14 unsigned, 15-19 signed (7 where one factor is a
thread index or block size), ``min``/``max`` 5; against 1 each for a 32-bit value.

Every function writes its destination last where an operand may share its name
(``i += n`` reads and writes the same pair).
"""

from __future__ import annotations

from qwengpu_mlx.core.isa import Imm, Op

from qwengpu_mlx.host import division
from qwengpu_mlx.host.ir import VPred, VReg

Half = VReg | Imm


def _same(x: Half, name: str | None) -> bool:
    return isinstance(x, VReg) and x.name == name


def add(em: division.Emitter, dl: str, dh: str | None, a, b) -> list:
    """``d = a + b``: the low words' sum, its carry into the high words' sum."""
    (al, ah), (bl, bh) = a, b
    if dh is None:
        return [em.ins(Op.ADD, dl, (al, bl))]
    if b[0] == Imm(0):
        return [em.ins(Op.MOV, dl, (al,)), em.ins(Op.ADD, dh, (ah, bh))]
    intact = bl if not _same(bl, dl) else al  # an addend the sum did not overwrite
    lo = dl if not _same(intact, dl) else em.reg()
    c = em.reg("%wc")
    out = [em.ins(Op.ADD, lo, (al, bl)),
           em.ins(Op.SETP, c, (VReg(lo), intact), cmp="lt", signed=False),
           em.ins(Op.ADD, dh, (ah, bh)),
           em.ins(Op.ADD, dh, (VReg(dh), Imm(1)), guard=VPred(c))]
    return out + ([em.ins(Op.MOV, dl, (VReg(lo),))] if lo != dl else [])


def sub(em: division.Emitter, dl: str, dh: str | None, a, b) -> list:
    """``d = a - b``: the borrow (``a.lo < b.lo`` unsigned) taken before anything is written."""
    (al, ah), (bl, bh) = a, b
    if dh is None:
        return [em.ins(Op.SUB, dl, (al, bl))]
    c = em.reg("%wc")
    return [em.ins(Op.SETP, c, (al, bl), cmp="lt", signed=False),
            em.ins(Op.SUB, dl, (al, bl)),
            em.ins(Op.SUB, dh, (ah, bh)),
            em.ins(Op.SUB, dh, (VReg(dh), Imm(1)), guard=VPred(c))]


def bitwise(em: division.Emitter, op: Op, dl: str, dh: str | None, a, b=None) -> list:
    """``and``/``or``/``xor`` (and ``not`` with ``b`` None): each word alone."""
    lo = em.ins(op, dl, (a[0],) if b is None else (a[0], b[0]))
    if dh is None:
        return [lo]
    return [lo, em.ins(op, dh, (a[1],) if b is None else (a[1], b[1]))]


def shl(em: division.Emitter, dl: str, dh: str | None, a, k: int) -> list:
    """``d = a << k`` for a constant ``k`` (0..63; PTX clamps larger shifts to 64: zero)."""
    al, ah = a
    if k >= 64:
        return [em.ins(Op.MOV, dl, (Imm(0),))] + ([em.ins(Op.MOV, dh, (Imm(0),))] if dh else [])
    if k == 0:
        return [em.ins(Op.MOV, dl, (al,))] + ([em.ins(Op.MOV, dh, (ah,))] if dh else [])
    if k >= 32:
        hi = [em.ins(Op.SHL, dh, (al, Imm(k - 32)))] if dh else []
        return hi + [em.ins(Op.MOV, dl, (Imm(0),))]
    if dh is None:
        return [em.ins(Op.SHL, dl, (al, Imm(k)))]
    t, u = em.reg(), em.reg()
    return [em.ins(Op.SHL, t, (ah, Imm(k))), em.ins(Op.SHR, u, (al, Imm(32 - k))),
            em.ins(Op.OR, dh, (VReg(t), VReg(u))), em.ins(Op.SHL, dl, (al, Imm(k)))]


def shr(em: division.Emitter, dl: str, dh: str | None, a, k: int, signed: bool) -> list:
    """``d = a >> k`` for a constant ``k`` (arithmetic where ``signed``; 64 and more: the sign or 0)."""
    al, ah = a
    k = min(k, 64)
    fill = [em.ins(Op.SHR, dh, (ah, Imm(31)), signed=True)] if signed else [em.ins(Op.MOV, dh, (Imm(0),))]
    if k == 0:
        return [em.ins(Op.MOV, dl, (al,))] + ([em.ins(Op.MOV, dh, (ah,))] if dh else [])
    if k >= 32:
        lo = em.ins(Op.SHR, dl, (ah, Imm(min(k - 32, 31))), signed=signed) if k < 64 or signed else \
            em.ins(Op.MOV, dl, (Imm(0),))
        return [lo] + (fill if dh else [])
    t, u = em.reg(), em.reg()
    out = [em.ins(Op.SHR, t, (al, Imm(k))), em.ins(Op.SHL, u, (ah, Imm(32 - k))),
           em.ins(Op.OR, dl, (VReg(t), VReg(u)))]
    return out + ([em.ins(Op.SHR, dh, (ah, Imm(k)), signed=signed)] if dh else [])


def mul_lo(em: division.Emitter, dl: str, dh: str | None, a, b) -> list:
    """``d = a * b mod 2^64``: ``hi = mulhi(a.lo, b.lo) + a.lo b.hi + a.hi b.lo``."""
    (al, ah), (bl, bh) = a, b
    if isinstance(al, Imm) and not isinstance(bl, Imm):
        (al, ah), (bl, bh) = (bl, bh), (al, ah)
    if dh is None:
        return [em.ins(Op.MUL, dl, (al, bl))]
    h = em.reg()
    out = division.mul_hi(em, h, al, bl, signed=False)
    for x, y in ((al, bh), (ah, bl)):
        if Imm(0) not in (x, y):
            t = em.reg()
            out.append(em.ins(Op.MAD, t, (x, y, VReg(h))))
            h = t
    return out + [em.ins(Op.MOV, dh, (VReg(h),)), em.ins(Op.MUL, dl, (al, bl))]


def mul_wide(em: division.Emitter, dl: str, dh: str | None, a: Half, b: Half, signed: bool,
             small: bool = False) -> list:
    """``mul.wide.{s32,u32}``: the exact 64-bit product of two 32-bit values; ``small``:
    ``a`` is below 2^16 (a thread index or block size), so the unsigned high word is
    ``(a (b >> 16) + (a (b & 0xffff) >> 16)) >> 16`` (6 instructions, not the routine's 11)."""
    if isinstance(a, Imm) and not isinstance(b, Imm):
        a, b = b, a
    if dh and small and not signed:
        return _small_mul_hi(em, dh, a, b) + [em.ins(Op.MUL, dl, (a, b))]
    hi = division.mul_hi(em, dh, a, b, signed=signed) if dh else []
    return hi + [em.ins(Op.MUL, dl, (a, b))]


def _small_mul_hi(em: division.Emitter, dh: str, a: Half, b: Half) -> list:
    """``(a b) >> 32`` for ``a < 2^16``: ``a (b & 0xffff) < 2^32`` and ``a (b >> 16)`` plus the
    first's top half stays below 2^32, so no partial sum wraps."""
    lo16, hi16, p, q, s = (em.reg() for _ in range(5))
    return [em.ins(Op.AND, lo16, (b, Imm(0xFFFF))), em.ins(Op.SHR, hi16, (b, Imm(16))),
            em.ins(Op.MUL, p, (a, VReg(lo16))), em.ins(Op.SHR, q, (VReg(p), Imm(16))),
            em.ins(Op.MAD, s, (a, VReg(hi16), VReg(q))), em.ins(Op.SHR, dh, (VReg(s), Imm(16)))]


def compare(em: division.Emitter, d: str, cmp: str, signed: bool, a, b, guard=None) -> list:
    """``setp.CMP.{s64,u64}``: decided by the low words (unsigned) where the high words are
    equal, else by the high words (signed as the type says): the low words' comparison
    first, then a comparison of the high words guarded by their inequality overwrites it
    (3 instructions; equality 2: the high words compared only where the low ones are equal).
    A guarded ``setp`` (PTX's own guard) computes aside and is moved under its guard."""
    (al, ah), (bl, bh) = a, b
    if guard is not None:
        t = em.reg("%wq")
        return compare(em, t, cmp, signed, a, b) + [em.ins(Op.PMOV, d, psrcs=(VPred(t),), guard=guard)]
    if cmp in ("eq", "ne"):
        return [em.ins(Op.SETP, d, (al, bl), cmp=cmp),
                em.ins(Op.SETP, d, (ah, bh), cmp=cmp, guard=VPred(d, negated=cmp == "ne"))]
    strict = {"lt": "lt", "le": "lt", "gt": "gt", "ge": "gt"}[cmp]
    e = em.reg("%wq")
    return [em.ins(Op.SETP, e, (ah, bh), cmp="eq"),
            em.ins(Op.SETP, d, (al, bl), cmp=cmp, signed=False),
            em.ins(Op.SETP, d, (ah, bh), cmp=strict, signed=signed, guard=VPred(e, negated=True))]


def select(em: division.Emitter, dl: str, dh: str | None, a, b, p: VPred) -> list:
    """``selp.b64``: each word selected by the same predicate."""
    out = [em.ins(Op.SELP, dl, (a[0], b[0]), psrcs=(p,))]
    return out + ([em.ins(Op.SELP, dh, (a[1], b[1]), psrcs=(p,))] if dh else [])


def min_max(em: division.Emitter, dl: str, dh: str | None, a, b, signed: bool, is_min: bool) -> list:
    """``min``/``max`` ``.s64``/``.u64``: one 64-bit comparison, then both words selected."""
    p = em.reg("%wq")
    return compare(em, p, "lt", signed, a, b) + select(em, dl, dh, a, b, VPred(p, negated=not is_min))


def absolute(em: division.Emitter, dl: str, dh: str | None, a) -> list:
    """``abs.s64``: the negation where the high word is negative (``abs(LLONG_MIN)`` wraps to itself)."""
    nl, nh, p = em.reg(), em.reg(), em.reg("%wq")
    return sub(em, nl, nh, (Imm(0), Imm(0)), a) + [em.ins(Op.SETP, p, (a[1], Imm(0)), cmp="lt", signed=True)] + \
        select(em, dl, dh, (VReg(nl), VReg(nh)), a, VPred(p))


def _clamped(em: division.Emitter, s) -> tuple[list, VReg]:
    """A variable shift amount clamped to 64 (PTX: larger amounts shift by 64), so that
    ``32 - m`` and ``m - 32`` below never wrap into a small amount."""
    m = em.reg()
    return [em.ins(Op.MIN, m, (s, Imm(64)))], VReg(m)


def shl_var(em: division.Emitter, dl: str, dh: str | None, a, s) -> list:
    """``d = a << s`` for a variable ``s``: the machine's shifts give 0 for amounts of 32 and
    more (as PTX's 32-bit ones), so each word's three pieces are ORed without a branch:
    ``hi = ah << m | al >> (32 - m) | al << (m - 32)``, ``lo = al << m`` (9 instructions)."""
    al, ah = a
    out, m = _clamped(em, s)
    if dh is not None:
        t, u, v, w = em.reg(), em.reg(), em.reg(), em.reg()
        out += [em.ins(Op.SHL, t, (ah, m)), em.ins(Op.SUB, u, (Imm(32), m)), em.ins(Op.SHR, u, (al, VReg(u))),
                em.ins(Op.OR, t, (VReg(t), VReg(u))), em.ins(Op.SUB, v, (m, Imm(32))),
                em.ins(Op.SHL, w, (al, VReg(v))), em.ins(Op.OR, dh, (VReg(t), VReg(w)))]
    return out + [em.ins(Op.SHL, dl, (al, m))]


def shr_var(em: division.Emitter, dl: str, dh: str | None, a, s, signed: bool) -> list:
    """``d = a >> s`` for a variable ``s``: below 32 the low word is ``al >> m | ah << (32 - m)``,
    from 32 on ``ah >> (m - 32)`` (arithmetic where ``signed``, whose fill would spoil the OR,
    so a comparison picks one); the high word is ``ah >> m`` (the machine's arithmetic shift
    by 32 or more gives the sign). 11 instructions."""
    al, ah = a
    out, m = _clamped(em, s)
    t, u, v, p = em.reg(), em.reg(), em.reg(), em.reg("%wq")
    hi = [em.ins(Op.SHR, dh, (ah, m), signed=signed)] if dh is not None else []
    out += [em.ins(Op.SHR, t, (al, m)), em.ins(Op.SUB, u, (Imm(32), m)), em.ins(Op.SHL, u, (ah, VReg(u))),
            em.ins(Op.OR, t, (VReg(t), VReg(u))), em.ins(Op.SUB, v, (m, Imm(32))),
            em.ins(Op.SHR, v, (ah, VReg(v)), signed=signed), em.ins(Op.SETP, p, (m, Imm(32)), cmp="lt", signed=False)]
    return out + [em.ins(Op.SELP, dl, (VReg(t), VReg(v)), psrcs=(VPred(p),))] + hi
