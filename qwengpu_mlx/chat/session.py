"""The chat loop: Qwen writes text, asks for the GPU in its own tool-call format, answers.

A turn renders the conversation with the base's own chat template (tools described the
way the template describes them), samples text from the combined model's text side
(``textgen``: launch tokens masked out), and pauses when a tool call ends. The call is
parsed with the tool parser mlx-lm infers from that template, run as launches in the
combined model (``calls``: text tokens masked out there, the circuit writes every launch
token), and its result goes back as the tool's message; Qwen continues until it ends
its message. Everything the caller shows arrives as typed events from :meth:`ChatSession.turn`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

import mlx.core as mx

from .calls import GpuTools, LaunchRecord, ToolOutcome
from .textgen import GenStats, TextGenerator
from .tools import TOOLS, error_text

MODES = ("normal", "advanced")
MAX_RETRIES = 3  # advanced mode: failed kernels the model may fix, per turn
MAX_CALLS = 8  # tool calls per turn before the model is told to answer without the GPU


@dataclass(frozen=True)
class ChatSettings:
    """What ``qwengpu-mlx chat`` takes (mlx_lm.chat's flags, plus mode and check)."""

    mode: str = "normal"
    max_tokens: int = 512  # per generation segment
    temp: float = 0.0
    top_p: float = 1.0
    seed: int = 0
    system_prompt: str | None = None
    check: bool = False


@dataclass(frozen=True)
class TextPiece:
    text: str  # assistant text, streamed (tool-call markup is not included)


@dataclass(frozen=True)
class ToolCallStarted:
    name: str
    arguments: dict  # as parsed; {} when the call did not parse


@dataclass(frozen=True)
class ToolCallDone:
    outcome: ToolOutcome


@dataclass
class TurnSummary:
    """mlx-lm's summary lines for the turn, and every launch it made."""

    stats: GenStats
    peak_memory_gb: float
    launches: list[LaunchRecord] = field(default_factory=list)
    answer: str = ""  # the assistant's final message text
    tool_results: list[ToolOutcome] = field(default_factory=list)
    stopped: str = "eos"  # eos | max_tokens | tool_limit


@dataclass
class ChatSession:
    """One conversation with a chat model (``models.ChatModel``)."""

    model: object  # models.ChatModel
    settings: ChatSettings = ChatSettings()
    messages: list[dict] = field(default_factory=list)

    def __post_init__(self):
        from mlx_lm.sample_utils import make_sampler

        if self.settings.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}")
        mx.random.seed(self.settings.seed)
        self.text = TextGenerator(self.model.combined.base, make_sampler(self.settings.temp, self.settings.top_p))
        self.tools = GpuTools(self.model.combined.circuit, self.model.machine, self.settings.check)
        self.reset()

    def reset(self) -> None:
        """mlx_lm.chat's ``r``: a fresh conversation and cache."""
        self.messages = ([{"role": "system", "content": self.settings.system_prompt}]
                         if self.settings.system_prompt else [])
        self.text.reset()

    def turn(self, user_text: str, launch_events=None) -> Iterator[object]:
        """Events of one user turn; the last is the :class:`TurnSummary`.

        ``launch_events``: a runtime ``LaunchEvents`` sink for every launch (the dashboard's panes)."""
        self.messages.append({"role": "user", "content": user_text})
        summary = TurnSummary(GenStats(), 0.0)
        mx.reset_peak_memory()
        failures = 0
        while True:
            content, call_text, stopped = yield from self._assistant_segment(summary.stats)
            if call_text is None:
                self.messages.append({"role": "assistant", "content": content})
                summary.answer, summary.stopped = content, stopped
                break
            call = self._parse_call(call_text)
            yield ToolCallStarted(call.get("name", "?"), call.get("arguments") or {})
            outcome = self._run_call(call, len(summary.tool_results), failures, launch_events)
            failures += outcome.error
            summary.tool_results.append(outcome)
            summary.launches.extend(outcome.launches)
            yield ToolCallDone(outcome)
            self.messages.append(_assistant_call_message(content, call, call_text))
            self.messages.append({"role": "tool", "content": outcome.content})
            if len(summary.tool_results) > MAX_CALLS:  # a model that only ever calls: end the turn
                summary.answer, summary.stopped = content, "tool_limit"
                break
        summary.peak_memory_gb = mx.get_peak_memory() / 1e9
        yield summary

    def _run_call(self, call: dict, calls_so_far: int, failures: int, events) -> ToolOutcome:
        """The call's outcome, or a refusal once the turn's retries or calls are used up."""
        if "error" in call:
            return ToolOutcome(error_text(call["error"]), True)
        if calls_so_far >= MAX_CALLS or failures > MAX_RETRIES:
            return ToolOutcome(error_text("no more GPU calls in this turn: answer with what you have"), True)
        return self.tools.run(call, self.settings.mode, events)

    def _prompt(self) -> list[int]:
        return list(self.model.tokenizer.apply_chat_template(self.messages, tools=TOOLS[self.settings.mode],
                                                             add_generation_prompt=True))

    def _assistant_segment(self, stats: GenStats):
        """Generate until the message ends or a tool call closes: (text, call text or None, why)."""
        tok = self.model.tokenizer
        start, end = tok.tool_call_start, tok.tool_call_end
        detok = tok.detokenizer
        detok.reset()
        text, shown, eos = "", 0, set(tok.eos_token_ids)
        stopped = "max_tokens"
        gen = self.text.generate(self._prompt(), self.settings.max_tokens, stats)
        try:
            for token in gen:
                if token in eos:
                    stopped = "eos"
                    break
                detok.add_token(token)
                text = detok.text
                if start and start in text:
                    if end in text[text.index(start):]:
                        break
                    continue
                safe = _safe_prefix_length(text, start)
                if safe > shown:
                    yield TextPiece(text[shown:safe])
                    shown = safe
        finally:
            gen.close()
        detok.finalize()
        text = detok.text
        if start and start in text and end in text[text.index(start):]:
            before, _, rest = text.partition(start)
            return before.strip(), rest.partition(end)[0], "tool_call"
        if len(text) > shown:
            yield TextPiece(text[shown:])
        return text.strip(), None, stopped

    def _parse_call(self, call_text: str) -> dict:
        """mlx-lm's parser for this template; {"error": why} when the call does not parse."""
        parser = self.model.tokenizer.tool_parser
        try:
            call = parser(call_text.strip(), TOOLS[self.settings.mode])
        except Exception as e:  # the parsers raise what they meet; nothing the model writes may crash the chat
            return {"error": f"the tool call did not parse ({type(e).__name__}: {e})"}
        if isinstance(call, list):
            call = call[0] if call else {}
        if not isinstance(call, dict) or "name" not in call:
            return {"error": "the tool call names no function"}
        return call


def _safe_prefix_length(text: str, marker: str | None) -> int:
    """How much of ``text`` can be shown: all but a tail that could start ``marker``."""
    if not marker:
        return len(text)
    for k in range(min(len(marker) - 1, len(text)), 0, -1):
        if marker.startswith(text[-k:]):
            return len(text) - k
    return len(text)


def _assistant_call_message(content: str, call: dict, raw: str) -> dict:
    """The assistant's message as the template renders a tool call (raw text if it did not parse)."""
    if "error" in call:
        return {"role": "assistant", "content": f"{content}\n<tool_call>\n{raw.strip()}\n</tool_call>".strip()}
    return {"role": "assistant", "content": content,
            "tool_calls": [{"type": "function", "function": {"name": call["name"],
                                                             "arguments": call.get("arguments", {})}}]}
