"""The machine's instruction set: what a ROM block holds.

A program is a list of :class:`Block`. A block holds up to ``slots_per_block``
:class:`Instr` executed in order for the active lanes of one warp, then one
:class:`Terminator` that picks the next block (uniform jump, possibly divergent
branch with its reconvergence block, barrier, or exit). One block for one warp is
one ``EXEC(b, w)`` step of a launch.

Operands are registers (row 0 reads 0), 32-bit immediates or special registers.
Addresses of ``LD``/``ST``/``ATOM`` are byte addresses (PTX's), word-aligned; the
machine's memory is ``mem_words`` 32-bit words.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class Op(str, Enum):
    MOV = "mov"
    ADD = "add"
    SUB = "sub"
    MUL = "mul"  # low 32 bits
    MAD = "mad"  # low 32 bits of a*b + c
    NEG = "neg"
    ABS = "abs"
    MIN = "min"  # .signed selects s32 / u32
    MAX = "max"
    AND = "and"
    OR = "or"
    XOR = "xor"
    NOT = "not"
    SHL = "shl"
    SHR = "shr"  # .signed: arithmetic
    SELP = "selp"  # d = p ? a : b
    SETP = "setp"  # pd = a <cmp> b
    PAND = "pand"  # predicate logic: pd = pa & pb
    POR = "por"
    PXOR = "pxor"
    PNOT = "pnot"
    PMOV = "pmov"
    LD = "ld"
    ST = "st"
    ATOM_ADD = "atom.add"
    SHFL = "shfl"


ALU_BINARY = (Op.ADD, Op.SUB, Op.MUL, Op.MIN, Op.MAX, Op.AND, Op.OR, Op.XOR, Op.SHL, Op.SHR)
ALU_UNARY = (Op.MOV, Op.NEG, Op.ABS, Op.NOT)
PRED_OPS = (Op.PAND, Op.POR, Op.PXOR, Op.PNOT, Op.PMOV)
PRED_WRITING_OPS = frozenset((Op.SETP, *PRED_OPS))
"""Operations whose destination is a predicate (a set: the lowering asks millions of times)."""
MEM_OPS = (Op.LD, Op.ST, Op.ATOM_ADD)

OPERAND_COUNTS: dict[Op, tuple[int, int, bool]] = {
    # op -> (value srcs, predicate srcs, needs a destination); the one table both the
    # reference interpreter's launch check and the host's post-lowering check read
    **{op: (1, 0, True) for op in ALU_UNARY},
    **{op: (2, 0, True) for op in ALU_BINARY},
    Op.MAD: (3, 0, True),
    Op.SELP: (2, 1, True),
    Op.SETP: (2, 0, True),
    Op.PAND: (0, 2, True),
    Op.POR: (0, 2, True),
    Op.PXOR: (0, 2, True),
    Op.PNOT: (0, 1, True),
    Op.PMOV: (0, 1, True),
    Op.LD: (1, 0, True),
    Op.ST: (2, 0, False),
    Op.ATOM_ADD: (2, 0, False),  # its old value is optional
    Op.SHFL: (4, 0, True),
}

CMP_OPS = ("eq", "ne", "lt", "le", "gt", "ge")
SHFL_MODES = ("idx", "up", "down", "bfly")


@dataclass(frozen=True)
class Reg:
    index: int

    def __str__(self) -> str:
        return f"r{self.index}"


@dataclass(frozen=True)
class Imm:
    value: int  # stored as unsigned 32-bit

    def __str__(self) -> str:
        v = self.value
        return str(v - (1 << 32) if v >> 31 else v)


@dataclass(frozen=True)
class Special:
    name: str  # one of machine.SPECIAL_REGISTERS

    def __str__(self) -> str:
        return f"%{self.name}"


@dataclass(frozen=True)
class Pred:
    index: int
    negated: bool = False

    def __str__(self) -> str:
        return f"{'!' if self.negated else ''}p{self.index}"


Operand = Reg | Imm | Special


@dataclass(frozen=True)
class Instr:
    """One machine instruction.

    ``dst`` is a register index (or a predicate index for SETP and predicate ops,
    or None for ST and a result-less ATOM). ``srcs`` are value operands; ``psrcs``
    predicate operands (SELP's selector, predicate-logic inputs). ``guard`` makes
    the instruction run only on lanes where the predicate holds.
    ``signed`` selects s32 for MIN/MAX/SHR/SETP; ``cmp`` is SETP's comparison;
    ``mode`` is SHFL's mode; ``offset`` is the byte offset of a memory operand
    (address = srcs[0] + offset). SHFL srcs are (value, lane/delta, clamp, membermask)
    and ``pdst`` optionally receives its in-range predicate.
    """

    op: Op
    dst: int | None = None
    srcs: tuple[Operand, ...] = ()
    psrcs: tuple[Pred, ...] = ()
    guard: Pred | None = None
    signed: bool = False
    cmp: str | None = None
    mode: str | None = None
    offset: int = 0
    space: str | None = None  # "global" or "shared", for display only
    pdst: int | None = None
    trap: str | None = field(default=None, compare=False)  # the meaning of a fault here, for errors only
    float_dst: bool = field(default=False, compare=False)  # writes a register the PTX declares .f32: shown as a float

    @property
    def writes_pred(self) -> bool:
        return self.op in PRED_WRITING_OPS

    def __str__(self) -> str:
        parts = []
        if self.guard is not None:
            parts.append(f"@{self.guard}")
        name = self.op.value
        if self.cmp:
            name += f".{self.cmp}"
        if self.mode:
            name += f".{self.mode}"
        if self.op in (Op.MIN, Op.MAX, Op.SHR, Op.SETP):
            name += ".s32" if self.signed else ".u32"
        if self.space:
            name += f".{self.space}"
        parts.append(name)
        ops: list[str] = []
        if self.dst is not None:
            ops.append(f"p{self.dst}" if self.writes_pred else f"r{self.dst}")
        if self.pdst is not None:
            ops[-1:] = [f"{ops[-1]}|p{self.pdst}"] if ops else [f"_|p{self.pdst}"]
        if self.op in MEM_OPS:
            addr = f"[{self.srcs[0]}{'+' + str(self.offset) if self.offset else ''}]"
            ops.append(addr)
            ops.extend(str(s) for s in self.srcs[1:])
        else:
            ops.extend(str(s) for s in self.srcs)
        ops.extend(str(p) for p in self.psrcs)
        return " ".join(parts) + (" " + ", ".join(ops) if ops else "")


class TermKind(str, Enum):
    JUMP = "jump"  # uniform: go to target
    BRANCH = "branch"  # per lane: pred ? target : fallthrough; reconverge at reconv
    BARRIER = "barrier"  # bar.sync: wait for the thread block, then go to target
    EXIT = "exit"


@dataclass(frozen=True)
class Terminator:
    kind: TermKind
    target: int | None = None
    fallthrough: int | None = None
    pred: Pred | None = None
    reconv: int | None = None  # immediate post-dominator block, None = exit

    def __str__(self) -> str:
        if self.kind is TermKind.JUMP:
            return f"jump B{self.target}"
        if self.kind is TermKind.BARRIER:
            return f"bar.sync; jump B{self.target}"
        if self.kind is TermKind.EXIT:
            return "exit"
        rc = "exit" if self.reconv is None else f"B{self.reconv}"
        return f"branch @{self.pred} B{self.target} else B{self.fallthrough} (reconverge {rc})"


@dataclass
class Block:
    index: int
    instrs: list[Instr] = field(default_factory=list)
    term: Terminator = field(default_factory=lambda: Terminator(TermKind.EXIT))
    label: str | None = None  # PTX label this block starts at, if any

    def __str__(self) -> str:
        head = f"B{self.index}" + (f" ({self.label})" if self.label else "") + ":"
        body = [f"    {i}" for i in self.instrs]
        return "\n".join([head, *body, f"    {self.term}"])


@dataclass
class ArrayBinding:
    """A pointer parameter bound to words ``base .. base + length - 1`` of memory."""

    name: str
    base: int  # word address
    length: int


@dataclass
class SharedBinding:
    name: str
    base: int
    length: int


@dataclass
class Program:
    """A lowered kernel bound to one launch's arguments: what the ROM and memory get."""

    kernel: str
    blocks: list[Block]
    arrays: list[ArrayBinding]
    shared: list[SharedBinding]
    scalars: dict[str, int]
    memory: list[int]  # initial memory image, mem_words long, unsigned
    regs_used: int
    preds_used: int
    block_dim: int
    grid_dim: int

    def listing(self) -> str:
        return "\n".join(str(b) for b in self.blocks)

    def word_names(self) -> dict[int, str]:
        """Memory word -> ``array[i]`` for every word of a global array or ``__shared__`` variable."""
        return {a.base + i: f"{a.name}[{i}]" for a in [*self.arrays, *self.shared] for i in range(a.length)}
