"""A 64-bit integer converted to a float (``(float)n`` of a ``long long``/``size_t``, ``sum / n``
with a ``size_t n``), against the integer's exact value rounded once to binary32; a float
converted to a 64-bit integer (``(long long)x``) against its exact value truncated.

The expected float is ``to_binary32`` of the integer (round to nearest even, from
``tests/support/oracles_float``, written from IEEE-754), or for the directed modes the
float at or below / at or above the integer: the nearest one and its neighbour, picked by
comparing exact values. The values cover ties and near-ties at every shift of the
leading word, bits only in the low word below the rounding bit (the sticky case), the
word boundaries, the extremes and random patterns.
"""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pytest

from qwengpu_mlx.core.errors import UnsupportedError
from qwengpu_mlx.core.machine import LARGE_MACHINE
from tests.support.cli import cu, needs_clang
from tests.support.launching import reference
from tests.support.oracles_float import div, exact, to_binary32, words

CONVERT = """
__global__ void convert(const int* lo, const int* hi, float* out) {
    int i = threadIdx.x;
    long long v = ((long long)hi[i] << 32) | (unsigned)lo[i];
    unsigned long long u = (unsigned long long)v;
    float r;
    asm("cvt.%s %%0, %%1;" : "=f"(r) : "l"(%s));
    out[i] = r;
}
"""

CAST = """
__global__ void convert(const int* lo, const int* hi, float* out) {
    int i = threadIdx.x;
    long long v = ((long long)hi[i] << 32) | (unsigned)lo[i];
    out[i] = (float)%s;
}
"""

MEAN = """
__global__ void mean_of(const float* x, float* out, size_t n) {
    size_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] / n;
}
"""

M64 = (1 << 64) - 1


def _values() -> list[int]:
    """Unsigned 64-bit patterns: edges, ties and near-ties at each shift, random ones."""
    edges = [0, 1, 0xFFFFFFFF, 1 << 32, (1 << 32) + 1, (1 << 53) + 1, (1 << 63) - 1, 1 << 63, M64, M64 - 1,
             (1 << 63) + 1, 0xFFFFFF8000000000, 0xFFFFFF7FFFFFFFFF, 0x7FFFFFC000000000, 0x7FFFFFBFFFFFFFFF]
    ties = []
    for shift in (8, 9, 20, 31, 32, 33, 39, 40):
        tie = ((1 << 24) + 1) << shift >> 1 << 1          # odd significand, then the half-unit below it
        base = ((1 << 24) | 1) << (shift - 1) if shift > 0 else 0
        ties += [base, base + 1, base - 1, ((1 << 24) << (shift - 1)) + (1 << (shift - 2)), tie & M64]
    rng = random.Random(64)
    randoms = [rng.getrandbits(64) >> rng.randint(0, 40) for _ in range(40)]
    return [v & M64 for v in edges + ties + randoms]


def _signed(v: int) -> int:
    return v - (1 << 64) if v >> 63 else v


def _directed(n: int, up: bool) -> int:
    """The float at or above (``up``) or at or below the non-negative integer ``n``."""
    r = to_binary32(Fraction(n))
    if exact(r) == n or (exact(r) > n) == up:
        return r
    return r + 1 if up else r - 1                        # the neighbour on the other side (n >= 0)


def _toward_zero(n: int) -> int:
    magnitude = _directed(abs(n), up=False)
    return magnitude | (0x80000000 if n < 0 and magnitude else 0)


def _expected(conversion: str, v: int) -> int:
    if conversion.endswith("s64"):
        n = _signed(v)
        return to_binary32(Fraction(n)) if conversion.startswith("rn") else _toward_zero(n)
    mode = conversion[:2]
    return to_binary32(Fraction(v)) if mode == "rn" else _directed(v, up=mode == "rp")


def _words(values: list[int]) -> list[int]:
    return [w - (1 << 32) if w >> 31 else w for w in values]


def _converted(tmp_path, code: str, values: list[int]) -> list[int]:
    n = len(values)
    args = {"lo": _words([v & 0xFFFFFFFF for v in values]), "hi": _words([v >> 32 for v in values]),
            "out": [0.0] * n}
    return reference(cu(tmp_path, code, "convert.cu"), machine=LARGE_MACHINE, block=n, args=args).outputs["out"]


CONVERSIONS = ["rn.f32.s64", "rz.f32.s64", "rn.f32.u64", "rz.f32.u64", "rm.f32.u64", "rp.f32.u64"]


@needs_clang
@pytest.mark.parametrize("conversion", CONVERSIONS)
def test_every_mode_against_the_exact_value(tmp_path, conversion):
    values = _values()
    code = CONVERT % (conversion, "v" if conversion.endswith("s64") else "u")
    for k in range(0, len(values), 32):
        chunk = values[k:k + 32]
        assert _converted(tmp_path, code, chunk) == words(_expected(conversion, v) for v in chunk), conversion


@needs_clang
def test_the_casts_clang_writes(tmp_path):
    values = _values()[:32]
    assert _converted(tmp_path, CAST % "v", values) == words(_expected("rn.f32.s64", v) for v in values)
    assert _converted(tmp_path, CAST % "(unsigned long long)v", values) == \
        words(_expected("rn.f32.u64", v) for v in values)


@needs_clang
def test_a_mean_divides_by_a_size_t(tmp_path):
    x = [1.0, 2.0, 4.0, 7.0]
    r = reference(cu(tmp_path, MEAN, "mean_of.cu"), machine=LARGE_MACHINE, block=4,
                  args={"x": x, "out": [0.0] * 4, "n": 3})
    three = to_binary32(Fraction(3))
    assert r.outputs["out"] == words([div(to_binary32(Fraction(v)), three) for v in x[:3]] + [0])


@needs_clang
def test_a_directed_rounding_of_a_signed_value_is_refused_at_its_line(tmp_path):
    code = """__global__ void down(const int* a, float* out) {
    long long v = (long long)a[threadIdx.x] << 40;
    float r;
    asm("cvt.rm.f32.s64 %0, %1;" : "=f"(r) : "l"(v));
    out[threadIdx.x] = r;
}
"""
    with pytest.raises(UnsupportedError, match=r"down\.cu:4.*cvt\.rm\.f32\.s64.*\(\.rn"):
        reference(cu(tmp_path, code, "down.cu"), machine=LARGE_MACHINE, args={"a": [1, 2, 3, 4], "out": [0.0] * 4})


TO_WIDE = """
__global__ void to_wide(const float* x, int* lo, int* hi, int* ulo, int* uhi) {
    int i = threadIdx.x;
    long long v = (long long)x[i];
    unsigned long long u = (unsigned long long)x[i];
    lo[i] = (int)v; hi[i] = (int)(v >> 32);
    ulo[i] = (int)u; uhi[i] = (int)(u >> 32);
}
"""


def _truncated(b: int, lo: int, hi: int) -> int:
    """PTX ``cvt.rzi`` to a 64-bit integer: toward zero, saturated to ``[lo, hi]``, NaN 0."""
    if (b & 0x7FFFFFFF) > 0x7F800000:
        return 0
    if (b & 0x7FFFFFFF) == 0x7F800000:
        return lo if b >> 31 else hi
    v = exact(b)
    return max(lo, min(hi, int(v)))                     # int() of a Fraction truncates toward zero


def _word_pair(v: int) -> tuple[int, int]:
    v &= M64
    low, high = v & 0xFFFFFFFF, v >> 32
    return (low - (1 << 32) if low >> 31 else low), (high - (1 << 32) if high >> 31 else high)


def _float_patterns() -> list[int]:
    """Floats around 2^31, 2^32, 2^63, 2^64, every shift of the significand, specials, randoms."""
    powers = [to_binary32(Fraction(2) ** k) for k in (0, 23, 30, 31, 32, 33, 39, 40, 47, 55, 62, 63, 64)]
    near = [p + d for p in powers for d in (-1, 1)]
    special = [0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 1, 0x3F000000, 0xBF7FFFFF]
    rng = random.Random(65)
    randoms = [rng.getrandbits(32) & 0xDFFFFFFF | 0x40000000 for _ in range(40)]   # exponents 2^1 .. 2^128
    values = powers + near + special + randoms
    return values + [v ^ 0x80000000 for v in values]


@needs_clang
def test_a_float_to_a_64_bit_integer(tmp_path):
    patterns = _float_patterns()
    src = cu(tmp_path, TO_WIDE, "to_wide.cu")
    for k in range(0, len(patterns), 32):
        chunk = patterns[k:k + 32]
        n = len(chunk)
        xs = [float(np.uint32(b).view(np.float32)) if (b & 0x7FFFFFFF) <= 0x7F800000 else "nan" for b in chunk]
        got = reference(src, machine=LARGE_MACHINE, block=n,
                        args={"x": xs, "lo": [0] * n, "hi": [0] * n, "ulo": [0] * n, "uhi": [0] * n}).outputs
        signed = [_word_pair(_truncated(b, -(1 << 63), (1 << 63) - 1)) for b in chunk]
        unsigned = [_word_pair(_truncated(b, 0, M64)) for b in chunk]
        assert list(zip(got["lo"], got["hi"])) == signed
        assert list(zip(got["ulo"], got["uhi"])) == unsigned
