"""Tests of the reference interpreter on hand-built programs.

Expected values are written from the meaning of each instruction (literals or plain
Python arithmetic), never from the interpreter.
"""

from __future__ import annotations

import pytest

from qwengpu_mlx.core import isa
from qwengpu_mlx.core.errors import BarrierDeadlock, MemoryFault, ResourceError, StepBudgetExceeded
from qwengpu_mlx.core.reference import RunResult, StepRecord, format_step
from qwengpu_mlx.core.reference import run_program as _run_program
from qwengpu_mlx.core.isa import Op, TermKind
from qwengpu_mlx.core.machine import MachineConfig

# These hand-built programs use blocks of up to 4 instructions: the interpreter's
# semantics do not depend on the block size, so they run on a 4-slot machine.
PUBLISHED_MACHINE = MachineConfig(slots_per_block=4)


def run_program(program, machine=None, **kw):
    return _run_program(program, machine or PUBLISHED_MACHINE, **kw)

MASK32 = 0xFFFFFFFF
INT_MIN = 0x80000000
WORDS = PUBLISHED_MACHINE.mem_words

# --------------------------------------------------------------------------- helpers


def r(i: int) -> isa.Reg:
    return isa.Reg(i)


def imm(v: int) -> isa.Imm:
    return isa.Imm(v & MASK32)


def sp(name: str) -> isa.Special:
    return isa.Special(name)


def p(i: int, neg: bool = False) -> isa.Pred:
    return isa.Pred(i, neg)


TID, LANE, WARP, CTA = sp("tid.x"), sp("laneid"), sp("warpid"), sp("ctaid.x")


def I(op: Op, dst=None, *srcs, **kw) -> isa.Instr:  # noqa: E743
    """``I(Op.ADD, 3, r(1), imm(2), guard=p(1))``: integers in srcs are immediates."""
    srcs = tuple(imm(s) if isinstance(s, int) else s for s in srcs)
    return isa.Instr(op, dst, srcs, **kw)


def mov(d, a, **kw):
    return I(Op.MOV, d, a, **kw)


def setp(cmp, pd, a, b, signed=False, **kw):
    return I(Op.SETP, pd, a, b, cmp=cmp, signed=signed, **kw)


def st(addr, val, offset=0, **kw):
    return I(Op.ST, None, addr, val, offset=offset, **kw)


def ld(d, addr, offset=0, **kw):
    return I(Op.LD, d, addr, offset=offset, **kw)


def jump(b):
    return isa.Terminator(TermKind.JUMP, target=b)


def branch(pred, t, f, reconv):
    return isa.Terminator(TermKind.BRANCH, target=t, fallthrough=f, pred=pred, reconv=reconv)


def bar(b):
    return isa.Terminator(TermKind.BARRIER, target=b)


EXIT = isa.Terminator(TermKind.EXIT)


def prog(*blocks, block_dim=4, grid_dim=1, mem=None) -> isa.Program:
    """``prog([instr, ...], term, [instr, ...], term, ...)``: blocks numbered by position;
    ``mem`` maps word -> initial value."""
    assert len(blocks) % 2 == 0
    bs = [isa.Block(i // 2, list(blocks[i]), blocks[i + 1]) for i in range(0, len(blocks), 2)]
    memory = [0] * WORDS
    for w, v in (mem or {}).items():
        memory[w] = v & MASK32
    return isa.Program("k", bs, [], [], {}, memory, 16, 8, block_dim, grid_dim)


def straight(instrs, block_dim=4, grid_dim=1, mem=None, term=EXIT) -> isa.Program:
    """A straight-line program: ``instrs`` cut into blocks of 4 linked by jumps."""
    chunks = [instrs[i : i + 4] for i in range(0, len(instrs), 4)] or [[]]
    parts = []
    for i, c in enumerate(chunks):
        parts += [c, jump(i + 1) if i + 1 < len(chunks) else term]
    return prog(*parts, block_dim=block_dim, grid_dim=grid_dim, mem=mem)


def shape(res: RunResult):
    """The trace as (block, warp, mask) triples."""
    return [(s.block, s.warp, s.mask) for s in res.trace]


def lane_regs(res: RunResult, reg: int, warp: int = 0):
    return [res.registers[warp][lane][reg] for lane in range(PUBLISHED_MACHINE.lanes)]


def lane_preds(res: RunResult, pred: int, warp: int = 0):
    return [res.predicates[warp][lane][pred] for lane in range(PUBLISHED_MACHINE.lanes)]


# --------------------------------------------------------------------------- ALU

ALU_CASES = [
    # op, signed, a, b, expected
    (Op.ADD, False, MASK32, 1, 0),
    (Op.ADD, False, 0x7FFFFFFF, 1, INT_MIN),
    (Op.ADD, False, 0xFFFFFFF0, 0x20, 0x10),
    (Op.SUB, False, 0, 1, MASK32),
    (Op.SUB, False, INT_MIN, 1, 0x7FFFFFFF),
    (Op.MUL, False, 0x10000, 0x10000, 0),
    (Op.MUL, False, MASK32, MASK32, 1),  # (-1) * (-1)
    (Op.MUL, False, 0x12345678, 0x9ABCDEF0, (0x12345678 * 0x9ABCDEF0) % 2**32),
    (Op.MUL, False, (-3) & MASK32, 7, (-21) & MASK32),
    (Op.AND, False, 0xF0F0F0F0, 0xFF00FF00, 0xF000F000),
    (Op.OR, False, 0xF0F0F0F0, 0x0F000000, 0xFFF0F0F0),
    (Op.XOR, False, 0xFFFF0000, 0xFF00FF00, 0x00FFFF00),
    (Op.MIN, True, MASK32, 1, MASK32),  # min.s32(-1, 1) = -1
    (Op.MIN, False, MASK32, 1, 1),  # min.u32(0xffffffff, 1) = 1
    (Op.MAX, True, MASK32, 1, 1),
    (Op.MAX, False, MASK32, 1, MASK32),
    (Op.MIN, True, INT_MIN, 0x7FFFFFFF, INT_MIN),
    (Op.MAX, True, INT_MIN, 0x7FFFFFFF, 0x7FFFFFFF),
    (Op.MAX, False, INT_MIN, 0x7FFFFFFF, INT_MIN),
    (Op.SHL, False, 1, 31, INT_MIN),
    (Op.SHL, False, 0x12345678, 4, 0x23456780),
    (Op.SHL, False, 1, 32, 0),
    (Op.SHL, False, 1, 33, 0),  # not 1 << (33 % 32)
    (Op.SHL, False, 1, MASK32, 0),  # amount is unsigned: 4294967295 >= 32
    (Op.SHR, False, INT_MIN, 4, 0x08000000),
    (Op.SHR, True, INT_MIN, 4, 0xF8000000),
    (Op.SHR, True, 0x70000000, 4, 0x07000000),
    (Op.SHR, False, MASK32, 31, 1),
    (Op.SHR, False, MASK32, 32, 0),
    (Op.SHR, False, MASK32, 100, 0),
    (Op.SHR, True, MASK32 - 7, 32, MASK32),  # -8 >> 32 = sign fill
    (Op.SHR, True, INT_MIN, MASK32, MASK32),  # amount unsigned, huge
    (Op.SHR, True, 0x7FFFFFFF, 40, 0),
    (Op.SHR, True, (-9) & MASK32, 1, (-5) & MASK32),  # arithmetic shift floors
]


@pytest.mark.parametrize("op,signed,a,b,expected", ALU_CASES)
def test_binary_alu(op, signed, a, b, expected):
    res = run_program(
        straight([mov(1, a), mov(2, b), I(op, 3, r(1), r(2), signed=signed), I(op, 4, a, b, signed=signed)])
    )
    assert lane_regs(res, 3) == [expected] * 4
    assert lane_regs(res, 4) == [expected] * 4


@pytest.mark.parametrize(
    "op,a,expected",
    [
        (Op.NEG, 5, (-5) & MASK32),
        (Op.NEG, INT_MIN, INT_MIN),
        (Op.NEG, 0, 0),
        (Op.ABS, (-5) & MASK32, 5),
        (Op.ABS, INT_MIN, INT_MIN),
        (Op.ABS, 7, 7),
        (Op.NOT, 0, MASK32),
        (Op.NOT, 0x0F0F0F0F, 0xF0F0F0F0),
        (Op.MOV, 0xDEADBEEF, 0xDEADBEEF),
    ],
)
def test_unary_alu(op, a, expected):
    res = run_program(straight([mov(1, a), I(op, 2, r(1))]))
    assert lane_regs(res, 2) == [expected] * 4


def test_mad_keeps_low_32_bits():
    a, b, c = 0x89ABCDEF, 0x12345, 0xFFFFFFFF
    res = run_program(straight([mov(1, a), mov(2, b), mov(3, c), I(Op.MAD, 4, r(1), r(2), r(3))]))
    assert lane_regs(res, 4) == [(a * b + c) % 2**32] * 4


def test_per_lane_operands_and_specials():
    # r1 = laneid * 3 + 1000, per lane
    res = run_program(straight([I(Op.MAD, 1, LANE, 3, 1000), I(Op.SUB, 2, 0, LANE)]))
    assert lane_regs(res, 1) == [1000, 1003, 1006, 1009]
    assert lane_regs(res, 2) == [0, MASK32, MASK32 - 1, MASK32 - 2]


# --------------------------------------------------------------------------- predicates

CMP_CASES = [
    # cmp, signed, a, b, expected
    ("lt", True, MASK32, 1, True),  # -1 < 1
    ("lt", False, MASK32, 1, False),  # 4294967295 < 1
    ("le", True, 5, 5, True),
    ("le", False, 6, 5, False),
    ("gt", True, 1, MASK32, True),
    ("gt", False, 1, MASK32, False),
    ("ge", True, INT_MIN, 0x7FFFFFFF, False),
    ("ge", False, INT_MIN, 0x7FFFFFFF, True),
    ("eq", False, 7, 7, True),
    ("eq", True, 7, 8, False),
    ("ne", False, 7, 8, True),
    ("ne", True, MASK32, MASK32, False),
]


@pytest.mark.parametrize("cmp,signed,a,b,expected", CMP_CASES)
def test_setp(cmp, signed, a, b, expected):
    res = run_program(
        straight(
            [
                mov(1, a),
                mov(2, b),
                setp(cmp, 3, r(1), r(2), signed=signed),
                I(Op.SELP, 4, 111, 222, psrcs=(p(3),)),
            ]
        )
    )
    assert lane_preds(res, 3) == [expected] * 4
    assert lane_regs(res, 4) == [111 if expected else 222] * 4


def test_predicate_logic_with_negated_operands():
    # p1 = lane < 2 : T T F F ; p2 = lane is odd : F T F T
    res = run_program(
        straight(
            [
                setp("lt", 1, LANE, 2),
                I(Op.AND, 1, LANE, 1),
                setp("ne", 2, r(1), 0),
                I(Op.PAND, 3, psrcs=(p(1), p(2))),
                I(Op.POR, 4, psrcs=(p(1), p(2))),
                I(Op.PXOR, 5, psrcs=(p(1), p(2))),
                I(Op.PNOT, 6, psrcs=(p(1),)),
                I(Op.PMOV, 7, psrcs=(p(2, neg=True),)),
                I(Op.PAND, 0, psrcs=(p(1, neg=True), p(2))),
                I(Op.SELP, 2, 5, 6, psrcs=(p(1, neg=True),)),
            ]
        )
    )
    assert lane_preds(res, 3) == [False, True, False, False]
    assert lane_preds(res, 4) == [True, True, False, True]
    assert lane_preds(res, 5) == [True, False, False, True]
    assert lane_preds(res, 6) == [False, False, True, True]
    assert lane_preds(res, 7) == [True, False, True, False]
    assert lane_preds(res, 0) == [False, False, False, True]  # p0 is an ordinary predicate
    assert lane_regs(res, 2) == [6, 6, 5, 5]


def test_guards_run_per_lane():
    res = run_program(
        straight(
            [
                setp("lt", 1, LANE, 2),
                mov(2, 7, guard=p(1)),
                mov(2, 9, guard=p(1, neg=True)),
                I(Op.ADD, 3, r(2), 1, guard=p(1, neg=True)),
            ]
        )
    )
    assert lane_regs(res, 2) == [7, 7, 9, 9]
    assert lane_regs(res, 3) == [0, 0, 10, 10]
    # guard-failing lanes write nothing
    assert res.trace[0].reg_writes == [(0, 2, 7), (1, 2, 7), (2, 2, 9), (3, 2, 9), (2, 3, 10), (3, 3, 10)]
    assert res.trace[0].pred_writes == [(0, 1, True), (1, 1, True), (2, 1, False), (3, 1, False)]


def test_register_zero_reads_zero_and_writes_are_dropped():
    res = run_program(straight([mov(0, 5), I(Op.ADD, 1, r(0), 3), I(Op.ADD, 0, r(1), r(1)), mov(2, r(0))]))
    assert lane_regs(res, 0) == [0] * 4
    assert lane_regs(res, 1) == [3] * 4
    assert lane_regs(res, 2) == [0] * 4
    assert all(reg != 0 for _, reg, _ in res.trace[0].reg_writes)
    assert res.trace[0].reg_writes == [(lane, 1, 3) for lane in range(4)] + [(lane, 2, 0) for lane in range(4)]


def test_instructions_run_in_order_for_all_lanes():
    # each instruction completes for every lane before the next: r2 sees r1 of its own lane
    res = run_program(straight([mov(1, LANE), I(Op.ADD, 1, r(1), r(1)), I(Op.ADD, 2, r(1), 1)]))
    assert lane_regs(res, 2) == [1, 3, 5, 7]
    rec = res.trace[0]
    assert [w[0] for w in rec.reg_writes] == [0, 1, 2, 3] * 3  # lanes ascending, per instruction


# --------------------------------------------------------------------------- control flow


def test_divergent_if_else_reconverges():
    pr = prog(
        [setp("lt", 1, LANE, 2)], branch(p(1), 1, 2, 3),  # B0
        [mov(1, 10)], jump(3),  # B1 (taken: lanes 0, 1)
        [mov(1, 20)], jump(3),  # B2 (lanes 2, 3)
        [I(Op.ADD, 2, r(1), 1), I(Op.SHL, 3, TID, 2), st(r(3), r(2))], EXIT,  # B3
    )  # fmt: skip
    res = run_program(pr)
    assert shape(res) == [(0, 0, 0b1111), (1, 0, 0b0011), (2, 0, 0b1100), (3, 0, 0b1111)]
    assert [s.next for s in res.trace] == [(1, 0, 0b0011), (2, 0, 0b1100), (3, 0, 0b1111), None]
    assert res.memory[:4] == [11, 11, 21, 21]
    assert [s.step for s in res.trace] == [0, 1, 2, 3]
    assert res.steps == 4


def test_if_without_else_runs_taken_side_then_join():
    pr = prog(
        [setp("eq", 1, LANE, 3)], branch(p(1), 1, 2, 2),
        [mov(1, 5)], jump(2),
        [I(Op.ADD, 1, r(1), 1)], EXIT,
    )  # fmt: skip
    res = run_program(pr)
    assert shape(res) == [(0, 0, 0b1111), (1, 0, 0b1000), (2, 0, 0b1111)]
    assert lane_regs(res, 1) == [1, 1, 1, 6]


def test_uniform_branch_does_not_diverge():
    pr = prog(
        [setp("lt", 1, LANE, 9)], branch(p(1), 1, 2, 3),
        [mov(1, 1)], jump(3),
        [mov(1, 2)], jump(3),
        [], EXIT,
    )  # fmt: skip
    res = run_program(pr)
    assert shape(res) == [(0, 0, 15), (1, 0, 15), (3, 0, 15)]


def test_nested_divergence():
    # if (lane < 2) { if (lane == 0) A else B } else C ; join
    pr = prog(
        [setp("lt", 1, LANE, 2), setp("eq", 2, LANE, 0)], branch(p(1), 1, 4, 5),  # B0
        [], branch(p(2), 2, 3, 5),  # B1: inner branch reconverges at the same block
        [mov(1, 100)], jump(5),  # B2: lane 0
        [mov(1, 200)], jump(5),  # B3: lane 1
        [mov(1, 300)], jump(5),  # B4: lanes 2, 3
        [I(Op.ADD, 1, r(1), 1)], EXIT,  # B5
    )  # fmt: skip
    res = run_program(pr)
    assert shape(res) == [(0, 0, 15), (1, 0, 0b0011), (2, 0, 0b0001), (3, 0, 0b0010), (4, 0, 0b1100), (5, 0, 15)]
    assert lane_regs(res, 1) == [101, 201, 301, 301]


def test_nested_divergence_with_inner_join():
    # if (lane < 2) { if (lane == 0) A; inner_join } else C ; join
    pr = prog(
        [setp("lt", 1, LANE, 2), setp("eq", 2, LANE, 0)], branch(p(1), 1, 4, 5),  # B0
        [], branch(p(2), 2, 3, 3),  # B1
        [mov(1, 100)], jump(3),  # B2: lane 0
        [I(Op.ADD, 1, r(1), 10)], jump(5),  # B3: inner join, lanes 0, 1
        [mov(1, 300)], jump(5),  # B4
        [I(Op.ADD, 1, r(1), 1)], EXIT,  # B5
    )  # fmt: skip
    res = run_program(pr)
    assert shape(res) == [(0, 0, 15), (1, 0, 0b0011), (2, 0, 0b0001), (3, 0, 0b0011), (4, 0, 0b1100), (5, 0, 15)]
    assert lane_regs(res, 1) == [111, 11, 301, 301]


def test_loop_with_per_lane_trip_counts():
    # r1 = lane + 1 iterations of r2 += 10
    pr = prog(
        [I(Op.ADD, 1, LANE, 1), mov(2, 0)], jump(1),  # B0
        [I(Op.ADD, 2, r(2), 10), I(Op.SUB, 1, r(1), 1), setp("ne", 1, r(1), 0)], branch(p(1), 1, 2, 2),  # B1
        [I(Op.SHL, 3, TID, 2), st(r(3), r(2))], EXIT,  # B2
    )  # fmt: skip
    res = run_program(pr)
    assert res.memory[:4] == [10, 20, 30, 40]
    assert shape(res) == [
        (0, 0, 0b1111),
        (1, 0, 0b1111),
        (1, 0, 0b1110),
        (1, 0, 0b1100),
        (1, 0, 0b1000),
        (2, 0, 0b1111),
    ]
    assert res.max_stack_depth <= 3


def test_divergent_exit_with_reconverge_at_exit():
    # if (lane & 1) { store 1; exit } else { store 2; exit }: reconv None
    pr = prog(
        [I(Op.AND, 1, LANE, 1), setp("ne", 1, r(1), 0), I(Op.SHL, 2, TID, 2)], branch(p(1), 1, 2, None),
        [st(r(2), 1)], EXIT,
        [st(r(2), 2)], EXIT,
    )  # fmt: skip
    res = run_program(pr)
    assert shape(res) == [(0, 0, 15), (1, 0, 0b1010), (2, 0, 0b0101)]
    assert res.trace[1].next == (2, 0, 0b0101)
    assert res.trace[2].next is None
    assert res.memory[:4] == [2, 1, 2, 1]


def test_reconverge_at_exit_runs_shared_tail_once_per_side():
    # both sides jump to B3, but the branch says they only meet at exit
    pr = prog(
        [setp("lt", 1, LANE, 1)], branch(p(1), 1, 2, None),
        [mov(1, 1)], jump(3),
        [mov(1, 2)], jump(3),
        [I(Op.ADD, 1, r(1), 10)], EXIT,
    )  # fmt: skip
    res = run_program(pr)
    assert shape(res) == [(0, 0, 15), (1, 0, 1), (3, 0, 1), (2, 0, 14), (3, 0, 14)]
    assert lane_regs(res, 1) == [11, 12, 12, 12]


# --------------------------------------------------------------------------- barriers


def test_barrier_exchange_across_four_warps():
    # mem[tid] = 3*tid; sync; mem[16 + tid] = mem[(tid + 5) & 15]
    pr = prog(
        [I(Op.SHL, 1, TID, 2), I(Op.MUL, 2, TID, 3), st(r(1), r(2))], bar(1),  # B0
        [I(Op.ADD, 3, TID, 5), I(Op.AND, 3, r(3), 15), I(Op.SHL, 3, r(3), 2), ld(4, r(3))], jump(2),  # B1
        [st(r(1), r(4), offset=64)], EXIT,  # B2
        block_dim=16,
    )  # fmt: skip
    res = run_program(pr)
    assert res.memory[16:32] == [((t + 5) & 15) * 3 for t in range(16)]
    assert shape(res) == [(0, w, 15) for w in range(4)] + [(b, w, 15) for w in range(4) for b in (1, 2)]
    assert [s.barrier_release for s in res.trace] == [False, False, False, True] + [False] * 8
    assert res.trace[0].next == (0, 1, 15)
    assert res.trace[3].next == (1, 0, 15)


def test_barrier_with_partial_warp():
    # block_dim 6: warp 1 has lanes 0, 1 only
    pr = prog(
        [I(Op.SHL, 1, TID, 2), I(Op.ADD, 2, TID, 1), st(r(1), r(2))], bar(1),
        [I(Op.SUB, 3, 5, TID), I(Op.SHL, 3, r(3), 2), ld(4, r(3)), st(r(1), r(4), offset=40)], EXIT,
        block_dim=6,
    )  # fmt: skip
    res = run_program(pr)
    assert shape(res) == [(0, 0, 15), (0, 1, 0b0011), (1, 0, 15), (1, 1, 0b0011)]
    assert res.memory[:8] == [1, 2, 3, 4, 5, 6, 0, 0]
    assert res.memory[10:18] == [6, 5, 4, 3, 2, 1, 0, 0]
    assert len(res.registers) == 2
    assert res.registers[1][2] == [0] * 16  # missing lanes never run


def test_barrier_released_by_exit_of_other_warp():
    # warp 1 returns early; warp 0 waits at the barrier; warp 1's exit releases it
    pr = prog(
        [setp("ge", 1, TID, 4)], branch(p(1), 3, 1, None),  # B0
        [st(0, 7)], bar(2),  # B1
        [ld(1, 0)], EXIT,  # B2
        [], EXIT,  # B3
        block_dim=8,
    )  # fmt: skip
    res = run_program(pr)
    assert shape(res) == [(0, 0, 15), (1, 0, 15), (0, 1, 15), (3, 1, 15), (2, 0, 15)]
    assert [s.barrier_release for s in res.trace] == [False, False, False, True, False]
    assert lane_regs(res, 1, warp=0) == [7] * 4


def test_early_return_in_warp_then_barrier():
    # if (lane >= 2) return; __syncthreads(): the exited lanes do not count
    pr = prog(
        [setp("ge", 1, LANE, 2)], branch(p(1), 2, 1, None),
        [], bar(3),
        [], EXIT,
        [mov(1, 1)], EXIT,
    )  # fmt: skip
    res = run_program(pr)
    assert shape(res) == [(0, 0, 15), (2, 0, 0b1100), (1, 0, 0b0011), (3, 0, 0b0011)]
    assert res.trace[2].barrier_release
    assert lane_regs(res, 1) == [1, 1, 0, 0]


def test_barrier_in_divergent_code_deadlocks():
    pr = prog(
        [setp("lt", 1, LANE, 2)], branch(p(1), 1, 2, 2),
        [], bar(2),  # only lanes 0, 1 get here
        [], EXIT,
        block_dim=8,
    )  # fmt: skip
    with pytest.raises(BarrierDeadlock) as exc:
        run_program(pr)
    msg = str(exc.value)
    assert "B1" in msg and "warp 0" in msg and "lanes 0,1" in msg and "lanes 2,3" in msg
    partial = exc.value.result
    # warp 0: B0, B1 (lanes 0,1 wait; 2,3 stuck); warp 1 does the same; then nothing can run
    assert shape(partial) == [(0, 0, 15), (1, 0, 3), (0, 1, 15), (1, 1, 3)]
    assert partial.trace[-1].next is None


# --------------------------------------------------------------------------- limits


def test_step_budget_exceeded():
    pr = prog([I(Op.ADD, 1, r(1), 1)], jump(0))
    with pytest.raises(StepBudgetExceeded) as exc:
        run_program(pr, step_budget=50)
    msg = str(exc.value)
    assert "50" in msg and "B0" in msg and "warp 0" in msg and "step-budget" in msg
    assert exc.value.result.steps == 50


def test_step_budget_counts_whole_grid_and_is_inclusive():
    pr = prog([], jump(1), [], EXIT, grid_dim=3)  # 2 steps per thread block
    assert run_program(pr, step_budget=6).steps == 6
    with pytest.raises(StepBudgetExceeded):
        run_program(pr, step_budget=5)


def test_default_step_budget_comes_from_machine():
    pr = prog([], jump(0))
    with pytest.raises(StepBudgetExceeded) as exc:
        run_program(pr, MachineConfig(step_budget=17))
    assert exc.value.result.steps == 17


def test_memory_fault_out_of_range():
    # lane l stores to byte address 200*l: lane 3's 600 is past the last word (503)
    pr = straight([I(Op.MUL, 1, LANE, 200), st(r(1), 9)])
    with pytest.raises(MemoryFault) as exc:
        run_program(pr)
    msg = str(exc.value)
    assert "lane 3" in msg and "600" in msg and "step 0" in msg and "warp 0" in msg and "B0" in msg
    assert "503" in msg
    assert exc.value.result.memory[50] == 9 and exc.value.result.memory[100] == 9  # earlier lanes ran


@pytest.mark.parametrize("base,offset", [(2, 0), (4, -8), (4 * WORDS, 0), (0, 4 * WORDS)])
def test_memory_fault_misaligned_or_negative(base, offset):
    with pytest.raises(MemoryFault):
        run_program(straight([ld(1, base, offset=offset)]))


def test_last_word_is_addressable():
    res = run_program(straight([st(4 * WORDS - 8, 5, offset=4), ld(1, 0, offset=4 * WORDS - 4)]))
    assert res.memory[WORDS - 1] == 5 and lane_regs(res, 1) == [5] * 4


@pytest.mark.parametrize(
    "kw,limit",
    [
        ({"block_dim": 0}, "16"),
        ({"block_dim": 17}, "16"),
        ({"grid_dim": 0}, "gridDim"),
    ],
)
def test_launch_geometry_errors(kw, limit):
    with pytest.raises(ResourceError) as exc:
        run_program(prog([], EXIT, **kw))
    assert limit in str(exc.value)


def test_memory_image_length_checked():
    pr = prog([], EXIT)
    pr.memory = pr.memory[:-1]
    with pytest.raises(ResourceError, match=str(WORDS)):
        run_program(pr)


def test_program_size_checks():
    with pytest.raises(ResourceError, match="4"):
        run_program(prog([mov(1, 1)] * 5, EXIT))
    with pytest.raises(ResourceError, match="r16"):
        run_program(prog([mov(16, 1)], EXIT))
    with pytest.raises(ResourceError, match="p8"):
        run_program(prog([setp("eq", 8, 0, 0)], EXIT))
    with pytest.raises(ValueError):
        run_program(prog([], jump(7)))


def test_larger_machine_config():
    m = MachineConfig(lanes=8, max_warps=2)
    pr = straight([I(Op.SHL, 1, TID, 2), st(r(1), LANE), st(r(1), WARP, offset=64)], block_dim=12)
    res = run_program(pr, m)
    assert res.memory[:12] == [t % 8 for t in range(12)]
    assert res.memory[16:28] == [t // 8 for t in range(12)]
    assert shape(res) == [(0, 0, 0xFF), (0, 1, 0x0F)]


# --------------------------------------------------------------------------- atomics


def test_atomics_under_contention_return_old_values_in_lane_order():
    pr = straight([I(Op.ADD, 1, LANE, 1), I(Op.ATOM_ADD, 2, 0, r(1)), I(Op.ATOM_ADD, None, 4, 1)], mem={0: 100})
    res = run_program(pr)
    assert lane_regs(res, 2) == [100, 101, 103, 106]
    assert res.memory[0] == 110 and res.memory[1] == 4
    assert res.trace[0].mem_writes == [(0, 101), (0, 103), (0, 106), (0, 110), (1, 1), (1, 2), (1, 3), (1, 4)]


def test_atomics_across_warps_and_wraparound():
    pr = straight([I(Op.ATOM_ADD, 1, 8, TID)], block_dim=8, mem={2: MASK32 - 2})
    res = run_program(pr)
    # warp 0 (tids 0..3) runs first, then warp 1; the sum wraps
    start = MASK32 - 2
    olds, acc = [], start
    for t in range(8):
        olds.append(acc)
        acc = (acc + t) % 2**32
    assert lane_regs(res, 1, warp=0) == olds[:4]
    assert lane_regs(res, 1, warp=1) == olds[4:]
    assert res.memory[2] == (start + sum(range(8))) % 2**32


# --------------------------------------------------------------------------- shfl


def shfl_run(mode, b, c, member=0xF, block_dim=4, guard=None, same_reg=False):
    """r1 = 10*lane + 1; r2|p1 = shfl.mode(r1, b, c, member)."""
    dst = 1 if same_reg else 2
    pr = straight(
        [
            I(Op.MAD, 1, LANE, 10, 1),
            setp("ne", 2, LANE, 1),
            I(Op.SHFL, dst, r(1), b, c, member, mode=mode, pdst=1, guard=guard),
        ],
        block_dim=block_dim,
    )
    res = run_program(pr)
    n = block_dim
    return [res.registers[0][lane][dst] for lane in range(n)], [res.predicates[0][lane][1] for lane in range(n)]


T, F = True, False


@pytest.mark.parametrize(
    "mode,b,c,member,values,inrange",
    [
        ("idx", 2, 0x3, 0xF, [21, 21, 21, 21], [T, T, T, T]),
        ("idx", 0, 0x3, 0xF, [1, 1, 1, 1], [T, T, T, T]),
        ("up", 1, 0x0, 0xF, [1, 1, 11, 21], [F, T, T, T]),
        ("up", 2, 0x0, 0xF, [1, 11, 1, 11], [F, F, T, T]),
        ("down", 1, 0x3, 0xF, [11, 21, 31, 31], [T, T, T, F]),
        ("down", 3, 0x3, 0xF, [31, 11, 21, 31], [T, F, F, F]),
        ("bfly", 1, 0x3, 0xF, [11, 1, 31, 21], [T, T, T, T]),
        ("bfly", 2, 0x3, 0xF, [21, 31, 1, 11], [T, T, T, T]),
        ("bfly", 3, 0x3, 0xF, [31, 21, 11, 1], [T, T, T, T]),
        # width 2 (segmask 0b10 in bits 8..): segments {0,1} and {2,3}
        ("down", 1, 0x203, 0xF, [11, 11, 31, 31], [T, F, T, F]),
        ("up", 1, 0x200, 0xF, [1, 1, 21, 21], [F, T, F, T]),
        ("idx", 1, 0x203, 0xF, [11, 11, 31, 31], [T, T, T, T]),
        ("idx", 0, 0x203, 0xF, [1, 1, 21, 21], [T, T, T, T]),
        ("bfly", 1, 0x203, 0xF, [11, 1, 31, 21], [T, T, T, T]),
        # clamp below the top lane: down with maxLane 1 for everyone
        ("down", 1, 0x1, 0xF, [11, 11, 21, 31], [T, F, F, F]),
        # member mask without lane 2: readers of lane 2 keep their own value
        ("down", 1, 0x3, 0b1011, [11, 11, 31, 31], [T, T, T, F]),
        ("idx", 2, 0x3, 0b1011, [1, 11, 21, 31], [T, T, T, T]),
        # lane/delta is a lane field: only its low log2(lanes) bits count (5 & 3 = 1)
        ("idx", 5, 0x3, 0xF, [11, 11, 11, 11], [T, T, T, T]),
    ],
)
def test_shfl_modes(mode, b, c, member, values, inrange):
    assert shfl_run(mode, b, c, member) == (values, inrange)


def test_shfl_reads_before_writes():
    assert shfl_run("bfly", 1, 0x3, same_reg=True)[0] == [11, 1, 31, 21]
    assert shfl_run("down", 1, 0x3, same_reg=True)[0] == [11, 21, 31, 31]


def test_shfl_missing_lane_of_partial_warp_reads_own_value():
    # lane 2 reads lane 3: in range by the formula (p = T), but lane 3 does not exist
    assert shfl_run("down", 1, 0x3, block_dim=3) == ([11, 21, 21], [T, T, T])
    assert shfl_run("idx", 3, 0x3, block_dim=3) == ([1, 11, 21], [T, T, T])


def test_shfl_guarded_lane_does_not_write_but_can_be_read():
    # p2 = lane != 1: lane 1 does not run the shfl (r2 stays 0) but lane 0 reads its r1
    values, inrange = shfl_run("down", 1, 0x3, guard=p(2))
    assert values == [11, 0, 31, 31]
    assert inrange == [T, F, T, F]  # lane 1's p1 is untouched (False)


# --------------------------------------------------------------------------- grid


def test_multi_block_grid_with_ctaid_and_persistent_memory():
    # each thread: mem[1 + 2*ctaid + tid] = 100*ctaid + tid + mem[0]; then atom mem[0] += ctaid + 1
    pr = straight(
        [
            I(Op.MAD, 1, CTA, 2, TID),
            I(Op.SHL, 1, r(1), 2),
            ld(2, 0),
            I(Op.MAD, 3, CTA, 100, TID),
            I(Op.ADD, 3, r(3), r(2)),
            st(r(1), r(3), offset=4),
            I(Op.ADD, 4, CTA, 1),
            I(Op.ATOM_ADD, None, 0, r(4)),
            mov(5, sp("nctaid.x")),
            mov(6, sp("ntid.x")),
        ],
        block_dim=2,
        grid_dim=3,
        mem={0: 1000},
    )
    res = run_program(pr)
    # mem[0] before cta k: 1000 + 2 * (1 + ... + k)
    before = [1000, 1002, 1006]
    expect = []
    for k in range(3):
        expect += [100 * k + t + before[k] for t in range(2)]
    assert res.memory[1:7] == expect
    assert res.memory[0] == 1000 + 2 * (1 + 2 + 3)
    assert [s.ctaid for s in res.trace] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert [s.step for s in res.trace] == list(range(9))
    assert [s.next is None for s in res.trace] == [False, False, True] * 3
    assert [s.mask for s in res.trace] == [0b11] * 9
    # registers are those of the last thread block
    assert res.registers[0][0][2] == 1006 and res.registers[0][1][4] == 3
    assert res.registers[0][0][5] == 3 and res.registers[0][0][6] == 2


def test_special_registers():
    pr = straight(
        [
            I(Op.SHL, 1, TID, 2),
            st(r(1), TID),
            st(r(1), LANE, offset=32),
            st(r(1), WARP, offset=64),
        ],
        block_dim=7,
    )
    res = run_program(pr)
    assert res.memory[0:7] == list(range(7))
    assert res.memory[8:15] == [t % 4 for t in range(7)]
    assert res.memory[16:23] == [t // 4 for t in range(7)]
    assert res.memory[7] == 0 and res.memory[15] == 0


# --------------------------------------------------------------------------- trace plumbing


def test_on_step_and_trace_off():
    seen: list[StepRecord] = []
    pr = prog([], jump(1), [], EXIT, block_dim=8)
    res = run_program(pr, trace=False, on_step=seen.append)
    assert res.trace == [] and res.steps == 4
    assert [(s.block, s.warp) for s in seen] == [(0, 0), (1, 0), (0, 1), (1, 1)]


def test_format_step():
    rec = StepRecord(
        step=12,
        ctaid=0,
        block=3,
        warp=1,
        mask=0b1101,
        reg_writes=[(0, 5, 7), (2, 5, MASK32)],
        pred_writes=[(3, 1, True)],
        mem_writes=[(3, 9)],
        next=(4, 1, 0b1111),
    )
    assert format_step(rec) == "step 12 cta 0 B3 w1 mask 1011 r5[l0]=7 r5[l2]=-1 p1[l3]=T mem[3]=9 -> B4 w1 mask 1111"
    rec.next = None
    rec.barrier_release = True
    assert format_step(rec).endswith("bar.release -> end")
