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

from qwengpu_mlx.host.ptx_ast import MemRef, PairRef, PtxInstr, PtxKernel, RegRef, SymRef

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
