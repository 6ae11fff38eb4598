"""Retiming: move MLP gates and heads into later layers where they have slack, to cap a layer's width.

The machine circuit places every gate at the earliest layer its inputs allow, so a few
layers carry most of the MLP units (the ALU families of a slot start together). Qwen3.5
layers are dense and equally wide, so the widest layer sets the checkpoint's
``intermediate``. A gate may run in any later MLP as long as

* every reader of its outputs stays above it (a gate or a head at layer j reads the
  residual below MLP j, so a producer must sit at MLP j-1 or lower), and
* what it reads does not change: no writer of one of its input dims that it did not see
  before comes below it (a head at layer j is seen by MLP j; an MLP m by MLP m+1).

Heads and layer 0 stay put: layer 0's gates write the class constants and class-2
copies (``CircuitPlan.finalize``), whose level depends on being in layer 0. So every
gate gets a latest layer (``alap``), computed from the top down, and a bottom-up pass
moves gates up one layer at a time: first those whose producers moved to their layer,
then, where a layer is over the cap, those with the most slack. The dataflow is the
same, so every launch is token-for-token the same.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace

from qwengpu_mlx.compiler.assemble import CircuitPlan
from qwengpu_mlx.compiler.placement import note_moves


class ScheduleError(ValueError):
    """A layer cannot be brought under the unit cap (none of its gates has slack)."""


@dataclass(frozen=True)
class ScheduleOutcome:
    """What :func:`schedule_plan` did, as fields a caller branches on (``describe`` is for people).

    A pass that cannot bring the MLPs under the cap is no failure of the compile: the
    stages' layers stay and the plan is as wide as they are; the caller decides whether
    that width is good enough (the fold retries at the full width, then checks the shape).
    """

    units: int  # the MLP cap asked for
    heads: int  # the heads per layer asked for
    mlp_error: ScheduleError | None  # why the MLPs kept the stages' layers; None: all under ``units``
    gates_stayed: ScheduleError | None  # why heads moved without the gates that read them; None: gates moved too
    heads_max: int  # the most heads a layer holds after the pass
    heads_over: tuple[tuple[int, int], ...]  # (layer, heads) of layers still over ``heads``

    @property
    def mlps_spread(self) -> bool:
        return self.mlp_error is None

    def describe(self) -> str:
        out = f"MLPs spread to at most {self.units} units" if self.mlps_spread else f"MLPs not spread: {self.mlp_error}"
        if self.gates_stayed is not None:
            out += f"; heads spread without moving gates ({self.gates_stayed})"
        over = ", ".join(f"layer {i}: {n}" for i, n in self.heads_over)
        return out + f"; heads at most {max(self.heads_max, 1)} per layer" + (f" (over {self.heads}: {over})" if over else "")


def schedule_plan(plan: CircuitPlan, units: int, heads: int) -> ScheduleOutcome:
    """Spread gates and heads into later layers where they have slack; the plan's shape then
    says the widths the circuit really uses.

    Every MLP is brought to at most ``units`` units (if its critical layers allow: else the
    MLPs keep the stages' layers); heads move towards ``heads`` per layer where their
    readers allow, then the MLP pass runs again to lift the gates above the heads they read.
    If that second pass fails, the heads go back and move again without moving any gate.
    """
    try:
        spread_mlps(plan, units)
    except ScheduleError as e:
        mlp_error = e
    else:
        mlp_error = None
        plan.shape = replace(plan.shape, intermediate=units)
        for lp in plan.layers:
            if lp.mlp is not None:
                lp.mlp.intermediate = units
    # heads next: a head may move above the gates that read it when they can move too
    before = [list(lp.mixer.heads) if lp.mixer is not None else None for lp in plan.layers]
    seen = heads_seen(plan)
    hs = spread_heads(plan, heads, gate_alaps(plan))
    gates_stayed = None
    try:
        spread_mlps(plan, plan.shape.intermediate, must_see=seen)
    except ScheduleError as e:  # put the heads back where they were
        for lp, hl in zip(plan.layers, before):
            if lp.mixer is not None:
                lp.mixer.heads = hl or []
                for k, h in enumerate(lp.mixer.heads):
                    h.index = k
        hs = spread_heads(plan, heads)
        gates_stayed = e
    widest = max(hs["heads_max"], 1)
    plan.shape = replace(plan.shape, linear_heads=widest)
    for lp in plan.layers:
        if lp.mixer is not None:
            lp.mixer.H = widest
    note_moves(plan, "schedule")
    return ScheduleOutcome(units, heads, mlp_error, gates_stayed, hs["heads_max"], tuple(hs["over"]))


def head_layers(plan: CircuitPlan) -> dict[str, int]:
    """Head name -> its layer."""
    return {h.name: i for i, lp in enumerate(plan.layers) if lp.mixer is not None for h in lp.mixer.heads}


def heads_seen(plan: CircuitPlan) -> dict[str, set[str]]:
    """Gate name -> the heads whose outputs it reads and sees (an MLP j sees heads up to j)."""
    where = head_layers(plan)
    by_dim: dict[int, list[str]] = defaultdict(list)
    for lp in plan.layers:
        for h in (lp.mixer.heads if lp.mixer is not None else []):
            for _, d, _ in h.read_terms:
                by_dim[d].append(h.name)
    out: dict[str, set[str]] = {}
    for i, lp in enumerate(plan.layers):
        for g in (lp.mlp.gates if lp.mlp is not None else []):
            out[g.name] = {n for d, _ in g.terms for n in by_dim.get(d, ()) if where[n] <= i}
    return out


def spread_mlps(plan: CircuitPlan, cap: int, must_see: dict[str, set[str]] | None = None,
                alap_out: dict | None = None) -> dict:
    """Move gates up until every MLP above layer 0 has at most ``cap`` units.

    ``must_see`` (gate name -> head names, from :func:`heads_seen` before heads moved)
    keeps each gate above the heads it read before: a gate below such a head moves up.
    Returns a summary (gates moved, widest layer after). Raises :class:`ScheduleError`
    naming the layer when one stays over the cap; the plan is then unchanged.
    """
    must_see = must_see or {}
    where = head_layers(plan)
    L = len(plan.layers)
    gates, pos = [], []  # every MLP gate and its layer
    for i, lp in enumerate(plan.layers):
        if lp.mlp is not None:
            for g in lp.mlp.gates:
                gates.append(g)
                pos.append(i)
    n = len(gates)
    writers: dict[int, list[int]] = defaultdict(list)  # dim -> gate ids writing it
    for k, g in enumerate(gates):
        for d, _ in g.outputs:
            writers[d].append(k)
    head_read: dict[int, list[int]] = defaultdict(list)  # dim -> layers whose heads read it
    head_write: dict[int, list[tuple[int, str]]] = defaultdict(list)  # dim -> (layer, head) writing it
    for i, lp in enumerate(plan.layers):
        if lp.mixer is not None and lp.mixer.heads:
            for d in lp.mixer.input_dims():
                head_read[int(d)].append(i)
            for h in lp.mixer.heads:
                for _, d, _ in h.read_terms:
                    head_write[d].append((i, h.name))
    consumers: list[list[int]] = [[] for _ in range(n)]
    seen: list[list[int]] = [[] for _ in range(n)]  # the writers of its inputs a gate sees
    for k, g in enumerate(gates):
        for d, _ in g.terms:
            for w in writers.get(d, ()):
                if pos[w] < pos[k]:
                    consumers[w].append(k)
                    seen[k].append(w)

    unseen: list[list[int]] = [[w for d, _ in g.terms for w in writers.get(d, ()) if pos[w] >= pos[k] and w != k]
                               for k, g in enumerate(gates)]  # writers of its inputs it must not see
    alap = [L - 1] * n
    for k, g in enumerate(gates):
        i = pos[k]
        if i == 0:
            alap[k] = 0
            continue
        for d, _ in g.outputs:  # heads above it that read what it writes
            for j in head_read.get(d, ()):
                if j > i:
                    alap[k] = min(alap[k], j - 1)
        for d, _ in g.terms:  # heads above it that it must not see
            for j, name in head_write.get(d, ()):
                if j > i and name not in must_see.get(g.name, ()):
                    alap[k] = min(alap[k], j - 1)
    changed = True
    while changed:  # a producer sits below its consumers; a reader at or below the writers it must not see
        changed = False
        for k in sorted(range(n), key=lambda k: -pos[k]):
            b = min([alap[k]] + [alap[c] - 1 for c in consumers[k]] + [alap[w] for w in unseen[k]])
            b = max(b, pos[k])
            if b != alap[k]:
                alap[k], changed = b, True

    at: list[list[int]] = [[] for _ in range(L)]
    if alap_out is not None:
        alap_out.update({g.name: alap[k] for k, g in enumerate(gates)})
    low = [max([0] + [where[h] for h in must_see.get(g.name, ())]) for g in gates]  # heads it must see
    for k in range(n):
        if low[k] > alap[k]:
            raise ScheduleError(f"gate {gates[k].name!r} must sit at layer {low[k]} or above but its readers "
                                f"need it by layer {alap[k]}")
        at[pos[k]].append(k)
    moved = set()
    for i in range(1, L):
        here = at[i]
        # gates that must move together: a reader and the same-layer writers it must not see
        parent = {k: k for k in here}

        def find(k):
            while parent[k] != k:
                parent[k] = parent[parent[k]]
                k = parent[k]
            return k

        for k in here:
            for w in unseen[k]:
                if pos[w] == i:
                    parent[find(k)] = find(w)
        groups: dict[int, list[int]] = defaultdict(list)
        for k in here:
            groups[find(k)].append(k)
        forced, optional = [], []
        for members in groups.values():
            if any(pos[w] >= i for k in members for w in seen[k]) or any(low[k] > i for k in members):
                forced.append(members)
            elif min(alap[k] for k in members) > i:
                optional.append(members)
        staying = len(here) - sum(len(m) for m in forced)
        up = [k for m in forced for k in m]
        optional.sort(key=lambda m: (-min(alap[k] for k in m), len(m)))
        for members in optional:
            if staying <= cap // 2:
                break
            up += members
            staying -= len(members)
        if staying > cap // 2:
            raise ScheduleError(f"layer {i}: {2 * staying} MLP units stay over the cap of {cap}; "
                                f"no more of its gates can run later")
        if up and i + 1 >= L:
            raise ScheduleError(f"layer {i}: the last layer is over the cap of {cap}")
        for k in up:
            if alap[k] <= i:
                raise ScheduleError(f"gate {gates[k].name!r} must move above layer {i} but cannot")
            pos[k] = i + 1
            at[i + 1].append(k)
            moved.add(k)
        at[i] = [k for k in here if pos[k] == i]

    for i, lp in enumerate(plan.layers):
        if at[i] and lp.mlp is None:
            plan.mlp(i)
        if lp.mlp is not None:
            lp.mlp.gates = [replace(gates[k], unit=2 * u) for u, k in enumerate(at[i])]
    return {"moved_gates": len(moved), "cap": cap,
            "units_max": max((lp.mlp.units for lp in plan.layers if lp.mlp), default=0)}


def gate_alaps(plan: CircuitPlan) -> dict[str, int]:
    """Gate name -> the latest layer it could run in with the heads where they are."""
    out = {}
    try:
        snapshot = [list(lp.mlp.gates) if lp.mlp is not None else None for lp in plan.layers]
        spread_mlps(plan, 1 << 30, alap_out=out)
    finally:
        for lp, gates in zip(plan.layers, snapshot):
            if lp.mlp is not None and gates is not None:
                lp.mlp.gates = gates
    return out


def spread_heads(plan: CircuitPlan, cap: int, gate_alap: dict[str, int] | None = None) -> dict:
    """Move heads up to later Gated DeltaNet layers until no layer has more than ``cap``.

    A head at layer i may run at a later linear layer t when every gate reading what it
    writes sits at MLP t or above and every head reading it above t, and when no writer
    of what it reads lands newly below it (an MLP in [i, t) it did not see, a head in
    (i, t]). The heads of a layer keep their order; indices are renumbered. Best
    effort: heads whose readers sit right above them stay, and ``over`` lists the layers
    still above the cap.
    """
    L = len(plan.layers)
    gate_read: dict[int, list[int]] = defaultdict(list)  # dim -> latest layers its MLP readers allow
    gate_write: dict[int, list[int]] = defaultdict(list)  # dim -> MLP layers writing it
    gate_alap = gate_alap or {}
    for i, lp in enumerate(plan.layers):
        if lp.mlp is not None:
            for g in lp.mlp.gates:
                for d, _ in g.terms:
                    gate_read[d].append(max(i, gate_alap.get(g.name, i)))
                for d, _ in g.outputs:
                    gate_write[d].append(i)
    final = set(int(d) for d in plan.final_norm_dims) if plan.final_norm_dims is not None else set()
    dims_of = {}  # id(head) -> (dims it reads, dims it writes); heads keep their terms when they move
    for lp in plan.layers:
        for h in (lp.mixer.heads if lp.mixer is not None else []):
            ins = {d for _, d, _, _ in h.key_terms} | {d for _, d, _ in h.query_terms}
            dims_of[id(h)] = (ins | {d for _, d, _, _ in h.value_terms}, {d for _, d, _ in h.read_terms})

    def heads_at(j):
        lp = plan.layers[j]
        return lp.mixer.heads if lp.mixer is not None else []

    def latest(h, i) -> int:
        ins, outs = dims_of[id(h)]
        t = L - 1
        for d in outs:
            t = min([t] + [j for j in gate_read.get(d, ()) if j >= i] + ([L] if d in final else []))
        for j in range(i + 1, L):  # heads reading its outputs, heads writing its inputs
            for other in heads_at(j):
                oi, oo = dims_of[id(other)]
                if oi & outs:
                    t = min(t, j - 1)
                if oo & ins:
                    t = min(t, j - 1)
        for d in ins:  # MLP writers of its inputs it does not see yet
            t = min([t] + [m for m in gate_write.get(d, ()) if m >= i])
        return t

    moved, over = 0, []
    for i in range(1, L):
        lp = plan.layers[i]
        if lp.mixer is None or len(lp.mixer.heads) <= cap:
            continue
        cands = sorted(((latest(h, i), h) for h in lp.mixer.heads), key=lambda c: -c[0])
        excess = len(lp.mixer.heads) - cap
        gone = set()
        for t_max, h in cands:
            if len(gone) == excess:
                break
            for t in range(t_max, i, -1):  # the latest layer with room: keeps the near ones free
                if not plan.shape.is_linear(t):
                    continue
                target = plan.mixer(t)
                if not target.heads:  # a new layer's heads gate their output as these did
                    target.z_ref = lp.mixer.z_ref
                if len(target.heads) < cap and target.z_ref == lp.mixer.z_ref:
                    target.heads.append(h)
                    gone.add(id(h))
                    break
        lp.mixer.heads = [h for h in lp.mixer.heads if id(h) not in gone]
        moved += len(gone)
        if len(lp.mixer.heads) > cap:
            over.append((i, len(lp.mixer.heads)))
    for lp in plan.layers:
        if lp.mixer is not None:
            for k, h in enumerate(lp.mixer.heads):
                h.index = k
    return {"moved_heads": moved, "cap": cap, "over": over,
            "heads_max": max((len(lp.mixer.heads) for lp in plan.layers if lp.mixer), default=0)}
