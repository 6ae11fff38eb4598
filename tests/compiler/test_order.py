"""The compiler refuses a plan whose gate or head reads a dim written only in its own block or above it.

Such a plan compiles to weights that run and compute something else (a gate in MLP L reading
another gate of MLP L sees a zero there); ``compiler.order.check_order`` names the read.
"""

from __future__ import annotations

import pytest

from qwengpu_mlx.compiler.assemble import CircuitPlan
from qwengpu_mlx.compiler.machine_circuit import NARROW
from qwengpu_mlx.compiler.order import check_order
from qwengpu_mlx.compiler.residual import ResidualLayout
from qwengpu_mlx.compiler.levels import DEFAULT_LEVELS


def _plan() -> CircuitPlan:
    return CircuitPlan(NARROW, ResidualLayout(NARROW.hidden), DEFAULT_LEVELS)


def test_a_gate_may_read_what_an_mlp_below_it_wrote():
    plan = _plan()
    a, b = plan.layout.alloc("a", 1)[0], plan.layout.alloc("b", 1)[0]
    plan.mlp(0).gate("first", [(plan.layout.ONE, 1)], 1, [(a, 1)])
    plan.mlp(1).gate("second", [(a, 1)], 1, [(b, 1)])
    check_order(plan)


def test_a_gate_reading_its_own_mlp_is_refused_with_its_name():
    plan = _plan()
    a, b = plan.layout.alloc("a", 1)[0], plan.layout.alloc("b", 1)[0]
    plan.mlp(1).gate("first", [(plan.layout.ONE, 1)], 1, [(a, 1)])
    plan.mlp(1).gate("second", [(a, 1)], 1, [(b, 1)])
    with pytest.raises(ValueError, match=r"gate second \(MLP 1\) reads a\[0\], which layer 1's MLP writes first"):
        check_order(plan)


def test_a_head_reading_its_own_layers_mlp_is_refused():
    plan = _plan()
    a, out = plan.layout.alloc("a", 1)[0], plan.layout.alloc("out", 1)[0]
    plan.mlp(1).gate("g", [(plan.layout.ONE, 1)], 1, [(a, 1)])
    h = plan.mixer(1).head("reader", 1, 1)
    h.query(0, a)
    h.read_bit(0, out)
    with pytest.raises(ValueError, match=r"head reader \(layer 1\) reads a\[0\]"):
        check_order(plan)


def test_a_dim_nothing_writes_reads_as_zero_anywhere():
    plan = _plan()
    never, b = plan.layout.alloc("never", 1)[0], plan.layout.alloc("b", 1)[0]
    plan.mlp(2).gate("g", [(never, 1)], 1, [(b, 1)])
    check_order(plan)
