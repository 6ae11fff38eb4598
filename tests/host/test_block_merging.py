"""Block merging keeps every block a shared routine's call returns to.

A routine called from one site returns with a plain jump, so its last block is the one
predecessor of the call's continuation: a straight line to the merge, which would drop
the continuation and leave the call returning to no block. The case is built here
directly from machine blocks, whatever the lowering's stages before it would emit.
"""

from __future__ import annotations

from qwengpu_mlx.core.isa import Imm, Op, Terminator, TermKind
from qwengpu_mlx.host.blocks import _simplify
from qwengpu_mlx.host.ir import LInstr, MBlock

SLOTS = 4


def _moves(n: int, dst: str) -> list[LInstr]:
    return [LInstr(Op.MOV, f"{dst}{k}", (Imm(k),)) for k in range(n)]


def _jump(target: int) -> Terminator:
    return Terminator(TermKind.JUMP, target=target)


def _called_once() -> list[MBlock]:
    """B0 calls the routine at B2 (too full to merge with it), which returns to B1 by a
    jump: B1's only predecessor is the routine's block, and the two fit one block."""
    return [MBlock(0, _moves(3, "%call"), _jump(2), returns_to=1),
            MBlock(1, _moves(1, "%after"), Terminator(TermKind.EXIT)),
            MBlock(2, _moves(3, "%routine"), _jump(1), label="$froutine_add_1")]


def test_a_block_a_call_returns_to_is_not_merged_into_the_routine():
    out = _simplify(_called_once(), SLOTS)
    call = next(b for b in out if b.returns_to is not None)
    back = out[call.returns_to]
    assert [it.dst for it in back.instrs] == ["%after0"] and back.term.kind is TermKind.EXIT
    routine = next(b for b in out if b.label == "$froutine_add_1")
    assert routine.term == Terminator(TermKind.JUMP, target=back.index)


def test_the_same_blocks_without_the_call_merge():
    """Without a call returning to it, the continuation is an ordinary straight line and
    merges with the block before it (the merge itself is unchanged)."""
    blocks = _called_once()
    blocks[0].returns_to = None
    out = _simplify(blocks, SLOTS)
    assert len(out) == 2
    assert [it.dst for it in out[1].instrs] == ["%routine0", "%routine1", "%routine2", "%after0"]
