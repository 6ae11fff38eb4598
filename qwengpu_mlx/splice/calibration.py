"""The base's final states and log-normalizers on calibration text, at a CPU's pace.

The launch rows' shared part (``logits.suppression_row``) needs, at every calibration
position, the base's final hidden state and the logsumexp of its logits over the whole
vocabulary (248,320 rows for Qwen3.5). Computed as mlx-lm computes them, a quantized
base multiplies through MLX's ``quantized_matmul``, which on a CPU runs 10-30x slower
than a plain matmul of the same shape, and MLX's CPU build multiplies plain float32
matrices with the reference BLAS: a 4-bit Qwen3.5-2B replica sat an hour in the
calibration. So here every linear layer of the base, and the tied output layer, is
multiplied by NumPy (an optimized BLAS) in float32 over the layer's **exact** values:
a quantized matrix dequantized in float32 (``mx.dequantize`` with float32 scales and
biases: ``s q + beta`` without rounding), a dense one cast to float32. Each product is
rounded to the layer's output dtype as mlx rounds it, so the states differ from
mlx-lm's only by the order of float32 sums (``logits.ROUNDING`` says what the check
allows for that, and ``tests/splice/test_calibration.py`` measures it against
mlx-lm's own path). The output layer is dequantized in chunks of vocabulary rows, so
no full-vocabulary copy is held; positions go through in chunks with a cache; each
chunk is reported (``progress(what, done, total)``).
"""

from __future__ import annotations

from contextlib import contextmanager
import mlx.core as mx
import mlx.nn as nn
import numpy as np
from mlx_lm.models.cache import make_prompt_cache

from qwengpu_mlx.splice.reporting import Progress, no_progress

POSITION_CHUNK = 512  # positions per forward pass (each pass dequantizes every layer once)
VOCAB_CHUNK = 16384  # output-layer rows per product: [T, 16384] float32 logits at a time


def exact_float32(module) -> mx.array:
    """A linear (or tied embedding) layer's weight [out, in] as float32, exactly the values
    it multiplies by: a quantized one dequantized with float32 scales and biases."""
    if not hasattr(module, "scales"):
        return module.weight.astype(mx.float32)
    return dequantized_rows(module, 0, module.weight.shape[0])


def dequantized_rows(module, start: int, stop: int) -> mx.array:
    """Rows ``[start, stop)`` of a quantized layer's weight, dequantized in float32."""
    scales = module.scales[start:stop]
    biases = module.get("biases")
    if mx.issubdtype(scales.dtype, mx.floating):  # affine: float scales (a microscaled mode keeps uint8 ones)
        scales = scales.astype(mx.float32)
        biases = None if biases is None else biases[start:stop].astype(mx.float32)
    return mx.dequantize(module.weight[start:stop], scales, biases, group_size=module.group_size,
                         bits=module.bits, mode=getattr(module, "mode", "affine"))


def output_dtype(x: mx.array, module):
    """The dtype mlx gives the layer's product with ``x``: the wider of the two."""
    held = module.scales.dtype if hasattr(module, "scales") and module.scales.dtype != mx.uint8 else \
        module.weight.dtype
    return (mx.zeros((1,), x.dtype) * mx.zeros((1,), held)).dtype


class HostLinear(nn.Module):
    """A base linear layer multiplied by NumPy in float32 over its exact weights, its
    product rounded to the dtype mlx-lm's layer gives (see the module docstring)."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def __call__(self, x: mx.array) -> mx.array:
        w = np.array(exact_float32(self.inner))
        flat = np.array(x.astype(mx.float32)).reshape(-1, x.shape[-1])
        y = mx.array((flat @ w.T).reshape(*x.shape[:-1], w.shape[0])).astype(output_dtype(x, self.inner))
        if "bias" in self.inner:
            y = y + self.inner["bias"]
        return y


def _linear_slots(model) -> list[tuple[object, object, object]]:
    """(container, key, layer) of every dense or quantized linear layer in ``model``."""
    slots = []
    for mod in model.modules():
        for key, child in mod.items():
            for container, k, c in ([(child, i, c) for i, c in enumerate(child)] if isinstance(child, list)
                                    else [(mod, key, child)]):
                if isinstance(c, (nn.Linear, nn.QuantizedLinear)):
                    slots.append((container, k, c))
    return slots


@contextmanager
def host_matmuls(model):
    """``model``'s linear layers (dense or quantized) replaced by :class:`HostLinear` for the
    duration; the originals are put back, even on an error."""
    slots = _linear_slots(model)
    for container, key, layer in slots:
        container[key] = HostLinear(layer)
    try:
        yield model
    finally:
        for container, key, layer in slots:
            container[key] = layer


def final_states(model, tokens: list[int], progress: Progress = no_progress) -> np.ndarray:
    """The base's final normed hidden states [T, H] over ``tokens`` (float32), in chunks of
    ``POSITION_CHUNK`` positions with a cache, each chunk reported."""
    cache = make_prompt_cache(model)
    inner = model.language_model.model
    parts = []
    with host_matmuls(model):
        for start in range(0, len(tokens), POSITION_CHUNK):
            h = inner(mx.array([tokens[start:start + POSITION_CHUNK]]), cache=cache)[0]
            parts.append(np.array(h.astype(mx.float32)))
            progress("calibration text through the base", start + len(parts[-1]), len(tokens))
    return np.concatenate(parts)


def output_layer_logsumexp(model, states: np.ndarray, progress: Progress = no_progress) -> tuple[np.ndarray, np.ndarray]:
    """(logsumexp [T], largest |logit| [T]) of the base's logits at ``states`` over its whole
    vocabulary: the tied output layer in chunks of ``VOCAB_CHUNK`` rows, float32 products
    of its exact values, summed in float64."""
    embed = model.language_model.model.embed_tokens
    rows = embed.weight.shape[0]
    top = np.full(len(states), -np.inf)
    total = np.zeros(len(states))
    largest = np.zeros(len(states))
    for start in range(0, rows, VOCAB_CHUNK):
        stop = min(start + VOCAB_CHUNK, rows)
        w = np.array(dequantized_rows(embed, start, stop) if hasattr(embed, "scales") else
                     embed.weight[start:stop].astype(mx.float32))
        z = (states @ w.T).astype(np.float64)
        new_top = np.maximum(top, z.max(axis=1))
        total = total * np.exp(top - new_top) + np.exp(z - new_top[:, None]).sum(axis=1)
        top, largest = new_top, np.maximum(largest, np.abs(z).max(axis=1))
        progress("the base's logits over its vocabulary", stop, rows)
    return top + np.log(total), largest
