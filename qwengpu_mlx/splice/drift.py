"""How far the combined model's text is from the base's: KL, argmax, launch-token mass.

The same measure for any pair of logit sources (our runner, unmodified mlx-lm on the
dense checkpoint): both read the same text, teacher-forced, in chunks (a 248K-token
vocabulary makes a whole sample's logits gigabytes), with their own caches.

:func:`bf16_ties` explains the greedy differences of a bfloat16 base through mlx-lm
(whose float32 circuit layers promote the stream, so the final norm and logits run in
float32): at each differing position it records the base's own bfloat16 logits of the
two tokens, how many bfloat16 rounding steps apart they lie, and the combined model's
float32 gap between them; and over every position how far apart the base's top two lie.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import mlx.core as mx
import numpy as np
from mlx_lm.models.cache import make_prompt_cache

from qwengpu_mlx.splice.logits import combined_text_logits, final_hidden, launch_mass

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


def bf16_steps(a, b) -> np.ndarray:
    """How many bfloat16 rounding steps apart ``a`` and ``b`` lie (0: equal, 1: adjacent
    bfloat16 values), elementwise. Both must hold bfloat16 values (as float32 or bfloat16);
    counting representable values between them is exact across a power of two."""
    def key(x) -> np.ndarray:
        x = np.asarray(x.astype(mx.float32) if isinstance(x, mx.array) else x, dtype=np.float32)
        bits = x.view(np.uint32)
        if np.any(bits & 0xFFFF):
            raise ValueError("bf16_steps needs bfloat16 values (float32 with 16 zero low bits)")
        u = (bits >> 16).astype(np.int64)
        return np.where(u & 0x8000, -(u & 0x7FFF), u)  # ordered like the values; -0 and +0 both 0

    return np.abs(key(a) - key(b))


def bf16_ulp(x) -> np.ndarray:
    """One bfloat16 step (8 significant bits) at the magnitude of ``x`` (normal values)."""
    _, e = np.frexp(np.abs(np.asarray(x, dtype=np.float64)))
    return np.ldexp(1.0, e - 8)


@dataclass(frozen=True)
class Flip:
    """A position where the combined model's greedy token is not the base's."""
    position: int
    base_token: int  # the base's greedy token (argmax; on an exact tie the lower index)
    combined_token: int  # the combined model's greedy token
    base_top: float  # the base's bfloat16 logit of its own token
    base_other: float  # the base's bfloat16 logit of the combined model's token
    steps: int  # bfloat16 rounding steps between those two (0: exactly tied in bfloat16)
    ulp: float  # one bfloat16 step at ``base_top``'s magnitude
    combined_gap: float  # the combined model's float32 logit of its token minus that of the base's

    @property
    def tied(self) -> bool:
        return self.steps == 0


@dataclass(frozen=True)
class TieReport:
    positions: int
    flips: tuple[Flip, ...]
    top2_steps: np.ndarray  # per position: bfloat16 steps between the base's largest and second-largest logit
    # per position: bfloat16 steps between the base's logit of its greedy token and the combined model's
    # float32 logit of that token rounded to bfloat16 (0 would mean the base's logits are just the rounded
    # float32 ones; the base also rounds its final norm's output, so they are not)
    rounding_steps: np.ndarray

    def near_ties(self, bound: int = 1) -> int:
        """Positions whose base top two lie within ``bound`` bfloat16 steps (0: exact ties)."""
        return int(np.sum(self.top2_steps <= bound))

    def flips_within(self, bound: int = 1) -> int:
        """Differing positions whose two tokens' base logits lie within ``bound`` bfloat16 steps."""
        return sum(f.steps <= bound for f in self.flips)

    def flips_at_top2_steps(self, steps: int) -> int:
        """Differing positions whose base top two lie exactly ``steps`` bfloat16 steps apart."""
        return sum(int(self.top2_steps[f.position]) == steps for f in self.flips)


def bf16_ties(base_chunks: Iterator[mx.array], combined_chunks: Iterator[mx.array], text_vocab: int) -> TieReport:
    """The greedy differences between a bfloat16 base and a combined model, against the
    base's own rounding (see the module docstring). The combined model's greedy token is
    taken over its whole vocabulary, as :func:`measure` takes it; a launch token there
    (which the base has no logit for) raises."""
    flips, top2, rounding, start = [], [], [], 0
    for b, c in zip(base_chunks, combined_chunks):
        b = np.array(b[:, :text_vocab].astype(mx.float32))
        c = c.astype(mx.float32)
        c_bf16 = np.array(c.astype(mx.bfloat16).astype(mx.float32))
        c = np.array(c)
        bt, ct = b.argmax(axis=-1), c.argmax(axis=-1)
        rows = np.arange(len(b))
        part = -np.partition(-b, 1, axis=-1)[:, :2]  # the largest and the second largest, ties kept
        top2.append(bf16_steps(part[:, 0], part[:, 1]))
        rounding.append(bf16_steps(b[rows, bt], c_bf16[rows, bt]))
        for i in np.flatnonzero(bt != ct):
            if ct[i] >= text_vocab:
                raise ValueError(f"position {start + i}: the combined model's greedy token {ct[i]} is a launch token")
            hi, lo = b[i, bt[i]], b[i, ct[i]]
            flips.append(Flip(start + int(i), int(bt[i]), int(ct[i]), float(hi), float(lo), int(bf16_steps(hi, lo)),
                              float(bf16_ulp(hi)), float(c[i, ct[i]] - c[i, bt[i]])))
        start += len(b)
    empty = np.zeros(0, np.int64)
    return TieReport(start, tuple(flips), np.concatenate(top2) if top2 else empty,
                     np.concatenate(rounding) if rounding else empty)


def ours_logits(combined, tokens: list[int], chunk: int = CHUNK) -> Iterator[mx.array]:
    """Our runner's logits over the combined vocabulary, chunked like :func:`mlx_lm_logits`.

    The base part is the base's own mlx-lm model, so it runs with its own cache."""
    cache = make_prompt_cache(combined.base)
    for i in range(0, len(tokens), chunk):
        h = final_hidden(combined.base, tokens[i:i + chunk], cache)
        yield combined_text_logits(combined.base, h, combined.launch_row, combined.layout.launch_tokens)

