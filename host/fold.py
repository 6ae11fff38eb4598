"""Stage 2 of the lowering: constants folded into operands, immediates made encodable.

:func:`fold_constants` folds parameters (already ``mov`` of immediates), constants and
special registers into the instructions that read them (64-bit address arithmetic
exactly, collapsing to 32-bit byte arithmetic), then moves constant address sums
into memory offsets (``addresses.fold_address_offsets``) and shapes every
instruction so the ROM can encode it (:func:`legalize_immediates`).
"""

from __future__ import annotations

from dataclasses import replace

from qwengpu_mlx.core.isa import Imm, Op, Special
from qwengpu_mlx.core.reference import alu_value

from qwengpu_mlx.host import wide_index
from qwengpu_mlx.host.addresses import fold_address_offsets, poisoned, strength_reduce
from qwengpu_mlx.host.ir import BasicBlock, LInstr, VReg
from qwengpu_mlx.host.warp_ops import check_hardware_shuffle, warp_special

M32 = 0xFFFFFFFF

FOLDABLE = (Op.MOV, Op.ADD, Op.SUB, Op.MUL, Op.MAD, Op.SHL, Op.AND, Op.OR)  # address and index arithmetic


def _fold(op: Op, vals: list[int], signed: bool) -> int | None:
    """The constant value of an instruction whose operands are all constants, if we fold it."""
    return alu_value(op, vals, signed=signed) if op in FOLDABLE else None


def _fold_wide(op: Op, vals: list[int], low: int) -> int:
    """A 64-bit constant's value as the machine holds it: exact within 32 bits, else clamped."""
    exact = {Op.ADD: lambda a, b: a + b, Op.SUB: lambda a, b: a - b, Op.MUL: lambda a, b: a * b,
             Op.MAD: lambda a, b, c: a * b + c, Op.SHL: lambda a, b: a << (b & 63),
             Op.MOV: lambda a: a}.get(op)
    if exact is None:
        return low
    v = exact(*vals)
    if -(1 << 31) <= v < 1 << 31:
        return v & M32
    return (wide_index.SPAN if v > 0 else -wide_index.SPAN) & M32


def fold_constants(blocks: list[BasicBlock], consts: dict[str, int], wide: set[str] = frozenset()) -> None:
    """Fold parameters, constants and special registers into operands, in place.

    Only registers defined exactly once, unguarded, are folded; everything else
    stays a register. A 64-bit (``wide``) result is folded exactly, not modulo 2^32
    (``mul.wide.s32 %rd, STEP, 4`` with STEP = 2^30 + 1 is 2^32 + 4, not 4): one past
    32 bits can only address outside memory, so it folds to +-``wide_index.SPAN``, which
    keeps it there.
    """
    defs = _definition_counts(blocks)
    known: dict[str, Imm | Special] = {}
    for name, v in consts.items():
        if defs.get(name, 0) == 0:
            known[name] = Imm(v & M32)

    def sub(s):
        if isinstance(s, VReg) and s.name in known:
            return known[s.name]
        return warp_special(s)

    changed = True
    while changed:
        changed = False
        for bb in blocks:
            for i, it in enumerate(bb.items):
                if not isinstance(it, LInstr):
                    continue
                new_srcs = tuple(sub(s) for s in it.srcs)
                if new_srcs != it.srcs:
                    bb.items[i] = it = replace(it, srcs=new_srcs)
                    changed = True
                if it.dst is None or it.dst in known or defs.get(it.dst) != 1 or it.guard is not None:
                    continue
                if it.writes_pred or it.pdst:
                    continue
                if it.op is Op.MOV and isinstance(it.srcs[0], Special):
                    known[it.dst] = it.srcs[0]
                    changed = True
                elif _special_times_one(it):  # blockDim.x * blockDim.y of a 1-D block (the warp's lanes)
                    known[it.dst] = it.srcs[0] if isinstance(it.srcs[0], Special) else it.srcs[1]
                    changed = True
                elif _is_tid_times_4(it):
                    known[it.dst] = Special("tid.x*4")
                    changed = True
                elif all(isinstance(s, Imm) for s in it.srcs):
                    v = _fold(it.op, [s.value for s in it.srcs], it.signed)
                    if v is not None and it.dst in wide:
                        v = _fold_wide(it.op, [_signed(s.value) for s in it.srcs], v)
                    if v is not None:
                        known[it.dst] = Imm(v)
                        changed = True
    for bb in blocks:
        bb.items = [it for it in bb.items
                    if not (isinstance(it, LInstr) and it.dst in known and not it.writes_pred)]
    fold_address_offsets(blocks)
    legalize_immediates(blocks)



def _definition_counts(blocks: list[BasicBlock]) -> dict[str, int]:
    """How often each virtual register (and predicate) is written."""
    defs: dict[str, int] = {}
    for bb in blocks:
        for it in bb.items:
            d = getattr(it, "dst", None)
            if d is not None:
                defs[d] = defs.get(d, 0) + 1
            if isinstance(it, LInstr) and it.pdst:
                defs[it.pdst] = defs.get(it.pdst, 0) + 1
    return defs

OFFSET_RANGE = (-512, 511)  # byte offsets a machine memory instruction can encode


def legalize_immediates(blocks: list[BasicBlock]) -> None:
    """Shape instructions so the ROM can encode them (both backends run the result).

    A memory instruction's constant address becomes its offset on the zero register;
    at most one non-zero 32-bit immediate per instruction (zero is register r0), the
    others are moved into registers first; shfl's clamp and member mask must be
    constants in the prelude's 4-lane form (``warp_ops``); memory offsets must fit ``OFFSET_RANGE``.
    """
    n = 0
    for bb in blocks:
        out = []
        for it in bb.items:
            if not isinstance(it, LInstr):
                out.append(it)
                continue
            it = strength_reduce(it)
            if it.op in (Op.LD, Op.ST, Op.ATOM_ADD):
                base = it.srcs[0]
                if not -(1 << 31) <= it.offset < 1 << 31:  # the exact address cannot be in memory
                    n += 1
                    it = poisoned(it, f"%legal{n}", out)
                    base = it.srcs[0]
                if isinstance(base, Imm):
                    off = _signed(base.value) + it.offset
                    it = replace(it, srcs=(Imm(0),) + it.srcs[1:], offset=off)
                if not OFFSET_RANGE[0] <= it.offset <= OFFSET_RANGE[1]:
                    n += 1
                    t = f"%legal{n}"
                    out.append(LInstr(Op.ADD, t, (it.srcs[0], Imm(it.offset & M32)), line=it.line, src=it.src, text=it.text))
                    it = replace(it, srcs=(VReg(t),) + it.srcs[1:], offset=0)
            fixed = range(len(it.srcs))
            if it.op is Op.SHFL:
                check_hardware_shuffle(it)
                fixed = range(2)
            seen_imm = False
            srcs = list(it.srcs)
            for k in fixed:
                s_ = srcs[k]
                if isinstance(s_, Imm) and s_.value != 0:
                    if seen_imm:
                        n += 1
                        t = f"%legal{n}"
                        out.append(LInstr(Op.MOV, t, (s_,), line=it.line, src=it.src, text=it.text))
                        srcs[k] = VReg(t)
                    seen_imm = True
            out.append(replace(it, srcs=tuple(srcs)))
        bb.items = out


def _signed(v: int) -> int:
    return v - (1 << 32) if v >> 31 else v


def _special_times_one(it: LInstr) -> bool:
    """``mul %ntid.x, 1`` (or ``shl %ntid.x, 0``): the special register itself."""
    if it.op not in (Op.MUL, Op.SHL) or len(it.srcs) != 2:
        return False
    a, b = it.srcs
    if it.op is Op.MUL and isinstance(a, Imm):
        a, b = b, a
    return isinstance(a, Special) and b == Imm(1 if it.op is Op.MUL else 0)


def _is_tid_times_4(it: LInstr) -> bool:
    """``shl %tid.x, 2`` or ``mul %tid.x, 4``: the scaled special operand ``%tid.x*4``."""
    if len(it.srcs) != 2:
        return False
    a, b = it.srcs
    if it.op is Op.MUL and isinstance(a, Imm):
        a, b = b, a
    tid = isinstance(a, Special) and a.name == "tid.x"
    return tid and isinstance(b, Imm) and ((it.op is Op.SHL and b.value == 2) or (it.op is Op.MUL and b.value == 4))
