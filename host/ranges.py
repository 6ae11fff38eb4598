"""Value ranges of the lowering's virtual registers, for exact addresses.

The machine computes in 32 bits; PTX computes addresses in 64. The two agree
exactly as long as no address computation leaves the 32-bit range, and the
circuit agrees with the reference interpreter as long as a memory instruction's
base register is not negative when its offset is positive (the circuit adds the
offset to the low 10 bits of the base and faults on any high bit; the reference
adds modulo 2^32). :func:`value_ranges` gives each virtual register an interval of
its *exact* value (signed; 64-bit registers without wrapping), flow-insensitively
over every definition, so the lowering can

* move a positive offset into an ``add`` where the base may be negative
  (``x[3 - t]``: ``ld [x - 4t + 12]``), and
* turn a memory access whose exact address is certainly outside memory but whose
  32-bit value would wrap back into it (``a[i + (1 << 30)]``) into one that faults.
"""

from __future__ import annotations

from qwengpu_mlx.core.isa import Imm, Op, Special

from qwengpu_mlx.host.ir import BasicBlock, LInstr, VReg

INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1
FULL = (INT_MIN, INT_MAX)
WIDE_FULL = (-(1 << 63), (1 << 63) - 1)
_WIDEN_AFTER = 8  # updates of one register before its range is given up (loops)

Range = tuple[int, int]


def _signed(v: int) -> int:
    return v - (1 << 32) if v >> 31 else v


def special_ranges(block_dim: int, grid_dim: int, lanes: int) -> dict[str, Range]:
    """What each special register can hold in this launch."""
    warps = -(-block_dim // lanes)
    return {"tid.x": (0, block_dim - 1), "tid.x*4": (0, 4 * (block_dim - 1)), "ntid.x": (block_dim, block_dim),
            "ctaid.x": (0, grid_dim - 1), "nctaid.x": (grid_dim, grid_dim), "laneid": (0, lanes - 1),
            "warpid": (0, warps - 1)}


def _union(a: Range | None, b: Range) -> Range:
    return b if a is None else (min(a[0], b[0]), max(a[1], b[1]))


def _corners(f, a: Range, b: Range) -> Range:
    vals = [f(x, y) for x in a for y in b]
    return min(vals), max(vals)


def _nonneg_bits(hi: int) -> Range:
    return 0, (1 << max(hi, 0).bit_length()) - 1


def _transfer(op: Op, signed: bool, a: list[Range]) -> Range | None:
    """The exact range of an operation's result, or None when we do not bound it."""
    if op is Op.MOV:
        return a[0]
    if op is Op.ADD:
        return a[0][0] + a[1][0], a[0][1] + a[1][1]
    if op is Op.SUB:
        return a[0][0] - a[1][1], a[0][1] - a[1][0]
    if op is Op.MUL:
        return _corners(lambda x, y: x * y, a[0], a[1])
    if op is Op.MAD:
        lo, hi = _corners(lambda x, y: x * y, a[0], a[1])
        return lo + a[2][0], hi + a[2][1]
    if op is Op.SHL and a[1][0] == a[1][1] and 0 <= a[1][0] < 32:
        return a[0][0] << a[1][0], a[0][1] << a[1][0]
    if op is Op.SHR and a[1][0] == a[1][1] and 0 < a[1][0] < 32 and (signed or a[0][0] >= 0):
        return a[0][0] >> a[1][0], a[0][1] >> a[1][0]
    if op is Op.AND and (a[0][0] >= 0 or a[1][0] >= 0):
        return 0, min(x[1] for x in a if x[0] >= 0)
    if op in (Op.OR, Op.XOR) and a[0][0] >= 0 and a[1][0] >= 0:
        return _nonneg_bits(max(a[0][1], a[1][1]))
    if op is Op.NOT:
        return -a[0][1] - 1, -a[0][0] - 1
    if op is Op.NEG:
        return -a[0][1], -a[0][0]
    if op in (Op.MIN, Op.MAX) and (signed or (a[0][0] >= 0 and a[1][0] >= 0)):
        f = min if op is Op.MIN else max
        return f(a[0][0], a[1][0]), f(a[0][1], a[1][1])
    if op is Op.SELP:
        return _union(a[0], a[1])
    if op is Op.SHFL:
        return a[0]
    return None


def _fit(r: Range | None, wide: bool) -> Range:
    """A 32-bit register wraps: a range that leaves int32 is no longer known."""
    if r is None:
        return WIDE_FULL if wide else FULL
    if wide:  # a 64-bit register holds addresses: past 2^63 nothing is in memory anyway
        return max(r[0], WIDE_FULL[0]), min(r[1], WIDE_FULL[1])
    return r if INT_MIN <= r[0] and r[1] <= INT_MAX else FULL


def value_ranges(blocks: list[BasicBlock], wide: set[str], specials: dict[str, Range]) -> dict[str, Range]:
    """Virtual register -> interval of its exact value, over all its definitions.

    Registers never defined read 0; a guarded definition keeps the old value where
    the guard fails, so it joins 0 (a fresh register) too. ``wide``: the 64-bit
    virtual registers, whose arithmetic does not wrap at 32 bits."""
    instrs = [it for bb in blocks for it in bb.items if isinstance(it, LInstr)
              and it.dst is not None and not it.writes_pred]
    env: dict[str, Range] = {}
    updates: dict[str, int] = {}

    def operand(s) -> Range | None:
        if isinstance(s, Imm):
            v = _signed(s.value)
            return v, v
        if isinstance(s, Special):
            return specials.get(s.name, FULL)
        if isinstance(s, VReg):
            return env.get(s.name, (0, 0) if s.name not in defined else None)
        return FULL

    defined = {it.dst for it in instrs}
    changed = True
    while changed:
        changed = False
        for it in instrs:
            srcs = [operand(s) for s in it.srcs]
            if any(s is None for s in srcs):
                continue  # an input not yet reached
            is_wide = it.dst in wide
            if it.op in (Op.LD, Op.ATOM_ADD):
                r = FULL
            else:
                r = _fit(_transfer(it.op, it.signed, srcs), is_wide)
            if it.guard is not None:
                r = _union(r, (0, 0))
            new = _union(env.get(it.dst), r)
            if new != env.get(it.dst):
                updates[it.dst] = updates.get(it.dst, 0) + 1
                if updates[it.dst] > _WIDEN_AFTER:  # a loop: give the range up (once: FULL is a fixpoint)
                    new = WIDE_FULL if is_wide else FULL
                changed = changed or new != env.get(it.dst)
                env[it.dst] = new
    for name in defined - env.keys():  # only reachable through cycles of unknowns
        env[name] = WIDE_FULL if name in wide else FULL
    return env


def address_range(it: LInstr, env: dict[str, Range], specials: dict[str, Range]) -> Range:
    """The exact byte addresses a memory instruction can touch: base range + offset."""
    base = it.srcs[0]
    if isinstance(base, Imm):
        r = (_signed(base.value),) * 2
    elif isinstance(base, Special):
        r = specials.get(base.name, FULL)
    else:
        r = env.get(base.name, FULL)
    return r[0] + it.offset, r[1] + it.offset
