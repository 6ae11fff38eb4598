"""Stage 3 of the lowering: basic blocks -> allocated machine blocks.

Basic blocks are cut into machine blocks of ``slots_per_block`` instructions
(:func:`form_blocks`, barriers as block terminators), dead code goes, the blocks are
cut again where the fewest launch tokens come back (``packing``), empty jumps are
threaded, blocks merged, reconvergence points (IPDOM) attached,
and registers allocated (``regalloc``): :func:`machine_blocks` runs them in order,
:func:`fewest_token_blocks` first guards short branches (``ifconvert``).
"""

from __future__ import annotations

from dataclasses import replace

from qwengpu_mlx.core.errors import ResourceError, RomError, UnsupportedError
from qwengpu_mlx.core.isa import Block, Op, Terminator, TermKind
from qwengpu_mlx.core.machine import MachineConfig
from qwengpu_mlx.core.vocab import RECORD_TOKENS

from qwengpu_mlx.host import cfg, ifconvert, packing, regalloc
from qwengpu_mlx.host.ir import BasicBlock, LBarrier, LInstr, MBlock
from qwengpu_mlx.host.ir import successors as _succ


def block_fits(instrs: list, slots: int) -> bool:
    """Whether instructions can share one machine block.

    At most ``slots`` of them, and no memory read (``ld``, ``atom``) after a memory
    write (``st``, ``atom``): in the model a block's loads see memory as it was when
    the block started, so the two must be in different blocks (steps).
    """
    if len(instrs) > slots:
        return False
    wrote = False
    for it in instrs:
        if it.op in (Op.LD, Op.ATOM_ADD) and wrote:
            return False
        if it.op in (Op.ST, Op.ATOM_ADD):
            wrote = True
    return True


def greedy_cut(run: list[LInstr], slots: int) -> list[list[LInstr]]:
    """Cut a run of instructions wherever the next one no longer fits."""
    segs: list[list[LInstr]] = [[]]
    for it in run:
        if segs[-1] and not block_fits(segs[-1] + [it], slots):
            segs.append([])
        segs[-1].append(it)
    return segs


def form_blocks(bbs: list[BasicBlock], slots: int, cut=None) -> list[MBlock]:
    """Cut basic blocks into machine blocks and wire their terminators.

    ``cut(run)``: how a run of instructions between barriers becomes blocks (default
    ``greedy_cut``; ``packing.token_cutter`` chooses the cut with fewest launch tokens).
    """
    cut = cut or (lambda run: greedy_cut(run, slots))
    label_of: dict[str, int] = {}
    pieces: list[list[MBlock]] = []
    n = 0
    for bb in bbs:
        group: list[MBlock] = []
        runs: list[list[LInstr]] = [[]]
        for it in bb.items:
            runs.append([]) if isinstance(it, LBarrier) else runs[-1].append(it)
        for k, run in enumerate(runs):
            segs = cut(run) if run else [[]]
            for s, seg in enumerate(segs):
                last = s == len(segs) - 1
                kind = TermKind.BARRIER if last and k < len(runs) - 1 else TermKind.JUMP
                group.append(MBlock(n, seg, Terminator(kind, target=n + 1)))
                n += 1
        group[0].label = bb.label
        if bb.label:
            label_of[bb.label] = group[0].index
        pieces.append(group)
    flat = [b for g in pieces for b in g]
    _wire_terminators(bbs, pieces, label_of, flat)
    return _simplify(flat, slots, reconverge=False)


def _wire_terminators(bbs: list[BasicBlock], pieces: list[list[MBlock]], label_of: dict[str, int],
                      flat: list[MBlock]) -> None:
    """Each basic block's last machine block ends as its ``bra``/``exit`` says, in place;
    a guarded exit, or a guarded branch with nothing after it, falls through to one
    empty exit block appended to ``flat``."""
    n = len(flat)
    exit_block = None
    for bb, group in zip(bbs, pieces):
        last = group[-1]
        t = bb.term
        nxt = last.index + 1
        if t is None:
            if nxt >= n:
                last.term = Terminator(TermKind.EXIT)
            continue
        if t.kind == "bra":
            if t.target not in label_of:
                raise UnsupportedError(f"PTX line {t.line}: branch to unknown label {t.target}")
            tgt = label_of[t.target]
            if t.guard is None:
                last.term = Terminator(TermKind.JUMP, target=tgt)
                if t.returns_to is not None:  # a routine's call: where its return continues
                    last.returns_to = label_of[t.returns_to]
            else:
                if nxt >= n:
                    if exit_block is None:
                        exit_block = MBlock(len(flat), [], Terminator(TermKind.EXIT))
                        flat.append(exit_block)
                    nxt = exit_block.index
                last.term = Terminator(TermKind.BRANCH, target=tgt, fallthrough=nxt)
                last.term_pred = t.guard
        else:  # exit
            if t.guard is None:
                last.term = Terminator(TermKind.EXIT)
            else:
                if exit_block is None:
                    exit_block = MBlock(len(flat), [], Terminator(TermKind.EXIT))
                    flat.append(exit_block)
                if nxt >= n:
                    nxt = exit_block.index
                last.term = Terminator(TermKind.BRANCH, target=exit_block.index, fallthrough=nxt)
                last.term_pred = t.guard


def _recut(bbs: list[BasicBlock], mblocks: list[MBlock], machine: MachineConfig) -> list[MBlock]:
    """The blocks cut again without the dead code, where the fewest tokens go back down."""
    kept = {id(it) for b in mblocks for it in b.instrs}
    for bb in bbs:
        bb.items = [it for it in bb.items if isinstance(it, LBarrier) or id(it) in kept]
    slots = machine.slots_per_block
    cutter = packing.token_cutter(mblocks, slots, machine.lanes, RECORD_TOKENS,
                                  lambda instrs: block_fits(instrs, slots))
    return form_blocks(bbs, slots, cut=cutter)


def _retarget(t: Terminator, f) -> Terminator:
    return replace(t, target=f(t.target) if t.target is not None else None,
                   fallthrough=f(t.fallthrough) if t.fallthrough is not None else None)


def _simplify(blocks: list[MBlock], slots: int, *, reconverge: bool = True,
              rom_blocks: int | None = None, kernel: str = "") -> list[MBlock]:
    """Thread empty jumps, merge straight-line pairs, drop unreachable blocks, renumber.

    With ``reconverge``, attach each branch's reconvergence block (IPDOM); only the
    final pass needs it, and the IPDOM sets grow with the square of the blocks, so a
    program larger than ``rom_blocks`` is refused before they are built.
    """
    by = _thread_and_merge({b.index: b for b in blocks}, blocks[0].index, slots)
    order = sorted(by)
    renum = {old: new for new, old in enumerate(order)}
    out = []
    for old in order:
        b = by[old]
        back = None if b.returns_to is None else renum[b.returns_to]
        out.append(MBlock(renum[old], b.instrs, _retarget(b.term, lambda i: renum[i]), b.label, b.term_pred, back))
    if rom_blocks is not None:
        check_rom(out, rom_blocks, slots, kernel)
    if reconverge:
        _attach_reconvergence(out)
    return out


def _thread_and_merge(by: dict[int, MBlock], entry: int, slots: int) -> dict[int, MBlock]:
    """Empty jumps threaded, two-sided branches to one block made jumps, unreachable
    blocks dropped, and a jump to a block with no other predecessor merged with it
    where the two fit one block; until nothing changes. A block a shared routine's call
    returns to (``returns_to``) is never merged away, whatever jumps to it: the call would
    return to no block (a routine called once jumps back to it as a straight line)."""

    def resolve(i: int) -> int:
        seen = set()
        while by[i].instrs == [] and by[i].term.kind is TermKind.JUMP and i != entry and i not in seen \
                and by[i].returns_to is None:
            seen.add(i)
            i = by[i].term.target
        return i

    changed = True
    while changed:
        changed = False
        for b in list(by.values()):
            nt = _retarget(b.term, resolve)
            if nt != b.term:
                b.term, changed = nt, True
            if b.returns_to is not None and resolve(b.returns_to) != b.returns_to:
                b.returns_to, changed = resolve(b.returns_to), True
            # a branch whose two sides are the same block is a jump
            if b.term.kind is TermKind.BRANCH and b.term.target == b.term.fallthrough:
                b.term, b.term_pred, changed = Terminator(TermKind.JUMP, target=b.term.target), None, True
        reach = _reachable(by, entry)
        by = {i: b for i, b in by.items() if i in reach}
        preds: dict[int, int] = {i: 0 for i in by}
        for b in by.values():
            for s in _succ(b.term):
                preds[s] += 1
        returned_to = {b.returns_to for b in by.values() if b.returns_to is not None}
        for b in list(by.values()):
            if b.index not in by or b.term.kind is not TermKind.JUMP:
                continue
            s = b.term.target
            if s == b.index or s == entry or preds.get(s) != 1 or s in returned_to:
                continue
            nb = by[s]
            if block_fits(b.instrs + nb.instrs, slots):
                b.instrs = b.instrs + nb.instrs
                b.term, b.term_pred, b.returns_to = nb.term, nb.term_pred, nb.returns_to
                del by[s]
                changed = True
                break
    return by


def _attach_reconvergence(out: list[MBlock]) -> None:
    """Each branch's reconvergence block (its IPDOM), in place; none where the sides
    only meet to exit. A shared routine's call counts as a jump to where its return
    continues (``float_routines``: lanes never wait for each other inside a routine)."""
    as_isa = [Block(b.index, [], b.term if b.returns_to is None else Terminator(TermKind.JUMP, target=b.returns_to))
              for b in out]
    ipdom = cfg.immediate_post_dominators(as_isa)
    for b in out:
        if b.term.kind is TermKind.BRANCH:
            r = ipdom[b.index]
            if r is not None and not out[r].instrs and out[r].term.kind is TermKind.EXIT:
                r = None  # the sides only meet to exit: lanes leave independently
            b.term = replace(b.term, reconv=r)


def check_rom(mblocks: list[MBlock], rom_blocks: int, slots: int, kernel: str) -> None:
    """The ROM limit, checked on the final blocks before any per-block analysis."""
    if len(mblocks) > rom_blocks:
        ninstr = sum(len(b.instrs) for b in mblocks)
        raise RomError(
            f"kernel `{kernel}` needs {len(mblocks)} machine blocks ({ninstr} instructions) "
            f"but the program ROM holds {rom_blocks} blocks of {slots}")


def _reachable(by: dict[int, MBlock], entry: int) -> set[int]:
    seen, stack = set(), [entry]
    while stack:
        i = stack.pop()
        if i in seen:
            continue
        seen.add(i)
        stack.extend(_succ(by[i].term))
    return seen


def fewest_token_blocks(bbs: list[BasicBlock], machine: MachineConfig, kname: str, grid_dim: int,
                        float_names: frozenset[str] = frozenset()):
    """Short branches guarded and blocks cut for fewest tokens; the branches kept where
    the guards would need more registers than the machine has."""
    try:
        return machine_blocks(ifconvert.if_convert(bbs, zero_rows=grid_dim == 1), machine, kname,
                              float_names=float_names)
    except ResourceError:
        return machine_blocks(bbs, machine, kname, float_names=float_names)


def machine_blocks(bbs: list[BasicBlock], machine: MachineConfig, kname: str, *, few_tokens: bool = True,
                   float_names: frozenset[str] = frozenset()):
    """Basic blocks -> allocated machine blocks: cut, dead code out, cut again, merged
    (``float_names``: ``regalloc.allocate``'s)."""
    bbs = [replace(b, items=list(b.items)) for b in bbs]
    mblocks = form_blocks(bbs, machine.slots_per_block)
    regalloc.eliminate_dead_code(mblocks)
    if few_tokens:
        mblocks = _recut(bbs, mblocks, machine)
    mblocks = _simplify(mblocks, machine.slots_per_block, rom_blocks=machine.rom_blocks, kernel=kname)
    return regalloc.allocate(mblocks, machine, kname, float_names)


SIZE_FACTOR = 16
"""How far past the ROM a translated kernel may be before simplification: dead code
and block merging shrink programs a little, never sixteen-fold."""


def check_size(bbs: list[BasicBlock], machine: MachineConfig, kernel: str) -> None:
    """Refuse a kernel far beyond the ROM before the quadratic passes (merging, liveness, IPDOM)."""
    nins = sum(len(bb.items) for bb in bbs)
    cap = SIZE_FACTOR * machine.rom_blocks
    if len(bbs) > cap or nins > cap * machine.slots_per_block:
        raise ResourceError(
            f"kernel `{kernel}` has {len(bbs)} basic blocks and {nins} instructions: far more than the "
            f"program ROM holds ({machine.rom_blocks} blocks of {machine.slots_per_block})")
