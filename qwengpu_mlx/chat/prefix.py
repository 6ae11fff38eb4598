"""The start every prompt shares (system prompt, the tools' description), prefilled once per base.

With tools offered, Qwen3.5's template opens every conversation with some 400 tokens of
tool instructions; on a CPU their prefill is most of the first reply's wait, and every
fresh conversation (``r``, each question of ``eval chat``) pays it again. The shared
tokens are found by rendering two different one-question conversations and keeping what
they have in common; the cache after them is kept in memory for the session and, for a
model with an on-disk identity, saved with mlx-lm's ``save_prompt_cache`` in the circuit
cache directory, so the next start reads it instead of prefilling.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import mlx.core as mx
from mlx_lm.models.cache import load_prompt_cache, make_prompt_cache, save_prompt_cache

from qwengpu_mlx.runtime.circuit_cache import cache_dir, write_atomically

from qwengpu_mlx.chat.prompt_cache_prefill import PrefillProgress, feed
from qwengpu_mlx.chat.template import render_prompt


def shared_prefix(tokenizer, system_prompt: str | None, tools, thinking: bool | None) -> list[int]:
    """The tokens every conversation of these settings starts with, up to its first question."""
    def first(question: str) -> list[int]:
        messages = ([{"role": "system", "content": system_prompt}] if system_prompt else [])
        return render_prompt(tokenizer, messages + [{"role": "user", "content": question}], tools, thinking).tokens

    a, b = first("A"), first("7")
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def _fresh(state):
    """``state`` with new list and array objects (same values): mlx-lm's caches update their
    lists and arrays in place (a KV buffer has room past its offset), so a restored cache must
    share no object with the snapshot it came from."""
    if isinstance(state, (list, tuple)):
        return type(state)(_fresh(x) for x in state)
    if isinstance(state, mx.array):
        return mx.array(state)
    return state


def _snapshot(cache: list) -> list[tuple[type, object]]:
    return [(type(c), _fresh(c.state)) for c in cache]


@dataclass
class PrefixCache:
    """The cache after ``tokens``, restored as a fresh copy for each conversation."""

    tokens: list[int]
    snapshot: list[tuple[type, object]]

    def restore(self) -> list:
        """New cache objects over copies of the saved state (see :func:`_fresh`)."""
        return [cls.from_state(_fresh(state)) for cls, state in self.snapshot]


def _path(identity: str, tokens: list[int]) -> Path:
    key = hashlib.sha256(json.dumps([identity, tokens]).encode()).hexdigest()
    return cache_dir() / f"prompt-{key[:16]}.safetensors"


def prefill_prefix(model, tokens: list[int], identity: str, log: Callable[[str], None],
                   progress: PrefillProgress | None = None) -> PrefixCache:
    """The prefix's cache: from the disk cache when ``identity`` names the base's files, else
    prefilled now, each step counted on ``progress`` (and saved under that identity)."""
    path = _path(identity, tokens) if identity else None
    if path is not None and path.is_file():
        try:
            return PrefixCache(tokens, _snapshot(load_prompt_cache(str(path))))
        except Exception as e:  # a damaged file is prefilled again, not fatal
            log(f"prompt cache {path} not used ({type(e).__name__}: {e})")
    cache = make_prompt_cache(model)
    feed(model, cache, tokens, progress)
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(path, lambda name: save_prompt_cache(name, cache))
        except (OSError, ValueError, RuntimeError) as e:  # a read-only cache still chats
            log(f"could not save the prompt cache {path} ({e})")
    return PrefixCache(tokens, _snapshot(cache))


def base_identity(directory: Path) -> str:
    """A base's files as a cache key: each weight file's name, size and modification time
    (cheap; a changed or replaced file gives another key)."""
    files = sorted(Path(directory).glob("*.safetensors"))
    return json.dumps([str(Path(directory).resolve())] + [[f.name, f.stat().st_size, f.stat().st_mtime_ns]
                                                          for f in files])
