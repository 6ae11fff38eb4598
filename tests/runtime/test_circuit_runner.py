"""The fast runner (``qwengpu_mlx/runtime/circuit_runner.py``: live dims only, merged and sparse products,
paired gates, a compiled step) against the wide one it replaced (``tests/support/runner_wide.py``): the
same launch tokens, the same smallest gate margin, the same memory, on launches that
exercise divergence, shuffles and atomics. The full representative subset runs in
``bench/profile_step.py --subset`` (the wide runner is too slow for the suite)."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

from qwengpu_mlx.core.machine import PUBLISHED_MACHINE
from qwengpu_mlx.runtime.circuit_runner import CircuitRunner, live_dims
from qwengpu_mlx.runtime.native_runner import PackedRunner
from tests.support.runner_wide import WideCircuitRunner
from tests.support.launching import on_runner
from qwengpu_mlx.runtime.sparse_product import Product


@pytest.mark.parametrize("name", ["dot"])
def test_fast_and_wide_runners_write_the_same_launch(name, example_launch, store):
    spec, prog, fast = example_launch(name)  # the session's launch, on the store's (fast) runner
    # the store's fast runner: the circuit runner, or the native step's pack it saved once trusted
    # (another test process may have saved it into the shared cache first)
    assert isinstance(store.runner(PUBLISHED_MACHINE), (CircuitRunner, PackedRunner))
    wide = on_runner(prog, WideCircuitRunner(store.compact(PUBLISHED_MACHINE), PUBLISHED_MACHINE), check=True)
    assert fast.tokens == wide.tokens
    assert fast.memory == wide.memory
    assert fast.min_margin == pytest.approx(wide.min_margin, abs=1e-6)
    assert fast.check.exact and wide.check.exact


def test_the_narrow_residual_holds_every_dim_the_circuit_touches(store):
    cc = store.compact(PUBLISHED_MACHINE)
    live = set(live_dims(cc).tolist())
    for cl in cc.layers:
        for block in (cl.mixer, cl.mlp):
            if block is not None:
                assert set(block.inputs.tolist()) <= live and set(block.outputs.tolist()) <= live
    assert set(cc.embedding_dims.tolist()) <= live and cc.one in live
    assert len(live) < cc.hidden // 10  # the point: most of the wide residual is never touched


@pytest.mark.parametrize("density", [0.002, 0.3])
def test_a_product_gives_the_dense_result_in_either_form(density):
    rng = np.random.default_rng(7)
    W = (rng.random((96, 40)) < density) * rng.integers(-8, 9, (96, 40)).astype(np.float32)
    x = rng.integers(-5, 6, (3, 40)).astype(np.float32)
    p = Product(W, targets=np.arange(96) * 2)
    assert p.dense == (density > 0.1)  # the cost model picks the sparse form only for few non-zeros
    want = x @ W.T  # small integers: every order of the sum is exact
    assert np.array_equal(np.array(p(mx.array(x))), want)
    into = np.array(p.add_into(mx.ones((3, 200)), mx.array(x)))
    assert np.array_equal(into[:, ::2][:, :96], 1 + want) and np.all(into[:, 1::2] == 1)
