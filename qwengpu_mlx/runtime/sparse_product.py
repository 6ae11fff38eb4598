"""A circuit matrix times a vector, stored the cheaper way: dense, or as its non-zeros.

The circuit's projections are mostly zeros (the published machine: 80 million dense
entries, 0.8 million non-zero), and on MLX's CPU back end a dense product costs about
0.5 ns per stored entry while gathering and scattering cost about 14 and 28 ns per
non-zero (measured on this project's 2-core Linux machine, ``bench/profile_step.py``).
:class:`Product` keeps whichever form the cost model prices lower. Both compute the
same sum of the same non-zero terms, only in another order; the circuit's margins
absorb the last-bit differences and a test compares the two forms token for token.
"""

from __future__ import annotations

import mlx.core as mx
import numpy as np

DENSE_NS = 0.5  # per stored entry of a dense product
GATHER_NS = 14.0  # per gathered element
SCATTER_NS = 28.0  # per scattered element


class Product:
    """``W`` ([out, in], float32) applied to the last axis of a [T, in] activation.

    ``targets``: positions in a residual of W's rows, for :meth:`add_into` (the product
    then lands in the residual in one scatter, never materialized densely)."""

    def __init__(self, W: np.ndarray, targets: np.ndarray | None = None):
        self.out, self.inp = W.shape
        rows, cols = np.nonzero(W)
        order = np.lexsort((rows, cols))  # by input, then output: a deterministic sum order
        rows, cols = rows[order], cols[order]
        in_order = np.array_equal(cols, np.arange(self.inp))  # every input read once, in order
        dense_ns = W.size * DENSE_NS + (self.out * SCATTER_NS if targets is not None else 0.0)
        sparse_ns = (0 if in_order else len(cols)) * GATHER_NS + len(cols) * SCATTER_NS
        self.dense = dense_ns <= sparse_ns
        if self.dense:
            self.w_t = mx.array(np.ascontiguousarray(W.T))
            self.targets = None if targets is None else mx.array(np.asarray(targets, np.int32))
        else:
            self.rows = mx.array(rows.astype(np.int32))
            self.vals = mx.array(W[rows, cols].astype(np.float32))
            self.cols = None if in_order else mx.array(cols.astype(np.int32))
            self.targets = None if targets is None else mx.array(np.asarray(targets)[rows].astype(np.int32))

    def arrays(self) -> list[mx.array]:
        """The arrays this product holds (memory accounting)."""
        return [a for a in vars(self).values() if isinstance(a, mx.array)]

    def _terms(self, v: mx.array) -> mx.array:
        return (v if self.cols is None else mx.take(v, self.cols, axis=1)) * self.vals

    def __call__(self, v: mx.array) -> mx.array:
        """``v @ W.T``: [T, out]."""
        if self.dense:
            return v @ self.w_t
        return mx.zeros((v.shape[0], self.out), dtype=v.dtype).at[:, self.rows].add(self._terms(v))

    def add_into(self, x: mx.array, v: mx.array) -> mx.array:
        """``x`` with ``v @ W.T`` added at the rows' target positions."""
        if self.dense:
            return x.at[:, self.targets].add(v @ self.w_t)
        return x.at[:, self.targets].add(self._terms(v))
