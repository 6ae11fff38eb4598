"""What a float32 operation costs: ROM blocks, steps and launch tokens, against an integer add.

The machine has no float unit: ``add``, ``sub``, ``mul``, ``fma``, ``div``, ``rcp``, ``sqrt``,
``setp``, ``min`` and ``max`` ``.f32`` are routines of integer instructions (``host/float_*.py``). This prints, for one
kernel that stores ``OP(a[i], b[i], c[i])`` on 4 lanes (the operands' bit patterns in
``int`` arrays), the ROM blocks the kernel needs, the steps and the launch tokens the
model writes (the expected launch, which an exact model launch equals token for token),
beside the same kernel with an integer ``+``: ratios measured in one run. No model is
needed: the counts are the reference's. Large machine (the fma needs more than 32 blocks).
Then example kernels with their routines inlined and shared (one copy called from every
use): a call's cost in steps and tokens, and the ROM it saves; last, the kernels that fit
only with what is live across a call saved to memory around it (``host/float_spill.py``),
and what saving costs a call (an example forced to that level, saving nothing but the
return site, then everything live across each call).

    .venv/bin/python -m bench.float_cost
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np

from qwengpu_mlx.core.errors import ResourceError
from qwengpu_mlx.core.machine import LARGE_MACHINE, MACHINES
from qwengpu_mlx.host import float_spill
from qwengpu_mlx.host.launch import compile_kernel
from qwengpu_mlx.host.lowering import EVERY_TRY, SPILL_LEVEL, Tries, lower
from qwengpu_mlx.runtime.check import reference_run
from qwengpu_mlx.runtime.expect import expected_segments
from tests.support.launching import bound_program

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "kernels"

KERNEL = """
__global__ void k(const int* a, const int* b, int* c) {{
    int i = threadIdx.x;
    float x = __int_as_float(a[i]), y = __int_as_float(b[i]), z = __int_as_float(c[i]);
    c[i] = {expr};
}}
"""


def bits(xs) -> list[int]:
    return [int(v) for v in np.asarray(xs, dtype=np.float32).view(np.int32)]


_X, _Y = np.float32([1.5, 3.0, -0.75, 1e10]), np.float32([2.5, -1.25, 0.1, 3e-5])
NORMAL = (bits(_X), bits(_Y), bits([1.0, 0.5, -7.0, 2e5]))

CASES = [  # (label, expression, operands)
    ("a + b (int, no float)", "a[i] + b[i]", NORMAL),
    ("x + y", "__float_as_int(x + y)", NORMAL),
    ("x - y", "__float_as_int(x - y)", NORMAL),
    ("x + y, cancelling to 2^-23", "__float_as_int(x + y)",
     (bits([1.0] * 4), bits([-(1 - 2 ** -24)] * 4), bits([0.0] * 4))),
    ("x * y", "__float_as_int(x * y)", NORMAL),
    ("x * y, y subnormal (1e-40)", "__float_as_int(x * y)", (NORMAL[0], bits([1e-40] * 4), NORMAL[2])),
    ("fmaf(x, y, z)", "__float_as_int(__builtin_fmaf(x, y, z))", NORMAL),
    ("fmaf(x, y, -x*y) (cancels)", "__float_as_int(__builtin_fmaf(x, y, z))",
     (NORMAL[0], NORMAL[1], bits(-_X * _Y))),
    ("x / y", "__float_as_int(x / y)", NORMAL),
    ("1 / y (rcp)", "__float_as_int(1.0f / y)", NORMAL),
    ("sqrtf(x)", "__float_as_int(__builtin_sqrtf(__builtin_fabsf(x)))", NORMAL),
    ("x < y (setp)", "x < y", NORMAL),
    ("fminf(x, y)", "__float_as_int(__builtin_fminf(x, y))", NORMAL),
    ("fmaxf(x, y)", "__float_as_int(__builtin_fmaxf(x, y))", NORMAL),
]


def launch_cost(source: Path, a: list[int], b: list[int], c: list[int]) -> tuple[int, int, int]:
    """(ROM blocks, EXEC steps, generated launch tokens) of the launch."""
    m = LARGE_MACHINE
    prog = bound_program(source, args={"a": a, "b": b, "c": c}, block=4, grid=1, machine=m)
    ref = reference_run(prog, m, budget=m.step_budget)
    segs = expected_segments(prog, m, ref.trace, fault=ref.fault, inside_step=ref.inside_step)
    return len(prog.blocks), len(ref.trace), sum(len(s.tokens) for s in segs)


SHARED_EXAMPLES = ("float_stencil", "float_divide", "float_lerp", "float_variance", "float_ratios",
                   "float_normalise", "float_add3")
"""Example kernels lowered with their routines inlined and shared (``host/float_routines.py``):
a kernel that fits inlined with every multi-use kind shared (the fma one where no kind
has two uses), to show what a call costs; one that does not as the lowering shares it."""


def _example(name: str):
    """An example's launch file, its compiled kernel and the machine it names."""
    spec = json.loads((EXAMPLES / f"{name}.json").read_text())
    return spec, compile_kernel(EXAMPLES / f"{name}.cu", spec["kernel"]), MACHINES[spec.get("machine", "default")]


def _bound(name: str, tries: Tries = EVERY_TRY):
    """An example's program as the lowering binds it making only ``tries`` (default: whatever
    it tries), and its machine."""
    spec, ck, m = _example(name)
    return lower(ck.module, ck.kernel, ck.params, spec["args"], block_dim=spec["block"], grid_dim=spec["grid"],
                 machine=m, tries=tries), m


INLINED = Tries(sharings=())
"""The kernel's own translation alone: its routines inlined, no sharing tried."""

SHARED = Tries(inlined=False, sharings=(1,), budgets=(None,), greedy_cut=False)
"""The second sharing level alone (every kind with two uses shared, or the fma one; the
last level's registers where that is the level saving across calls, nothing saved), cut
for fewest tokens."""


def _example_cost(name: str, forced: bool) -> str:
    """``blocks/steps/tokens`` of an example's own launch: inlined (``forced`` False, no
    sharing tried) or with sharing forced; "refused" where that does not fit."""
    try:
        prog, m = _bound(name, SHARED if forced else INLINED)
    except ResourceError:
        return "refused"
    return _cost(prog, m)


def _cost(prog, m) -> str:
    ref = reference_run(prog, m, budget=m.step_budget)
    segs = expected_segments(prog, m, ref.trace, fault=ref.fault, inside_step=ref.inside_step)
    return f"{len(prog.blocks)}/{len(ref.trace)}/{sum(len(s.tokens) for s in segs)}"


def sharing_table() -> None:
    print(f"\n{'example (blocks/steps/tokens)':28} {'inlined':>14} {'shared, forced':>15} {'as lowered':>14}")
    for name in SHARED_EXAMPLES:
        lowered, m = _bound(name)
        print(f"{name:28} {_example_cost(name, False):>14} {_example_cost(name, True):>15} {_cost(lowered, m):>14}")


SPILL_EXAMPLES = ("float_mean_var", "float_rms_norm", "float_dot_mean")
"""Examples whose routines are shared at the spill level as lowered (``float_dot_mean``
fits without it: beside them for scale)."""


def _spill_forced(name: str, budget: float_spill.Budget) -> str:
    """``blocks/steps/tokens (calls run)`` of an example lowered only at the spill level,
    keeping ``budget`` in registers; "refused" where that does not fit."""
    try:
        prog, m = _bound(name, Tries(inlined=False, sharings=(SPILL_LEVEL,), budgets=(budget,)))
    except ResourceError:
        return "refused"
    entries = {b.index for b in prog.blocks if (b.label or "").startswith("$froutine_")}
    calls = sum(r.block in entries for r in reference_run(prog, m, budget=m.step_budget).trace)
    return f"{_cost(prog, m)} ({calls})"


def spill_table() -> None:
    print(f"\n{'saved across calls (blocks/steps/tokens)':42} {'as lowered':>16}")
    for name in SPILL_EXAMPLES:
        lowered, m = _bound(name)
        print(f"{name:42} {_cost(lowered, m):>16}")
    print(f"\n{'spill level forced (warp calls run)':42} {'saving sites':>20} {'saving every value':>20}")
    for name in ("float_variance", "float_ratios"):
        print(f"{name:42} {_spill_forced(name, float_spill.Budget()):>20} "
              f"{_spill_forced(name, float_spill.Budget(0, 0)):>20}")


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n, (label, expr, (a, b, c)) in enumerate(CASES):
            path = Path(tmp) / f"k{n}.cu"
            path.write_text(KERNEL.format(expr=expr))
            rows.append((label, *launch_cost(path, a, b, c)))
    _, base_steps, base_tokens = rows[0][1:]
    print(f"{'kernel (4 lanes, one result each)':32} {'blocks':>6} {'steps':>6} {'tokens':>7} {'x steps':>8} "
          f"{'x tokens':>9}")
    for label, blocks, steps, tokens in rows:
        print(f"{label:32} {blocks:>6} {steps:>6} {tokens:>7} {steps / base_steps:>8.1f} {tokens / base_tokens:>9.1f}")
    sharing_table()
    spill_table()


if __name__ == "__main__":
    main()
