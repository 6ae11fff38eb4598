"""Addresses made exact and cheap: memory instructions' 32-bit addresses behave as their
exact ones (:func:`exact_addresses`), constant sums move into their offsets
(:func:`fold_address_offsets`), ``mul`` by a power of two becomes ``shl``
(:func:`strength_reduce`), and an access known to be outside memory is poisoned
(:func:`poisoned`) so it faults on both backends.
"""

from __future__ import annotations

from dataclasses import replace

from qwengpu_mlx.core.isa import Imm, Op, Special

from qwengpu_mlx.host import ranges
from qwengpu_mlx.host.ir import BasicBlock, LInstr, VReg

M32 = 0xFFFFFFFF


POISON_ADDRESS = 0x7FFFFFFC
"""A word-aligned byte address outside memory on both backends (the circuit faults on
any base bit above bit 9, the reference on any address past its words)."""


def poisoned(it: LInstr, tmp: str, out: list) -> LInstr:
    """``it`` addressing :data:`POISON_ADDRESS`: its exact address is outside memory but
    its 32-bit address would wrap back into it, so it must fault wherever it runs."""
    out.append(LInstr(Op.MOV, tmp, (Imm(POISON_ADDRESS),), line=it.line, src=it.src, text=it.text))
    return replace(it, srcs=(VReg(tmp),) + it.srcs[1:], offset=0)


def exact_addresses(blocks: list[BasicBlock], wide: set[str], specials: dict, mem_bytes: int) -> None:
    """Make every memory instruction's 32-bit address behave as its exact one, on both backends.

    From the exact value ranges (``ranges.value_ranges``): an access whose exact
    address is certainly outside memory although its 32-bit value may wrap into it
    is poisoned (it faults); a positive offset on a base that may be negative moves
    into an ``add`` (the circuit adds offsets to a non-negative base only).
    """
    env = ranges.value_ranges(blocks, wide, specials)
    uses = _use_counts(blocks)
    n = 0
    for bb in blocks:
        out = []
        for it in bb.items:
            if isinstance(it, LInstr) and it.op in (Op.LD, Op.ST, Op.ATOM_ADD):
                lo, hi = ranges.address_range(it, env, specials)
                wraps = lo < -(1 << 31) or hi >= 1 << 31
                base = it.srcs[0]
                if wraps and (hi < 0 or lo >= mem_bytes):
                    n += 1
                    it = poisoned(it, f"%exact{n}", out)
                elif it.offset > 0 and isinstance(base, VReg) and env.get(base.name, ranges.FULL)[0] < 0:
                    if uses.get(base.name) == 1 and _fold_offset_into_def(out, base.name, it.offset):
                        out.append(replace(it, offset=0))
                        continue
                    n += 1
                    t = f"%exact{n}"
                    out.append(LInstr(Op.ADD, t, (base, Imm(it.offset & M32)), line=it.line, src=it.src, text=it.text))
                    it = replace(it, srcs=(VReg(t),) + it.srcs[1:], offset=0)
            out.append(it)
        bb.items = out


def _use_counts(blocks: list[BasicBlock]) -> dict[str, int]:
    """How often each virtual register is read (as a source; guards do not count)."""
    uses: dict[str, int] = {}
    for bb in blocks:
        for it in bb.items:
            for s_ in getattr(it, "srcs", ()):
                if isinstance(s_, VReg):
                    uses[s_.name] = uses.get(s_.name, 0) + 1
    return uses


def _fold_offset_into_def(out: list, name: str, offset: int) -> bool:
    """``sub x, C, y; ld [x+K]`` -> ``sub x, C+K, y; ld [x]`` (likewise ``add``), in place.

    Only for the single unguarded definition earlier in the same block whose one
    immediate (or zero) can absorb the offset, so no instruction is added."""
    defs = [k for k, it in enumerate(out) if isinstance(it, LInstr) and it.dst == name]
    if len(defs) != 1:
        return False
    k = defs[0]
    it = out[k]
    if it.guard is not None or it.op not in (Op.ADD, Op.SUB) or len(it.srcs) != 2:
        return False
    a, b = it.srcs
    if isinstance(b, Imm):  # x = a +- b: b moves by the offset
        nb = Imm((b.value + (offset if it.op is Op.ADD else -offset)) & M32)
        out[k] = replace(it, srcs=(a, nb))
    elif isinstance(a, Imm):  # x = a +- b: a moves by the offset
        out[k] = replace(it, srcs=(Imm((a.value + offset) & M32), b))
    else:
        return False
    return True


def strength_reduce(it: LInstr) -> LInstr:
    """``mul x, 2^k`` is ``shl x, k`` (index arithmetic: cheaper in the circuit)."""
    if it.op is Op.MUL and len(it.srcs) == 2:
        a, b = it.srcs
        if isinstance(a, Imm) and not isinstance(b, Imm):
            a, b = b, a
        if isinstance(b, Imm) and b.value and b.value & (b.value - 1) == 0:
            return replace(it, op=Op.SHL, srcs=(a, Imm(b.value.bit_length() - 1)))
    return it


def fold_address_offsets(blocks: list[BasicBlock]) -> None:
    """``add x, y, C`` feeding ``ld [x]`` in the same basic block becomes ``ld [y+C]``.

    Only when nothing in between writes y, so the address is the same value; the
    then-unused add is removed later by dead-code elimination.
    """
    for bb in blocks:
        sums: dict[str, tuple[object, int]] = {}  # x -> (y, C)
        for i, it in enumerate(bb.items):
            if not isinstance(it, LInstr):
                sums.clear()
                continue
            if it.op in (Op.LD, Op.ST, Op.ATOM_ADD) and isinstance(it.srcs[0], VReg) and it.srcs[0].name in sums:
                y, c = sums[it.srcs[0].name]
                bb.items[i] = replace(it, srcs=(y,) + it.srcs[1:], offset=it.offset + c)
            written = {it.dst, it.pdst} - {None}
            for x in [x for x, (y, _) in sums.items() if x in written or (isinstance(y, VReg) and y.name in written)]:
                del sums[x]
            if it.op is Op.ADD and it.guard is None and it.dst is not None:
                a, b = it.srcs
                if isinstance(a, Imm) and not isinstance(b, Imm):
                    a, b = b, a
                if isinstance(b, Imm) and isinstance(a, (VReg, Special)) and (not isinstance(a, VReg) or a.name != it.dst):
                    c = b.value - (1 << 32) if b.value >> 31 else b.value
                    sums[it.dst] = (a, c)
