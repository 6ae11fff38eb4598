"""The chat loop: Qwen writes text, asks for the GPU in its own tool-call format, answers.

A turn renders the conversation with the base's own chat template (tools described the
way the template describes them, ``enable_thinking`` as asked: ``template``), samples
text from the combined model's text side (``textgen``: launch tokens masked out), and
splits each message as it streams (``reply``): its reasoning, its text, then one or more
tool calls. The calls are parsed with the tool parser mlx-lm infers from that template,
run as launches in the combined model (``calls``: text tokens masked out there, the
circuit writes every launch token), and their results go back as tool messages; Qwen
continues until a message has no call. Everything the caller shows arrives as typed
events from :meth:`ChatSession.turn`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

import mlx.core as mx
from mlx_lm.sample_utils import make_sampler

from qwengpu_mlx.chat.calls import GpuTools, LaunchRecord, ToolOutcome, call_expression
from qwengpu_mlx.chat.copying import CopyGuard, result_strings
from qwengpu_mlx.chat.prefix import prefill_prefix, shared_prefix
from qwengpu_mlx.chat.prompt_cache_prefill import PrefillProgress
from qwengpu_mlx.chat.quoting import AnswerCheck, check_answer
from qwengpu_mlx.chat.reply import Markers, ReplySplitter
from qwengpu_mlx.chat.startup import timed
from qwengpu_mlx.chat.template import Prompt, render_prompt
from qwengpu_mlx.chat.textgen import GenStats, TextGenerator
from qwengpu_mlx.chat.tools import MODES, error_text

MAX_RETRIES = 3  # advanced mode: failed kernels the model may fix, per turn
MAX_CALLS = 8  # tool calls per turn before the model is told to answer without the GPU
UNPARSED = "?"  # ToolCallStarted's name for a call that did not parse


@dataclass(frozen=True)
class ChatSettings:
    """What ``qwengpu-mlx chat`` takes (mlx_lm.chat's flags, plus mode, thinking and check)."""

    mode: str = "normal"
    max_tokens: int = 512  # per assistant message, reasoning included
    temp: float = 0.0
    top_p: float = 1.0
    seed: int = 0
    system_prompt: str | None = None
    check: bool = False
    thinking: bool | None = None  # enable_thinking for the template; None: the template's own default
    copy_results: bool = True  # a result the answer starts to copy is finished as the GPU wrote it (chat.copying)


@dataclass(frozen=True)
class TextPiece:
    text: str  # assistant text, streamed (tool-call markup is not included)


@dataclass(frozen=True)
class ReasoningPiece:
    text: str  # the model's reasoning (its think block), streamed; never part of the answer


@dataclass(frozen=True)
class ToolCallStarted:
    name: str
    arguments: dict  # as parsed; {} when the call did not parse
    expression: str = ""  # what it asks (calls.call_expression): the expression, a kernel, or the raw text


@dataclass(frozen=True)
class UnclosedCall:
    text: str  # a tool call the message started and never closed: not run, and not the answer
    started: bool = True  # False: it ended a call it never started (its text was streamed as the answer's)


@dataclass(frozen=True)
class ToolCallDone:
    outcome: ToolOutcome


STOP_REASONS = ("eos", "max_tokens", "max_tokens_in_reasoning", "tool_limit")


@dataclass
class TurnSummary:
    """mlx-lm's summary lines for the turn, and every launch it made."""

    stats: GenStats
    peak_memory_gb: float
    launches: list[LaunchRecord] = field(default_factory=list)
    answer: str = ""  # the assistant's final message text (its reasoning excluded)
    tool_results: list[ToolOutcome] = field(default_factory=list)
    stopped: str = "eos"  # one of STOP_REASONS
    reasoning: str = ""  # the final message's reasoning
    check: AnswerCheck = field(default_factory=AnswerCheck)  # the answer's numbers against the results
    unclosed_call: str | None = None  # a call the final message never closed (shown as such)
    copy_forced: int = 0  # answer tokens chat.copying held to a result the model had begun to copy


@dataclass
class Message:
    """One assistant message as generated: its parts, and why generation stopped."""

    reasoning: str
    content: str
    calls: list[str]  # raw text inside each <tool_call>...</tool_call>
    stopped: str
    unclosed: str | None = None  # the text of a call it started and never closed
    unstarted: bool = False  # that call has an end and no start (``ReplyParts.unstarted``)


@dataclass
class ChatSession:
    """One conversation with a chat model (``models.ChatModel``)."""

    model: object  # models.ChatModel
    settings: ChatSettings = ChatSettings()
    messages: list[dict] = field(default_factory=list)
    progress: PrefillProgress | None = None  # told (processed, total) while a prompt is prefilled (a display)

    def __post_init__(self):
        if self.settings.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}")
        mx.random.seed(self.settings.seed)
        self.text = TextGenerator(self.model.combined.base, make_sampler(self.settings.temp, self.settings.top_p),
                                  progress=self.progress)
        self.tools = GpuTools(self.model.combined.circuit, self.model.machine, self.settings.check)
        self.reset()

    @property
    def offered(self) -> list[dict]:
        """The tools this model is offered in this mode (the demo: the ones it was trained with)."""
        return self.model.tools[self.settings.mode]

    def _ensure_prefix(self) -> None:
        """The shared prompt start (system prompt, tools) prefilled once, before the first turn."""
        if self.text.prefix is not None or not self.model.identity:
            return
        s = self.settings
        tokens = shared_prefix(self.model.tokenizer, s.system_prompt, self.offered, s.thinking)
        with timed(self.model.log, f"the prompt's shared start ({len(tokens)} tokens: system prompt and tools)"):
            self.text.prefix = prefill_prefix(self.model.combined.base, tokens, self.model.identity, self.model.log,
                                              self.progress)

    def reset(self) -> None:
        """mlx_lm.chat's ``r``: a fresh conversation and cache."""
        self.messages = ([{"role": "system", "content": self.settings.system_prompt}]
                         if self.settings.system_prompt else [])
        self.text.reset()

    def turn(self, user_text: str, launch_events=None) -> Iterator[object]:
        """Events of one user turn; the last is the :class:`TurnSummary`.

        ``launch_events``: a runtime ``LaunchEvents`` sink for every launch (the dashboard's panes).
        A turn stopped before its summary (Ctrl-C, or the caller closing the events) leaves
        the conversation as it was before it: the partial reply is not kept."""
        self._ensure_prefix()
        kept, done = len(self.messages), False
        try:
            summary = yield from self._turn(user_text, launch_events)
            done = True
            yield summary
        except BaseException:  # KeyboardInterrupt or GeneratorExit mid-reply: drop the reply, keep the chat
            if not done:
                self._drop_reply(kept)
            raise

    def _drop_reply(self, kept: int) -> None:
        """Forget an interrupted reply: its messages, and the cache that may hold part of it."""
        del self.messages[kept:]
        self.text.reset()

    def _turn(self, user_text: str, launch_events):
        self.messages.append({"role": "user", "content": user_text})
        summary = TurnSummary(GenStats(), 0.0)
        mx.reset_peak_memory()
        failures = 0
        while True:
            msg = yield from self._assistant_message(summary)
            if msg.unclosed is not None:
                yield UnclosedCall(msg.unclosed, started=not msg.unstarted)
            if not msg.calls:
                self.messages.append(_assistant_message(msg, []))
                summary.answer, summary.stopped, summary.reasoning = msg.content, msg.stopped, msg.reasoning
                summary.unclosed_call = msg.unclosed
                break
            parsed = [self._parse_call(c) for c in msg.calls]
            self.messages.append(_assistant_message(msg, parsed))
            for call in parsed:
                expression = call_expression(call)
                yield ToolCallStarted(call.get("name", UNPARSED), call.get("arguments") or {}, expression)
                outcome = self._run_call(call, len(summary.tool_results), failures, launch_events)
                outcome.expression = expression
                failures += outcome.error
                summary.tool_results.append(outcome)
                summary.launches.extend(outcome.launches)
                yield ToolCallDone(outcome)
                self.messages.append({"role": "tool", "content": outcome.content})
            if len(summary.tool_results) > MAX_CALLS:  # a model that only ever calls: end the turn
                summary.answer, summary.stopped, summary.reasoning = msg.content, "tool_limit", msg.reasoning
                break
        summary.peak_memory_gb = mx.get_peak_memory() / 1e9
        summary.check = check_answer(summary.answer, summary.tool_results, user_text)
        return summary

    def _run_call(self, call: dict, calls_so_far: int, failures: int, events) -> ToolOutcome:
        """The call's outcome, or a refusal once the turn's retries or calls are used up."""
        if "error" in call:
            return ToolOutcome(error_text(call["error"]), True)
        if calls_so_far >= MAX_CALLS or failures > MAX_RETRIES:
            return ToolOutcome(error_text("no more GPU calls in this turn: answer with what you have"), True)
        return self.tools.run(call, self.settings.mode, events)

    def _prompt(self) -> Prompt:
        return render_prompt(self.model.tokenizer, self.messages, self.offered, self.settings.thinking)

    def _copy_guard(self, split: ReplySplitter, start: int, summary: TurnSummary) -> CopyGuard | None:
        """The copying constraint over this turn's results, on the message's shown text."""
        results = result_strings([t.content for t in summary.tool_results if not t.error])
        if not (self.settings.copy_results and results):
            return None
        tok = self.model.tokenizer

        def visible(fed: list[int]) -> str | None:  # the message: what was fed after its prompt
            p = split.parts(tok.decode(fed[start:]))
            return None if p.reasoning_open or p.open_call or p.calls else p.content

        return CopyGuard(results, visible, lambda t: tok.encode(t, add_special_tokens=False),
                         lambda i: tok.decode([i]))

    def _assistant_message(self, summary: TurnSummary):
        """Generate one assistant message, streaming its reasoning and text; it ends at the
        end-of-message token, when its tool calls are done, or at ``max_tokens``."""
        tok = self.model.tokenizer
        prompt = self._prompt()
        split = ReplySplitter(Markers.of(tok), prompt.opens_reasoning)
        detok = tok.detokenizer
        detok.reset()
        shown = _Shown()
        eos, stopped = set(tok.eos_token_ids), "max_tokens"
        guard = self._copy_guard(split, len(prompt.tokens), summary)
        self.text.processor = guard
        gen = self.text.generate(prompt.tokens, self.settings.max_tokens, summary.stats)
        try:
            for token in gen:
                if token in eos:
                    stopped = "eos"
                    break
                detok.add_token(token)
                yield from shown.new_pieces(split.shown(detok.text))
                if split.calls_done(detok.text):
                    stopped = "eos"
                    break
        finally:
            gen.close()
            self.text.processor = None
            summary.copy_forced += guard.forced if guard is not None else 0
        detok.finalize()
        text = detok.text
        parts = split.parts(text)
        if not parts.calls:
            yield from shown.new_pieces(split.shown(text, final=True))
        if parts.reasoning_open and stopped == "max_tokens":
            stopped = "max_tokens_in_reasoning"
        content = split.text(parts, final=True)
        start = "" if parts.unstarted else Markers.of(tok).call_start or ""
        unclosed = start + parts.unclosed if parts.open_call else None
        return Message(parts.reasoning.strip(), content.strip(), parts.calls, stopped, unclosed, parts.unstarted)

    def _parse_call(self, call_text: str) -> dict:
        """mlx-lm's parser for this template; {"error": why, "raw": text} when the call does not parse."""
        parser = self.model.tokenizer.tool_parser
        try:
            call = parser(call_text.strip(), self.offered)
        except Exception as e:  # the parsers raise what they meet; nothing the model writes may crash the chat
            return {"error": f"the tool call did not parse ({type(e).__name__}: {e})", "raw": call_text}
        if isinstance(call, list):
            call = call[0] if call else {}
        if not isinstance(call, dict) or "name" not in call:
            return {"error": "the tool call names no function", "raw": call_text}
        return call


@dataclass
class _Shown:
    """How much of the message's reasoning and text has been streamed."""

    reasoning: int = 0
    text: int = 0

    def new_pieces(self, now: tuple[str, str]):
        reasoning, text = now
        if len(reasoning) > self.reasoning:
            yield ReasoningPiece(reasoning[self.reasoning:])
            self.reasoning = len(reasoning)
        if len(text) > self.text:
            yield TextPiece(text[self.text:])
            self.text = len(text)


def _assistant_message(msg: Message, calls: list[dict]) -> dict:
    """The assistant's message as the template renders it: its reasoning as
    ``reasoning_content`` (the template decides where it is kept), parsed calls as
    ``tool_calls``, a call that did not parse as the raw text it was."""
    content = msg.content
    raw = [c["raw"] for c in calls if "error" in c]
    if raw:
        content = "\n".join([content] + [f"<tool_call>\n{r.strip()}\n</tool_call>" for r in raw]).strip()
    out = {"role": "assistant", "content": content}
    if msg.reasoning:
        out["reasoning_content"] = msg.reasoning
    good = [c for c in calls if "error" not in c]
    if good:
        out["tool_calls"] = [{"type": "function", "function": {"name": c["name"], "arguments": c.get("arguments", {})}}
                             for c in good]
    return out
