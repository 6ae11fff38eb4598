"""Random Qwen3.5 bases with the statistics of a real one, for tests and benchmarks.

No Qwen3.5 weights can be downloaded where this project is tested, so a base is built
at a real width (Qwen3.5-2B: hidden 2048, 16/16 linear heads of 128; 4B: 2560, 32 value
heads on 16 key heads) with fewer layers and a smaller vocabulary, and with what makes a
real base hard for a splice:

* embedding rows of Qwen's scale (entries ~ N(0, 0.02^2)), filling every dim;
* massive activations: from layer 1 on the hidden state carries a few dims at 1e3-1e4,
  written by MLP units of layer 1 whose gate and up read the same direction (silu(s) * s
  >= 0, so the dims keep one sign on every token, as Qwen3.5's do);
* final norm weights and decays spread like trained ones (``random_weights``).
"""

from __future__ import annotations

import mlx.core as mx
import numpy as np

from qwengpu_mlx.runtime.checkpoint import random_config, random_weights

EMBED_STD = 0.02
MASSIVE = {5: 2.0e3, 17: 6.0e3, 40: 1.0e4}  # dim -> rough size it reaches in the hidden state


def qwen_like_config(hidden: int = 2048, layers: int = 4, *, vocab: int = 4096, value_heads: int = 16,
                     key_heads: int = 16, intermediate: int | None = None, attn_heads: int = 8,
                     kv_heads: int = 2) -> dict:
    """A Qwen3.5 text config at a real width (2B's by default), depth and vocab reduced."""
    return random_config(hidden, layers, vocab_size=vocab, intermediate=intermediate or 3 * hidden,
                         linear_key_heads=key_heads, linear_value_heads=value_heads, linear_key_dim=128,
                         linear_value_dim=128, heads=attn_heads, kv_heads=kv_heads, head_dim=256)


def qwen4b_like_config(layers: int = 4, *, vocab: int = 4096) -> dict:
    """Qwen3.5-4B's widths: hidden 2560, 32 value heads on 16 key heads, MLP 9216."""
    return qwen_like_config(2560, layers, vocab=vocab, value_heads=32, key_heads=16, intermediate=9216,
                            attn_heads=16, kv_heads=4)


def _massive_units(w: dict, hidden: int, rng: np.random.Generator) -> None:
    """Layer 1's first MLP units write the massive dims (sign-consistent, token-dependent)."""
    pre = "language_model.model.layers.1.mlp."
    gate, up, down = (np.array(w[pre + k + "_proj.weight"].astype(mx.float32)) for k in ("gate", "up", "down"))
    for unit, (dim, size) in enumerate(MASSIVE.items()):
        if dim >= hidden:
            continue
        direction = rng.standard_normal(hidden).astype(np.float32) / np.sqrt(hidden)
        gate[unit] = up[unit] = 4.0 * direction
        down[:, unit] = 0.0
        down[dim, unit] = size / 4.0
    dtype = w[pre + "gate_proj.weight"].dtype
    for k, a in (("gate", gate), ("up", up), ("down", down)):
        w[pre + k + "_proj.weight"] = mx.array(a).astype(dtype)


def qwen_like_weights(config: dict, seed: int = 0, dtype: mx.Dtype = mx.float32) -> dict:
    """Random weights with Qwen-like embedding scale and massive-activation dims."""
    w = random_weights(config, seed=seed, dtype=dtype)
    rng = np.random.default_rng(seed)
    name = "language_model.model.embed_tokens.weight"
    E = rng.standard_normal(w[name].shape).astype(np.float32) * EMBED_STD
    w[name] = mx.array(E).astype(dtype)
    if config["num_hidden_layers"] > 1:
        _massive_units(w, config["hidden_size"], rng)
    mx.eval(w)
    return w
