"""Control, synchronisation and shuffles (``bra``, ``ret``/``exit``, ``bar``, ``membar``/``fence``,
``shfl``, ``call``) -> IR: the translation's control family.

Each ``op_NAME(tr, ins)`` translates one PTX instruction for the ``Translator`` ``tr``
(which binds it as its method ``op_NAME``) and returns its IR items.
"""

from __future__ import annotations

from qwengpu_mlx.core.isa import Op

from qwengpu_mlx.host.ir import LBarrier, LInstr, LTerm
from qwengpu_mlx.host.ptx_ast import ImmRef, PairRef, SymRef
from qwengpu_mlx.host.translate_types import unsupported

def op_shfl(tr, ins):
    mode = next((m for m in ins.mods if m in ("idx", "up", "down", "bfly")), None)
    if mode is None or "sync" not in ins.mods:
        raise unsupported(ins, "only shfl.sync.{idx,up,down,bfly}.b32 is supported")
    first = ins.operands[0]
    pdst = None
    if isinstance(first, PairRef):
        d, pdst = first.first.name, first.second.name
    else:
        d = tr.dst(ins, first)
    pre: list = []
    srcs = tuple(tr.value(ins, o, pre) for o in ins.operands[1:5])
    if len(srcs) != 4:
        raise unsupported(ins, "shfl.sync needs value, lane, clamp and member mask")
    return pre + [LInstr(Op.SHFL, d, srcs, guard=tr.guard_of(ins), mode=mode, pdst=pdst,
                         line=ins.line, src=ins.src, text=ins.text)]


def op_bar(tr, ins):
    if "warp" in ins.mods:  # bar.warp.sync: the warp is the thread block (host/warp_ops.py)
        if not (len(ins.operands) == 1 and isinstance(ins.operands[0], ImmRef)
                and ins.operands[0].value & 0xFFFFFFFF == 0xFFFFFFFF):
            raise unsupported(ins, "bar.warp.sync needs the constant member mask 0xffffffff (the warp is "
                                   "the whole thread block here: its barrier waits for every thread)")
        if ins.guard:
            raise unsupported(ins, "a predicated barrier is not supported")
        return [LBarrier(ins.line)]
    if len(ins.operands) > 1:
        raise unsupported(ins, "bar.sync with a thread count is not supported")
    if ins.operands and not (isinstance(ins.operands[0], ImmRef) and ins.operands[0].value == 0):
        raise unsupported(ins, "only barrier 0 (__syncthreads) is supported")
    if ins.guard:
        raise unsupported(ins, "a predicated barrier is not supported")
    return [LBarrier(ins.line)]


def op_membar(tr, ins):
    return []  # memory is sequentially consistent on this machine


def op_bra(tr, ins):
    tgt = ins.operands[0]
    if not isinstance(tgt, SymRef):
        raise unsupported(ins, "indirect branches are not supported")
    return [LTerm("bra", tgt.name, tr.guard_of(ins), ins.line)]


def op_ret(tr, ins):
    return [LTerm("exit", None, tr.guard_of(ins), ins.line)]


def op_call(tr, ins):
    raise unsupported(ins, "calls to device functions are not supported (mark them __forceinline__)")
