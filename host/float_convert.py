"""``cvt`` with a ``.f32`` side -> straight-line routines of the machine's integer instructions.

A float is its binary32 bit pattern in a register; each conversion takes it apart with
shifts and masks, rounds as the instruction's mode says and puts it together again, so
the model computes every result. No routine branches: every lane runs the same
instructions, and the special cases (NaN, saturation, zero) are guarded moves.

* **float -> integer** (``cvt.rni/rzi/rmi/rpi.{s32,u32,s16,u16,s8,u8}.f32``: ``(int)f``,
  ``__float2int_rn``, ``__float2uint_rz`` ...): the significand ``m`` with its implicit
  bit (a subnormal's ``e - 1`` is taken as 0, so one multiply-add strips the exponent
  for both) shifted right by ``R = 149 - (e - 1)``, at most 25 (a smaller float has
  integer part 0 and a fraction below one half either way), or left by ``L`` (floats of
  2^24 and more are integers); the fraction ``f`` is the bits shifted out. The mode adds
  one to the integer part: ``rni`` where ``f + min(lsb, f) > half`` (past the half, or
  at it with an odd integer part: ties to even), ``rmi``/``rpi`` where ``f != 0`` and the
  float is negative/positive, ``rzi`` never; the sign is applied as ``(q ^ s) - s``.
  PTX saturates: NaN gives 0, a magnitude past the range its nearest end (``s32``:
  ``|x| >= 2^31``; ``u32``: ``x >= 2^32``; every negative float rounds to at most 0, so
  gives 0 as an unsigned), and a narrow type clamps to its own range after.
  ``s32``: 29 instructions (``rni``) or 22 (``rzi``).
* **integer -> float** (``cvt.rn/rz/rm/rp.f32.{s32,u32,...}``: ``(float)i``,
  ``__int2float_rn``, ``__uint2float_rz`` ...): the magnitude (``abs``) shifted until its
  leading one is bit 31 by a binary search (16, 8, 4, 2, 1: no loop), its top 24 bits
  the significand and the low 8 the rounding bits, packed as
  ``(157 - shift) * 2^23 + significand``: the implicit bit carries into the exponent,
  and so does a rounding carry (2^24 - 1 rounds up to 2^24). 0 gives +0. ``s32``: 28.
* **round to an integral float** (``cvt.rni/rzi/rmi/rpi.f32.f32``: ``rintf``,
  ``truncf``, ``floorf``, ``ceilf``): the bits below the binary point cleared from the
  pattern itself (``mag & -(1 << R)``, ``R = 150 - e`` within 0..23), then one unit
  ``1 << R`` added where the mode rounds away from zero (a carry lands in the exponent:
  1.5 -> 2.0). Below 1.0 the result is 0 or 1.0, the sign kept (floor(-0.5) = -1.0,
  rint(-0.4) = -0.0); 2^23 and more, and the infinities, are already integral. A NaN
  gives the canonical NaN ``0x7FFFFFFF``, as the GPU's float instructions write it.
  14 (``rzi``) to 25 (``rni``) instructions.
"""

from __future__ import annotations

from qwengpu_mlx.core.isa import Imm, Op

from qwengpu_mlx.host import narrow
from qwengpu_mlx.host.division import Emitter
from qwengpu_mlx.host.ir import LInstr, VPred, VReg
from qwengpu_mlx.host.ptx_ast import RegRef
from qwengpu_mlx.host.translate_types import unsupported

M32 = 0xFFFFFFFF
SIGN = 0x80000000
MAGNITUDE = 0x7FFFFFFF
INF = 0x7F800000
ONE = 0x3F800000
HALF = 0x3F000000
CANONICAL_NAN = 0x7FFFFFFF

INTEGER_MODES = ("rni", "rzi", "rmi", "rpi")
"""To an integer or an integral float: nearest even, toward zero, down, up."""
FLOAT_MODES = ("rn", "rz", "rm", "rp")
"""Integer -> float: the same four, rounding to a float's 24 significant bits."""
INT_RANGES = {"s32": (-(1 << 31), (1 << 31) - 1), "u32": (0, M32), "s16": (-(1 << 15), (1 << 15) - 1),
              "u16": (0, 0xFFFF), "s8": (-128, 127), "u8": (0, 255)}
"""The integer types a float converts to and from, and the range PTX saturates to."""


class ConvertEmitter(Emitter):
    """``division.Emitter`` with the conversions' own register and predicate names."""

    def reg(self, prefix: str = "%cv") -> str:
        return self.fresh(prefix)

    def pred(self) -> str:
        return self.fresh("%cp")


def _regs(em, n: int) -> list[str]:
    return [em.reg() for _ in range(n)]


# --------------------------------------------------------------------------- float -> integer


def float_to_int(em: ConvertEmitter, dst: str, x, mode: str, to: str) -> list:
    """``dst`` = the float ``x`` rounded by ``mode`` to the integer type ``to``, saturated."""
    out: list = []
    mag, q = _rounded_magnitude(em, x, mode, out)
    if to[0] == "s":
        s, sat = _regs(em, 2)
        big, nan = em.pred(), em.pred()
        out += [em.ins(Op.SHR, s, (x, Imm(31)), signed=True),      # -1 where negative, else 0
                em.ins(Op.XOR, dst, (q, VReg(s))),
                em.ins(Op.SUB, dst, (VReg(dst), VReg(s))),
                em.ins(Op.SUB, sat, (Imm(MAGNITUDE), VReg(s))),     # INT_MAX, or INT_MIN where negative
                em.ins(Op.SETP, big, (mag, Imm(0x4F000000)), cmp="ge", signed=False),  # |x| >= 2^31
                em.ins(Op.MOV, dst, (VReg(sat),), guard=VPred(big)),
                em.ins(Op.SETP, nan, (mag, Imm(INF)), cmp="gt", signed=False),
                em.ins(Op.MOV, dst, (Imm(0),), guard=VPred(nan))]
    else:
        big, zero = em.pred(), em.pred()
        out += [em.ins(Op.SETP, big, (mag, Imm(0x4F800000)), cmp="ge", signed=False),  # x >= 2^32
                em.ins(Op.SELP, dst, (Imm(M32), q), psrcs=(VPred(big),)),
                em.ins(Op.SETP, zero, (x, Imm(INF)), cmp="gt", signed=False),  # NaN, or any negative
                em.ins(Op.MOV, dst, (Imm(0),), guard=VPred(zero))]
    lo, hi = INT_RANGES[to]
    if to in ("s32", "u32"):
        return out
    if to[0] == "s":
        return out + [em.ins(Op.MIN, dst, (VReg(dst), Imm(hi)), signed=True),
                      em.ins(Op.MAX, dst, (VReg(dst), Imm(lo & M32)), signed=True)]
    return out + [em.ins(Op.MIN, dst, (VReg(dst), Imm(hi)), signed=False)]


def _rounded_magnitude(em, x, mode: str, out: list) -> tuple[VReg, VReg]:
    """``(|x|'s pattern, |x| rounded by mode to an integer)``, the latter modulo 2^32 (the
    caller saturates where it does not fit)."""
    mag, e1, m, r, R, L, q, back, frac = _regs(em, 9)
    out += [em.ins(Op.AND, mag, (x, Imm(MAGNITUDE))),
            em.ins(Op.SHR, e1, (VReg(mag), Imm(23))),
            em.ins(Op.SUB, e1, (VReg(e1), Imm(1))),
            em.ins(Op.MAX, e1, (VReg(e1), Imm(0)), signed=True),                 # e - 1, a subnormal's 0
            em.ins(Op.MAD, m, (VReg(e1), Imm((-1 << 23) & M32), VReg(mag))),    # significand, implicit bit in
            em.ins(Op.SUB, r, (Imm(149), VReg(e1))),                             # value = m * 2^-r
            em.ins(Op.MAX, R, (VReg(r), Imm(0)), signed=True),
            em.ins(Op.MIN, R, (VReg(R), Imm(25)), signed=True),
            em.ins(Op.SUB, L, (VReg(e1), Imm(149))),
            em.ins(Op.MAX, L, (VReg(L), Imm(0)), signed=True),
            em.ins(Op.SHR, q, (VReg(m), VReg(R))),
            em.ins(Op.SHL, back, (VReg(q), VReg(R))),
            em.ins(Op.SUB, frac, (VReg(m), VReg(back)))]
    up = _rounds_up(em, mode, x, VReg(q), VReg(frac), VReg(R), out)
    if up is not None:
        out.append(em.ins(Op.ADD, q, (VReg(q), Imm(1)), guard=VPred(up)))
    out.append(em.ins(Op.SHL, q, (VReg(q), VReg(L))))
    return VReg(mag), VReg(q)


def _rounds_up(em, mode: str, x, q: VReg, frac: VReg, R: VReg, out: list) -> str | None:
    """The predicate of the lanes whose magnitude ``mode`` rounds away from zero (None: never)."""
    p = em.pred()
    if mode == "rzi":
        return None
    if mode == "rni":
        unit, half, lsb, t = _regs(em, 4)
        out += [em.ins(Op.SHL, unit, (Imm(1), R)),
                em.ins(Op.SHR, half, (VReg(unit), Imm(1))),
                em.ins(Op.AND, lsb, (q, Imm(1))),
                em.ins(Op.MIN, lsb, (VReg(lsb), frac), signed=False),  # an exact integer never rounds
                em.ins(Op.ADD, t, (frac, VReg(lsb))),
                em.ins(Op.SETP, p, (VReg(t), VReg(half)), cmp="gt", signed=False)]
        return p
    return _inexact_toward(em, p, frac, x, negative=mode == "rmi", out=out)


def _inexact_toward(em, p: str, rest: VReg, x, *, negative: bool, out: list) -> str:
    """``p``: the bits dropped are not all zero and ``x`` has the sign the mode rounds away at."""
    side = em.pred()
    out += [em.ins(Op.SETP, p, (rest, Imm(0)), cmp="ne"),
            em.ins(Op.SETP, side, (x, Imm(0)), cmp="lt" if negative else "ge", signed=True),
            em.ins(Op.PAND, p, psrcs=(VPred(p), VPred(side)))]
    return p


# --------------------------------------------------------------------------- integer -> float


def int_to_float(em: ConvertEmitter, dst: str, x, mode: str, signed: bool) -> list:
    """``dst`` = the integer ``x`` (32 bits, ``signed`` or not) rounded by ``mode`` to a float."""
    out: list = []
    a = x
    if signed:
        a, sign = VReg(em.reg()), em.reg()
        out += [em.ins(Op.ABS, a.name, (x,)), em.ins(Op.AND, sign, (x, Imm(SIGN)))]
    t, n = leading_one_at_31(em, a, out)
    mnt, rest, base = _regs(em, 3)
    out += [em.ins(Op.SHR, mnt, (t, Imm(8))),
            em.ins(Op.AND, rest, (t, Imm(0xFF))),
            em.ins(Op.ADD, base, (VReg(mnt), Imm(157 << 23))),
            em.ins(Op.MAD, dst, (n, Imm((-1 << 23) & M32), VReg(base)))]  # (157 - n) 2^23 + significand
    up = _int_rounds_up(em, mode, x, VReg(mnt), VReg(rest), signed, out)
    if up is not None:
        out.append(em.ins(Op.ADD, dst, (VReg(dst), Imm(1)), guard=VPred(up)))
    zero = em.pred()
    out += [em.ins(Op.SETP, zero, (a, Imm(0)), cmp="eq"),
            em.ins(Op.MOV, dst, (Imm(0),), guard=VPred(zero))]
    if signed:
        out.append(em.ins(Op.OR, dst, (VReg(dst), VReg(sign))))
    return out


def leading_one_at_31(em, a, out: list) -> tuple[VReg, VReg]:
    """``(a << n, n)`` with ``n`` the leading zeros of ``a`` (31 for 0): five halving steps."""
    t, n = _regs(em, 2)
    p = em.pred()
    out += [em.ins(Op.SETP, p, (a, Imm(1 << 16)), cmp="lt", signed=False),
            em.ins(Op.SELP, n, (Imm(16), Imm(0)), psrcs=(VPred(p),)),
            em.ins(Op.SHL, t, (a, VReg(n)))]
    for k in (8, 4, 2, 1):
        p = em.pred()
        out += [em.ins(Op.SETP, p, (VReg(t), Imm(1 << (32 - k))), cmp="lt", signed=False),
                em.ins(Op.SHL, t, (VReg(t), Imm(k)), guard=VPred(p)),
                em.ins(Op.ADD, n, (VReg(n), Imm(k)), guard=VPred(p))]
    return VReg(t), VReg(n)


def _int_rounds_up(em, mode: str, x, mnt: VReg, rest: VReg, signed: bool, out: list) -> str | None:
    """The predicate of the lanes whose 24-bit significand ``mode`` rounds up (None: never)."""
    if mode == "rz" or (mode == "rm" and not signed):
        return None
    p = em.pred()
    if mode == "rn":
        lsb = em.reg()
        out += [em.ins(Op.AND, lsb, (mnt, Imm(1))),
                em.ins(Op.ADD, lsb, (rest, VReg(lsb))),
                em.ins(Op.SETP, p, (VReg(lsb), Imm(0x80)), cmp="gt", signed=False)]
        return p
    if not signed:  # rp of an unsigned: up wherever a bit was dropped
        out.append(em.ins(Op.SETP, p, (rest, Imm(0)), cmp="ne"))
        return p
    return _inexact_toward(em, p, rest, x, negative=mode == "rm", out=out)


# --------------------------------------------------------------------------- float -> integral float


def round_integral(em: ConvertEmitter, dst: str, x, mode: str) -> list:
    """``dst`` = the float ``x`` rounded by ``mode`` to an integral float (floorf, ceilf ...)."""
    sign, mag, R, unit, trunc, frac = _regs(em, 6)
    small, nan = em.pred(), em.pred()
    out = [em.ins(Op.AND, sign, (x, Imm(SIGN))),
           em.ins(Op.AND, mag, (x, Imm(MAGNITUDE))),
           em.ins(Op.SHR, R, (VReg(mag), Imm(23))),
           em.ins(Op.SUB, R, (Imm(150), VReg(R))),                 # fraction bits in the pattern
           em.ins(Op.MAX, R, (VReg(R), Imm(0)), signed=True),
           em.ins(Op.MIN, R, (VReg(R), Imm(23)), signed=True),
           em.ins(Op.SHL, unit, (Imm(1), VReg(R))),
           em.ins(Op.NEG, trunc, (VReg(unit),)),
           em.ins(Op.AND, trunc, (VReg(mag), VReg(trunc))),
           em.ins(Op.SETP, small, (VReg(mag), Imm(ONE)), cmp="lt", signed=False),
           em.ins(Op.MOV, trunc, (Imm(0),), guard=VPred(small))]
    if mode != "rzi":
        out += [em.ins(Op.MOV, unit, (Imm(ONE),), guard=VPred(small)),
                em.ins(Op.SUB, frac, (VReg(mag), VReg(trunc)))]
        up = _integral_rounds_up(em, mode, x, VReg(mag), VReg(R), VReg(unit), VReg(frac), small, out)
        out.append(em.ins(Op.ADD, trunc, (VReg(trunc), VReg(unit)), guard=VPred(up)))
    out += [em.ins(Op.OR, dst, (VReg(trunc), VReg(sign))),
            em.ins(Op.SETP, nan, (VReg(mag), Imm(INF)), cmp="gt", signed=False),
            em.ins(Op.MOV, dst, (Imm(CANONICAL_NAN),), guard=VPred(nan))]
    return out


def _integral_rounds_up(em, mode: str, x, mag: VReg, R: VReg, unit: VReg, frac: VReg, small: str,
                        out: list) -> str:
    """The lanes ``mode`` rounds away from zero; below 1.0 the integer part is 0 (even) and
    the half is 0.5's pattern."""
    p = em.pred()
    if mode != "rni":
        return _inexact_toward(em, p, frac, x, negative=mode == "rmi", out=out)
    half, lsb = _regs(em, 2)
    out += [em.ins(Op.SHR, half, (unit, Imm(1))),
            em.ins(Op.MOV, half, (Imm(HALF),), guard=VPred(small)),
            em.ins(Op.SHR, lsb, (mag, R)),
            em.ins(Op.AND, lsb, (VReg(lsb), Imm(1))),
            em.ins(Op.MOV, lsb, (Imm(0),), guard=VPred(small)),
            em.ins(Op.MIN, lsb, (VReg(lsb), frac), signed=False),
            em.ins(Op.ADD, lsb, (frac, VReg(lsb))),
            em.ins(Op.SETP, p, (VReg(lsb), VReg(half)), cmp="gt", signed=False)]
    return p


# --------------------------------------------------------------------------- the instruction


def op_cvt_float(tr, ins) -> list:
    """A conversion to, from or within ``.f32``: the routine its types and mode name."""
    name = f"`cvt{''.join('.' + m for m in ins.mods)}`"
    types = [m for m in ins.mods if m in INT_RANGES or m == "f32" or m[1:] == "64"]
    modes = [m for m in ins.mods if m in INTEGER_MODES + FLOAT_MODES]
    other = [m for m in ins.mods if m not in types + modes]
    if other:
        raise unsupported(ins, f"{name}: the modifier .{other[0]} is not supported (no fast-math flush to "
                               f"zero, no saturation to [0, 1]); compile without fast-math")
    if len(types) != 2 or len(modes) != 1:
        raise unsupported(ins, f"{name}: conversion not supported")
    to, frm = types
    mode = modes[0]
    wide = [t for t in types if t[1:] == "64"]
    if wide:
        raise unsupported(ins, f"{name}: a float converted to a 64-bit integer is not supported (the machine "
                               f"computes in 32 bits); convert to int or unsigned ((int)x, __float2int_rn)")
    kind = f"cvt.{mode}.{to}.{frm}"  # one shared routine per conversion (float_routines)
    if to == "f32" and frm == "f32" and mode in INTEGER_MODES:
        return _emit(tr, ins, ins.operands[1], 32, False, lambda em, d, x: round_integral(em, d, x, mode), kind)
    if frm == "f32" and to != "f32" and mode in INTEGER_MODES:
        return _emit(tr, ins, ins.operands[1], 32, False, lambda em, d, x: float_to_int(em, d, x, mode, to), kind)
    if to == "f32" and frm != "f32" and mode in FLOAT_MODES:
        bits = narrow.type_bits(frm)
        return _emit(tr, ins, ins.operands[1], bits, frm[0] == "s",
                     lambda em, d, x: int_to_float(em, d, x, mode, frm[0] == "s"), kind)
    raise unsupported(ins, f"{name}: conversion not supported (a float rounds to an integer with .rni, .rzi, "
                           f".rmi or .rpi, an integer to a float with .rn, .rz, .rm or .rp)")


def _emit(tr, ins, opnd, bits: int, signed: bool, routine, kind: str) -> list:
    """The source (a narrow integer extended first), the routine, and its result written to
    the destination under the instruction's guard; a destination that is also the source
    gets a fresh register, since the routine reads its source after it first writes. The
    routine is inlined, or called as the kernel's one copy of ``kind`` (``float_routines``)."""
    d = tr.dst(ins, ins.operands[0])
    pre: list = []
    x = narrow.extended(tr, ins, opnd, bits, signed, pre)
    guard = tr.guard_of(ins)

    def inline() -> list:
        aliased = isinstance(opnd, RegRef) and opnd.name == d
        target = d if guard is None and not aliased else tr.fresh("%cr")
        items = routine(ConvertEmitter(ins.line, ins.src, ins.text, tr.fresh), target, x)
        if target != d:
            items.append(LInstr(Op.MOV, d, (VReg(target),), guard=guard, line=ins.line, src=ins.src, text=ins.text))
        return items

    em = ConvertEmitter(ins.line, ins.src, ins.text, tr.fresh)
    return pre + tr.float_calls.emit(kind, [x], d, guard, em, inline, body=routine)
