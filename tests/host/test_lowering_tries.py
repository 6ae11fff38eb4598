"""``lowering.Tries``: a lowering asked for fewer of its tries makes only those.

The float routines' lowering tries the kernel inlined, then each sharing level, the
last saving what is live across a call (``host/float_spill.py``). A measurement of one
level (``bench/float_cost.py``) asks for it by ``Tries``; each program it gets must still
compute the kernel's results, checked against the example's own oracle.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qwengpu_mlx.core.errors import ResourceError
from qwengpu_mlx.core.readout import read_outputs
from qwengpu_mlx.host.float_spill import Budget
from qwengpu_mlx.host.launch import compile_kernel
from qwengpu_mlx.host.lowering import SPILL_LEVEL, Tries, lower
from qwengpu_mlx.runtime.check import reference_run
from tests.support.cli import needs_clang
from tests.support.oracles import ORACLES, machine_of

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "kernels"
NAME = "float_ratios"  # fits only with its routines shared; three sharing levels, the last saving


def _lowered(tries: Tries):
    spec = json.loads((EXAMPLES / f"{NAME}.json").read_text())
    ck = compile_kernel(EXAMPLES / f"{NAME}.cu", spec["kernel"])
    m = machine_of(spec)
    prog = lower(ck.module, ck.kernel, ck.params, spec["args"], block_dim=spec["block"], grid_dim=spec["grid"],
                 machine=m, tries=tries)
    return spec, prog, m


def _exact(spec, prog, m) -> bool:
    ref = reference_run(prog, m, budget=m.step_budget)
    return ref.fault is None and read_outputs(prog, ref.memory) == ORACLES[NAME](spec)


@needs_clang
def test_inlined_alone_is_refused_where_only_sharing_fits():
    with pytest.raises(ResourceError, match="machine blocks"):
        _lowered(Tries(sharings=()))


@needs_clang
@pytest.mark.parametrize("budget", [Budget(), Budget(0, 0)], ids=["sites", "every value"])
def test_the_saving_level_alone_computes_the_kernel(budget):
    spec, prog, m = _lowered(Tries(inlined=False, sharings=(SPILL_LEVEL,), budgets=(budget,)))
    assert any((b.label or "").startswith("$froutine_") for b in prog.blocks)
    assert _exact(spec, prog, m)


@needs_clang
def test_saving_every_value_costs_more_blocks_than_saving_the_sites():
    """Each value saved is a store and a load around each call: the ROM only grows."""
    sites = _lowered(Tries(inlined=False, sharings=(SPILL_LEVEL,), budgets=(Budget(),)))[1]
    every = _lowered(Tries(inlined=False, sharings=(SPILL_LEVEL,), budgets=(Budget(0, 0),)))[1]
    assert len(every.blocks) > len(sites.blocks)


@needs_clang
def test_a_level_the_kernel_lacks_is_no_try():
    """Asking only for a level beyond the kernel's leaves nothing to try: a caller's
    mistake, never a refusal of the kernel."""
    with pytest.raises(ValueError, match="no lowering tried"):
        _lowered(Tries(inlined=False, sharings=(9,)))
