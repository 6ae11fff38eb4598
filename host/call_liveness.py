"""Liveness across the calls of shared routines (``float_routines``): each call read as
the routine it runs, not as a jump into code every call site shares.

A shared routine returns through a dispatch that branches to every call site's
continuation, so plain liveness over the jumps finds every value live after any call
live in the routine (right: the routine must keep them all) and then, through the
jump, live before every other call too, back to where the kernel begins: a mean that
a second loop uses would hold a register through the first loop as well, and the two
loops' values would never share one. Here a call block (``MBlock.returns_to``) has its
own continuation as its one successor: what it leaves live is what the continuation
reads, less the routine's result (the routine writes it), plus the routine's
parameters (what the routine reads before writing: its arguments and return-site
number). Inside the routine the dispatch's own successors stand, so its registers
stay clear of every value live across any of its calls.
"""

from __future__ import annotations

from qwengpu_mlx.core.encoding import block_live_out
from qwengpu_mlx.core.isa import Special

from qwengpu_mlx.host.ir import MBlock, successors


def live_out(blocks: list[MBlock], use: dict, kill: dict) -> dict[int, set]:
    """Live-out set of every block, from each block's ``use`` (read before written, the
    terminator's reads included) and ``kill`` (written unguarded)."""
    if not any(b.returns_to is not None for b in blocks):
        return block_live_out(blocks, use, kill)
    return _solve(blocks, use, kill)[0]


def across_calls(blocks: list[MBlock], use: dict, kill: dict) -> dict[int, set]:
    """``call block index -> the values live across that call``: what its continuation
    reads that the routine does not write (its result), the names a routine would have
    to keep through itself for that site (``float_spill`` saves them to memory instead)."""
    _, live_in, _, results = _solve(blocks, use, kill)
    return {b.index: live_in[b.returns_to] - results[b.term.target] for b in blocks if b.returns_to is not None}


def _solve(blocks: list[MBlock], use: dict, kill: dict):
    """``(live out, live in, routine parameters, routine results)``, the last two by entry block."""
    calls = {b.index: b for b in blocks if b.returns_to is not None}
    by = {b.index: b for b in blocks}
    continuations = {b.returns_to for b in calls.values()}
    params, results = {}, {}
    for entry in {b.term.target for b in calls.values()}:
        body = _routine_blocks(by, entry, continuations)
        params[entry] = _live_in_alone(by, body, entry, use, kill)
        written = set().union(*(kill[i] for i in body))
        results[entry] = written & set().union(*(use[b.returns_to] for b in calls.values() if b.term.target == entry))
    succ = {b.index: successors(b.term) for b in blocks}
    live_in = {b.index: set() for b in blocks}
    out = {b.index: set() for b in blocks}
    changed = True
    while changed:
        changed = False
        for b in reversed(blocks):
            i = b.index
            if i in calls:
                entry = b.term.target
                o = params[entry] | (live_in[b.returns_to] - results[entry])
            else:
                o = set().union(*(live_in[s] for s in succ[i]))
            inn = use[i] | (o - kill[i])
            if o != out[i] or inn != live_in[i]:
                out[i], live_in[i], changed = o, inn, True
    return out, live_in, params, results


def _routine_blocks(by: dict[int, MBlock], entry: int, continuations: set[int]) -> set[int]:
    """The routine's blocks: those reached from its entry before any call's continuation."""
    seen, stack = set(), [entry]
    while stack:
        i = stack.pop()
        if i in seen or i in continuations:
            continue
        seen.add(i)
        stack.extend(successors(by[i].term))
    return seen


def _live_in_alone(by: dict[int, MBlock], body: set[int], entry: int, use: dict, kill: dict) -> set:
    """What the routine reads before writing (its parameters): liveness within its own
    blocks, the dispatch's branches out of them read as its end."""
    live_in = {i: set() for i in body}
    changed = True
    while changed:
        changed = False
        for i in sorted(body, reverse=True):
            o = set().union(*(live_in[s] for s in successors(by[i].term) if s in body))
            inn = use[i] | (o - kill[i])
            if inn != live_in[i]:
                live_in[i], changed = inn, True
    return live_in[entry]


def across_calls_first(blocks: list[MBlock], live_out: dict[int, set], order: list[str]) -> list[str]:
    """The colouring order with the values live across a call of a shared routine first.

    A routine's registers must differ from every value live across any of its calls, so
    those values should take as few registers as they can: values of different call sites
    that are never live together (a first loop's counter, a second loop's mean) share one
    when they are coloured before the code around them takes the low registers."""
    across = across_names(blocks, live_out)
    return [v for v in order if v in across] + [v for v in order if v not in across]


def across_names(blocks: list[MBlock], live_out: dict[int, set]) -> set[str]:
    """The names live across some call of a shared routine that no routine mentions."""
    calls = [b for b in blocks if b.returns_to is not None]
    return set().union(*(live_out[b.index] for b in calls)) - routine_names(blocks)


def routine_names(blocks: list[MBlock]) -> set[str]:
    """Every name the shared routines' blocks mention."""
    calls = [b for b in blocks if b.returns_to is not None]
    by = {b.index: b for b in blocks}
    continuations = {b.returns_to for b in calls}
    inside = set().union(*(_routine_blocks(by, entry, continuations) for entry in {b.term.target for b in calls}))
    return {name for i in inside for name in _names(by[i])}


def _names(b: MBlock) -> set[str]:
    """Every register and predicate name a block's instructions and branch mention."""
    out = {b.term_pred.name} if b.term_pred is not None else set()
    for it in b.instrs:
        out |= {s.name for s in it.srcs if hasattr(s, "name") and not isinstance(s, Special)}
        out |= {p.name for p in it.psrcs} | {n for n in (it.dst, it.pdst) if n is not None}
        if it.guard is not None:
            out.add(it.guard.name)
    return out
