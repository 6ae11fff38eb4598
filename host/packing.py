"""Where straight-line code is cut into machine blocks: the order and cut that write fewest tokens.

A machine block runs in one ``EXEC`` step, and every register it writes that a later
step reads comes back down as a ``VAL`` record per active lane (a predicate, as a
``PVAL`` token per lane). So where a run of instructions is cut decides how many
tokens the launch writes: a value computed and consumed inside one block costs
nothing, a value that crosses a cut costs a record per lane. The first cut (greedy,
``form_blocks``) also counts the address arithmetic that dead-code elimination later
removes, and so leaves half-empty blocks.

This stage takes the program after dead-code elimination and gives ``form_blocks`` a
cutter that, for each run of instructions between barriers, tries the orders the
run's dependencies allow (all of them for a short run, else the source order) and for
each the cut with the fewest tokens, by dynamic programming: one ``EXEC`` per block
plus the records of the values that leave it. The cost counts every lane of a warp as
active (the cut is chosen once for all launches of the program). Memory operations
keep their order among themselves, so every load sees the stores it saw before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import islice

from qwengpu_mlx.core.isa import Op, Special

from qwengpu_mlx.host.ir import LInstr, MBlock, VReg
from qwengpu_mlx.host.regalloc import _data_defs, _data_uses, _liveness, _pred_defs, _pred_uses, _term_pred, live_before

Cutter = Callable[[Sequence[LInstr]], list[list[LInstr]]]
MEMORY_OPS = (Op.LD, Op.ST, Op.ATOM_ADD)
LANE_SPECIALS = ("tid.x", "laneid", "tid.x*4")  # the special registers that differ between lanes
REORDER_UP_TO = 7
"""Runs of at most this many instructions try every order their dependencies allow."""
MAX_ORDERS = 2000
"""Orders tried per run at most (in the order a depth-first walk meets them)."""


def run_ends(blocks: list[MBlock]) -> dict[int, tuple[frozenset, frozenset, frozenset]]:
    """Per block's last instruction (by ``id``): (data live-out, predicate live-out, the
    terminator's own predicate: read at the block's end, so live everywhere inside)."""
    none = lambda b: set()  # noqa: E731
    dout = _liveness(blocks, _data_uses, _data_defs, none)
    pout = _liveness(blocks, _pred_uses, _pred_defs, _term_pred)
    return {id(b.instrs[-1]): (frozenset(dout[b.index]), frozenset(pout[b.index]), frozenset(_term_pred(b)))
            for b in blocks if b.instrs}


def uniform_values(blocks: list[MBlock]) -> set[str]:
    """Virtual registers whose every definition gives each lane of a warp the same value.

    Computed from immediates, the warp's uniform special registers and other such
    registers by an unguarded instruction that is not a shuffle or an atomic: their
    ``VAL`` records come back as one ``VALU`` (an estimate for the cost model: a lane
    that missed a definition under divergence may hold another value, which costs tokens,
    never correctness)."""
    defs: dict[str, list[LInstr]] = {}
    for b in blocks:
        for it in b.instrs:
            for d in _data_defs(it):
                defs.setdefault(d, []).append(it)
    uniform = set(defs)
    changed = True
    while changed:
        changed = False
        for name in sorted(uniform):
            if not all(_uniform_def(it, uniform) for it in defs[name]):
                uniform.discard(name)
                changed = True
    return uniform


def _uniform_def(it: LInstr, uniform: set[str]) -> bool:
    if it.guard is not None or it.op in (Op.SHFL, Op.ATOM_ADD) or it.psrcs:
        return False
    for src in it.srcs:
        if isinstance(src, Special) and src.name in LANE_SPECIALS:
            return False
        if isinstance(src, VReg) and src.name not in uniform:
            return False
    return True


def _live_after(order: Sequence[LInstr], end: tuple) -> list[tuple[set, set]]:
    """(data, predicate) live right after each instruction of ``order``."""
    dl, pl = set(end[0]), set(end[1])
    out: list[tuple[set, set]] = [None] * len(order)  # type: ignore[list-item]
    for k in range(len(order) - 1, -1, -1):
        out[k] = (set(dl), set(pl))
        if k == len(order) - 1:
            pl |= end[2]
        live_before(order[k], dl, pl)
    return out


def _depends(later: LInstr, earlier: LInstr) -> bool:
    """Whether ``later`` must stay after ``earlier`` (a register or predicate either writes
    and the other reads or writes; two memory operations)."""
    if later.op in MEMORY_OPS and earlier.op in MEMORY_OPS:
        return True
    wd, wp = _data_defs(earlier), _pred_defs(earlier)
    ud, up = _data_uses(later) | _data_defs(later), _pred_uses(later) | _pred_defs(later)
    if wd & ud or wp & up:
        return True
    return bool(_data_defs(later) & _data_uses(earlier) or _pred_defs(later) & _pred_uses(earlier))


def _orders(run: Sequence[LInstr]):
    """The run's instruction orders its dependencies allow, the source order first."""
    n = len(run)
    if n > REORDER_UP_TO:
        yield list(run)
        return
    before = [{i for i in range(k) if _depends(run[k], run[i])} for k in range(n)]

    def walk(done: list[int], left: list[int]):
        if not left:
            yield [run[i] for i in done]
            return
        placed = set(done)
        for k in left:
            if before[k] <= placed:
                yield from walk(done + [k], [j for j in left if j != k])

    yield from islice(walk([], list(range(n))), MAX_ORDERS)


def token_cutter(blocks: list[MBlock], slots: int, lanes: int, record_tokens: int,
                 fits: Callable[[list], bool]) -> Cutter:
    """A cutter for ``form_blocks`` that minimises the tokens of the blocks it makes.

    ``blocks``: the program after dead-code elimination (the runs the cutter is given
    hold these instruction objects); ``fits(instrs)``: whether they may share a block.
    """
    ends = run_ends(blocks)
    uniform = uniform_values(blocks)

    def best_cut(order: list[LInstr], live: list) -> tuple[int, list[list[LInstr]]]:
        n = len(order)
        best: list[tuple[int, int] | None] = [(0, 0)] + [None] * n  # (tokens, start of last block)
        for j in range(1, n + 1):
            dlive, plive = live[j - 1]
            for i in range(max(0, j - slots), j):
                seg = order[i:j]
                if best[i] is None or not fits(seg):
                    continue
                regs = set().union(*(_data_defs(it) for it in seg)) & dlive
                preds = set().union(*(_pred_defs(it) for it in seg)) & plive
                records = len(regs & uniform) + lanes * len(regs - uniform)  # a VALU for a uniform value
                cost = best[i][0] + 1 + record_tokens * records + (lanes if preds else 0)
                if best[j] is None or cost < best[j][0]:
                    best[j] = (cost, i)
        segs, j = [], n
        while j > 0:
            i = best[j][1]
            segs.append(order[i:j])
            j = i
        return best[n][0], segs[::-1]

    def cut(run: Sequence[LInstr]) -> list[list[LInstr]]:
        end = ends[id(run[-1])]
        found = None
        for order in _orders(run):
            cost, segs = best_cut(order, _live_after(order, end))
            if found is None or cost < found[0]:
                found = (cost, segs)
        return found[1]

    return cut
