"""mlx-lm's speed figures (prompt and generation tokens, tokens/s, peak memory) and its
summary lines, for a launch (``run``) and for a chat turn (``chat``): one format, as
``mlx_lm.generate`` prints it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class GenStats:
    """mlx-lm's per-response figures, for one generation segment."""

    prompt_tokens: int = 0  # tokens prefilled (new to the cache)
    prompt_seconds: float = 0.0
    generation_tokens: int = 0
    generation_seconds: float = 0.0

    @property
    def prompt_tps(self) -> float:
        return self.prompt_tokens / self.prompt_seconds if self.prompt_seconds > 0 else 0.0

    @property
    def generation_tps(self) -> float:
        return self.generation_tokens / self.generation_seconds if self.generation_seconds > 0 else 0.0

    def add(self, other: "GenStats") -> None:
        self.prompt_tokens += other.prompt_tokens
        self.prompt_seconds += other.prompt_seconds
        self.generation_tokens += other.generation_tokens
        self.generation_seconds += other.generation_seconds


def launch_stats(launch) -> GenStats:
    """A launch's prefill and generation as mlx-lm's figures."""
    return GenStats(len(launch.prompt), launch.prefill_seconds, len(launch.tokens), launch.generate_seconds)


def summary_lines(stats: GenStats, peak_memory_gb: float) -> list[str]:
    """mlx-lm's three summary lines after its separator."""
    return ["=" * 10,
            f"Prompt: {stats.prompt_tokens} tokens, {stats.prompt_tps:.3f} tokens-per-sec",
            f"Generation: {stats.generation_tokens} tokens, {stats.generation_tps:.3f} tokens-per-sec",
            f"Peak memory: {peak_memory_gb:.3f} GB"]
