"""Checks between the stages: PTX before lowering, machine code after it.

:func:`validate_kernel` runs between parsing and lowering. It is driven by one table,
:data:`SIGNATURES` (PTX opcode -> the operand kinds of each accepted form), and
checks every name a kernel uses: registers against its ``.reg`` declarations,
guards and predicate operands against ``.pred`` registers, symbols against its
parameters and variables, branch targets against its labels. The lowering then only
meets operands of the kinds it indexes, so malformed PTX is an :class:`InvalidPtx`
naming the PTX line, never an ``IndexError`` or ``AttributeError`` deep inside it.

:func:`check_program` runs after lowering, before either backend sees the program.
It proves every machine instruction well-formed against the machine's own table
(``isa.OPERAND_COUNTS``) and encodable into the ROM, so the reference interpreter
and the model run the same, valid program or neither runs it.
"""

from __future__ import annotations

import re

from qwengpu_mlx.core import isa
from qwengpu_mlx.core.encoding import EncodeError, encode_program
from qwengpu_mlx.core.errors import InvalidPtx, MalformedProgram
from qwengpu_mlx.core.isa import Imm, Op, Reg, Special, TermKind
from qwengpu_mlx.core.machine import OPERAND_SPECIALS, MachineConfig

from qwengpu_mlx.host.srcloc import source_error
from qwengpu_mlx.host.ptx_ast import (ImmRef, MemRef, PairRef, PtxInstr, PtxKernel, PtxLabel, PtxModule, RegRef,
                                      SpecialRef, SymRef, VecRef)

__all__ = ["SIGNATURES", "validate_kernel", "check_program"]

# --------------------------------------------------------------------------- the table

DST = "destination register"
PRED = "predicate register"
PVAL = "predicate or 0/1"
VAL = "value"
ADDR = "address [...]"
LABEL = "label"
DPAIR = "destination register or d|p pair"

_BINARY = ((DST, VAL, VAL),)
_UNARY = ((DST, VAL),)

SIGNATURES: dict[str, tuple[tuple[str, ...], ...]] = {
    # memory
    "ld": ((DST, ADDR),),
    "st": ((ADDR, VAL),),
    "atom": ((DST, ADDR, VAL), (DST, ADDR, VAL, VAL)),  # the 4-operand form is cas (translate_atomics)
    "red": ((ADDR, VAL),),
    # moves and conversions
    "mov": _UNARY,
    "mov.pred": ((PRED, PVAL),),
    "cvta": _UNARY,
    "cvt": _UNARY,
    # integer arithmetic
    **{op: _BINARY for op in ("add", "sub", "mul", "min", "max", "and", "or", "xor", "shl", "shr",
                              "div", "rem", "mul24")},
    **{op: _UNARY for op in ("neg", "abs", "not")},
    "mad": ((DST, VAL, VAL, VAL),),
    # bit instructions (intrinsics.py)
    **{op: _UNARY for op in ("popc", "clz", "brev", "bfind")},
    "prmt": ((DST, VAL, VAL, VAL),),
    "bfe": ((DST, VAL, VAL, VAL),),
    "bfi": ((DST, VAL, VAL, VAL, VAL),),
    "sad": ((DST, VAL, VAL, VAL),),
    # predicate logic (the .pred forms of and/or/xor/not)
    **{f"{op}.pred": ((PRED, PRED, PRED),) for op in ("and", "or", "xor")},
    "not.pred": ((PRED, PRED),),
    "setp": ((PRED, VAL, VAL), (PRED, VAL, VAL, PRED)),  # the combining form is refused later
    "selp": ((DST, VAL, VAL, PRED),),
    "shfl": ((DPAIR, VAL, VAL, VAL, VAL),),
    # control
    "bar": ((), (VAL,), (VAL, VAL)),
    "barrier": ((), (VAL,), (VAL, VAL)),
    "membar": ((),),
    "fence": ((),),
    "bra": ((LABEL,),),
    "ret": ((),),
    "exit": ((),),
}
"""PTX opcode (``name.pred`` for a predicate-typed form) -> accepted operand kinds.

Opcodes missing here (``call``, anything unknown) are left to the lowering, which
refuses them with the reason."""


def _signature_key(ins: PtxInstr) -> str | None:
    key = f"{ins.opcode}.pred"
    if "pred" in ins.mods and key in SIGNATURES:
        return key
    return ins.opcode if ins.opcode in SIGNATURES else None


# --------------------------------------------------------------------------- PTX


class _Names:
    """What a kernel declares: registers (with their types), symbols, labels."""

    def __init__(self, module: PtxModule, kernel: PtxKernel):
        self.regs = kernel.reg_decls
        self.params = {p.name for p in kernel.params}
        self.vars = {v.name for v in [*module.variables, *kernel.shared]}
        self.labels = {x.name for x in kernel.body if isinstance(x, PtxLabel)}

    def reg_type(self, name: str) -> str | None:
        """The declared type of ``%r5`` (from ``%r<N>`` with 5 < N, or a plain ``%r5``), else None."""
        if name in self.regs:
            return self.regs[name][0]
        m = re.fullmatch(r"(.*?)(\d+)", name)
        if m and m.group(1) in self.regs:
            rtype, count = self.regs[m.group(1)]
            if int(m.group(2)) < count:
                return rtype
        return None


def _fail(ins: PtxInstr, why: str) -> InvalidPtx:
    return source_error(InvalidPtx, ins.line, ins.src, f"`{ins.text.strip()}`: {why}")


def _check_reg(ins: PtxInstr, names: _Names, ref: RegRef, want_pred: bool, what: str) -> None:
    """A register operand: declared, and a predicate exactly where one belongs."""
    if ref.name == "_":
        if want_pred:
            raise _fail(ins, f"{what}: the sink `_` cannot be read as a predicate")
        return
    rtype = names.reg_type(ref.name)
    if rtype is None:
        raise _fail(ins, f"{what}: register {ref.name} is not declared (no .reg declares it)")
    if want_pred and rtype != "pred":
        raise _fail(ins, f"{what}: {ref.name} is a .{rtype} register where a predicate belongs")
    if not want_pred and rtype == "pred":
        raise _fail(ins, f"{what}: {ref.name} is a predicate where a value register belongs")


def _check_symbol(ins: PtxInstr, names: _Names, name: str, what: str) -> None:
    if name not in names.params | names.vars:
        raise _fail(ins, f"{what}: `{name}` is not a parameter or variable of this kernel")


def _check_operand(ins: PtxInstr, names: _Names, kind: str, opnd, pos: int) -> None:
    """One operand against its kind in the table."""
    what = f"operand {pos} ({kind})"
    if isinstance(opnd, VecRef) and kind in (DST, VAL) and ins.opcode in ("ld", "st"):  # ld/st .v2/.v4
        for element in opnd.elements:
            _check_operand(ins, names, kind, element, pos)
        return
    if kind in (DST, PRED):
        if not isinstance(opnd, RegRef):
            raise _fail(ins, f"{what}: found {_describe(opnd)}")
        _check_reg(ins, names, opnd, kind == PRED, what)
    elif kind == PVAL:
        if isinstance(opnd, ImmRef):
            return
        if not isinstance(opnd, RegRef):
            raise _fail(ins, f"{what}: found {_describe(opnd)}")
        _check_reg(ins, names, opnd, True, what)
    elif kind == DPAIR:
        if isinstance(opnd, PairRef):
            _check_reg(ins, names, opnd.first, False, what)
            _check_reg(ins, names, opnd.second, True, what)
        elif isinstance(opnd, RegRef):
            _check_reg(ins, names, opnd, False, what)
        else:
            raise _fail(ins, f"{what}: found {_describe(opnd)}")
    elif kind == VAL:
        if isinstance(opnd, RegRef):
            _check_reg(ins, names, opnd, False, what)
        elif isinstance(opnd, SymRef):
            _check_symbol(ins, names, opnd.name, what)
        elif not isinstance(opnd, (ImmRef, SpecialRef)):
            raise _fail(ins, f"{what}: found {_describe(opnd)}")
    elif kind == ADDR:
        if not isinstance(opnd, MemRef):
            raise _fail(ins, f"{what}: found {_describe(opnd)}; write it in brackets, e.g. [%rd1+4]")
        if isinstance(opnd.base, RegRef):
            _check_reg(ins, names, opnd.base, False, what)
        elif isinstance(opnd.base, SymRef):
            _check_symbol(ins, names, opnd.base.name, what)
    elif kind == LABEL:
        if not isinstance(opnd, SymRef):
            raise _fail(ins, f"{what}: found {_describe(opnd)}")
        if opnd.name not in names.labels:
            raise _fail(ins, f"branch target `{opnd.name}` is not a label of this kernel")


def _describe(opnd) -> str:
    if isinstance(opnd, RegRef):
        return f"register {opnd.name}"
    if isinstance(opnd, ImmRef):
        return f"immediate {opnd.value}"
    if isinstance(opnd, SpecialRef):
        return f"special register %{opnd.name}"
    if isinstance(opnd, SymRef):
        return f"symbol `{opnd.name}`"
    if isinstance(opnd, MemRef):
        return "an address [...]"
    if isinstance(opnd, PairRef):
        return "a d|p pair"
    return repr(opnd)


def _check_instr(ins: PtxInstr, names: _Names) -> None:
    """Guard, operand count and every operand's kind, from :data:`SIGNATURES`."""
    if ins.guard is not None:
        _check_reg(ins, names, RegRef(ins.guard[0]), True, "guard")
    key = _signature_key(ins)
    if key is None:
        return  # the lowering refuses it and says why
    forms = SIGNATURES[key]
    n = len(ins.operands)
    matching = [f for f in forms if len(f) == n]
    if not matching:
        counts = " or ".join(str(len(f)) for f in forms)
        expected = " or ".join("(" + ", ".join(f) + ")" if f else "()" for f in forms)
        raise _fail(ins, f"`{key}` takes {counts} operand{'' if counts == '1' else 's'} {expected}, found {n}")
    for pos, (kind, opnd) in enumerate(zip(matching[0], ins.operands), start=1):
        _check_operand(ins, names, kind, opnd, pos)


def _check_unique(kernel: PtxKernel, module: PtxModule) -> None:
    """Parameters, variables and labels each named once (the lowering keys on names)."""
    seen: dict[str, str] = {}
    for what, name in ([("parameter", p.name) for p in kernel.params]
                       + [("variable", v.name) for v in [*module.variables, *kernel.shared]]):
        if name in seen:
            raise InvalidPtx(f"PTX kernel {kernel.name} (line {kernel.line}): {what} `{name}` is declared "
                             f"twice (already a {seen[name]})")
        seen[name] = what
    labels: set[str] = set()
    for x in kernel.body:
        if isinstance(x, PtxLabel):
            if x.name in labels:
                raise InvalidPtx(f"PTX line {x.line}: label `{x.name}` is defined twice")
            labels.add(x.name)


def validate_kernel(module: PtxModule, kernel: PtxKernel) -> None:
    """Raise :class:`InvalidPtx` (naming the PTX line) unless every instruction of
    ``kernel`` has operands of the kinds :data:`SIGNATURES` lists and every name it
    uses is declared. Constructs the machine lacks are not judged here: the lowering
    refuses those with the reason."""
    _check_unique(kernel, module)
    names = _Names(module, kernel)
    for x in kernel.body:
        if isinstance(x, PtxInstr):
            _check_instr(x, names)


# --------------------------------------------------------------------------- machine code


def _bad(where: str, why: str) -> MalformedProgram:
    return MalformedProgram(f"internal error: the lowering produced a malformed program ({where}: {why}); "
                            f"please report it with the kernel")


def _check_machine_instr(ins: isa.Instr, where: str, m: MachineConfig) -> None:
    """One instruction against ``isa.OPERAND_COUNTS`` and the machine's register files."""
    if ins.op not in isa.OPERAND_COUNTS:
        raise _bad(where, f"unknown operation {ins.op!r}")
    nsrc, npsrc, needs_dst = isa.OPERAND_COUNTS[ins.op]
    if len(ins.srcs) != nsrc or len(ins.psrcs) != npsrc:
        raise _bad(where, f"{ins.op.value} takes {nsrc} value and {npsrc} predicate operands, "
                          f"got {len(ins.srcs)} and {len(ins.psrcs)}")
    if needs_dst and ins.dst is None:
        raise _bad(where, f"{ins.op.value} needs a destination")
    if ins.op is Op.ST and ins.dst is not None:
        raise _bad(where, "st has no destination")
    limit = m.preds if ins.writes_pred else m.regs
    if ins.dst is not None and not 0 <= ins.dst < limit:
        raise _bad(where, f"destination {ins.dst} is outside the register file ({limit})")
    for s in ins.srcs:
        if isinstance(s, Reg) and not 0 <= s.index < m.regs:
            raise _bad(where, f"register r{s.index} is outside the machine's {m.regs} rows")
        if isinstance(s, Special) and s.name not in OPERAND_SPECIALS:
            raise _bad(where, f"unknown special register %{s.name}")
        if isinstance(s, Imm) and not 0 <= s.value < 1 << 32:
            raise _bad(where, f"immediate {s.value} is not a 32-bit word")
        if not isinstance(s, (Reg, Imm, Special)):
            raise _bad(where, f"bad operand {s!r}")
    for p in [*ins.psrcs, ins.guard] + ([isa.Pred(ins.pdst)] if ins.pdst is not None else []):
        if p is not None and not 0 <= p.index < m.preds:
            raise _bad(where, f"predicate p{p.index} is outside the machine's {m.preds}")
    if ins.op is Op.SETP and ins.cmp not in isa.CMP_OPS:
        raise _bad(where, f"setp needs a comparison out of {isa.CMP_OPS}")
    if ins.op is Op.SHFL and (ins.mode not in isa.SHFL_MODES or not all(isinstance(s, Imm) for s in ins.srcs[2:])):
        raise _bad(where, "shfl needs a mode and constant clamp and member mask")


def _check_block(block: isa.Block, nblocks: int, m: MachineConfig) -> None:
    """Slots, the model's one-memory-phase rule, and the terminator's targets."""
    where = f"B{block.index}"
    if len(block.instrs) > m.slots_per_block:
        raise _bad(where, f"{len(block.instrs)} instructions in {m.slots_per_block} slots")
    wrote = False
    for slot, ins in enumerate(block.instrs):
        _check_machine_instr(ins, f"{where} slot {slot}: {ins}", m)
        if ins.op in (Op.LD, Op.ATOM_ADD) and wrote:
            raise _bad(where, "a load after a store in one block (the model's loads see the block's start)")
        wrote = wrote or ins.op in (Op.ST, Op.ATOM_ADD)
    t = block.term
    targets = {TermKind.JUMP: [t.target], TermKind.BARRIER: [t.target],
               TermKind.BRANCH: [t.target, t.fallthrough], TermKind.EXIT: []}[t.kind]
    if t.kind is TermKind.BRANCH:
        if t.pred is None or not 0 <= t.pred.index < m.preds:
            raise _bad(where, "a branch needs a predicate of the machine")
        if t.reconv is not None:
            targets.append(t.reconv)
    for x in targets:
        if x is None or not 0 <= x < nblocks:
            raise _bad(where, f"terminator target B{x} is not a block (B0..B{nblocks - 1})")


def check_program(program: isa.Program, machine: MachineConfig) -> None:
    """Raise :class:`MalformedProgram` unless every block and instruction of ``program``
    is well-formed for ``machine`` and the whole program encodes into its ROM: the
    proof, before either backend runs it, that both run the same valid program."""
    if not 1 <= len(program.blocks) <= machine.rom_blocks:
        raise _bad("program", f"{len(program.blocks)} blocks for a ROM of {machine.rom_blocks}")
    if len(program.memory) != machine.mem_words:
        raise _bad("program", f"a memory image of {len(program.memory)} words, not {machine.mem_words}")
    for i, block in enumerate(program.blocks):
        if block.index != i:
            raise _bad(f"block {i}", f"numbered B{block.index}")
        _check_block(block, len(program.blocks), machine)
    try:
        encode_program(program, machine)
    except EncodeError as e:
        raise _bad("ROM encoding", str(e)) from e
