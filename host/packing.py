"""Where straight-line code is cut into machine blocks: the cut that writes fewest tokens.

A machine block runs in one ``EXEC`` step, and every register it writes that a later
step reads comes back down as a ``VAL`` record per active lane (a predicate, as a
``PVAL`` token per lane). So where a run of instructions is cut decides how many
tokens the launch writes: a value computed and consumed inside one block costs
nothing, a value that crosses a cut costs a record per lane. The first cut (greedy,
``form_blocks``) also counts the address arithmetic that dead-code elimination later
removes, and so leaves half-empty blocks.

This stage takes the program after dead-code elimination, works out which virtual
registers and predicates are live after every instruction (liveness at program points
does not depend on the cuts), and gives ``form_blocks`` a cutter that chooses, by
dynamic programming over each run, the cut with the fewest tokens: one ``EXEC`` per
block plus the records of the values that leave it. The cost counts every lane of a
warp as active (the cut is chosen once for all launches of the program).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .ir import LInstr, MBlock
from .regalloc import _data_defs, _data_uses, _liveness, _pred_defs, _pred_uses, _term_pred

Cutter = Callable[[Sequence[LInstr]], list[list[LInstr]]]


def live_after(blocks: list[MBlock]) -> dict[int, tuple[frozenset, frozenset]]:
    """(data, predicate) virtual names live right after each instruction, by ``id``.

    After a block's last instruction that is the block's live-out (its terminator's own
    predicate is read there, so it does not cross into a later block); inside a block
    it includes the terminator's predicate.
    """
    none = lambda b: set()  # noqa: E731
    dout = _liveness(blocks, _data_uses, _data_defs, none)
    pout = _liveness(blocks, _pred_uses, _pred_defs, _term_pred)
    out: dict[int, tuple[frozenset, frozenset]] = {}
    for b in blocks:
        dl, pl = set(dout[b.index]), set(pout[b.index])
        for k, it in enumerate(reversed(b.instrs)):
            out[id(it)] = (frozenset(dl), frozenset(pl))
            if k == 0:
                pl |= _term_pred(b)
            if it.guard is None:
                dl -= _data_defs(it)
                pl -= _pred_defs(it)
            dl |= _data_uses(it)
            pl |= _pred_uses(it)
    return out


def token_cutter(blocks: list[MBlock], slots: int, lanes: int, record_tokens: int,
                 fits: Callable[[list], bool]) -> Cutter:
    """A cutter for ``form_blocks`` that minimises the tokens of the blocks it makes.

    ``blocks``: the program after dead-code elimination (the instructions the cutter
    will be given are these objects); ``fits(instrs)``: whether they may share a block.
    """
    live = live_after(blocks)

    def block_tokens(seg: Sequence[LInstr]) -> int:
        dlive, plive = live[id(seg[-1])]
        regs = set().union(*(_data_defs(it) for it in seg)) & dlive
        preds = set().union(*(_pred_defs(it) for it in seg)) & plive
        return 1 + lanes * (record_tokens * len(regs) + (1 if preds else 0))

    def cut(run: Sequence[LInstr]) -> list[list[LInstr]]:
        n = len(run)
        best: list[tuple[int, int] | None] = [(0, 0)] + [None] * n  # (tokens, start of last block)
        for j in range(1, n + 1):
            for i in range(max(0, j - slots), j):
                seg = list(run[i:j])
                if best[i] is None or not fits(seg):
                    continue
                cost = best[i][0] + block_tokens(seg)
                if best[j] is None or cost < best[j][0]:
                    best[j] = (cost, i)
        segs, j = [], n
        while j > 0:
            i = best[j][1]
            segs.append(list(run[i:j]))
            j = i
        return segs[::-1]

    return cut
