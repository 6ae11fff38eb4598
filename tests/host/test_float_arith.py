"""float32 add, sub, mul, neg, abs, min, max and setp: the routines against the hardware.

The oracle is NumPy's float32 (IEEE-754 binary32, round to nearest even, subnormals
kept: what an NVIDIA GPU computes without fast-math), with the GPU's canonical NaN
``0x7FFFFFFF`` for every NaN an arithmetic instruction writes; ``min``/``max`` follow
PTX's rules, written out here (a NaN operand yields the other, -0 below +0). The
routines' IR runs through ``tests/support/float_routines`` (the reference interpreter's
ALU, one lane) on the corner cases and a few hundred random patterns per operation;
one kernel runs the whole lowering on the reference backend.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from qwengpu_mlx.core.machine import LARGE_MACHINE
from qwengpu_mlx.host import float_addmul, float_compare, float_divide, float_sqrt
from tests.support.cli import cu, needs_clang
from tests.support.float_routines import binary, predicate
from tests.support.launching import reference

NAN = 0x7FFFFFFF


def bits(x: float) -> int:
    return int(np.float32(x).view(np.uint32))


def value(b: int) -> np.float32:
    return np.uint32(b).view(np.float32)


EDGES = [
    0, 0x80000000,                      # +0, -0
    0x7F800000, 0xFF800000,             # +inf, -inf
    0x7FC00000, 0xFFC00001, 0x7F800001,  # NaNs (quiet, negative, signalling)
    0x7F7FFFFF, 0xFF7FFFFF,             # largest finite
    0x00800000, 0x80800000,             # smallest normal
    0x00000001, 0x80000001, 0x007FFFFF, 0x00400000,  # subnormals
    bits(1.0), bits(-1.0), bits(1.5), bits(3.0), bits(0.1), bits(-2.75),
    bits(1 + 2 ** -23), bits(2 ** -24), bits(2 ** -25), 0x33800001, bits(2 ** 127), bits(2 ** -126 * 1.5),
]


def operand_pairs(seed: int, n_random: int = 300) -> list[tuple[int, int]]:
    """Every pair of edges, random patterns, and pairs made to cancel or tie."""
    rng = random.Random(seed)
    pairs = [(x, y) for x in EDGES for y in EDGES]
    for _ in range(n_random):
        x = rng.getrandbits(32)
        pairs.append((x, rng.getrandbits(32)))
        pairs.append((x, x ^ 0x80000000 ^ rng.getrandbits(3)))                      # near cancellation
        pairs.append((x, (x & 0x80000000) | rng.randint(0, 0x7F7FFFFF) >> rng.randint(0, 30)))  # wide ranges
    return pairs


def hardware(op, a: int, b: int) -> int:
    with np.errstate(all="ignore"):
        r = np.float32(op(value(a), value(b)))
    return NAN if np.isnan(r) else int(r.view(np.uint32))


@pytest.mark.parametrize("name, op, kw", [
    ("add", np.add, {}), ("sub", np.subtract, {"negate_b": True}),
])
def test_add_and_sub_match_float32(name, op, kw):
    bad = [(hex(a), hex(b)) for a, b in operand_pairs(36)
           if binary(float_addmul.add, a, b, **kw) != hardware(op, a, b)]
    assert not bad, f"{name}: {len(bad)} wrong, e.g. {bad[:5]}"


def test_mul_matches_float32():
    bad = [(hex(a), hex(b)) for a, b in operand_pairs(37)
           if binary(float_addmul.mul, a, b) != hardware(np.multiply, a, b)]
    assert not bad, f"{len(bad)} wrong, e.g. {bad[:5]}"


def test_ties_round_to_even_and_overflow_to_infinity():
    one = bits(1.0)
    assert binary(float_addmul.add, one, bits(2 ** -24)) == one                 # tie: stays even
    assert binary(float_addmul.add, bits(1 + 2 ** -23), bits(2 ** -24)) == bits(1 + 2 ** -22)  # tie: up to even
    assert binary(float_addmul.add, 0x7F7FFFFF, 0x7F7FFFFF) == 0x7F800000
    assert binary(float_addmul.mul, 0x7F7FFFFF, bits(-2.0)) == 0xFF800000
    assert binary(float_addmul.mul, 0x00800000, bits(0.5)) == 0x00400000      # normal -> subnormal, exact
    assert binary(float_addmul.mul, 0x00000001, bits(0.5)) == 0                # half the smallest: tie to 0
    assert binary(float_addmul.mul, 0x00000003, bits(0.5)) == 0x00000002       # 1.5 ulp: tie to even
    assert binary(float_addmul.add, bits(1.0), bits(-1.0)) == 0                # exact cancellation: +0
    assert binary(float_addmul.add, 0x80000000, 0x80000000) == 0x80000000      # -0 + -0 = -0
    assert binary(float_addmul.add, 0x7F800000, 0xFF800000) == NAN             # inf - inf
    assert binary(float_addmul.mul, 0, 0xFF800000) == NAN                      # 0 * inf


def test_neg_and_abs_flip_and_clear_the_sign():
    for a in EDGES:
        assert binary(lambda em, d, x, _: float_compare.neg(em, d, x), a, 0) == a ^ 0x80000000
        assert binary(lambda em, d, x, _: float_compare.absolute(em, d, x), a, 0) == a & 0x7FFFFFFF


COMPARE = {"eq": np.equal, "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal}


def expected_comparison(cmp: str, a: int, b: int) -> bool:
    x, y = value(a), value(b)
    unordered = bool(np.isnan(x) or np.isnan(y))
    if cmp in ("num", "nan"):
        return unordered == (cmp == "nan")
    base = cmp[:-1] if cmp.endswith("u") else cmp
    holds = bool(x != y) if base == "ne" else bool(COMPARE[base](x, y))  # False on NaN
    return (unordered or holds) if cmp.endswith("u") else (not unordered and holds)


@pytest.mark.parametrize("cmp", ["eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu",
                                 "num", "nan"])
def test_setp_every_comparison(cmp):
    pairs = operand_pairs(38, n_random=60)
    pairs += [(a, a) for a, _ in pairs[:100]]
    bad = [(hex(a), hex(b)) for a, b in pairs
           if predicate(lambda em, d, x, y: float_compare.setp(em, d, cmp, x, y), a, b)
           != expected_comparison(cmp, a, b)]
    assert not bad, f"setp.{cmp}: {len(bad)} wrong, e.g. {bad[:5]}"


def ptx_min_max(a: int, b: int, is_max: bool) -> int:
    """PTX ``min``/``max.f32``: a NaN operand yields the other, two NaNs the canonical NaN,
    -0 is below +0."""
    x, y = value(a), value(b)
    if np.isnan(x) and np.isnan(y):
        return NAN
    if np.isnan(x) or np.isnan(y):
        return b if np.isnan(x) else a
    if x == y == 0:
        negative = (a | b) >> 31 if not is_max else (a & b) >> 31
        return 0x80000000 if negative else 0
    r = max(x, y) if is_max else min(x, y)
    return a if r == x else b


@pytest.mark.parametrize("is_max", [False, True])
def test_min_max_follow_ptx(is_max):
    bad = [(hex(a), hex(b)) for a, b in operand_pairs(39, n_random=100)
           if binary(float_compare.min_max, a, b, is_max=is_max) != ptx_min_max(a, b, is_max)]
    assert not bad, f"{len(bad)} wrong, e.g. {bad[:5]}"


ARITH_KERNEL = """
#define F(x) __builtin_bit_cast(float, x)
#define I(x) __builtin_bit_cast(int, x)
__global__ void k(const int* a, const int* b, int* s, int* p, int* m) {
    int i = threadIdx.x;
    float x = F(a[i]), y = F(b[i]);
    s[i] = I(x - y);
    p[i] = I(x * y);
    m[i] = I(x < y ? __builtin_fmaxf(x, y) : -__builtin_fabsf(x));
}
"""
"""Integer arrays carrying the bit patterns: the test reads exactly the bits the routines wrote."""


@needs_clang
def test_kernel_through_the_lowering(tmp_path):
    """The routines as the lowering places them (registers, blocks, loops) on the reference."""
    a = [bits(x) for x in (1.5, -0.0, 3e38, 1e-45)]
    b = [bits(x) for x in (0.25, 0.0, -3e38, float("nan"))]
    out = reference(cu(tmp_path, ARITH_KERNEL), args={"a": a, "b": b, "s": [0] * 4, "p": [0] * 4, "m": [0] * 4},
                    block=4, machine=LARGE_MACHINE).outputs
    mask = lambda xs: [x & 0xFFFFFFFF for x in xs]  # noqa: E731
    assert mask(out["s"]) == [hardware(np.subtract, x, y) for x, y in zip(a, b)]
    assert mask(out["p"]) == [hardware(np.multiply, x, y) for x, y in zip(a, b)]
    want_m = [ptx_min_max(x, y, True) if value(x) < value(y) else (x & 0x7FFFFFFF) ^ 0x80000000 for x, y in zip(a, b)]
    assert mask(out["m"]) == want_m


def test_div_and_rcp_match_float32():
    bad = [(hex(a), hex(b)) for a, b in operand_pairs(43, n_random=60)
           if binary(float_divide.divide, a, b) != hardware(np.divide, a, b)]
    assert not bad, f"div: {len(bad)} wrong, e.g. {bad[:5]}"
    rcp = lambda em, d, _, b: float_divide.reciprocal(em, d, b)  # noqa: E731
    bad = [hex(b) for _, b in operand_pairs(44, n_random=20)[::3]
           if binary(rcp, 0, b) != hardware(np.divide, bits(1.0), b)]
    assert not bad, f"rcp: {len(bad)} wrong, e.g. {bad[:5]}"


def test_sqrt_matches_float32():
    rng = random.Random(45)
    operands = EDGES + [rng.getrandbits(32) for _ in range(150)] + [rng.getrandbits(31) for _ in range(150)]
    root = lambda em, d, a, _: float_sqrt.square_root(em, d, a)  # noqa: E731
    with np.errstate(all="ignore"):
        want = {a: np.sqrt(value(a)) for a in operands}
    bad = [hex(a) for a in operands
           if binary(root, a, 0) != (NAN if np.isnan(want[a]) else int(want[a].view(np.uint32)))]
    assert not bad, f"{len(bad)} wrong, e.g. {bad[:5]}"
    assert binary(root, 0x80000000, 0) == 0x80000000 and binary(root, bits(-1.0), 0) == NAN


GUARDED_KERNEL = r"""
__global__ void k(const float* a, float* b) {
    int i = threadIdx.x;
    float r = 7.0f, x = a[i];
    asm("{\n\t.reg .pred %%q;\n\tsetp.gt.f32 %%q, %1, 0f40000000;\n\t@%%q add.f32 %0, %1, %1;\n"
        "\t@%%q setp.lt.f32 %%q, %1, 0f40800000;\n\t@!%%q mul.f32 %0, %0, %1;\n}" : "+f"(r) : "f"(x));
    b[i] = r;
}
"""
"""Predicated float instructions (PTX guards): the routine runs on every lane, the result
(a register or a predicate) is written only where the guard holds."""


@needs_clang
def test_guarded_float_instructions_write_only_where_the_guard_holds(tmp_path):
    out = reference(cu(tmp_path, GUARDED_KERNEL), args={"a": [1.0, 3.0, 5.0, -2.0], "b": [0.0] * 4},
                    block=4, machine=LARGE_MACHINE).outputs
    # x > 2: r = 2x, and where x < 4 no more; elsewhere r = r * x
    assert [x & 0xFFFFFFFF for x in out["b"]] == [bits(v) for v in (7.0, 6.0, 50.0, -14.0)]
