"""64-bit integer values (``size_t``, ``long``, ``long long``, ``[u]int64_t``) in the translation.

``wide64_plan.plan`` has said, before the kernel is translated, which 64-bit registers
are pairs (their high word demanded), which may hold values beyond 32 bits (tainted)
and which compute addresses. :func:`takes` says which instructions this module
translates: every 64-bit instruction writing a pair or a tainted register, every 64-bit
operation the address arithmetic never had (``and``/``or``/``xor``/``not``/``neg``,
``shr``, ``setp``, ``min``/``max``/``abs``), 64-bit loads, stores and scalar parameters,
and any memory access through a tainted address. Everything else goes on as before, so a
kernel without 64-bit values is lowered exactly as it was.

A pair's low word is the machine register of the PTX register's own name, its high word
``NAME.hi`` (``HIGH``); ``wide64_ops`` has the instruction sequences. A tainted address's
high word is checked before the access: where it is not 0 the exact address is beyond
every array (beyond 4 GiB, or negative), and the lane faults on a store to the trap
address, as a GPU faults on an illegal address.
"""

from __future__ import annotations

from qwengpu_mlx.core.isa import Imm, Op

from qwengpu_mlx.host import division, narrow_memory
from qwengpu_mlx.host import wide64_ops as ops
from qwengpu_mlx.host.ir import LConst, LParamLoad, VPred, VReg
from qwengpu_mlx.host.ptx_ast import ImmRef, MemRef, PtxInstr, RegRef, SymRef
from qwengpu_mlx.host.translate_alu import CLOSED_FORM_HINT, CMP_NAMES
from qwengpu_mlx.host.translate_memory import _roots, _space
from qwengpu_mlx.host.translate_types import M32, unsupported
from qwengpu_mlx.host.wide64_plan import TYPES64, big_constant, instr_type, is_wide_typed

HIGH = ".hi"
"""Suffix of a pair's high-word register (``%rd5`` and ``%rd5.hi``)."""

ADDRESS_OPS = {"add", "sub", "mul", "mad", "shl", "mov", "selp", "cvt", "cvta"}
"""64-bit operations the address arithmetic has always lowered on the low word alone."""

REFUSED = {
    "div": "64-bit division (`/` on long long or size_t) is not supported: the machine's division routine is "
           "32-bit; divide 32-bit values where they fit (cast to unsigned or int first)" + CLOSED_FORM_HINT,
    "rem": "64-bit remainder (`%` on long long or size_t) is not supported: the machine's division routine is "
           "32-bit; take the remainder of 32-bit values where they fit (cast to unsigned or int first)"
           + CLOSED_FORM_HINT,
}
"""What is refused and the way around it; CLOSED_FORM_HINT: clang's closed formula of a
32-bit loop may divide in 64 bits where the kernel has no 64-bit value."""


def _dst(ins: PtxInstr) -> str | None:
    o = ins.operands[0] if ins.operands else None
    return o.name if isinstance(o, RegRef) and ins.opcode not in ("st", "red", "setp") else None


def takes(tr, ins: PtxInstr) -> bool:
    """Does this module translate ``ins`` (see the module's doc)?"""
    plan, op = tr.wide_plan, ins.opcode
    d = _dst(ins)
    if op in ("ld", "st", "atom", "red"):
        if any(isinstance(o, MemRef) and isinstance(o.base, RegRef) and o.base.name in plan.tainted
               for o in ins.operands):
            return True
        if op == "ld" and d in plan.pairs:
            return True
        return op in ("ld", "st") and is_wide_typed(ins) and not _pointer_param(tr, ins)
    if d in plan.pairs and op in ("mul", "mad", "cvt", "cvta", "mov"):
        return True
    if not is_wide_typed(ins):
        return False
    if d in plan.pairs or d in plan.tainted or op not in ADDRESS_OPS:
        return True
    return d not in plan.address and big_constant(ins)


def _pointer_param(tr, ins: PtxInstr) -> bool:
    mem = ins.operands[1] if len(ins.operands) > 1 else None
    return ("param" in ins.mods and isinstance(mem, MemRef) and isinstance(mem.base, SymRef)
            and tr.params.get(mem.base.name, "").startswith("ptr"))


OPERANDS = {"add": 3, "sub": 3, "mul": 3, "and": 3, "or": 3, "xor": 3, "min": 3, "max": 3, "shl": 3, "shr": 3,
            "setp": 3, "mad": 4, "selp": 4, "not": 2, "neg": 2, "abs": 2, "mov": 2, "cvt": 2, "cvta": 2,
            "ld": 2, "st": 2}
"""How many operands each instruction this module translates has (a mangled one is refused)."""


def translate(tr, ins: PtxInstr) -> list:
    """``ins`` as machine instructions over pairs (``takes`` said yes)."""
    if ins.opcode in REFUSED:
        raise unsupported(ins, REFUSED[ins.opcode])
    want = OPERANDS.get(ins.opcode)
    if want is not None and len(ins.operands) != want:
        raise unsupported(ins, f"`{ins.opcode}` takes {want} operands")
    em = division.Emitter(ins.line, ins.src, ins.text, tr.fresh)
    if ins.opcode in ("ld", "st", "atom", "red"):
        return _memory(tr, ins, em)
    if ins.opcode == "setp":
        return _setp(tr, ins, em)
    d = _dst(ins)
    if d is None:
        raise unsupported(ins, "destination must be a register")
    dh = d + HIGH if d in tr.wide_plan.pairs else None
    if ins.guard is None:
        return _compute(tr, ins, em, d, dh)
    tl, th = em.reg("%wg"), (em.reg("%wg") if dh else None)  # computed aside, then moved where the guard holds
    g = tr.guard_of(ins)
    moves = [em.ins(Op.MOV, d, (VReg(tl),), guard=g)] + ([em.ins(Op.MOV, dh, (VReg(th),), guard=g)] if dh else [])
    return _compute(tr, ins, em, tl, th) + moves


def halves(tr, ins: PtxInstr, opnd, pre: list) -> tuple:
    """A 64-bit operand's ``(lo, hi)``: a pair's two registers, a constant's two words."""
    if isinstance(opnd, ImmRef):
        v = opnd.value & ((1 << 64) - 1)
        return Imm(v & M32), Imm(v >> 32)
    if isinstance(opnd, RegRef):
        if opnd.name not in tr.wide_plan.pairs:
            raise unsupported(ins, f"the high word of {opnd.name} is needed here but was not kept (an internal "
                                   f"limit of the 64-bit lowering); compute this value in 32 bits")
        return VReg(opnd.name), VReg(opnd.name + HIGH)
    if isinstance(opnd, SymRef):
        return tr.value(ins, opnd, pre), Imm(0)
    raise unsupported(ins, f"operand {opnd!r} is not supported in a 64-bit operation")


def _low(tr, ins, opnd, pre: list):
    """A 64-bit operand's low word only (what the low word of a result needs)."""
    if isinstance(opnd, ImmRef):
        return Imm(opnd.value & M32)
    if isinstance(opnd, RegRef):
        return VReg(opnd.name)
    return tr.value(ins, opnd, pre)


def _operands(tr, ins, n: int, dh, pre: list) -> list:
    """The ``n`` source operands, as pairs where the high word is wanted, else low words
    (paired with a placeholder high word that nothing reads)."""
    srcs = ins.operands[1:1 + n]
    if dh is None:
        return [(_low(tr, ins, o, pre), Imm(0)) for o in srcs]
    return [halves(tr, ins, o, pre) for o in srcs]


def _shift_amount(tr, ins, pre: list):
    """A shift's amount: an int for a constant, else the 32-bit operand (a routine shifts by it)."""
    k = ins.operands[2]
    return k.value if isinstance(k, ImmRef) else tr.value(ins, k, pre)


def _compute(tr, ins, em, d: str, dh: str | None) -> list:
    """The result of ``ins`` into ``d`` (and its high word into ``dh`` when wanted)."""
    op, t = ins.opcode, instr_type(ins)
    pre: list = []
    if op in ("mul", "mad") and "wide" in ins.mods:
        return pre + _wide_product(tr, ins, em, d, dh, pre)
    if op in ("cvt", "mov", "cvta"):
        return _move(tr, ins, em, d, dh)
    if op in ("mul", "mad") and ("hi" in ins.mods or "cc" in ins.mods):
        raise unsupported(ins, f"`{op}.hi`/carry of 64-bit integers is not supported (clang's division or remainder "
                               f"of a 64-bit value by a constant, or `__umul64hi`): the machine's division routine is "
                               f"32-bit; divide 32-bit values where they fit (cast to unsigned or int first)"
                               + CLOSED_FORM_HINT)
    if op in ("shr", "min", "max", "abs"):  # the low word needs the high words
        return _high_reader(tr, ins, em, d, dh, pre)
    if op == "selp":
        a, b = _operands(tr, ins, 2, dh, pre)
        return pre + ops.select(em, d, dh, a, b, tr.pred(ins, ins.operands[3]))
    simple = {"add": (2, ops.add), "sub": (2, ops.sub), "mul": (2, ops.mul_lo)}
    if op in simple:
        n, f = simple[op]
        return pre + f(em, d, dh, *_operands(tr, ins, n, dh, pre))
    if op == "mad":
        a, b, c = _operands(tr, ins, 3, dh, pre)
        pl, ph = em.reg(), (em.reg() if dh else None)
        return pre + ops.mul_lo(em, pl, ph, a, b) + ops.add(em, d, dh, (VReg(pl), VReg(ph) if ph else Imm(0)), c)
    if op == "neg":
        (a,) = _operands(tr, ins, 1, dh, pre)
        return pre + ops.sub(em, d, dh, (Imm(0), Imm(0)), a)
    if op in ("and", "or", "xor", "not"):
        n = 1 if op == "not" else 2
        return pre + ops.bitwise(em, Op[op.upper()], d, dh, *_operands(tr, ins, n, dh, pre))
    if op == "shl":
        (a,) = _operands(tr, ins, 1, dh, pre)
        k = _shift_amount(tr, ins, pre)
        return pre + (ops.shl(em, d, dh, a, k) if isinstance(k, int) else ops.shl_var(em, d, dh, a, k))
    raise unsupported(ins, f"PTX instruction `{ins.opcode}{''.join('.' + m for m in ins.mods)}` on 64-bit "
                           f"integers ({t}) is not supported by the machine")


def _high_reader(tr, ins, em, d, dh, pre: list) -> list:
    """``shr``, ``min``, ``max``, ``abs``: the operands as pairs whatever the result keeps."""
    signed = instr_type(ins)[0] == "s"
    op = ins.opcode
    if op == "shr":
        a, k = halves(tr, ins, ins.operands[1], pre), _shift_amount(tr, ins, pre)
        return pre + (ops.shr(em, d, dh, a, k, signed) if isinstance(k, int) else ops.shr_var(em, d, dh, a, k, signed))
    if op == "abs":
        return pre + ops.absolute(em, d, dh, halves(tr, ins, ins.operands[1], pre))
    a, b = (halves(tr, ins, o, pre) for o in ins.operands[1:3])
    return pre + ops.min_max(em, d, dh, a, b, signed, op == "min")


def _wide_product(tr, ins, em, d, dh, pre: list) -> list:
    """``mul.wide``/``mad.wide`` ``.s32``/``.u32`` into a pair: the exact product (plus a pair)."""
    t = instr_type(ins)
    if t not in ("s32", "u32"):
        raise unsupported(ins, f"`{ins.opcode}.wide.{t}` into a 64-bit value is not supported (32-bit operands only)")
    a, b = (tr.value(ins, o, pre) for o in ins.operands[1:3])
    small = [isinstance(x, VReg) and x.name in tr.wide_plan.small for x in (a, b)]
    if small[1] and not small[0]:
        a, b = b, a
    if ins.opcode == "mul":
        return ops.mul_wide(em, d, dh, a, b, t == "s32", small=any(small))
    pl, ph = em.reg(), (em.reg() if dh else None)
    c = halves(tr, ins, ins.operands[3], pre) if dh else (_low(tr, ins, ins.operands[3], pre), Imm(0))
    return ops.mul_wide(em, pl, ph, a, b, t == "s32") + \
        ops.add(em, d, dh, (VReg(pl), VReg(ph) if ph else Imm(0)), c)


def _move(tr, ins, em, d, dh) -> list:
    """``mov``/``cvta`` of a 64-bit value, and ``cvt`` into one: a 32-bit (or narrower)
    source is extended by its type's signedness into the high word."""
    src = ins.operands[1]
    frm = [m for m in ins.mods if m[:1] in "sub" and m[1:].isdigit()]
    narrow_source = ins.opcode == "cvt" and len(frm) == 2 and frm[1] not in TYPES64
    pre: list = []
    if narrow_source:
        lo = tr.op_cvt(ins)  # the low word as the 32-bit lowering extends it
        if dh is None:
            return lo
        fill = em.ins(Op.SHR, dh, (VReg(d), Imm(31)), signed=True) if frm[1][0] == "s" else \
            em.ins(Op.MOV, dh, (Imm(0),))
        return lo + [fill]
    if isinstance(src, SymRef) and ins.guard is None:
        return [LConst(d, src.name, ins.line)] + ([em.ins(Op.MOV, dh, (Imm(0),))] if dh else [])
    if dh is None:
        return pre + [em.ins(Op.MOV, d, (_low(tr, ins, src, pre),))]
    lo, hi = halves(tr, ins, src, pre)
    return pre + [em.ins(Op.MOV, d, (lo,)), em.ins(Op.MOV, dh, (hi,))]


def _setp(tr, ins, em) -> list:
    """``setp.CMP.{s64,u64,b64}``."""
    cmp_mod = next((m for m in ins.mods if m in CMP_NAMES), None)
    if cmp_mod is None or any(m in ("and", "or", "xor") for m in ins.mods) or not isinstance(ins.operands[0], RegRef):
        raise unsupported(ins, "this 64-bit comparison form is not supported (one predicate, no combining)")
    cmp, forced = CMP_NAMES[cmp_mod]
    signed = (instr_type(ins)[0] == "s") if forced is None else forced
    pre: list = []
    a, b = (halves(tr, ins, o, pre) for o in ins.operands[1:3])
    return pre + ops.compare(em, ins.operands[0].name, cmp, signed, a, b, guard=tr.guard_of(ins))


def _memory(tr, ins, em) -> list:
    """A memory access through a tainted address (its high word checked first), a 64-bit
    load or store (two words, low word first in memory, as on a GPU), a 64-bit scalar
    parameter, or a 32-bit load into a pair (extended into the high word)."""
    if any(m[:1] == "v" and m[1:].isdigit() for m in ins.mods):
        raise unsupported(ins, "a vector access of 64-bit elements (long2, double2 ...) or through an address "
                               "whose high word is read is not supported (vectors of 32-bit elements are: "
                               "float4, int2 ...); access the elements one by one")
    check = _address_checks(tr, ins, em)
    d = _dst(ins) if ins.opcode == "ld" else None
    dh = d + HIGH if d in tr.wide_plan.pairs else None
    if ins.opcode == "ld" and "param" in ins.mods:
        return check + _param(tr, ins, em, d, dh)
    if not is_wide_typed(ins):
        lo = tr.op_ld(ins) if ins.opcode == "ld" else getattr(tr, "op_" + ins.opcode)(ins)
        if dh is None:
            return check + lo
        t = instr_type(ins)
        fill = em.ins(Op.SHR, dh, (VReg(d), Imm(31)), signed=True) if t[0] == "s" else em.ins(Op.MOV, dh, (Imm(0),))
        return check + lo + [fill]
    if ins.opcode not in ("ld", "st"):
        raise unsupported(ins, "64-bit atomics are not supported (the machine's atomics are 32-bit): use "
                               "int or unsigned counters")
    _refuse_parameter_array(tr, ins)
    return check + _two_words(tr, ins, em, d, dh)


def _refuse_parameter_array(tr, ins) -> None:
    """A 64-bit element of a kernel launch's array parameter (``"ptr64"``): the launch binds
    and prints arrays as words (one value each), so such an array is refused where it is
    read or written. A program's (its host code copied the bytes) and a ``__shared__``
    array of them work: two words an element, the low word first."""
    roots, _ = _roots(tr)
    mem = next(o for o in ins.operands if isinstance(o, MemRef))
    params = narrow_memory.address_roots(mem, roots) & {n for n, k in tr.params.items() if k == "ptr64"}
    if params:
        raise unsupported(ins, "an array of 64-bit integers (long long*, size_t*, int64_t*) as a kernel parameter is "
                               "not supported: pass int or unsigned arrays (a 64-bit scalar parameter, local "
                               "variable or __shared__ array works)")


def _address_checks(tr, ins, em) -> list:
    """Where the address is tainted: fault unless its high word is 0."""
    out = []
    for o in ins.operands:
        if isinstance(o, MemRef) and isinstance(o.base, RegRef) and o.base.name in tr.wide_plan.tainted:
            p, a = em.reg("%wq"), em.reg()
            out += [em.ins(Op.SETP, p, (VReg(o.base.name + HIGH), Imm(0)), cmp="ne"),
                    em.ins(Op.MOV, a, (Imm(division.TRAP_ADDRESS),)),
                    em.ins(Op.ST, None, (VReg(a), Imm(0)), guard=VPred(p), space="global")]
    return out


def _param(tr, ins, em, d, dh) -> list:
    """``ld.param.u64``: a pointer's address (high word 0) or a 64-bit scalar's two words."""
    mem = ins.operands[1] if len(ins.operands) > 1 else None
    name = mem.base.name if isinstance(mem, MemRef) and isinstance(mem.base, SymRef) else None
    if name not in tr.params:
        raise unsupported(ins, "unknown parameter")
    if mem.offset:
        raise unsupported(ins, "parameters must be scalars or pointers (no structs)")
    lo = LParamLoad(d, name, ins.line, 32, False)
    if dh is None:
        return [lo]
    if tr.params[name].startswith("ptr"):
        return [lo, em.ins(Op.MOV, dh, (Imm(0),))]
    return [lo, LParamLoad(dh, name, ins.line, 64, False)]  # bits 64: the value's high word (binding)


def _two_words(tr, ins, em, d, dh) -> list:
    """``ld``/``st`` ``.u64``: the word at the address and the one after it."""
    pre: list = []
    space = _space(tr, ins)
    g = tr.guard_of(ins)
    if ins.opcode == "ld":
        a, off = tr.address(ins, ins.operands[1], pre)
        hi = [em.ins(Op.LD, dh, (a,), offset=off + 4, space=space, guard=g)] if dh else []
        return pre + hi + [em.ins(Op.LD, d, (a,), offset=off, space=space, guard=g)]
    a, off = tr.address(ins, ins.operands[0], pre)
    lo, hi = halves(tr, ins, ins.operands[1], pre)
    return pre + [em.ins(Op.ST, None, (a, lo), offset=off, space=space, guard=g),
                  em.ins(Op.ST, None, (a, hi), offset=off + 4, space=space, guard=g)]
