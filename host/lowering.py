"""PTX kernel + launch arguments -> machine program (the ROM image and memory image).

Stages, each a function you can call on its own:

1. ``translate``: PTX instructions -> linear IR over virtual registers (``LInstr``),
   rejecting what the machine lacks (floats, 64-bit math beyond addresses, general
   division, sub-word memory, unknown instructions) with the PTX line.
2. ``fold_constants``: parameters become immediates (pointer parameters their arrays'
   byte addresses), single-definition constants and special registers are folded
   into operands, and 64-bit address arithmetic collapses to 32-bit byte arithmetic.
3. ``form_blocks``: basic blocks cut into machine blocks of ``slots_per_block``
   instructions, barriers as block terminators, empty jumps threaded, blocks merged,
   reconvergence points (IPDOM) attached.
4. ``regalloc.allocate``: virtual registers -> the 15 registers (and predicates) per lane.

The IR the stages pass along (``LInstr``, ``MBlock``, ...) is defined in ``ir.py``
(``regalloc.py`` reads it too, without importing this module); its names are
re-exported here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from qwengpu_mlx.core.errors import LaunchError, ResourceError, UnsupportedError
from qwengpu_mlx.core.isa import (
    ArrayBinding,
    Block,
    Imm,
    Op,
    Program,
    SharedBinding,
    Special,
    Terminator,
    TermKind,
)
from qwengpu_mlx.core.machine import DEFAULT_MACHINE, LARGE_MACHINE, SPECIAL_REGISTERS, MachineConfig
from qwengpu_mlx.core.reference import alu_value
from qwengpu_mlx.core.vocab import RECORD_TOKENS

from qwengpu_mlx.host import cfg, division, ifconvert, packing, ranges, regalloc, wide_index
from qwengpu_mlx.host.frontend import demangle_kernel_name
from qwengpu_mlx.host.ir import (  # noqa: F401 - the IR's names stay importable from here
    BasicBlock,
    LBarrier,
    LConst,
    LInstr,
    LLabel,
    LParamLoad,
    LTerm,
    MBlock,
    VPred,
    VReg,
)
from qwengpu_mlx.host.ir import successors as _succ
from qwengpu_mlx.host.ptx_ast import (
    ImmRef,
    MemRef,
    PairRef,
    PtxInstr,
    PtxKernel,
    PtxLabel,
    PtxModule,
    RegRef,
    SpecialRef,
    SymRef,
)
from qwengpu_mlx.host.signature import KernelParam
from qwengpu_mlx.host.srcloc import source_error
from qwengpu_mlx.host.validate import check_program, validate_kernel

M32 = 0xFFFFFFFF
INT_TYPES32 = {"s32", "u32", "b32"}
INT_TYPES64 = {"s64", "u64", "b64"}
SUBWORD = {"s8", "u8", "b8", "s16", "u16", "b16"}
FLOAT_TYPES = {"f16", "f16x2", "bf16", "bf16x2", "f32", "f64", "tf32", "e4m3", "e5m2"}
CMP_NAMES = {
    "eq": ("eq", None), "ne": ("ne", None),
    "lt": ("lt", None), "le": ("le", None), "gt": ("gt", None), "ge": ("ge", None),
    "lo": ("lt", False), "ls": ("le", False), "hi": ("gt", False), "hs": ("ge", False),
}


def _unsupported(ins: PtxInstr, why: str) -> UnsupportedError:
    """The error for one instruction: ``file.cu:LINE: PTX line N: `text`: why``."""
    return source_error(UnsupportedError, ins.line, ins.src, f"`{ins.text.strip()}`: {why}")


CLOSED_FORM_HINT = (
    ". If the kernel has no 64-bit integers (long, size_t), clang rewrote a loop into a closed formula "
    "(a sum over the loop becomes a product such as n*(n-1)/2, computed in 64 bits); keep the loop a loop "
    "by passing its accumulator through an empty asm in the body, `asm volatile(\"\" : \"+r\"(s));` "
    "(`#pragma unroll 1` does not stop this rewrite)")
"""Where clang's loop rewriting is the likely cause of 64-bit arithmetic, and the way around it
that works with clang 14 (an empty asm hides the accumulator's recurrence from the rewrite)."""

ATOMIC_ADD_ZERO_HINT = (
    "; clang turned an atomic add of 0 (`atomicAdd(p, 0)`, which only reads) into an atomic `or` with 0: "
    "read the value with a plain load (`int v = *p;`), or add a nonzero value")
"""``atom.or [p], 0`` is what clang makes of ``atomicAdd(p, 0)``: the prelude offers no
atomicOr, so a user's source cannot have asked for it."""


def _branch_targets(kernel: PtxKernel) -> set[str]:
    """Labels some branch names: only these start basic blocks, so the labels that
    ``-gline-tables-only`` adds (``Ltmp3:``, ``Lfunc_begin0:``) leave the code as it was."""
    return {o.name for x in kernel.body if isinstance(x, PtxInstr)
            for o in x.operands if isinstance(o, SymRef)}


# ----------------------------------------------------------------------------- stage 1


class Translator:
    """PTX instructions -> basic blocks of LInstr."""

    def __init__(self, kernel: PtxKernel, shared_names: set[str], params: dict[str, str]):
        self.kernel = kernel
        self.shared_names = shared_names
        self.params = params  # PTX param name -> "ptr" | "scalar"
        self.wide: set[str] = set()  # 64-bit virtual registers
        self.canon16: set[str] = set()  # sub-word registers known to hold their value zero-extended
        self.tmp = 0

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
            cur = blocks[-1]
            if cur.term is not None:
                cur = BasicBlock(None)
                blocks.append(cur)
            for x in self.instr(item):
                if isinstance(x, LLabel):  # a routine's own block (a division's loop)
                    cur = BasicBlock(x.name)
                    blocks.append(cur)
                elif cur.term is not None:  # a routine's branch ended the block it was in
                    cur = BasicBlock(None)
                    blocks.append(cur)
                    cur.items.append(x)
                elif isinstance(x, LTerm):
                    cur.term = x
                else:
                    cur.items.append(x)
        return blocks

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
            if opnd.name not in SPECIAL_REGISTERS:
                raise _unsupported(ins, f"special register %{opnd.name} is not provided "
                                   f"(the machine has {', '.join('%' + s for s in SPECIAL_REGISTERS)})")
            return Special(opnd.name)
        if isinstance(opnd, SymRef):
            if opnd.name in self.shared_names:
                d = self.fresh()
                return ("sym", opnd.name, d)
            raise _unsupported(ins, f"symbol `{opnd.name}` cannot be used as a value")
        raise _unsupported(ins, f"operand {opnd!r} is not supported here")

    def check_immediate(self, ins, v: int) -> None:
        """An immediate the machine's 32 bits hold exactly: a 64-bit instruction's must be a
        signed 32-bit value (an address offset), a 32-bit one's any 32-bit pattern."""
        lo, hi = (-(1 << 31), 1 << 31) if self.typ(ins) in INT_TYPES64 else (-(1 << 31), 1 << 32)
        if not lo <= v < hi:
            raise _unsupported(ins, f"the immediate {v} does not fit in 32 bits (the machine computes in 32 bits, "
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
            raise _unsupported(ins, "constant predicates are not supported")
        raise _unsupported(ins, f"expected a predicate register, got {opnd!r}")

    def address(self, ins, opnd: MemRef, pre: list):
        base = opnd.base
        if isinstance(base, SymRef):
            if base.name in self.params:
                raise _unsupported(ins, "parameter used as a memory operand")
            if base.name not in self.shared_names:
                raise _unsupported(ins, f"unknown memory symbol `{base.name}`")
            d = self.fresh()
            pre.append(LConst(d, base.name, ins.line))
            return VReg(d), opnd.offset
        if isinstance(base, ImmRef):
            if not -(1 << 31) <= base.value < 1 << 31:
                raise _unsupported(ins, f"the absolute address {base.value} does not fit in 32 bits "
                                        f"(the machine's memory is a few hundred bytes from address 0)")
            return Imm(base.value & M32), opnd.offset
        return VReg(base.name), opnd.offset

    # -- instructions

    def instr(self, ins: PtxInstr) -> list:
        op, mods = ins.opcode, ins.mods
        for m in mods:
            if m in FLOAT_TYPES:
                raise _unsupported(ins, f"floating-point type .{m}: floats are not supported (the machine is "
                                        f"32-bit integer only); compute in integers, e.g. fixed point")
        handler = getattr(self, "op_" + op.replace(".", "_"), None)
        if handler is None:
            raise _unsupported(ins, f"PTX instruction `{op}{''.join('.' + m for m in mods)}` is not supported by the machine")
        return handler(ins)

    def typ(self, ins) -> str:
        for m in reversed(ins.mods):
            if m in INT_TYPES32 | INT_TYPES64 | SUBWORD | {"pred"}:
                return m
        return "b32"

    def dst(self, ins, opnd) -> str:
        if not isinstance(opnd, RegRef):
            raise _unsupported(ins, "destination must be a register")
        return opnd.name

    def mark_wide(self, ins, name: str, t: str):
        if t in INT_TYPES64:
            self.wide.add(name)

    def check_no_wide(self, ins, what="64-bit integer arithmetic", hint=""):
        raise _unsupported(ins, f"{what} is not supported; only address arithmetic may be 64-bit{hint}")

    def op_ld(self, ins):
        if "param" in ins.mods:
            mem = ins.operands[1]
            name = mem.base.name if isinstance(mem, MemRef) and isinstance(mem.base, SymRef) else None
            if name not in self.params:
                raise _unsupported(ins, "unknown parameter")
            if mem.offset:
                raise _unsupported(ins, "parameters must be scalars or pointers (no structs)")
            t = self.typ(ins)
            d = self.dst(ins, ins.operands[0])
            if t in INT_TYPES64:
                if self.params[name] != "ptr":
                    self.check_no_wide(ins, "a 64-bit scalar parameter")
                self.wide.add(d)
            bits = int(t[1:]) if t in SUBWORD else 32
            if bits < 32 and t[0] != "s":
                self.canon16.add(d)
            return [LParamLoad(d, name, ins.line, bits, t[0] == "s")]
        return self._mem(ins, Op.LD)

    def op_st(self, ins):
        return self._mem(ins, Op.ST)

    def _space(self, ins):
        for s in ("global", "shared"):
            if s in ins.mods:
                return s
        for s in ("local", "const", "param"):
            if s in ins.mods:
                raise _unsupported(ins, f".{s} memory is not supported (only global and shared)")
        return "global"

    def _mem(self, ins, op):
        if any(m.startswith("v") and m[1:].isdigit() for m in ins.mods):
            raise _unsupported(ins, "vector memory accesses are not supported")
        t = self.typ(ins)
        if t in SUBWORD and op is Op.LD:
            return self._subword_load(ins, t)
        if t in SUBWORD:
            raise _unsupported(ins, f"{t[1:]}-bit memory accesses are not supported: the machine stores whole "
                                    f"32-bit words (store an int, e.g. `a[i] = (int)c`)")
        if t in INT_TYPES64:
            self.check_no_wide(ins, "64-bit memory access")
        space = self._space(ins)
        pre: list = []
        g = self.guard_of(ins)
        if op is Op.LD:
            d = self.dst(ins, ins.operands[0])
            a, off = self.address(ins, ins.operands[1], pre)
            return pre + [LInstr(Op.LD, d, (a,), guard=g, offset=off, space=space, line=ins.line, src=ins.src, text=ins.text)]
        a, off = self.address(ins, ins.operands[0], pre)
        v = self.value(ins, ins.operands[1], pre)
        return pre + [LInstr(Op.ST, None, (a, v), guard=g, offset=off, space=space, line=ins.line, src=ins.src, text=ins.text)]

    def _subword_load(self, ins, t: str) -> list:
        """``ld.s8``/``ld.u16``... of a word's low byte or half (clang's load for ``(char)a[i]``).

        The machine loads whole words: the word at the (word-aligned) address, then its
        low bits extended by the type's signedness. A byte that is not a word's first
        faults as a misaligned address, on both backends."""
        bits = int(t[1:])
        d = self.dst(ins, ins.operands[0])
        pre: list = []
        a, off = self.address(ins, ins.operands[1], pre)
        w = self.fresh()
        g = self.guard_of(ins)
        mk = lambda *x, **k: LInstr(*x, guard=g, line=ins.line, src=ins.src, text=ins.text, **k)  # noqa: E731
        out = pre + [mk(Op.LD, w, (a,), offset=off, space=self._space(ins))]
        if t[0] == "s":
            s_ = self.fresh()
            return out + [mk(Op.SHL, s_, (VReg(w), Imm(32 - bits))), mk(Op.SHR, d, (VReg(s_), Imm(32 - bits)), signed=True)]
        if g is None:
            self.canon16.add(d)
        return out + [mk(Op.AND, d, (VReg(w), Imm((1 << bits) - 1)))]

    def canonical16(self, ins, opnd, pre: list):
        """A 16-bit operand zero-extended to 32 bits (so 32-bit compares and logic are exact)."""
        if isinstance(opnd, ImmRef):
            return Imm(opnd.value & 0xFFFF)
        v = self.value(ins, opnd, pre)
        if isinstance(v, VReg) and v.name in self.canon16:
            return v
        t = self.fresh()
        pre.append(LInstr(Op.AND, t, (v, Imm(0xFFFF)), line=ins.line, src=ins.src, text=ins.text))
        return VReg(t)

    def op_atom(self, ins, result=True):
        if "add" not in ins.mods:
            which = [m for m in ins.mods if m not in ("global", "shared", "gpu", "sys", "cta", "relaxed", "u32", "s32", "b32")]
            why = f"atomic `{'.'.join(which) or ins.opcode}` is not supported (only atom.add on 32-bit integers)"
            if "or" in which and any(isinstance(o, ImmRef) and o.value == 0 for o in ins.operands):
                why += ATOMIC_ADD_ZERO_HINT
            raise _unsupported(ins, why)
        t = self.typ(ins)
        if t not in INT_TYPES32:
            raise _unsupported(ins, f"atom.add.{t} is not supported (only 32-bit integers)")
        space = self._space(ins)
        pre: list = []
        ops = ins.operands
        if result:
            d = self.dst(ins, ops[0])
            ops = ops[1:]
        else:
            d = None
        a, off = self.address(ins, ops[0], pre)
        v = self.value(ins, ops[1], pre)
        return pre + [LInstr(Op.ATOM_ADD, d, (a, v), guard=self.guard_of(ins), offset=off,
                             space=space, line=ins.line, src=ins.src, text=ins.text)]

    def op_red(self, ins):
        return self.op_atom(ins, result=False)

    def op_mov(self, ins):
        t = self.typ(ins)
        d = self.dst(ins, ins.operands[0])
        s = ins.operands[1]
        g = self.guard_of(ins)
        if t == "pred":
            if isinstance(s, ImmRef):  # mov.pred %p, 0 / 1: compare 0 with 0
                return [LInstr(Op.SETP, d, (Imm(0), Imm(0)), guard=g, cmp="eq" if s.value else "ne",
                               line=ins.line, src=ins.src, text=ins.text)]
            return [LInstr(Op.PMOV, d, psrcs=(self.pred(ins, s),), guard=g, line=ins.line, src=ins.src, text=ins.text)]
        self.mark_wide(ins, d, t)
        if isinstance(s, SymRef) and g is None:
            if s.name not in self.shared_names:
                raise _unsupported(ins, f"symbol `{s.name}` is not a shared variable")
            return [LConst(d, s.name, ins.line)]
        pre: list = []
        v = self.value(ins, s, pre)
        return pre + [LInstr(Op.MOV, d, (v,), guard=g, line=ins.line, src=ins.src, text=ins.text)]

    def op_cvta(self, ins):
        d = self.dst(ins, ins.operands[0])
        self.wide.add(d)
        pre: list = []
        v = self.value(ins, ins.operands[1], pre)
        return pre + [LInstr(Op.MOV, d, (v,), guard=self.guard_of(ins), line=ins.line, src=ins.src, text=ins.text)]

    def op_cvt(self, ins):
        types = [m for m in ins.mods if m in INT_TYPES32 | INT_TYPES64 | SUBWORD]
        if len(types) != 2:
            raise _unsupported(ins, "conversion not supported")
        to, frm = types
        d = self.dst(ins, ins.operands[0])
        self.mark_wide(ins, d, to)
        pre: list = []
        v = self.value(ins, ins.operands[1], pre)
        g = self.guard_of(ins)
        mk = lambda *a, **k: LInstr(*a, guard=g, line=ins.line, src=ins.src, text=ins.text, **k)  # noqa: E731
        width = {t: int(t[1:]) for t in (to, frm)}
        if width[to] >= 32 and width[frm] >= 32:
            return pre + [mk(Op.MOV, d, (v,))]
        # the narrower type decides: truncate to its width, extend by its signedness
        narrow = to if width[to] <= width[frm] else frm
        bits = width[narrow]
        if narrow[0] == "s":
            t = self.fresh()
            return pre + [mk(Op.SHL, t, (v, Imm(32 - bits))), mk(Op.SHR, d, (VReg(t), Imm(32 - bits)), signed=True)]
        return pre + [mk(Op.AND, d, (v, Imm((1 << bits) - 1)))]

    def _alu(self, ins, op, nsrc, signed=None, allow_wide=False):
        t = self.typ(ins)
        if t == "pred":
            return self._pred_logic(ins, op)
        if t in SUBWORD and op in (Op.AND, Op.OR, Op.XOR) and t[1:] == "16":
            return self._logic16(ins, op)
        if t in SUBWORD:
            raise _unsupported(ins, f"{t[1:]}-bit integer arithmetic is not supported: compute in int "
                                    f"(e.g. `int b = flag;` for a bool, `(int)s` for a short)")
        if t in INT_TYPES64 and not allow_wide:
            self.check_no_wide(ins, hint=CLOSED_FORM_HINT)
        d = self.dst(ins, ins.operands[0])
        self.mark_wide(ins, d, t)
        pre: list = []
        srcs = tuple(self.value(ins, o, pre) for o in ins.operands[1 : 1 + nsrc])
        sg = (t[0] == "s") if signed is None else signed
        return pre + [LInstr(op, d, srcs, guard=self.guard_of(ins), signed=sg, line=ins.line, src=ins.src, text=ins.text)]

    def _logic16(self, ins, op):
        """``and/or/xor.b16`` (clang's code for ``bool``): exact on zero-extended operands."""
        d = self.dst(ins, ins.operands[0])
        pre: list = []
        srcs = tuple(self.canonical16(ins, o, pre) for o in ins.operands[1:3])
        if ins.guard is None:
            self.canon16.add(d)
        return pre + [LInstr(op, d, srcs, guard=self.guard_of(ins), line=ins.line, src=ins.src, text=ins.text)]

    def _pred_logic(self, ins, op):
        table = {Op.AND: Op.PAND, Op.OR: Op.POR, Op.XOR: Op.PXOR, Op.NOT: Op.PNOT}
        if op not in table:
            raise _unsupported(ins, "predicate operation not supported")
        d = self.dst(ins, ins.operands[0])
        ps = tuple(self.pred(ins, o) for o in ins.operands[1:])
        return [LInstr(table[op], d, psrcs=ps, guard=self.guard_of(ins), line=ins.line, src=ins.src, text=ins.text)]

    def op_add(self, ins):
        if "cc" in ins.mods or "sat" in ins.mods:
            raise _unsupported(ins, "add with carry or saturation is not supported")
        return self._alu(ins, Op.ADD, 2, allow_wide=True)

    def op_sub(self, ins):
        if "cc" in ins.mods or "sat" in ins.mods:
            raise _unsupported(ins, "sub with carry or saturation is not supported")
        return self._alu(ins, Op.SUB, 2, allow_wide=True)

    def emitter(self, ins) -> division.Emitter:
        return division.Emitter(ins.line, ins.src, ins.text, self.fresh)

    def _int32_operands(self, ins, what: str):
        """``(dst, srcs, pre)`` of a 32-bit two-operand instruction the lowering expands."""
        t = self.typ(ins)
        if t not in INT_TYPES32:
            raise _unsupported(ins, f"{what}.{t} is not supported (32-bit integers only)")
        pre: list = []
        srcs = tuple(self.value(ins, o, pre) for o in ins.operands[1:3])
        return self.dst(ins, ins.operands[0]), srcs, pre

    def op_mul(self, ins):
        if "hi" in ins.mods:
            if ins.guard:
                raise _unsupported(ins, "a predicated mul.hi is not supported")
            d, (a, b), pre = self._int32_operands(ins, "mul.hi")
            if isinstance(a, Imm) and not isinstance(b, Imm):
                a, b = b, a
            return pre + division.mul_hi(self.emitter(ins), d, a, b, signed=self.typ(ins) == "s32")
        if "wide" in ins.mods:
            d = self.dst(ins, ins.operands[0])
            self.wide.add(d)
            pre: list = []
            srcs = tuple(self.value(ins, o, pre) for o in ins.operands[1:3])
            return pre + [LInstr(Op.MUL, d, srcs, guard=self.guard_of(ins), line=ins.line, src=ins.src, text=ins.text)]
        return self._alu(ins, Op.MUL, 2, allow_wide=True)

    def op_mul24(self, ins):
        raise _unsupported(ins, "mul24 is not supported")

    def op_mad(self, ins):
        if "hi" in ins.mods or "cc" in ins.mods:
            raise _unsupported(ins, "mad.hi / mad.cc are not supported")
        if "wide" in ins.mods:
            d = self.dst(ins, ins.operands[0])
            self.wide.add(d)
            pre: list = []
            srcs = tuple(self.value(ins, o, pre) for o in ins.operands[1:4])
            return pre + [LInstr(Op.MAD, d, srcs, guard=self.guard_of(ins), line=ins.line, src=ins.src, text=ins.text)]
        return self._alu(ins, Op.MAD, 3, allow_wide=True)

    def op_neg(self, ins):
        return self._alu(ins, Op.NEG, 1)

    def op_abs(self, ins):
        return self._alu(ins, Op.ABS, 1)

    def op_min(self, ins):
        return self._alu(ins, Op.MIN, 2)

    def op_max(self, ins):
        return self._alu(ins, Op.MAX, 2)

    def op_and(self, ins):
        return self._alu(ins, Op.AND, 2)

    def op_or(self, ins):
        return self._alu(ins, Op.OR, 2)

    def op_xor(self, ins):
        return self._alu(ins, Op.XOR, 2)

    def op_not(self, ins):
        return self._alu(ins, Op.NOT, 1)

    def op_shl(self, ins):
        return self._alu(ins, Op.SHL, 2, allow_wide=True)

    def op_shr(self, ins):
        return self._alu(ins, Op.SHR, 2)

    def op_div(self, ins):
        return self._divide(ins, remainder=False)

    def op_rem(self, ins):
        return self._divide(ins, remainder=True)

    def _divide(self, ins, remainder: bool):
        """``div``/``rem`` as the shift-and-subtract routine the model runs (``division.py``)."""
        what = "rem" if remainder else "div"
        d, (n, dv), pre = self._int32_operands(ins, what)
        where = str(ins.src) if ins.src is not None else f"PTX line {ins.line}"
        trap = f"division by zero at {where} (`{ins.text.strip()}`)"
        return pre + division.divide(self.emitter(ins), d, n, dv, signed=self.typ(ins) == "s32",
                                     remainder=remainder, trap=trap, guard=self.guard_of(ins))

    def op_setp(self, ins):
        cmp_mod = next((m for m in ins.mods if m in CMP_NAMES), None)
        if cmp_mod is None:
            raise _unsupported(ins, "comparison not supported")
        if any(m in ("and", "or", "xor") for m in ins.mods) or isinstance(ins.operands[0], PairRef):
            raise _unsupported(ins, "setp with a combining predicate or two destinations is not supported")
        t = self.typ(ins)
        if t in INT_TYPES64:
            self.check_no_wide(ins, "64-bit comparison")
        cmp, forced = CMP_NAMES[cmp_mod]
        signed = (t[0] == "s") if forced is None else forced
        if t in SUBWORD and (t[1:] != "16" or (signed and cmp not in ("eq", "ne"))):
            raise _unsupported(ins, f"{t[1:]}-bit {'signed ' if signed else ''}comparison is not supported: "
                                    f"compare ints (e.g. `(int)s < 0`)")
        d = self.dst(ins, ins.operands[0])
        pre: list = []
        if t in SUBWORD:  # 16-bit equality or unsigned order: exact on zero-extended operands
            srcs = tuple(self.canonical16(ins, o, pre) for o in ins.operands[1:3])
            signed = False
        else:
            srcs = tuple(self.value(ins, o, pre) for o in ins.operands[1:3])
        return pre + [LInstr(Op.SETP, d, srcs, guard=self.guard_of(ins), signed=signed, cmp=cmp,
                             line=ins.line, src=ins.src, text=ins.text)]

    def op_selp(self, ins):
        t = self.typ(ins)
        d = self.dst(ins, ins.operands[0])
        self.mark_wide(ins, d, t)
        pre: list = []
        srcs = tuple(self.value(ins, o, pre) for o in ins.operands[1:3])
        p = self.pred(ins, ins.operands[3])
        return pre + [LInstr(Op.SELP, d, srcs, psrcs=(p,), guard=self.guard_of(ins), line=ins.line, src=ins.src, text=ins.text)]

    def op_shfl(self, ins):
        mode = next((m for m in ins.mods if m in ("idx", "up", "down", "bfly")), None)
        if mode is None or "sync" not in ins.mods:
            raise _unsupported(ins, "only shfl.sync.{idx,up,down,bfly}.b32 is supported")
        first = ins.operands[0]
        pdst = None
        if isinstance(first, PairRef):
            d, pdst = first.first.name, first.second.name
        else:
            d = self.dst(ins, first)
        pre: list = []
        srcs = tuple(self.value(ins, o, pre) for o in ins.operands[1:5])
        if len(srcs) != 4:
            raise _unsupported(ins, "shfl.sync needs value, lane, clamp and member mask")
        return pre + [LInstr(Op.SHFL, d, srcs, guard=self.guard_of(ins), mode=mode, pdst=pdst,
                             line=ins.line, src=ins.src, text=ins.text)]

    def op_bar(self, ins):
        if "warp" in ins.mods:
            return []  # __syncwarp: lanes of a warp are always in step on this machine
        if len(ins.operands) > 1:
            raise _unsupported(ins, "bar.sync with a thread count is not supported")
        if ins.operands and not (isinstance(ins.operands[0], ImmRef) and ins.operands[0].value == 0):
            raise _unsupported(ins, "only barrier 0 (__syncthreads) is supported")
        if ins.guard:
            raise _unsupported(ins, "a predicated barrier is not supported")
        return [LBarrier(ins.line)]

    op_barrier = op_bar

    def op_membar(self, ins):
        return []  # memory is sequentially consistent on this machine

    op_fence = op_membar

    def op_bra(self, ins):
        tgt = ins.operands[0]
        if not isinstance(tgt, SymRef):
            raise _unsupported(ins, "indirect branches are not supported")
        return [LTerm("bra", tgt.name, self.guard_of(ins), ins.line)]

    def op_ret(self, ins):
        return [LTerm("exit", None, self.guard_of(ins), ins.line)]

    op_exit = op_ret

    def op_call(self, ins):
        raise _unsupported(ins, "calls to device functions are not supported (mark them __forceinline__)")


# ----------------------------------------------------------------------------- stage 2


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
    defs: dict[str, int] = {}
    for bb in blocks:
        for it in bb.items:
            d = getattr(it, "dst", None)
            if d is not None:
                defs[d] = defs.get(d, 0) + 1
            if isinstance(it, LInstr) and it.pdst:
                defs[it.pdst] = defs.get(it.pdst, 0) + 1
    known: dict[str, Imm | Special] = {}
    for name, v in consts.items():
        if defs.get(name, 0) == 0:
            known[name] = Imm(v & M32)

    def sub(s):
        if isinstance(s, VReg) and s.name in known:
            return known[s.name]
        return s

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


OFFSET_RANGE = (-512, 511)  # byte offsets a machine memory instruction can encode


def legalize_immediates(blocks: list[BasicBlock]) -> None:
    """Shape instructions so the ROM can encode them (both backends run the result).

    A memory instruction's constant address becomes its offset on the zero register;
    at most one non-zero 32-bit immediate per instruction (zero is register r0), the
    others are moved into registers first; shfl's clamp and member mask must be
    constants; memory offsets must fit ``OFFSET_RANGE``.
    """
    n = 0
    for bb in blocks:
        out = []
        for it in bb.items:
            if not isinstance(it, LInstr):
                out.append(it)
                continue
            it = _strength_reduce(it)
            if it.op in (Op.LD, Op.ST, Op.ATOM_ADD):
                base = it.srcs[0]
                if not -(1 << 31) <= it.offset < 1 << 31:  # the exact address cannot be in memory
                    n += 1
                    it = _poisoned(it, f"%legal{n}", out)
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
                for k in (2, 3):
                    if not isinstance(it.srcs[k], Imm):
                        raise source_error(UnsupportedError, it.line, it.src, f"`{it.text.strip()}`: shfl's "
                                           f"clamp and member mask must be constants")
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


POISON_ADDRESS = 0x7FFFFFFC
"""A word-aligned byte address outside memory on both backends (the circuit faults on
any base bit above bit 9, the reference on any address past its words)."""


def _poisoned(it: LInstr, tmp: str, out: list) -> LInstr:
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
                    it = _poisoned(it, f"%exact{n}", out)
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


def _strength_reduce(it: LInstr) -> LInstr:
    """``mul x, 2^k`` is ``shl x, k`` (index arithmetic: cheaper in the circuit)."""
    if it.op is Op.MUL and len(it.srcs) == 2:
        a, b = it.srcs
        if isinstance(a, Imm) and not isinstance(b, Imm):
            a, b = b, a
        if isinstance(b, Imm) and b.value and b.value & (b.value - 1) == 0:
            return replace(it, op=Op.SHL, srcs=(a, Imm(b.value.bit_length() - 1)))
    return it


def _signed(v: int) -> int:
    return v - (1 << 32) if v >> 31 else v


def _is_tid_times_4(it: LInstr) -> bool:
    """``shl %tid.x, 2`` or ``mul %tid.x, 4``: the scaled special operand ``%tid.x*4``."""
    if len(it.srcs) != 2:
        return False
    a, b = it.srcs
    if it.op is Op.MUL and isinstance(a, Imm):
        a, b = b, a
    tid = isinstance(a, Special) and a.name == "tid.x"
    return tid and isinstance(b, Imm) and ((it.op is Op.SHL and b.value == 2) or (it.op is Op.MUL and b.value == 4))


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


# ----------------------------------------------------------------------------- stage 3


def block_fits(instrs: list, slots: int) -> bool:
    """Whether instructions can share one machine block.

    At most ``slots`` of them, and no memory read (``ld``, ``atom``) after a memory
    write (``st``, ``atom``): in the model a block's loads see memory as it was when
    the block started, so the two must be in different blocks (steps).
    """
    if len(instrs) > slots:
        return False
    wrote = False
    for it in instrs:
        if it.op in (Op.LD, Op.ATOM_ADD) and wrote:
            return False
        if it.op in (Op.ST, Op.ATOM_ADD):
            wrote = True
    return True


def greedy_cut(run: list[LInstr], slots: int) -> list[list[LInstr]]:
    """Cut a run of instructions wherever the next one no longer fits."""
    segs: list[list[LInstr]] = [[]]
    for it in run:
        if segs[-1] and not block_fits(segs[-1] + [it], slots):
            segs.append([])
        segs[-1].append(it)
    return segs


def form_blocks(bbs: list[BasicBlock], slots: int, cut=None) -> list[MBlock]:
    """Cut basic blocks into machine blocks and wire their terminators.

    ``cut(run)``: how a run of instructions between barriers becomes blocks (default
    ``greedy_cut``; ``packing.token_cutter`` chooses the cut with fewest launch tokens).
    """
    cut = cut or (lambda run: greedy_cut(run, slots))
    label_of: dict[str, int] = {}
    pieces: list[list[MBlock]] = []
    n = 0
    exit_block = None
    for bb in bbs:
        group: list[MBlock] = []
        runs: list[list[LInstr]] = [[]]
        for it in bb.items:
            runs.append([]) if isinstance(it, LBarrier) else runs[-1].append(it)
        for k, run in enumerate(runs):
            segs = cut(run) if run else [[]]
            for s, seg in enumerate(segs):
                last = s == len(segs) - 1
                kind = TermKind.BARRIER if last and k < len(runs) - 1 else TermKind.JUMP
                group.append(MBlock(n, seg, Terminator(kind, target=n + 1)))
                n += 1
        group[0].label = bb.label
        if bb.label:
            label_of[bb.label] = group[0].index
        pieces.append(group)
    flat = [b for g in pieces for b in g]
    for bb, group in zip(bbs, pieces):
        last = group[-1]
        t = bb.term
        nxt = last.index + 1
        if t is None:
            if nxt >= n:
                last.term = Terminator(TermKind.EXIT)
            continue
        if t.kind == "bra":
            if t.target not in label_of:
                raise UnsupportedError(f"PTX line {t.line}: branch to unknown label {t.target}")
            tgt = label_of[t.target]
            if t.guard is None:
                last.term = Terminator(TermKind.JUMP, target=tgt)
            else:
                if nxt >= n:
                    if exit_block is None:
                        exit_block = MBlock(len(flat), [], Terminator(TermKind.EXIT))
                        flat.append(exit_block)
                    nxt = exit_block.index
                last.term = Terminator(TermKind.BRANCH, target=tgt, fallthrough=nxt)
                last.term_pred = t.guard
        else:  # exit
            if t.guard is None:
                last.term = Terminator(TermKind.EXIT)
            else:
                if exit_block is None:
                    exit_block = MBlock(len(flat), [], Terminator(TermKind.EXIT))
                    flat.append(exit_block)
                if nxt >= n:
                    nxt = exit_block.index
                last.term = Terminator(TermKind.BRANCH, target=exit_block.index, fallthrough=nxt)
                last.term_pred = t.guard
    return _simplify(flat, slots, reconverge=False)


def _recut(bbs: list[BasicBlock], mblocks: list[MBlock], machine: MachineConfig) -> list[MBlock]:
    """The blocks cut again without the dead code, where the fewest tokens go back down."""
    kept = {id(it) for b in mblocks for it in b.instrs}
    for bb in bbs:
        bb.items = [it for it in bb.items if isinstance(it, LBarrier) or id(it) in kept]
    slots = machine.slots_per_block
    cutter = packing.token_cutter(mblocks, slots, machine.lanes, RECORD_TOKENS,
                                  lambda instrs: block_fits(instrs, slots))
    return form_blocks(bbs, slots, cut=cutter)


def _retarget(t: Terminator, f) -> Terminator:
    return replace(t, target=f(t.target) if t.target is not None else None,
                   fallthrough=f(t.fallthrough) if t.fallthrough is not None else None)


def _simplify(blocks: list[MBlock], slots: int, *, reconverge: bool = True,
              rom_blocks: int | None = None, kernel: str = "") -> list[MBlock]:
    """Thread empty jumps, merge straight-line pairs, drop unreachable blocks, renumber.

    With ``reconverge``, attach each branch's reconvergence block (IPDOM); only the
    final pass needs it, and the IPDOM sets grow with the square of the blocks, so a
    program larger than ``rom_blocks`` is refused before they are built.
    """
    by = {b.index: b for b in blocks}
    entry = blocks[0].index

    def resolve(i: int) -> int:
        seen = set()
        while by[i].instrs == [] and by[i].term.kind is TermKind.JUMP and i != entry and i not in seen:
            seen.add(i)
            i = by[i].term.target
        return i

    changed = True
    while changed:
        changed = False
        for b in list(by.values()):
            nt = _retarget(b.term, resolve)
            if nt != b.term:
                b.term, changed = nt, True
            # a branch whose two sides are the same block is a jump
            if b.term.kind is TermKind.BRANCH and b.term.target == b.term.fallthrough:
                b.term, b.term_pred, changed = Terminator(TermKind.JUMP, target=b.term.target), None, True
        reach = _reachable(by, entry)
        by = {i: b for i, b in by.items() if i in reach}
        preds: dict[int, int] = {i: 0 for i in by}
        for b in by.values():
            for s in _succ(b.term):
                preds[s] += 1
        for b in list(by.values()):
            if b.index not in by or b.term.kind is not TermKind.JUMP:
                continue
            s = b.term.target
            if s == b.index or s == entry or preds.get(s) != 1:
                continue
            nb = by[s]
            if block_fits(b.instrs + nb.instrs, slots):
                b.instrs = b.instrs + nb.instrs
                b.term, b.term_pred = nb.term, nb.term_pred
                del by[s]
                changed = True
                break
    order = sorted(by)
    renum = {old: new for new, old in enumerate(order)}
    out = []
    for old in order:
        b = by[old]
        out.append(MBlock(renum[old], b.instrs, _retarget(b.term, lambda i: renum[i]), b.label, b.term_pred))
    if rom_blocks is not None:
        check_rom(out, rom_blocks, slots, kernel)
    if not reconverge:
        return out
    as_isa = [Block(b.index, [], b.term) for b in out]
    ipdom = cfg.immediate_post_dominators(as_isa)
    for b in out:
        if b.term.kind is TermKind.BRANCH:
            r = ipdom[b.index]
            if r is not None and not out[r].instrs and out[r].term.kind is TermKind.EXIT:
                r = None  # the sides only meet to exit: lanes leave independently
            b.term = replace(b.term, reconv=r)
    return out


def check_rom(mblocks: list[MBlock], rom_blocks: int, slots: int, kernel: str) -> None:
    """The ROM limit, checked on the final blocks before any per-block analysis."""
    if len(mblocks) > rom_blocks:
        ninstr = sum(len(b.instrs) for b in mblocks)
        raise ResourceError(
            f"kernel `{kernel}` needs {len(mblocks)} machine blocks ({ninstr} instructions) "
            f"but the program ROM holds {rom_blocks} blocks of {slots}{_larger_machine_hint(rom_blocks, len(mblocks))}")


def _larger_machine_hint(rom_blocks: int, needed: int) -> str:
    """Where the large machine's ROM would hold the program, say so."""
    if rom_blocks < LARGE_MACHINE.rom_blocks and needed <= LARGE_MACHINE.rom_blocks:
        return f"; the large machine's holds {LARGE_MACHINE.rom_blocks} (--machine large)"
    return ""


def _reachable(by: dict[int, MBlock], entry: int) -> set[int]:
    seen, stack = set(), [entry]
    while stack:
        i = stack.pop()
        if i in seen:
            continue
        seen.add(i)
        stack.extend(_succ(by[i].term))
    return seen


# ----------------------------------------------------------------------------- driver


@dataclass
class MemoryLayout:
    arrays: list[ArrayBinding]
    shared: list[SharedBinding]
    image: list[int]

    def describe(self) -> str:
        parts = [f"{a.name}: {a.length}" for a in self.arrays]
        parts += [f"__shared__ {s.name}: {s.length}" for s in self.shared]
        return ", ".join(parts)


def layout_memory(params: list[KernelParam], values: dict[str, list[int] | int],
                  shared: list, machine: MachineConfig, kernel: str) -> MemoryLayout:
    """Place pointer arguments, then ``__shared__`` variables, in the machine's words."""
    arrays, sh, base = [], [], 0
    for p in params:
        if p.pointer:
            arrays.append(ArrayBinding(p.name, base, len(values[p.name])))
            base += len(values[p.name])
    for var in shared:
        words = (var.size_bytes + 3) // 4
        sh.append(SharedBinding(var.name, base, words))
        base += words
    if base > machine.mem_words:  # checked on the sizes, before any word is allocated
        layout = MemoryLayout(arrays, sh, [])
        raise ResourceError(
            f"kernel `{kernel}` needs {base} memory words ({layout.describe()}) "
            f"but the machine has {machine.mem_words}")
    image = [v & M32 for p in params if p.pointer for v in values[p.name]]
    image.extend([0] * (base - len(image)))
    image.extend([0] * (machine.mem_words - len(image)))
    return MemoryLayout(arrays, sh, image)


def bind_arguments(params: list[KernelParam], args: dict[str, list[int] | int | str], kernel: str
                   ) -> dict[str, list[int] | int]:
    """Check ``--arg`` values against the kernel's parameters: one each, right kind."""
    names = [p.name for p in params]
    missing = [n for n in names if n not in args]
    extra = [n for n in args if n not in names]
    if missing or extra:
        msg = [f"kernel `{kernel}` takes parameters ({', '.join(names) or 'none'})"]
        if missing:
            msg.append("missing --arg for " + ", ".join(missing))
        if extra:
            msg.append("no parameter named " + ", ".join(extra))
        raise LaunchError("; ".join(msg))
    out: dict[str, list[int] | int] = {}
    for p in params:
        v = args[p.name]
        if isinstance(v, str):
            try:
                v = [int(x, 0) for x in v.split(",") if x.strip() != ""]
            except ValueError as e:
                raise LaunchError(f"--arg {p.name}={args[p.name]}: values must be integers") from e
            if not p.pointer:
                if len(v) != 1:
                    raise LaunchError(f"--arg {p.name}: `{p.name}` is a scalar ({p.ctype}); give one integer")
                v = v[0]
        for x in (v if isinstance(v, list) else [v]):
            if isinstance(x, bool) or not isinstance(x, int):
                raise LaunchError(f"--arg {p.name}: {x!r} is not an integer")
        if p.pointer:
            if isinstance(v, int):
                v = [v]
            if len(v) == 0:
                raise LaunchError(f"--arg {p.name}: pointer parameter `{p.name}` needs at least one value")
            out[p.name] = [int(x) for x in v]
        else:
            if isinstance(v, list):
                if len(v) != 1:
                    raise LaunchError(f"--arg {p.name}: `{p.name}` is a scalar ({p.ctype}); give one integer")
                v = v[0]
            out[p.name] = int(v)
        vals = out[p.name] if isinstance(out[p.name], list) else [out[p.name]]
        for x in vals:
            if not -(1 << 31) <= x < (1 << 32):
                raise LaunchError(f"--arg {p.name}: {x} does not fit in 32 bits")
    return out


def lower(module: PtxModule, kernel: PtxKernel, params: list[KernelParam],
          args: dict, *, block_dim: int = 4, grid_dim: int = 1,
          machine: MachineConfig = DEFAULT_MACHINE, few_tokens: bool = True) -> Program:
    """Lower one PTX kernel bound to one launch's arguments into a machine program.

    ``few_tokens``: guard short branches (``ifconvert``) and cut blocks where the fewest
    launch tokens come back (``packing``); False gives the plain greedy lowering, kept
    to measure the two against each other.
    """
    kname = _display_name(kernel.name)
    if not 1 <= block_dim <= machine.max_block_dim:
        raise ResourceError(f"blockDim.x = {block_dim}: the machine runs 1..{machine.max_block_dim} "
                            f"threads per block ({machine.max_warps} warps of {machine.lanes})"
                            + (f"; the large machine runs up to {LARGE_MACHINE.max_block_dim} (--machine large)"
                               if machine.max_block_dim < block_dim <= LARGE_MACHINE.max_block_dim else ""))
    if grid_dim < 1:
        raise ResourceError(f"gridDim.x = {grid_dim}: must be at least 1")
    if len(params) != len(kernel.params):
        raise LaunchError(f"kernel `{kname}`: source lists {len(params)} parameters, PTX has {len(kernel.params)}")
    if len(kernel.params) > MAX_PARAMS:
        raise ResourceError(f"kernel `{kname}` has {len(kernel.params)} parameters; the host binds at most "
                            f"{MAX_PARAMS} (pointers need a memory word each: the machine has {machine.mem_words})")
    validate_kernel(module, kernel)
    values = bind_arguments(params, args, kname)
    shared_vars = [v for v in module.variables if v.space == "shared"] + list(kernel.shared)
    for v in shared_vars:
        if v.size_bytes == 0:
            raise UnsupportedError(f"PTX line {v.line}: dynamic shared memory (`extern __shared__ {v.name}[]`) "
                                   f"is not supported; declare a sized __shared__ array")
    for v in module.variables:
        if v.space == "global":
            raise UnsupportedError(f"PTX line {v.line}: __device__ global variable `{v.name}` is not supported; pass arrays as kernel parameters")
    layout = layout_memory(params, values, shared_vars, machine, kname)

    kinds = {pp.name: ("ptr" if p.pointer else "scalar") for pp, p in zip(kernel.params, params)}
    tr = Translator(kernel, {v.name for v in shared_vars}, kinds)
    bbs = tr.run()
    check_size(bbs, machine, kname)

    shared_addr = {s.name: 4 * s.base for s in layout.shared}
    array_addr = {a.name: 4 * a.base for a in layout.arrays}
    by_ptx = {pp.name: p for pp, p in zip(kernel.params, params)}
    for bb in bbs:
        for i, it in enumerate(bb.items):
            if isinstance(it, LParamLoad):
                p = by_ptx[it.param]
                v = array_addr[p.name] if p.pointer else _extend(values[p.name], it.bits, it.signed)
                bb.items[i] = LInstr(Op.MOV, it.dst, (Imm(v & M32),), line=it.line, text=f"ld.param {p.name}")
            elif isinstance(it, LConst):
                v = shared_addr[it.value] if isinstance(it.value, str) else it.value
                bb.items[i] = LInstr(Op.MOV, it.dst, (Imm(v & M32),), line=it.line, text=f"mov {it.value}")
    fold_constants(bbs, {}, tr.wide)
    specials = ranges.special_ranges(block_dim, grid_dim, machine.lanes)
    wide_index.clamp_wide_products(bbs, tr.wide, specials)
    exact_addresses(bbs, tr.wide, specials, 4 * machine.mem_words)

    blocks, regs_used, preds_used = _fewest_token_blocks(bbs, machine, kname, grid_dim) if few_tokens \
        else _machine_blocks(bbs, machine, kname, few_tokens=False)
    program = Program(kernel=kname, blocks=blocks, arrays=layout.arrays,
                   shared=layout.shared, scalars={p.name: values[p.name] for p in params if not p.pointer},
                   memory=layout.image, regs_used=regs_used, preds_used=preds_used,
                   block_dim=block_dim, grid_dim=grid_dim)
    check_program(program, machine)
    return program


def _fewest_token_blocks(bbs: list[BasicBlock], machine: MachineConfig, kname: str, grid_dim: int):
    """Short branches guarded and blocks cut for fewest tokens; the branches kept where
    the guards would need more registers than the machine has."""
    try:
        return _machine_blocks(ifconvert.if_convert(bbs, zero_rows=grid_dim == 1), machine, kname)
    except ResourceError:
        return _machine_blocks(bbs, machine, kname)


def _machine_blocks(bbs: list[BasicBlock], machine: MachineConfig, kname: str, *, few_tokens: bool = True):
    """Basic blocks -> allocated machine blocks: cut, dead code out, cut again, merged."""
    bbs = [replace(b, items=list(b.items)) for b in bbs]
    mblocks = form_blocks(bbs, machine.slots_per_block)
    regalloc.eliminate_dead_code(mblocks)
    if few_tokens:
        mblocks = _recut(bbs, mblocks, machine)
    mblocks = _simplify(mblocks, machine.slots_per_block, rom_blocks=machine.rom_blocks, kernel=kname)
    return regalloc.allocate(mblocks, machine, kname)


MAX_PARAMS = 1024
"""Kernel parameters the host binds (CUDA's 4 KB parameter space holds 1024 ints)."""

SIZE_FACTOR = 16
"""How far past the ROM a translated kernel may be before simplification: dead code
and block merging shrink programs a little, never sixteen-fold."""


def check_size(bbs: list[BasicBlock], machine: MachineConfig, kernel: str) -> None:
    """Refuse a kernel far beyond the ROM before the quadratic passes (merging, liveness, IPDOM)."""
    nins = sum(len(bb.items) for bb in bbs)
    cap = SIZE_FACTOR * machine.rom_blocks
    if len(bbs) > cap or nins > cap * machine.slots_per_block:
        raise ResourceError(
            f"kernel `{kernel}` has {len(bbs)} basic blocks and {nins} instructions: far more than the "
            f"program ROM holds ({machine.rom_blocks} blocks of {machine.slots_per_block})")


def _extend(value: int, bits: int, signed: bool) -> int:
    value &= (1 << bits) - 1
    if signed and value >> (bits - 1):
        value -= 1 << bits
    return value & M32


def _display_name(name: str) -> str:
    return demangle_kernel_name(name)
