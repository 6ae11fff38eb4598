"""Oracles of the conformance kernels for 8- and 16-bit integer code and the CUDA integer intrinsics (__popc, __clz, ...).

Written from what each kernel *means*, as ``oracles_base`` explains; registered with
this module's own ``oracle`` decorator and merged into ``tests.support.oracles.ORACLES``.
"""

from __future__ import annotations

from tests.support.oracles_base import MASK32, Oracle

ORACLES: dict[str, Oracle] = {}


def oracle(fn: Oracle) -> Oracle:
    ORACLES[fn.__name__] = fn
    return fn


# ----------------------------------------------------------------------------- helpers


def as_type(x: int, bits: int, signed: bool) -> int:
    """``x`` converted to a C integer type of ``bits`` bits (wraps, as a cast does)."""
    x &= (1 << bits) - 1
    return x - (1 << bits) if signed and x >> (bits - 1) else x


def c_div(a: int, b: int) -> int:
    """C's ``/``: truncation toward zero."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def c_rem(a: int, b: int) -> int:
    """C's ``%``: the remainder takes the dividend's sign."""
    return a - c_div(a, b) * b


def ints(spec: dict, name: str) -> list[int]:
    return [int(v) for v in spec["args"][name]]


def u32(v: int) -> int:
    return v & MASK32


# ----------------------------------------------------------------------------- 8- and 16-bit code


@oracle
def clock_hms(spec):
    secs, n = ints(spec, "secs"), int(spec["args"]["n"])
    h, m, s = (ints(spec, k) for k in ("h", "m", "s"))
    for i in range(min(n, spec["block"])):
        h[i], m[i], s[i] = c_div(secs[i], 3600), c_div(c_rem(secs[i], 3600), 60), c_rem(secs[i], 60)
    return {"secs": secs, "h": h, "m": m, "s": s}


@oracle
def digits_short(spec):
    x = [as_type(v, 16, True) for v in ints(spec, "x")]
    return {"x": x,
            "tens": [c_div(c_rem(v, 100), 10) for v in x],
            "q": [as_type(c_div(v, 7), 16, True) for v in x],
            "r": [as_type(c_rem(v, 7), 16, True) for v in x]}


@oracle
def caesar_shift(spec):
    text, k, n = ints(spec, "text"), int(spec["args"]["k"]), int(spec["args"]["n"])
    out = list(text)
    for i in range(min(n, spec["block"] * spec["grid"])):
        ch = chr(text[i])
        if "a" <= ch <= "z":
            out[i] = ord("a") + (text[i] - ord("a") + k) % 26
        elif "A" <= ch <= "Z":
            out[i] = ord("A") + (text[i] - ord("A") + k) % 26
    return {"text": out}


@oracle
def byte_histogram(spec):
    data, n = ints(spec, "data"), int(spec["args"]["n"])
    bins = ints(spec, "bins")
    for v in data[:n]:
        bins[v // 32] += 1
    return {"data": data, "bins": bins}


@oracle
def short_shared_diff(spec):
    a = [as_type(v, 16, True) for v in ints(spec, "a")]
    diff = [as_type(a[i] - (a[i - 1] if i else 0), 16, True) for i in range(len(a))]
    return {"a": a, "diff": diff, "mag": [abs(v) for v in a]}


@oracle
def signed_char_clamp(spec):
    x = [as_type(v, 8, True) for v in ints(spec, "x")]
    return {"x": x,
            "twice": [max(-128, min(127, 2 * v)) for v in x],
            "sign": [(v > 0) - (v < 0) for v in x]}


# ----------------------------------------------------------------------------- integer intrinsics


def popc(v: int) -> int:
    return bin(u32(v)).count("1")


def clz(v: int) -> int:
    return 32 - u32(v).bit_length()


def ffs(v: int) -> int:
    v = u32(v)
    return 0 if v == 0 else (v & -v).bit_length()


def brev(v: int) -> int:
    return int(f"{u32(v):032b}"[::-1], 2)


def byte_perm(x: int, y: int, s: int) -> int:
    """CUDA's __byte_perm: result byte i is byte s[4i+2:4i] of the 8 bytes {y, x}."""
    pool = u32(x).to_bytes(4, "little") + u32(y).to_bytes(4, "little")
    return int.from_bytes(bytes(pool[(s >> (4 * i)) & 7] for i in range(4)), "little")


@oracle
def popc_clz(spec):
    x = ints(spec, "x")
    return {"x": x, "pop": [popc(v) for v in x], "lead": [clz(v) for v in x], "first": [ffs(v) for v in x]}


@oracle
def brev_byte_perm(spec):
    x, y = ints(spec, "x"), ints(spec, "y")
    return {"x": x, "y": y,
            "rev": [as_type(brev(v), 32, True) for v in x],
            "swap": [as_type(byte_perm(v, 0, 0x0123), 32, True) for v in x],
            "mix": [as_type(byte_perm(v, w, 0x5140), 32, True) for v, w in zip(x, y)]}


@oracle
def mulhi_umulhi(spec):
    a, b = ints(spec, "a"), ints(spec, "b")
    return {"a": a, "b": b,
            "hs": [(p * q) >> 32 for p, q in zip(a, b)],
            "hu": [as_type((u32(p) * u32(q)) >> 32, 32, True) for p, q in zip(a, b)]}


@oracle
def sad_usad(spec):
    a, b, acc = ints(spec, "a"), ints(spec, "b"), ints(spec, "acc")
    return {"a": a, "b": b, "acc": acc,
            "s": [as_type(c + abs(p - q), 32, True) for p, q, c in zip(a, b, acc)],
            "u": [as_type(c + abs(u32(p) - u32(q)), 32, True) for p, q, c in zip(a, b, acc)]}


@oracle
def halving_add(spec):
    a, b = ints(spec, "a"), ints(spec, "b")
    return {"a": a, "b": b,
            "h": [(p + q) >> 1 for p, q in zip(a, b)],
            "rh": [(p + q + 1) >> 1 for p, q in zip(a, b)],
            "uh": [as_type((u32(p) + u32(q)) >> 1, 32, True) for p, q in zip(a, b)],
            "m24": [as_type(as_type(p, 24, True) * as_type(q, 24, True), 32, True) for p, q in zip(a, b)]}
