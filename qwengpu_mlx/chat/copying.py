"""Constrained decoding while the model copies a tool result: a number it has started to
copy is finished as the GPU wrote it.

A small model copies ``2187`` as ``2184``; the post-check (``chat.quoting``) can only flag
that. This logits processor prevents it: when the answer's text ends in a number run
(digits, ``-``, and a list's ``[``, ``, `` and ``]``) that is a proper prefix of one of the
turn's results, at least two digits of a number or two elements of a list, only the token
that continues that result is allowed. A number that does not start like a result (a number
from the question, a count in prose) is left alone, so the model still says what it
wants; it only cannot change a result once it has begun to copy it.

It acts on the text the message shows (not inside reasoning or a tool call), and only on
results the GPU produced this turn (tool responses that are values).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

import mlx.core as mx
import numpy as np

from qwengpu_mlx.chat.quoting import tool_values

_RUN = re.compile(r"(?:\[[-\d., ]*|-?\d[\d.]*)$")  # the number (or list) the text ends in, floats' points too
MIN_PREFIX = 2  # digits of a number, elements of a list, copied before it is held to the result
CANDIDATES = 64  # the most likely tokens looked at when a whole result must not grow a digit


def result_strings(contents: list[str]) -> list[str]:
    """The results as the answer would write them: ``2187``, ``[11, 40, 6]``."""
    out = []
    for content in contents:
        for v in tool_values(content):
            out.append("[" + ", ".join(map(str, v)) + "]" if isinstance(v, list) else str(v))
    return out


def continuation(text: str, results: list[str]) -> str | None:
    """The rest of the result ``text`` has started to copy, or None when it is copying none."""
    m = _RUN.search(text)
    if not m:
        return None
    run = m.group(0)
    if len(run.lstrip("-")) < MIN_PREFIX if not run.startswith("[") else run.count(",") < MIN_PREFIX:
        return None  # too little copied yet to tell a result from a number of the question
    start = m.start()
    if start > 0 and (text[start - 1].isalnum() or text[start - 1] in "-."):
        return None  # inside a word or a longer number
    if run in results and not run.startswith("["):
        return ""  # a whole scalar result written: it may end, not grow another digit
    rests = [r[len(run):] for r in results if r.startswith(run) and len(r) > len(run)]
    if not rests:
        return None  # copying nothing
    return min(rests, key=len)


@dataclass
class CopyGuard:
    """The processor for one assistant message: ``visible(tokens)`` gives the message's shown
    text so far from the tokens fed (decoded whole: a streaming detokenizer may hold back a
    token's text), ``encode`` the tokenizer's encoding, ``decode`` one token's text."""

    results: list[str]
    visible: Callable[[list[int]], str | None]  # None: inside reasoning or a tool call
    encode: Callable[[str], list[int]]
    decode: Callable[[int], str]
    forced: int = 0  # tokens it changed (for the turn's record)
    _first: dict[str, int] = field(default_factory=dict)

    def __call__(self, tokens, logits: mx.array) -> mx.array:
        text = self.visible(tokens)
        rest = continuation(text, self.results) if self.results and text is not None else None
        if rest is None:
            return logits
        if rest == "":
            return self._no_more_digits(logits)
        top = int(mx.argmax(logits, axis=-1).reshape(-1)[0].item())
        said = self.decode(top)
        if said and (rest.startswith(said) or said.startswith(rest) and not said[len(rest):][:1].isdigit()):
            return logits  # the model's own choice already continues the result
        if rest not in self._first:
            self._first[rest] = self.encode(rest)[0]
        self.forced += 1
        keep = mx.arange(logits.shape[-1]) == self._first[rest]
        return mx.where(keep, logits, mx.array(-mx.inf, dtype=logits.dtype))

    def _no_more_digits(self, logits: mx.array) -> mx.array:
        """After a whole result, the likeliest tokens that would lengthen it with a digit
        (a small model copying ``2.3333333`` goes on writing 3s) are removed."""
        order = mx.argsort(-logits.reshape(-1))[:CANDIDATES].tolist()
        banned = [t for t in order if (self.decode(t) or "")[:1].isdigit()]
        if not banned or banned[0] != order[0]:
            return logits  # the model's own choice ends the number
        self.forced += 1
        mask = np.zeros(logits.shape[-1], dtype=bool)
        mask[banned] = True
        return mx.where(mx.array(mask), mx.array(-mx.inf, dtype=logits.dtype), logits)
