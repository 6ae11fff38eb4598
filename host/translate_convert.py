"""Moves and conversions (``mov``, ``cvta``, ``cvt``) -> IR: the translation's conversion family.

Each ``op_NAME(tr, ins)`` translates one PTX instruction for the ``Translator`` ``tr``
(which binds it as its method ``op_NAME``) and returns its IR items.
"""

from __future__ import annotations

from qwengpu_mlx.core.isa import Imm, Op

from qwengpu_mlx.host.ir import LConst, LInstr, VReg
from qwengpu_mlx.host.ptx_ast import ImmRef, SymRef
from qwengpu_mlx.host.translate_types import INT_TYPES32, INT_TYPES64, SUBWORD, unsupported

def op_mov(tr, ins):
    t = tr.typ(ins)
    d = tr.dst(ins, ins.operands[0])
    s = ins.operands[1]
    g = tr.guard_of(ins)
    if t == "pred":
        if isinstance(s, ImmRef):  # mov.pred %p, 0 / 1: compare 0 with 0
            return [LInstr(Op.SETP, d, (Imm(0), Imm(0)), guard=g, cmp="eq" if s.value else "ne",
                           line=ins.line, src=ins.src, text=ins.text)]
        return [LInstr(Op.PMOV, d, psrcs=(tr.pred(ins, s),), guard=g, line=ins.line, src=ins.src, text=ins.text)]
    tr.mark_wide(ins, d, t)
    if isinstance(s, SymRef) and g is None:
        if s.name not in tr.shared_names:
            raise unsupported(ins, f"symbol `{s.name}` is not a shared variable")
        return [LConst(d, s.name, ins.line)]
    pre: list = []
    v = tr.value(ins, s, pre)
    return pre + [LInstr(Op.MOV, d, (v,), guard=g, line=ins.line, src=ins.src, text=ins.text)]


def op_cvta(tr, ins):
    d = tr.dst(ins, ins.operands[0])
    tr.wide.add(d)
    pre: list = []
    v = tr.value(ins, ins.operands[1], pre)
    return pre + [LInstr(Op.MOV, d, (v,), guard=tr.guard_of(ins), line=ins.line, src=ins.src, text=ins.text)]


def op_cvt(tr, ins):
    types = [m for m in ins.mods if m in INT_TYPES32 | INT_TYPES64 | SUBWORD]
    if len(types) != 2:
        raise unsupported(ins, "conversion not supported")
    to, frm = types
    d = tr.dst(ins, ins.operands[0])
    tr.mark_wide(ins, d, to)
    pre: list = []
    v = tr.value(ins, ins.operands[1], pre)
    g = tr.guard_of(ins)
    mk = lambda *a, **k: LInstr(*a, guard=g, line=ins.line, src=ins.src, text=ins.text, **k)  # noqa: E731
    width = {t: int(t[1:]) for t in (to, frm)}
    if width[to] >= 32 and width[frm] >= 32:
        return pre + [mk(Op.MOV, d, (v,))]
    # the narrower type decides: truncate to its width, extend by its signedness
    narrow = to if width[to] <= width[frm] else frm
    bits = width[narrow]
    if narrow[0] == "s":
        t = tr.fresh()
        return pre + [mk(Op.SHL, t, (v, Imm(32 - bits))), mk(Op.SHR, d, (VReg(t), Imm(32 - bits)), signed=True)]
    return pre + [mk(Op.AND, d, (v, Imm((1 << bits) - 1)))]
