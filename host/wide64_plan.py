"""Which 64-bit PTX registers the lowering keeps as two 32-bit words, read from the PTX.

The machine computes in 32 bits. A 64-bit PTX register has always been lowered to one
machine register holding its low word, which is exact for the bits it keeps: ``add``,
``sub``, ``mul.lo``, ``shl``, ``and``/``or``/``xor``/``not``/``neg`` and truncation to 32
bits depend only on the operands' low words. Addresses are 64-bit in PTX and small here,
so for them the low word, read as a signed value, *is* the exact value (``ranges``,
``wide_index`` and ``addresses`` keep it so, or make the access fault).

A ``size_t``/``long long`` value needs more: a comparison, a right shift, ``min``/``max``,
a 64-bit store or a ``printf`` of it reads the high word too. :func:`plan` finds, over the
whole kernel and before any instruction is translated, three sets of registers:

* ``address``: the registers an address is computed from (backward from every memory
  instruction's base through 64-bit arithmetic): the only ones whose low word stands for
  the exact value (the lowering's ``wide`` set). Every other 64-bit register wraps
  modulo 2^32 in its low word, as its value's low word does.
* ``tainted``: registers that may hold a value outside the 32-bit range that the
  address arithmetic does not bound: a 64-bit scalar parameter, a 64-bit load, a right
  shift, a constant beyond 32 bits, and everything computed from them.
* ``pairs``: registers whose high word is demanded (backward from the instructions
  that read it) and so computed: ``wide64.py`` lowers them as pairs. A tainted register
  that addresses memory is demanded too: its high word is checked before the access
  (a non-zero high word is an address no array holds, and faults as on a GPU).

A kernel without 64-bit values has no pairs and no tainted registers, so its lowering
is the one it had (the ``address`` set is what ``wide`` held for its addresses).
"""

from __future__ import annotations

from dataclasses import dataclass

from qwengpu_mlx.host.ptx_ast import ImmRef, MemRef, PtxInstr, PtxKernel, RegRef, SpecialRef, SymRef

TYPES64 = {"s64", "u64", "b64"}

HIGH_READERS = {"setp", "shr", "min", "max", "abs", "div", "rem"}
"""64-bit instructions whose result (even its low word) depends on the operands' high words."""

NO_DATA_DST = {"st", "red", "bra", "ret", "exit", "bar", "barrier", "membar", "fence", "call", "setp"}
"""Instructions whose first operand is not a 64-bit data destination."""


SMALL_SPECIALS = {"tid.x", "tid.y", "tid.z", "ntid.x", "ntid.y", "ntid.z", "laneid", "warpid"}
"""Special registers below 2^16 in every launch (a thread block holds at most 32 threads)."""


@dataclass(frozen=True)
class WidePlan:
    address: frozenset[str]
    tainted: frozenset[str]
    pairs: frozenset[str]
    small: frozenset[str] = frozenset()  # 32-bit registers that only ever hold a SMALL_SPECIALS value


def instr_type(ins: PtxInstr) -> str:
    """The instruction's last integer type modifier (``cvt.u64.u32``: ``u32``, the source's)."""
    for m in reversed(ins.mods):
        if m[:1] in ("s", "u", "b") and m[1:].isdigit():
            return m
    return ""


def is_wide_typed(ins: PtxInstr) -> bool:
    """A 64-bit operation: its (last) integer type is 64 bits."""
    return instr_type(ins) in TYPES64


def fits_int32(v: int) -> bool:
    return -(1 << 31) <= v < (1 << 31)


class _Registers:
    """The kernel's 64-bit registers, by their declared prefix (``%rd``)."""

    def __init__(self, kernel: PtxKernel):
        self.prefixes = {p for p, (t, _) in kernel.reg_decls.items() if t in TYPES64}

    def wide(self, opnd) -> bool:
        return isinstance(opnd, RegRef) and opnd.name.rstrip("0123456789") in self.prefixes


def dst_of(ins: PtxInstr, regs: _Registers) -> str | None:
    """The 64-bit register ``ins`` writes, if any."""
    if ins.opcode in NO_DATA_DST or not ins.operands or not regs.wide(ins.operands[0]):
        return None
    return ins.operands[0].name


def data_sources(ins: PtxInstr, regs: _Registers) -> list[str]:
    """The 64-bit registers ``ins`` reads as data (after its destination, or a store's
    address; a memory operand's base is an address, not data)."""
    return [o.name for o in ins.operands[1:] if regs.wide(o)]


def memory_bases(ins: PtxInstr, regs: _Registers) -> list[str]:
    return [o.base.name for o in ins.operands if isinstance(o, MemRef) and regs.wide(o.base)]


def _taint_source(ins: PtxInstr, params: dict[str, str], address: set[str]) -> bool:
    """Does ``ins`` make a value the address arithmetic does not bound? (A constant beyond
    32 bits in an address's own arithmetic stays refused where it is written.)"""
    if ins.opcode == "ld" and is_wide_typed(ins):
        mem = ins.operands[1] if len(ins.operands) > 1 else None
        if "param" in ins.mods:
            return isinstance(mem, MemRef) and isinstance(mem.base, SymRef) and params.get(mem.base.name) == "scalar"
        return True
    if ins.opcode == "cvt" and ins.mods[-1:] == ["f32"] and is_wide_typed(ins):
        return True                                                  # (long long)x: up to 2^63
    if not is_wide_typed(ins) or ins.opcode in ("st", "setp", "cvt"):
        return False
    if ins.opcode == "shr":
        return True
    amount = ins.operands[2] if len(ins.operands) > 2 else None
    if ins.opcode == "shl" and not (isinstance(amount, ImmRef) and 0 <= amount.value < 32):
        return True
    return ins.operands[0].name not in address and big_constant(ins)


def _to_float(ins: PtxInstr) -> bool:
    """``cvt.<mode>.f32.<s64|u64>``: the float is rounded from all 64 bits (``float_convert_wide``)."""
    return ins.opcode == "cvt" and "f32" in ins.mods[:2]


def big_constant(ins: PtxInstr) -> bool:
    """An operand is a constant beyond the signed 32-bit range."""
    return any(isinstance(o, ImmRef) and not fits_int32(o.value) for o in ins.operands[1:])


def plan(kernel: PtxKernel, params: dict[str, str]) -> WidePlan:
    """The kernel's address, tainted and paired 64-bit registers (see the module's doc)."""
    regs = _Registers(kernel)
    body = [x for x in kernel.body if isinstance(x, PtxInstr)]
    address = _backward(body, regs, {b for ins in body for b in memory_bases(ins, regs)})
    tainted = _forward(body, regs, params, address)
    seeds = {b for ins in body for b in memory_bases(ins, regs) if b in tainted}
    for ins in body:
        if is_wide_typed(ins) and (ins.opcode in HIGH_READERS or ins.opcode == "st" or _to_float(ins)):
            seeds.update(data_sources(ins, regs))
    return WidePlan(frozenset(address), frozenset(tainted), frozenset(_backward(body, regs, seeds)),
                    frozenset(_small_registers(body)))


def _small_registers(body: list[PtxInstr]) -> set[str]:
    """Registers every definition of which moves a special register below 2^16 into them
    (``mov.u32 %r1, %ntid.x``): a product with one of them has a short high word."""
    small, other = set(), set()
    for ins in body:
        d = ins.operands[0] if ins.operands else None
        if not isinstance(d, RegRef) or ins.opcode in NO_DATA_DST:
            continue
        src = ins.operands[1] if len(ins.operands) > 1 else None
        if ins.opcode == "mov" and isinstance(src, SpecialRef) and src.name in SMALL_SPECIALS:
            small.add(d.name)
        else:
            other.add(d.name)
    return small - other


def _backward(body: list[PtxInstr], regs: _Registers, seeds: set[str]) -> set[str]:
    """``seeds`` and every 64-bit register a member is computed from (to a fixpoint)."""
    found = set(seeds)
    changed = True
    while changed:
        changed = False
        for ins in body:
            d = dst_of(ins, regs)
            if d in found and ins.opcode != "ld":
                new = set(data_sources(ins, regs)) - found
                if new:
                    found |= new
                    changed = True
    return found


def _forward(body: list[PtxInstr], regs: _Registers, params: dict[str, str], address: set[str]) -> set[str]:
    """Registers a taint source writes, and every 64-bit register computed from one."""
    found: set[str] = set()
    changed = True
    while changed:
        changed = False
        for ins in body:
            d = dst_of(ins, regs)
            if d is None or d in found or (ins.opcode == "ld" and not _taint_source(ins, params, address)):
                continue
            if _taint_source(ins, params, address) or any(s in found for s in data_sources(ins, regs)):
                found.add(d)
                changed = True
    return found
