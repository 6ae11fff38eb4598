"""What a division costs: steps and launch tokens per division, by quotient size and form.

The machine divides by running routines (``host/division.py``): ``mul.hi`` for a
constant divisor (straight-line), shift and subtract for a register divisor (about
``3 log2(q) + 4`` steps). This prints, for one kernel that stores ``a[i] OP d`` on 4
lanes, the steps and the launch tokens the model writes (the expected launch, which an
exact model launch equals token for token), beside the same kernel with ``+`` instead,
as ratios measured in one run. No model is needed: the counts are the reference's.

    .venv/bin/python -m bench.division_cost
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from tests.support.launching import bound_program
from qwengpu_mlx.core.machine import PUBLISHED_MACHINE
from qwengpu_mlx.runtime.check import reference_run
from qwengpu_mlx.runtime.expect import expected_segments

KERNEL = """
__global__ void k(const int* a, int* out, int d) {{
    int i = threadIdx.x;
    out[i] = a[i] {op} {rhs};
}}
"""

CASES = [  # (label, operator, right-hand side, the lanes' dividends, d)
    ("a + d (no division)", "+", "d", [100, 200, 300, 400], 7),
    ("a / 7 (constant: mul.hi)", "/", "7", [100, -200, 30000, -4000000], 7),
    ("a % 10 (constant: mul.hi)", "%", "10", [100, -200, 30000, -4000000], 7),
    ("a / d, quotients < 16", "/", "d", [100, -90, 50, 7], 7),
    ("a / d, quotients ~ 2^10", "/", "d", [7000, -7100, 7200, 7300], 7),
    ("a / d, quotients ~ 2^20", "/", "d", [7 << 20, -(7 << 20), 7 << 20, 7 << 20], 7),
    ("a / d, quotients < 2^20 (many bits)", "/", "d", [(1 << 20) - 1, -(1 << 20) + 1, 1 << 19, 3], 1),
    ("a / d, worst case (INT_MAX / 1)", "/", "d", [(1 << 31) - 1] * 4, 1),
]


def launch_cost(source: Path, a: list[int], d: int) -> tuple[int, int]:
    """(EXEC steps, generated launch tokens) of the launch on the published machine."""
    m = PUBLISHED_MACHINE
    prog = bound_program(source, args={"a": a, "out": [0] * 4, "d": d}, block=4, grid=1, machine=m)
    ref = reference_run(prog, m, budget=m.step_budget)
    segs = expected_segments(prog, m, ref.trace, fault=ref.fault, inside_step=ref.inside_step)
    return len(ref.trace), sum(len(s.tokens) for s in segs)


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n, (label, op, rhs, a, d) in enumerate(CASES):
            path = Path(tmp) / f"k{n}.cu"
            path.write_text(KERNEL.format(op=op, rhs=rhs))
            rows.append((label, *launch_cost(path, a, d)))
    base_steps, base_tokens = rows[0][1], rows[0][2]
    print(f"{'kernel (4 lanes, one result each)':36} {'steps':>6} {'tokens':>7} {'x steps':>8} {'x tokens':>9}")
    for label, steps, tokens in rows:
        print(f"{label:36} {steps:6} {tokens:7} {steps / base_steps:8.1f} {tokens / base_tokens:9.1f}")


if __name__ == "__main__":
    main()
