"""Run a compiled circuit layer by layer and look inside: residuals and MLP inputs.

Used by tests and the margin report: it runs the same :class:`qwengpu_mlx.runtime.model.Model`
modules the launch uses, one sub-layer at a time, and returns what each saw.
"""

from __future__ import annotations

import mlx.core as mx
import numpy as np

from qwengpu_mlx.runtime.model import Model, mix


def load_plan(plan) -> Model:
    """Instantiate our MLX model with a plan's config and weights."""
    model = Model(plan.config())
    model.load_weights(list(plan.weights().items()))
    mx.eval(model.parameters())
    return model


def probe(model: Model, tokens: list[int], cache=None) -> dict:
    """Residuals of a token sequence; see :func:`probe_embeddings`."""
    x = model.language_model.model.embed_tokens(mx.array([tokens]))
    return probe_embeddings(model, np.array(x[0]), cache)


def probe_embeddings(model: Model, embeddings, cache=None) -> dict:
    """Residual after every sub-layer and the normalised MLP inputs, per token.

    Returns ``{"resid": [L+1 arrays [T,H]] (input, then after each decoder layer),
    "mid": [L arrays] (after each mixer), "mlp_in": [L arrays] (normalised MLP input),
    "cache": cache, "logits": [T, V]}`` as NumPy float64.
    """
    if cache is None:
        cache = model.make_cache()
    x = mx.array(np.asarray(embeddings, np.float32))[None]
    resid, mid, mlp_in = [np.array(x[0], np.float64)], [], []
    for layer, c in zip(model.layers, cache):
        h = x + mix(layer, x, c)
        n = layer.post_attention_layernorm(h)
        x = h + layer.mlp(n)
        mx.eval(x)
        mid.append(np.array(h[0], np.float64))
        mlp_in.append(np.array(n[0], np.float64))
        resid.append(np.array(x[0], np.float64))
    out = model.logits(model.language_model.model.norm(x))
    return {"resid": resid, "mid": mid, "mlp_in": mlp_in, "cache": cache,
            "logits": np.array(out[0], np.float64)}
