"""Small hand-built circuit plans for compiler tests."""

from __future__ import annotations

import numpy as np

from qwengpu_mlx.compiler.assemble import CircuitPlan, Shape
from qwengpu_mlx.compiler.residual import ResidualLayout


def two_token_plan(shape: Shape, names: str) -> tuple[CircuitPlan, list[int]]:
    """A plan with one residual dim per letter of ``names`` and two circuit tokens:
    ``t0`` and ``t1``, which also carries the bit of the first dim. Returns the dims."""
    lay = ResidualLayout(shape.hidden)
    dims = [lay.alloc(n, 1)[0] for n in names]
    plan = CircuitPlan(shape, lay)
    plan.vocab = ["t0", "t1"]
    plan.embedding = np.zeros((2, shape.hidden), np.float32)
    plan.embedding[:, lay.ONE] = plan.levels.K
    plan.embedding[1, dims[0]] = 1.0
    return plan, dims
