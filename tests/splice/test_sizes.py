"""The size model (``splice/sizes.py``) against what ``build --base`` writes and what
unmodified mlx-lm allocates.

A small complete circuit (``test_equivalence``'s, 5 layers) goes into small random
Qwen3.5 bases, bfloat16 and 4-bit as mlx-lm quantizes. Oracles: the bytes of the
tensors in the written safetensors (the model's disk figure, part by part, exact once
it is given the circuit's formats as stored), and MLX's own peak-memory counter around
``mlx_lm.load`` and a greedy decode (the model's peak: weights, then the float32 copy
of a bfloat16 output layer that the float32 stream promotes at every token)."""

from __future__ import annotations

import glob
import json

import mlx.core as mx
import numpy as np
import pytest

from qwengpu_mlx.runtime.checkpoint import random_config
from qwengpu_mlx.splice.build import write_combined
from qwengpu_mlx.splice.random_base import qwen_like_weights
from qwengpu_mlx.splice.sizes import estimate, formats_by_module, input_widths

from tests.support.circuits import build_circuit

VOCAB = 6000  # enough rows that the output layer's float32 copy stands out of the noise


def _base(bits: int | None):
    import mlx.nn as nn
    from mlx_lm.models.qwen3_5 import Model, ModelArgs

    cfg = random_config(96, 4, vocab_size=VOCAB, intermediate=512, linear_key_heads=4, linear_value_heads=4,
                        linear_key_dim=16, linear_value_dim=32, heads=4, kv_heads=2, head_dim=16)
    full = {"model_type": "qwen3_5", "text_config": cfg, "tie_word_embeddings": True, "torch_dtype": "bfloat16"}
    model = Model(ModelArgs.from_dict(full))
    model.load_weights(list(qwen_like_weights(cfg, seed=3, dtype=mx.bfloat16).items()), strict=True)
    if bits:
        nn.quantize(model, group_size=32, bits=bits)
        full = dict(full, quantization={"group_size": 32, "bits": bits})
    mx.eval(model.parameters())
    return model, full


def _plan_vocab() -> list:
    return list(build_circuit()[0].vocab)


@pytest.fixture(scope="module", params=[None, 4], ids=["bf16", "4bit"])
def built(request, tmp_path_factory):
    plan, _ = build_circuit()
    base, cfg = _base(request.param)
    calibration = np.random.default_rng(0).integers(0, VOCAB, 256).tolist()
    out = tmp_path_factory.mktemp(f"sized-{request.param}")
    report = write_combined(out, base, cfg, plan, list(plan.vocab), calibration)
    weights = {}
    for f in glob.glob(str(out / "*.safetensors")):
        weights.update(mx.load(f))
    text = cfg["text_config"]
    formats = formats_by_module(weights, text["num_hidden_layers"], input_widths(text))
    est = estimate(cfg, report.layout.circuit_layers, len(plan.vocab), prompt_tokens=8, circuit_formats=formats)
    return out, cfg, weights, est, report


def test_the_predicted_disk_size_is_the_tensors_written(built):
    _, cfg, weights, est, report = built
    written = sum(t.nbytes for t in weights.values())
    assert written == report.bytes
    assert est.disk == written, {k: v for k, v in est.parts.items()}


def test_the_circuit_formats_read_back_are_the_tally_s(built):
    _, cfg, weights, _, report = built
    text = cfg["text_config"]
    got = formats_by_module(weights, text["num_hidden_layers"], input_widths(text))
    counts: dict[str, int] = {}
    for per in got.values():
        for fmt, n in per.items():
            counts[fmt] = counts.get(fmt, 0) + n
    assert counts == dict(report.storage.matrices)


def test_unmodified_mlx_lm_peaks_where_the_model_says(built):
    """Load: the weights; decoding: plus the output layer's float32 copy for a bfloat16
    base, nothing of the kind for a quantized one."""
    from mlx_lm.utils import load_model

    out, cfg, _, est, _ = built
    mx.synchronize()
    before = mx.get_active_memory()
    mx.reset_peak_memory()
    model, _ = load_model(out)
    loaded = mx.get_peak_memory() - before
    logits = model(mx.array([[1, 2, 3, 4, 5, 6, 7, 8]]))
    mx.eval(logits[0, -1].argmax())
    decoded = mx.get_peak_memory() - before
    copy = est.transient.get("the output layer's float32 copy", 0)
    rows, width = cfg["text_config"]["vocab_size"] + len(_plan_vocab()), 4 * cfg["text_config"]["hidden_size"]
    assert abs(loaded - est.disk) < 0.05 * est.disk + 2e6, (loaded, est.disk)
    assert abs(decoded - est.peak) < 0.1 * est.peak + 4e6, (decoded, est.peak, json.dumps(est.transient))
    if cfg.get("quantization"):
        assert copy == 0 and decoded - loaded < 0.25 * rows * width * 4  # what a float32 copy would take
    else:
        assert copy > 0.2 * est.disk and decoded - loaded > 0.8 * copy
