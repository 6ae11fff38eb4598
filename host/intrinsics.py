"""PTX's bit instructions (``popc``, ``clz``, ``bfind``, ``brev``, ``prmt``, ``bfe``, ``sad``)
as straight-line routines of the machine's own instructions.

The machine has no population count, leading-zero count or bit reversal; clang writes
them for ``__popc``, ``__clz``, ``__brev``, ``__ffs`` (``host/prelude_integer.h``) and
nvcc's PTX has them too. Each becomes a fixed sequence the model runs step by step
(the same length for every value, so no lane waits on another):

* ``popc``: the SWAR count (pairs, nibbles, bytes, then one multiply sums the bytes),
  12 instructions;
* ``clz``: a binary search of five guarded steps (is the top half zero? shift it out),
  16 instructions; ``bfind`` is ``31 - clz``;
* ``brev``: swap bits, pairs, nibbles, bytes and halves, 23 instructions;
* ``prmt`` with a constant selector: each result byte taken from its source byte by
  shift and mask, bytes moved by the same distance sharing one shift;
* ``bfe`` with constant position and length: a shift and a mask (or a sign extension);
* ``sad``: ``c + (max(a, b) - min(a, b))``, 4 instructions.
"""

from __future__ import annotations

from qwengpu_mlx.core.isa import Imm, Op

from qwengpu_mlx.host import narrow
from qwengpu_mlx.host.ir import LInstr, VPred, VReg
from qwengpu_mlx.host.ptx_ast import ImmRef, PtxInstr, RegRef
from qwengpu_mlx.host.translate_types import INT_TYPES64, unsupported

M32 = 0xFFFFFFFF


class Routine:
    """Builds one instruction's routine: fresh temporaries, the PTX origin on every item."""

    def __init__(self, tr, ins: PtxInstr):
        self.tr, self.ins, self.items = tr, ins, []

    def reg(self) -> str:
        return self.tr.fresh()

    def pred(self) -> str:
        return self.tr.fresh("%ip")

    def emit(self, op: Op, dst, srcs=(), **kw) -> VReg | None:
        ins = self.ins
        self.items.append(LInstr(op, dst, tuple(srcs), line=ins.line, src=ins.src, text=ins.text, **kw))
        return VReg(dst) if isinstance(dst, str) and op is not Op.SETP else None

    def op(self, op: Op, *srcs, **kw) -> VReg:
        return self.emit(op, self.reg(), srcs, **kw)


def _check32(tr, ins, what: str) -> str:
    t = tr.typ(ins)
    if t in INT_TYPES64:
        raise unsupported(ins, f"64-bit {what} (`{ins.opcode}.{t}`) is not supported: the machine computes in "
                               f"32 bits (use the 32-bit intrinsic on int or unsigned)")
    return t


def _final(rt: Routine, dst: str, value) -> list:
    """The routine's result into ``dst``: its last instruction writes ``dst`` itself where
    nothing else writes that temporary and no guard applies, else one move (guarded)."""
    guard = rt.tr.guard_of(rt.ins)
    last = rt.items[-1] if rt.items else None
    if guard is None and isinstance(value, VReg) and isinstance(last, LInstr) and last.dst == value.name \
            and last.guard is None and sum(isinstance(x, LInstr) and x.dst == value.name for x in rt.items) == 1:
        last.dst = dst
        return rt.items
    rt.emit(Op.MOV, dst, (value,), guard=guard)
    return rt.items


def popc(rt: Routine, x) -> VReg:
    """Population count of a 32-bit value (SWAR)."""
    t = rt.op(Op.AND, rt.op(Op.SHR, x, Imm(1)), Imm(0x55555555))
    x1 = rt.op(Op.SUB, x, t)                                             # 2-bit counts
    x2 = rt.op(Op.ADD, rt.op(Op.AND, x1, Imm(0x33333333)),
               rt.op(Op.AND, rt.op(Op.SHR, x1, Imm(2)), Imm(0x33333333)))  # 4-bit counts
    x3 = rt.op(Op.AND, rt.op(Op.ADD, x2, rt.op(Op.SHR, x2, Imm(4))), Imm(0x0F0F0F0F))  # byte counts
    return rt.op(Op.SHR, rt.op(Op.MUL, x3, Imm(0x01010101)), Imm(24))   # their sum, in the top byte


def clz(rt: Routine, x) -> VReg:
    """Leading zeros of a 32-bit value, 32 for zero: five halving steps, then the zero case."""
    p = rt.pred()
    rt.emit(Op.SETP, p, (x, Imm(1 << 16)), cmp="lt")
    n = rt.op(Op.SELP, Imm(16), Imm(0), psrcs=(VPred(p),))
    y = rt.op(Op.SHL, x, n)
    for k in (8, 4, 2):
        q = rt.pred()
        rt.emit(Op.SETP, q, (y, Imm(1 << (32 - k))), cmp="lt")
        rt.emit(Op.ADD, n.name, (n, Imm(k)), guard=VPred(q))
        rt.emit(Op.SHL, y.name, (y, Imm(k)), guard=VPred(q))
    for threshold in (1 << 31, 1):  # the top bit still clear: one more; y == 0 (x == 0): 32
        q = rt.pred()
        rt.emit(Op.SETP, q, (y, Imm(threshold)), cmp="lt")
        rt.emit(Op.ADD, n.name, (n, Imm(1)), guard=VPred(q))
    return n


def brev(rt: Routine, x) -> VReg:
    """The 32 bits of ``x`` in reverse order: swap neighbours at distances 1, 2, 4, 8, 16."""
    for k, mask in ((1, 0x55555555), (2, 0x33333333), (4, 0x0F0F0F0F), (8, 0x00FF00FF)):
        hi = rt.op(Op.AND, rt.op(Op.SHR, x, Imm(k)), Imm(mask))
        lo = rt.op(Op.SHL, rt.op(Op.AND, x, Imm(mask)), Imm(k))
        x = rt.op(Op.OR, hi, lo)
    return rt.op(Op.OR, rt.op(Op.SHR, x, Imm(16)), rt.op(Op.SHL, x, Imm(16)))


def op_popc(tr, ins):
    _check32(tr, ins, "population count")
    rt = Routine(tr, ins)
    x = tr.value(ins, ins.operands[1], rt.items)
    return _final(rt, tr.dst(ins, ins.operands[0]), popc(rt, x))


def op_clz(tr, ins):
    _check32(tr, ins, "leading-zero count")
    rt = Routine(tr, ins)
    x = tr.value(ins, ins.operands[1], rt.items)
    return _final(rt, tr.dst(ins, ins.operands[0]), clz(rt, x))


def op_brev(tr, ins):
    _check32(tr, ins, "bit reversal")
    rt = Routine(tr, ins)
    x = tr.value(ins, ins.operands[1], rt.items)
    return _final(rt, tr.dst(ins, ins.operands[0]), brev(rt, x))


def op_bfind(tr, ins):
    """``bfind``: the position of the most significant non-sign bit (``0xffffffff`` for
    none); ``.shiftamt`` gives ``31 -`` that position, i.e. the leading-zero count."""
    t = _check32(tr, ins, "bit find")
    rt = Routine(tr, ins)
    x = tr.value(ins, ins.operands[1], rt.items)
    if t == "s32":  # a negative value's highest 0 bit: the highest 1 bit of ~x
        x = rt.op(Op.XOR, x, rt.op(Op.SHR, x, Imm(31), signed=True))
    n = clz(rt, x)
    if "shiftamt" not in ins.mods:
        return _final(rt, tr.dst(ins, ins.operands[0]), rt.op(Op.SUB, Imm(31), n))
    p = rt.pred()
    rt.emit(Op.SETP, p, (n, Imm(32)), cmp="eq")
    rt.emit(Op.MOV, n.name, (Imm(M32),), guard=VPred(p))
    return _final(rt, tr.dst(ins, ins.operands[0]), n)


def constant_operand(tr, opnd) -> int | None:
    """``opnd``'s value when the kernel fixes it: an immediate, or a register whose one
    definition is an unguarded ``mov`` of an immediate (how clang passes a selector)."""
    if isinstance(opnd, ImmRef):
        return opnd.value & M32
    if not isinstance(opnd, RegRef):
        return None
    consts = getattr(tr, "register_constants", None)
    if consts is None:
        consts = tr.register_constants = _register_constants(tr.kernel)
    return consts.get(opnd.name)


def _register_constants(kernel) -> dict[str, int]:
    defs: dict[str, list] = {}
    for ins in kernel.body:
        if isinstance(ins, PtxInstr) and ins.operands and isinstance(ins.operands[0], RegRef) \
                and ins.opcode not in ("st", "red"):
            defs.setdefault(ins.operands[0].name, []).append(ins)
    out = {}
    for name, ds in defs.items():
        if len(ds) == 1 and ds[0].opcode == "mov" and ds[0].guard is None and len(ds[0].operands) == 2 \
                and isinstance(ds[0].operands[1], ImmRef):
            out[name] = ds[0].operands[1].value & M32
    return out


def op_prmt(tr, ins):
    """``prmt.b32 d, a, b, c`` (``__byte_perm``): result byte i is byte ``c[4i+2:4i]`` of
    ``{b, a}``, or that byte's sign replicated where ``c[4i+3]`` is set."""
    modes = [m for m in ins.mods if m in ("f4e", "b4e", "rc8", "ecl", "ecr", "rc16")]
    if modes:
        raise unsupported(ins, f"prmt mode .{modes[0]} is not supported; use the default mode "
                               f"(`__byte_perm(x, y, s)`)")
    sel = constant_operand(tr, ins.operands[3])
    if sel is None:
        raise unsupported(ins, "a byte permutation with a selector computed at run time is not supported: "
                               "give `__byte_perm` a constant selector (e.g. 0x0123)")
    rt = Routine(tr, ins)
    srcs = [tr.value(ins, o, rt.items) for o in ins.operands[1:3]]
    groups: dict[tuple[int, int], int] = {}  # (source word, bit shift) -> mask of the result bytes
    signed_bytes = []
    for i in range(4):
        nib = (sel >> (4 * i)) & 0xF
        src, byte = (nib & 7) >> 2, nib & 3
        if nib & 8:
            signed_bytes.append((i, src, byte))
            continue
        key = (src, 8 * (i - byte))
        groups[key] = groups.get(key, 0) | (0xFF << (8 * i))
    terms = [_moved_bytes(rt, srcs[src], shift, mask) for (src, shift), mask in groups.items()]
    terms += [_sign_byte(rt, srcs[src], byte, i) for i, src, byte in signed_bytes]
    value = terms[0]
    for t in terms[1:]:
        value = rt.op(Op.OR, value, t)
    return _final(rt, tr.dst(ins, ins.operands[0]), value)


def _moved_bytes(rt: Routine, x, shift: int, mask: int):
    """``(x << shift) & mask`` (a negative shift moves right); the ``and`` is left out where
    the shift already cleared every bit outside the mask."""
    if shift > 0:
        x, kept = rt.op(Op.SHL, x, Imm(shift)), (M32 << shift) & M32
    elif shift < 0:
        x, kept = rt.op(Op.SHR, x, Imm(-shift)), M32 >> -shift
    else:
        kept = M32
    return x if kept & ~mask == 0 else rt.op(Op.AND, x, Imm(mask))


def _sign_byte(rt: Routine, x, byte: int, i: int):
    """Byte ``i`` of the result all ones or all zeros: the sign bit of ``x``'s byte ``byte``."""
    top = rt.op(Op.SHL, x, Imm(31 - (8 * byte + 7))) if byte != 3 else x
    fill = rt.op(Op.SHR, top, Imm(31), signed=True)
    return rt.op(Op.AND, fill, Imm(0xFF << (8 * i)))


def op_bfe(tr, ins):
    """``bfe.{u32,s32} d, a, pos, len`` with constant position and length (what clang writes
    for ``(x >> k) & mask``): PTX's definition, where bits past bit 31 read as the sign
    (``.s32``) or as zero (``.u32``)."""
    t = _check32(tr, ins, "bit field extract")
    pos, length = (constant_operand(tr, o) for o in ins.operands[2:4])
    if pos is None or length is None:
        raise unsupported(ins, "a bit field extract with a run-time position or length is not supported; "
                               "write it as a shift and a mask")
    pos, length = pos & 0xFF, length & 0xFF
    rt = Routine(tr, ins)
    a = tr.value(ins, ins.operands[1], rt.items)
    d = tr.dst(ins, ins.operands[0])
    signed = t == "s32"
    if length == 0 or (pos > 31 and not signed):
        return _final(rt, d, Imm(0))
    if pos > 31:
        return _final(rt, d, rt.op(Op.SHR, a, Imm(31), signed=True))
    width = min(length, 32 - pos)
    if signed:
        top = rt.op(Op.SHL, a, Imm(32 - pos - width)) if pos + width < 32 else a
        return _final(rt, d, rt.op(Op.SHR, top, Imm(32 - width), signed=True) if width < 32 else top)
    x = rt.op(Op.SHR, a, Imm(pos)) if pos else a
    return _final(rt, d, rt.op(Op.AND, x, Imm((1 << width) - 1)) if pos + width < 32 else x)


def op_sad(tr, ins):
    """``sad.{s,u}{16,32} d, a, b, c``: ``c + |a - b|``, the difference taken exactly as
    ``max - min`` (16-bit operands extended by the type first)."""
    t = _check32(tr, ins, "sum of absolute differences")
    signed = t[0] == "s"
    rt = Routine(tr, ins)
    bits = 16 if t[1:] == "16" else 32
    a, b = (narrow.extended(tr, ins, o, bits, signed, rt.items) for o in ins.operands[1:3])
    c = tr.value(ins, ins.operands[3], rt.items)
    diff = rt.op(Op.SUB, rt.op(Op.MAX, a, b, signed=signed), rt.op(Op.MIN, a, b, signed=signed))
    return _final(rt, tr.dst(ins, ins.operands[0]), rt.op(Op.ADD, diff, c))


def op_bfi(tr, ins):
    """``bfi.b32 d, a, b, pos, len`` (nvcc's bit-field insert) with constant position and
    length: ``b`` with bits ``pos .. pos+len-1`` replaced by ``a``'s low bits (none past bit 31)."""
    _check32(tr, ins, "bit field insert")
    pos, length = (constant_operand(tr, o) for o in ins.operands[3:5])
    if pos is None or length is None:
        raise unsupported(ins, "a bit field insert with a run-time position or length is not supported; "
                               "write it with shifts and masks")
    pos, length = pos & 0xFF, length & 0xFF
    rt = Routine(tr, ins)
    a, b = (tr.value(ins, o, rt.items) for o in ins.operands[1:3])
    d = tr.dst(ins, ins.operands[0])
    if length == 0 or pos > 31:
        return _final(rt, d, b)
    mask = (((1 << min(length, 32 - pos)) - 1) << pos) & M32
    field = rt.op(Op.AND, rt.op(Op.SHL, a, Imm(pos)) if pos else a, Imm(mask))
    return _final(rt, d, rt.op(Op.OR, field, rt.op(Op.AND, b, Imm(~mask & M32))))


def op_mul24(tr, ins):
    """``mul24.lo.{s32,u32}`` (nvcc's ``__mul24``): the low 32 bits of the product of the
    operands' low 24 bits, sign- or zero-extended; ``.hi`` is refused."""
    t = _check32(tr, ins, "24-bit multiply")
    if "hi" in ins.mods:
        raise unsupported(ins, "mul24.hi is not supported; use `__mulhi` on the 24-bit values")
    rt = Routine(tr, ins)
    a, b = (tr.value(ins, o, rt.items) for o in ins.operands[1:3])
    if t == "s32":
        a, b = (rt.op(Op.SHR, rt.op(Op.SHL, x, Imm(8)), Imm(8), signed=True) for x in (a, b))
    else:
        a, b = (rt.op(Op.AND, x, Imm(0xFFFFFF)) for x in (a, b))
    return _final(rt, tr.dst(ins, ins.operands[0]), rt.op(Op.MUL, a, b))
