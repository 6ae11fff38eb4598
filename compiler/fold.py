"""The fold stage: a scheduled logical plan onto a dense shape's physical dims.

The compact path runs the compiler's logical plan (one residual dim per value). A
standard checkpoint has a fixed hidden size, intermediate size and head count in every
layer, so for one the plan is scheduled a little below the target MLP width (the clear
gates of dim reuse need room), its values folded onto physical dims
(``compiler.reuse``), and its builders given the shape's head geometry. This module is
one attempt at one share of the width; ``compiler.pipeline`` tries the shares in turn.

Every refusal is a :class:`~compiler.sizing.DoesNotFit` whose ``misfits`` name the
resource (``"residual"``, ``"mlp"``, ...): callers branch on those fields.
"""

from __future__ import annotations

from dataclasses import replace

from qwengpu_mlx.compiler.assemble import CircuitPlan, Shape
from qwengpu_mlx.compiler.reuse import Reuse, reuse_dims
from qwengpu_mlx.compiler.sizing import DoesNotFit, Misfit, needs, shape_misfits

SPREAD_SHARES = (0.8, 0.75, 0.85, 0.7, 0.9)
"""Shares of the target MLP width the logical gates are spread to, tried in turn: the
rest is room for the clear gates of dim reuse, and how many dims the fold needs depends
on where that room falls."""


def spread_units(shape: Shape, share: float) -> int:
    """The MLP cap for the logical gates at ``share`` of the shape's width (an even count of units)."""
    return int(shape.intermediate * share) // 2 * 2


def fold_onto(plan: CircuitPlan, shape: Shape) -> Reuse:
    """``plan``'s values folded onto physical dims; DoesNotFit if another width of the shape is short.

    The residual is the one width the fold itself decides (the logical plan allocates far
    more dims than it needs), so it is checked on the result (:func:`residual_misfit`).
    """
    problems = [m for m in shape_misfits(needs(plan), shape) if m.resource != "residual"]
    if problems:
        raise DoesNotFit(problems)
    return reuse_dims(plan, units=shape.intermediate)


def residual_misfit(r: Reuse, shape: Shape) -> Misfit | None:
    """The residual misfit of a fold (None: its physical dims fit the shape's hidden size)."""
    if r.physical <= shape.hidden:
        return None
    return Misfit("residual", r.physical, shape.hidden,
                  f"residual: {r.physical} dims after reuse ({r.logical} values), the shape has {shape.hidden}")


def fit_shape(plan: CircuitPlan, shape: Shape) -> None:
    """Give a folded plan and its builders the shape's widths (the checkpoint's geometry)."""
    plan.shape = replace(shape)
    plan.layout.hidden = shape.hidden
    for lp in plan.layers:
        if lp.mlp is not None:
            lp.mlp.intermediate = shape.intermediate
        if lp.mixer is not None:
            lp.mixer.H, lp.mixer.Dk, lp.mixer.Dv = shape.linear_heads, shape.key_dim, shape.value_dim
