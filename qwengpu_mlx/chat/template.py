"""The conversation rendered by the model's own chat template, thinking as the user asked.

``--thinking/--no-thinking`` reach the template as ``enable_thinking`` (the
``chat_template_args`` convention of mlx-lm's server and generate). Without either, the
template's own default holds: Qwen3.5's larger models open a think block unless
``enable_thinking`` is false, its 0.8B/2B/4B templates only when it is true. mlx-lm's
``TokenizerWrapper.apply_chat_template`` would fill in ``enable_thinking=True`` for any
tokenizer with ``<think>`` in its vocabulary, so the default case renders with the
tokenizer's own (Hugging Face) template call, where the variable stays undefined.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Prompt:
    tokens: list[int]
    opens_reasoning: bool  # the prompt ends inside a think block: the reply starts reasoning


def chat_template_args(thinking: bool | None) -> dict:
    """What goes to the template besides messages and tools (nothing: its own default)."""
    return {} if thinking is None else {"enable_thinking": thinking}


def _render(tokenizer, messages: list[dict], tools, thinking: bool | None) -> str:
    args = chat_template_args(thinking)
    hf = getattr(tokenizer, "_tokenizer", None)
    if thinking is None and hf is not None and getattr(tokenizer, "_chat_template", None) is None:
        return hf.apply_chat_template(messages, tools=tools, add_generation_prompt=True, tokenize=False)
    return tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=True, tokenize=False, **args)


def opens_reasoning(text: str, think_start: str | None, think_end: str | None) -> bool:
    """True when ``text`` ends inside a think block (its last start comes after its last end)."""
    if not (think_start and think_end) or think_start not in text:
        return False
    return text.rfind(think_start) > text.rfind(think_end)


def render_prompt(tokenizer, messages: list[dict], tools, thinking: bool | None) -> Prompt:
    """The prompt's token ids, and whether the model is to start inside its reasoning."""
    text = _render(tokenizer, messages, tools, thinking)
    opens = opens_reasoning(text, getattr(tokenizer, "think_start", None), getattr(tokenizer, "think_end", None))
    return Prompt(list(tokenizer.encode(text, add_special_tokens=False)), opens)
