"""Register moves of shared float routines' calls coalesced away, where the kernel only
fits with what is live across them saved (``float_spill``).

A call copies its operands into the routine's argument registers and its result into
the instruction's destination: two to four moves per call, a machine block or more each
call, which a kernel of a dozen calls cannot spare in a 128-block ROM. Where the two
names of a move are never live at once, they can be one register and the move goes.
The register allocator colours greedily and does not do that, so here, before blocks
are cut, a move's two names become one where they do not interfere (liveness reads a
call as the routine it runs: ``call_liveness``) and the merged program's colouring
still fits, and the move is deleted. Only the sharing level that saves values
across calls runs it: kernels that fit without it keep their blocks exactly.
"""

from __future__ import annotations

import copy
from dataclasses import replace

from qwengpu_mlx.core.isa import Op

from qwengpu_mlx.host import call_liveness
from qwengpu_mlx.host.float_spill import DATA, basic_graph, use_kill
from qwengpu_mlx.host.ir import BasicBlock, LInstr, VReg
from qwengpu_mlx.host.regalloc import live_before


def coalesce_moves(bbs: list[BasicBlock], usable: int) -> int:
    """Merge the names of moves that do not interfere and delete those moves, in place;
    returns how many went. A merge is kept only where the allocator's greedy colouring
    (``regalloc``: values live across calls first, then in order of appearance) of the
    merged program still needs at most ``usable`` registers: merging a routine's argument
    or result with a kernel's value changes what liveness reads the routine's calls to
    read and write, so each merge's interference is computed again, not united."""
    rejected: set = set()
    gone = 0
    graph, _ = _colouring(bbs)
    while True:
        pair = next(((it.dst, it.srcs[0].name) for it in _moves(bbs) if (it.dst, it.srcs[0].name) not in rejected
                     and it.srcs[0].name not in graph.get(it.dst, ())), None)
        if pair is None:
            return gone
        trial = _copied(bbs)
        _rename(trial, lambda n: pair[0] if n == pair[1] else n)
        merged, needed = _colouring(trial)
        if needed > usable or _empty_continuation(trial):
            rejected.add(pair)
            continue
        bbs[:] = trial
        graph = merged
        gone += 1


def _copied(bbs: list[BasicBlock]) -> list[BasicBlock]:
    """The blocks with their own item lists and instruction objects: ``_rename`` rewrites
    an instruction's names in place, and nothing else of a trial is changed (a deep copy
    of every block was most of a refusal's minutes)."""
    return [replace(bb, items=[copy.copy(it) if isinstance(it, LInstr) else it for it in bb.items]) for bb in bbs]


def _empty_continuation(bbs: list[BasicBlock]) -> bool:
    """Whether a call's continuation lost its last instruction: an empty block is threaded
    into what follows it, which can then merge into the routine's return (``blocks``) and
    leave the call no block to return to."""
    backs = {bb.term.returns_to for bb in bbs if bb.term is not None and bb.term.returns_to is not None}
    return any(bb.label in backs and not any(isinstance(it, LInstr) for it in bb.items) for bb in bbs)


def _moves(bbs: list[BasicBlock]) -> list[LInstr]:
    return [it for bb in bbs for it in bb.items if isinstance(it, LInstr) and it.op is Op.MOV and it.guard is None
            and isinstance(it.srcs[0], VReg)]


def _colouring(bbs: list[BasicBlock]) -> tuple[dict[str, set], int]:
    """``(interference graph, registers a greedy colouring in regalloc's order takes)``."""
    graph, first, across = _interference(bbs)
    order = sorted(graph, key=lambda n: (n not in across, first[n]))
    colour: dict[str, int] = {}
    for v in order:
        taken = {colour[n] for n in graph[v] if n in colour}
        colour[v] = next(c for c in range(len(taken) + 1) if c not in taken)
    return graph, 1 + max(colour.values(), default=-1)


def _interference(bbs: list[BasicBlock]) -> tuple[dict[str, set], dict[str, int], set[str]]:
    """``(graph, each name's place of first appearance, names live across calls)``: data
    names that are live at once (a name written interferes with every name live after
    the write), over the basic blocks with calls read as their routines; ``regalloc``
    colours those live across calls first, then in order of appearance."""
    mbs = basic_graph(bbs)
    use, kill = use_kill(mbs, bbs, DATA)
    out = call_liveness.live_out(mbs, use, kill)
    graph: dict[str, set] = {}
    seen: dict[str, None] = {}
    for it in (it for b in mbs for it in b.instrs):
        defs = [it.dst] if it.dst is not None and not it.writes_pred else []
        seen.update(dict.fromkeys(sorted(defs) + sorted(s.name for s in it.srcs if isinstance(s, VReg))))
    for b, bb in zip(mbs, bbs):
        live, preds = set(out[b.index]), set()
        for it in reversed([it for it in bb.items if isinstance(it, LInstr)]):
            if it.dst is not None and not it.writes_pred:
                graph.setdefault(it.dst, set())
                for n in live - {it.dst}:
                    graph[it.dst].add(n)
                    graph.setdefault(n, set()).add(it.dst)
            live_before(it, live, preds)
    first = {n: k for k, n in enumerate(n for n in seen if n in graph)}
    return graph, first, call_liveness.across_names(mbs, out) & set(graph)


def _rename(bbs: list[BasicBlock], root) -> int:
    """Every data name replaced by its merged name; the moves left copying a name to
    itself deleted. Returns how many were."""
    gone = 0
    for bb in bbs:
        kept = []
        for it in bb.items:
            if isinstance(it, LInstr):
                it.srcs = tuple(VReg(root(s.name)) if isinstance(s, VReg) else s for s in it.srcs)
                if it.dst is not None and not it.writes_pred:
                    it.dst = root(it.dst)
                if it.op is Op.MOV and it.guard is None and it.srcs[0] == VReg(it.dst):
                    gone += 1
                    continue
            kept.append(it)
        bb.items = kept
    return gone
