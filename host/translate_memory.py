"""Memory instructions (``ld``, ``st``, ``atom``, ``red``) -> IR: the translation's memory family.

Each ``op_NAME(tr, ins)`` translates one PTX instruction for the ``Translator`` ``tr``
(which binds it as its method ``op_NAME``) and returns its IR items.
"""

from __future__ import annotations

from qwengpu_mlx.core.isa import Imm, Op

from qwengpu_mlx.host.ir import LInstr, LParamLoad, VReg
from qwengpu_mlx.host.ptx_ast import ImmRef, MemRef, SymRef
from qwengpu_mlx.host.translate_types import INT_TYPES32, INT_TYPES64, SUBWORD, unsupported

ATOMIC_ADD_ZERO_HINT = (
    "; clang turned an atomic add of 0 (`atomicAdd(p, 0)`, which only reads) into an atomic `or` with 0: "
    "read the value with a plain load (`int v = *p;`), or add a nonzero value")
"""``atom.or [p], 0`` is what clang makes of ``atomicAdd(p, 0)``: the prelude offers no
atomicOr, so a user's source cannot have asked for it."""


def op_ld(tr, ins):
    if "param" in ins.mods:
        mem = ins.operands[1]
        name = mem.base.name if isinstance(mem, MemRef) and isinstance(mem.base, SymRef) else None
        if name not in tr.params:
            raise unsupported(ins, "unknown parameter")
        if mem.offset:
            raise unsupported(ins, "parameters must be scalars or pointers (no structs)")
        t = tr.typ(ins)
        d = tr.dst(ins, ins.operands[0])
        if t in INT_TYPES64:
            if tr.params[name] != "ptr":
                tr.check_no_wide(ins, "a 64-bit scalar parameter")
            tr.wide.add(d)
        bits = int(t[1:]) if t in SUBWORD else 32
        if bits < 32 and t[0] != "s":
            tr.canon16.add(d)
        return [LParamLoad(d, name, ins.line, bits, t[0] == "s")]
    return _mem(tr, ins, Op.LD)


def op_st(tr, ins):
    return _mem(tr, ins, Op.ST)


def _space(tr, ins):
    for s in ("global", "shared"):
        if s in ins.mods:
            return s
    for s in ("local", "const", "param"):
        if s in ins.mods:
            raise unsupported(ins, f".{s} memory is not supported (only global and shared)")
    return "global"


def _mem(tr, ins, op):
    if any(m.startswith("v") and m[1:].isdigit() for m in ins.mods):
        raise unsupported(ins, "vector memory accesses are not supported")
    t = tr.typ(ins)
    if t in SUBWORD and op is Op.LD:
        return _subword_load(tr, ins, t)
    if t in SUBWORD:
        raise unsupported(ins, f"{t[1:]}-bit memory accesses are not supported: the machine stores whole "
                               f"32-bit words (store an int, e.g. `a[i] = (int)c`)")
    if t in INT_TYPES64:
        tr.check_no_wide(ins, "64-bit memory access")
    space = _space(tr, ins)
    pre: list = []
    g = tr.guard_of(ins)
    if op is Op.LD:
        d = tr.dst(ins, ins.operands[0])
        a, off = tr.address(ins, ins.operands[1], pre)
        return pre + [LInstr(Op.LD, d, (a,), guard=g, offset=off, space=space, line=ins.line, src=ins.src, text=ins.text)]
    a, off = tr.address(ins, ins.operands[0], pre)
    v = tr.value(ins, ins.operands[1], pre)
    return pre + [LInstr(Op.ST, None, (a, v), guard=g, offset=off, space=space, line=ins.line, src=ins.src, text=ins.text)]


def _subword_load(tr, ins, t: str) -> list:
    """``ld.s8``/``ld.u16``... of a word's low byte or half (clang's load for ``(char)a[i]``).

    The machine loads whole words: the word at the (word-aligned) address, then its
    low bits extended by the type's signedness. A byte that is not a word's first
    faults as a misaligned address, on both backends."""
    bits = int(t[1:])
    d = tr.dst(ins, ins.operands[0])
    pre: list = []
    a, off = tr.address(ins, ins.operands[1], pre)
    w = tr.fresh()
    g = tr.guard_of(ins)
    mk = lambda *x, **k: LInstr(*x, guard=g, line=ins.line, src=ins.src, text=ins.text, **k)  # noqa: E731
    out = pre + [mk(Op.LD, w, (a,), offset=off, space=_space(tr, ins))]
    if t[0] == "s":
        s_ = tr.fresh()
        return out + [mk(Op.SHL, s_, (VReg(w), Imm(32 - bits))), mk(Op.SHR, d, (VReg(s_), Imm(32 - bits)), signed=True)]
    if g is None:
        tr.canon16.add(d)
    return out + [mk(Op.AND, d, (VReg(w), Imm((1 << bits) - 1)))]


def op_atom(tr, ins, result=True):
    if "add" not in ins.mods:
        which = [m for m in ins.mods if m not in ("global", "shared", "gpu", "sys", "cta", "relaxed", "u32", "s32", "b32")]
        why = f"atomic `{'.'.join(which) or ins.opcode}` is not supported (only atom.add on 32-bit integers)"
        if "or" in which and any(isinstance(o, ImmRef) and o.value == 0 for o in ins.operands):
            why += ATOMIC_ADD_ZERO_HINT
        raise unsupported(ins, why)
    t = tr.typ(ins)
    if t not in INT_TYPES32:
        raise unsupported(ins, f"atom.add.{t} is not supported (only 32-bit integers)")
    space = _space(tr, ins)
    pre: list = []
    ops = ins.operands
    if result:
        d = tr.dst(ins, ops[0])
        ops = ops[1:]
    else:
        d = None
    a, off = tr.address(ins, ops[0], pre)
    v = tr.value(ins, ops[1], pre)
    return pre + [LInstr(Op.ATOM_ADD, d, (a, v), guard=tr.guard_of(ins), offset=off,
                         space=space, line=ins.line, src=ins.src, text=ins.text)]


def op_red(tr, ins):
    return op_atom(tr, ins, result=False)
