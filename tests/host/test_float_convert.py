"""``cvt`` with a float side, routine by routine, against NumPy float32 and exact rationals.

Each routine (``host/float_convert.py``) runs on one lane through the reference
interpreter's own ALU (``tests/support/float_routines``), over edge values (zeros, the
halves, subnormals, 2^23, 2^24, 2^31, 2^32, infinities, NaNs) and random patterns. The
expected values are written from what each conversion means: an exact float32 value
(NumPy's float32 is exactly a binary64) rounded by Python's ``round``/``floor``/``ceil``
/``int`` and saturated as PTX says; an integer's float32 from NumPy (``rn``) and its
neighbours (``nextafter``) for the directed modes; ``np.rint/trunc/floor/ceil`` for the
integral roundings.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction
from itertools import count

import numpy as np
import pytest

from qwengpu_mlx.core.errors import FrontendError, UnsupportedError
from qwengpu_mlx.core.machine import LARGE_MACHINE
from qwengpu_mlx.host.float_convert import ConvertEmitter, float_to_int, int_to_float, round_integral
from qwengpu_mlx.host.ir import VReg
from tests.support.cli import cu, needs_clang
from tests.support.float_routines import instruction_count, run
from tests.support.launching import reference

M32 = 0xFFFFFFFF
RANGES = {"s32": (-(1 << 31), (1 << 31) - 1), "u32": (0, M32), "s16": (-(1 << 15), (1 << 15) - 1),
          "u16": (0, 0xFFFF), "s8": (-128, 127), "u8": (0, 255)}


def f32(word: int) -> np.float32:
    return np.uint32(word & M32).view(np.float32)


def word(value) -> int:
    return int(np.float32(value).view(np.uint32))


EDGE_FLOATS = [word(v) for v in (
    0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999997, 0.50000006, -0.50000006, 1.0, -1.0, 0.7, -0.7,
    3.5, 4.5, 8388607.5, 8388608.0, 8388609.0, -8388607.5, 16777215.0, 16777216.0, 2147483520.0,
    2147483648.0, -2147483648.0, -2147483904.0, 4294967040.0, 4294967296.0, 32767.5, 32768.0, -32768.5,
    255.5, 256.0, -128.5, -129.0, 3.4028235e38, -3.4028235e38, np.inf, -np.inf)] + [
    1, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FFFFFFF]
RANDOM_FLOATS = [random.Random(3).getrandbits(32) for _ in range(1500)] + \
    [word(random.Random(4 + i).uniform(-70000, 70000)) for i in range(500)]
EDGE_INTS = [0, 1, 2, 3, 255, 256, (1 << 24) - 1, 1 << 24, (1 << 24) + 1, (1 << 24) + 3, (1 << 25) + 6,
             0x7FFFFFFF, 0x80000000, 0x80000001, 0xFFFFFF7F, 0xFFFFFF80, 0xFFFFFFFF, 0x7FFFFFBF, 0x7FFFFFC0,
             0x7FFFFF40, 0x7FFFFFC1]
RANDOM_INTS = [random.Random(5).getrandbits(32) >> random.Random(6 + i).randint(0, 31) for i in range(1500)]


def one_lane(routine, x: int, **kw) -> int:
    ids = count()
    em = ConvertEmitter(1, None, "test", lambda prefix: f"{prefix}{next(ids)}")
    return run(routine(em, "%d", VReg("%x"), **kw), {"%x": x}).regs["%d"]


def float_to_int_oracle(w: int, mode: str, to: str) -> int:
    f = f32(w)
    lo, hi = RANGES[to]
    if np.isnan(f):
        return 0
    if np.isinf(f):
        return (lo if f < 0 else hi) & M32
    v = Fraction(float(f))
    r = {"rni": round, "rzi": int, "rmi": math.floor, "rpi": math.ceil}[mode](v)
    return min(max(r, lo), hi) & M32


@pytest.mark.parametrize("to", ["s32", "u32", "s16", "u8"])
@pytest.mark.parametrize("mode", ["rni", "rzi", "rmi", "rpi"])
def test_float_to_integer_rounds_and_saturates(mode, to):
    for w in EDGE_FLOATS + RANDOM_FLOATS:
        got = one_lane(float_to_int, w, mode=mode, to=to)
        assert got == float_to_int_oracle(w, mode, to), (hex(w), float(f32(w)), mode, to, hex(got))


def int_to_float_oracle(x: int, mode: str) -> int:
    f = np.float32(float(x))  # exact in binary64, then one rounding: nearest even
    down = f if Fraction(float(f)) <= x else np.nextafter(f, np.float32(-np.inf))
    up = f if Fraction(float(f)) >= x else np.nextafter(f, np.float32(np.inf))
    chosen = {"rn": f, "rm": down, "rp": up, "rz": down if x >= 0 else up}[mode]
    return word(chosen)


@pytest.mark.parametrize("signed", [True, False], ids=["s32", "u32"])
@pytest.mark.parametrize("mode", ["rn", "rz", "rm", "rp"])
def test_integer_to_float_rounds_to_24_bits(mode, signed):
    for x in EDGE_INTS + RANDOM_INTS:
        value = x - (1 << 32) if signed and x >> 31 else x
        got = one_lane(int_to_float, x, mode=mode, signed=signed)
        assert got == int_to_float_oracle(value, mode), (value, mode, hex(got))


@pytest.mark.parametrize("mode, numpy_round", [("rni", np.rint), ("rzi", np.trunc), ("rmi", np.floor),
                                               ("rpi", np.ceil)])
def test_rounding_to_an_integral_float(mode, numpy_round):
    for w in EDGE_FLOATS + RANDOM_FLOATS:
        got = one_lane(round_integral, w, mode=mode)
        want = 0x7FFFFFFF if np.isnan(f32(w)) else word(numpy_round(f32(w)))
        assert got == want, (hex(w), float(f32(w)), mode, hex(got))


def test_the_routines_are_short_straight_lines():
    """No branch in any conversion, and the instruction counts the module states."""
    em = ConvertEmitter(1, None, "t", lambda prefix: prefix + str(id(object())))
    counts = {"s32 rni": instruction_count(float_to_int(em, "%d", VReg("%x"), "rni", "s32")),
              "s32 rzi": instruction_count(float_to_int(em, "%d", VReg("%x"), "rzi", "s32")),
              "rn s32": instruction_count(int_to_float(em, "%d", VReg("%x"), "rn", True)),
              "rzi f32": instruction_count(round_integral(em, "%d", VReg("%x"), "rzi")),
              "rni f32": instruction_count(round_integral(em, "%d", VReg("%x"), "rni"))}
    assert counts == {"s32 rni": 29, "s32 rzi": 22, "rn s32": 28, "rzi f32": 14, "rni f32": 25}, counts


CONVERSIONS = """\
__global__ void conversions(const float* x, const int* n, int* toint, float* tofloat, float* rounded) {
    int i = threadIdx.x;
    float v = x[i];
    toint[4 * i] = (int)v;
    toint[4 * i + 1] = __float2int_rn(v);
    toint[4 * i + 2] = __float2int_rd(v);
    toint[4 * i + 3] = (int)(unsigned)v;
    tofloat[2 * i] = (float)n[i];
    tofloat[2 * i + 1] = __uint2float_rz((unsigned)n[i]);
    rounded[4 * i] = floorf(v);
    rounded[4 * i + 1] = ceilf(v);
    rounded[4 * i + 2] = truncf(v);
    rounded[4 * i + 3] = rintf(v);
}
"""


@needs_clang
def test_a_kernel_converts_as_cuda_says(tmp_path):
    """``(int)``, ``__float2int_*``, ``(float)``, ``__uint2float_rz`` and floorf/ceilf/truncf/rintf
    through clang, the lowering and the reference interpreter."""
    xs = [2.5, -1.5, float("nan"), 3e9]
    ns = [-7, 16777217, 2147483647, -1]
    r = reference(cu(tmp_path, CONVERSIONS, "conversions.cu"), machine=LARGE_MACHINE,
                  args={"x": xs, "n": ns, "toint": [0] * 16, "tofloat": [0] * 8, "rounded": [0] * 16})
    x_words = [word(v) for v in xs]
    toint = [float_to_int_oracle(w, m, t) for w in x_words
             for m, t in (("rzi", "s32"), ("rni", "s32"), ("rmi", "s32"), ("rzi", "u32"))]
    tofloat = [w for n in ns for w in (int_to_float_oracle(n, "rn"), int_to_float_oracle(n & M32, "rz"))]
    rounded = [0x7FFFFFFF if np.isnan(v) else word(f(np.float32(v))) for v in xs
               for f in (np.floor, np.ceil, np.trunc, np.rint)]
    assert [w & M32 for w in r.outputs["toint"]] == toint
    assert [w & M32 for w in r.outputs["tofloat"]] == tofloat
    assert [w & M32 for w in r.outputs["rounded"]] == rounded


@needs_clang
@pytest.mark.parametrize("expr, says", [
    ("expf(a[i])", "expf is not supported: it comes from libdevice"),
    ("powf(a[i], 2.0f)", "powf is not supported"),
    ("(float)lrintf(a[i])", "lrintf is not supported"),
    ('({ long long v; asm("cvt.rni.s64.f32 %0, %1;" : "=l"(v) : "f"(a[i])); (float)(int)v; })', "64-bit integer"),
])
def test_what_has_no_instruction_is_refused_at_the_call(tmp_path, expr, says):
    code = f"__global__ void k(float* a) {{\n    int i = threadIdx.x;\n    a[i] = {expr};\n}}\n"
    with pytest.raises((FrontendError, UnsupportedError)) as e:
        reference(cu(tmp_path, code, "k.cu"), args={"a": [1.0] * 4})
    assert "k.cu:3" in str(e.value) and says in str(e.value), str(e.value)


CLASSIFY = """\
__global__ void classify(const float* x, int* o) {
    int i = threadIdx.x;
    float v = x[i];
    o[6 * i] = isnan(v);
    o[6 * i + 1] = isinf(v);
    o[6 * i + 2] = isfinite(v);
    o[6 * i + 3] = signbit(v);
    o[6 * i + 4] = (int)roundf(v);
    o[6 * i + 5] = (int)nearbyintf(v);
}
"""


def int_of(f: np.float32) -> int:
    """An integral float as ``(int)`` gives it: NaN 0, below -2^31 saturated."""
    return 0 if np.isnan(f) else -(1 << 31) if f < -2.0 ** 31 else int(f)


@needs_clang
def test_the_preludes_float_tests_and_roundings(tmp_path):
    """isnan/isinf/isfinite/signbit and roundf (half away from zero) / nearbyintf (half to even)."""
    xs = [2.5, -1.5, float("nan"), float("-inf")]
    r = reference(cu(tmp_path, CLASSIFY, "classify.cu"), machine=LARGE_MACHINE, args={"x": xs, "o": [0] * 24})
    want = []
    for v in (np.float32(x) for x in xs):
        away = np.float32(math.copysign(math.floor(abs(float(v)) + 0.5), v)) if np.isfinite(v) else v
        want += [int(np.isnan(v)), int(np.isinf(v)), int(np.isfinite(v)), int(np.signbit(v)),
                 int_of(away), int_of(np.rint(v))]
    assert r.outputs["o"] == want
