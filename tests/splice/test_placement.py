"""A circuit matrix placed in the combined width (``weights._spread_columns``): column k
at ``dims[k]``, zeros elsewhere, whatever runs the dims come in.

Oracle: the placement written element by element here."""

from __future__ import annotations

import mlx.core as mx
import numpy as np

from qwengpu_mlx.splice.weights import _spread_columns, contiguous_runs


def test_columns_land_at_their_dims_in_runs_and_alone():
    rng = np.random.default_rng(7)
    w = rng.standard_normal((5, 12)).astype(np.float32)
    dims = np.array([40, 3, 4, 5, 6, 7, 20, 21, 9, 10, 11, 63])  # moved dims between runs, one at the end
    want = np.zeros((5, 64), np.float32)
    for k, d in enumerate(dims):
        for r in range(5):
            want[r, d] = w[r, k]
    got = _spread_columns(mx.array(w).astype(mx.bfloat16), 64, dims)
    assert got.dtype == mx.bfloat16
    assert np.array_equal(np.array(got.astype(mx.float32)), np.array(mx.array(want).astype(mx.bfloat16)
                                                                        .astype(mx.float32)))
    assert contiguous_runs(dims) == [(0, 40, 1), (1, 3, 5), (6, 20, 2), (8, 9, 3), (11, 63, 1)]
