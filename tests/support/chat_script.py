"""A scripted stand-in for a chat model's base: it writes given assistant messages, token by token.

The chat loop's mechanics (tool-call detection, parsing, the tool's response going back
through the template, retries, the answer) are tested with what a model could write,
including what a trained model never would (broken calls, bad kernels), without
depending on a trained model's choices. The n-th assistant message of a conversation is
``script[n]``: the model counts the assistant headers it has been fed, so it answers the
same whether the loop continues its cache or re-renders the conversation from scratch.

A message is the text that follows ``<|im_start|>assistant\\n`` in the whole conversation,
so with a template that opens ``<think>\\n`` in the prompt it starts with that too: the
model reads what the message holds so far (prompt part included) as text and writes the
next token of the script's rest, so it lines up however the prompt ends. A message may
also be a function of the conversation so far (its text), e.g. one that quotes the last
tool response.
"""

from __future__ import annotations

from typing import Callable, Union

import mlx.core as mx

HEADER = "<|im_start|>assistant\n"
Message = Union[str, Callable[[str], str]]


class ScriptCache:
    """The whole history this cache has been fed (what the model decides from)."""

    def __init__(self):
        self.tokens: list[int] = []

    @property
    def state(self) -> list:
        """What a prefill evaluates (mlx-lm caches' arrays): nothing lazy here."""
        return []


class ScriptedModel:
    """Called like an mlx-lm model: ``model(inputs [1, T], cache=...)`` -> logits [1, T, V]."""

    def __init__(self, tokenizer, script: list[Message], vocab_size: int):
        self.tokenizer = tokenizer
        self.header = tokenizer.encode(HEADER, add_special_tokens=False)
        self.script = script
        self.vocab_size = vocab_size
        self.eos = tokenizer.eos_token_id
        self._encoded: dict[str, list[int]] = {}

    def make_cache(self):
        return [ScriptCache()]

    def _message(self, index: int, history: list[int]) -> str:
        m = self.script[min(index, len(self.script) - 1)]
        return m if isinstance(m, str) else m(self.tokenizer.decode(history))

    def _next(self, history: list[int]) -> int:
        h, n = self.header, len(self.header)
        starts = [i + n for i in range(len(history) - n + 1) if history[i:i + n] == h]
        if not starts:
            return self.eos
        message = self._message(len(starts) - 1, history)
        so_far = self.tokenizer.decode(history[starts[-1]:])
        if not message.startswith(so_far):
            return self.eos  # the conversation left the script: end the message
        rest = message[len(so_far):]
        if not rest:
            return self.eos
        if rest not in self._encoded:
            self._encoded[rest] = self.tokenizer.encode(rest, add_special_tokens=False)
        return self._encoded[rest][0]

    def __call__(self, inputs: mx.array, cache=None):
        c = cache[0]
        c.tokens.extend(int(t) for t in inputs[0].tolist())
        logits = mx.zeros((1, inputs.shape[1], self.vocab_size))
        nxt = self._next(c.tokens)
        last = mx.zeros((self.vocab_size,)).at[nxt].add(10.0)
        return mx.concatenate([logits[:, :-1], last[None, None]], axis=1)
