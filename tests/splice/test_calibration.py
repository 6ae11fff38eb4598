"""The calibration's arithmetic (``splice/calibration.py``) against what it stands for.

Oracles: float64 NumPy over the values a layer holds (``s q + beta`` per group, written
here from the affine format's definition, not taken from the code), and mlx-lm's own
forward pass and output layer over the same base."""

from __future__ import annotations

import math

import mlx.core as mx
import mlx.nn as nn
import numpy as np
import pytest

from qwengpu_mlx.runtime.checkpoint import random_config
from qwengpu_mlx.splice.calibration import HostLinear, final_states, host_matmuls, output_layer_logsumexp
from qwengpu_mlx.splice.logits import base_logits, final_hidden, suppression_row
from qwengpu_mlx.splice.random_base import qwen_like_weights

VOCAB = 3000


def _unpacked(q) -> np.ndarray:
    """A 4-bit affine layer's values, from its packed codes, scales and biases (float64)."""
    words = np.array(q.weight).astype(np.uint64)
    codes = (words[..., None] >> (4 * np.arange(8, dtype=np.uint64))) & 0xF
    codes = codes.reshape(words.shape[0], -1).astype(np.float64)
    s = np.repeat(np.array(q.scales.astype(mx.float32)).astype(np.float64), q.group_size, axis=1)
    b = np.repeat(np.array(q.biases.astype(mx.float32)).astype(np.float64), q.group_size, axis=1)
    return s * codes + b


@pytest.mark.parametrize("quantized", [False, True], ids=["bf16", "4-bit"])
def test_a_host_product_is_the_exact_product_rounded_to_bfloat16(quantized):
    lin = nn.Linear(2048, 384, bias=False)
    lin.weight = (mx.random.normal((384, 2048), key=mx.random.key(1)) * 0.05).astype(mx.bfloat16)
    layer = lin.to_quantized(group_size=64, bits=4) if quantized else lin
    x = mx.random.normal((16, 2048), key=mx.random.key(2)).astype(mx.bfloat16)
    w = _unpacked(layer) if quantized else np.array(lin.weight.astype(mx.float32)).astype(np.float64)
    exact = np.array(x.astype(mx.float32)).astype(np.float64) @ w.T
    got = HostLinear(layer)(x)
    assert got.dtype == mx.bfloat16
    # within one bfloat16 rounding (2^-8 relative, 8 significant bits) of the exact product, plus
    # what float32 sums of 2,048 terms add: 2^-(8-2) is the allowance logits.py keeps
    err = np.abs(np.array(got.astype(mx.float32)) - exact)
    assert np.all(err <= 2.0 ** -8 * np.abs(exact) + 2.0 ** -16 * np.abs(exact).max()), err.max()


def _base(bits: int | None):
    from mlx_lm.models.qwen3_5 import Model, ModelArgs

    cfg = random_config(256, 4, vocab_size=VOCAB, intermediate=512, linear_key_heads=4, linear_value_heads=4,
                        linear_key_dim=32, linear_value_dim=32, heads=4, kv_heads=2, head_dim=32)
    model = Model(ModelArgs.from_dict({"model_type": "qwen3_5", "text_config": cfg, "tie_word_embeddings": True}))
    model.load_weights(list(qwen_like_weights(cfg, seed=3, dtype=mx.bfloat16).items()), strict=True)
    if bits:
        nn.quantize(model, group_size=64, bits=bits)
    mx.eval(model.parameters())
    return model


@pytest.fixture(scope="module", params=[None, 4], ids=["bf16", "4-bit"])
def base(request):
    return _base(request.param)


def test_states_and_log_normalizers_match_mlx_lm_s_own_pass(base):
    """Over 700 positions (two chunks with a cache): the final states as mlx-lm's own
    forward pass gives them and the full-vocabulary logsumexp of its own output layer,
    up to rounding; mlx-lm's CPU ``quantized_matmul`` sums in bfloat16 (tests' own
    measurement: 11% of the largest product off the exact one at 2,048 inputs), so the
    4-bit base's states are compared through their log-normalizers and norms."""
    tokens = np.random.default_rng(1).integers(0, VOCAB, 700).tolist()
    ref_h = final_hidden(base, tokens)
    ref_lse = np.array(mx.logsumexp(base_logits(base, ref_h), axis=-1))
    ref_h = np.array(ref_h.astype(mx.float32))
    h = final_states(base, tokens)
    lse, largest = output_layer_logsumexp(base, h)
    assert h.shape == ref_h.shape and lse.shape == (700,)
    assert np.abs(lse - ref_lse).max() < 0.02
    if not hasattr(base.language_model.model.embed_tokens, "scales"):  # mlx-lm's bf16 matmul sums in float32
        assert np.allclose(np.linalg.norm(h, axis=1), np.linalg.norm(ref_h, axis=1), rtol=2.0 ** -6)
    embed = base.language_model.model.embed_tokens
    w = _unpacked(embed) if hasattr(embed, "scales") else np.array(embed.weight.astype(mx.float32)).astype(np.float64)
    z = h.astype(np.float64) @ w.T  # the exact logits of these states, in float64
    top = z.max(axis=1)
    assert np.allclose(lse, top + np.log(np.exp(z - top[:, None]).sum(axis=1)), rtol=0, atol=1e-5)
    assert np.allclose(largest, np.abs(z).max(axis=1), rtol=1e-5)


def test_the_base_s_layers_are_put_back(base):
    before = {k: type(m) for k, m in base.named_modules()}
    with host_matmuls(base):
        assert any(isinstance(m, HostLinear) for _, m in base.named_modules())
    assert {k: type(m) for k, m in base.named_modules()} == before


def test_calibration_reports_each_chunk_with_its_count(base):
    heard = []
    sup = suppression_row(base, np.random.default_rng(2).integers(0, VOCAB, 600).tolist(), 10411,
                          progress=lambda what, done, total: heard.append((what, done, total)))
    positions = [(d, t) for w, d, t in heard if "text" in w]
    rows = [(d, t) for w, d, t in heard if "vocabulary" in w]
    assert positions == [(512, 600), (600, 600)]
    assert rows[-1] == (VOCAB, VOCAB) and len(rows) >= 1
    assert sup.positions == 600 and sup.margin > 0


def test_the_launch_mass_mlx_lm_computes_stays_under_the_target(base):
    """The guarantee itself, through mlx-lm's arithmetic: at every calibration position,
    the launch tokens' total probability with the row as the checkpoint holds it."""
    tokens = np.random.default_rng(4).integers(0, VOCAB, 300).tolist()
    sup = suppression_row(base, tokens, 10411)
    h = final_hidden(base, tokens)
    lse = np.array(mx.logsumexp(base_logits(base, h), axis=-1)).astype(np.float64)
    launch = np.array((h @ mx.array(sup.row.astype(np.float32)).astype(h.dtype)).astype(mx.float32))
    mass = np.exp(math.log(10411) + launch - lse)
    assert mass.max() <= sup.target, mass.max()
