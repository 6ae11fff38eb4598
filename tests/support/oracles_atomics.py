"""Oracles of the conformance kernels for every CUDA integer atomic, in global and shared memory.

Written from what each kernel *means*, as ``oracles_base`` explains; registered with
this module's own ``oracle`` decorator and merged into ``tests.support.oracles.ORACLES``.

A GPU performs the atomics on one word in some serial order it picks, so each kernel
stores only what every serial order gives (a final maximum, a histogram, the count of a
list's nodes, the indices a wrapping counter hands out), or its threads touch words of
their own; the oracles compute that from the CUDA definitions below, never from the
machine's order.
"""

from __future__ import annotations

import numpy as np

from tests.support.oracles_base import MASK32, Oracle, arrays, result, scalar, threads, u32, wrap

ORACLES: dict[str, Oracle] = {}


def oracle(fn: Oracle) -> Oracle:
    ORACLES[fn.__name__] = fn
    return fn


# ----------------------------------------------------------------------------- CUDA's definitions


def cuda_inc(old: int, limit: int) -> int:
    """atomicInc's new value: ``(old >= limit) ? 0 : old + 1`` on unsigned words."""
    old, limit = u32(old), u32(limit)
    return 0 if old >= limit else old + 1


def cuda_dec(old: int, limit: int) -> int:
    """atomicDec's new value: ``((old == 0) || (old > limit)) ? limit : old - 1`` on unsigned words."""
    old, limit = u32(old), u32(limit)
    return limit if old == 0 or old > limit else old - 1


def cuda_cas(old: int, compare: int, value: int) -> int:
    """atomicCAS's new value: ``old == compare ? value : old``."""
    return value if u32(old) == u32(compare) else old


def linear_probe_total(starts: list[int], size: int) -> tuple[list[int], int]:
    """Occupied slots and total probes of linear probing into ``size`` slots (each insert
    tries its start slot, then the next ones, wrapping). Both are the same for every
    insertion order: the set of full slots is, and so is the total displacement."""
    full = [False] * size
    probes = 0
    for s in starts:
        k = s
        probes += 1
        while full[k]:
            k = (k + 1) % size
            probes += 1
        full[k] = True
    return full, probes


# ----------------------------------------------------------------------------- kernels


@oracle
def atomic_max_min(spec):
    A = arrays(spec)
    n = min(scalar(spec, "n"), threads(spec))
    for i in range(n):
        v = int(A["data"][i])
        A["hi"][i % 4] = max(A["hi"][i % 4], v)
        A["lo"][i % 4] = min(A["lo"][i % 4], v)
        A["uhi"][i % 2] = max(u32(A["uhi"][i % 2]), u32(v))
    return result(A)


@oracle
def atomic_shared_hist(spec):
    A = arrays(spec)
    counts, who = np.zeros(8, dtype=np.int64), np.zeros(8, dtype=np.int64)
    for t in range(spec["block"]):
        b = int(A["data"][t]) & 7
        counts[b] += 1
        who[b] |= 1 << t
    A["counts"], A["who"] = counts, who
    return result(A)


@oracle
def atomic_cas_max(spec):
    A = arrays(spec)
    n = min(scalar(spec, "n"), threads(spec))
    for k in range(len(A["best"])):
        A["best"][k] = max([int(A["best"][k])] + [int(A["data"][i]) for i in range(k, n, 2)])
    return result(A)


@oracle
def atomic_cas_claim(spec):
    A = arrays(spec)
    b = spec["block"]
    _, probes = linear_probe_total([(t * 5) & 7 for t in range(b)], b)
    A["owned"][:b] += 1  # every thread ends owning one slot, every slot one thread
    A["probes"][0] += probes
    return result(A)


@oracle
def atomic_exch_list(spec):
    A = arrays(spec)
    b = spec["block"]
    A["visits"][:b] += 1
    A["stats"][:2] = [b, b * (b - 1) // 2]
    return result(A)


@oracle
def atomic_inc_ring(spec):
    A = arrays(spec)
    limit = scalar(spec, "limit")
    up, down = int(A["ring"][0]), int(A["ring"][1])
    for _ in range(threads(spec)):  # every serial order hands out the same sequence
        A["up"][up] += 1
        up = cuda_inc(up, limit)
        A["down"][down] += 1
        down = cuda_dec(down, limit)
    A["ring"][:2] = [up, down]
    return result(A)


@oracle
def atomic_sub_and_xor(spec):
    A = arrays(spec)
    x = A["x"][: threads(spec)]
    A["acc"][0] -= int(x.sum())
    for v in x:
        v = int(v)
        A["acc"][1] &= ~v
        A["acc"][2] ^= v
        A["flags"][0] = u32(A["flags"][0]) & (~(v * 3) & MASK32)
        A["flags"][1] = u32(A["flags"][1]) ^ (1 << (v & 31))
    A["flags"][2] -= 3 * len(x)
    return result({k: wrap(np.asarray(a)) for k, a in A.items()})


@oracle
def atomic_edges(spec):
    A = arrays(spec)
    old = A["old"]
    for t in range(spec["block"]):
        lim = int(A["lim"][t])
        old[t], A["inc"][t] = A["inc"][t], cuda_inc(int(A["inc"][t]), lim)
        old[8 + t], A["dec"][t] = A["dec"][t], cuda_dec(int(A["dec"][t]), lim)
        old[16 + t], A["cas"][t] = A["cas"][t], cuda_cas(int(A["cas"][t]), t - 4, 100 + t)
        old[24 + t], A["smax"][t] = A["smax"][t], max(int(A["smax"][t]), 2 * t - 7)
        old[32 + t], A["umin"][t] = A["umin"][t], min(u32(A["umin"][t]), u32(t - 4))
    return result(A)
