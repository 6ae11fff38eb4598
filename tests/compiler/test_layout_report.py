"""``layout_report``: the layout table plus, per layer, the stages that placed its parts.

The recording itself never changes a weight (``test_pipeline.py`` compares the compiled
circuits with fingerprints taken before it).
"""

from __future__ import annotations

import pytest

from qwengpu_mlx.compiler.layout_report import layout_report
from qwengpu_mlx.compiler.pipeline import compile_machine
from qwengpu_mlx.compiler.placement import GATE, HEAD, UNRECORDED
from qwengpu_mlx.compiler.sizing import QWEN35_2B
from qwengpu_mlx.core.machine import ONE_SLOT_MACHINE


@pytest.fixture(scope="module")
def compiled():
    return compile_machine(ONE_SLOT_MACHINE)


def _counts(lp):
    return len(lp.mlp.gates) if lp.mlp else 0, len(lp.mixer.heads) if lp.mixer else 0


def test_every_part_of_every_layer_has_the_stage_that_placed_it(compiled):
    stages = set()
    for lp in compiled.plan.layers:
        gates, heads = _counts(lp)
        assert sum(n for (_, kind), n in lp.placed.items() if kind == GATE) == gates
        assert sum(n for (_, kind), n in lp.placed.items() if kind == HEAD) == heads
        moved = sum(n for (stage, _), n in lp.placed.items() if stage == "schedule")
        assert sum(lp.moved_in.values()) == moved  # every moved part names the stage that built it
        stages |= {stage for stage, _ in lp.placed}
    assert UNRECORDED not in stages
    assert {"context", "fetch", "control.state", "control.early", "slot0", "control.late", "latch", "emit",
            "finalize", "schedule"} <= stages
    layer0 = compiled.plan.layers[0]
    assert layer0.placed[("context", HEAD)] > 0 and layer0.placed[("finalize", GATE)] > 0
    assert ("schedule", GATE) not in layer0.placed  # layer 0 stays put


def test_the_report_is_the_layout_table_then_a_line_per_layer_of_stages(compiled):
    text = layout_report(compiled)
    assert text == layout_report(compiled.circuit)  # at the narrow shape the final plan is the circuit's
    head, placed = text.split("# placed by stage", 1)
    assert head.startswith(f"# circuit: {len(compiled.plan.layers)} layers")
    assert "# residual subspaces (start..end  name)" in head
    rows = placed.splitlines()[2:]
    assert len(rows) == len(compiled.plan.layers)
    assert rows[0].split()[0] == "0" and "context 7h" in rows[0]
    assert any("schedule" in r and "(from " in r for r in rows)


def test_the_folded_plan_names_its_clear_gates():
    cm = compile_machine(ONE_SLOT_MACHINE, QWEN35_2B)
    clears = sum(lp.placed[("fold.clear", GATE)] for lp in cm.plan.layers)
    assert clears == cm.reuse.clear_gates
    assert "fold.clear" in layout_report(cm)
