"""One assistant message as it streams: its reasoning, its visible text, its tool calls.

Qwen3.5 writes ``<think>`` reasoning ``</think>`` (or starts inside it, when its chat
template opens the block in the prompt), then text, then ``<tool_call>...</tool_call>``
blocks, one or several. The chat loop re-reads the whole decoded message after every
token (:meth:`ReplySplitter.parts` is a pure function of that text), so a marker split
over several tokens is never shown half-written: what is shown stops short of any tail
that could still become a marker (:func:`safe_length`).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Markers:
    """The template's markers (mlx-lm's ``TokenizerWrapper`` infers them); None: not used."""

    think_start: str | None
    think_end: str | None
    call_start: str | None
    call_end: str | None

    @classmethod
    def of(cls, tokenizer) -> "Markers":
        return cls(getattr(tokenizer, "think_start", None), getattr(tokenizer, "think_end", None),
                   tokenizer.tool_call_start, tokenizer.tool_call_end)


@dataclass
class ReplyParts:
    """What a message holds so far."""

    reasoning: str = ""  # inside the think block (markers excluded)
    reasoning_open: bool = False  # the think block has not closed (yet)
    content: str = ""  # visible text before the first tool call
    calls: list[str] = field(default_factory=list)  # each closed call's inner text
    open_call: bool = False  # a call has started and not closed
    unclosed: str = ""  # the text of that call so far (after its start marker)
    unstarted: bool = False  # that "call" has an end marker and no start: a call that does not parse
    trailing: str = ""  # text after the last closed call


def safe_length(text: str, marker: str | None) -> int:
    """How much of ``text`` can be shown: all but a tail that could start ``marker``."""
    if not marker:
        return len(text)
    for k in range(min(len(marker) - 1, len(text)), 0, -1):
        if marker.startswith(text[-k:]):
            return len(text) - k
    return len(text)


@dataclass
class ReplySplitter:
    """Splits one message's text; ``starts_in_reasoning``: the prompt opened a think block."""

    markers: Markers
    starts_in_reasoning: bool = False

    def _reasoning(self, text: str) -> tuple[str, bool, str]:
        """(reasoning, still open, the rest after the think block)."""
        m = self.markers
        if not (m.think_start and m.think_end):
            return "", False, text
        body = text
        if not self.starts_in_reasoning:
            stripped = text.lstrip()
            if not stripped.startswith(m.think_start):
                return "", False, text
            body = stripped[len(m.think_start):]
        if m.think_end not in body:
            return body.lstrip("\n"), True, ""
        inside, _, rest = body.partition(m.think_end)
        return inside.strip("\n"), False, rest.lstrip("\n")

    def parts(self, text: str) -> ReplyParts:
        reasoning, open_, rest = self._reasoning(text)
        out = ReplyParts(reasoning=reasoning, reasoning_open=open_)
        start, end = self.markers.call_start, self.markers.call_end
        if open_ or not start or start not in rest:
            if not open_ and end and end in rest:  # a call's end with no start: not a call, nor the answer
                out.open_call, out.unclosed, out.unstarted = True, rest, True
                return out
            out.content = rest.lstrip()
            return out
        content, _, rest = rest.partition(start)
        out.content = content.lstrip()
        while True:
            if end not in rest:
                out.open_call, out.unclosed = True, rest
                return out
            call, _, rest = rest.partition(end)
            out.calls.append(call)
            out.trailing = rest
            head = rest.lstrip()
            if not head.startswith(start):
                return out
            rest = head[len(start):]

    def calls_done(self, text: str) -> bool:
        """True once a call has closed and what follows cannot be another call: the model
        may only write further calls after one (Qwen3.5's template: no text after a call)."""
        p = self.parts(text)
        if not p.calls or p.open_call:
            return False
        tail = p.trailing.lstrip()
        return bool(tail) and not (self.markers.call_start or "").startswith(tail)

    def shown(self, text: str, final: bool = False) -> tuple[str, str]:
        """(reasoning, visible text) that may be shown now; ``final``: the message has ended,
        so no tail can still become a marker."""
        m = self.markers
        if not final and not self.starts_in_reasoning and m.think_start and m.think_start.startswith(text.lstrip()):
            return "", ""  # nothing yet, or the start of a think marker
        p = self.parts(text)
        reasoning = p.reasoning
        if p.reasoning_open and not final:  # hold back a tail that may yet be "\n</think>"
            reasoning = reasoning[:safe_length(reasoning, m.think_end)].rstrip("\n")
        if p.reasoning_open:
            return reasoning, ""
        return reasoning, self.text(p, final)

    def text(self, p: ReplyParts, final: bool = False) -> str:
        """The visible text of a message: before its calls. A call never closed is not text
        either: it is neither a call nor the answer (the chat shows it as an unclosed call)."""
        if not p.calls and not p.open_call and not final:
            return p.content[:safe_length(p.content, self.markers.call_start)]
        return p.content
