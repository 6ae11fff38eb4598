"""What is live across a shared float routine's call, saved to memory around it
(``host/float_spill.py``) and the calls' moves coalesced (``host/float_coalesce.py``).

The examples that need it (``float_mean_var``, ``float_rms_norm``) run against their
exact oracles in ``tests/host/test_conformance.py``; here the saving is forced on small
kernels (the spill level the only sharing, every value live across every call saved),
whose results must still be the exact float32 ones: values restored exactly, lanes of
one warp calling from the two sides of a branch, a call in a loop; and the frame is
memory the model's own ``st``/``ld`` write and read.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

from qwengpu_mlx.core.errors import ResourceError
from qwengpu_mlx.core.isa import Op, Special
from qwengpu_mlx.core.machine import LARGE_MACHINE
from qwengpu_mlx.core.readout import read_outputs
from qwengpu_mlx.host import float_routines, float_spill, lowering
from qwengpu_mlx.host.launch import bind, compile_kernel
from qwengpu_mlx.runtime.check import reference_run
from tests.support import oracles_float as f32
from tests.support.cli import needs_clang


def _forced(monkeypatch, budget: float_spill.Budget):
    """Every kernel lowered only at the spill level with ``budget`` (the inlined try refused)."""
    levels = float_routines.sharing_levels
    monkeypatch.setattr(float_routines, "sharing_levels", lambda calls: [levels(calls)[-1]] if levels(calls) else [])
    monkeypatch.setattr(float_spill, "BUDGETS", (budget,))
    real = lowering._finish

    def finish(*args, **kw):
        if len(args) < 11 and "spill" not in kw:
            raise ResourceError("forced: the routines shared")
        return real(*args, **kw)
    monkeypatch.setattr(lowering, "_finish", finish)


def _run(tmp_path, source: str, args: dict, block: int, grid: int = 1):
    path = tmp_path / "k.cu"
    path.write_text(source)
    prog = bind(compile_kernel(path), args, block=block, grid=grid, machine=LARGE_MACHINE)
    res = reference_run(prog, LARGE_MACHINE, 200_000)
    assert res.fault is None and not res.ran_out
    return prog, read_outputs(prog, res.memory)


def _frame_accesses(prog) -> list:
    return [i for b in prog.blocks for i in b.instrs if i.op in (Op.LD, Op.ST) and i.srcs[0] == Special("tid.x*4")
            and i.offset < 4 * prog.arrays[0].base]


def _floats(values) -> list[int]:
    return [f32.to_binary32(Fraction(v)) for v in values]


DIVERGENT = """
__global__ void sides(const float* a, const float* b, float* out, int n) {
  int t = threadIdx.x;
  int k = 3 * t + n;
  float v;
  if (t & 1) v = a[t] / b[t] + (float)k;
  else v = b[t] / a[t] - (float)(k + 1);
  out[t] = v / (float)(k - 2);
}
"""


@needs_clang
@pytest.mark.parametrize("budget", [float_spill.Budget(0, 0), float_spill.Budget()])
def test_lanes_of_a_warp_calling_from_both_sides_of_a_branch(monkeypatch, tmp_path, budget):
    """The odd and even lanes of each warp divide on the two sides of an ``if``, with
    ``k`` (and the branch's lanes) live across the calls: each lane's values come back."""
    _forced(monkeypatch, budget)
    a, b = [1.5, -2.25, 3.0, 0.1, 7.0, -0.5, 1e-3, 6.5], [0.3, 4.0, -1.25, 2.5, 0.7, 9.0, -3.0, 1.1]
    prog, out = _run(tmp_path, DIVERGENT, {"a": a, "b": b, "out": [0] * 8, "n": 5}, block=8)
    fa, fb, want = _floats(a), _floats(b), []
    for t in range(8):
        k = 3 * t + 5
        if t & 1:
            v = f32.add(f32.div(fa[t], fb[t]), f32.to_binary32(Fraction(k)))
        else:
            v = f32.add(f32.div(fb[t], fa[t]), f32.to_binary32(Fraction(k + 1)) ^ f32.SIGN)
        want.append(f32.div(v, f32.to_binary32(Fraction(k - 2))))
    assert out["out"] == f32.words(want)
    if budget.regs == 0:
        assert _frame_accesses(prog), "nothing was saved to the frame"


LOOP = """
__global__ void horner_steps(const float* c, float* out, int n, float d) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  float acc = c[t];
#pragma unroll 1
  for (int i = 0; i < n; i++) {
    acc = acc * c[(t + i) & 7] + (float)(i + t) / d;
    acc = acc * d + (float)i / c[(t + 2 * i) & 7];
  }
  out[t] = acc;
}
"""


@needs_clang
def test_a_call_in_a_loop_restores_the_counter_and_the_bound(monkeypatch, tmp_path):
    """The loop's counter, bound, thread index and accumulator are saved around each of
    the loop's calls (fma, division, conversion) and restored exactly, every trip; two
    thread blocks, one after the other, use the same frame."""
    _forced(monkeypatch, float_spill.Budget(0, 0))
    c = [0.5, -1.25, 2.0, 0.75, -0.3, 1.1, 0.9, -2.5]
    prog, out = _run(tmp_path, LOOP, {"c": c, "out": [0] * 8, "n": 3, "d": 3.0}, block=4, grid=2)
    fc, d, want = _floats(c), f32.to_binary32(Fraction(3)), []
    for t in range(8):
        acc = fc[t]
        for i in range(3):
            acc = f32.fma(acc, fc[(t + i) & 7], f32.div(f32.to_binary32(Fraction(i + t)), d))
            acc = f32.fma(acc, d, f32.div(f32.to_binary32(Fraction(i)), fc[(t + 2 * i) & 7]))
        want.append(acc)
    assert out["out"] == f32.words(want)
    assert _frame_accesses(prog)


@needs_clang
def test_values_saved_come_back_exactly_where_the_kernel_needs_the_spill():
    """``float_mean_var`` refused at every sharing without the spill: its program stores
    to the frame before calls and loads after them, and its arrays moved past the frame."""
    root = Path(__file__).resolve().parents[2] / "examples" / "kernels"
    spec = json.loads((root / "float_mean_var.json").read_text())
    prog = bind(compile_kernel(root / "float_mean_var.cu"), spec["args"], block=spec["block"], machine=LARGE_MACHINE)
    frame = _frame_accesses(prog)
    assert {i.op for i in frame} == {Op.LD, Op.ST}
    assert prog.arrays[0].base >= spec["block"] * 2 and len(prog.blocks) <= LARGE_MACHINE.rom_blocks
