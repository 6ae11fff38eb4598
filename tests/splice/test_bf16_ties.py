"""A bfloat16 base's greedy drift through mlx-lm is its own bfloat16 ties, checked.

Through unmodified mlx-lm the combined checkpoint's float32 circuit layers promote a
bfloat16 base's stream, so the final norm and the tied logits run in float32 where the
base alone rounds them to bfloat16, and the greedy token differs at a few positions
(``bench/splice_drift.py``). Here, on the bench's small random bfloat16 base and the
shipped sample, every such position is checked against the base's own logits, with
expectations computed in this file (representable bfloat16 values counted from the
whole bfloat16 table, not with ``splice.drift``'s helpers):

* at every differing position the base's bfloat16 logits of the two tokens lie within
  one bfloat16 rounding step (equal or adjacent): the base cannot tell them apart;
* stronger, as measured: wherever the base's top logit is not exactly tied in bfloat16
  the greedy tokens agree, so every difference is an exact tie, where the base's argmax
  takes the lower index and the combined model's float32 logits pick the other one;
* ``splice.drift.bf16_ties`` reports these same positions and counts.
"""

from __future__ import annotations

import numpy as np
import pytest

import mlx.core as mx

from qwengpu_mlx.runtime.checkpoint import random_config
from qwengpu_mlx.splice.random_base import qwen_like_weights

from tests.support.circuits import build_circuit

VOCAB = 300  # bench/splice_drift.py's base


def _bf16_table() -> np.ndarray:
    """Every finite bfloat16 value, sorted, once (-0 and +0 as one)."""
    vals = (np.arange(1 << 16, dtype=np.uint32) << 16).view(np.float32)
    return np.unique(vals[np.isfinite(vals)])


TABLE = _bf16_table()


def _steps(a, b) -> np.ndarray:
    """Representable bfloat16 values passed going from ``a`` to ``b`` (both bfloat16)."""
    ia, ib = np.searchsorted(TABLE, a), np.searchsorted(TABLE, b)
    assert np.all(TABLE[ia] == a) and np.all(TABLE[ib] == b)
    return np.abs(ia - ib)


@pytest.fixture(scope="module")
def logits(tmp_path_factory):
    """The bfloat16 base's and the combined checkpoint's (through mlx-lm) logits on the
    bench's sample, as numpy [T, V] and [T, V + launch tokens]."""
    from mlx_lm.utils import load_model

    from qwengpu_mlx.splice.build import write_combined
    from qwengpu_mlx.splice.drift import mlx_lm_logits
    from qwengpu_mlx.splice.pipeline import calibration_text, sample_text
    from qwengpu_mlx.splice.combined_runner import base_model_from_config

    plan, _ = build_circuit()
    tokens = [b % VOCAB for b in sample_text().encode("utf-8")][:2048]
    calibration = [b % VOCAB for b in calibration_text().encode("utf-8")][:512]
    cfg = random_config(96, 4, vocab_size=VOCAB, intermediate=512, linear_key_heads=4, linear_value_heads=4,
                        linear_key_dim=16, linear_value_dim=32, heads=4, kv_heads=2, head_dim=16)
    base = base_model_from_config(cfg)
    base.load_weights(list(qwen_like_weights(cfg, seed=1, dtype=mx.bfloat16).items()), strict=True)
    out = tmp_path_factory.mktemp("combined")
    write_combined(out, base, {"model_type": "qwen3_5", "text_config": cfg}, plan, list(plan.vocab), calibration)
    dense, _ = load_model(out)
    b = np.concatenate([np.array(x) for x in mlx_lm_logits(base, tokens)])
    c = np.concatenate([np.array(x) for x in mlx_lm_logits(dense, tokens)])
    return b, c


def test_step_count_on_known_values():
    one_below = float(np.float32(1.0) - np.float32(2.0 ** -8))  # bfloat16's largest value under 1
    assert _steps(np.float32(1.0), np.float32(1.0 + 2.0 ** -7)) == 1
    assert _steps(np.float32(1.0), np.float32(one_below)) == 1  # across the power of two
    assert _steps(np.float32(-0.0), np.float32(0.0)) == 0
    from qwengpu_mlx.splice.drift import bf16_steps

    xs = np.array([1.0, one_below, -0.5, 0.0, -0.0, 3 * 2.0 ** -9, -2.5], np.float32)
    for x in xs:
        assert np.array_equal(bf16_steps(np.full_like(xs, x), xs), _steps(np.full_like(xs, x), xs))


def test_mlx_lm_greedy_differences_are_bf16_ties_of_the_base(logits):
    b, c = logits
    assert b.shape[1] == VOCAB and c.shape[1] > VOCAB
    assert np.array_equal(b, np.array(mx.array(b).astype(mx.bfloat16).astype(mx.float32)))  # bfloat16 values
    bt, ct = b.argmax(axis=-1), c.argmax(axis=-1)  # greedy over the combined vocabulary, as measure takes it
    top = b.max(axis=-1)
    tied = np.sum(b == top[:, None], axis=-1) >= 2  # the base's top logit held by two tokens or more
    second = np.sort(b, axis=-1)[:, -2]
    near = _steps(top, second) <= 1
    differ = np.flatnonzero(bt != ct)
    assert len(differ) > 0  # this base and sample do drift (20 positions when written); else nothing is checked
    assert np.all(ct[differ] < VOCAB)  # never a launch token
    other = b[differ, ct[differ]]
    steps = _steps(top[differ], other)
    # the hypothesis: at every difference the base's two logits are within one bfloat16 step
    assert np.all(steps <= 1), {int(p): int(s) for p, s in zip(differ, steps) if s > 1}
    assert np.all(near[differ])  # so the differences are among the base's near-ties
    # at least the non-tied positions agree: every difference is an exact tie, lower index to the base
    assert np.array_equal(bt[~tied], ct[~tied]), np.flatnonzero((bt != ct) & ~tied)
    assert np.all(steps == 0) and np.all(bt[differ] < ct[differ])
    assert np.all(c[differ, ct[differ]] > c[differ, bt[differ]])

    from qwengpu_mlx.splice.drift import bf16_ties

    t = bf16_ties(iter([mx.array(b)]), iter([mx.array(c)]), VOCAB)
    assert t.positions == len(b)
    assert [f.position for f in t.flips] == differ.tolist()
    assert [(f.base_token, f.combined_token, f.steps) for f in t.flips] == \
        list(zip(bt[differ].tolist(), ct[differ].tolist(), steps.tolist()))
    assert [f.base_other for f in t.flips] == other.tolist()
    assert t.flips_within(1) == len(differ) and t.near_ties(1) == int(near.sum()) and t.near_ties(0) == int(tied.sum())
    assert t.flips_at_top2_steps(0) == len(differ)
