"""The shared prompt start, prefilled once: a conversation that starts from it gets the same logits.

The model is the demo's own small Qwen3.5-architecture model through ``mlx_lm.load`` (real
Gated DeltaNet and attention caches); the oracle is the same prompt prefilled from an
empty cache. The prefix is found from the demo's chat template with the tools offered.
"""

from __future__ import annotations

import mlx.core as mx
import pytest

from qwengpu_mlx.chat.prefix import prefill_prefix, shared_prefix
from qwengpu_mlx.chat.template import render_prompt
from qwengpu_mlx.chat.textgen import GenStats, TextGenerator
from qwengpu_mlx.chat.tools import TOOLS


@pytest.fixture(scope="module")
def demo():
    import mlx_lm

    from qwengpu_mlx.chat.demo import DEMO_DIR

    return mlx_lm.load(str(DEMO_DIR))


def _first_logits(model, prompt: list[int], prefix=None) -> tuple[mx.array, int]:
    """The logits after ``prompt`` (the first sampled token's), and how many tokens were prefilled."""
    gen = TextGenerator(model, lambda logits: mx.argmax(logits, axis=-1), prefix=prefix)
    logits, stats = gen._prefill(prompt)
    return logits, stats.prompt_tokens


def test_a_conversation_from_the_prefix_is_the_same(demo, tmp_path, monkeypatch):
    model, tok = demo
    monkeypatch.setenv("QWENGPU_MLX_CACHE", str(tmp_path))
    prefix = shared_prefix(tok, None, TOOLS["normal"], None)
    prompt = render_prompt(tok, [{"role": "user", "content": "What is [2, 3] @ [4, 5]?"}], TOOLS["normal"],
                           None).tokens
    assert 50 < len(prefix) < len(prompt) and prompt[:len(prefix)] == prefix
    want, n_plain = _first_logits(model, prompt)
    first = prefill_prefix(model, prefix, "demo-test", log=print)
    got, n_rest = _first_logits(model, prompt, first)
    assert n_plain == len(prompt) and n_rest == len(prompt) - len(prefix)
    assert mx.array_equal(got, want).item()
    assert list(tmp_path.glob("prompt-*.safetensors"))  # saved for the next start ...
    again = prefill_prefix(model, prefix, "demo-test", log=print)  # ... which reads it
    got2, _ = _first_logits(model, prompt, again)
    assert mx.array_equal(got2, want).item()
    # each conversation gets its own copy: generating from one leaves the prefix as it was
    gen = TextGenerator(model, lambda logits: mx.argmax(logits, axis=-1), prefix=first)
    list(gen.generate(prompt, 5, GenStats()))
    got3, _ = _first_logits(model, prompt, first)
    assert mx.array_equal(got3, want).item()


def test_a_prompt_that_does_not_start_with_the_prefix_is_prefilled_whole(demo):
    model, tok = demo
    prefix = shared_prefix(tok, None, TOOLS["normal"], None)
    first = prefill_prefix(model, prefix, "", log=print)  # no identity: nothing on disk
    other = render_prompt(tok, [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
                          TOOLS["normal"], None).tokens
    _, n = _first_logits(model, other, first)
    assert n == len(other)


def test_cache_info_and_clear_cover_the_chat_files(tmp_path):
    from tests.support.cli import cli

    (tmp_path / "prompt-0123456789abcdef.safetensors").write_bytes(b"\0" * 2_000_000)
    (tmp_path / "folded-0123456789abcdef.json").write_text("{}")
    env = {"QWENGPU_MLX_CACHE": str(tmp_path)}
    info = cli("cache", "info", env=env)
    assert "2 chat files" in info.stdout and "2.0 MB" in info.stdout, info.stdout
    cleared = cli("cache", "clear", env=env)
    assert cleared.returncode == 0 and "2 files" in cleared.stdout
    assert not list(tmp_path.iterdir())
