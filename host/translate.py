"""Stage 1 of the lowering: PTX instructions -> basic blocks of linear IR (``LInstr``).

:class:`Translator` walks a kernel's body, cuts basic blocks at the labels a branch
names, and translates each instruction into IR over virtual registers, refusing what
the machine lacks (floats, 64-bit math beyond addresses, sub-word memory, unknown
instructions) with the PTX line.
"""

from __future__ import annotations

from qwengpu_mlx.core.errors import UnsupportedError
from qwengpu_mlx.core.isa import Imm, Op, Special
from qwengpu_mlx.core.machine import SPECIAL_REGISTERS

from qwengpu_mlx.host import division
from qwengpu_mlx.host.ir import BasicBlock, LBarrier, LConst, LInstr, LLabel, LParamLoad, LTerm, VPred, VReg
from qwengpu_mlx.host.ptx_ast import ImmRef, MemRef, PairRef, PtxInstr, PtxKernel, PtxLabel, RegRef, SpecialRef, SymRef
from qwengpu_mlx.host.srcloc import source_error

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
