"""The schedule pass moves gates and heads without changing what anyone reads.

Correctness is dataflow: every reader of a residual dim (a gate at MLP j, a head at
layer j, the final norm) must see exactly the writers it saw before the pass. The test
recomputes that relation here, independently of ``compiler.schedule``, before and after.
Launch-level exactness of the scheduled machine is covered by the model-backend tests.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

from qwengpu_mlx.compiler.assemble import CircuitPlan, Shape
from qwengpu_mlx.compiler.machine_circuit import MLP_UNITS, build_circuit
from qwengpu_mlx.compiler.residual import ResidualLayout
from qwengpu_mlx.compiler.schedule import ScheduleError, schedule_plan, spread_mlps
from qwengpu_mlx.compiler.sizing import QWEN35_2B
from qwengpu_mlx.compiler.wiring import LINEAR_HEADS
from qwengpu_mlx.core.machine import PUBLISHED_MACHINE


def writers_seen(plan: CircuitPlan) -> dict:
    """(reader name, dim) -> names of the writers of dim that the reader sees."""
    writes = defaultdict(list)  # dim -> [(kind, layer, name)]
    for i, lp in enumerate(plan.layers):
        for g in (lp.mlp.gates if lp.mlp else []):
            for d, _ in g.outputs:
                writes[d].append(("mlp", i, g.name))
        for h in (lp.mixer.heads if lp.mixer else []):
            for _, d, _ in h.read_terms:
                writes[d].append(("head", i, h.name))

    def seen(kind, layer, d):
        # a head at layer j sees heads below j and MLPs below j; an MLP j also sees heads at j
        return sorted(n for k, i, n in writes[d] if i < layer or (kind == "mlp" and k == "head" and i == layer))

    out = {}
    for i, lp in enumerate(plan.layers):
        for g in (lp.mlp.gates if lp.mlp else []):
            for d, _ in g.terms:
                out[(g.name, d)] = seen("mlp", i, d)
        for h in (lp.mixer.heads if lp.mixer else []):
            dims = {d for _, d, _, _ in h.key_terms} | {d for _, d, _ in h.query_terms}
            dims |= {d for _, d, _, _ in h.value_terms}
            for d in dims:
                out[(h.name, d)] = seen("head", i, d)
    for d in plan.final_norm_dims or []:
        out[("final", d)] = seen("head", len(plan.layers), d)
    return out


@pytest.fixture(scope="module")
def unscheduled():
    mc = build_circuit(PUBLISHED_MACHINE)
    mc.plan.finalize()
    return mc


def test_machine_mlps_fit_the_2b_width_and_every_reader_sees_the_same_writers(unscheduled):
    plan = unscheduled.plan
    before = writers_seen(plan)
    widest = max(lp.mlp.units for lp in plan.layers if lp.mlp)
    layer0 = [g.name for g in plan.layers[0].mlp.gates]
    assert widest > QWEN35_2B.intermediate  # the stages alone do not fit
    summary = spread_mlps(plan, MLP_UNITS)
    assert summary["moved_gates"] > 0
    assert max(lp.mlp.units for lp in plan.layers if lp.mlp) <= QWEN35_2B.intermediate
    assert [g.name for g in plan.layers[0].mlp.gates] == layer0  # class constants stay in layer 0
    for lp in plan.layers:  # units renumbered densely
        if lp.mlp:
            assert [g.unit for g in lp.mlp.gates] == list(range(0, lp.mlp.units, 2))
    assert writers_seen(plan) == before


def small_plan() -> CircuitPlan:
    """Three gates in a chain x -> a -> b plus a free one c, all built in layer 1."""
    shape = Shape(hidden=64, intermediate=64, linear_heads=2, key_dim=16, value_dim=16)
    lay = ResidualLayout(shape.hidden)
    x, a, b, c = (lay.alloc(n, 1)[0] for n in ("x", "a", "b", "c"))
    plan = CircuitPlan(shape, lay)
    for _ in range(6):
        plan.new_layer()
    plan.mlp(1).gate("a", [(x, 1)], 1, [(a, 1)])
    plan.mlp(1).gate("c", [(x, 1)], 1, [(c, 1)])
    plan.mlp(2).gate("b", [(a, 1)], 1, [(b, 1)])
    plan.mlp(5).gate("use", [(b, 1), (c, 1)], 2, [(x, 1)])
    return plan


def layer_of(plan, name):
    return next(i for i, lp in enumerate(plan.layers) if lp.mlp and any(g.name == name for g in lp.mlp.gates))


def test_a_gate_moves_only_as_far_as_its_readers_allow():
    plan = small_plan()
    before = writers_seen(plan)
    spread_mlps(plan, 2)  # one gate (two units) per layer
    assert layer_of(plan, "a") == 1 and layer_of(plan, "c") == 2  # c has slack, a feeds b
    assert layer_of(plan, "b") == 2 or layer_of(plan, "b") == 3
    assert layer_of(plan, "use") == 5
    assert writers_seen(plan) == before


def test_an_impossible_cap_is_refused_by_name_and_changes_nothing():
    plan = small_plan()
    x, a = plan.layout.spaces["x"][0], plan.layout.spaces["a"][0]
    plan.mlp(1).gate("d", [(x, 1)], 1, [(a, 1)])  # a and d write a, ...
    plan.mixer(2).head("pin", 1, 1).query(0, a)  # ... which a head at layer 2 reads: no slack
    snapshot = [[(g.name, g.unit) for g in lp.mlp.gates] if lp.mlp else [] for lp in plan.layers]
    with pytest.raises(ScheduleError, match="layer 1"):
        spread_mlps(plan, 2)  # c can move, a and d cannot: two gates stay in layer 1
    assert [[(g.name, g.unit) for g in lp.mlp.gates] if lp.mlp else [] for lp in plan.layers] == snapshot


def test_the_machine_schedule_fits_2b_widths_and_keeps_the_dataflow():
    """The whole pass (MLPs, then heads with the gates that read them, then MLPs again)."""
    mc = build_circuit(PUBLISHED_MACHINE)
    mc.plan.finalize()
    plan = mc.plan
    before = writers_seen(plan)
    heads_before = max(len(lp.mixer.heads) for lp in plan.layers if lp.mixer)
    memory_names = mc.memory_head_names
    schedule_plan(plan, MLP_UNITS, LINEAR_HEADS)
    assert writers_seen(plan) == before
    assert heads_before > QWEN35_2B.linear_heads
    assert max(len(lp.mixer.heads) for lp in plan.layers if lp.mixer) <= QWEN35_2B.linear_heads
    assert max(lp.mlp.units for lp in plan.layers if lp.mlp) <= QWEN35_2B.intermediate
    assert plan.shape.linear_heads <= QWEN35_2B.linear_heads and plan.shape.intermediate == QWEN35_2B.intermediate
    assert [plan.layers[layer].mixer.heads[index].name for layer, index in mc.memory_heads] == memory_names
    for i, lp in enumerate(plan.layers):
        if lp.mixer:
            assert [h.index for h in lp.mixer.heads] == list(range(len(lp.mixer.heads)))
            assert not lp.mixer.heads or plan.shape.is_linear(i)
            if i > 0 and lp.mixer.heads:  # output gate from ONE1: what the heads write stays class 2
                assert lp.mixer.z_ref == plan.layout.references[1]
