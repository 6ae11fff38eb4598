"""Index products that PTX computes in 64 bits and the machine in 32: clamped so they fault.

``a[b[i]]`` and ``a[k * step]`` reach memory through ``mul.wide.s32 %rd, %r, 4`` (or a
64-bit ``shl``/``mad``): exact in PTX, modulo 2^32 on the machine, so an index of 2^30
would wrap back into memory and read ``a[0]``, a silent wrong answer. Where the value
ranges (``ranges.value_ranges``) cannot bound such a product inside 32 bits (a loaded
index, a loop counter), the lowering clamps its 32-bit factor first
(``min``/``max``, two instructions), so the product stays within +-2^28 bytes: an index
in memory is unchanged (memory is a few hundred bytes), and one far outside stays far outside, so
the access faults on both backends, as the reference interpreter's fault names it
("far outside every array" or the array and index). A pointer stepped in a loop by a
clamped stride leaves memory long before it could wrap.

Not covered (documented limits, never seen in clang's output for int arrays): two
unbounded 32-bit values added in 64 bits before scaling, and a shift by a register.
"""

from __future__ import annotations

from dataclasses import replace

from qwengpu_mlx.core.isa import Imm, Op

from qwengpu_mlx.host import ranges
from qwengpu_mlx.host.ir import BasicBlock, LInstr, VReg

M32 = 0xFFFFFFFF
SPAN = 1 << 28
"""Bytes a clamped product may reach each way: far past memory, far inside 32 bits (eight
such terms still add without wrapping)."""


def clamp_wide_products(blocks: list[BasicBlock], wide: set[str], specials: dict) -> int:
    """Clamp the factors of every 64-bit product the ranges cannot keep in 32 bits, in place.

    Returns how many factors were clamped (the tests read it; the code is the proof)."""
    env = ranges.value_ranges(blocks, wide, specials)
    n = 0
    for bb in blocks:
        out: list = []
        for it in bb.items:
            if _risky(it, wide, env):
                srcs = list(it.srcs)
                for k, limit in _factors(it):
                    n += 1
                    srcs[k] = _clamp(srcs[k], limit, f"%wide{n}", it, out)
                it = replace(it, srcs=tuple(srcs))
            out.append(it)
        bb.items = out
    return n


def _risky(it, wide: set[str], env: dict) -> bool:
    """A 64-bit product (mul, mad, shl by a constant) whose exact range may leave 32 bits."""
    if not isinstance(it, LInstr) or it.dst not in wide:
        return False
    if it.op not in (Op.MUL, Op.MAD) and not (it.op is Op.SHL and isinstance(it.srcs[1], Imm)):
        return False
    lo, hi = env.get(it.dst, ranges.WIDE_FULL)
    return lo < ranges.INT_MIN or hi > ranges.INT_MAX


def _factors(it: LInstr) -> list[tuple[int, int]]:
    """(operand index, clamp limit) for each non-constant factor of ``it``."""
    if it.op is Op.SHL:
        return [(0, max(1, SPAN >> it.srcs[1].value))] if isinstance(it.srcs[0], VReg) else []
    a, b = it.srcs[0], it.srcs[1]
    if isinstance(b, Imm) or isinstance(a, Imm):
        k, c = (0, b) if isinstance(b, Imm) else (1, a)
        scale = abs(c.value - (1 << 32) if c.value >> 31 else c.value) or 1
        return [(k, max(1, SPAN // scale))] if isinstance(it.srcs[k], VReg) else []
    return [(k, 1 << 14) for k in (0, 1) if isinstance(it.srcs[k], VReg)]  # both vary: 2^14 * 2^14


def _clamp(src, limit: int, name: str, it: LInstr, out: list) -> VReg:
    """``name = max(min(src, limit), -limit)`` (signed), emitted before ``it``."""
    low = f"{name}.lo"
    out.append(LInstr(Op.MIN, low, (src, Imm(limit)), signed=True, line=it.line, src=it.src, text=it.text))
    out.append(LInstr(Op.MAX, name, (VReg(low), Imm(-limit & M32)), signed=True, line=it.line, src=it.src,
                      text=it.text))
    return VReg(name)
