"""Values live across a shared float routine's call saved to memory around the call.

A shared routine (``float_routines``) must keep every value live across any of its
calls in registers the routine does not touch, so a kernel whose loops, bounds and
means are live across an ``fma`` of a dozen registers and seven predicates runs out of
the machine's 15 registers and 8 predicates. At the sharing level that ``spill``s, each
call instead stores what is live across it (beyond ``Budget``'s count, the values live
across the most calls first) into the calling thread's own words of a frame after the
launch's arrays and ``__shared__`` variables, and its continuation loads them back:
plain ``st``/``ld`` the model runs, at ``[%tid.x*4 + frame]``. A predicate is saved as
``selp 1, 0`` and restored by ``setp.ne``. The return site's number, a register at this
level (``SITE_NUMBER``), is saved by the call and loaded before the dispatch reads it, so
nothing of the call site's is held through the routine.

Thread blocks run one after another, so one frame per thread of a block serves the
grid; calls do not nest (a routine calls nothing), so every call reuses the frame's
words: word 0 of a thread the return site, words 1.. its saved values.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from qwengpu_mlx.core.errors import ResourceError
from qwengpu_mlx.core.isa import Imm, Op, Special, Terminator, TermKind

from qwengpu_mlx.host import call_liveness
from qwengpu_mlx.host.binding import MemoryLayout
from qwengpu_mlx.host.float_routines import SITE_NUMBER
from qwengpu_mlx.host.ir import BasicBlock, LInstr, MBlock, VPred, VReg
from qwengpu_mlx.host.regalloc import live_before

THREAD_WORD = Special("tid.x*4")


@dataclass(frozen=True)
class Budget:
    """How many values (``regs``) and predicates (``preds``) a call keeps in the
    machine's registers; the rest are saved to memory (None: all kept)."""

    regs: int | None = None
    preds: int | None = None


BUDGETS = (Budget(), Budget(None, 1), Budget(3, 1), Budget(2, 1), Budget(1, 1), Budget(1, 0), Budget(0, 0))
"""Tried in turn (``lowering.finish_program``) until the kernel's registers fit, each
saving what the one before saved and more (a store and a load per value and call, so
as few as fit; the ROM only grows along them). The fma routine alone uses seven of the
eight predicates."""


OFFSET_BYTES = 512
"""A load's or store's constant offset is below this (the ROM's 10-bit signed field):
the frame, addressed ``[%tid.x*4 + offset]``, must lie in memory's first bytes."""


def frame_base(layout) -> int:
    """The first memory word after the launch's arrays and ``__shared__`` variables."""
    return max((r.base + r.length for r in [*layout.arrays, *layout.shared]), default=0)


class FrameTooSmall(ResourceError):
    """The frame laid out before the arrays has fewer words per thread than the calls
    save (``slots``): the lowering lays it out again with that many."""

    def __init__(self, message: str, slots: int):
        super().__init__(message)
        self.slots = slots


def framed(layout: MemoryLayout, threads: int, mem_words: int, first: bool,
           slots: int) -> tuple[MemoryLayout, int, int]:
    """``(layout, the frame's first word, its words)``: with ``first`` (a single kernel's
    launch, whose arrays may move) the frame at word 0, ``slots`` words per thread, and
    the arrays and ``__shared__`` variables after it (as few as the calls need: an array
    moved past a load's offset costs an address add at each access); else (a program's
    launch: its device memory stays where it is) after them, where the offsets reach it
    only for small arrays."""
    end = frame_base(layout)
    words = threads * slots
    if not first or end + words > mem_words or 4 * words > OFFSET_BYTES:
        return layout, end, mem_words - end
    moved = [replace(r, base=r.base + words) for r in layout.arrays]
    shared = [replace(r, base=r.base + words) for r in layout.shared]
    return MemoryLayout(moved, shared, [0] * words + layout.image[:mem_words - words], layout.unit), 0, words


def save_across_calls(bbs: list[BasicBlock], budget: Budget, frame: tuple[int, int], threads: int,
                      kernel: str) -> None:
    """Store what each call of a shared routine leaves live beyond ``budget`` before the
    call and load it back at its continuation, in place (a value of one definition from
    constants and special registers is computed again there instead); the frame at word
    ``frame`` (first word, words), one word per thread of the block (``threads``) per
    saved value."""
    graph = basic_graph(bbs)
    regs = call_liveness.across_calls(graph, *use_kill(graph, bbs, DATA))
    preds = call_liveness.across_calls(graph, *use_kill(graph, bbs, PREDICATES))
    rebuilt = _constant_definitions(bbs)
    entry = {i: bbs[i].term.target for i in regs}
    saved = {i: _chosen(regs, entry, i, budget.regs, rebuilt) + _chosen(preds, entry, i, budget.preds, rebuilt)
             for i in regs}
    words = 1 + max((sum(n not in rebuilt for n in v) for v in saved.values()), default=0)
    base, room = frame
    address = [4 * (base + k * threads) for k in range(words)]
    if base == 0 and words * threads > room and 4 * words * threads <= OFFSET_BYTES:
        raise FrameTooSmall(f"kernel `{kernel}` saves {words - 1} values at a call", words)
    if words * threads > room or address[-1] + 4 * (threads - 1) >= OFFSET_BYTES:
        raise ResourceError(f"kernel `{kernel}` needs {words * threads} memory words to save the values live across "
                            f"its float routines' calls, within the first {OFFSET_BYTES // 4} words of memory "
                            f"(a load's offset): it has {room} from word {base}")
    by_label = {bb.label: bb for bb in bbs if bb.label}
    fresh = iter(range(1 << 30))
    numbers = _site_numbers(bbs)
    dispatches = {entry: _first_read(bbs, entry, number) for entry, number in numbers.items()}
    for i, names in saved.items():
        call, cont = bbs[i], by_label[bbs[i].term.returns_to]
        line = call.term.line
        if call.term.target in numbers:
            _store_site(call, numbers[call.term.target], address[0])
        stores = []
        loads = [replace(rebuilt[n], line=line) for n in names if n in rebuilt]
        for k, name in enumerate([n for n in names if n not in rebuilt], 1):
            s, ld = _save(name, name in preds[i], address[k], f"%fsave{next(fresh)}", line)
            stores += s
            loads += ld
        call.items += stores
        cont.items[:0] = loads
    for entry, (bb, k) in dispatches.items():  # loaded back right before the dispatch compares it
        bb.items.insert(k, LInstr(Op.LD, numbers[entry], (THREAD_WORD,), offset=address[0], space="shared"))


def _chosen(across: dict, entry: dict, call: int, keep: int | None, rebuilt: dict) -> list:
    """The names saved at ``call``: all but the ``keep`` its routine keeps in registers
    through all its calls, those live across the most of them (a register held through
    the routine saves a store and a load at each), values computed again kept last."""
    if keep is None:
        return []
    sites = [i for i in across if entry[i] == entry[call]]
    count = {}
    for i in sites:
        for n in across[i]:
            count[n] = count.get(n, 0) + 1
    kept = sorted(count, key=lambda n: (n in rebuilt, -count[n], n))[:keep]
    return sorted(across[call] - set(kept))


def _constant_definitions(bbs: list[BasicBlock]) -> dict[str, LInstr]:
    """``name -> its one definition`` where that reads only constants and special
    registers (a thread's index times 4, a bound): computing it again costs one
    instruction where saving it costs a store and a load."""
    defs: dict[str, list] = {}
    for bb in bbs:
        for it in bb.items:
            if isinstance(it, LInstr):
                for n in _defs(it)[0] | _defs(it)[1]:
                    defs.setdefault(n, []).append(it)
    return {n: d[0] for n, d in defs.items() if len(d) == 1 and _from_constants(d[0])}


def _from_constants(it: LInstr) -> bool:
    return (it.guard is None and it.pdst is None and not it.psrcs and it.op not in (Op.LD, Op.ST, Op.ATOM_ADD, Op.SHFL)
            and not any(isinstance(s, VReg) for s in it.srcs))


def _save(name: str, predicate: bool, address: int, tmp: str, line: int) -> tuple[list, list]:
    """``(store items, load items)`` of one value or predicate at ``address``."""
    if not predicate:
        return [_st(address, name, line)], [LInstr(Op.LD, name, (THREAD_WORD,), offset=address, space="shared",
                                                   line=line)]
    store = [LInstr(Op.SELP, tmp, (Imm(1), Imm(0)), psrcs=(VPred(name),), line=line), _st(address, tmp, line)]
    load = [LInstr(Op.LD, tmp, (THREAD_WORD,), offset=address, space="shared", line=line),
            LInstr(Op.SETP, name, (VReg(tmp), Imm(0)), cmp="ne", line=line)]
    return store, load


def _store_site(call: BasicBlock, number: str, address: int) -> None:
    """The call's setting of its return site's number made a store of it: one
    instruction (the number the store's immediate) where a move and a store would be two."""
    for k, it in enumerate(call.items):
        if isinstance(it, LInstr) and it.dst == number and it.op is Op.MOV:
            call.items[k] = LInstr(Op.ST, None, (THREAD_WORD, it.srcs[0]), offset=address, space="shared", line=it.line)


def _st(address: int, name: str, line: int) -> LInstr:
    return LInstr(Op.ST, None, (THREAD_WORD, VReg(name)), offset=address, space="shared", line=line)


def _site_numbers(bbs: list[BasicBlock]) -> dict[str, str]:
    """``routine entry label -> its return-site register`` (``SITE_NUMBER``), for each
    routine whose dispatch reads one (two sites or more)."""
    out = {}
    for bb in bbs:
        for it in bb.items:
            if isinstance(it, LInstr) and it.op is Op.MOV and (it.dst or "").startswith(SITE_NUMBER):
                out[bb.term.target] = it.dst
    return {entry: number for entry, number in out.items() if _first_read(bbs, entry, number) is not None}


def _first_read(bbs: list[BasicBlock], entry: str, name: str):
    """``(basic block, position)`` of the first instruction reading ``name`` from the
    routine's ``entry`` on (its dispatch's first compare), else None."""
    start = next(k for k, bb in enumerate(bbs) if bb.label == entry)
    for bb in bbs[start:]:
        for k, it in enumerate(bb.items):
            if isinstance(it, LInstr) and any(isinstance(s, VReg) and s.name == name for s in it.srcs):
                return bb, k
    return None


def basic_graph(bbs: list[BasicBlock]) -> list[MBlock]:
    """One ``MBlock`` per basic block (same index), wired as the basic blocks jump: the
    shape ``call_liveness`` reads (a call's ``returns_to``)."""
    label_of = {bb.label: k for k, bb in enumerate(bbs) if bb.label}
    out = []
    for k, bb in enumerate(bbs):
        t, nxt = bb.term, (k + 1 if k + 1 < len(bbs) else None)
        back = None
        if t is None or (t.kind != "bra" and t.guard is not None):
            term = Terminator(TermKind.EXIT) if nxt is None else Terminator(TermKind.JUMP, target=nxt)
        elif t.kind != "bra":
            term = Terminator(TermKind.EXIT)
        elif t.guard is None or nxt is None:
            term = Terminator(TermKind.JUMP, target=label_of[t.target])
            back = label_of.get(t.returns_to)
        else:
            term = Terminator(TermKind.BRANCH, target=label_of[t.target], fallthrough=nxt)
        out.append(MBlock(k, [it for it in bb.items if isinstance(it, LInstr)], term, bb.label, returns_to=back))
    return out


DATA, PREDICATES = 0, 1


def use_kill(graph: list[MBlock], bbs: list[BasicBlock], kind: int) -> tuple[dict, dict]:
    """Each basic block's names read before written (its branch's guard included) and
    written unguarded, of one ``kind`` (``DATA`` or ``PREDICATES``)."""
    use, kill = {}, {}
    for b, bb in zip(graph, bbs):
        guard = {bb.term.guard.name} if bb.term is not None and bb.term.guard is not None else set()
        live, killed = (set(), set(guard)), (set(), set())
        for it in reversed([it for it in bb.items if isinstance(it, LInstr)]):
            if it.guard is None:
                killed[0].update(_defs(it)[0])
                killed[1].update(_defs(it)[1])
            live_before(it, *live)
        use[b.index], kill[b.index] = live[kind], killed[kind]
    return use, kill


def _defs(it: LInstr) -> tuple[set, set]:
    """``(data, predicates)`` an instruction writes."""
    if it.writes_pred:
        return set(), {it.dst} | ({it.pdst} if it.pdst else set())
    return ({it.dst} if it.dst is not None else set()), ({it.pdst} if it.pdst else set())


def budgets(translate, choices: tuple | None = None) -> tuple:
    """The budgets to lower a translation with: ``choices`` (None: ``BUDGETS``) where its
    routines' sharing saves values across calls (its return sites are ``SITE_NUMBER``
    registers), else ``(None,)``: nothing saved."""
    bbs, _ = translate()
    spills = any(isinstance(it, LInstr) and (it.dst or "").startswith(SITE_NUMBER) for bb in bbs for it in bb.items)
    return (BUDGETS if choices is None else choices) if spills else (None,)
