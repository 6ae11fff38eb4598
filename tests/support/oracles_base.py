"""Expected results of the conformance kernels in ``examples/kernels`` (the first ones) and the helpers every oracle module uses.

Each oracle is written from what its kernel *means* (a dot product, a prefix sum, a
warp broadcast, ...), with NumPy, not by following the kernel's PTX. An oracle takes the
launch dict of ``examples/kernels/NAME.json`` (``block``, ``grid``, ``args``) and returns
the final contents of every pointer parameter as lists of signed 32-bit integers.

Arithmetic is done in ``int64`` (or Python ints) and wrapped to 32 bits explicitly.
Warp-level kernels (shuffles, votes, lane ids) have their oracles in ``oracles_warps``,
on a 32-lane NVIDIA warp.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

MASK32 = (1 << 32) - 1
INT_MIN = -(1 << 31)
INT_MAX = (1 << 31) - 1

Outputs = dict[str, list[int]]
Oracle = Callable[[dict], Outputs]


# ----------------------------------------------------------------------------- helpers


def wrap(x):
    """Two's-complement reading of the low 32 bits (arrays or ints)."""
    if isinstance(x, np.ndarray):
        x = x.astype(np.int64)
        return ((x + (1 << 31)) & MASK32) - (1 << 31)
    x = int(x) & MASK32
    return x - (1 << 32) if x >> 31 else x


def u32(x):
    """Unsigned reading of the low 32 bits."""
    if isinstance(x, np.ndarray):
        return x.astype(np.int64) & MASK32
    return int(x) & MASK32


def tdiv(x, d: int):
    """Integer division rounding toward zero (C semantics)."""
    x = np.asarray(x, dtype=np.int64)
    return np.sign(x) * (np.abs(x) // d)


def arrays(spec: dict) -> dict[str, np.ndarray]:
    """Copies of the pointer arguments as int64 arrays (scalars are left out)."""
    return {k: np.array(v, dtype=np.int64) for k, v in spec["args"].items() if isinstance(v, list)}


def machine_of(spec: dict):
    """The machine a launch file names (``"machine"``), the published one when it names none."""
    from qwengpu_mlx.core.machine import MACHINES

    return MACHINES[spec.get("machine", "default")]


def scalar(spec: dict, name: str) -> int:
    return int(spec["args"][name])


def result(arrs: dict[str, np.ndarray]) -> Outputs:
    return {k: [int(v) for v in wrap(np.asarray(a, dtype=np.int64))] for k, a in arrs.items()}


def threads(spec: dict) -> int:
    return spec["block"] * spec["grid"]


# ----------------------------------------------------------------------------- oracles

ORACLES: dict[str, Oracle] = {}


def oracle(fn: Oracle) -> Oracle:
    ORACLES[fn.__name__] = fn
    return fn


# arithmetic -------------------------------------------------------------------------


@oracle
def dot(spec):
    A = arrays(spec)
    n = min(scalar(spec, "n"), threads(spec))
    A["out"][0] = wrap(A["out"][0] + int(np.sum(wrap(A["a"][:n] * A["b"][:n]))))
    return result(A)


@oracle
def vec_add(spec):
    A = arrays(spec)
    n = min(scalar(spec, "n"), threads(spec))
    A["out"][:n] = wrap(A["a"][:n] + A["b"][:n])
    return result(A)


@oracle
def vec_sub(spec):
    A = arrays(spec)
    n = min(scalar(spec, "n"), threads(spec))
    A["out"][:n] = wrap(A["a"][:n] - A["b"][:n])
    return result(A)


@oracle
def mul_wrap(spec):
    A = arrays(spec)
    n = min(scalar(spec, "n"), threads(spec))
    # The low 32 bits of a product do not depend on signedness.
    A["out"][:n] = wrap(A["a"][:n] * A["b"][:n])
    return result(A)


@oracle
def saxpy_int(spec):
    A = arrays(spec)
    n = min(scalar(spec, "n"), threads(spec))
    A["out"][:n] = wrap(scalar(spec, "alpha") * A["x"][:n] + A["y"][:n])
    return result(A)


@oracle
def poly_horner(spec):
    A = arrays(spec)
    b = spec["block"]
    x = A["xs"][:b]
    acc = np.zeros(b, dtype=np.int64)
    for c in A["coef"][: scalar(spec, "ncoef")]:
        acc = wrap(acc * x + c)
    A["out"][:b] = acc
    return result(A)


@oracle
def neg_abs(spec):
    A = arrays(spec)
    n = min(scalar(spec, "n"), threads(spec))
    A["neg"][:n] = wrap(-A["x"][:n])
    A["ab"][:n] = wrap(np.abs(A["x"][:n]))
    return result(A)


@oracle
def minmax_signed(spec):
    A = arrays(spec)
    n = min(scalar(spec, "n"), threads(spec))
    A["lo"][:n] = np.minimum(A["a"][:n], A["b"][:n])
    A["hi"][:n] = np.maximum(A["a"][:n], A["b"][:n])
    return result(A)


@oracle
def minmax_unsigned(spec):
    A = arrays(spec)
    n = min(scalar(spec, "n"), threads(spec))
    a, b = u32(A["a"][:n]), u32(A["b"][:n])
    A["lo"][:n] = np.minimum(a, b)
    A["hi"][:n] = np.maximum(a, b)
    return result(A)


@oracle
def clamp_range(spec):
    A = arrays(spec)
    n = min(scalar(spec, "n"), threads(spec))
    A["out"][:n] = np.clip(A["x"][:n], scalar(spec, "lo"), scalar(spec, "hi"))
    return result(A)


@oracle
def sign_fn(spec):
    A = arrays(spec)
    n = min(scalar(spec, "n"), threads(spec))
    A["out"][:n] = np.sign(A["x"][:n])
    return result(A)


# bits -------------------------------------------------------------------------------


@oracle
def bitwise_ops(spec):
    A = arrays(spec)
    b = spec["block"]
    x, y = A["a"][:b], A["b"][:b]
    A["out"][0 : 4 * b : 4] = x & y
    A["out"][1 : 4 * b : 4] = x | y
    A["out"][2 : 4 * b : 4] = x ^ y
    A["out"][3 : 4 * b : 4] = ~x
    return result(A)


@oracle
def shift_const(spec):
    A = arrays(spec)
    n = min(scalar(spec, "n"), threads(spec))
    x = A["x"][:n]
    A["shl"][:n] = wrap(u32(x) << 3)
    A["shru"][:n] = u32(x) >> 5
    A["shrs"][:n] = x >> 5  # NumPy's >> on signed ints is arithmetic
    return result(A)


@oracle
def shift_variable(spec):
    A = arrays(spec)
    n = min(scalar(spec, "n"), threads(spec))
    for i in range(n):
        x, k = int(A["x"][i]), int(A["s"][i]) & 31
        A["shl"][i] = wrap((x & MASK32) << k)
        A["shru"][i] = (x & MASK32) >> k
        A["shrs"][i] = x >> k  # Python's >> is arithmetic (floor)
    return result(A)


@oracle
def popcount_loop(spec):
    A = arrays(spec)
    n = min(scalar(spec, "n"), threads(spec))
    A["out"][:n] = [bin(int(v) & MASK32).count("1") for v in A["x"][:n]]
    return result(A)


@oracle
def bit_reverse_loop(spec):
    A = arrays(spec)
    b = spec["block"]
    nb = scalar(spec, "nbits")
    for i in range(b):
        low = format(int(A["x"][i]) & ((1 << nb) - 1), f"0{nb}b") if nb > 0 else ""
        A["out"][i] = int(low[::-1], 2) if nb > 0 else 0
    return result(A)


@oracle
def bit_tricks(spec):
    A = arrays(spec)
    n = min(scalar(spec, "n"), threads(spec))
    v = u32(A["x"][:n])
    A["clear_low"][:n] = v & u32(v - 1)
    A["low_bit"][:n] = v & u32(-v)
    A["fill_low"][:n] = v | u32(v - 1)
    return result(A)


@oracle
def xorshift_rounds(spec):
    A = arrays(spec)
    for i in range(spec["block"]):
        x = int(A["state"][i]) & MASK32
        for _ in range(scalar(spec, "rounds")):
            x ^= (x << 13) & MASK32
            x ^= x >> 17
            x ^= (x << 5) & MASK32
        A["state"][i] = x
    return result(A)


# comparisons ------------------------------------------------------------------------


@oracle
def cmp_edges(spec):
    A = arrays(spec)
    n = min(scalar(spec, "n"), threads(spec))
    for i in range(n):
        x, y = int(A["a"][i]), int(A["b"][i])
        ux, uy = x & MASK32, y & MASK32
        bits = [x < y, ux < uy, x <= y, ux <= uy, x > y, ux > uy, x >= y, ux >= uy, x == y, x != y]
        A["out"][i] = sum(1 << k for k, bit in enumerate(bits) if bit)
    return result(A)


@oracle
def overflow_flags(spec):
    A = arrays(spec)
    n = min(scalar(spec, "n"), threads(spec))
    for i in range(n):
        x, y = int(A["a"][i]), int(A["b"][i])
        true_sum = x + y
        overflow = not (INT_MIN <= true_sum <= INT_MAX)
        carry = (x & MASK32) + (y & MASK32) > MASK32
        A["sum"][i] = wrap(true_sum)
        A["flags"][i] = int(overflow) | (int(carry) << 1)
    return result(A)


@oracle
def saturating_add(spec):
    A = arrays(spec)
    n = min(scalar(spec, "n"), threads(spec))
    A["out"][:n] = np.clip(A["a"][:n] + A["b"][:n], INT_MIN, INT_MAX)
    return result(A)


@oracle
def abs_diff_unsigned(spec):
    A = arrays(spec)
    n = min(scalar(spec, "n"), threads(spec))
    A["out"][:n] = np.abs(u32(A["a"][:n]) - u32(A["b"][:n]))
    return result(A)


@oracle
def ternary_select(spec):
    A = arrays(spec)
    n = min(scalar(spec, "n"), threads(spec))
    x, y = A["a"][:n], A["b"][:n]
    A["diff"][:n] = wrap(np.abs(x - y))
    A["step"][:n] = np.where(x & 1, wrap(3 * x + 1), tdiv(x, 2))
    return result(A)


# control flow -----------------------------------------------------------------------


@oracle
def predication(spec):
    A = arrays(spec)
    n = min(scalar(spec, "n"), threads(spec))
    for i in range(n):
        v = int(A["x"][i])
        if v & 1:
            v += 100
        v = max(v, 0)
        if i == 2:
            v = 7
        A["out"][i] = v
        if v > 50:
            A["flag"][i] = 1
    return result(A)


@oracle
def nested_branches(spec):
    A = arrays(spec)
    for t in range(spec["block"]):
        v = int(A["x"][t])
        if t & 1:
            if t & 2:
                A["out"][t] = wrap(2 * v)
            else:
                A["cnt"][0] += v
        elif v > 0:
            A["out"][t] = v - 1
            A["cnt"][1] += 1
        elif t < 4:
            A["out"][t] = wrap(-v)
        else:
            A["cnt"][2] += v
    return result(A)


@oracle
def early_return(spec):
    A = arrays(spec)
    n = min(scalar(spec, "n"), threads(spec))
    for t in range(n):
        A["out"][t] = 1
        if A["x"][t] < 0:
            continue
        A["out"][t] = 2 * A["x"][t]
        A["cnt"][0] += 1
    return result(A)


@oracle
def early_return_barrier(spec):
    A = arrays(spec)
    n = min(scalar(spec, "n"), threads(spec))
    tripled = wrap(3 * A["x"][:n])
    A["out"][:n] = tripled[::-1]
    return result(A)


@oracle
def lane_while(spec):
    A = arrays(spec)
    b = spec["block"]
    A["out"][:b] = wrap(np.cumsum(A["x"][:b]))
    return result(A)


@oracle
def collatz_steps(spec):
    A = arrays(spec)
    limit = scalar(spec, "limit")
    for t in range(spec["block"]):
        v, steps = int(A["x"][t]) & MASK32, 0
        while v != 1 and steps < limit:
            v = (3 * v + 1) & MASK32 if v % 2 else v // 2
            steps += 1
        A["out"][t] = steps
    return result(A)


@oracle
def fib_loop(spec):
    A = arrays(spec)
    for t in range(spec["block"]):
        a, b = 0, 1
        for _ in range(int(A["n"][t])):
            a, b = b, a + b
        A["out"][t] = wrap(a)
    return result(A)


@oracle
def gcd_sub(spec):
    A = arrays(spec)
    b = spec["block"]
    A["out"][:b] = [math.gcd(int(x), int(y)) for x, y in zip(A["a"][:b], A["b"][:b])]
    return result(A)


@oracle
def loop_break_continue(spec):
    A = arrays(spec)
    m = scalar(spec, "m")
    for t in range(spec["block"]):
        row = [int(v) for v in A["data"][t * m : (t + 1) * m]]
        stop = row.index(0) if 0 in row else m
        A["sum"][t] = wrap(sum(v for v in row[:stop] if v > 0))
        A["used"][t] = stop
    return result(A)


@oracle
def countdown_break(spec):
    A = arrays(spec)
    limit, n = scalar(spec, "limit"), scalar(spec, "n")
    for t in range(spec["block"]):
        a, k = 0, 0
        while k < n:
            a += int(A["step"][t])
            k += 1
            if a > limit:
                break
        A["acc"][t] = wrap(a)
        A["iters"][t] = k
    return result(A)


@oracle
def stencil_1d(spec):
    A = arrays(spec)
    n = min(scalar(spec, "n"), threads(spec))
    padded = np.concatenate([[0], A["x"][:n], [0]])
    A["out"][:n] = wrap(padded[:-2] + 2 * padded[1:-1] + padded[2:])
    return result(A)


@oracle
def matvec(spec):
    A = arrays(spec)
    rows, cols = scalar(spec, "rows"), scalar(spec, "cols")
    r = min(rows, threads(spec))
    m = A["m"][: rows * cols].reshape(rows, cols)
    A["out"][:r] = wrap(m[:r] @ A["v"][:cols])
    return result(A)


@oracle
def many_registers(spec):
    A = arrays(spec)
    x = A["x"][:32].reshape(8, 4)  # x[k, t] = v_k of thread t
    v = list(x)
    p = wrap(v[0] + v[1]) ^ wrap(v[2] - v[3]) ^ wrap(v[4] + v[5]) ^ wrap(v[6] - v[7])
    for k in range(8):
        A["out"][4 * k : 4 * k + 4] = wrap(v[k] * p + v[7 - k])
    return result(A)


# shared memory ----------------------------------------------------------------------


@oracle
def reduce_shared_tree(spec):
    A = arrays(spec)
    A["out"][0] = wrap(int(np.sum(A["x"][: spec["block"]])))
    return result(A)


@oracle
def reduce_shared_max(spec):
    A = arrays(spec)
    A["out"][0] = int(np.max(A["x"][: spec["block"]]))
    return result(A)


@oracle
def reduce_partial_block(spec):
    A = arrays(spec)
    b = spec["block"]
    A["out"][:b] = wrap(int(np.sum(A["x"][:b])))
    return result(A)


@oracle
def shared_reverse(spec):
    A = arrays(spec)
    b = spec["block"]
    A["out"][:b] = A["x"][:b][::-1]
    return result(A)


@oracle
def shared_rotate_warps(spec):
    A = arrays(spec)
    b = spec["block"]
    A["x"][:b] = wrap(np.roll(A["x"][:b], -8) + 2)  # two rounds of "read t + 4"
    return result(A)


@oracle
def shared_transpose(spec):
    A = arrays(spec)
    A["out"][:16] = A["in"][:16].reshape(4, 4).T.reshape(16)
    return result(A)


@oracle
def shared_scan(spec):
    A = arrays(spec)
    b = spec["block"]
    A["out"][:b] = wrap(np.cumsum(A["x"][:b]))
    return result(A)


@oracle
def odd_even_sort(spec):
    A = arrays(spec)
    b = spec["block"]
    A["x"][:b] = np.sort(A["x"][:b])
    return result(A)


@oracle
def odd_even_swap(spec):
    A = arrays(spec)
    b = spec["block"]
    A["x"][:b] = np.sort(A["x"][:b])
    return result(A)


@oracle
def shared_partial6(spec):
    A = arrays(spec)
    b = spec["block"]
    A["out"][:b] = np.roll(A["x"][:b], -2) - np.arange(b)
    return result(A)


# atomics ----------------------------------------------------------------------------


@oracle
def atomic_contention(spec):
    A = arrays(spec)
    t = np.arange(spec["block"])
    A["out"][0] += int(np.sum(t + 1))
    A["out"][1] += len(t)
    A["out"][2] -= int(np.sum(t))
    return result(A)


@oracle
def histogram(spec):
    A = arrays(spec)
    n = min(scalar(spec, "n"), threads(spec))
    A["hist"] += np.bincount(A["data"][:n] & 7, minlength=8)[: len(A["hist"])]
    return result(A)


@oracle
def atomic_old_sum(spec):
    A = arrays(spec)
    b = spec["block"]
    olds = [int(A["ctr"][0]) + k for k in range(b)]  # some order of these, one per thread
    A["ctr"][0] += b
    A["ctr"][1] += sum(olds)
    if 15 in olds:
        A["ctr"][2] = 1
    if 0 in olds:
        A["ctr"][3] += 5
    return result(A)


@oracle
def atomic_ticket(spec):
    # MACHINE.md order: warp 0 runs to its exit first, lanes ascending; so tickets
    # follow the thread index.
    A = arrays(spec)
    b = spec["block"]
    A["out"][:b] = A["counter"][0] + np.arange(b)
    A["counter"][0] += b
    return result(A)


@oracle
def atomic_compact(spec):
    # Slots are handed out in thread order (MACHINE.md schedule; one warp at a time).
    A = arrays(spec)
    n = min(scalar(spec, "n"), threads(spec))
    kept = [int(v) for v in A["x"][:n] if v > 0]
    start = int(A["count"][0])
    A["out"][start : start + len(kept)] = kept
    A["count"][0] += len(kept)
    return result(A)


@oracle
def atomic_unsigned(spec):
    A = arrays(spec)
    b = spec["block"]
    A["acc"][0] = wrap(int(A["acc"][0]) + int(np.sum(u32(A["x"][:b]))))
    A["acc"][1] = wrap(int(A["acc"][1]) + b * 0xFFFFFFFF)
    return result(A)


# grids ------------------------------------------------------------------------------


@oracle
def grid_stride(spec):
    A = arrays(spec)
    n = scalar(spec, "n")
    A["out"][:n] = wrap(2 * A["x"][:n] + np.arange(n))
    return result(A)


@oracle
def grid_index(spec):
    A = arrays(spec)
    b, g = spec["block"], spec["grid"]
    blk, t = np.divmod(np.arange(b * g), b)
    A["out"][: b * g] = blk * 1000 + t * 10 + g
    return result(A)


@oracle
def grid_block_sums(spec):
    A = arrays(spec)
    b, g = spec["block"], spec["grid"]
    per_block = A["x"][: b * g].reshape(g, b).sum(axis=1)
    A["blocksum"][:g] = wrap(A["blocksum"][:g] + per_block)
    A["total"][0] = wrap(int(A["total"][0]) + int(per_block.sum()))
    return result(A)


@oracle
def grid_shared_reduce(spec):
    A = arrays(spec)
    b, g = spec["block"], spec["grid"]
    A["out"][:g] = wrap(A["x"][: b * g].reshape(g, b).sum(axis=1))
    return result(A)


@oracle
def grid_partial_fill(spec):
    A = arrays(spec)
    n = min(scalar(spec, "n"), threads(spec))
    g = np.arange(n)
    A["out"][:n] = wrap(scalar(spec, "base") - g * g)
    return result(A)


# division by powers of two ----------------------------------------------------------


@oracle
def div_pow2_signed(spec):
    A = arrays(spec)
    b = spec["block"]
    x = A["x"][:b]
    A["q4"][:b] = tdiv(x, 4)
    A["r4"][:b] = x - 4 * tdiv(x, 4)
    A["q8"][:b] = tdiv(x, 8)
    A["r2"][:b] = x - 2 * tdiv(x, 2)
    return result(A)


@oracle
def div_pow2_unsigned(spec):
    A = arrays(spec)
    b = spec["block"]
    u = u32(A["x"][:b])
    A["q16"][:b] = u // 16
    A["r16"][:b] = u % 16
    A["q1k"][:b] = u // 1024
    return result(A)


@oracle
def div_pow2_runtime(spec):
    A = arrays(spec)
    b = spec["block"]
    u = u32(A["x"][:b])
    d = np.left_shift(np.int64(1), A["k"][:b] & 31)
    A["q"][:b] = u // d
    A["r"][:b] = u % d
    return result(A)


@oracle
def avg_floor_signed(spec):
    A = arrays(spec)
    b = spec["block"]
    s = wrap(A["a"][:b] + A["b"][:b])
    A["trunc"][:b] = tdiv(s, 2)
    A["floor_"][:b] = s // 2  # NumPy's // floors
    return result(A)


# partial warps and mixtures ---------------------------------------------------------


@oracle
def partial_warp3(spec):
    A = arrays(spec)
    b = spec["block"]
    A["out"][:b] = wrap(A["x"][:b] * (np.arange(b) + 1) + b)
    return result(A)


# division and remainder (C semantics, written from the definition) ---------------------


def c_div(a: int, b: int) -> int:
    """a / b truncated toward zero, as exact integers (the caller wraps to 32 bits)."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def c_rem(a: int, b: int) -> int:
    """a % b with the dividend's sign: a - b * (a / b)."""
    return a - b * c_div(a, b)


def _ints(xs) -> list[int]:
    return [int(x) for x in xs]


@oracle
def div_const_signed(spec):
    A = arrays(spec)
    for i, a in enumerate(_ints(A["a"][:scalar(spec, "n")])):
        A["q"][i], A["r"][i], A["s"][i] = c_div(a, 7), c_rem(a, 7), c_div(a, -3)
    return result(A)


@oracle
def div_const_unsigned(spec):
    A = arrays(spec)
    for i, a in enumerate(_ints(u32(A["a"][:scalar(spec, "n")]))):
        A["q"][i], A["r"][i] = a // 10, a % 10
    return result(A)


@oracle
def div_reg_signed(spec):
    A = arrays(spec)
    n = min(scalar(spec, "n"), threads(spec))
    for i in range(n):
        a, b = int(A["a"][i]), int(A["b"][i])
        A["q"][i], A["r"][i] = c_div(a, b), c_rem(a, b)  # INT_MIN / -1 = 2^31 wraps to INT_MIN
    return result(A)


@oracle
def div_reg_unsigned(spec):
    A = arrays(spec)
    n = scalar(spec, "n")
    for i, (a, b) in enumerate(zip(_ints(u32(A["a"][:n])), _ints(u32(A["b"][:n])))):
        A["q"][i], A["r"][i] = a // b, a % b
    return result(A)


@oracle
def average(spec):
    A = arrays(spec)
    n = scalar(spec, "n")
    A["mean"][0] = c_div(sum(_ints(A["x"][:n])), n)
    return result(A)


@oracle
def index_2d(spec):
    A = arrays(spec)
    w, h = scalar(spec, "width"), scalar(spec, "height")
    m = np.array(A["m"][: w * h]).reshape(h, w)
    rows, cols = np.indices((h, w))
    A["t"][: w * h] = (m + 100 * rows + cols).T.reshape(-1)
    return result(A)


@oracle
def digit_sum(spec):
    A = arrays(spec)
    for i, a in enumerate(_ints(A["a"][:scalar(spec, "n")])):
        A["out"][i] = sum(int(c) for c in str(abs(a)))
    return result(A)


@oracle
def mod_pow(spec):
    A = arrays(spec)
    m = scalar(spec, "m")
    for i in range(scalar(spec, "n")):
        A["out"][i] = pow(int(A["b"][i]), int(A["e"][i]), m)  # non-negative bases: C's % agrees
    return result(A)


@oracle
def gcd_mod(spec):
    A = arrays(spec)
    for i in range(scalar(spec, "n")):
        A["g"][i] = math.gcd(int(A["a"][i]), int(A["b"][i]))
    return result(A)


@oracle
def hash_mod(spec):
    A = arrays(spec)
    for row in range(scalar(spec, "rows")):
        v = 0
        for c in _ints(A["chars"][4 * row: 4 * row + 4]):
            v = (v * 31 + c) % 10007
        A["h"][row] = v
    return result(A)


@oracle
def div_by_zero(spec):
    """The launch stops (``"error"`` in the launch file): memory as before it, q unwritten."""
    return result(arrays(spec))


# 32-thread blocks (the large machine) ---------------------------------------------------


@oracle
def grid_add_big(spec):
    A = arrays(spec)
    n = min(scalar(spec, "n"), threads(spec))
    A["c"][:n] = A["a"][:n] + 3 * A["b"][:n]
    return result(A)



@oracle
def block32_scan(spec):
    A = arrays(spec)
    A["out"][: spec["block"]] = np.cumsum(A["x"][: spec["block"]])
    return result(A)


@oracle
def long_program(spec):
    A = arrays(spec)
    for i in range(scalar(spec, "n")):
        v, acc = int(A["a"][i]), 0
        for k in range(24):
            acc = acc + v * (k + 1) if v & 1 else acc - (v >> 1)
            acc = int(wrap(np.int64(acc)))
            v = (v >> 1) ^ (acc & 7)
        A["out"][i] = acc
    return result(A)


# ------------------------------------------------------- test-only kernels (tests/kernels_machine)
# Not examples, so kept out of ORACLES (test_conformance pairs ORACLES with examples/kernels).

TEST_ORACLES: dict[str, Oracle] = {}


def reduce_tree_4warps(spec):
    A = arrays(spec)
    A["out"][0] = wrap(int(np.sum(A["x"][:4])))
    return result(A)


TEST_ORACLES["reduce_tree_4warps"] = reduce_tree_4warps
