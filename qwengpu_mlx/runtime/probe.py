"""The probe launch a runner must pass before it is trusted (``gpu_trust``, ``native_trust``).

A dot product with a branch and atomics over one warp: its launch stores registers and
memory words through the recurrent state of several layers and reads them back, so a
kernel that rounds the state, mixes up heads or drops a gate writes other tokens.

The program is held here as machine instructions, bound and packed, so handing out a
runner never compiles a kernel: it is what the host makes of :data:`PROBE_SOURCE` with
:data:`PROBE_ARGS` (``tests/runtime`` compiles the source and compares, on every named
machine).
"""

from __future__ import annotations

from qwengpu_mlx.core.isa import ArrayBinding, Block, Imm, Instr, Op, Pred, Program, Reg, Special, TermKind, Terminator
from qwengpu_mlx.core.machine import MachineConfig

PROBE_SOURCE = """\
__global__ void probe(const int* a, const int* b, int* out, int n) {
    int i = threadIdx.x;
    if (i < n) atomicAdd(out, a[i] * b[i] - i);
}
"""
PROBE_ARGS = {"a": [3, -1, 4, 1], "b": [5, 9, -2, 6], "out": [7], "n": 3}

_IN_RANGE = Pred(0, negated=True)  # p0 = tid >= n; lanes below n run the body
_TID = Special("tid.x")
_INSTRS = (  # the kernel's instructions in order, and how the host packs them into blocks
    Instr(Op.SETP, 0, (_TID, Imm(PROBE_ARGS["n"])), signed=True, cmp="ge"),
    Instr(Op.LD, 1, (Special("tid.x*4"),), guard=_IN_RANGE, space="global"),
    Instr(Op.LD, 2, (Special("tid.x*4"),), guard=_IN_RANGE, offset=16, space="global"),
    Instr(Op.MUL, 1, (Reg(2), Reg(1)), signed=True),
    Instr(Op.SUB, 1, (Reg(1), _TID), signed=True),
    Instr(Op.ATOM_ADD, None, (Reg(0), Reg(1)), guard=_IN_RANGE, offset=32, space="global"),
)
_PACKED = ((0,), (1, 2, 3), (4, 5))  # blocks of instruction indexes with three slots a block


def probe_program(machine: MachineConfig) -> Program:
    """The probe kernel bound for ``machine``: one block of 4 threads."""
    groups = _PACKED if machine.slots_per_block >= 3 else tuple((i,) for i in range(len(_INSTRS)))
    blocks = []
    for index, group in enumerate(groups):
        last = index == len(groups) - 1
        term = Terminator(TermKind.EXIT) if last else Terminator(TermKind.JUMP, target=index + 1)
        blocks.append(Block(index, [_INSTRS[i] for i in group], term))
    words = [*PROBE_ARGS["a"], *PROBE_ARGS["b"], *PROBE_ARGS["out"]]
    memory = [w & machine.word_mask for w in words] + [0] * (machine.mem_words - len(words))
    arrays = [ArrayBinding("a", 0, 4), ArrayBinding("b", 4, 4), ArrayBinding("out", 8, 1)]
    return Program("probe", blocks, arrays, [], {"n": PROBE_ARGS["n"]}, memory, regs_used=2, preds_used=1,
                   block_dim=4, grid_dim=1)
