"""Oracles of the conformance kernels for 64-bit integers (size_t, long long, unsigned long long).

Written from what each kernel *means*, in Python's unbounded integers wrapped to 64 bits
where C wraps (``u64``/``s64``), as ``oracles_base`` explains; a 64-bit result the kernel
writes as two 32-bit words is split here the same way (low word first). Registered with
this module's own ``oracle`` decorator and merged into ``tests.support.oracles.ORACLES``.
"""

from __future__ import annotations

from tests.support.oracles_base import Oracle

ORACLES: dict[str, Oracle] = {}
MASK64 = (1 << 64) - 1


def oracle(fn: Oracle) -> Oracle:
    ORACLES[fn.__name__] = fn
    return fn


def u64(x: int) -> int:
    return x & MASK64


def s64(x: int) -> int:
    x &= MASK64
    return x - (1 << 64) if x >> 63 else x


def signed32(w: int) -> int:
    """A 32-bit word as the launch prints it (signed)."""
    w &= 0xFFFFFFFF
    return w - (1 << 32) if w >> 31 else w


def words(x: int) -> list[int]:
    """A 64-bit value's low and high 32-bit words, as ``(unsigned)x`` and ``(unsigned)(x >> 32)``."""
    x = u64(x)
    return [signed32(x), signed32(x >> 32)]


def ints(spec: dict, name: str) -> list[int]:
    return [int(v) for v in spec["args"][name]]


@oracle
def gridstride64_add(spec):
    a, b, c, n = ints(spec, "a"), ints(spec, "b"), ints(spec, "c"), int(spec["args"]["n"])
    threads = spec["block"] * spec["grid"]
    for t in range(threads):
        for i in range(t, n, threads):
            c[i] = signed32(a[i] + b[i])
    return {"a": a, "b": b, "c": c}


@oracle
def sum64_squares(spec):
    a, out, n, block = ints(spec, "a"), ints(spec, "out"), int(spec["args"]["n"]), spec["block"]
    for t in range(block):
        out[2 * t:2 * t + 2] = words(sum(a[i] * a[i] for i in range(t, n, block)))
    return {"a": a, "out": out}


def splitmix64(x: int) -> int:
    z = u64(x + 0x9E3779B97F4A7C15)
    z = u64((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9)
    z = u64((z ^ (z >> 27)) * 0x94D049BB133111EB)
    return z ^ (z >> 31)


@oracle
def hash64_mix(spec):
    key, out, seed = ints(spec, "key"), ints(spec, "out"), int(spec["args"]["seed"]) & 0xFFFFFFFF
    for i in range(spec["block"]):
        out[2 * i:2 * i + 2] = words(splitmix64(seed << 32 | (key[i] & 0xFFFFFFFF)))
    return {"key": [signed32(k) for k in key], "out": out}


@oracle
def compare64_boundary(spec):
    hi, lo, k = ints(spec, "hi"), ints(spec, "lo"), int(spec["args"]["k"]) & 0xFFFFFFFF
    order, negative = ints(spec, "order"), ints(spec, "negative")
    limit = (1 << 32) + k
    for i in range(spec["block"]):
        v = (hi[i] & 0xFFFFFFFF) << 32 | (lo[i] & 0xFFFFFFFF)
        order[i] = -1 if v < limit else (0 if v == limit else 1)
        negative[i] = int(s64(v) < 0)
    return {"hi": [signed32(x) for x in hi], "lo": [signed32(x) for x in lo], "order": order, "negative": negative}


@oracle
def mulwide64(spec):
    a, b = ints(spec, "a"), ints(spec, "b")
    sp, up = ints(spec, "sp"), ints(spec, "up")
    for i in range(spec["block"]):
        sp[2 * i:2 * i + 2] = words(a[i] * b[i])
        up[2 * i:2 * i + 2] = words((a[i] & 0xFFFFFFFF) * (b[i] & 0xFFFFFFFF))
    return {"a": a, "b": b, "sp": sp, "up": up}


def xorshift64_star(x: int, rounds: int) -> tuple[int, int]:
    """``rounds`` xorshift64 steps (12, 25, 27), then the state and its output times 2685821657736338717."""
    for _ in range(rounds):
        x ^= x >> 12
        x = u64(x ^ (x << 25))
        x ^= x >> 27
    return x, u64(x * 0x2545F4914F6CDD1D)


@oracle
def xorshift64_bits(spec):
    seed, out, bits = ints(spec, "seed"), ints(spec, "out"), ints(spec, "bits")
    for t in range(spec["block"]):
        s = seed[t] & 0xFFFFFFFF
        x, r = xorshift64_star(s << 32 | (s ^ 0x9E3779B9), int(spec["args"]["rounds"]))
        out[2 * t:2 * t + 2] = words(r)
        bits[3 * t:3 * t + 3] = [bin(x).count("1"), 64 - x.bit_length(), (x & -x).bit_length()]
    return {"seed": seed, "out": out, "bits": bits}
