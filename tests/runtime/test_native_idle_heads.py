"""Idle heads on the sparse native step: a head with live key channels whose key is far below
SiLU's cut-off (-88) has no key, and the step skips its SiLUs (``may_key`` in
``circuit_step.cpp``). Expected values: the dense step (every channel's SiLU, every head)
over the same tokens, bit for bit; the profile shows such heads were met and skipped.
"""

import numpy as np

from qwengpu_mlx.core.machine import LARGE_MACHINE
from tests.support.native_pair import step_pair


def test_idle_heads_are_met_and_their_skip_changes_no_bit(store, module):
    pair = step_pair(store, module, LARGE_MACHINE)
    rows, sparse, dense = pair.rows, pair.sparse, pair.dense
    sparse.start_profile()
    states = sparse.zeros(), dense.zeros()
    for i, t in enumerate(pair.fed):
        x = rows.embed(t, sparse.width)
        (a, ma), (b, mb) = sparse(x, states[0], True), dense(x, states[1], True)
        assert np.array_equal(a.view(np.uint32), b.view(np.uint32)) and ma == mb, f"token {i}"
    _, work = sparse.profile_report()
    idle = work["heads visited"] - work["heads run (key or state)"]
    live_keys = work["conv outputs non-zero"]
    assert idle > 10 and live_keys > 0  # heads with live channels and no key were met, per token
    assert np.array_equal(states[0][1].view(np.uint32), states[1][1].view(np.uint32))
