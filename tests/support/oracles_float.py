"""Oracles of the float32 conformance kernels (``examples/kernels/float_*.cu``) and the
exact binary32 arithmetic they are written in.

A float's value is taken exactly from its bits (:func:`exact`, a ``Fraction``), the
operation is done exactly, and the result is rounded once to binary32 by
:func:`to_binary32` (round to nearest, ties to even, subnormals, overflow to infinity):
IEEE-754's definition, written here from the standard and independent of the routines
under test (``tests/host/test_float_arith_fma.py`` checks it against NumPy's float32 on
random pairs). An NVIDIA GPU writes the canonical NaN ``0x7FFFFFFF`` for every NaN an
arithmetic instruction produces. Results are the arrays' words as signed 32-bit integers,
as ``oracles_base`` says (a float array holds its bit patterns).
"""

from __future__ import annotations

import math
from fractions import Fraction

from tests.support.oracles_base import Oracle, wrap

ORACLES: dict[str, Oracle] = {}

CANONICAL_NAN = 0x7FFFFFFF
INF = 0x7F800000
SIGN = 0x80000000


def oracle(fn: Oracle) -> Oracle:
    ORACLES[fn.__name__] = fn
    return fn


# ----------------------------------------------------------------------------- binary32


def is_nan(b: int) -> bool:
    return (b & 0x7FFFFFFF) > INF


def is_inf(b: int) -> bool:
    return (b & 0x7FFFFFFF) == INF


def exact(b: int) -> Fraction:
    """The value of a finite binary32 pattern."""
    b &= 0xFFFFFFFF
    field, fraction = (b >> 23) & 0xFF, b & 0x7FFFFF
    assert field != 0xFF, "not finite"
    magnitude = Fraction(fraction, 1 << 149) if field == 0 else \
        Fraction(fraction | 1 << 23) * Fraction(2) ** (field - 150)
    return -magnitude if b >> 31 else magnitude


def to_binary32(x: Fraction, zero_sign: int = 0) -> int:
    """``x`` rounded to the nearest binary32 (ties to even) as its pattern; an exact zero
    takes ``zero_sign`` (0 or ``SIGN``: IEEE-754 leaves the sign of a zero sum to the rule)."""
    if x == 0:
        return zero_sign
    sign = SIGN if x < 0 else 0
    x = abs(x)
    e = x.numerator.bit_length() - x.denominator.bit_length()    # 2^e <= x < 2^(e+1) after the fix
    if Fraction(2) ** e > x:
        e -= 1
    ulp = max(e, -126) - 23                                      # subnormals share the smallest ulp
    scaled = x / Fraction(2) ** ulp
    n, rest = divmod(scaled.numerator, scaled.denominator)
    twice = 2 * rest
    if twice > scaled.denominator or (twice == scaled.denominator and n & 1):
        n += 1
    if n == 1 << 24:                                             # rounded up to the next binade
        n, ulp = n >> 1, ulp + 1
    if ulp + 23 > 127:
        return sign | INF
    if n < 1 << 23:                                              # subnormal (or zero)
        return sign | n
    return sign | ((ulp + 23 + 127) << 23) | (n & 0x7FFFFF)


def _special_sum(a: int, b: int) -> int | None:
    """``a + b`` where an operand is a NaN or infinite, else None."""
    if is_nan(a) or is_nan(b):
        return CANONICAL_NAN
    if is_inf(a) and is_inf(b):
        return a if (a ^ b) >> 31 == 0 else CANONICAL_NAN
    if is_inf(a) or is_inf(b):
        return a if is_inf(a) else b
    return None


def add(a: int, b: int) -> int:
    """binary32 ``a + b``."""
    special = _special_sum(a, b)
    if special is not None:
        return special
    return to_binary32(exact(a) + exact(b), zero_sign=a & b & SIGN)


def mul(a: int, b: int) -> int:
    """binary32 ``a * b``."""
    sign = (a ^ b) & SIGN
    if is_nan(a) or is_nan(b):
        return CANONICAL_NAN
    if is_inf(a) or is_inf(b):
        zero = (a & 0x7FFFFFFF) == 0 or (b & 0x7FFFFFFF) == 0
        return CANONICAL_NAN if zero else sign | INF
    return to_binary32(exact(a) * exact(b), zero_sign=sign)


def fma(a: int, b: int, c: int) -> int:
    """binary32 ``a * b + c`` rounded once."""
    if is_nan(a) or is_nan(b) or is_nan(c):
        return CANONICAL_NAN
    if is_inf(a) or is_inf(b):
        product = mul(a, b)
        return product if product == CANONICAL_NAN else add(product, c)   # inf + c: exact
    if is_inf(c):
        return c
    p, s = exact(a) * exact(b), exact(a) * exact(b) + exact(c)
    zero_sign = (a ^ b) & c & SIGN if p == 0 and exact(c) == 0 else 0
    return to_binary32(s, zero_sign=zero_sign)


def words(values) -> list[int]:
    """Float patterns as the signed 32-bit integers a launch's outputs hold."""
    return [wrap(v) for v in values]


# ----------------------------------------------------------------------------- oracles


def float_arg(spec: dict, name: str):
    """A float parameter's launch value(s) as binary32 patterns: the nearest float to each
    number of the launch file (integers there; exact Fractions, one rounding)."""
    value = spec["args"][name]
    if isinstance(value, list):
        return [_number_bits(v) for v in value]
    return _number_bits(value)


def _number_bits(v) -> int:
    """A launch file's number rounded once; -0.0 keeps its sign (a Fraction has none)."""
    return SIGN if isinstance(v, float) and v == 0 and math.copysign(1.0, v) < 0 else to_binary32(Fraction(v))


def less(a: int, b: int) -> bool:
    """binary32 ``a < b`` (false with a NaN; -0 equals +0)."""
    return not (is_nan(a) or is_nan(b)) and _extended(a) < _extended(b)


def _extended(b: int) -> float:
    """A non-NaN pattern's value with infinities (for comparisons only)."""
    return (float("-inf") if b >> 31 else float("inf")) if is_inf(b) else exact(b)


def ptx_max(a: int, b: int) -> int:
    """PTX ``max.f32``: a NaN operand gives the other, two NaNs the canonical NaN, +0 above -0."""
    if is_nan(a) or is_nan(b):
        return CANONICAL_NAN if is_nan(a) and is_nan(b) else (b if is_nan(a) else a)
    if _extended(a) == _extended(b):
        return a & b            # equal values: +0 unless both are -0 (other equal patterns are equal)
    return a if _extended(a) > _extended(b) else b


def ptx_min(a: int, b: int) -> int:
    """PTX ``min.f32``: as :func:`ptx_max`, -0 below +0."""
    if is_nan(a) or is_nan(b):
        return CANONICAL_NAN if is_nan(a) and is_nan(b) else (b if is_nan(a) else a)
    if _extended(a) == _extended(b):
        return a | b
    return a if _extended(a) < _extended(b) else b


def ordered_sum(x: list[int], n: int) -> int:
    """x[0] + ... + x[n-1] in float32, in index order from +0, one rounding per add (a
    loop of ``acc += x[i]`` by one thread)."""
    s = 0
    for k in range(n):
        s = add(s, x[k])
    return s


@oracle
def float_saxpy(spec: dict):
    a, x, y, n = float_arg(spec, "a"), float_arg(spec, "x"), float_arg(spec, "y"), spec["args"]["n"]
    out = [fma(a, x[i], y[i]) if i < n else y[i] for i in range(len(y))]
    return {"x": words(x), "y": words(out)}


@oracle
def float_sum(spec: dict):
    x, n = float_arg(spec, "x"), spec["args"]["n"]
    s = ordered_sum(x, n)
    return {"x": words(x), "out": words([s])}


@oracle
def float_clamp(spec: dict):
    x, lo, hi = float_arg(spec, "x"), float_arg(spec, "lo"), float_arg(spec, "hi")
    scale = to_binary32(Fraction("0.37"))
    return {"x": words(x), "y": words(ptx_min(ptx_max(mul(v, scale), lo), hi) for v in x)}


@oracle
def float_tiny(spec: dict):
    x = float_arg(spec, "x")
    tiny, tenth = to_binary32(Fraction("1e-42")), to_binary32(Fraction("0.1"))
    return {"x": words(x), "small": words(mul(v, tiny) for v in x),
            "diff": words(add(add(v, tenth), v ^ SIGN) for v in x)}


@oracle
def float_specials(spec: dict):
    x = float_arg(spec, "x")
    v = [mul(e, INF) for e in x]
    y = [add(e, INF | SIGN) for e in v]
    two_and_half = to_binary32(Fraction(5, 2))
    flags = [int(less(e, two_and_half)) + 2 * int(is_nan(w)) + 4 * int(not is_nan(r) and not less(r, 0))
             for e, w, r in zip(x, v, y)]
    return {"x": words(x), "y": words(y), "flags": flags}


def div(a: int, b: int) -> int:
    """binary32 ``a / b``, correctly rounded."""
    sign = (a ^ b) & SIGN
    if is_nan(a) or is_nan(b) or (is_inf(a) and is_inf(b)):
        return CANONICAL_NAN
    if is_inf(a):
        return sign | INF
    if is_inf(b):
        return sign
    if exact(b) == 0:
        return CANONICAL_NAN if exact(a) == 0 else sign | INF
    return to_binary32(exact(a) / exact(b), zero_sign=sign)


def sqrt(a: int) -> int:
    """binary32 ``sqrt(a)``, correctly rounded: the integer root of the value scaled by
    4^200, one more half-unit where it is inexact (the root lies strictly between)."""
    if is_nan(a) or (a >> 31 and a & 0x7FFFFFFF):
        return CANONICAL_NAN
    if is_inf(a) or exact(a) == 0:
        return a
    scaled = exact(a) * 4 ** 200
    n = scaled.numerator // scaled.denominator               # exact: the value's denominator is 2^149 at most
    s = math.isqrt(n)
    return to_binary32(Fraction(2 * s + (s * s != n), 2 ** 201))


@oracle
def float_dot(spec: dict):
    x, y, n = float_arg(spec, "x"), float_arg(spec, "y"), spec["args"]["n"]
    s = 0
    for k in range(n):
        s = fma(x[k], y[k], s)
    return {"x": words(x), "y": words(y), "out": words([s])}


@oracle
def float_horner(spec: dict):
    c, x, degree = float_arg(spec, "c"), float_arg(spec, "x"), spec["args"]["degree"]
    p = []
    for v in x:
        acc = c[0]
        for k in range(1, degree + 1):
            acc = fma(acc, v, c[k])
        p.append(acc)
    return {"c": words(c), "x": words(x), "p": words(p)}


@oracle
def float_divide(spec: dict):
    a, b = float_arg(spec, "a"), float_arg(spec, "b")
    scale = to_binary32(Fraction("1e-38"))
    return {"a": words(a), "b": words(b), "q": words(div(x, y) for x, y in zip(a, b)),
            "r": words(div(scale, y) for y in b)}


@oracle
def float_norm(spec: dict):
    x, n = float_arg(spec, "x"), spec["args"]["n"]
    s = 0
    for k in range(n):
        s = fma(x[k], x[k], s)
    return {"x": words(x), "out": words([sqrt(s)])}


@oracle
def float_newton(spec: dict):
    a = float_arg(spec, "a")
    half = to_binary32(Fraction(1, 2))
    roots = []
    for v in a:
        x = v
        for _ in range(6):
            x = mul(add(x, div(v, x)), half)
        roots.append(x)
    return {"a": words(a), "root": words(roots)}


def _ordered(x: int, y: int):
    """(less, equal) of two binary32 patterns, or None if either is a NaN."""
    if is_nan(x) or is_nan(y):
        return None
    return _extended(x) < _extended(y), _extended(x) == _extended(y)


@oracle
def float_compare(spec: dict):
    a, b = float_arg(spec, "a"), float_arg(spec, "b")
    flags = []
    for i, (x, y) in enumerate(zip(a, b)):
        if i >= 6:
            y = 0x7FC00000
        order = _ordered(x, y)
        lt, eq = order if order else (False, False)
        gt = order is not None and not lt and not eq
        bits_ = [lt, lt or eq, eq, not eq, gt or eq, gt, not lt, is_nan(y)]   # C's != is true for NaN
        flags.append(sum(int(v) << k for k, v in enumerate(bits_)))
    return {"a": words(a), "b": words(b), "flags": flags}


@oracle
def float_minmax(spec: dict):
    a, b = float_arg(spec, "a"), float_arg(spec, "b")
    lo, hi = [], []
    for i, (x, y) in enumerate(zip(a, b)):
        x = 0x7FC00000 if i == 6 else x
        y = 0x7FC00000 if 4 <= i <= 6 else y
        x = x ^ SIGN if i == 7 else x
        lo.append(ptx_min(x, y))
        hi.append(ptx_max(x, y))
    return {"a": words(a), "b": words(b), "lo": words(lo), "hi": words(hi)}


@oracle
def float_overflow(spec: dict):
    x = float_arg(spec, "x")
    e30, e8 = to_binary32(Fraction(10) ** 30), to_binary32(Fraction(10) ** 8)
    big = [mul(mul(v, e30), e8) for v in x]
    return {"x": words(x), "big": words(big), "back": words(add(v, v) for v in big)}


def flushed(b: int) -> int:
    """A subnormal pattern made the zero of its sign (PTX's flush to zero)."""
    return b & SIGN if 0 < b & 0x7FFFFFFF < 0x00800000 else b


@oracle
def float_atomic_sum(spec: dict):
    """Thread i's ``atomicAdd(sum, x[i])`` for i < n, in thread order (the machine's serial
    order: warps in turn, lanes ascending); ``atom.add.f32`` on global memory flushes
    subnormal inputs and results to sign-preserving zero (PTX ISA)."""
    x, n = float_arg(spec, "x"), spec["args"]["n"]
    word, olds = float_arg(spec, "sum")[0], float_arg(spec, "olds")
    for i in range(n):
        olds[i] = word
        word = flushed(add(flushed(word), flushed(x[i])))
    return {"x": words(x), "sum": words([word]), "olds": words(olds)}


# ------------------------------------------------------- lerp, stencil, mean, conversions


def _arg_bits(value) -> int:
    """A launch file's float: a number rounded once, or "nan" (the quiet NaN 0x7FC00000 the
    interface binds for it, as C's and NumPy's default NaN), "inf", "-inf"."""
    special = {"nan": 0x7FC00000, "inf": INF, "-inf": INF | SIGN}
    return special[value] if isinstance(value, str) else to_binary32(Fraction(value))


@oracle
def float_lerp(spec: dict):
    a, b, t, n = float_arg(spec, "a"), float_arg(spec, "b"), float_arg(spec, "t"), spec["args"]["n"]
    out = [fma(add(b[i], a[i] ^ SIGN), t, a[i]) for i in range(n)]  # b - a, then t * d + a once
    out += [0] * (len(spec["args"]["out"]) - n)
    return {"a": words(a), "b": words(b), "out": words(out)}


@oracle
def float_stencil(spec: dict):
    x, n = float_arg(spec, "x"), spec["args"]["n"]
    three = to_binary32(Fraction(3))
    out = [x[i] if i in (0, n - 1) else div(add(add(x[i - 1], x[i]), x[i + 1]), three) for i in range(n)]
    return {"x": words(x), "out": words(out)}


@oracle
def float_mean(spec: dict):
    x, n = float_arg(spec, "x"), spec["args"]["n"]
    s = ordered_sum(x, n)
    return {"x": words(x), "mean": words([div(s, to_binary32(Fraction(n)))])}


def _to_int(b: int, rounding) -> int:
    """PTX ``cvt.r*i.s32.f32``: the value rounded to an integer, saturated to int32, NaN -> 0."""
    if is_nan(b):
        return 0
    if is_inf(b):
        return -(1 << 31) if b >> 31 else (1 << 31) - 1
    return max(-(1 << 31), min((1 << 31) - 1, rounding(exact(b))))


def _nearest_even(x: Fraction) -> int:
    low = math.floor(x)
    rest = x - low
    return low + (1 if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and low % 2) else 0)


@oracle
def float_to_int(spec: dict):
    x = [_arg_bits(v) for v in spec["args"]["x"]]
    toward_zero = lambda v: math.trunc(v)  # noqa: E731
    return {"x": words(x), "trunc": [_to_int(b, toward_zero) for b in x],
            "nearest": [_to_int(b, _nearest_even) for b in x],
            "down": [_to_int(b, math.floor) for b in x], "up": [_to_int(b, math.ceil) for b in x]}


# ------------------------------------------- kernels that call shared routines (float_routines)


@oracle
def float_variance(spec: dict):
    """The sum in index order, the mean a division by n; the squared deviations summed by
    an fma each (one rounding), the variance a division by n."""
    x, n = float_arg(spec, "x"), spec["args"]["n"]
    count = to_binary32(Fraction(n))
    s = ordered_sum(x, n)
    mean = div(s, count)
    q = 0
    for k in range(n):
        d = add(x[k], mean ^ SIGN)
        q = fma(d, d, q)
    return {"x": words(x), "out": words([mean, div(q, count)])}


@oracle
def float_ratios(spec: dict):
    a, b = float_arg(spec, "a"), float_arg(spec, "b")
    one, three = to_binary32(Fraction(1)), to_binary32(Fraction(3))
    out = []
    for i, (x, y) in enumerate(zip(a, b)):
        r = div(x, y) if i & 1 else div(y, x)
        if i < 3:
            r = div(r, add(x, one))
        out.append(add(div(r, y), div(x, three)))
    return {"a": words(a), "b": words(b), "out": words(out)}


@oracle
def float_normalise(spec: dict):
    x, n = float_arg(spec, "x"), spec["args"]["n"]
    out = float_arg(spec, "out")
    s, lo, hi = 0, x[0], x[0]
    for k in range(n):
        s, lo, hi = add(s, x[k]), ptx_min(lo, x[k]), ptx_max(hi, x[k])
    mean, scale = div(s, to_binary32(Fraction(n))), add(hi, lo ^ SIGN)
    for i in range(n):
        out[i] = div(add(x[i], mean ^ SIGN), scale)
    return {"x": words(x), "out": words(out)}


@oracle
def float_add3(spec: dict):
    a, b, c = float_arg(spec, "a"), float_arg(spec, "b"), float_arg(spec, "c")
    return {"a": words(a), "b": words(b), "c": words(c),
            "out": words([add(add(x, y), z) for x, y, z in zip(a, b, c)])}


def block_sum(terms: list[int], threads: int, step) -> int:
    """A thread block's sum as the kernels write it: thread ``t`` folds ``terms[t]``,
    ``terms[t + threads]``, ... into its own accumulator from +0 by ``step(acc, term)``
    (one rounding each), then a shared-memory tree adds ``s[t + o]`` into ``s[t]`` for
    ``t < o``, ``o`` halving from ``threads / 2``; the sum is ``s[0]``."""
    s = []
    for t in range(threads):
        acc = 0
        for term in terms[t::threads]:
            acc = step(acc, term)
        s.append(acc)
    o = threads // 2
    while o > 0:
        s[:o] = [add(s[t], s[t + o]) for t in range(o)]
        o //= 2
    return s[0]


@oracle
def float_mean_var(spec: dict):
    """The mean a block sum of the elements over n (``cvt.rn`` of n); the variance a block
    sum of the squared deviations (``e = x - m``, then ``d + e * e`` contracted into one
    fma) over n - 1."""
    x, n, threads = float_arg(spec, "x"), spec["args"]["n"], spec["block"]
    m = div(block_sum(x[:n], threads, add), to_binary32(Fraction(n)))
    deviations = [add(v, m ^ SIGN) for v in x[:n]]
    q = block_sum(deviations, threads, lambda acc, e: fma(e, e, acc))
    return {"x": words(x), "mean": words([m]), "var": words([div(q, to_binary32(Fraction(n - 1)))])}


@oracle
def float_rms_norm(spec: dict):
    """r = sqrt(block sum of x * x (an fma each) / n + 1e-6f), each element over r."""
    x, n, threads = float_arg(spec, "x"), spec["args"]["n"], spec["block"]
    y = float_arg(spec, "y")
    s = block_sum(x[:n], threads, lambda acc, v: fma(v, v, acc))
    r = sqrt(add(div(s, to_binary32(Fraction(n))), to_binary32(Fraction("1e-6"))))
    y[:n] = [div(v, r) for v in x[:n]]
    return {"x": words(x), "y": words(y)}


@oracle
def float_max_sum_norm(spec: dict):
    """A block maximum (``fmaxf`` from -1e30f per thread, then a tree), a block sum of
    ``e * e + 1`` (one fma, ``e = x - max``), each element's ``e * e + 1`` over the sum."""
    x, n, threads = float_arg(spec, "x"), spec["args"]["n"], spec["block"]
    y = float_arg(spec, "y")
    m = [to_binary32(Fraction(-10 ** 30))] * threads
    for i in range(n):
        m[i % threads] = ptx_max(m[i % threads], x[i])
    o = threads // 2
    while o > 0:
        m[:o] = [ptx_max(m[t], m[t + o]) for t in range(o)]
        o //= 2
    terms = [fma(e, e, to_binary32(Fraction(1))) for e in (add(v, m[0] ^ SIGN) for v in x[:n])]
    total = block_sum(terms, threads, add)
    y[:n] = [div(term, total) for term in terms]
    return {"x": words(x), "y": words(y)}


@oracle
def float_vector_pairs(spec: dict):
    """Each float4 (x, y, z, w) to the float2 (x + y, z * w)."""
    v = float_arg(spec, "v")
    out = []
    for x, y, z, w in zip(v[0::4], v[1::4], v[2::4], v[3::4]):
        out += [add(x, y), mul(z, w)]
    return {"v": words(v), "out": words(out)}


@oracle
def float_dot_mean(spec: dict):
    """The block sum of a * b (an fma each) over n."""
    a, b, n, threads = float_arg(spec, "a"), float_arg(spec, "b"), spec["args"]["n"], spec["block"]
    s = block_sum(list(zip(a[:n], b[:n])), threads, lambda acc, p: fma(p[0], p[1], acc))
    return {"a": words(a), "b": words(b), "out": words([div(s, to_binary32(Fraction(n)))])}


@oracle
def float_running_stats(spec: dict):
    """Per thread t, over x[t], x[t + block], ...: d = x - mean, mean + d / count (cvt.rn
    of the count), m2 + d * (x - new mean) contracted into one fma; then the mean and m2
    over count - 1 (0 for one element or none)."""
    x, n, threads = float_arg(spec, "x"), spec["args"]["n"], spec["block"]
    out = []
    for t in range(threads):
        mean, m2, count = 0, 0, 0
        for v in x[t:n:threads]:
            count += 1
            d = add(v, mean ^ SIGN)
            mean = add(mean, div(d, to_binary32(Fraction(count))))
            m2 = fma(d, add(v, mean ^ SIGN), m2)
        out += [mean, div(m2, to_binary32(Fraction(count - 1))) if count > 1 else 0]
    return {"x": words(x), "out": words(out)}


# ------------------------------------------------ a 64-bit count, the _rn intrinsics unfused


@oracle
def float_size_t_mean(spec: dict):
    """Each row < rows summed in index order from +0, divided by cols converted to the
    nearest float (a 64-bit count); the rows beyond keep their words."""
    x, rows, cols = float_arg(spec, "x"), spec["args"]["rows"], spec["args"]["cols"]
    mean = float_arg(spec, "mean")
    count = to_binary32(Fraction(cols))
    for r in range(min(rows, len(mean))):
        mean[r] = div(ordered_sum(x[r * cols:(r + 1) * cols], cols), count)
    return {"x": words(x), "mean": words(mean)}


@oracle
def float_rn_unfused(spec: dict):
    """``__fadd_rn(__fmul_rn(a, b), c)``: the product rounded, then the sum rounded; ``a * b + c``:
    the exact value rounded once (clang's contraction)."""
    a, b, c = float_arg(spec, "a"), float_arg(spec, "b"), float_arg(spec, "c")
    return {"a": words(a), "b": words(b), "c": words(c),
            "twice": words(add(mul(x, y), z) for x, y, z in zip(a, b, c)),
            "once": words(fma(x, y, z) for x, y, z in zip(a, b, c))}


@oracle
def float_fixed64(spec: dict):
    """``q = (long long)(x * 2^32)``: the product rounded once, truncated toward zero,
    saturated to 64-bit signed (PTX), NaN 0; its words; ``(float)(q >> 16)`` (an arithmetic
    shift) rounded to nearest."""
    x = [_arg_bits(v) for v in spec["args"]["x"]]
    lo, hi, back = [], [], []
    for b in x:
        p = mul(b, to_binary32(Fraction(2) ** 32))
        if is_nan(p):
            q = 0
        elif is_inf(p):
            q = -(1 << 63) if p >> 31 else (1 << 63) - 1
        else:
            q = max(-(1 << 63), min((1 << 63) - 1, math.trunc(exact(p))))
        lo.append(wrap(q & 0xFFFFFFFF))
        hi.append(wrap((q >> 32) & 0xFFFFFFFF))
        back.append(to_binary32(Fraction(q >> 16)))
    return {"x": words(x), "lo": lo, "hi": hi, "back": words(back)}
