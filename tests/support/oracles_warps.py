"""Oracles of the conformance kernels for warp-level kernels on a 32-lane NVIDIA warp (shuffles, votes, lane ids).

Written from what each kernel *means*, as ``oracles_base`` explains; registered with
this module's own ``oracle`` decorator and merged into ``tests.support.oracles.ORACLES``.

The warp model is CUDA's (Programming Guide, "Warp Shuffle Functions"): 32 lanes, a
thread's lane is its index in the block (blocks here hold at most 32 threads, so the
block is one warp). Lanes form segments of ``width``; ``__shfl_sync`` reads lane
``srcLane % width`` of the segment, ``_up``/``_down`` read ``delta`` lanes below/above
and keep their own value when that leaves the segment, ``_xor`` may read an earlier
segment but keeps its own value for a later one. A source lane that was never launched
(``blockDim.x < 32``) is undefined in CUDA; a GPU's partial warp reads 0 there, and so
does this model (the README says so). A vote's bit ``i`` is lane ``i``'s predicate.
"""

from __future__ import annotations

import numpy as np

from tests.support.oracles_base import TEST_ORACLES, Oracle, arrays, result, scalar, wrap

ORACLES: dict[str, Oracle] = {}

WARP = 32


def oracle(fn: Oracle) -> Oracle:
    ORACLES[fn.__name__] = fn
    return fn


# ----------------------------------------------------------------------------- the warp


def shfl(vals, block: int, mode: str, delta, width: int = WARP) -> np.ndarray:
    """A 32-lane warp shuffle of ``vals`` (one value per thread of a block).

    ``delta``: the source lane (idx), the offset (up/down) or the lane mask (xor); an int
    or one per thread. Lanes past ``block`` were never launched: a lane reading one reads 0.
    """
    vals = np.asarray(vals, dtype=np.int64)
    out = vals.copy()
    for lane in range(block):
        b = int(delta[lane]) if isinstance(delta, (list, np.ndarray)) else int(delta)
        seg = lane - lane % width
        if mode == "idx":
            src = seg + b % width
        elif mode == "up":
            src = lane - b if lane - b >= seg else lane
        elif mode == "down":
            src = lane + b if lane + b < seg + width else lane
        elif mode == "xor":
            src = lane ^ b
            if src >= seg + width:
                src = lane
        else:
            raise ValueError(mode)
        out[lane] = vals[src] if src < block else 0
    return out


def ballot(preds) -> int:
    """The bits of the lanes whose predicate holds."""
    return sum(1 << lane for lane, p in enumerate(preds) if p)


def groups(vals, size: int) -> np.ndarray:
    """Values as rows of ``size`` consecutive lanes."""
    return np.asarray(vals, dtype=np.int64).reshape(-1, size)


# ------------------------------------------------------------ kernels from the 4-lane days


@oracle
def lane_warp_ids(spec):
    A = arrays(spec)
    b = spec["block"]
    t = np.arange(b)
    A["out"][:b] = (t // WARP) * 100 + (t % WARP) * 10 + b
    return result(A)


@oracle
def warp_sums_shared(spec):
    A = arrays(spec)
    sums = wrap(groups(A["x"][:16], 4).sum(axis=1))
    A["partial"][:4] = sums
    A["total"][0] = wrap(int(sums.sum()))
    return result(A)


@oracle
def shfl_broadcast(spec):
    A = arrays(spec)
    b = spec["block"]
    A["from0"][:b] = A["x"][0]
    A["from3"][:b] = A["x"][3]
    return result(A)


@oracle
def shfl_rotate(spec):
    A = arrays(spec)
    b = spec["block"]
    w = groups(A["x"][:b], 4)
    A["rot"][:b] = np.roll(w, -1, axis=1).reshape(-1)
    A["rev"][:b] = w[:, ::-1].reshape(-1)
    return result(A)


@oracle
def shfl_up_scan(spec):
    A = arrays(spec)
    b = spec["block"]
    A["out"][:b] = wrap(np.cumsum(A["x"][:b]))
    return result(A)


@oracle
def shfl_down_reduce(spec):
    A = arrays(spec)
    b = spec["block"]
    v = A["x"][:b]
    v = wrap(v + shfl(v, b, "down", 2))
    v = wrap(v + shfl(v, b, "down", 1))
    A["all"][:b] = v
    A["sums"][: b // 4] = v[::4]
    return result(A)


@oracle
def shfl_xor_allreduce(spec):
    A = arrays(spec)
    b = spec["block"]
    w = groups(A["x"][:b], 4)
    A["mx"][:b] = np.repeat(w.max(axis=1), 4)
    A["sm"][:b] = np.repeat(wrap(w.sum(axis=1)), 4)
    return result(A)


@oracle
def shfl_xor_swap(spec):
    A = arrays(spec)
    b = spec["block"]
    lanes = np.arange(b)
    for name, mask in (("x1", 1), ("x2", 2), ("x3", 3)):
        A[name][:b] = A["x"][lanes ^ mask]
    return result(A)


@oracle
def shfl_width2(spec):
    A = arrays(spec)
    b = spec["block"]
    w = groups(A["x"][:b], 2)
    A["idx"][:b] = np.repeat(w[:, 1], 2)
    A["up"][:b] = np.repeat(w[:, 0], 2)
    A["down"][:b] = np.repeat(w[:, 1], 2)
    A["bfly"][:b] = w[:, ::-1].reshape(-1)
    return result(A)


@oracle
def shfl_width_mixed(spec):
    A = arrays(spec)
    b = spec["block"]
    w = groups(A["x"][:b], 2)
    A["scan2"][:b] = wrap(np.cumsum(w, axis=1).reshape(-1))
    A["own"][:b] = A["x"][:b]
    # xor 2 in 2-lane segments: lanes whose bit 1 is clear would read the next segment
    # (own value); the others read the previous one.
    lanes = np.arange(b)
    A["cross"][:b] = np.where(lanes & 2, A["x"][lanes ^ 2], A["x"][:b])
    return result(A)


@oracle
def shfl_out_of_range(spec):
    A = arrays(spec)
    b = spec["block"]
    x = A["x"][:b]
    A["up1"][:b] = shfl(x, b, "up", 1)
    A["up3"][:b] = shfl(x, b, "up", 3)
    A["down1"][:b] = shfl(x, b, "down", 1)
    A["down2"][:b] = shfl(x, b, "down", 2)
    return result(A)


@oracle
def shfl_partial_warp(spec):
    A = arrays(spec)
    b = spec["block"]
    v = A["x"][:b]
    s = wrap(v + shfl(v, b, "down", 2))
    s = wrap(s + shfl(s, b, "down", 1))
    A["sum"][:b] = s
    A["b3"][:b] = v[3] if b > 3 else v
    return result(A)


@oracle
def warp_ballot(spec):
    A = arrays(spec)
    b = spec["block"]
    pos = groups(A["x"][:b] > 0, 4)
    masks = (pos * (1 << np.arange(4))).sum(axis=1)
    A["mask"][:b] = np.repeat(masks, 4)
    A["count"][: b // 4] = pos.sum(axis=1)
    return result(A)


@oracle
def warp_argmax(spec):
    A = arrays(spec)
    b = spec["block"]
    w = groups(A["x"][:b], 4)
    first = w.argmax(axis=1)  # NumPy returns the first maximum
    A["best"][: b // 4] = w.max(axis=1)
    A["where"][: b // 4] = np.arange(b // 4) * 4 + first
    return result(A)


@oracle
def shfl_broadcast_multi(spec):
    A = arrays(spec)
    b, g, src = spec["block"], spec["grid"], scalar(spec, "src")
    for blk in range(g):
        x = A["x"][blk * b : (blk + 1) * b]
        A["out"][blk * b : (blk + 1) * b] = wrap(shfl(x, b, "idx", src) + blk)
    return result(A)


@oracle
def multi_feature(spec):
    A = arrays(spec)
    b = spec["block"]
    v = A["x"][:b]
    nxt = shfl(v, b, "down", 1)
    s = wrap(nxt * (np.arange(b) & 3) - v)
    A["out"][:b] = s[::-1]
    A["total"][0] = wrap(int(A["total"][0]) + int(s.sum()))
    return result(A)


@oracle
def block32_reduce(spec):
    A = arrays(spec)
    b = spec["block"]
    sq = A["x"][:b] ** 2
    v = sq + shfl(sq, b, "down", 1)  # lane 31 has no lane above it: it adds its own
    A["out"][:b] = v
    A["total"][0] = int(v.sum())
    return result(A)


def shfl_dot(spec):
    A = arrays(spec)
    A["out"][0] = wrap(int(np.dot(A["a"].astype(np.int64), A["b"].astype(np.int64))))
    return result(A)


TEST_ORACLES["shfl_dot"] = shfl_dot


# --------------------------------------------------------------------- 32-lane kernels


@oracle
def warp_reduce_down32(spec):
    A = arrays(spec)
    v = A["x"][:32].copy()
    for o in (16, 8, 4, 2, 1):
        v = wrap(v + shfl(v, 32, "down", o))
    A["partial"][:32] = v
    A["sum"][0] = wrap(int(A["x"][:32].sum()))
    return result(A)


@oracle
def warp_reduce_down8(spec):
    A = arrays(spec)
    A["sum"][0] = wrap(int(A["x"][: spec["block"]].sum()))
    return result(A)


@oracle
def warp_xor_allreduce32(spec):
    A = arrays(spec)
    x = A["x"][:32]
    A["sum"][:32] = wrap(int(x.sum()))
    A["lo"][:32] = int(x.min())
    return result(A)


@oracle
def warp_up_scan32(spec):
    A = arrays(spec)
    x = A["x"][:32]
    A["scan"][:32] = wrap(np.cumsum(x))
    A["scan8"][:32] = wrap(np.cumsum(groups(x, 8), axis=1).reshape(-1))
    return result(A)


@oracle
def warp_idx_width8(spec):
    A = arrays(spec)
    b = spec["block"]
    x = A["x"][:b]
    lanes = np.arange(b)
    seg = lanes - lanes % 8
    A["from3"][:b] = x[seg + 3]
    A["picked"][:b] = x[seg + A["src"][:b] % 8]  # NumPy's % of a negative source is CUDA's low bits
    A["from13"][:b] = x[13]
    return result(A)


@oracle
def warp_votes(spec):
    A = arrays(spec)
    b = spec["block"]
    x = [int(v) for v in A["x"][:b]]
    votes = ballot(v > 0 for v in x)
    A["ballot"][:b] = votes
    A["mine"][:b] = [int(v > 0) for v in x]
    A["count"][:b] = sum(v > 0 for v in x)
    A["any_big"][:b] = int(any(v > 100 for v in x))
    A["all_nonzero"][:b] = int(all(v != 0 for v in x)) + 2 * int(all(v > -1000 for v in x))
    A["active"][:b] = (1 << b) - 1
    return result(A)


@oracle
def warp_runtime_offsets(spec):
    A = arrays(spec)
    b, k, width = spec["block"], scalar(spec, "k"), scalar(spec, "width")
    x = A["x"][:b]
    A["down"][:b] = shfl(x, b, "down", k, width=16)
    A["bfly"][:b] = shfl(x, b, "xor", A["masks"][:b])
    A["up"][:b] = shfl(x, b, "up", 1, width=width)
    return result(A)


@oracle
def warp_syncwarp(spec):
    A = arrays(spec)
    b = spec["block"]
    lanes = np.arange(b)
    v = A["x"][:b][(lanes + 5) % b] * 3 + 1
    A["out"][:b] = v[(lanes + 1) % b]
    return result(A)
