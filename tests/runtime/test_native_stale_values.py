"""Lazy values on the sparse native step: a head that does not run (no key and no state)
computes neither its value and z rows of the input projection nor its values' conv states;
they are stale (``values_stale``) until it runs, when the step rebuilds them from the last
three steps' normed inputs (``rebuild_values`` in ``circuit_step.cpp``). The large
machine's untouched memory parts make most of its heads such heads every token.

Expected values: the dense step (every row, channel and head, every token) over the same
tokens, every logit, conv state and recurrent state bit for bit. A stale value is never
read: one overwritten with a NaN still gives the dense step's bits, and heads made stale
at arbitrary tokens (one token after they ran, or two, or three) rebuild the dense
step's values.
"""

import numpy as np
import pytest

from qwengpu_mlx.core.machine import LARGE_MACHINE, PUBLISHED_MACHINE
from tests.support.native_pair import step_pair


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint32)  # float32 -> its bit patterns: -0 and +0 differ


def _value_channels(step, layer: int, head: int) -> np.ndarray:
    """Indices in the packed conv states of ``head``'s value channels, all three ring rows."""
    (_, C), co, (_, H, Dv, Dk), _ = step.layout[layer]
    first = 2 * H * Dk + head * Dv
    return np.concatenate([co + row * C + first + np.arange(Dv) for row in range(3)])


def _poison_stale(step, packed) -> int:
    """A NaN in every stale head's value conv states; how many heads were stale."""
    stale = 0
    for L in step.layout:
        for h in np.flatnonzero(step.activity(packed, L)["values_stale"]):
            packed[0][_value_channels(step, L, h)] = np.nan
            stale += 1
    return stale


def _assert_same(sparse, dense, ours, theirs, a, b, at: str) -> None:
    assert np.array_equal(_bits(a), _bits(b)), f"logits {at}"
    assert np.array_equal(_bits(sparse.settled(ours)), _bits(theirs[0])), f"conv states {at}"
    assert np.array_equal(_bits(ours[1]), _bits(theirs[1])), f"recurrent states {at}"


@pytest.mark.parametrize("machine", [LARGE_MACHINE, PUBLISHED_MACHINE])
def test_stale_values_are_never_read(store, module, machine):
    """Stale values overwritten with NaNs after every token: the logits and the states are
    still the dense step's, and heads were stale and were rebuilt (woken)."""
    pair = step_pair(store, module, machine)
    rows, sparse, dense = pair.rows, pair.sparse, pair.dense
    sparse.start_profile()
    ours, theirs = sparse.zeros(), dense.zeros()
    stale = 0
    for i, t in enumerate(pair.fed):
        x = rows.embed(t, sparse.width)
        (a, _), (b, _) = sparse(x, ours, False), dense(x, theirs, False)
        _assert_same(sparse, dense, ours, theirs, a, b, f"after token {i}")
        stale += _poison_stale(sparse, ours)
    _, work = sparse.profile_report()
    assert stale > 10 * len(pair.fed)  # heads per token whose values were not kept
    if machine is LARGE_MACHINE:
        assert work["heads' values rebuilt"] > 0.1  # per token: heads that ran again


def test_heads_made_stale_at_any_token_rebuild_the_dense_values(store, module):
    """Every head's values made stale (and poisoned) every third token, from an offset per
    head: a head that runs rebuilds them one, two or three tokens after it last ran or was
    rebuilt, its ring of normed inputs at each of its places; a rebuild that read the
    wrong step's inputs, or the wrong ring row, shows in the logits or the states."""
    pair = step_pair(store, module, LARGE_MACHINE)
    rows, sparse, dense = pair.rows, pair.sparse, pair.dense
    sparse.start_profile()
    ours, theirs = sparse.zeros(), dense.zeros()
    for i, t in enumerate(pair.fed[:300]):
        x = rows.embed(t, sparse.width)
        (a, _), (b, _) = sparse(x, ours, False), dense(x, theirs, False)
        _assert_same(sparse, dense, ours, theirs, a, b, f"after token {i}")
        for L in sparse.layout:
            stale = sparse.activity(ours, L)["values_stale"]
            for h in range(stale.size):
                if (i + h + L) % 3 == 0:
                    stale[h] = 1
        _poison_stale(sparse, ours)
    _, work = sparse.profile_report()
    assert work["heads' values rebuilt"] > 5  # per token: a third of the running heads
