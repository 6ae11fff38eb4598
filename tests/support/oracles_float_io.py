"""Oracles of the float data-movement and conversion kernels (``examples/kernels/floatio_*.cu``).

Written from what each kernel means, with NumPy's float32 (IEEE-754 binary32, exactly
rounded) and Python's exact integers: a launch file's decimal is the float32 nearest to
it, a conversion to an integer rounds the float's exact value by the mode and saturates
as PTX says (NaN gives 0), an integer converts to its nearest float32 (``rn``) or the
neighbour below (``rz`` of a non-negative), an integral rounding is ``np.floor`` and
friends, and a NaN the GPU computes is the canonical ``0x7FFFFFFF``. Results are the
arrays' words as signed 32-bit integers, as ``oracles_base`` says.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from tests.support.oracles_base import Oracle, wrap

ORACLES: dict[str, Oracle] = {}

CANONICAL_NAN = 0x7FFFFFFF
INT_MIN, INT_MAX, UINT_MAX = -(1 << 31), (1 << 31) - 1, (1 << 32) - 1


def oracle(fn: Oracle) -> Oracle:
    ORACLES[fn.__name__] = fn
    return fn


def f32(value) -> np.float32:
    """A launch file's float: a number (its nearest float32) or "nan"/"inf"/"-inf"."""
    return np.float32(float(value))


def bits(f: np.float32) -> int:
    return int(np.float32(f).view(np.uint32))


def word(f: np.float32) -> int:
    """The float's word as the machine's memory reads out: a signed 32-bit integer."""
    return wrap(bits(f))


def computed(f: np.float32) -> int:
    """A float the GPU computed: its word, a NaN the canonical one."""
    return wrap(CANONICAL_NAN) if np.isnan(f) else word(f)


def to_int(f: np.float32, rounding, lo: int, hi: int) -> int:
    """``f`` rounded to an integer and saturated to ``[lo, hi]``, NaN 0, as PTX's ``cvt``."""
    if np.isnan(f):
        return 0
    if np.isinf(f):
        return lo if f < 0 else hi
    return min(max(rounding(Fraction(float(f))), lo), hi)


def uint_to_float_toward_zero(n: int) -> np.float32:
    """The float32 at or below the unsigned ``n``: its nearest, or the one under it."""
    f = np.float32(float(n))
    return f if Fraction(float(f)) <= n else np.nextafter(f, np.float32(0))


# ----------------------------------------------------------------------------- oracles


@oracle
def floatio_select(spec):
    args, n = spec["args"], spec["block"]
    values = [f32(v) for v in args["in"]]
    fallback = f32(args["fallback"])
    out = [values[n - 1 - i] if args["keep"][i] > 0 else fallback for i in range(n)]
    return {"in": [word(v) for v in values], "keep": list(args["keep"]), "out": [word(v) for v in out],
            "bits": [wrap(bits(values[n - 1 - i]) & 0x7FFFFFFF) for i in range(n)]}


@oracle
def floatio_convert(spec):
    args = spec["args"]
    xs = [f32(v) for v in args["x"]]
    ns = [int(v) for v in args["n"]]
    toint = []
    for v in xs:
        toint += [to_int(v, int, INT_MIN, INT_MAX), to_int(v, round, INT_MIN, INT_MAX),
                  to_int(v, math.floor, INT_MIN, INT_MAX), wrap(to_int(v, int, 0, UINT_MAX))]
    tofloat = []
    for n in ns:
        tofloat += [word(np.float32(float(n))), word(uint_to_float_toward_zero(n & UINT_MAX))]
    rounded = [computed(r(v)) for v in xs for r in (np.floor, np.ceil, np.trunc, np.rint)]
    return {"x": [word(v) for v in xs], "n": ns, "toint": toint, "tofloat": tofloat, "rounded": rounded}


@oracle
def floatio_quantize(spec):
    args = spec["args"]
    xs = [f32(v) for v in args["x"]]
    scale, step = f32(args["scale"]), f32(args["step"])
    q = [to_int(np.float32(v * scale), round, INT_MIN, INT_MAX) for v in xs]  # one float32 product
    back = [np.float32(np.float32(k) * step) for k in q]
    return {"x": [word(v) for v in xs], "q": q, "back": [computed(b) for b in back]}
