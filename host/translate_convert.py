"""Moves and conversions (``mov``, ``cvta``, ``cvt``) -> IR: the translation's conversion family.

Each ``op_NAME(tr, ins)`` translates one PTX instruction for the ``Translator`` ``tr``
(which binds it as its method ``op_NAME``) and returns its IR items.
"""

from __future__ import annotations

from qwengpu_mlx.core.isa import Imm, Op

from qwengpu_mlx.host import narrow
from qwengpu_mlx.host.ir import LConst, LInstr
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
    """Integer conversions, exactly as PTX defines them on ``narrow.py``'s invariant.

    Widening from 8 or 16 bits extends by the source's signedness; a result of 8 bits
    is extended by the destination's (a byte register is kept canonical); narrowing to
    16 bits and conversions between 32 and 64 bits are moves (the low bits are the value)."""
    if "sat" in ins.mods:
        raise unsupported(ins, "a saturating conversion (cvt.sat) is not supported; clamp with min/max")
    types = [m for m in ins.mods if m in INT_TYPES32 | INT_TYPES64 | SUBWORD]
    if len(types) != 2:
        raise unsupported(ins, "conversion not supported")
    to, frm = types
    d = tr.dst(ins, ins.operands[0])
    tr.mark_wide(ins, d, to)
    wt, wf = narrow.type_bits(to), narrow.type_bits(frm)
    if wt == 8:
        return narrow.extend_into(tr, ins, d, ins.operands[1], 8, to[0] == "s")
    if wf < 32 and wt > wf:
        return narrow.extend_into(tr, ins, d, ins.operands[1], wf, frm[0] == "s")
    pre: list = []
    v = tr.value(ins, ins.operands[1], pre)
    return pre + [LInstr(Op.MOV, d, (v,), guard=tr.guard_of(ins), line=ins.line, src=ins.src, text=ins.text)]
