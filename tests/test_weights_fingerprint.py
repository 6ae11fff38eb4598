"""The compiler's refactors keep the weights bit-identical.

The fingerprints below were taken from the compact circuits of the commit before the
runtime/compiler refactor (issue 10). A change that is meant to change the weights
(a new circuit feature, fewer tokens per launch) updates them in the same commit and
says so; a refactor never does.
"""

import pytest

from qwengpu_mlx.circuit_cache import fingerprint
from qwengpu_mlx.machine import DEFAULT_MACHINE, ONE_SLOT_MACHINE

BEFORE_REFACTOR = {
    "default": "30328f00ec897210a898dce911edcff9cd2d2b444cef3c9bcf9f7a0319b35d6a",
    "one-slot": "6c964729a2b9c3d950b8d020e6281e9e161630c92b6d3faa1961efafe53f8846",
}


@pytest.mark.parametrize("name,machine", [("default", DEFAULT_MACHINE), ("one-slot", ONE_SLOT_MACHINE)])
def test_compact_circuit_unchanged(name, machine):
    from qwengpu_mlx.compiler.compact import compact
    from qwengpu_mlx.compiler.machine_circuit import build_machine_circuit

    mc = build_machine_circuit(machine)
    cc = compact(mc.plan)
    cc.memory_head = tuple(mc.memory_head)
    assert fingerprint(cc) == BEFORE_REFACTOR[name]
