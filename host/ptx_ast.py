"""The parsed form of a PTX module: what the parser makes and the lowering reads.

Kept deliberately close to PTX text: an instruction is its opcode, its dot-modifiers
in order and its operands, so the lowering can name any unsupported construct
exactly as the user's PTX spells it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from qwengpu_mlx.host.srcloc import SourceLoc


@dataclass(frozen=True)
class RegRef:
    name: str  # "%r1", "%rd4", "%p2"


@dataclass(frozen=True)
class SpecialRef:
    name: str  # "tid.x", "ntid.x", "ctaid.x", "nctaid.x", "laneid", "warpid" (no "%")


@dataclass(frozen=True)
class ImmRef:
    value: int  # as written (may be negative); floats are rejected by the parser


@dataclass(frozen=True)
class SymRef:
    name: str  # a parameter, a .shared/.global variable, or a label


@dataclass(frozen=True)
class MemRef:
    base: RegRef | SymRef | ImmRef
    offset: int = 0  # byte offset, "[%rd1+8]"


@dataclass(frozen=True)
class PairRef:
    """A ``d|p`` destination, as in ``shfl.sync.idx.b32 %r1|%p1, ...``."""

    first: RegRef
    second: RegRef


@dataclass(frozen=True)
class VecRef:
    """A vector operand of ``ld``/``st`` ``.v2``/``.v4``: ``{%f1, %f2, %f3, %f4}``, its elements in order."""

    elements: tuple[RegRef | ImmRef, ...]


PtxOperand = RegRef | SpecialRef | ImmRef | SymRef | MemRef | PairRef | VecRef


@dataclass
class PtxInstr:
    opcode: str  # "add", "ld", "setp", "shfl", "bra", ...
    mods: tuple[str, ...]  # ("s32",), ("global", "u32"), ("sync", "idx", "b32"), ...
    operands: list[PtxOperand]
    guard: tuple[str, bool] | None = None  # ("%p1", negated)
    line: int = 0  # 1-based line in the PTX text
    text: str = ""  # the instruction as written, for error messages
    src: SourceLoc | None = None  # the .cu line it came from (PTX .loc), where the PTX says


@dataclass
class PtxLabel:
    name: str
    line: int = 0


@dataclass
class PtxParam:
    name: str
    type: str  # "u64", "u32", "s32", "f32", ...


@dataclass
class PtxVar:
    """A module- or kernel-level ``.shared`` (or ``.global``) array."""

    name: str
    space: str  # "shared" or "global"
    elem_type: str  # "b8", "u32", ...
    size_bytes: int
    align: int = 4
    line: int = 0


@dataclass
class PtxKernel:
    name: str  # as in the PTX (unmangled when declared extern "C")
    params: list[PtxParam]
    body: list[PtxInstr | PtxLabel]
    reg_decls: dict[str, tuple[str, int]] = field(default_factory=dict)  # "%r" -> ("b32", 12)
    shared: list[PtxVar] = field(default_factory=list)  # kernel-scope .shared vars
    line: int = 0


@dataclass
class PtxModule:
    version: str
    target: str
    address_size: int
    kernels: list[PtxKernel]
    variables: list[PtxVar] = field(default_factory=list)  # module-scope .shared/.global
    text: str = ""
