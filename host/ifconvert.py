"""Short forward branches become guarded instructions: fewer steps, no divergence records.

A divergent branch costs the launch a SIMT stack push (``ENT`` records), warp status
changes (``WST``), an ``EXEC`` for each side and the reconvergence, and it splits the
code around it into more blocks, whose values come back down as ``VAL`` records. The
machine guards every instruction per lane (an instruction whose guard fails keeps the
old value, stores and loads nothing, cannot fault), so a short straight-line body that
a branch skips can run guarded instead: ``@p bra L; body; L:`` becomes ``@!p body``,
and ``@p exit; rest`` becomes ``@!p rest`` when the rest is straight-line.

Only bodies of plain instructions are converted: no barrier, no shuffle (it reads other
lanes), no instruction that already has a guard, none that writes the guard's
predicate. A pure instruction (not a load) whose result is dead where the branch
joins needs no guard at all: on the lanes that skip, nobody reads what it wrote. A
guard whose failing lanes keep a value the program never wrote reads the machine's
row as an earlier thread block left it (the reference starts each block from 0): in a
launch of several thread blocks such a register is set to 0 first.
This works on basic blocks (``ir.BasicBlock``) and returns new ones; the lowering
falls back to the unconverted program when the guards would need more registers.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

from qwengpu_mlx.core.isa import Imm, Op

from qwengpu_mlx.host.ir import BasicBlock, LInstr, VPred
from qwengpu_mlx.host.regalloc import PURE_OPS, _data_defs, _pred_defs, live_before

MAX_BODY = 9
"""Instructions a converted body may have: every lane runs them, taken or not."""


def if_convert(bbs: list[BasicBlock], *, zero_rows: bool, max_body: int = MAX_BODY) -> list[BasicBlock]:
    """The basic blocks with every convertible short forward branch converted.

    ``zero_rows``: every register the program has not written reads 0 on the machine
    as in the reference (a launch of one thread block: its rows start empty); else a
    guarded write to such a register is given a value first (``_defined``).
    The first convertible branch from the top is converted, then the scan starts over
    (converting an inner branch can make an enclosing one convertible); liveness is
    carried from one conversion to the next (``_live_after``), so a kernel of many
    branches lowers in time linear in its branches, not quadratic.
    """
    bbs = [replace(b, items=list(b.items)) for b in bbs]
    live = _live_in(bbs)
    shape = _Shape.of(bbs)
    k = 0
    while k < len(bbs):
        done = _convert_at(bbs, k, live, shape, max_body, zero_rows)
        if done is None:
            k += 1
        else:
            bbs, live = done
            shape, k = _Shape.of(bbs), 0
    return bbs


@dataclass(frozen=True)
class _Shape:
    """Where each label is and how many branches target it, for one list of blocks."""

    at: dict[str, int]
    refs: Counter

    @classmethod
    def of(cls, bbs: list[BasicBlock]) -> _Shape:
        return cls({b.label: j for j, b in enumerate(bbs) if b.label is not None},
                   Counter(b.term.target for b in bbs if b.term is not None and b.term.kind == "bra"))


def _convert_at(bbs: list[BasicBlock], k: int, live: list[tuple[set, set]], shape: _Shape,
                max_body: int, zero_rows: bool) -> tuple[list[BasicBlock], list[tuple[set, set]]] | None:
    """``bbs`` with the branch ending block ``k`` converted, and their liveness; None
    when it cannot be converted."""
    a, t = bbs[k], bbs[k].term
    if t is None or t.guard is None:
        return None
    if t.kind == "bra":
        end = shape.at.get(t.target, -1)
        if end <= k:
            return None  # a backward branch (a loop) or an unknown label
    else:
        end = len(bbs)  # a guarded exit: the body is the rest of the kernel
    body = bbs[k + 1:end]
    if any(b.label is not None and shape.refs[b.label] for b in body):
        return None  # something else jumps into the body
    if any(b.term is not None for b in body[:-1]) or (body and not _plain_end(body[-1], t.kind)):
        return None
    instrs = [it for b in body for it in b.items]
    if not instrs or len(instrs) > max_body or not all(_convertible(it, t.guard) for it in instrs):
        return None
    dlive, plive = live[end] if end < len(bbs) else (set(), set())
    skip = VPred(t.guard.name, not t.guard.negated)
    guarded = [_guarded(it, skip, dlive, plive) for it in instrs]
    first = [] if zero_rows else _defined(guarded, live[k + 1][0])
    merged = BasicBlock(a.label, a.items + first + guarded, None)
    rest = bbs[end:]
    if t.kind == "exit":
        merged.term = body[-1].term
    elif shape.refs[t.target] == 1:  # the join has no other way in: it continues this block
        merged.items += rest[0].items
        merged.term = rest[0].term
        rest = rest[1:]
    out = bbs[:k] + [merged] + rest
    out_live = _live_after(out, k, live[len(live) - len(rest):])
    entry = out_live[0]
    if not zero_rows and not (entry[0] <= live[0][0] and entry[1] <= live[0][1]):
        return None  # a guard would keep a value no path defined (a register's stale row)
    return out, out_live


def _live_after(out: list[BasicBlock], k: int, tail: list[tuple[set, set]]) -> list[tuple[set, set]]:
    """Liveness of ``out``, whose blocks after ``k`` are the old program's, unchanged:
    their liveness (``tail``) still holds unless one of them branches back to ``k`` or
    before it; then everything is recomputed."""
    at = {b.label: j for j, b in enumerate(out[:k + 1]) if b.label is not None}
    if any(b.term is not None and b.term.kind == "bra" and b.term.target in at for b in out[k + 1:]):
        return _live_in(out)
    return _live_in(out, tail)


def _defined(guarded: list[LInstr], live_before: set) -> list[LInstr]:
    """``mov r, 0`` for each register a guarded instruction writes that holds no value yet.

    A lane whose guard fails keeps the old value, and a register the program has not
    written holds whatever an earlier thread block left in the machine's row (the
    reference starts each block from 0): so it is given a value first. Registers a
    body reads before writing are live before it and already hold one.
    """
    fresh: list[str] = []
    for it in guarded:
        if it.guard is not None and it.dst is not None and not it.writes_pred and it.dst not in live_before \
                and it.dst not in fresh:
            fresh.append(it.dst)
    return [LInstr(Op.MOV, d, (Imm(0),), line=guarded[0].line, text="mov 0 (a guarded write's old value)",
                   src=guarded[0].src) for d in fresh]


def _plain_end(last: BasicBlock, kind: str) -> bool:
    """A body's last block falls through to the join (or, after a guarded exit, ends the kernel)."""
    if kind == "bra":
        return last.term is None
    return last.term is None or (last.term.kind == "exit" and last.term.guard is None)


def _convertible(it, guard: VPred) -> bool:
    return (isinstance(it, LInstr) and it.guard is None and it.op is not Op.SHFL
            and guard.name not in _pred_defs(it))


def _guarded(it: LInstr, guard: VPred, dlive: set, plive: set) -> LInstr:
    """The instruction as the body's lanes run it: guarded unless its result is dead at the join."""
    dead_after = not (_data_defs(it) & dlive) and not (_pred_defs(it) & plive)
    if it.op in PURE_OPS and it.op is not Op.LD and dead_after:
        return it
    return replace(it, guard=guard)


def _live_in(bbs: list[BasicBlock], tail: list[tuple[set, set]] = ()) -> list[tuple[set, set]]:
    """(data, predicate) virtual names live on entry to each basic block, by position.

    ``tail``: the known liveness of the last ``len(tail)`` blocks, none of which can
    reach a block before them; only the blocks before them are solved.
    """
    at = {b.label: j for j, b in enumerate(bbs) if b.label is not None}

    def succ(j: int) -> list[int]:
        t = bbs[j].term
        out = [j + 1] if (t is None or t.guard is not None) and j + 1 < len(bbs) else []
        if t is not None and t.kind == "bra" and t.target in at:
            out.append(at[t.target])
        return out

    solved = len(bbs) - len(tail)
    live = [(set(), set()) for _ in range(solved)] + list(tail)
    changed = True
    while changed:
        changed = False
        for j in reversed(range(solved)):
            dl = set().union(*(live[s][0] for s in succ(j)))
            pl = set().union(*(live[s][1] for s in succ(j)))
            t = bbs[j].term
            if t is not None and t.guard is not None:
                pl.add(t.guard.name)
            for it in reversed(bbs[j].items):
                if isinstance(it, LInstr):
                    live_before(it, dl, pl)
            if (dl, pl) != live[j]:
                live[j], changed = (dl, pl), True
    return live
