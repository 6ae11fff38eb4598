"""A host language model in front of the circuit: its hidden states share the residual stream.

In the combined model, Qwen3.5's own layers run before the circuit's, and every circuit
layer's RMSNorm then sees the host's hidden state (massive-activation dims of 1e3-1e4
included) next to the circuit's signal, which shrinks every circuit value by the signal
ratio ``r = |circuit| / |circuit + host|``. :class:`HostFront` reproduces that on the
fast path: it runs a Qwen3.5 model (random or real) on the same tokens, token by token
with its own cache, and adds its last residual (before the final norm) to residual dims
that no circuit part reads or writes. The circuit's weights on those dims are zero, so
this is exactly what the circuit layers of a combined model receive.

Used by ``tests/runtime/test_host_front.py`` and ``bench/host_robustness.py``.
"""

from __future__ import annotations

import mlx.core as mx
import numpy as np

from qwengpu_mlx.runtime.checkpoint import random_weights
from qwengpu_mlx.runtime.model import Model, ModelConfig, layer_mask


def random_host(hidden: int = 256, layers: int = 4, *, massive: dict[int, float] | None = None,
                seed: int = 0, vocab: int = 512) -> Model:
    """A random Qwen3.5-architecture host (Gated DeltaNet, full attention every 4th layer).

    ``massive`` maps host dims to values every token's embedding carries there, the
    way Qwen3.5's hidden states carry a few dims at 1e3-1e4.
    """
    cfg = ModelConfig(hidden_size=hidden, intermediate_size=3 * hidden, num_hidden_layers=layers,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=64, vocab_size=vocab,
                      linear_num_key_heads=4, linear_num_value_heads=4, linear_key_head_dim=64,
                      linear_value_head_dim=64, tie_word_embeddings=True)
    w = random_weights(cfg, seed=seed)
    if massive:
        name = next(k for k in w if k.endswith("embed_tokens.weight"))
        E = np.array(w[name])
        for d, value in massive.items():
            E[:, d] = value
        w[name] = mx.array(E)
    model = Model(cfg)
    model.load_weights(list(w.items()), strict=True)
    return model


class HostFront:
    """Adds a host model's hidden state (times ``scale``) to circuit residual dims ``dims``."""

    def __init__(self, model: Model, dims: np.ndarray, scale: float = 1.0):
        hidden = model.config.hidden_size
        if len(dims) < hidden:
            raise ValueError(f"the host needs {hidden} free residual dims, {len(dims)} given")
        self.model = model
        self.dims = mx.array(np.asarray(dims[:hidden], dtype=np.int32))
        self.scale = scale
        self.vocab = model.config.vocab_size
        self.reset()

    def reset(self) -> None:
        self.cache = self.model.make_cache()
        self.min_ratio = 1.0  # smallest signal ratio seen since reset

    def hidden(self, tokens: list[int]) -> mx.array:
        """The host's last residual [T, hidden] for these tokens (ids folded into its vocabulary)."""
        backbone = self.model.language_model.model
        ids = mx.array([[t % self.vocab for t in tokens]])
        h = backbone.embed_tokens(ids)
        for layer, c in zip(backbone.layers, self.cache):
            h = layer(h, layer_mask(layer, h, c), c)
        return h[0] * self.scale

    def add_to(self, x: mx.array, tokens: list[int]) -> mx.array:
        """``x`` (circuit embeddings [T, H]) plus the host's hidden state; tracks r."""
        host = self.hidden(tokens)
        sig = mx.sum(x * x, axis=1)
        r = mx.sqrt(sig / (sig + mx.sum(host * host, axis=1)))
        self.min_ratio = min(self.min_ratio, float(mx.min(r)))
        return x.at[:, self.dims].add(host)
