"""Control-flow facts about machine blocks: successors and immediate post-dominators.

The IPDOM of a divergent branch is where its two sides meet again: the reconvergence
block the SIMT stack (and the circuit) waits for. ``None`` means the paths only meet
at the end of the kernel.
"""

from __future__ import annotations

from qwengpu_mlx.core.isa import Block, TermKind

EXIT_NODE = -1


def successors(block: Block) -> list[int]:
    t = block.term
    if t.kind is TermKind.EXIT:
        return []
    if t.kind is TermKind.BRANCH:
        return list(dict.fromkeys([t.target, t.fallthrough]))
    return [t.target]


def immediate_post_dominators(blocks: list[Block]) -> dict[int, int | None]:
    """IPDOM of every block (by index), with a virtual exit after every ``exit``."""
    nodes = [b.index for b in blocks]
    succ = {b.index: (successors(b) or [EXIT_NODE]) for b in blocks}
    full = set(nodes) | {EXIT_NODE}
    pdom: dict[int, set[int]] = {n: set(full) for n in nodes}
    pdom[EXIT_NODE] = {EXIT_NODE}
    changed = True
    while changed:
        changed = False
        for n in reversed(nodes):
            new = set.intersection(*(pdom[s] for s in succ[n])) | {n}
            if new != pdom[n]:
                pdom[n], changed = new, True
    ipdom: dict[int, int | None] = {}
    for n in nodes:
        strict = pdom[n] - {n}
        if strict == full - {n} and EXIT_NODE not in _reaches_exit(n, succ):
            ipdom[n] = None  # never reaches the exit (an endless loop): no reconvergence
            continue
        # the strict post-dominator whose own set is exactly the rest
        best = None
        for p in strict:
            if pdom[p] == strict:
                best = p
                break
        ipdom[n] = None if best in (None, EXIT_NODE) else best
    return ipdom


def _reaches_exit(start: int, succ: dict[int, list[int]]) -> set[int]:
    seen, stack = set(), [start]
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        if n != EXIT_NODE:
            stack.extend(succ[n])
    return seen


def predecessors(blocks: list[Block]) -> dict[int, list[int]]:
    preds: dict[int, list[int]] = {b.index: [] for b in blocks}
    for b in blocks:
        for s in successors(b):
            preds[s].append(b.index)
    return preds
