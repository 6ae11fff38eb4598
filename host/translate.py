"""Stage 1 of the lowering: PTX instructions -> basic blocks of linear IR (``LInstr``).

:class:`Translator` walks a kernel's body, cuts basic blocks at the labels a branch
names, and translates each instruction into IR over virtual registers, refusing what
the machine lacks (sub-word memory, unknown instructions ...) with the PTX line. 64-bit
values (``size_t``, ``long long``) go to ``wide64.py``, which keeps as pairs of words the
registers ``wide64_plan`` found their high words read.

The translator holds the state (wide registers, fresh names) and the operand helpers;
each instruction family is a module of plain functions ``op_NAME(tr, ins)`` that the
class binds as its ``op_NAME`` methods: ``translate_memory``, ``translate_convert``,
``translate_alu``, ``translate_control``.
"""

from __future__ import annotations

from qwengpu_mlx.core.isa import Imm, Special
from qwengpu_mlx.core.machine import SPECIAL_REGISTERS

from qwengpu_mlx.host import float_routines, intrinsics
from qwengpu_mlx.host import translate_alu as alu
from qwengpu_mlx.host import translate_atomics as atomics
from qwengpu_mlx.host import translate_control as control
from qwengpu_mlx.host import translate_convert as convert
from qwengpu_mlx.host import translate_memory as memory
from qwengpu_mlx.host import wide64, wide64_plan
from qwengpu_mlx.host.ir import BasicBlock, LConst, LLabel, LTerm, VPred, VReg
from qwengpu_mlx.host.translate_float import float_instr
from qwengpu_mlx.host.launch_dims import LAUNCH_SPECIALS
from qwengpu_mlx.host.ptx_ast import ImmRef, MemRef, PtxInstr, PtxKernel, PtxLabel, RegRef, SpecialRef, SymRef
from qwengpu_mlx.host.translate_types import INT_TYPES32, INT_TYPES64, M32, SUBWORD, unsupported

FLOAT_TYPES = {"f16", "f16x2", "bf16", "bf16x2", "f32", "f64", "tf32", "e4m3", "e5m2"}


def _branch_targets(kernel: PtxKernel) -> set[str]:
    """Labels some branch names: only these start basic blocks, so the labels that
    ``-gline-tables-only`` adds (``Ltmp3:``, ``Lfunc_begin0:``) leave the code as it was."""
    return {o.name for x in kernel.body if isinstance(x, PtxInstr)
            for o in x.operands if isinstance(o, SymRef)}


def _place(blocks: list[BasicBlock], x) -> None:
    """One translated item into the basic blocks: a routine's label starts a block (a
    division's loop), an item after a branch starts one, a branch ends the current one."""
    if isinstance(x, LLabel):
        blocks.append(BasicBlock(x.name))
        return
    if blocks[-1].term is not None:  # a routine's branch ended the block it was in
        blocks.append(BasicBlock(None))
    if isinstance(x, LTerm):
        blocks[-1].term = x
    else:
        blocks[-1].items.append(x)


class Translator:
    """PTX instructions -> basic blocks of LInstr."""

    def __init__(self, kernel: PtxKernel, shared_names: set[str], params: dict[str, str],
                 sharing: float_routines.Sharing = float_routines.INLINE):
        self.kernel = kernel
        self.shared_names = shared_names
        self.params = params  # PTX param name -> "ptr" | "scalar"
        self.wide: set[str] = set()  # 64-bit virtual registers
        self.wide_plan = wide64_plan.plan(kernel, params)  # 64-bit values kept as pairs (wide64.py)
        self.canon16: set[str] = set()  # sub-word registers known to hold their value zero-extended
        self.tmp = 0
        self.float_calls = float_routines.RoutineCalls(sharing)  # float routines inlined or called

    def fresh(self, prefix="%t") -> str:
        self.tmp += 1
        return f"{prefix}{self.tmp}"

    def run(self) -> list[BasicBlock]:
        blocks: list[BasicBlock] = [BasicBlock(None)]
        targets = _branch_targets(self.kernel)
        for item in self.kernel.body:
            if isinstance(item, PtxLabel):
                if item.name not in targets:
                    continue  # line tables' Ltmp/Lfunc labels: no block starts there
                if blocks[-1].items or blocks[-1].term or blocks[-1].label:
                    blocks.append(BasicBlock(item.name))
                else:
                    blocks[-1].label = item.name
                continue
            if blocks[-1].term is not None:
                blocks.append(BasicBlock(None))
            for x in self.instr(item):
                _place(blocks, x)
        self.wide &= self.wide_plan.address - self.wide_plan.pairs  # only addresses' low words are exact
        shared = self.float_calls.routines(self.fresh)
        if shared:  # each shared float routine once, after the kernel's own code
            if blocks[-1].term is None:
                blocks[-1].term = LTerm("exit")  # the kernel's end does not run on into a routine
            for x in shared:
                _place(blocks, x)
        return blocks

    def shared_variants(self) -> list:
        """Translations of the kernel with more of its float routines shared, least first
        (``float_routines.sharing_levels``), for the lowering to try in turn where the
        inlined routines do not fit the ROM: each a function giving fresh ``(blocks, wide
        registers)`` (the later stages rewrite the blocks in place)."""
        def translation(sharing):
            def run():
                tr = Translator(self.kernel, self.shared_names, self.params, sharing)
                return tr.run(), tr.wide
            run.sharing = sharing  # what it shares, for a lowering asked for one level by its kind
            return run
        return [translation(s) for s in float_routines.sharing_levels(self.float_calls)]

    # -- operands

    def guard_of(self, ins: PtxInstr) -> VPred | None:
        return VPred(ins.guard[0], ins.guard[1]) if ins.guard else None

    def src(self, ins: PtxInstr, opnd):
        """An operand: 64-bit registers read as their low 32 bits (addresses fit)."""
        if isinstance(opnd, RegRef):
            return VReg(opnd.name)
        if isinstance(opnd, ImmRef):
            self.check_immediate(ins, opnd.value)
            return Imm(opnd.value & M32)
        if isinstance(opnd, SpecialRef):
            if opnd.name not in SPECIAL_REGISTERS + LAUNCH_SPECIALS:  # launch_dims lowers the latter
                raise unsupported(ins, f"special register %{opnd.name} is not provided (the machine has "
                                  f"{', '.join('%' + s for s in SPECIAL_REGISTERS + LAUNCH_SPECIALS)})")
            return Special(opnd.name)
        if isinstance(opnd, SymRef):
            if opnd.name in self.shared_names:
                d = self.fresh()
                return ("sym", opnd.name, d)
            raise unsupported(ins, f"symbol `{opnd.name}` cannot be used as a value")
        raise unsupported(ins, f"operand {opnd!r} is not supported here")

    def check_immediate(self, ins, v: int) -> None:
        """An immediate the machine's 32 bits hold exactly: a 64-bit instruction's must be a
        signed 32-bit value (an address offset), a 32-bit one's any 32-bit pattern."""
        lo, hi = (-(1 << 31), 1 << 31) if self.typ(ins) in INT_TYPES64 else (-(1 << 31), 1 << 32)
        if not lo <= v < hi:
            raise unsupported(ins, f"the immediate {v} does not fit in 32 bits (the machine computes in 32 bits, "
                                   f"addresses too: memory is a few hundred bytes); use a constant "
                                   f"between {lo} and {hi - 1}")

    def value(self, ins, opnd, pre: list):
        s = self.src(ins, opnd)
        if isinstance(s, tuple):
            pre.append(LConst(s[2], s[1], ins.line))
            return VReg(s[2])
        return s

    def pred(self, ins, opnd) -> VPred:
        if isinstance(opnd, RegRef):
            return VPred(opnd.name)
        if isinstance(opnd, ImmRef):
            raise unsupported(ins, "constant predicates are not supported")
        raise unsupported(ins, f"expected a predicate register, got {opnd!r}")

    def address(self, ins, opnd: MemRef, pre: list):
        base = opnd.base
        if isinstance(base, SymRef):
            if base.name in self.params:
                raise unsupported(ins, "parameter used as a memory operand")
            if base.name not in self.shared_names:
                raise unsupported(ins, f"unknown memory symbol `{base.name}`")
            d = self.fresh()
            pre.append(LConst(d, base.name, ins.line))
            return VReg(d), opnd.offset
        if isinstance(base, ImmRef):
            if not -(1 << 31) <= base.value < 1 << 31:
                raise unsupported(ins, f"the absolute address {base.value} does not fit in 32 bits "
                                       f"(the machine's memory is a few hundred bytes from address 0)")
            return Imm(base.value & M32), opnd.offset
        return VReg(base.name), opnd.offset

    # -- dispatch and the instruction's type

    def instr(self, ins: PtxInstr) -> list:
        op, mods = ins.opcode, ins.mods
        if any(m in FLOAT_TYPES for m in mods):
            return float_instr(self, ins)
        if wide64.takes(self, ins):
            return wide64.translate(self, ins)
        handler = getattr(self, "op_" + op.replace(".", "_"), None)
        if handler is None:
            raise unsupported(ins, f"PTX instruction `{op}{''.join('.' + m for m in mods)}` is not supported by the machine")
        return handler(ins)

    def typ(self, ins) -> str:
        for m in reversed(ins.mods):
            if m in INT_TYPES32 | INT_TYPES64 | SUBWORD | {"pred"}:
                return m
        return "b32"

    def dst(self, ins, opnd) -> str:
        if not isinstance(opnd, RegRef):
            raise unsupported(ins, "destination must be a register")
        return opnd.name

    def mark_wide(self, ins, name: str, t: str):
        if t in INT_TYPES64:
            self.wide.add(name)

    def check_no_wide(self, ins, what="64-bit integer arithmetic", hint=""):
        raise unsupported(ins, f"{what} is not supported; only address arithmetic may be 64-bit{hint}")

    # -- instructions, by family: ``instr`` dispatches PTX's ``NAME`` to ``op_NAME``, a
    #    function of (translator, instruction) in the family's module

    # memory (translate_memory.py)
    op_ld = memory.op_ld
    op_st = memory.op_st

    # atomics (translate_atomics.py)
    op_atom = memory.on_word_arrays(atomics.op_atom)
    op_red = memory.on_word_arrays(atomics.op_red)

    # moves and conversions (translate_convert.py)
    op_mov = convert.op_mov
    op_cvta = convert.op_cvta
    op_cvt = convert.op_cvt

    # arithmetic, logic, comparison, selection (translate_alu.py)
    op_add = alu.op_add
    op_sub = alu.op_sub
    op_mul = alu.op_mul
    op_mul24 = intrinsics.op_mul24
    op_mad = alu.op_mad
    op_neg = alu.op_neg
    op_abs = alu.op_abs
    op_min = alu.op_min
    op_max = alu.op_max
    op_and = alu.op_and
    op_or = alu.op_or
    op_xor = alu.op_xor
    op_not = alu.op_not
    op_shl = alu.op_shl
    op_shr = alu.op_shr
    op_div = alu.op_div
    op_rem = alu.op_rem
    op_setp = alu.op_setp
    op_selp = alu.op_selp

    # bit instructions as routines (intrinsics.py)
    op_popc = intrinsics.op_popc
    op_clz = intrinsics.op_clz
    op_brev = intrinsics.op_brev
    op_bfind = intrinsics.op_bfind
    op_prmt = intrinsics.op_prmt
    op_bfe = intrinsics.op_bfe
    op_sad = intrinsics.op_sad
    op_bfi = intrinsics.op_bfi

    # control, synchronisation, shuffles (translate_control.py)
    op_shfl = control.op_shfl
    op_bar = control.op_bar
    op_barrier = control.op_bar
    op_membar = control.op_membar
    op_fence = control.op_membar
    op_bra = control.op_bra
    op_ret = control.op_ret
    op_exit = control.op_ret
    op_call = control.op_call
