"""Atomics (``atom``, ``red``) on 32-bit words -> IR: every CUDA integer atomic on the machine's one atomic.

The machine has one atomic instruction, ``atom.add``, whose same-word conflicts between
the lanes of a warp it resolves in lane order. Every other PTX atomic (``exch``, ``cas``,
``min``, ``max``, ``inc``, ``dec``, ``and``, ``or``, ``xor``) is lowered to a routine of
ordinary instructions that the model runs:

* Between warps nothing is needed: the machine runs a warp until it reaches a barrier or
  exits (``docs/MACHINE.md``, "Scheduling"), so no other warp runs in the middle of a
  routine that holds no barrier, on any machine (``one-slot`` included).
* Within a warp the lanes are serialised by a loop of one round per lane: in round ``k``
  lane ``k`` alone reads the word, computes the new value and stores it (``@p st`` with
  ``p``: this lane is ``k``), and its old value is what that round read. A later round
  reads the earlier rounds' stores (a block's loads see memory as it was when the block
  began, so each round's load starts a step of its own: ``blocks.block_fits``).

So every launch performs the atomics in one serial order, warp by warp and lanes in
ascending order within a warp, as ``atom.add`` does: the old values and the final word are
those of that order, as on a GPU (which picks some order). ``atomicExch`` whose old value
nobody reads is one plain store (the last lane in lane order wins, as in that order).
"""

from __future__ import annotations

from qwengpu_mlx.core.isa import Imm, Op, Special
from qwengpu_mlx.core.machine import MACHINES

from qwengpu_mlx.host.ir import LInstr, LLabel, LTerm, VPred, VReg
from qwengpu_mlx.host.ptx_ast import MemRef, PairRef, PtxInstr, RegRef
from qwengpu_mlx.host.translate_types import INT_TYPES32, INT_TYPES64, M32, SUBWORD, unsupported

LANES = max(m.lanes for m in MACHINES.values())
"""Rounds of a serialised atomic: one per lane of the widest machine (a round for a lane a
machine lacks does nothing)."""

OPERATIONS = ("add", "exch", "cas", "min", "max", "inc", "dec", "and", "or", "xor")
"""PTX's integer atomic operations (``atom.OP``); ``red`` has all but ``exch`` and ``cas``."""

ORDERING = {"relaxed", "acquire", "release", "acq_rel", "sc", "cta", "gpu", "sys", "cluster"}
"""Memory-order and scope qualifiers: the machine runs one step at a time, so every
ordering and scope holds (memory is sequentially consistent)."""

SPACES = ("global", "shared")

LANE_TIMES_4 = "(%tid.x*4) & 4*(lanes-1)"
"""How a routine tells the machine's lanes apart: from the machine's linear thread index
scaled by 4 (an operand of every instruction), since later stages read PTX's ``%laneid``
and ``%tid.x`` as a 32-lane warp's and a 2-D block's (``warp_ops``, ``launch_dims``).
``LANES`` is a power of two."""


def op_atom(tr, ins: PtxInstr, result: bool = True) -> list:
    """``atom[.space][.sem][.scope].OP.TYPE d, [a], b[, c]`` (``red``: no ``d``)."""
    op = _operation(ins, result)
    t = _int_type(ins, op)
    space = _space(ins)
    ops = list(ins.operands)
    d = tr.dst(ins, ops.pop(0)) if result else None
    want = 3 if op == "cas" else 2
    if len(ops) != want:
        raise unsupported(ins, f"atom.{op} takes an address and {want - 1} value operand{'s' * (want > 2)}")
    pre: list = []
    a, off = tr.address(ins, ops[0], pre)
    vals = [tr.value(ins, o, pre) for o in ops[1:]]
    mk = _Emitter(ins, a, off, space)
    g = tr.guard_of(ins)
    if op == "add":
        return pre + [mk.atom_add(d, vals[0], g)]
    if d is not None and not _read_elsewhere(tr, ins, d):
        d = None  # nobody reads the old value: the routine keeps no register for it
    if _changes_nothing(op, t, vals):  # ``atomicAdd(p, 0)``, which clang writes ``atom.or [p], 0``
        return pre + ([mk.load(d, g)] if d is not None else [])
    if op == "exch" and d is None:
        return pre + [mk.store(vals[0], g)]
    pre += _unaliased(tr, d, mk, vals, g)
    return pre + _serialised(tr, d, g, mk, lambda old: _new_value(tr, op, t, old, vals, mk))


IDENTITY = {"or": 0, "xor": 0, "and": M32, "max.u32": 0, "max.s32": 1 << 31, "min.u32": M32, "min.s32": (1 << 31) - 1}
"""Operands with which an atomic leaves every word as it was: it only reads the word."""


def _changes_nothing(op: str, t: str, vals: list) -> bool:
    """Whether the atomic is a read (its operand the operation's identity): a plain load then
    returns what it would, at whatever point of the serial order it runs."""
    key = f"{op}.{t}" if op in ("min", "max") else op
    return key in IDENTITY and isinstance(vals[0], Imm) and vals[0].value == IDENTITY[key]


def op_red(tr, ins: PtxInstr) -> list:
    return op_atom(tr, ins, result=False)


def _operation(ins: PtxInstr, result: bool) -> str:
    """The operation ``OP``, after checking every other modifier is a space, an ordering or a type."""
    found = [m for m in ins.mods if m in OPERATIONS]
    name = "atom" if result else "red"
    known = OPERATIONS + SPACES + ("local", "const", "param")
    odd = [m for m in ins.mods if m not in ORDERING and m.split("::")[0] not in known
           and m not in INT_TYPES32 | INT_TYPES64 | SUBWORD]
    if odd:
        raise unsupported(ins, f"`{name}` with .{', .'.join(odd)} is not supported (the machine's atomics take a "
                               f"space, an ordering and scope, an operation and a 32-bit integer type)")
    if len(found) != 1:
        other = [m for m in ins.mods if m not in ORDERING and m not in SPACES and m not in INT_TYPES32]
        raise unsupported(ins, f"`{name}.{'.'.join(other) or '?'}` is not a supported atomic (the machine has "
                               f"{name}.{{{','.join(OPERATIONS if result else OPERATIONS[:1] + OPERATIONS[3:])}}} "
                               f"on 32-bit integers)")
    op = found[0]
    if not result and op in ("exch", "cas"):
        raise unsupported(ins, f"red.{op} does not exist in PTX (use atom.{op})")
    return op


def _int_type(ins: PtxInstr, op: str) -> str:
    types = [m for m in ins.mods if m in INT_TYPES32 | INT_TYPES64 | SUBWORD]
    if not types:
        raise unsupported(ins, f"atom.{op} needs a type (.s32, .u32 or .b32)")
    t = types[-1]
    if t not in INT_TYPES32:
        raise unsupported(ins, f"atomics on .{t} words are not supported: the machine's atomics act on 32-bit "
                               f"words (use an `int` or `unsigned` counter)")
    if op in ("inc", "dec") and t != "u32":
        raise unsupported(ins, f"atom.{op} is defined on .u32 only")
    return t


def _space(ins: PtxInstr) -> str:
    """The space for display: shared or global (a generic address is either: one memory)."""
    for m in ins.mods:
        if m.split("::")[0] in ("local", "const", "param"):
            raise unsupported(ins, f".{m} memory has no atomics (only global and shared)")
    return "shared" if any(m.split("::")[0] == "shared" for m in ins.mods) else "global"


class _Emitter:
    """Makes the routine's instructions, each carrying the PTX instruction's origin; loads
    and stores go to the atomic's own address."""

    def __init__(self, ins: PtxInstr, addr, off: int, space: str):
        self.ins, self.addr, self.off, self.space = ins, addr, off, space

    def __call__(self, op: Op, dst, srcs, **kw) -> LInstr:
        ins = self.ins
        return LInstr(op, dst, tuple(srcs), line=ins.line, src=ins.src, text=ins.text, **kw)

    def load(self, dst: str, guard: VPred | None) -> LInstr:
        return self(Op.LD, dst, (self.addr,), guard=guard, offset=self.off, space=self.space)

    def store(self, value, guard: VPred | None) -> LInstr:
        return self(Op.ST, None, (self.addr, value), guard=guard, offset=self.off, space=self.space)

    def atom_add(self, dst: str | None, value, guard: VPred | None) -> LInstr:
        return self(Op.ATOM_ADD, dst, (self.addr, value), guard=guard, offset=self.off, space=self.space)


def _unaliased(tr, d: str | None, mk, vals: list, g: VPred | None) -> list:
    """Copies of the operands that name the destination (``atom.exch.b32 %r1, [%rd1], %r1``):
    the routine's rounds write ``d`` before the last round reads them, in place (``vals``,
    ``mk.addr``)."""
    out: list = []
    for i, v in enumerate(vals):
        if isinstance(v, VReg) and v.name == d:
            copy = tr.fresh()
            out.append(mk(Op.MOV, copy, (v,), guard=g))
            vals[i] = VReg(copy)
    if isinstance(mk.addr, VReg) and mk.addr.name == d:
        copy = tr.fresh()
        out.append(mk(Op.MOV, copy, (mk.addr,), guard=g))
        mk.addr = VReg(copy)
    return out


def _read_elsewhere(tr, ins: PtxInstr, name: str) -> bool:
    """Whether any other instruction of the kernel names register ``name``: its old value is used."""
    for other in tr.kernel.body:
        if other is ins or not isinstance(other, PtxInstr):
            continue
        if other.guard and other.guard[0] == name:
            return True
        if any(_names(o, name) for o in other.operands):
            return True
    return False


def _names(opnd, name: str) -> bool:
    """Whether an operand reads register ``name`` (itself, as a memory base, or in a pair)."""
    if isinstance(opnd, RegRef):
        return opnd.name == name
    if isinstance(opnd, MemRef):
        return _names(opnd.base, name)
    if isinstance(opnd, PairRef):
        return _names(opnd.first, name) or _names(opnd.second, name)
    return False


def _serialised(tr, d: str | None, g: VPred | None, mk, new_value, prepare=list) -> list:
    """A loop of one round per lane: in round ``k`` lane ``k`` alone reads the word, computes
    and stores (``p = lane == k``); the branch back is uniform (every lane counts alike).
    ``new_value(old)``: ``(the word's new value, the instructions computing it)`` from the
    value the round loaded (every lane computes it; only lane ``k`` stores it); ``prepare()``:
    instructions the rounds share, run once before them (a float operand's flush).

    A loop, not ``LANES`` copies: 3 machine blocks in the ROM instead of 6 to 9 (two
    rounds' worth of steps more), so a kernel holds several atomics on the default machine
    and the one-slot one. The old value goes to ``d`` by the round's load; nobody reading
    it, the load is unguarded into a temporary the round consumes, so no value crosses
    from round to round. Under a PTX guard ``g`` the loads are guarded too (a lane that
    skips the atomic may hold no valid address) and the lane test includes it.
    """
    lane, k, p, more = tr.fresh(), tr.fresh(), tr.fresh("%atp"), tr.fresh("%atp")
    out: list = [mk(Op.AND, lane, (Special("tid.x*4"), Imm(4 * (LANES - 1))))]
    if g is not None:
        sel = tr.fresh()
        out.append(mk(Op.SELP, sel, (VReg(lane), Imm(M32)), psrcs=(g,)))
        lane = sel
    out += prepare()
    guarded = d is not None or g is not None
    old = d if d is not None else tr.fresh()
    if guarded:  # a guarded load keeps the old value on the other lanes: give it one
        out.append(mk(Op.MOV, old, (Imm(0),)))
    out += [mk(Op.MOV, k, (Imm(0),)), mk(Op.SETP, p, (VReg(lane), Imm(0)), cmp="eq")]
    top = tr.fresh("$atom_round")
    out += [LLabel(top), mk.load(old, VPred(p) if guarded else None)]
    new, body = new_value(VReg(old))
    out += body + [mk.store(new, VPred(p)),
                   mk(Op.ADD, k, (VReg(k), Imm(4))),
                   mk(Op.SETP, p, (VReg(lane), VReg(k)), cmp="eq"),
                   mk(Op.SETP, more, (VReg(k), Imm(4 * LANES)), cmp="ne"),
                   LTerm("bra", top, VPred(more), mk.ins.line)]
    return out


def _new_value(tr, op: str, t: str, old: VReg, vals: list, mk) -> tuple:
    """(the word's new value, the instructions computing it) from the old value, as PTX defines ``atom.OP``."""
    b = vals[0]
    if op == "exch":
        return b, []
    n = tr.fresh()
    if op in ("min", "max"):
        return VReg(n), [mk(Op.MIN if op == "min" else Op.MAX, n, (old, b), signed=t == "s32")]
    if op in ("and", "or", "xor"):
        return VReg(n), [mk({"and": Op.AND, "or": Op.OR, "xor": Op.XOR}[op], n, (old, b))]
    q, step = tr.fresh("%atq"), tr.fresh()
    if op == "cas":  # new = old == b ? c : old
        return VReg(n), [mk(Op.SETP, q, (old, b), cmp="eq"), mk(Op.SELP, n, (vals[1], old), psrcs=(VPred(q),))]
    if op == "inc":  # new = old >= b ? 0 : old + 1, i.e. with s = old + 1 (wrapping): s > b ? 0 : s
        return VReg(n), [mk(Op.ADD, step, (old, Imm(1))), mk(Op.SETP, q, (VReg(step), b), cmp="gt"),
                         mk(Op.SELP, n, (Imm(0), VReg(step)), psrcs=(VPred(q),))]
    # dec: new = (old == 0 || old > b) ? b : old - 1, i.e. with s = old - 1 (wrapping): s >= b ? b : s
    return VReg(n), [mk(Op.SUB, step, (old, Imm(1))), mk(Op.SETP, q, (VReg(step), b), cmp="ge"),
                     mk(Op.SELP, n, (b, VReg(step)), psrcs=(VPred(q),))]
