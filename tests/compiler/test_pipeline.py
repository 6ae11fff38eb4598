"""The compiler's one entry point: ``compile_machine`` gives the same weights as the stages did,
and a shape that does not fit is refused with typed fields, not a message to parse."""

from __future__ import annotations

from dataclasses import replace

import pytest

from qwengpu_mlx.runtime.circuit_cache import fingerprint
from qwengpu_mlx.compiler.compact import compact
from qwengpu_mlx.compiler.pipeline import CompiledMachine, compile_machine, logical_circuit
from qwengpu_mlx.compiler.schedule import ScheduleError
from qwengpu_mlx.compiler.sizing import QWEN35_2B, DoesNotFit, Misfit
from qwengpu_mlx.core.machine import PUBLISHED_MACHINE, ONE_SLOT_MACHINE

BEFORE_REFACTOR = {
    "default": "c40377e14beeb75bb8e5ce48bb9858743444eeb77833bbc364a452c48ac613cc",
    "one-slot": "9a8486a49bf0ed2c273945c0319d9dc45657fc57b7fddba12b9d75cfcc5eef7e",
}
"""The compact circuits' fingerprints (updated for the short records and ``VALU``, which
change the emission and register-write weights; then for ``memory_heads``, a tuple of
heads where one ``memory_head`` was: every array the
same, checked by hashing the arrays alone before and after; then for the narrow schedule
keeping its shape's heads per layer, which moves heads between layers: the same launches
token for token).
A change meant to change the weights (a new circuit feature, fewer tokens per launch)
updates them in the same commit and says so; a refactor never does."""

FOLDED_ONE_SLOT = "085639aa60069f8dae9dbdaf02d39ca6f5e045299f80f9c9369d0d2124a72f2b"
"""The one-slot machine folded onto Qwen3.5-2B's shape, before the pipeline (``dense_plan``)."""


@pytest.mark.parametrize("name,machine", [("default", PUBLISHED_MACHINE), ("one-slot", ONE_SLOT_MACHINE)])
def test_compile_machine_at_the_narrow_shape_gives_the_same_weights(name, machine):
    cm = compile_machine(machine)
    assert isinstance(cm, CompiledMachine) and not cm.folded and cm.reuse is None
    assert cm.plan is cm.circuit.plan and cm.schedule.mlps_spread
    cc = compact(cm.plan)
    cc.memory_heads = cm.circuit.memory_heads
    assert fingerprint(cc) == BEFORE_REFACTOR[name]
    assert fingerprint(cm.compact()) == BEFORE_REFACTOR[name]


def test_compile_machine_folds_a_dense_shape_to_the_same_weights():
    cm = compile_machine(ONE_SLOT_MACHINE, QWEN35_2B)
    assert cm.folded and cm.plan is cm.reuse.plan and cm.plan.shape == QWEN35_2B
    assert cm.reuse.physical <= QWEN35_2B.hidden and cm.share is not None
    assert fingerprint(cm.compact()) == FOLDED_ONE_SLOT


def test_a_residual_too_narrow_is_a_typed_misfit():
    narrow = replace(QWEN35_2B, hidden=1536)
    with pytest.raises(DoesNotFit) as e:
        compile_machine(ONE_SLOT_MACHINE, narrow)
    (m,) = e.value.misfits
    assert isinstance(m, Misfit) and m.resource == "residual" and m.has == 1536 and m.need > 1536
    assert e.value.resources == ("residual",)


def test_short_state_rows_are_a_typed_misfit_before_any_fold():
    with pytest.raises(DoesNotFit) as e:
        compile_machine(ONE_SLOT_MACHINE, replace(QWEN35_2B, key_dim=64))
    assert e.value.resources == ("key_dim",)
    (m,) = e.value.misfits
    assert m.has == 64 and m.need > 64


def test_mlps_that_cannot_be_spread_are_a_typed_schedule_outcome():
    mc, outcome = logical_circuit(ONE_SLOT_MACHINE, units=1024)
    assert not outcome.mlps_spread and isinstance(outcome.mlp_error, ScheduleError)
    assert outcome.units == 1024 and mc.memory_heads  # the outcome is returned; the circuit is what was built
    with pytest.raises(DoesNotFit) as e:  # the fold retries at the full width, then names the MLP
        compile_machine(ONE_SLOT_MACHINE, replace(QWEN35_2B, intermediate=1024))
    assert "mlp" in e.value.resources
