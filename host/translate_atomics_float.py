"""``atom.add.f32`` / ``red.add.f32`` -> IR: CUDA's float ``atomicAdd`` as a serialised
routine of the float add.

The machine's one atomic adds integers, so a float atomic add is lowered as the integer
atomics other than ``add`` are (``translate_atomics``): a loop of one round per lane, in
round ``k`` lane ``k`` alone reads the word, adds its operand with ``float_addmul.add``
(round to nearest even, the routine every ``a + b`` runs) and stores the sum; the old
value is what that round read. Warps do not interleave inside the routine (a warp runs
until a barrier or its exit), so the launch performs the adds in one serial order,
warps in turn and lanes in ascending order within a warp, and every old value and the
final word are those of that order's float32 sums.

PTX says ``atom.add.f32`` without ``.noftz`` flushes subnormal inputs and results to
sign-preserving zero on global memory, and keeps them on shared memory; the routine does
the same (three instructions per flush: the operand once, and each round's word and
sum). The old value returned is the word as it was, unflushed. A generic address (no
``.global``/``.shared``) could be either, so it is refused: clang names the space
wherever it can see it (a kernel's pointer parameters, ``__shared__`` arrays).
"""

from __future__ import annotations

from qwengpu_mlx.core.isa import Imm, Op

from qwengpu_mlx.host import float_addmul
from qwengpu_mlx.host.float_pack import MAGNITUDE, SIGN, FloatEmitter
from qwengpu_mlx.host.ir import VPred, VReg
from qwengpu_mlx.host.ptx_ast import PtxInstr
from qwengpu_mlx.host.translate_atomics import ORDERING, _Emitter, _read_elsewhere, _serialised, _unaliased
from qwengpu_mlx.host.translate_memory import on_word_arrays
from qwengpu_mlx.host.translate_types import unsupported

SMALLEST_NORMAL = 0x00800000


def _atom_add_f32(tr, ins: PtxInstr, result: bool = True) -> list:
    """``atom[.space][.sem][.scope].add[.noftz].f32 d, [a], b`` (``red``: no ``d``)."""
    space = _space(ins, result)
    ops = list(ins.operands)
    d = tr.dst(ins, ops.pop(0)) if result else None
    if len(ops) != 2:
        raise unsupported(ins, "a float atomic add takes an address and one value operand")
    pre: list = []
    a, off = tr.address(ins, ops[0], pre)
    vals = [tr.value(ins, ops[1], pre)]
    mk = _Emitter(ins, a, off, space)
    g = tr.guard_of(ins)
    if d is not None and not _read_elsewhere(tr, ins, d):
        d = None  # nobody reads the old value: the routine keeps no register for it
    pre += _unaliased(tr, d, mk, vals, g)
    flush = space == "global" and "noftz" not in ins.mods
    return pre + _rounds(tr, ins, d, vals[0], g, mk, flush)


op_atom_float = on_word_arrays(_atom_add_f32)
op_red_float = on_word_arrays(lambda tr, ins: _atom_add_f32(tr, ins, result=False))


def _space(ins: PtxInstr, result: bool) -> str:
    """The atomic's space, after checking every modifier is one the routine computes."""
    name = "atom" if result else "red"
    whole = f"`{ins.opcode}{''.join('.' + m for m in ins.mods)}`"
    ops = [m for m in ins.mods if m in ("add", "exch", "cas", "min", "max", "inc", "dec", "and", "or", "xor")]
    if ops != ["add"]:
        raise unsupported(ins, f"{whole}: of the float atomics only {name}.add.f32 (atomicAdd) is supported; "
                               f"atomicExch on a float exchanges its bits as an integer")
    odd = [m for m in ins.mods if m not in ORDERING and m.split("::")[0] not in ("global", "shared")
           and m not in ("add", "noftz", "f32")]
    if odd:
        raise unsupported(ins, f"{whole}: .{', .'.join(odd)} is not supported for a float atomic add")
    spaces = {m.split("::")[0] for m in ins.mods} & {"global", "shared"}
    if not spaces:
        raise unsupported(ins, f"{whole}: a float atomic add on a generic address is not supported (on a GPU "
                               f"it flushes subnormals in global memory and keeps them in shared memory, "
                               f"and which one this address is shows only at run time); add through a "
                               f"kernel's pointer parameter or a __shared__ array directly")
    return spaces.pop()


def _rounds(tr, ins: PtxInstr, d: str | None, b, g: VPred | None, mk, flush: bool) -> list:
    """``translate_atomics._serialised``'s loop of one round per lane, each round's new
    value the float add routine on what it loaded (inlined, or a call of the kernel's shared
    add: ``float_routines``); with ``flush`` the operand is flushed once before the rounds,
    and each round's word and sum."""
    em = FloatEmitter(ins.line, ins.src, ins.text, tr.fresh)
    operand = [b]

    def flushed_operand() -> list:
        out: list = []
        if flush:
            operand[0] = _flushed(em, b, em.reg(), out)
        return out

    def new_value(old: VReg) -> tuple:
        out: list = []
        x = _flushed(em, old, em.reg(), out) if flush else old
        s, y = em.reg(), operand[0]
        out += tr.float_calls.emit("add", [x, y], s, None, em, lambda: float_addmul.add(em, s, x, y))
        if flush:
            _flushed(em, VReg(s), s, out)
        return VReg(s), out

    return _serialised(tr, d, g, mk, new_value, flushed_operand)


def _flushed(em: FloatEmitter, x, dst: str, out: list) -> VReg:
    """``dst`` = ``x`` with a subnormal made the zero of its sign (PTX's flush to zero)."""
    m, tiny = em.reg(), em.pred()
    if not (isinstance(x, VReg) and x.name == dst):
        out.append(em.ins(Op.MOV, dst, (x,)))
    out += [em.ins(Op.AND, m, (x, Imm(MAGNITUDE))),
            em.ins(Op.SETP, tiny, (VReg(m), Imm(SMALLEST_NORMAL)), cmp="lt"),
            em.ins(Op.AND, dst, (VReg(dst), Imm(SIGN)), guard=VPred(tiny))]
    return VReg(dst)
