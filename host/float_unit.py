"""One shared routine for ``fma`` and division: a division's quotient enters the fma's
64-bit tail, where a kernel fits the ROM only so (the compact sharing level).

Shared, a kernel's fma routine (which also computes its adds, subtracts and multiplies,
``float_routines``) and its division routine each end in a normalise, subnormal shift,
round, pack and return dispatch of their own: some 11 machine blocks of the division's
30 repeat what the fma's tail does. At the compact level the division is a second
entry of the fma routine: its front unpacks the operands and runs the quotient loop
(``float_divide``), then writes the fma's tail inputs (``float_fma.Window``) and jumps
to the shared tail, and its calls return through the fma's one dispatch.

The quotient (26 bits, its leading one at bit 25 or 24) is the window's high word and
the loop's remainder its low word, which the tail's few normalising shifts keep below
the high word and read only as the sticky bit; field ``e + 2`` of the window's bit 62
puts the quotient's bit 25 at field ``e - 3``. The fma's tail then shifts, drops to the
subnormal grid and rounds exactly as the division's own tail does (a left shift that
stops at bit 30 and a right shift that keeps what it drops as sticky land on the same
grid whatever the sentinel stopped), so every result is the division's bit for bit
(``tests/host/test_float_unit.py`` compares the two). The division's special operands
become the window's ``special`` and ``is_special``. Costs: a division's call runs the
fma's tail (5 or 6 normalising steps and a few more than its own tail); the ROM loses
the division's tail and its dispatch, and the fma front its one repeated move
(``float_fma.fma_window(compact=True)``). A softmax's shape (``float_max_sum_norm``: a
maximum, a sum, a division per element) fits so: 132 blocks at the spill level, 128.
"""

from __future__ import annotations

from qwengpu_mlx.core.isa import Imm, Op

from qwengpu_mlx.host.float_addmul import exponent_less_one, leading_one_at_23, significand
from qwengpu_mlx.host.float_fma import Window, fma_window, window_result
from qwengpu_mlx.host.float_pack import CANONICAL_NAN, INF, MAGNITUDE, SIGN, FloatEmitter
from qwengpu_mlx.host.ir import LLabel, LTerm, VPred, VReg

DIVISION = "div"
"""The name of the division's entry (``float_routines`` calls it with ``a``, ``b``)."""

SIGNED_TO_FLOAT, UNSIGNED_TO_FLOAT = "cvt_signed", "cvt_unsigned"
"""The names of the entries that convert an integer (``a``) to the nearest float."""


def entry_of(op: str) -> str | None:
    """The unit's entry that computes ``op`` (an arithmetic opcode or a conversion's kind,
    ``float_routines``), None for the fma's own and for what the unit does not compute."""
    if op in ("div", "rcp"):
        return DIVISION
    if op.startswith("cvt.rn.f32.") and op[-3] in "su" and not op.endswith("64"):
        return SIGNED_TO_FLOAT if op[-3] == "s" else UNSIGNED_TO_FLOAT
    return None


def unit(em: FloatEmitter, dst: str, a, b, c, *, entries: dict[str, str]) -> list:
    """The fma routine's items (its entry is the caller's label) with a front per name in
    ``entries`` (entry name -> label: ``DIVISION``), all ending in one tail."""
    out: list = []
    w = fma_window(em, a, b, c, out, compact=True)
    if entries:
        tail = em.label("unit_tail")
        for name, label in entries.items():
            out += [LTerm("bra", tail, None, em.line), LLabel(label)]
            FRONTS[name](em, a, b, w, out)
        out.append(LLabel(tail))
    return out + window_result(em, dst, w)


def division_window(em: FloatEmitter, a, b, w: Window, out: list) -> None:
    """``a / b``'s quotient bits, exponent, sign and special result into ``w``'s names."""
    X, Y = em.reg(), em.reg()
    xz, yz, xi, yi = (em.pred() for _ in range(4))
    out += [em.ins(Op.XOR, w.sign.name, (a, b)),
            em.ins(Op.AND, X, (a, Imm(MAGNITUDE))),
            em.ins(Op.AND, Y, (b, Imm(MAGNITUDE))),
            em.ins(Op.SETP, xz, (VReg(X), Imm(0)), cmp="eq"),
            em.ins(Op.SETP, yz, (VReg(Y), Imm(0)), cmp="eq")]
    ex = exponent_less_one(em, VReg(X), out)
    ey = exponent_less_one(em, VReg(Y), out)
    mx = significand(em, VReg(X), ex, 0, out)
    my = significand(em, VReg(Y), ey, 0, out)
    leading_one_at_23(em, mx, ex, xz, out)
    out.append(em.ins(Op.MOV, w.hi.name, (Imm(1),)))         # the quotient's sentinel, in a block with room
    leading_one_at_23(em, my, ey, yz, out)
    out += [em.ins(Op.SUB, w.e.name, (ex, ey)),
            em.ins(Op.ADD, w.e.name, (w.e, Imm(130))),      # quotient bit 25 at window bit 57: field e - 3
            em.ins(Op.AND, w.special.name, (w.sign, Imm(SIGN)))]  # 0 / y, x / inf: here, where a block has room
    _quotient(em, mx, my, w, out)
    _division_specials(em, VReg(X), VReg(Y), xz, yz, xi, yi, w, out)


def _quotient(em: FloatEmitter, mx: VReg, my: VReg, w: Window, out: list) -> None:
    """``floor(mx 2^25 / my)`` into ``w.hi`` (already 1, the sentinel), by
    ``float_divide``'s restoring loop, and its remainder into ``w.lo``. The quotient's
    leading one is at bit 25 or 24, and the tail's normalising loop brings it up to bit
    30 (5 or 6 shifts, a step each); the remainder (below ``2 my``, so below 2^25) stays
    below the window's high word through a shift of 6, so the tail reads it only as the
    sticky bit: non-zero exactly when the division is inexact. No shift, sticky bit or
    low word of its own: 4 instructions fewer than ``float_divide``'s."""
    t, nb = em.reg(), em.reg()
    more = em.pred()
    r, q, loop = w.lo.name, w.hi.name, em.label("div")
    out += [em.ins(Op.MOV, r, (mx,)),
            LLabel(loop),
            em.ins(Op.SUB, t, (VReg(r), my)),
            em.ins(Op.SHR, nb, (VReg(t), Imm(31))),                     # 1: my did not fit
            em.ins(Op.MAD, r, (VReg(nb), my, VReg(t))),                 # restored where it did not
            em.ins(Op.MAD, q, (VReg(q), Imm(2), VReg(nb))),
            em.ins(Op.SHL, r, (VReg(r), Imm(1))),
            em.ins(Op.SETP, more, (VReg(q), Imm(1 << 26)), cmp="lt"),
            LTerm("bra", loop, VPred(more), em.line),
            em.ins(Op.SUB, q, (Imm((1 << 27) - 1), VReg(q)))]           # the bits righted, sentinel gone


def _division_specials(em: FloatEmitter, X, Y, xz: str, yz: str, xi: str, yi: str, w: Window, out: list) -> None:
    """PTX ``div.rn.f32``'s special operands: ``0 / y`` and ``x / inf`` a signed zero (``w.special``
    already),
    ``x / 0`` and ``inf / y`` a signed infinity, a NaN operand, ``0 / 0`` and ``inf / inf``
    the canonical NaN; ``is_special`` where an operand is a zero or not finite."""
    big = em.reg()
    edge, nan, same = em.pred(), em.pred(), em.pred()
    v = w.special.name
    out += [em.ins(Op.SETP, xi, (X, Imm(INF)), cmp="ge"),
            em.ins(Op.SETP, yi, (Y, Imm(INF)), cmp="ge"),
            em.ins(Op.POR, edge, psrcs=(VPred(xi), VPred(yz))),
            em.ins(Op.OR, v, (w.special, Imm(INF)), guard=VPred(edge)),  # x / 0, inf / y
            em.ins(Op.MAX, big, (X, Y)),
            em.ins(Op.SETP, nan, (VReg(big), Imm(INF)), cmp="gt"),         # a NaN operand
            em.ins(Op.SETP, same, (X, Y), cmp="eq"),
            em.ins(Op.POR, edge, psrcs=(VPred(xz), VPred(xi))),
            em.ins(Op.PAND, same, psrcs=(VPred(same), VPred(edge))),     # 0 / 0, inf / inf
            em.ins(Op.POR, nan, psrcs=(VPred(nan), VPred(same))),
            em.ins(Op.MOV, v, (Imm(CANONICAL_NAN),), guard=VPred(nan)),
            em.ins(Op.POR, w.is_special, psrcs=(VPred(xz), VPred(yz))),
            em.ins(Op.POR, edge, psrcs=(VPred(xi), VPred(yi))),
            em.ins(Op.POR, w.is_special, psrcs=(VPred(w.is_special), VPred(edge)))]


def integer_window(em: FloatEmitter, a, w: Window, out: list, *, signed: bool) -> None:
    """The integer ``a`` (``signed`` or not) in ``w``'s names: its magnitude across the
    window's words from bit 62 down (field ``e + 2`` = 158, 2^31's), so the tail's
    normalising loop finds its leading one and rounds it to nearest even (``cvt.rn.f32``);
    0 is the tail's exact zero (+0), and no operand is special."""
    t = em.reg() if signed else None
    if signed:
        out.append(em.ins(Op.ABS, t, (a,)))                 # |INT_MIN| is 2^31 as unsigned
    m = VReg(t) if signed else a
    out += [em.ins(Op.SHR, w.hi.name, (m, Imm(1))),
            em.ins(Op.SHL, w.lo.name, (m, Imm(31))),
            em.ins(Op.MOV, w.e.name, (Imm(156),)),
            em.ins(Op.MOV, w.sign.name, (a if signed else Imm(0),)),
            em.ins(Op.MOV, w.special.name, (Imm(0),)),
            em.ins(Op.SETP, w.is_special, (Imm(0), Imm(0)), cmp="ne")]


FRONTS = {DIVISION: lambda em, a, b, w, out: division_window(em, a, b, w, out),
          SIGNED_TO_FLOAT: lambda em, a, b, w, out: integer_window(em, a, w, out, signed=True),
          UNSIGNED_TO_FLOAT: lambda em, a, b, w, out: integer_window(em, a, w, out, signed=False)}
"""Each entry's front, ``front(em, a, b, w, out)``: its result's window into ``w``'s names."""
