"""``char`` and ``short`` arrays on a machine whose memory is 32-bit words.

**The design: one element per word.** A narrow array (a ``char*``/``short*`` kernel
parameter, or a ``__shared__`` array read and written only element by element at its
width) keeps each element in a word of its own, zero-extended (the byte as memory holds
it). The kernel's pointer to it counts elements in its own unit: a byte array's
pointer is its first word's index, a ``short`` array's twice that, so ``p + i`` is the
address of element ``i`` exactly as on a GPU, and a byte or halfword access at address
``a`` reads the machine word at byte address ``a * 4`` (``a * 2``): one ``shl`` more.

Why not bytes packed four to a word? A byte store would be a read-modify-write of a
word, and several lanes of a warp store in the same step: two lanes writing bytes of one
word would each write back the word with only its own byte changed, and one byte would be
lost, where a GPU gives each lane its byte. Serialising the lanes would cost a routine
per store. One element per word makes every byte store a plain word store, exact for
any lanes; it costs memory (4 words per 4 chars) and refuses what would see the layout:
a narrow array read as whole words, or a ``__shared__`` array accessed at two widths.

**Which array an address points into** comes from pointer provenance over the PTX:
every register's set of roots (pointer parameters and ``__shared__`` symbols) through
moves, ``cvta``, ``add``/``sub``, conversions and ``selp``, to a fixpoint.
"""

from __future__ import annotations

from qwengpu_mlx.host.ptx_ast import ImmRef, MemRef, PairRef, PtxInstr, PtxKernel, RegRef, SymRef

_PASS = ("mov", "cvta", "add", "sub", "cvt", "selp")
"""Instructions whose result points where their operands point."""


def one_per_word(bits: int) -> str:
    """The element type a narrow ``__shared__`` array is given once its width is known
    (``binding.shared_variables``), so the layout gives each element a word."""
    return f"u{bits}@word"


def word_element_bits(elem_type: str) -> int:
    """8 or 16 for an array laid out one element per word, else 32 (packed words)."""
    return int(elem_type[1:-5]) if elem_type.endswith("@word") else 32


def access_bits(ins: PtxInstr) -> int:
    for m in reversed(ins.mods):
        if m[:1] in "sub" and m[1:] in ("8", "16", "32", "64"):
            return int(m[1:])
    return 32


def memory_operand(ins: PtxInstr) -> MemRef | None:
    """The address operand of a global/shared ``ld``/``st``/``atom``/``red``, if any."""
    if ins.opcode not in ("ld", "st", "atom", "red") or "param" in ins.mods:
        return None
    for o in ins.operands:
        if isinstance(o, MemRef):
            return o
    return None


def pointer_roots(kernel: PtxKernel, params: set[str], shared: set[str]) -> dict[str, frozenset]:
    """Register -> the pointer parameters and ``__shared__`` symbols its value derives from."""
    roots: dict[str, frozenset] = {}
    changed = True
    while changed:
        changed = False
        for ins in kernel.body:
            if not isinstance(ins, PtxInstr) or not ins.operands or isinstance(ins.operands[0], PairRef):
                continue
            d = ins.operands[0]
            if not isinstance(d, RegRef):
                continue
            got: frozenset = frozenset()
            if ins.opcode == "ld" and "param" in ins.mods:
                m = ins.operands[1]
                if isinstance(m, MemRef) and isinstance(m.base, SymRef) and m.base.name in params:
                    got = frozenset({m.base.name})
            elif ins.opcode in _PASS:
                for o in ins.operands[1:]:
                    if isinstance(o, RegRef):
                        got |= roots.get(o.name, frozenset())
                    elif isinstance(o, SymRef) and o.name in shared:
                        got |= {o.name}
            if not got <= roots.get(d.name, frozenset()):
                roots[d.name] = roots.get(d.name, frozenset()) | got
                changed = True
    return roots


def address_roots(mem: MemRef, roots: dict[str, frozenset]) -> frozenset:
    if isinstance(mem.base, RegRef):
        return roots.get(mem.base.name, frozenset())
    if isinstance(mem.base, SymRef):
        return frozenset({mem.base.name})
    return frozenset()


def shared_element_bits(kernel: PtxKernel, params: set[str], shared: set[str]) -> dict[str, int]:
    """A ``__shared__`` array's element width: 8 or 16 where every access that reaches it
    alone is of that width, else 32 (packed words, as before)."""
    roots = pointer_roots(kernel, params, shared)
    widths: dict[str, set[int]] = {}
    for ins in kernel.body:
        mem = memory_operand(ins) if isinstance(ins, PtxInstr) else None
        if mem is None:
            continue
        for r in address_roots(mem, roots) & shared:
            widths.setdefault(r, set()).add(access_bits(ins))
    return {name: (min(w) if len(w) == 1 and min(w) < 32 else 32) for name, w in widths.items()}


def _aligned_operand(o, aligned: dict[str, bool]) -> bool:
    if isinstance(o, RegRef):
        return aligned.get(o.name, False)
    if isinstance(o, ImmRef):
        return o.value % 4 == 0
    return False


def _aligned_def(ins: PtxInstr, aligned: dict[str, bool], word_roots: set[str]) -> bool:
    """Whether the value ``ins`` defines is certainly a multiple of 4."""
    op, srcs = ins.opcode, ins.operands[1:]
    if op == "ld" and "param" in ins.mods:
        m = srcs[0] if srcs else None
        return isinstance(m, MemRef) and isinstance(m.base, SymRef) and m.base.name in word_roots
    if op in ("mov", "cvta", "cvt") and len(srcs) == 1:
        s = srcs[0]
        return (isinstance(s, SymRef) and s.name in word_roots) or _aligned_operand(s, aligned)
    if op in ("add", "sub", "selp"):
        return all(_aligned_operand(o, aligned) for o in srcs[:2])
    if op in ("mul", "and"):
        return any(_aligned_operand(o, aligned) for o in srcs[:2])
    if op == "shl" and len(srcs) == 2:
        return _aligned_operand(srcs[0], aligned) or (isinstance(srcs[1], ImmRef) and srcs[1].value >= 2)
    return False


def aligned_registers(kernel: PtxKernel, word_roots: set[str]) -> dict[str, bool]:
    """Register -> its value is certainly a multiple of 4 (a word address when it points
    into a 32-bit array, whose base is a word's): the greatest fixpoint over all its
    definitions. ``word_roots``: the 32-bit arrays' parameters and ``__shared__`` symbols."""
    defs = [ins for ins in kernel.body if isinstance(ins, PtxInstr) and ins.operands
            and isinstance(ins.operands[0], RegRef) and ins.opcode not in ("st", "red")]
    aligned = {ins.operands[0].name: True for ins in defs}
    changed = True
    while changed:
        changed = False
        for ins in defs:
            name = ins.operands[0].name
            if aligned[name] and not _aligned_def(ins, aligned, word_roots):
                aligned[name] = False
                changed = True
    return aligned


def aligned_access(mem: MemRef, aligned: dict[str, bool]) -> bool:
    """Whether ``[base+offset]`` is certainly a word address."""
    if mem.offset % 4:
        return False
    if isinstance(mem.base, SymRef):
        return True
    return _aligned_operand(mem.base, aligned)
