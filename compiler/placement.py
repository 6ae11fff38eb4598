"""Which stage placed each gate and head, per layer: the provenance ``layout_report`` prints.

A stage (``context``, ``fetch``, ``slot0``, ``control.early``, ...) appends gates and
heads to the plan's layers. :func:`placing` wraps one: when it is done, the gates and
heads it added are noted in ``CircuitPlan.origins`` (kind and name -> :class:`Origin`)
and counted on each ``LayerPlan.placed``. The schedule pass moves gates and heads up;
:func:`note_moves` then says "schedule" put them where they are now (keeping the stage
that built them), and the fold notes its clear gates as ``fold.clear``.

Recording reads names and list lengths and writes only ``origins`` and the counters:
never a term, a weight or an order, so the weights do not depend on it. Gate and head
names are unique in a machine's plan, which makes them the key.
"""

from __future__ import annotations

from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass

GATE, HEAD = "gate", "head"
UNRECORDED = "unrecorded"  # a part no stage noted (plans built by hand, as in tests)


@dataclass(frozen=True)
class Origin:
    stage: str  # the stage that put the part in its layer ("schedule" when that pass moved it)
    layer: int  # the layer it put it in
    built_by: str  # the stage that built it


def parts(lp):
    """(kind, name) of a layer's gates, then of its heads."""
    for g in (lp.mlp.gates if lp.mlp is not None else []):
        yield GATE, g.name
    for h in (lp.mixer.heads if lp.mixer is not None else []):
        yield HEAD, h.name


def _sizes(plan) -> list[tuple[int, int]]:
    return [(len(lp.mlp.gates) if lp.mlp is not None else 0, len(lp.mixer.heads) if lp.mixer is not None else 0)
            for lp in plan.layers]


@contextmanager
def placing(plan, stage: str):
    """Note the gates and heads the enclosed code appends to ``plan`` as placed by ``stage``.

    Stages only append while building, so the new parts of a layer are those past its
    lengths before. An enclosing ``placing`` leaves parts an inner one noted alone.
    """
    before = _sizes(plan)
    yield
    for i, lp in enumerate(plan.layers):
        g0, h0 = before[i] if i < len(before) else (0, 0)
        new = [(GATE, g.name) for g in (lp.mlp.gates[g0:] if lp.mlp is not None else [])]
        new += [(HEAD, h.name) for h in (lp.mixer.heads[h0:] if lp.mixer is not None else [])]
        for key in new:
            plan.origins.setdefault(key, Origin(stage, i, stage))
    tally(plan)


def note(plan, kind: str, name: str, stage: str, layer: int) -> None:
    """Note one part placed by ``stage`` (for stages that add parts to a copy, as the fold does)."""
    plan.origins[(kind, name)] = Origin(stage, layer, stage)


def note_moves(plan, stage: str = "schedule") -> None:
    """Parts no longer in the layer their stage put them in were moved there by ``stage``."""
    for i, lp in enumerate(plan.layers):
        for key in parts(lp):
            o = plan.origins.get(key)
            if o is not None and o.layer != i:
                plan.origins[key] = Origin(stage, i, o.built_by)
    tally(plan)


def tally(plan) -> None:
    """Recount every layer's ``placed`` (stage, kind) and ``moved_in`` (building stage, kind)."""
    for lp in plan.layers:
        placed, moved = Counter(), Counter()
        for kind, name in parts(lp):
            o = plan.origins.get((kind, name))
            placed[(o.stage if o else UNRECORDED, kind)] += 1
            if o is not None and o.stage != o.built_by:
                moved[(o.built_by, kind)] += 1
        lp.placed, lp.moved_in = placed, moved


def describe(counts: Counter) -> str:
    """``slot0 380g 4h, latch 2h``: per stage in first-seen order, gates (g) then heads (h)."""
    stages = list(dict.fromkeys(stage for stage, _ in counts))
    out = []
    for stage in stages:
        n = [f"{counts[(stage, kind)]}{kind[0]}" for kind in (GATE, HEAD) if counts[(stage, kind)]]
        out.append(f"{stage} {' '.join(n)}")
    return ", ".join(out)
