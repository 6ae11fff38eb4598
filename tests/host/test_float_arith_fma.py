"""``fma.rn.f32``: the routine against ``a * b + c`` done exactly and rounded once.

Python 3.11 has no ``math.fma`` and NumPy's float32 ``a * b + c`` rounds twice, so the
oracle is ``tests/support/oracles_float``: the exact value with ``fractions`` and one
rounding to binary32 written from IEEE-754; that rounding is itself checked here against
NumPy's float32 on random sums and products. The cases stress what only a fused
operation gets right: ``c`` cancelling the product to its last bits, products and sums
in the subnormal range, ties, and the special operands.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import random
import struct

import numpy as np
import pytest

from qwengpu_mlx.host import float_fma
from tests.support import oracles_float as f32
from tests.support.float_routines import ternary

EDGES = [0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 0x7F7FFFFF, 0xFF7FFFFF, 0x00000001,
         0x80000001, 0x007FFFFF, 0x00800000, 0x3F800000, 0xBF800000, 0x3FC00000, 0x40400000, 0x33800000,
         0x3F800001, 0x2F800000, 0x1F800000]


def value(b: int) -> np.float32:
    return np.uint32(b).view(np.float32)


def bits(x) -> int:
    return int(np.float32(x).view(np.uint32))


def numpy_word(r: np.float32) -> int:
    return f32.CANONICAL_NAN if np.isnan(r) else int(np.float32(r).view(np.uint32))


def test_the_oracle_rounding_agrees_with_numpy():
    rng = random.Random(40)
    with np.errstate(all="ignore"):
        for _ in range(400):
            a, b = rng.getrandbits(32), rng.getrandbits(32)
            assert f32.add(a, b) == numpy_word(value(a) + value(b)), (hex(a), hex(b))
            assert f32.mul(a, b) == numpy_word(value(a) * value(b)), (hex(a), hex(b))
            assert f32.div(a, b) == numpy_word(value(a) / value(b)), (hex(a), hex(b))
            assert f32.sqrt(a) == numpy_word(np.sqrt(value(a))), hex(a)
    assert f32.fma(bits(1 + 2 ** -23), bits(1 - 2 ** -23), bits(-1.0)) == bits(-(2.0 ** -46))  # one rounding


def _c_fmaf():
    """C's ``fmaf`` from the C library (correctly rounded once, as C99 requires), or None."""
    name = ctypes.util.find_library("m") or ctypes.util.find_library("c")
    try:
        fn = ctypes.CDLL(name).fmaf
    except (OSError, AttributeError, TypeError):
        return None
    fn.restype, fn.argtypes = ctypes.c_float, [ctypes.c_float] * 3
    return fn


def _c_word(fn, a: int, b: int, c: int) -> int:
    """``fmaf`` on three patterns, its result's pattern (any NaN as the canonical one)."""
    args = [ctypes.c_float.from_buffer_copy(struct.pack("<I", x)) for x in (a, b, c)]
    r = fn(*args)
    return f32.CANONICAL_NAN if r != r else struct.unpack("<I", struct.pack("<f", r))[0]


def test_the_fma_oracle_is_c_fmaf():
    """The exact-fraction oracle against the C library's ``fmaf`` on random operands and on
    the edges: subnormal products and sums, overflow, cancellation to the last bits and to
    zero, signed zeros, infinities and NaNs."""
    fn = _c_fmaf()
    if fn is None:
        pytest.skip("no C library fmaf")
    rng = random.Random(43)
    cases = fma_cases(44, 400)
    tiny, big = [0x00000001, 0x80000003, 0x007FFFFF, 0x00800000, 0x0C000000], [0x7F7FFFFF, 0x7E800000, 0xFF000001]
    cases += [(a, b, c) for a in tiny + big for b in tiny + big for c in (0, 0x80000000, 0x00000001, 0xFF7FFFFF)]
    for _ in range(400):   # products that c cancels exactly, or to a few ulps, of either sign
        a, b = rng.getrandbits(32), rng.getrandbits(32)
        with np.errstate(all="ignore"):
            p = value(a) * value(b)
        cases.append((a, b, bits(-p) ^ rng.choice([0, 1, 2, 0x80000000])))
    cases += [(z1, z2, z3) for z1 in (0, 0x80000000) for z2 in (0x3F800000, 0xBF800000) for z3 in (0, 0x80000000)]
    bad = [(hex(a), hex(b), hex(c)) for a, b, c in cases if f32.fma(a, b, c) != _c_word(fn, a, b, c)]
    assert not bad, f"{len(bad)} of {len(cases)} differ from C's fmaf, e.g. {bad[:5]}"


def fma_cases(seed: int, n: int) -> list[tuple[int, int, int]]:
    rng = random.Random(seed)
    cases = [(a, b, c) for a in EDGES[::2] for b in EDGES[1::2] for c in EDGES[::3]]
    with np.errstate(all="ignore"):
        for _ in range(n):
            a, b = rng.getrandbits(32), rng.getrandbits(32)
            product = value(a) * value(b)
            near = bits(-product) ^ rng.choice([0, 1, 2, 3, 0x80000000])       # c cancels the product
            field = (a >> 23 & 0xFF) + (b >> 23 & 0xFF) - 127 + rng.randint(-30, 30)
            nearby = (rng.getrandbits(1) << 31) | (min(max(field, 0), 254) << 23) | rng.getrandbits(23)
            cases += [(a, b, rng.getrandbits(32)), (a, b, near), (a, b, nearby)]
    return cases


def test_fma_rounds_once():
    bad = [(hex(a), hex(b), hex(c)) for a, b, c in fma_cases(41, 150)
           if ternary(float_fma.fma, a, b, c) != f32.fma(a, b, c)]
    assert not bad, f"{len(bad)} wrong, e.g. {bad[:5]}"


def test_fma_edges():
    one, tiny = bits(1.0), bits(2 ** -24)
    assert ternary(float_fma.fma, bits(1 + 2 ** -23), bits(1 - 2 ** -23), bits(-1.0)) == bits(-(2.0 ** -46))
    assert ternary(float_fma.fma, one, tiny, one) == one                     # tie to even
    assert ternary(float_fma.fma, 0x80000000, one, 0x80000000) == 0x80000000  # -0 * 1 + -0 = -0
    assert ternary(float_fma.fma, 0x80000000, one, 0) == 0                    # -0 + +0 = +0
    assert ternary(float_fma.fma, one, one, bits(-1.0)) == 0                  # exact cancellation: +0
    assert ternary(float_fma.fma, 0, 0x7F800000, one) == f32.CANONICAL_NAN     # 0 * inf
    assert ternary(float_fma.fma, 0x7F800000, one, 0xFF800000) == f32.CANONICAL_NAN  # inf - inf
    assert ternary(float_fma.fma, 0x7F7FFFFF, bits(2.0), bits(-3e38)) == f32.fma(0x7F7FFFFF, bits(2.0), bits(-3e38))
    assert ternary(float_fma.fma, 0x00000001, bits(0.5), 0) == 0              # half the smallest subnormal


@pytest.mark.benchmark
def test_fma_wide_sweep():
    bad = [(hex(a), hex(b), hex(c)) for a, b, c in fma_cases(42, 3000)
           if ternary(float_fma.fma, a, b, c) != f32.fma(a, b, c)]
    assert not bad, f"{len(bad)} wrong, e.g. {bad[:5]}"
