"""Integer division, remainder and mul.hi: the lowering's routines against C's definition.

The machine has no divider: ``div``/``rem`` become a shift-and-subtract routine and
``mul.hi`` (clang's division by a constant) a routine of 16-bit halves
(``host/division.py``). Expected values come from the definition, computed here with
Python's integers: truncation toward zero, the remainder with the dividend's sign,
``INT_MIN / -1`` wrapping to ``INT_MIN``. The reference interpreter runs the routines for
breadth (random and edge operands); the model runs one launch under the complete check.
"""

from __future__ import annotations

import random

import pytest

from qwengpu_mlx.core.errors import DivisionByZero
from qwengpu_mlx.host.launch import bind, compile_kernel
from tests.support.launching import reference
from qwengpu_mlx.core.machine import PUBLISHED_MACHINE

from tests.support.cli import cu, needs_clang

INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1
EDGES = [0, 1, -1, 2, -2, 7, -7, 10, 100, -100, INT_MIN, INT_MIN + 1, INT_MAX, INT_MAX - 1, 65535, 65536, -65536]


def c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def wrap(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x >> 31 else x


def signed_pairs(rng: random.Random, n: int) -> list[tuple[int, int]]:
    pairs = [(INT_MIN, -1), (INT_MIN, 1), (INT_MAX, INT_MIN), (-7, 2), (7, -2), (0, -5)]
    while len(pairs) < n:
        a = rng.choice(EDGES) if rng.random() < 0.3 else rng.randint(INT_MIN, INT_MAX)
        b = rng.choice([x for x in EDGES if x]) if rng.random() < 0.4 else rng.randint(-300, 300) or 3
        pairs.append((a, b))
    return pairs


DIV_BY_REGISTER = """
__global__ void k(const {t}* a, const {t}* b, {t}* q, {t}* r, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {{ q[i] = a[i] / b[i]; r[i] = a[i] % b[i]; }}
}}
"""


@needs_clang
@pytest.mark.parametrize("typ", ["int", "unsigned"])
def test_division_by_a_register_matches_c(tmp_path, typ):
    rng = random.Random(20261204 + len(typ))
    pairs = signed_pairs(rng, 64)
    path = cu(tmp_path, DIV_BY_REGISTER.format(t=typ))
    for start in range(0, len(pairs), 16):  # 4 arrays of 16 words fit the published machine's memory
        chunk = pairs[start:start + 16]
        a, b = [x for x, _ in chunk], [y for _, y in chunk]
        out = reference(path, args={"a": a, "b": b, "q": [0] * 16, "r": [0] * 16, "n": 16}, block=16).outputs
        for (x, y), q, r in zip(chunk, out["q"], out["r"]):
            if typ == "unsigned":
                ux, uy = x & 0xFFFFFFFF, y & 0xFFFFFFFF
                want = (wrap(ux // uy), wrap(ux % uy))
            else:
                want = (wrap(c_div(x, y)), wrap(x - y * c_div(x, y)))
            assert (q, r) == want, (typ, x, y)


DIV_BY_CONSTANT = """
__global__ void k(const {t}* a, {t}* q, {t}* r) {{
    int i = threadIdx.x;
    q[i] = a[i] / ({t})({d});
    r[i] = a[i] % ({t})({d});
}}
"""


@needs_clang
@pytest.mark.parametrize("typ, divisor", [("int", 3), ("int", 7), ("int", -5), ("int", 641), ("int", 1000003),
                                          ("unsigned", 10), ("unsigned", 7), ("unsigned", 3000000000)])
def test_division_by_a_constant_matches_c(tmp_path, typ, divisor):
    """clang writes these as mul.hi and shifts: the mul.hi routine must be exact everywhere."""
    path = cu(tmp_path, DIV_BY_CONSTANT.format(t=typ, d=divisor))
    assert "mul.hi" in compile_kernel(path).ptx or divisor >= 1 << 31  # past 2^31: a compare
    rng = random.Random(divisor)
    values = EDGES[:8] + [rng.randint(INT_MIN, INT_MAX) for _ in range(8)]
    for start in range(0, len(values), 16):
        a = values[start:start + 16]
        out = reference(path, args={"a": a, "q": [0] * 16, "r": [0] * 16}, block=16).outputs
        for x, q, r in zip(a, out["q"], out["r"]):
            if typ == "unsigned":
                ux, d = x & 0xFFFFFFFF, divisor & 0xFFFFFFFF
                want = (wrap(ux // d), wrap(ux % d))
            else:
                want = (wrap(c_div(x, divisor)), wrap(x - divisor * c_div(x, divisor)))
            assert (q, r) == want, (typ, divisor, x)


@needs_clang
def test_division_by_zero_is_refused_on_the_lane_that_divides(tmp_path):
    path = cu(tmp_path, "__global__ void k(const int* a, const int* b, int* q) {\n"
                        "  int i = threadIdx.x;\n  if (i != 1) q[i] = a[i] / b[i];\n}\n")
    # lane 1 would divide by zero but does not divide: the launch completes
    out = reference(path, args={"a": [9, 9, 9, 9], "b": [3, 0, -3, 9], "q": [0] * 4}, block=4).outputs
    assert out["q"] == [3, 0, -3, 1]
    with pytest.raises(DivisionByZero, match=r"kernel\.cu:3 .*lane 2 of warp 0"):
        reference(path, args={"a": [9, 9, 9, 9], "b": [3, 0, 0, 9], "q": [0] * 4}, block=4)


@needs_clang
def test_the_model_divides_exactly_and_faults_on_zero(tmp_path):
    """Through the model under the complete check: quotients and remainders of every sign,
    then the same program with a zero divisor ends with FAULT and the reference's account."""
    from qwengpu_mlx.runtime import CircuitStore
    from tests.support.launching import on_runner

    path = cu(tmp_path, DIV_BY_REGISTER.format(t="int"))
    a, b = [100, -100, INT_MIN, 7], [7, -7, -1, -8]
    ck = compile_kernel(path)
    runner = CircuitStore().runner(PUBLISHED_MACHINE)
    prog = bind(ck, {"a": a, "b": b, "q": [0] * 4, "r": [0] * 4, "n": 4}, block=4, machine=PUBLISHED_MACHINE)
    res = on_runner(prog, runner, check=True)
    assert res.check.exact, "\n".join(res.check.problems)
    words = res.memory[8:16]
    assert [wrap(w) for w in words] == [wrap(c_div(x, y)) for x, y in zip(a, b)] + \
        [wrap(x - y * c_div(x, y)) for x, y in zip(a, b)]
    prog = bind(ck, {"a": a, "b": [7, 0, 1, 1], "q": [0] * 4, "r": [0] * 4, "n": 4}, block=4,
                machine=PUBLISHED_MACHINE)
    with pytest.raises(DivisionByZero, match=r"kernel\.cu:4 .*lane 1"):
        on_runner(prog, runner, check=True)
