"""``setp.<cmp>.f32``, ``min.f32``/``max.f32``, ``neg.f32`` and ``abs.f32`` as integer
instructions on the binary32 patterns, as an NVIDIA GPU answers them.

* ``setp``: a float's *key* is its pattern for a sign bit of 0 and ``0x80000000 - bits``
  (minus its magnitude) for a sign bit of 1, so a signed integer comparison of keys is
  the float comparison, with -0 and +0 the same key 0. A NaN operand (``bits << 1`` above
  ``0xFF000000``, both operands in one ``max``) makes the ordered comparisons false and
  the unordered ones (``equ``, ``neu``, ``ltu``, ...) true; ``num`` and ``nan`` are that
  test alone. 12 instructions (4 machine blocks) per comparison, 5 for ``num``/``nan``.
* ``min``/``max``: PTX's rules: a NaN operand yields the other operand, two NaNs the
  canonical NaN, and -0 is below +0. A NaN operand is first replaced by a pattern that
  loses the comparison and is itself the answer when both are NaN (``0x7FFFFFFF`` for
  ``min``, the largest key; ``0xFFFFFFFF`` for ``max``, the smallest, made canonical at
  the end). For two patterns that differ, ``a < b`` as floats is ``a < b`` as signed
  integers, reversed when both are negative (``(a & b) < 0``): 4 instructions where two
  keys would take 7. ``min`` 11 instructions, ``max`` 13.
* ``neg``/``abs``: flip or clear the sign bit, one instruction, as the GPU's logic unit
  does (PTX leaves the NaN that ``neg``/``abs`` of a NaN returns unspecified).
"""

from __future__ import annotations

from qwengpu_mlx.core.isa import Imm, Op

from qwengpu_mlx.host.float_pack import CANONICAL_NAN, INF, MAGNITUDE, SIGN, FloatEmitter
from qwengpu_mlx.host.ir import VPred, VReg

ORDERED = {"eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge"}
UNORDERED = {"equ": "eq", "neu": "ne", "ltu": "lt", "leu": "le", "gtu": "gt", "geu": "ge"}
COMPARISONS = set(ORDERED) | set(UNORDERED) | {"num", "nan"}


def either_nan(em: FloatEmitter, a, b, out: list) -> str:
    """A predicate: ``a`` or ``b`` is a NaN (its pattern shifted left past ``0xFF000000``)."""
    a2, b2 = em.reg(), em.reg()
    p = em.pred()
    out += [em.ins(Op.SHL, a2, (a, Imm(1))),
            em.ins(Op.SHL, b2, (b, Imm(1))),
            em.ins(Op.MAX, a2, (VReg(a2), VReg(b2))),
            em.ins(Op.SETP, p, (VReg(a2), Imm(0xFF000000)), cmp="gt")]
    return p


def key(em: FloatEmitter, a, out: list) -> VReg:
    """A signed integer ordered as the float is, with -0 and +0 both 0 (NaNs: any key)."""
    neg, k = em.reg(), em.reg()
    p = em.pred()
    out += [em.ins(Op.SUB, neg, (Imm(SIGN), a)),
            em.ins(Op.SETP, p, (a, Imm(0)), cmp="lt", signed=True),
            em.ins(Op.SELP, k, (VReg(neg), a), psrcs=(VPred(p),))]
    return VReg(k)


def setp(em: FloatEmitter, dst: str, cmp: str, a, b) -> list:
    """``dst = a <cmp> b`` for a PTX float comparison name (``lt``, ``ltu``, ``num`` ...)."""
    out: list = []
    nan = either_nan(em, a, b, out)
    if cmp == "nan":
        return out + [em.ins(Op.PMOV, dst, psrcs=(VPred(nan),))]
    if cmp == "num":
        return out + [em.ins(Op.PNOT, dst, psrcs=(VPred(nan),))]
    ka, kb = key(em, a, out), key(em, b, out)
    c = em.pred()
    out.append(em.ins(Op.SETP, c, (ka, kb), cmp=ORDERED.get(cmp) or UNORDERED[cmp], signed=True))
    if cmp in ORDERED:
        return out + [em.ins(Op.PAND, dst, psrcs=(VPred(c), VPred(nan, True)))]
    return out + [em.ins(Op.POR, dst, psrcs=(VPred(c), VPred(nan)))]


def _nan_replaced(em: FloatEmitter, a, stand_in: int, out: list) -> VReg:
    m, r = em.reg(), em.reg()
    p = em.pred()
    out += [em.ins(Op.AND, m, (a, Imm(MAGNITUDE))),
            em.ins(Op.SETP, p, (VReg(m), Imm(INF)), cmp="gt"),
            em.ins(Op.SELP, r, (Imm(stand_in), a), psrcs=(VPred(p),))]
    return VReg(r)


def min_max(em: FloatEmitter, dst: str, a, b, *, is_max: bool) -> list:
    """``dst = min(a, b)`` or ``max(a, b)`` with PTX's NaN and signed-zero rules."""
    out: list = []
    stand_in = 0xFFFFFFFF if is_max else CANONICAL_NAN
    a, b = _nan_replaced(em, a, stand_in, out), _nan_replaced(em, b, stand_in, out)
    both, lt, below = em.reg(), em.pred(), em.pred()
    out += [em.ins(Op.SETP, lt, (a, b), cmp="lt", signed=True),
            em.ins(Op.AND, both, (a, b)),
            em.ins(Op.SETP, below, (VReg(both), Imm(0)), cmp="lt", signed=True),
            em.ins(Op.PXOR, lt, psrcs=(VPred(lt), VPred(below)))]        # a < b as floats
    if not is_max:
        return out + [em.ins(Op.SELP, dst, (a, b), psrcs=(VPred(lt),))]
    two_nans = em.pred()
    return out + [em.ins(Op.SELP, dst, (b, a), psrcs=(VPred(lt),)),
                  em.ins(Op.SETP, two_nans, (VReg(dst), Imm(0xFFFFFFFF)), cmp="eq"),
                  em.ins(Op.MOV, dst, (Imm(CANONICAL_NAN),), guard=VPred(two_nans))]


def neg(em: FloatEmitter, dst: str, a) -> list:
    return [em.ins(Op.XOR, dst, (a, Imm(SIGN)))]


def absolute(em: FloatEmitter, dst: str, a) -> list:
    return [em.ins(Op.AND, dst, (a, Imm(MAGNITUDE)))]
