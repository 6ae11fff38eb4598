"""Keeping launch tokens out of text: the launch rows' shared part in the base's dims.

The embedding is tied, so at a text position a launch token's logit is its row times
the base's final hidden state. The circuit's dims of that state are exactly 0 there
(the circuit adds exact zeros), so every launch token gets the same logit, ``b . h``,
from the part ``b`` all launch rows share in the base's dims. With ``b = 0`` that is 0,
an ordinary logit for a base whose logits centre near 0: 10,411 launch tokens would
then hold a visible share of the probability. So ``b = -alpha u``, ``u`` the mean
direction of the base's final hidden states on calibration text (a trained model's
final states share a strong common direction), and ``alpha`` just large enough that the
launch tokens' total probability stays under ``target`` at every calibration position,
times a safety factor. At launch positions the circuit's output dims dominate the
RMS, and ``b``'s share of the logits is below 1e-6 of the circuit's margin.

The base's states and its full-vocabulary log-normalizers on the calibration text come
from ``calibration`` (float32 products of each layer's exact values, on an optimized
BLAS: mlx-lm's own CPU path for a 4-bit base ran an hour). They differ from what mlx-lm
computes by rounding only, so the check keeps :func:`rounding_allowance` below the target
at each position, and ``margin`` records what was left beyond it.

What is measured, not assumed: :func:`launch_mass` runs the whole combined vocabulary
on held-out text and reports the largest and mean launch mass per position.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import mlx.core as mx
import numpy as np

from qwengpu_mlx.splice.calibration import final_states, output_layer_logsumexp
from qwengpu_mlx.splice.reporting import Progress, no_progress

SAFETY = 1.5
GROWTH, MAX_GROWTH = 1.25, 40  # alpha's steps when the held row falls short of the target


class SuppressionError(ValueError):
    """The base's final states have no common direction a shared row could push against."""


@dataclass(frozen=True)
class Suppression:
    row: np.ndarray  # b, in the base's own units [H], as the combined embedding holds it
    alpha: float
    min_projection: float  # smallest u . h over calibration positions (> 0 needed)
    target: float  # launch mass asked for at every calibration position
    positions: int
    unrounded: np.ndarray | None = None  # b before the embedding's format rounds it: what the splice stores
    margin: float = 0.0  # nats between the target and the worst position's launch mass, allowance included

    @property
    def stored(self) -> np.ndarray:
        """What the splice writes into the embedding (its format turns it into ``row``)."""
        return self.row if self.unrounded is None else self.unrounded


def final_hidden(model, tokens: list[int], cache=None) -> mx.array:
    """The base's final normed hidden states [T, H] in its own dtype (what its tied lm_head
    multiplies: mlx-lm's ``TextModel`` does exactly this and ``as_linear``)."""
    return model.language_model.model(mx.array([tokens]), cache=cache)[0]


def base_logits(model, hidden: mx.array) -> mx.array:
    """The base's logits [T, V] from its final hidden states, computed as the base computes
    them (its dtype), then as float32."""
    return model.language_model.model.embed_tokens.as_linear(hidden).astype(mx.float32)


def launch_logit(hidden: mx.array, row: np.ndarray) -> mx.array:
    """Every launch token's logit [T] at text positions: the shared row times the final state."""
    return hidden.astype(mx.float32) @ mx.array(row.astype(np.float32))


def combined_text_logits(model, hidden: mx.array, row: np.ndarray, launch_tokens: int) -> mx.array:
    """The combined vocabulary's logits [T, V + N] at text positions: the base's own, then
    every launch token's (all equal to ``b . h``)."""
    launch = mx.broadcast_to(launch_logit(hidden, row)[:, None], (hidden.shape[0], launch_tokens))
    return mx.concatenate([base_logits(model, hidden), launch], axis=-1)


def launch_mass(text_logits: mx.array, launch_logits: mx.array) -> mx.array:
    """The launch tokens' total probability [T] at each position, both parts of the vocabulary."""
    full = mx.concatenate([text_logits, launch_logits], axis=-1).astype(mx.float32)
    return mx.exp(mx.logsumexp(launch_logits.astype(mx.float32), axis=-1) - mx.logsumexp(full, axis=-1))


def identity(row: np.ndarray) -> np.ndarray:
    return row


def rounding_allowance(largest_logit: np.ndarray, launch: np.ndarray, dtype_bits: int) -> np.ndarray:
    """Nats the check keeps below ``target`` at each position for arithmetic that differs from
    mlx-lm's only in rounding (``calibration``: float32 sums in another order, logits mlx-lm
    rounds to the base's dtype): each logit within ``2^-(bits-2)`` of its size, 4 half-ulps of
    a ``bits``-bit significand, so the log-normalizer within that of the largest and the
    launch logit within that of its own. (MLX's CPU ``quantized_matmul`` sums in bfloat16
    and strays further, up to a tenth of a large product, ``tests/splice/test_calibration.py``;
    what SAFETY leaves, typically 8 nats and more, is what covers it: ``margin``.)"""
    return (np.abs(largest_logit) + np.abs(launch)) * 2.0 ** -(dtype_bits - 2)


def significand_bits(dtype) -> int:
    """Bits of the significand of the dtype mlx-lm's logits come out in (8 for bfloat16)."""
    return {mx.bfloat16: 8, mx.float16: 11}.get(dtype, 24)


def suppression_row(model, tokens: list[int], launch_tokens: int, *, target: float = 1e-9,
                    represent: Callable[[np.ndarray], np.ndarray] = identity,
                    progress: Progress = no_progress) -> Suppression:
    """``b`` for this base, from its final states on calibration ``tokens``.

    ``represent``: the row as the checkpoint will hold it (a quantized embedding holds
    it rounded); the target is checked on that row at every calibration position, with
    :func:`rounding_allowance` to spare, and ``alpha`` grows until it holds. The states
    and log-normalizers come from ``calibration`` (``progress`` hears each chunk)."""
    h = final_states(model, tokens, progress)
    lse_np, largest = output_layer_logsumexp(model, h, progress)
    bits = significand_bits(model.language_model.model.embed_tokens.weight.dtype
                            if not hasattr(model.language_model.model.embed_tokens, "scales")
                            else model.language_model.model.embed_tokens.scales.dtype)
    mean = h.mean(axis=0, dtype=np.float64)
    u = (mean / np.linalg.norm(mean)).astype(np.float32)
    p = h @ u
    if float(p.min()) <= 0:
        raise SuppressionError(f"the base's final hidden states share no direction: at {int((p <= 0).sum())} of "
                               f"{len(p)} calibration positions the mean direction projects to <= 0")
    # N exp(-alpha p - lse) <= target  <=>  alpha >= (ln N - ln target - lse) / p
    need = (math.log(launch_tokens) - math.log(target) - lse_np) / p
    alpha = SAFETY * max(float(need.max()), 0.0)
    for _ in range(MAX_GROWTH):
        unrounded = -alpha * u
        row = represent(unrounded)
        launch = h @ row.astype(np.float32)
        worst = math.log(launch_tokens) + launch - lse_np + rounding_allowance(largest, launch, bits)
        if float(worst.max()) <= math.log(target):
            return Suppression(row=row, alpha=alpha, min_projection=float(p.min()), target=target, positions=len(p),
                               unrounded=unrounded, margin=math.log(target) - float(worst.max()))
        alpha *= GROWTH
    raise SuppressionError(f"the launch rows' shared part, as the embedding holds it, keeps the launch tokens "
                           f"above {target:g} of the probability at some calibration positions")


@dataclass(frozen=True)
class LaunchMass:
    max: float  # largest total launch-token probability at one text position
    mean: float
    positions: int


def launch_mass_from_logits(text_logits: mx.array, launch_logits: mx.array) -> LaunchMass:
    """Launch tokens' total probability per position, from both parts of the vocabulary."""
    m = np.array(launch_mass(text_logits, launch_logits))
    return LaunchMass(max=float(m.max()), mean=float(m.mean()), positions=len(m))
