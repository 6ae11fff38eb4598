"""Register allocation: virtual registers -> the machine's registers and predicates.

Each lane's register file behaves like a scalar thread's (writes are masked to the
active lanes), so ordinary CFG liveness is exact for SIMT code. A guarded write
keeps the old value on lanes where the guard fails, so it counts as a use too.
Colouring is greedy in order of definition; when it fails we report the kernel,
the number of values live at once and the PTX line where that happens.
"""

from __future__ import annotations

from dataclasses import replace

from qwengpu_mlx.core.errors import ResourceError
from qwengpu_mlx.core.isa import Block, Imm, Instr, Op, Pred, Reg, Special
from qwengpu_mlx.core.machine import LARGE_MACHINE, MachineConfig

from qwengpu_mlx.host import call_liveness
from qwengpu_mlx.host.ir import LInstr, MBlock, VPred, VReg
from qwengpu_mlx.host.srcloc import where

PURE_OPS = {o for o in Op} - {Op.ST, Op.ATOM_ADD}


def float_registers(reg_decls: dict[str, tuple[str, int]]) -> frozenset[str]:
    """The register names a kernel declares ``.f32`` (``%f<3>``: ``%f0``, ``%f1``, ``%f2``; a
    plain ``.reg .f32 %x``: ``%x``), from the parser's ``reg_decls``."""
    names = set()
    for prefix, (rtype, count) in reg_decls.items():
        if rtype == "f32":
            names.add(prefix)
            names.update(f"{prefix}{i}" for i in range(count))
    return frozenset(names)


def _data_uses(it: LInstr) -> set[str]:
    u = {s.name for s in it.srcs if isinstance(s, VReg)}
    if it.guard is not None and it.dst is not None and not it.writes_pred:
        u.add(it.dst)
    return u


def _data_defs(it: LInstr) -> set[str]:
    return {it.dst} if it.dst is not None and not it.writes_pred else set()


def _pred_uses(it: LInstr) -> set[str]:
    u = {p.name for p in it.psrcs}
    if it.guard is not None:
        u.add(it.guard.name)
        if it.writes_pred and it.dst is not None:
            u.add(it.dst)
        if it.pdst is not None:
            u.add(it.pdst)
    return u


def _pred_defs(it: LInstr) -> set[str]:
    d = set()
    if it.writes_pred and it.dst is not None:
        d.add(it.dst)
    if it.pdst is not None:
        d.add(it.pdst)
    return d


def live_before(it: LInstr, data: set, preds: set) -> None:
    """Turn the data and predicate names live after ``it`` into those live before it, in
    place (a guarded write keeps the old value: it kills nothing)."""
    if it.guard is None:
        data -= _data_defs(it)
        preds -= _pred_defs(it)
    data |= _data_uses(it)
    preds |= _pred_uses(it)


def _liveness(blocks: list[MBlock], uses, defs, term_uses) -> dict[int, set[str]]:
    """Live-out set of every block: each block's use (read before written, the terminator's
    reads included) and kill (written unguarded), solved by ``call_liveness.live_out``."""
    use, kill = {}, {}
    for b in blocks:
        live, killed = set(term_uses(b)), set()
        for it in reversed(b.instrs):
            if it.guard is None:  # a guarded write keeps the old value: it kills nothing
                live -= defs(it)
                killed |= defs(it)
            live |= uses(it)
        use[b.index], kill[b.index] = live, killed
    return call_liveness.live_out(blocks, use, kill)  # a shared routine's call as the routine it runs


def _term_pred(b: MBlock) -> set[str]:
    return {b.term_pred.name} if b.term_pred is not None else set()


def eliminate_dead_code(blocks: list[MBlock]) -> None:
    """Drop pure instructions whose results nobody reads (in place)."""
    while True:
        dlive = _liveness(blocks, _data_uses, _data_defs, lambda b: set())
        plive = _liveness(blocks, _pred_uses, _pred_defs, _term_pred)
        removed = False
        for b in blocks:
            dl, pl = set(dlive[b.index]), set(plive[b.index]) | _term_pred(b)
            keep = []
            for it in reversed(b.instrs):
                dd, pd = _data_defs(it), _pred_defs(it)
                dead = (dd or pd) and not (dd & dl) and not (pd & pl)
                if dead and it.op in PURE_OPS:
                    removed = True
                    continue
                if it.op is Op.ATOM_ADD and it.dst is not None and it.dst not in dl:
                    it.dst = None
                live_before(it, dl, pl)
                keep.append(it)
            b.instrs = keep[::-1]
        if not removed:
            return


def _interference(blocks, uses, defs, term_uses):
    live_out = _liveness(blocks, uses, defs, term_uses)
    graph: dict[str, set[str]] = {}
    order: list[str] = []
    worst = (0, "PTX line 0")  # (live count, where: the .cu and PTX lines)
    for b in blocks:
        live = set(live_out[b.index]) | term_uses(b)
        for it in reversed(b.instrs):
            ds = defs(it)
            for d in ds:
                graph.setdefault(d, set())
                for other in live | ds:
                    if other != d:
                        graph[d].add(other)
                        graph.setdefault(other, set()).add(d)
            if it.guard is None:
                live -= ds
            live |= uses(it)
            for u in uses(it):
                graph.setdefault(u, set())
            pressure = len(live | ds)
            if pressure > worst[0]:
                worst = (pressure, where(it.line, it.src))
    for b in blocks:
        for it in b.instrs:
            for d in sorted(defs(it)) + sorted(uses(it)):
                if d not in order:
                    order.append(d)
    for b in blocks:
        for t in term_uses(b):
            graph.setdefault(t, set())
            if t not in order:
                order.append(t)
    return graph, call_liveness.across_calls_first(blocks, live_out, order), worst


def _colour(graph, order, first: int, count: int) -> dict[str, int] | None:
    colour: dict[str, int] = {}
    for v in order:
        taken = {colour[n] for n in graph.get(v, ()) if n in colour}
        c = next((c for c in range(first, first + count) if c not in taken), None)
        if c is None:
            return None
        colour[v] = c
    return colour


def allocate(blocks: list[MBlock], machine: MachineConfig, kernel: str, float_names: frozenset[str] = frozenset()):
    """Assign registers; returns (isa blocks, registers used, predicates used). An instruction
    writing one of ``float_names`` (the PTX's ``.f32`` registers) is marked ``float_dst``: what
    the machine holds there is a float's bits, which a display shows as the float."""
    eliminate_dead_code(blocks)
    dgraph, dorder, dworst = _interference(blocks, _data_uses, _data_defs, lambda b: set())
    rmap = _colour(dgraph, dorder, 1, machine.usable_regs)
    if rmap is None:
        raise ResourceError(
            f"kernel `{kernel}` needs more than {machine.usable_regs} registers per lane "
            f"({dworst[0]} values live at once near {dworst[1]}); "
            f"the machine has {machine.regs} register rows, row 0 reads zero"
            + ("" if LARGE_MACHINE.usable_regs > machine.usable_regs else
               f" (--machine large has no more: {LARGE_MACHINE.usable_regs}); keep fewer values live at once, "
               f"e.g. read them from memory where they are used"))
    pgraph, porder, pworst = _interference(blocks, _pred_uses, _pred_defs, _term_pred)
    pmap = _colour(pgraph, porder, 0, machine.preds)
    if pmap is None:
        raise ResourceError(
            f"kernel `{kernel}` needs more than {machine.preds} predicate registers per lane "
            f"({pworst[0]} live at once near {pworst[1]})")

    def opnd(s):
        if isinstance(s, VReg):
            return Reg(rmap[s.name])
        if isinstance(s, Imm) and s.value == 0:
            return Reg(0)  # zero is the zero register: the ROM's one immediate stays free
        assert isinstance(s, (Imm, Special)), s
        return s

    def pred(p: VPred | None) -> Pred | None:
        return None if p is None else Pred(pmap[p.name], p.negated)

    out = []
    for b in blocks:
        instrs = []
        for it in b.instrs:
            dst = None
            if it.dst is not None:
                dst = pmap[it.dst] if it.writes_pred else rmap[it.dst]
            srcs = tuple(opnd(s) if not (it.op is Op.SHFL and k >= 2) else s for k, s in enumerate(it.srcs))
            instrs.append(Instr(op=it.op, dst=dst, srcs=srcs,
                                psrcs=tuple(pred(p) for p in it.psrcs), guard=pred(it.guard),
                                signed=it.signed, cmp=it.cmp, mode=it.mode, offset=it.offset,
                                space=it.space, pdst=None if it.pdst is None else pmap[it.pdst],
                                trap=it.trap, float_dst=not it.writes_pred and it.dst in float_names))
        term = b.term
        if b.term_pred is not None:
            term = replace(term, pred=pred(b.term_pred))
        out.append(Block(b.index, instrs, term, b.label))
    regs_used = max(rmap.values(), default=0)
    preds_used = max(pmap.values(), default=-1) + 1
    return out, regs_used, preds_used
