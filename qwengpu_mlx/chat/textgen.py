"""Text generation on the combined model's text side, with the prompt cache kept across turns.

On a text position the combined model's logits are the base's own followed by the launch
tokens' (``splice.runner.CombinedModel.text_logits``); masking the launch tokens out of
text generation leaves exactly the base's logits, so this samples from the base model
(mlx-lm's own Qwen3.5 model object, unmodified). The cache holds every token fed so far;
a new prompt that extends them feeds only the rest, any other prompt starts a fresh
cache (Gated DeltaNet's recurrent cache cannot be trimmed), from the shared prefix's
cache (``prefix``: system prompt and tools, prefilled once) when it starts with it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Iterator

import mlx.core as mx
from mlx_lm.models.cache import make_prompt_cache

from qwengpu_mlx.runtime.speed import GenStats

from qwengpu_mlx.chat.prompt_cache_prefill import PrefillProgress, feed


@dataclass
class TextGenerator:
    """The base's forward passes over one conversation, token by token."""

    model: object  # mlx-lm Qwen3.5 model of the base
    sampler: Callable[[mx.array], mx.array]
    fed: list[int] = field(default_factory=list)  # tokens the cache has seen, in order
    cache: list | None = None
    prefix: object = None  # prefix.PrefixCache: where a fresh cache starts, when the prompt begins with it
    processor: Callable | None = None  # mlx-lm's logits-processor form (tokens, logits) -> logits, or None
    progress: PrefillProgress | None = None  # told (processed, total) as a prompt is prefilled

    def reset(self) -> None:
        """Forget the conversation: the next prompt is prefilled from its start."""
        self.fed, self.cache = [], None

    def _prefill(self, prompt: list[int]) -> tuple[mx.array, GenStats]:
        """Feed what the cache lacks of ``prompt``; the logits after its last token."""
        n = len(self.fed)
        if self.cache is None or prompt[:n] != self.fed or n >= len(prompt):
            self.cache, self.fed, n = make_prompt_cache(self.model), [], 0
            p = self.prefix
            if p is not None and len(prompt) > len(p.tokens) and prompt[:len(p.tokens)] == p.tokens:
                self.cache, self.fed, n = p.restore(), list(p.tokens), len(p.tokens)
        t0 = time.perf_counter()
        rest = prompt[n:]
        # As mlx-lm's generate_step prefills: every token but the last only fills the cache
        # (its logits are never evaluated: full-vocabulary logits at every prompt position
        # would cost more than the layers), the last one gives the next token's logits.
        feed(self.model, self.cache, rest[:-1], self.progress, total=len(rest))
        logits = self.model(mx.array([rest[-1:]]), cache=self.cache)
        mx.eval(logits)
        if self.progress is not None:
            self.progress(len(rest), len(rest))
        self.fed = list(prompt)
        return logits[0, -1], GenStats(len(rest), time.perf_counter() - t0)

    def generate(self, prompt: list[int], max_tokens: int, stats: GenStats) -> Iterator[int]:
        """Sample up to ``max_tokens`` tokens after ``prompt``; the caller stops early by
        closing the iterator (every yielded token is in the cache by then)."""
        logits, s = self._prefill(prompt)
        stats.add(s)
        t0 = time.perf_counter()
        try:
            for _ in range(max_tokens):
                scores = logits[None].astype(mx.float32)
                if self.processor is not None:  # e.g. chat.copying: a result being copied is finished as written
                    scores = self.processor(self.fed, scores)
                token = int(self.sampler(scores).item())
                logits = self._feed(token)
                stats.generation_tokens += 1
                yield token
        finally:
            stats.generation_seconds += time.perf_counter() - t0

    def _feed(self, token: int) -> mx.array:
        """Run one sampled token through the base (so the cache holds it), its next logits."""
        logits = self.model(mx.array([[token]]), cache=self.cache)[0, -1]
        mx.eval(logits)
        self.fed.append(token)
        return logits
