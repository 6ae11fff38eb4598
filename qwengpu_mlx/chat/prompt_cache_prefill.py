"""Feeding prompt tokens into a prompt cache in steps, each step reported with a count.

mlx-lm prefills a prompt in chunks of ``prefill_step_size`` tokens and reports each with
``prompt_progress_callback(processed, total)``. On a fast base one chunk of 512 is a fraction
of a second; on a slow one (a 4-bit base on a Linux CPU, where MLX's ``quantized_matmul``
takes seconds per token) a chunk of 512 is half an hour with nothing to show. So the step
follows the time a step takes: it starts small, doubles while steps are quick and halves
while they are slow, so a count arrives every few seconds whatever the base. The steps'
sizes change only how the tokens are grouped into forward passes: on MLX's CPU the cache
and the logits after it are the same bits for any grouping (tests/chat/test_prompt_cache.py
checks 1, 7 and 512 tokens a step against each other).
"""

from __future__ import annotations

import time
from typing import Callable

import mlx.core as mx

PrefillProgress = Callable[[int, int], None]  # mlx-lm's prompt_progress_callback: (processed, total)

FIRST_STEP = 4  # tokens in the first forward pass: a slow base reports its first count soon
MIN_STEP = 1  # the fewest tokens a step feeds (a 4-bit base on a CPU costs the same per token in any step)
MAX_STEP = 512  # the most (bounds peak memory, as the chat's prefill always did)
QUICK_S, SLOW_S = 1.0, 5.0  # a step under QUICK_S doubles the next one, over SLOW_S halves it


def next_step(step: int, seconds: float) -> int:
    """The size of the next step after one of ``step`` tokens took ``seconds``."""
    if seconds < QUICK_S:
        return min(step * 2, MAX_STEP)
    if seconds > SLOW_S:
        return max(step // 2, MIN_STEP)
    return step


def feed(model, cache: list, tokens: list[int], progress: PrefillProgress | None = None,
         done: int = 0, total: int | None = None) -> None:
    """Run ``tokens`` through ``model`` into ``cache`` (no logits kept), reporting
    ``progress(done + fed so far, total)`` before the first step and after each (``total``:
    ``done + len(tokens)`` unless the caller feeds more after these)."""
    total = done + len(tokens) if total is None else total
    i, step = 0, FIRST_STEP
    if progress is not None:
        progress(done, total)
    while i < len(tokens):
        t0 = time.perf_counter()
        part = tokens[i:i + step]
        model(mx.array([part]), cache=cache)
        mx.eval([c.state for c in cache])
        i += len(part)
        if progress is not None:
            progress(done + i, total)
        step = next_step(step, time.perf_counter() - t0)
