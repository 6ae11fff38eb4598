"""How far the combined model's text is from the base's: KL, argmax, launch-token mass.

The same measure for any pair of logit sources (our runner, unmodified mlx-lm on the
dense checkpoint): both read the same text, teacher-forced, in chunks (a 248K-token
vocabulary makes a whole sample's logits gigabytes), with their own caches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import mlx.core as mx
import numpy as np

from .logits import launch_mass

CHUNK = 128


@dataclass(frozen=True)
class DriftReport:
    positions: int
    kl_mean: float  # mean over positions of KL(base || combined), nats
    kl_max: float
    argmax_differs: int  # positions where the combined model's greedy token is not the base's
    launch_mass_max: float  # largest total probability of the launch tokens at one position
    launch_mass_mean: float


def mlx_lm_logits(model, tokens: list[int], chunk: int = CHUNK) -> Iterator[mx.array]:
    """An mlx-lm model's logits [t, V] over ``tokens``, ``chunk`` positions at a time."""
    from mlx_lm.models.cache import make_prompt_cache

    cache = make_prompt_cache(model)
    for i in range(0, len(tokens), chunk):
        yield model(mx.array([tokens[i:i + chunk]]), cache=cache)[0].astype(mx.float32)


def measure(base_chunks: Iterator[mx.array], combined_chunks: Iterator[mx.array], text_vocab: int) -> DriftReport:
    """KL(base || combined) per position; the combined vocabulary is the base's then launch tokens."""
    kls, masses, differs = [], [], 0
    for b, c in zip(base_chunks, combined_chunks):
        b = b[:, :text_vocab]
        lp = b - mx.logsumexp(b, axis=-1, keepdims=True)
        lq = c[:, :text_vocab] - mx.logsumexp(c, axis=-1, keepdims=True)
        kl = mx.sum(mx.exp(lp) * (lp - lq), axis=-1)
        mass = launch_mass(c[:, :text_vocab], c[:, text_vocab:]) if c.shape[1] > text_vocab else mx.zeros(c.shape[:1])
        differs += int(mx.sum(mx.argmax(b, axis=-1) != mx.argmax(c, axis=-1)))
        mx.eval(kl, mass)
        kls.append(np.array(kl))
        masses.append(np.array(mass))
    kl_all, mass_all = np.concatenate(kls), np.concatenate(masses)
    return DriftReport(len(kl_all), float(kl_all.mean()), float(kl_all.max()), differs, float(mass_all.max()),
                       float(mass_all.mean()))


def ours_logits(combined, tokens: list[int], chunk: int = CHUNK) -> Iterator[mx.array]:
    """Our runner's logits over the combined vocabulary, chunked like :func:`mlx_lm_logits`.

    The base part is the base's own mlx-lm model, so it runs with its own cache."""
    from mlx_lm.models.cache import make_prompt_cache

    from .logits import combined_text_logits, final_hidden

    cache = make_prompt_cache(combined.base)
    for i in range(0, len(tokens), chunk):
        h = final_hidden(combined.base, tokens[i:i + chunk], cache)
        yield combined_text_logits(combined.base, h, combined.launch_row, combined.layout.launch_tokens)

