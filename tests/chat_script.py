"""A scripted stand-in for a chat model's base: it writes given assistant messages, token by token.

The chat loop's mechanics (tool-call detection, parsing, the tool's response going back
through the template, retries, the answer) are tested with what a model could write,
including what a trained model never would (broken calls, bad kernels), without
depending on a trained model's choices. The n-th assistant message of a conversation is
``script[n]``: the model counts the assistant headers it has been fed, so it answers the
same whether the loop continues its cache or re-renders the conversation from scratch.
"""

from __future__ import annotations

import mlx.core as mx


class ScriptCache:
    """The whole history this cache has been fed (what the model decides from)."""

    def __init__(self):
        self.tokens: list[int] = []


class ScriptedModel:
    """Called like an mlx-lm model: ``model(inputs [1, T], cache=...)`` -> logits [1, T, V]."""

    def __init__(self, tokenizer, script: list[str], vocab_size: int):
        self.header = tokenizer.encode("<|im_start|>assistant\n", add_special_tokens=False)
        self.script = [tokenizer.encode(s, add_special_tokens=False) + [tokenizer.eos_token_id] for s in script]
        self.vocab_size = vocab_size

    def make_cache(self):
        return [ScriptCache()]

    def _next(self, history: list[int]) -> int:
        h, n = self.header, len(self.header)
        starts = [i + n for i in range(len(history) - n + 1) if history[i:i + n] == h]
        if not starts or starts[-1] > len(history):
            return self.script[0][0]
        message = self.script[min(len(starts), len(self.script)) - 1]
        k = len(history) - starts[-1]
        return message[min(k, len(message) - 1)]

    def __call__(self, inputs: mx.array, cache=None):
        c = cache[0]
        c.tokens.extend(int(t) for t in inputs[0].tolist())
        logits = mx.zeros((1, inputs.shape[1], self.vocab_size))
        nxt = self._next(c.tokens)
        last = mx.zeros((self.vocab_size,)).at[nxt].add(10.0)
        return mx.concatenate([logits[:, :-1], last[None, None]], axis=1)
