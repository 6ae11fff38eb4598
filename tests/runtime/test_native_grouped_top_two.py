"""The greedy token from the logits of the token kinds that can hold it.

The native step finds a launch token's greedy pair (the first index of the largest logit
and its margin over the runner-up) from the rows of the spans whose weight bounds reach
the runner-up (``circuit_step.cpp``'s ``top_two_grouped``), skipping the rest. Expected
values: the same pair from every row (``RowGroups::apply``, the step's tested logits, then
the one-pass ``top_two_of``), on products built here with the tied logits' shape (shared
leading columns that give each token kind its partial sum, then each kind's own columns)
and inputs chosen to tie rows across spans and kinds, to cancel, and to hold zeros.
"""

import numpy as np
import pytest

from qwengpu_mlx.runtime.native_step import _Blobs
from qwengpu_mlx.runtime.sparse_product import Product


def _logits_product(rng, groups: int, lead: int, own: int, integer: bool) -> np.ndarray:
    """[rows, lead + own]: each group's rows share random non-zero leading weights; each
    group's rows use a few of the ``own`` columns, with weights of a field's bits (+-1),
    small integers, or random floats, some rows without a weight there."""
    sizes = rng.integers(1, 400, size=groups)
    W = np.zeros((int(sizes.sum()), lead + own), np.float32)
    start = 0
    for size in sizes:
        rows = slice(start, start + size)
        W[rows, :lead] = rng.integers(1, 5, size=lead) * rng.choice([-1, 1], size=lead)
        for j in rng.choice(own, size=rng.integers(1, min(own, 8) + 1), replace=False):
            kind = rng.integers(3)
            if kind == 0:  # a field's bit, bipolar over the group's rows
                bit = rng.integers(0, 9)
                col = np.where((np.arange(size) >> bit) & 1, 1.0, -1.0)
            elif kind == 1 or integer:
                col = rng.integers(-3, 4, size=size).astype(np.float64)
            else:
                col = rng.standard_normal(size)
            col[rng.random(size) < 0.1] = 0.0
            W[rows, lead + j] = col
        start += size
    return W


def _run(module, W: np.ndarray, v: np.ndarray):
    blobs = _Blobs()
    p = Product(W)
    program = blobs.product(p) + blobs.row_groups(p, span=64)
    floats, ints = blobs.arrays()
    return module.logits_top_two(program, floats, ints, np.ascontiguousarray(v, np.float32))


@pytest.mark.parametrize("seed", range(12))
def test_the_grouped_pair_is_every_rows_pair(module, seed):
    rng = np.random.default_rng(seed)
    integer = seed % 2 == 0  # integer weights and inputs: exact ties across spans and kinds
    W = _logits_product(rng, groups=int(rng.integers(2, 18)), lead=int(rng.integers(1, 6)), own=24, integer=integer)
    for trial in range(40):
        v = rng.integers(-2, 3, size=W.shape[1]).astype(np.float32) if integer else \
            (rng.standard_normal(W.shape[1]) * 10.0 ** rng.integers(-3, 3)).astype(np.float32)
        v[rng.random(W.shape[1]) < 0.3] = 0.0
        every, grouped, decided = _run(module, W, v)
        assert decided
        assert grouped == every, (seed, trial)


def test_ties_take_the_first_row_and_a_zero_margin(module):
    """Two kinds whose best rows are equal: the first of them, margin 0, wherever the
    search starts (the later kind's bound is the higher one)."""
    W = np.zeros((300, 3), np.float32)
    W[:100, 0], W[100:, 0] = 1.0, 2.0  # two kinds by the leading column
    W[:100, 1] = np.where(np.arange(100) == 70, 3.0, -1.0)  # kind 0: row 70 is 1 + 3 = 4
    W[100:, 2] = np.where(np.arange(200) == 150, 2.0, 0.5)  # kind 1: row 250 is 2 + 2 = 4, others 2.5
    every, grouped, decided = _run(module, W, np.ones(3, np.float32))
    assert decided and grouped == every == (70, 0.0)


def test_a_non_finite_input_takes_every_row(module):
    rng = np.random.default_rng(3)
    W = _logits_product(rng, groups=4, lead=2, own=8, integer=True)
    v = np.ones(W.shape[1], np.float32)
    v[-1] = np.inf
    _, _, decided = _run(module, W, v)
    assert not decided


def test_rows_without_shared_columns_take_every_row(module):
    """No leading column every row holds: no groups, nothing to bound."""
    W = np.eye(20, dtype=np.float32)
    every, _, decided = _run(module, W, np.arange(20, dtype=np.float32))
    assert not decided and every == (19, 1.0)
