"""Run a circuit on hand-made residual inputs: the test bench for circuit pieces.

``encode(plan, values)`` builds the embedding of one circuit token that carries the
given words/bits (ONE = K plus the bits), ``run(plan, rows)`` pushes a batch of such
tokens through the real MLX model as one sequence and returns the residual after every
layer, and ``read_word`` decodes a 32-bit word from a residual row (with the worst
distance of any bit from its exact 0/1 level, for margin reports).
"""

from __future__ import annotations

import numpy as np

from qwengpu_mlx.compiler.residual import Subspace


def encode(plan, values: dict) -> np.ndarray:
    """One token's embedding: ``values`` maps a Subspace (an int, its bits) or a dim (0/1)."""
    v = np.zeros(plan.shape.hidden, np.float64)
    v[plan.layout.ONE] = plan.levels.K
    for key, val in values.items():
        if isinstance(key, Subspace):
            val = int(val) & ((1 << key.width) - 1)
            for i in range(key.width):
                v[key[i]] = (val >> i) & 1
        else:
            v[int(key)] = float(val)
    return v


def run(plan, rows: list[np.ndarray], model=None) -> dict:
    """Run the token rows through the plan's model in one sequence; see ``probe``."""
    from qwengpu_mlx.runtime.layer_probe import load_plan, probe_embeddings

    model = model or load_plan(plan)
    return probe_embeddings(model, np.stack(rows))


def read_word(resid_row: np.ndarray, space: Subspace, signed: bool = False) -> tuple[int, float]:
    """(value, worst |bit - round(bit)|) of a word in one residual row."""
    bits = resid_row[space.dims]
    rounded = np.rint(bits)
    err = float(np.max(np.abs(bits - rounded))) if len(bits) else 0.0
    val = sum(int(b) << i for i, b in enumerate(rounded.astype(int)) if b)
    if signed and space.width and val >> (space.width - 1):
        val -= 1 << space.width
    return val, err
