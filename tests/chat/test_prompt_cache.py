"""The prompt cache of the shared start (system prompt and tools): prefilled with a count on
the first start, read from disk on later ones, and the reply the same tokens either way.

The base is a tiny random Qwen3.5-architecture model (``splice.random_base``'s weights at
hidden 128, 4 layers: Gated DeltaNet and full attention), 4-bit quantized as the slow bases
users meet, with the demo's tokenizer and its tools template. The oracle for every reply is
the same greedy generation prefilled from an empty cache in one go.
"""

from __future__ import annotations

import io
import time

import mlx.core as mx
import mlx.nn as nn
import pytest
from mlx.utils import tree_flatten
from mlx_lm.models.cache import make_prompt_cache
from rich.console import Console

from qwengpu_mlx.chat import prompt_cache_prefill, prompt_cache_progress
from qwengpu_mlx.chat.demo import DEMO_DIR
from qwengpu_mlx.chat.prefix import base_identity, prefill_prefix, shared_prefix
from qwengpu_mlx.chat.prompt_cache_prefill import MAX_STEP, MIN_STEP, feed, next_step
from qwengpu_mlx.chat.prompt_cache_progress import PrefillDisplay
from qwengpu_mlx.chat.template import render_prompt
from qwengpu_mlx.chat.textgen import GenStats, TextGenerator
from qwengpu_mlx.chat.tools import TOOLS
from qwengpu_mlx.runtime.checkpoint import random_config
from qwengpu_mlx.splice.random_base import qwen_like_weights

REPLY_TOKENS = 24


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """(model, tokenizer, directory holding its weights): a 4-bit tiny random Qwen3.5 base."""
    from mlx_lm.models.qwen3_5 import Model, ModelArgs
    from mlx_lm.tokenizer_utils import load as load_tokenizer

    tok = load_tokenizer(DEMO_DIR)
    cfg = random_config(128, 4, vocab_size=len(tok.vocab), intermediate=256, linear_key_heads=2,
                        linear_value_heads=2, linear_key_dim=32, linear_value_dim=32, heads=4, kv_heads=2,
                        head_dim=32)
    model = Model(ModelArgs.from_dict({"model_type": "qwen3_5", "text_config": cfg, "tie_word_embeddings": True}))
    model.load_weights(list(qwen_like_weights(cfg, seed=5, dtype=mx.bfloat16).items()), strict=True)
    nn.quantize(model, group_size=64, bits=4)
    mx.eval(model.parameters())
    d = tmp_path_factory.mktemp("tiny-4bit")
    mx.save_safetensors(str(d / "model.safetensors"), dict(tree_flatten(model.parameters())))
    return model, tok, d


def _greedy(logits: mx.array) -> mx.array:
    return mx.argmax(logits, axis=-1)


def _reply(model, prompt: list[int], prefix=None, progress=None) -> tuple[list[int], int]:
    """Greedy reply tokens after ``prompt``, and how many prompt tokens were prefilled for it."""
    gen = TextGenerator(model, _greedy, prefix=prefix, progress=progress)
    stats = GenStats()
    return list(gen.generate(prompt, REPLY_TOKENS, stats)), stats.prompt_tokens


def _prompt(tok, question: str) -> list[int]:
    return render_prompt(tok, [{"role": "user", "content": question}], TOOLS["normal"], None).tokens


def test_the_reply_is_the_same_with_and_without_the_saved_cache(base, tmp_path, monkeypatch):
    model, tok, d = base
    monkeypatch.setenv("QWENGPU_MLX_CACHE", str(tmp_path))
    prefix = shared_prefix(tok, None, TOOLS["normal"], None)
    prompt = _prompt(tok, "What is [2, 3] @ [4, 5]?")
    assert 100 < len(prefix) < len(prompt) and prompt[:len(prefix)] == prefix
    want, prefilled = _reply(model, prompt)
    assert prefilled == len(prompt) and len(want) == REPLY_TOKENS

    counts: list[tuple[int, int]] = []
    # the first start pays ...
    first = prefill_prefix(model, prefix, base_identity(d), print, lambda *c: counts.append(c))
    assert counts[0] == (0, len(prefix)) and counts[-1] == (len(prefix), len(prefix))
    assert [c[0] for c in counts] == sorted(c[0] for c in counts) and len(counts) > 2
    assert len(list(tmp_path.glob("prompt-*.safetensors"))) == 1
    assert _reply(model, prompt, first) == (want, len(prompt) - len(prefix))

    later: list[tuple[int, int]] = []
    # ... a later start reads it
    again = prefill_prefix(model, prefix, base_identity(d), print, lambda *c: later.append(c))
    assert later == []
    turn: list[tuple[int, int]] = []
    assert _reply(model, prompt, again, lambda *c: turn.append(c)) == (want, len(prompt) - len(prefix))
    assert turn[0] == (0, len(prompt) - len(prefix)) and turn[-1] == (len(prompt) - len(prefix),) * 2


def test_the_cache_file_is_keyed_by_the_prefix_tokens_and_the_base_files(base, tmp_path, monkeypatch):
    model, tok, d = base
    monkeypatch.setenv("QWENGPU_MLX_CACHE", str(tmp_path))
    prefix = shared_prefix(tok, None, TOOLS["normal"], None)
    other = shared_prefix(tok, "Answer briefly.", TOOLS["normal"], None)
    assert other != prefix
    prefill_prefix(model, prefix, base_identity(d), print)
    prefill_prefix(model, other, base_identity(d), print)
    assert len(list(tmp_path.glob("prompt-*.safetensors"))) == 2
    weights = d / "model.safetensors"
    weights.write_bytes(weights.read_bytes())  # the same name, a new modification time: another base
    counts: list[tuple[int, int]] = []
    prefill_prefix(model, prefix, base_identity(d), print, lambda *c: counts.append(c))
    assert counts and len(list(tmp_path.glob("prompt-*.safetensors"))) == 3


@pytest.mark.parametrize("steps", [(1, 1, 1), (7, 7, 7), (3, 1, 512)], ids=["one", "seven", "ramp"])
def test_the_steps_do_not_change_the_cache(base, monkeypatch, steps):
    """Any grouping of the prompt into forward passes leaves the same logits, bit for bit."""
    model, tok, _ = base
    prompt = _prompt(tok, "Sort [5, 1, 4].")

    def after():
        cache = make_prompt_cache(model)
        feed(model, cache, prompt[:-1])
        return model(mx.array([prompt[-1:]]), cache=cache)[0, -1]

    monkeypatch.setattr(prompt_cache_prefill, "FIRST_STEP", 512)
    monkeypatch.setattr(prompt_cache_prefill, "MAX_STEP", 512)
    whole = after()
    first, least, most = steps
    monkeypatch.setattr(prompt_cache_prefill, "FIRST_STEP", first)
    monkeypatch.setattr(prompt_cache_prefill, "MIN_STEP", least)
    monkeypatch.setattr(prompt_cache_prefill, "MAX_STEP", most)
    assert mx.array_equal(after(), whole).item()


def test_the_step_follows_the_time_a_step_takes():
    assert next_step(8, 0.1) == 16 and next_step(MAX_STEP, 0.1) == MAX_STEP
    assert next_step(8, 30.0) == 4 and next_step(MIN_STEP, 30.0) == MIN_STEP
    assert next_step(8, 2.0) == 8


def test_the_display_counts_on_a_terminal_and_logs_elsewhere(monkeypatch):
    monkeypatch.setattr(prompt_cache_progress, "QUIET_S", 0.0)
    out = io.StringIO()
    live = PrefillDisplay(Console(file=out, force_terminal=True, width=120))
    live(0, 400)
    time.sleep(0.3)  # the quiet second (here none) is a timer: the line appears from its thread
    live(96, 400)
    live(400, 400)  # done: the line goes
    assert "96 of 400 tokens" in out.getvalue() or "400 of 400 tokens" in out.getvalue(), out.getvalue()

    monkeypatch.setattr(prompt_cache_progress, "LINE_EVERY_S", 0.0)
    lines: list[str] = []
    plain = PrefillDisplay(None, lines.append)
    plain(0, 400)
    plain(96, 400)
    plain(400, 400)
    assert len(lines) == 1 and lines[0].startswith("prefilling the prompt: 96 of 400 tokens"), lines
