"""Memory instructions (``ld``, ``st``; atomics are ``translate_atomics``) -> IR: the translation's memory family.

Each ``op_NAME(tr, ins)`` translates one PTX instruction for the ``Translator`` ``tr``
(which binds it as its method ``op_NAME``) and returns its IR items.
"""

from __future__ import annotations

from qwengpu_mlx.core.isa import Imm, Op

from qwengpu_mlx.host import narrow, narrow_memory
from qwengpu_mlx.host.ir import LInstr, LParamLoad, VReg
from qwengpu_mlx.host.ptx_ast import MemRef, SymRef
from qwengpu_mlx.host.translate_types import INT_TYPES64, M32, SUBWORD, unsupported


def op_ld(tr, ins):
    if "param" in ins.mods:
        mem = ins.operands[1]
        name = mem.base.name if isinstance(mem, MemRef) and isinstance(mem.base, SymRef) else None
        if name not in tr.params:
            raise unsupported(ins, "unknown parameter")
        if mem.offset:
            raise unsupported(ins, "parameters must be scalars or pointers (no structs)")
        t = tr.typ(ins)
        d = tr.dst(ins, ins.operands[0])
        if t in INT_TYPES64:
            if not tr.params[name].startswith("ptr"):
                tr.check_no_wide(ins, "a 64-bit scalar parameter")
            tr.wide.add(d)
        bits = int(t[1:]) if t in SUBWORD else 32
        return [LParamLoad(d, name, ins.line, bits, t[0] == "s")]
    return _mem(tr, ins, Op.LD)


def op_st(tr, ins):
    return _mem(tr, ins, Op.ST)


def _space(tr, ins):
    for s in ("global", "shared"):
        if s in ins.mods:
            return s
    for s in ("local", "const", "param"):
        if s in ins.mods:
            raise unsupported(ins, f".{s} memory is not supported (only global and shared)")
    return "global"


def _mem(tr, ins, op):
    if any(m.startswith("v") and m[1:].isdigit() for m in ins.mods):
        return _vector(tr, ins, op)
    t = tr.typ(ins)
    element_bits = _narrow_array_bits(tr, ins, t)
    if element_bits is not None:
        return _element_access(tr, ins, op, t, element_bits)
    if t in SUBWORD and op is Op.LD:
        return _subword_load(tr, ins, t)
    if t in SUBWORD:
        raise unsupported(ins, f"a {t[1:]}-bit store into an array of 32-bit words is not supported: a word's "
                               f"byte cannot be stored alone (lanes storing bytes of one word in the same step "
                               f"would overwrite each other); store an int, e.g. `a[i] = (int)c`, or make the "
                               f"array `char*`/`short*`")
    if t in INT_TYPES64:
        tr.check_no_wide(ins, "64-bit memory access")
    space = _space(tr, ins)
    pre: list = []
    g = tr.guard_of(ins)
    if op is Op.LD:
        d = tr.dst(ins, ins.operands[0])
        a, off = tr.address(ins, ins.operands[1], pre)
        return pre + [LInstr(Op.LD, d, (a,), guard=g, offset=off, space=space, line=ins.line, src=ins.src, text=ins.text)]
    a, off = tr.address(ins, ins.operands[0], pre)
    v = tr.value(ins, ins.operands[1], pre)
    return pre + [LInstr(Op.ST, None, (a, v), guard=g, offset=off, space=space, line=ins.line, src=ins.src, text=ins.text)]


def _vector(tr, ins, op):
    """``ld``/``st`` ``.v2``/``.v4`` of 32-bit elements (a ``float4``, an ``int2`` ...): one
    machine load or store per element, at the next word each. clang emits them only
    where the type's alignment (8 or 16 bytes, as CUDA's) holds, so the words are the
    ones the GPU's one access reads or writes."""
    t = tr.typ(ins)
    if narrow.type_bits(t) != 32 or _narrow_array_bits(tr, ins, t) is not None:
        raise unsupported(ins, f"a vector access of {t[1:]}-bit elements is not supported (only 32-bit ones: "
                               f"float2, float4, int2, int4, uint2, uint4); access the elements one by one")
    space = _space(tr, ins)
    pre: list = []
    g = tr.guard_of(ins)
    mem, vec = (ins.operands[1], ins.operands[0]) if op is Op.LD else (ins.operands[0], ins.operands[1])
    a, off = tr.address(ins, mem, pre)
    out = []
    for k, element in enumerate(vec.elements):
        common = dict(guard=g, offset=off + 4 * k, space=space, line=ins.line, src=ins.src, text=ins.text)
        if op is Op.LD:
            out.append(LInstr(Op.LD, tr.dst(ins, element), (a,), **common))
        else:
            out.append(LInstr(Op.ST, None, (a, tr.value(ins, element, pre)), **common))
    return pre + out


def _roots(tr) -> tuple[dict, dict[str, int]]:
    """Pointer provenance and each root's element width (``narrow_memory``), once per kernel."""
    got = getattr(tr, "narrow_roots", None)
    if got is None:
        params = {n for n, kind in tr.params.items() if kind.startswith("ptr")}
        widths = {n: int(kind[3:]) if kind[3:] else 32 for n, kind in tr.params.items() if kind.startswith("ptr")}
        shared = set(tr.shared_names)
        widths.update({n: 32 for n in shared})
        widths.update(narrow_memory.shared_element_bits(tr.kernel, params, shared))
        got = tr.narrow_roots = (narrow_memory.pointer_roots(tr.kernel, params, shared), widths)
    return got


def _narrow_array_bits(tr, ins, t: str) -> int | None:
    """The element width (8 or 16) of the ``char``/``short`` array ``ins`` accesses, or None
    for a 32-bit array; refused where the access's width is not the array's."""
    mem = narrow_memory.memory_operand(ins)
    if mem is None:
        return None
    roots, widths = _roots(tr)
    where = narrow_memory.address_roots(mem, roots)
    bits = {widths.get(r, 32) for r in where}
    if not where and {8, 16} & set(widths.values()):
        raise unsupported(ins, "the host cannot tell which array this address points into (the pointer was "
                               "loaded from memory or computed with bit operations), and the kernel has char "
                               "or short arrays, which keep one element per word: index the arrays directly")
    if not bits & {8, 16}:
        return None
    access = narrow.type_bits(t)
    if len(bits) > 1 or access not in bits:
        raise unsupported(ins, f"a {access}-bit access to an array of {'/'.join(str(b) for b in sorted(bits))}-bit "
                               f"elements: the machine keeps each char or short element in a word of its own, "
                               f"so such an array is read and written only element by element, at its type "
                               f"(not as ints, and one pointer may not point into arrays of different types)")
    return access


def on_word_arrays(translate):
    """``translate`` (an atomic's) refused first where its address reaches a char or short
    array: such an array keeps an element per word (``narrow_memory``), which a GPU's
    atomic on the bytes would not see."""
    def checked(tr, ins):
        if _narrow_array_bits(tr, ins, tr.typ(ins)) is not None:
            raise unsupported(ins, "an atomic on a char or short array is not supported: atomics work on "
                                   "int and unsigned arrays")
        return translate(tr, ins)
    return checked


def _element_access(tr, ins, op, t: str, bits: int) -> list:
    """A byte or halfword load/store of a one-element-per-word array: the address in the
    array's unit times 4 (bytes) or 2 (halves) is the element's word; a store writes the
    value zero-extended, a signed load extends it (``narrow_memory``)."""
    pre: list = []
    g = tr.guard_of(ins)
    space = _space(tr, ins)
    k = 2 if bits == 8 else 1
    mk = lambda *x, **kw: LInstr(*x, line=ins.line, src=ins.src, text=ins.text, **kw)  # noqa: E731
    a, off = tr.address(ins, ins.operands[1 if op is Op.LD else 0], pre)
    if isinstance(a, Imm):
        a = Imm((a.value << k) & M32)
    else:
        w = tr.fresh()
        pre.append(mk(Op.SHL, w, (a, Imm(k))))
        a = VReg(w)
    if op is Op.ST:
        v = narrow.extended(tr, ins, ins.operands[1], bits, False, pre)
        return pre + [mk(Op.ST, None, (a, v), guard=g, offset=off << k, space=space)]
    d = tr.dst(ins, ins.operands[0])
    if t[0] != "s":
        return pre + [mk(Op.LD, d, (a,), guard=g, offset=off << k, space=space)]
    w = tr.fresh()
    return pre + [mk(Op.LD, w, (a,), guard=g, offset=off << k, space=space)] + \
        narrow.extension_code(ins, d, VReg(w), bits, True, tr.fresh(), g)


def _subword_load(tr, ins, t: str) -> list:
    """``ld.s8``/``ld.u16``... from an array of 32-bit words (clang's load for ``(char)a[i]``,
    or bytes of an ``int`` array through a ``char*``): the word holding the byte, shifted
    down by its place in the word (little-endian, as on a GPU), then extended by the type's
    signedness. Where the address is certainly a word's (``narrow_memory.aligned_access``)
    the shift is left out."""
    bits = int(t[1:])
    d = tr.dst(ins, ins.operands[0])
    pre: list = []
    a, off = tr.address(ins, ins.operands[1], pre)
    w = tr.fresh()
    g = tr.guard_of(ins)
    mk = lambda *x, **k: LInstr(*x, line=ins.line, src=ins.src, text=ins.text, **k)  # noqa: E731
    if not narrow_memory.aligned_access(ins.operands[1], _aligned(tr)):
        byte, word, shift = tr.fresh(), tr.fresh(), tr.fresh()
        pre += [mk(Op.ADD, byte, (a, Imm(off & M32))), mk(Op.AND, word, (VReg(byte), Imm(M32 & ~3))),
                mk(Op.AND, shift, (VReg(byte), Imm(3))), mk(Op.SHL, shift, (VReg(shift), Imm(3)))]
        loaded = tr.fresh()
        pre.append(mk(Op.LD, loaded, (VReg(word),), guard=g, space=_space(tr, ins)))
        pre.append(mk(Op.SHR, w, (VReg(loaded), VReg(shift)), guard=g))
    else:
        pre.append(mk(Op.LD, w, (a,), guard=g, offset=off, space=_space(tr, ins)))
    return pre + narrow.extension_code(ins, d, VReg(w), bits, t[0] == "s", tr.fresh(), g)


def _aligned(tr) -> dict[str, bool]:
    """Which registers certainly hold word addresses (``narrow_memory``), once per kernel."""
    got = getattr(tr, "aligned_registers", None)
    if got is None:
        _, widths = _roots(tr)
        got = tr.aligned_registers = narrow_memory.aligned_registers(
            tr.kernel, {r for r, bits in widths.items() if bits == 32})
    return got
