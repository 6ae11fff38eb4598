"""Quiet heads on the sparse native step: a head without a state whose key rows of the input
projection were zeros for three steps and are zeros again has no key, and the step skips
its key's conv (and its query's, when those rows are quiet too: ``quiet_now`` in
``circuit_step.cpp``). The large machine meets such heads every token (memory parts a
kernel never touches) and wakes some of them again (a key row turns non-zero), so a skip
that left a conv state other than the dense step's would show at the next waking.
Expected values: the dense step (every channel and head, no skip) over the same tokens,
every logit, conv state and recurrent state bit for bit after every token (the sparse
step's conv states as :meth:`NativeStep.settled` reads them: the values of heads that did
not run rebuilt).
"""

import numpy as np
import pytest

from qwengpu_mlx.core.machine import LARGE_MACHINE, PUBLISHED_MACHINE
from tests.support.native_pair import step_pair


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint32)  # float32 -> its bit patterns: -0 and +0 differ


@pytest.mark.parametrize("machine,name", [(LARGE_MACHINE, "dot"), (PUBLISHED_MACHINE, "dot")])
def test_quiet_heads_skip_and_wake_with_the_dense_steps_bits(store, module, machine, name):
    pair = step_pair(store, module, machine, name)
    rows, sparse, dense = pair.rows, pair.sparse, pair.dense
    sparse.start_profile()
    ours, theirs = sparse.zeros(), dense.zeros()
    for i, t in enumerate(pair.fed):
        x = rows.embed(t, sparse.width)
        (a, _), (b, _) = sparse(x, ours, False), dense(x, theirs, False)
        assert np.array_equal(_bits(a), _bits(b)), f"logits of token {i}"
        assert np.array_equal(_bits(sparse.settled(ours)), _bits(theirs[0])), f"conv states after token {i}"
        assert np.array_equal(_bits(ours[1]), _bits(theirs[1])), f"recurrent states after token {i}"
    _, work = sparse.profile_report()
    assert work["heads quiet (no key conv)"] > 20  # per token: the untouched memory parts' heads (those
    # whose values alone are live are not even visited)
    assert work["quiet keys woken"] > 0.5  # and heads that were quiet run again, per token


def test_a_quiet_count_waits_three_steps_after_a_non_zero_key_row(store, module):
    """A stateless quiet head whose key row held a non-zero one step ago (planted in both
    steps' conv states, the sparse step's activity bytes set as that step would have set
    them) is not quiet for the next three steps: its conv state moves the value on as the
    dense step does. A count that trusted one zero step would leave the value in place."""
    pair = step_pair(store, module, LARGE_MACHINE)
    rows, sparse, dense, fed = pair.rows, pair.sparse, pair.dense, pair.fed
    ours, theirs = sparse.zeros(), dense.zeros()
    for t in fed[:-12]:
        x = rows.embed(t, sparse.width)
        sparse(x, ours, False), dense(x, theirs, False)
    planted = 0
    for L, ((_, C), co, (_, H, _, Dk), _) in sorted(sparse.layout.items()):
        act = sparse.activity(ours, L)
        for h in np.flatnonzero((act["key_quiet"] >= 3) & (act["head_state"] == 0))[:3]:
            j = H * Dk + h * Dk  # the head's first key channel, its newest conv value
            for packed in (ours, theirs):  # the conv rows are a ring: the newest is two after the oldest
                newest = (int(dense.activity(packed, L)["oldest_row"][0]) + 2) % 3
                packed[0][co + newest * C + j] = 1.0
            act["channels"][j], act["head_conv"][h], act["key_quiet"][h] = 1, 1, 0
            planted += 1
    assert planted > 10
    for i, t in enumerate(fed[-12:]):
        x = rows.embed(t, sparse.width)
        (a, _), (b, _) = sparse(x, ours, False), dense(x, theirs, False)
        assert np.array_equal(_bits(sparse.settled(ours)), _bits(theirs[0])), f"conv states after step {i}"
        assert np.array_equal(_bits(ours[1]), _bits(theirs[1])), f"recurrent states after step {i}"
        assert np.array_equal(_bits(a), _bits(b)), f"logits of step {i}"
