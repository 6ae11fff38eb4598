"""The lowering's intermediate representation: machine instructions over virtual registers.

``translate.py`` builds it from PTX and ``regalloc.py`` rewrites it onto the machine's
registers; both import it from here, so neither needs the other's module.

* ``VReg`` / ``VPred``: a virtual register / predicate (a PTX register name), a
  predicate maybe negated where it is read.
* ``LInstr``: one machine operation (``isa.Op``) over virtual registers, immediates
  and special registers, with its guard and the PTX line it came from.
* Before blocks are formed (stages 1-2: ``translate.py``, ``fold.py``): ``LBarrier``
  (``bar.sync``), ``LParamLoad`` (``ld.param``, a constant once arguments are bound), ``LConst`` (a
  constant or ``.shared`` address move), ``LTerm`` (a basic block's ``bra``/``exit``)
  and ``BasicBlock`` (a PTX label's straight-line items and terminator).
* After (stage 3 on): ``MBlock``, one machine block of at most ``slots_per_block``
  ``LInstr`` ending in an ``isa.Terminator``; ``successors`` gives its CFG edges.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from qwengpu_mlx.core.isa import PRED_WRITING_OPS, Op, Terminator, TermKind


@dataclass(frozen=True)
class VReg:
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class VPred:
    name: str
    negated: bool = False

    def __str__(self) -> str:
        return ("!" if self.negated else "") + self.name


@dataclass
class LInstr:
    """One machine instruction over virtual registers, remembering its PTX origin."""

    op: Op
    dst: str | None = None  # vreg (or vpred for predicate-writing ops)
    srcs: tuple = ()  # VReg | Imm | Special
    psrcs: tuple[VPred, ...] = ()
    guard: VPred | None = None
    signed: bool = False
    cmp: str | None = None
    mode: str | None = None
    offset: int = 0
    space: str | None = None
    pdst: str | None = None
    line: int = 0
    text: str = ""
    src: object = None  # the .cu line (``srcloc.SourceLoc``) of the PTX instruction, if known
    trap: str | None = None  # what a fault of this instruction means (a division's zero divisor)

    @property
    def writes_pred(self) -> bool:
        return self.op in PRED_WRITING_OPS


@dataclass
class LBarrier:
    line: int = 0


@dataclass
class LTerm:
    """End of a basic block: ``bra`` (maybe guarded), ``ret``/``exit`` (maybe guarded)."""

    kind: str  # "bra" | "exit"
    target: str | None = None
    guard: VPred | None = None
    line: int = 0
    returns_to: str | None = None  # a call of a shared routine (``float_routines``): where it comes back


@dataclass
class LLabel:
    """A label inside one PTX instruction's expansion (a division's loops): a basic block starts here."""

    name: str


@dataclass
class LParamLoad:
    """``ld.param``: becomes a constant once arguments are bound."""

    dst: str
    param: str
    line: int = 0
    bits: int = 32  # a sub-word parameter (short, char) keeps only its low bits...
    signed: bool = False  # ...extended by its type's signedness, as ld.param.s16 does


@dataclass
class LConst:
    """``mov %r, <constant or symbol address>`` and friends before folding."""

    dst: str
    value: int | str  # int, or the name of a .shared variable (its byte address)
    line: int = 0


@dataclass
class BasicBlock:
    label: str | None
    items: list = field(default_factory=list)  # LInstr | LBarrier | LParamLoad | LConst
    term: LTerm | None = None  # None: falls through


@dataclass
class MBlock:
    """A machine block over virtual registers (before register allocation)."""

    index: int
    instrs: list[LInstr]
    term: Terminator
    label: str | None = None
    term_pred: VPred | None = None  # the branch predicate, as a virtual predicate
    returns_to: int | None = None  # a jump that calls a shared routine: the block its return continues at


def successors(t: Terminator) -> list[int]:
    """Blocks a terminator can go to next (a branch's two sides once, an exit none)."""
    if t.kind is TermKind.EXIT:
        return []
    if t.kind is TermKind.BRANCH:
        return list(dict.fromkeys([t.target, t.fallthrough]))
    return [t.target]
