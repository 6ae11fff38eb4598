"""Residual dim reuse: fold the compiler's logical dims onto the fewest physical ones.

The stages allocate a fresh residual dim for every value (``ResidualLayout``), about
9,600 for the published machine, while far fewer hold a live value at any layer. A dense
Qwen3.5 checkpoint pays for every dim in every layer, so ``reuse_dims`` hands a dim whose
value is dead to a later value, like a register allocator. The residual only adds, so
the old value must first be cancelled: a *clear* gate reads it after its last reader and
writes minus it, before the next value's first writer.

Which values can be cleared, exactly:

* values of scale class 2 (docs/CIRCUIT.md, "Levels"): a clear gate is an MLP gate, so it
  writes at class-2 level; token bits (level 1) and layer-0 head outputs (level r) would
  leave a residue of (1 - r^2) under a host model, so they keep their dims;
* written by MLP gates with integer output weights (and head reads of stored bits,
  weight 1), so the value is an integer in [lo, hi] (the sums of the negative and the
  positive weights, narrowed to the builder's ``value_range`` claim): the clear gates
  are the staircase ``[x >= k] -> -1`` for k = 1..hi and ``[-x >= k] -> +1`` for
  k = 1..-lo, exact for every integer value in the range.

A clear leaves a residue (float32 rounding of a gate's output, the read path of a
head's): a value takes over a dim only while those residues, times the largest weight
its readers give it, stay far inside the margin; dims that held head outputs go first
to values whose readers weigh them lightly. A value nobody reads takes no dim (its
writes are dropped). A dim that a plain (not SiLU-decoded) key or query reads must be
exactly zero when its value is 0 (L2 normalisation would blow up any residue), so such
values never take over a dim that held something else. Everything else is dataflow: the
clear gate reads at an MLP x at or after the old value's last read and before the new
value is first seen, so the old value's readers do not see it and the new value's
readers do.
"""

from __future__ import annotations

import copy
import heapq
import math
from collections import defaultdict
from dataclasses import dataclass, replace

import numpy as np

from qwengpu_mlx.compiler import placement
from qwengpu_mlx.compiler.assemble import CircuitPlan
from qwengpu_mlx.compiler.mlp import Gate

CLEAR_RANGE = 64  # the most clear gates one value may need (hi - lo)
GATE_RESIDUE, HEAD_RESIDUE = 1e-6, 5e-4  # relative residue a clear leaves (see ``_residue``)
RESIDUE_TOLERANCE = 0.02  # most a reader's decision may move (of 0.5) from residues in its inputs
SENSITIVE = 16.0  # a reader weight above which a value keeps off dims that held head outputs


@dataclass
class Reuse:
    plan: CircuitPlan  # the plan on physical dims (a copy; the logical plan is untouched)
    physical: int  # residual dims it uses
    logical: int  # dims the logical plan allocates
    clear_gates: int
    mapping: dict  # logical dim -> physical dim


def _lives(plan: CircuitPlan):
    """Per logical dim: first time its value is visible, last time it is read; its writers.

    Times: a head at layer i reads at 2i and is seen from 2i+1 (MLP i); a gate at MLP i
    reads at 2i+1 and is seen from 2i+2; the final norm reads at 2L.
    """
    L = len(plan.layers)
    vis: dict[int, int] = {}
    end: dict[int, int] = defaultdict(lambda: -1)
    gate_w: dict[int, list] = defaultdict(list)  # dim -> output weights of MLP writers
    head_w: dict[int, list] = defaultdict(list)  # dim -> read weights of head writers
    plain: set[int] = set()  # dims a plain key or query reads
    gain: dict[int, float] = defaultdict(float)  # dim -> largest weight a reader's decision gives it
    one2 = plan.layout.ONE2
    G = plan.levels.decode_gain

    def seen(d, t):
        vis[d] = min(vis.get(d, t), t)

    def read(d, t):
        end[d] = max(end[d], t)

    for d in plan.embedding_dims():
        vis[int(d)] = -1
    for i, lp in enumerate(plan.layers):
        if lp.mixer is not None and lp.mixer.heads:
            for d in lp.mixer.input_dims():
                read(int(d), 2 * i)
            for h in lp.mixer.heads:
                for _, d, w in h.read_terms:
                    seen(d, 2 * i + 1)
                    head_w[d].append(w)
                decoded_q = any(d == one2 for _, d, _ in h.query_terms)
                decoded_k = any(d == one2 for _, d, _, _ in h.key_terms)
                if not decoded_q:
                    plain.update(d for _, d, _ in h.query_terms)
                else:
                    for _, d, w in h.query_terms:
                        gain[d] = max(gain[d], abs(w) / G)
                if not decoded_k:
                    plain.update(d for _, d, _, _ in h.key_terms)
                else:
                    for _, d, _, w in h.key_terms:
                        gain[d] = max(gain[d], abs(w) / G)
        if lp.mlp is not None:
            for g in lp.mlp.gates:
                for d, w in g.terms:
                    read(d, 2 * i + 1)
                    gain[d] = max(gain[d], abs(w))
                for d, w in g.outputs:
                    seen(d, 2 * i + 2)
                    gate_w[d].append(w)
    for d in plan.final_norm_dims or []:
        read(int(d), 2 * L)
    return vis, end, gate_w, head_w, plain, gain


def _residue(steps: list, from_head: bool) -> float:
    """Bound on what clearing a value leaves in its dim: a relative error of its largest
    magnitude, float32 rounding for gate outputs (measured below 1e-6), the read path's for
    a head's (measured 2.4e-4 on a bit at r = 1; the bound allows for more)."""
    mag = max(k * abs(w) for _, k, w in steps)
    return mag * (HEAD_RESIDUE if from_head else GATE_RESIDUE)


def _clear_steps(d: int, cls: dict, gate_w: dict, head_w: dict, ranges: dict) -> list | None:
    """(input weight, k, output weight) clear gates for dim d, or None if it cannot be cleared.

    Every writer adds an integer weight times a 0/1 decision (a head read of a stored bit
    counts as weight 1), so the value is an integer in [lo, hi], the sums of the negative
    and positive weights, narrowed to what its builder claimed (``ResidualLayout.alloc``'s
    ``value_range``); the staircase clears each one of them.
    """
    if cls.get(d) != 2:
        return None
    ws = list(gate_w.get(d, ())) + list(head_w.get(d, ()))
    if not ws or any(w != 1.0 for w in head_w.get(d, ())):
        return None
    u = min(abs(w) for w in ws)  # the value is a multiple of the smallest weight (powers of two)
    if any((w / u) != int(w / u) for w in ws):
        return None
    hi = int(sum(w for w in ws if w > 0) / u)
    lo = int(sum(w for w in ws if w < 0) / u)
    if d in ranges:
        r_lo, r_hi = ranges[d]
        hi, lo = min(hi, math.floor(r_hi / u + 1e-6)), max(lo, math.ceil(r_lo / u - 1e-6))
    if hi - lo > CLEAR_RANGE:
        return None
    return [(1 / u, k, -u) for k in range(1, hi + 1)] + [(-1 / u, k, u) for k in range(1, -lo + 1)]


def reuse_dims(plan: CircuitPlan, *, units: int | None = None) -> Reuse:
    """A copy of ``plan`` whose values share residual dims where their lives allow.

    Clear gates go into the first MLP between the old value's last reader and the new
    value's first writer that has room under ``units`` (default: the plan's intermediate
    size); where none has, the new value takes a fresh dim. No other gate moves.
    """
    plan.finalize()
    lay = plan.layout
    vis, end, gate_w, head_w, plain, gain = _lives(plan)
    cls = lay.scale_class
    fixed = {int(d) for d in plan.embedding_dims()} | {lay.ONE, lay.ONE1, lay.ONE2}
    dead = {d for d in vis if end.get(d, -1) < 0 and d not in fixed}  # written, never read: the writes go
    phys: list[list | None] = []  # per physical dim: the clear steps of the value it holds now
    residue: list[float] = []  # per physical dim: bound on what its clears will have left behind
    mapping: dict[int, int] = {}
    clears: list[tuple[int, int, list]] = []  # (MLP layer, physical dim, steps)
    by_start = sorted(set(vis) - dead, key=lambda d: (vis[d], d))  # written (or embedded) dims, first seen first
    cap = units or plan.shape.intermediate
    room = [cap - (lp.mlp.units if lp.mlp is not None else 0) for lp in plan.layers]
    # dead clearable values, as heaps of (first clear layer, physical dim): "dirty" dims hold
    # a residue too large for a sensitive reader (a weight above SENSITIVE), so those go
    # to the other values first and the clean dims stay for the sensitive ones
    free_at: dict[bool, list[tuple[int, int]]] = {False: [], True: []}
    for d in by_start:
        steps = None if d in fixed else _clear_steps(d, cls, gate_w, head_w, lay.ranges)
        p = None
        if d not in fixed and d not in plain and vis[d] >= 0:
            # a dead value whose clear gates fit an MLP that reads after its last reader and
            # before this value is seen (2x + 1 < vis): the oldest first
            for dirty in ((True, False) if gain.get(d, 0.0) <= SENSITIVE else (False,)):
                heap, tried = free_at[dirty], []
                while heap and p is None:
                    c, q = heapq.heappop(heap)
                    if 2 * c + 1 >= vis[d]:
                        tried.append((c, q))
                        break  # the heap's smallest is too late: all are
                    need = 2 * len(phys[q])
                    x = next((x for x in range(c, (vis[d] - 2) // 2 + 1) if room[x] >= need), None)
                    if x is None or residue[q] * gain.get(d, 0.0) > RESIDUE_TOLERANCE:
                        tried.append((c, q))
                        continue
                    room[x] -= need
                    clears.append((x, q, phys[q]))
                    p = q
                for item in tried:
                    heapq.heappush(heap, item)
                if p is not None:
                    break
        if p is None:
            p = len(phys)
            phys.append(None)
            residue.append(0.0)
        phys[p] = steps
        mapping[d] = p
        if steps is not None and end[d] >= 0:  # free once dead, with this value's clear residue added
            residue[p] += _residue(steps, bool(head_w.get(d)))
            heapq.heappush(free_at[residue[p] * SENSITIVE > RESIDUE_TOLERANCE],
                           (max(0, math.ceil((end[d] - 1) / 2)), p))
    # dims nobody writes (allocated but unused) still need a home if read
    for d in sorted(end):
        if d not in mapping and end[d] >= 0:
            mapping[d] = len(phys)
            phys.append(None)
    out = copy.deepcopy(plan)
    _drop_writes(out, dead)
    _remap(out, mapping)
    out.layout.spaces = {}  # the logical names no longer own a dim each (``mapping`` has them)
    out.layout._next = len(phys)
    for c, p, steps in clears:
        mlp = out.mlp(c)
        for sign, k, w in steps:
            name = f"clear.{p}.{'+' if sign > 0 else '-'}{k}"
            mlp.gates.append(Gate(name, ((p, float(sign)),), float(k), ((p, float(w)),), 2 * len(mlp.gates)))
            placement.note(out, placement.GATE, name, "fold.clear", c)
    placement.tally(out)
    n_clear = sum(len(s) for _, _, s in clears)
    return Reuse(out, len(phys), lay.used, n_clear, mapping)


def _drop_writes(plan: CircuitPlan, dead: set[int]) -> None:
    """Remove every write to ``dead`` dims (nobody reads them), and gates left writing nothing."""
    for lp in plan.layers:
        if lp.mlp is not None:
            gates = [replace(g, outputs=tuple((d, w) for d, w in g.outputs if d not in dead))
                     for g in lp.mlp.gates]
            lp.mlp.gates = [replace(g, unit=2 * u) for u, g in enumerate(g for g in gates if g.outputs)]
        if lp.mixer is not None:
            for h in lp.mixer.heads:
                h.read_terms = [(b, d, w) for b, d, w in h.read_terms if d not in dead]


def _remap(plan: CircuitPlan, m: dict[int, int]) -> None:
    """Rewrite every dim reference of ``plan`` through ``m`` (logical -> physical)."""
    f = lambda d: m.get(int(d), int(d))  # noqa: E731
    lay = plan.layout
    for lp in plan.layers:
        if lp.mlp is not None:
            lp.mlp.gates = [replace(g, terms=tuple((f(d), w) for d, w in g.terms),
                                    outputs=tuple((f(d), w) for d, w in g.outputs)) for g in lp.mlp.gates]
        if lp.mixer is not None:
            lp.mixer.z_ref = (f(lp.mixer.z_ref[0]), lp.mixer.z_ref[1])
            for h in lp.mixer.heads:
                h.key_terms = [(r, f(d), t, w) for r, d, t, w in h.key_terms]
                h.value_terms = [(b, f(d), t, w) for b, d, t, w in h.value_terms]
                h.query_terms = [(r, f(d), w) for r, d, w in h.query_terms]
                h.read_terms = [(b, f(d), w) for b, d, w in h.read_terms]
    lay.scale_class = {f(d): c for d, c in lay.scale_class.items()}
    lay.references = {c: (f(d), w) for c, (d, w) in lay.references.items()}
    lay.ranges = {}  # per logical value; a physical dim holds several
    for name in ("ONE", "ONE1", "ONE2"):
        setattr(lay, name, f(getattr(lay, name)))
    if plan.embedding_sparse is not None:
        dims, E = plan.embedding_sparse
        plan.embedding_sparse = (np.array([f(d) for d in dims], dtype=np.int64), E)
    plan.embedding = None
    if plan.final_norm_dims is not None:
        plan.final_norm_dims = [f(d) for d in plan.final_norm_dims]
