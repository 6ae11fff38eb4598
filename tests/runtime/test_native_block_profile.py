"""The native step's per-layer profile (``bench/profile_step.py --machines --layers``): a
plan that times each layer block changes no bit, and names every block once. Expected
values: the same step's plain plans over the same tokens, bit for bit; the circuit's own
count of mixer and MLP layers (its pack's layout and program header)."""

import numpy as np

from qwengpu_mlx.core.machine import PUBLISHED_MACHINE
from tests.support.native_pair import step_pair


def test_timing_each_block_changes_no_bit_and_names_every_block(store, module):
    pair = step_pair(store, module, PUBLISHED_MACHINE)
    timed, plain = pair.sparse, step_pair(store, module, PUBLISHED_MACHINE).sparse
    timed.start_profile(blocks=True)
    states = timed.zeros(), plain.zeros()
    for i, t in enumerate(pair.fed):
        x = pair.rows.embed(t, timed.width)
        (a, ma), (b, mb) = timed(x, states[0], True), plain(x, states[1], True)
        assert np.array_equal(a.view(np.uint32), b.view(np.uint32)) and ma == mb, f"token {i}"
    report = timed.block_report()
    names = [name for name, _ in report]
    assert sum("mixer" in n for n in names) == len(timed.layout)
    assert sum(n.endswith("mlp") for n in names) == timed.mlp_layers
    assert names[-1] == "final norm+logits" and len(names) == len(timed.layout) + timed.mlp_layers + 1
    assert all(seconds >= 0.0 for _, seconds in report) and sum(s for _, s in report) > 0.0
    assert [int(n.split()[0][1:]) for n in names if "mixer" in n] == sorted(timed.layout)
