"""``qwengpu-mlx chat``: mlx_lm.chat's flags and commands (q, r, h), with the GPU as a tool.

Each turn streams the reply (its reasoning dimmed and labelled), shows each tool call
(its expression) and the GPU's result verbatim on lines of their own, apart from the
model's prose, flags an answer that states a number the GPU did not produce
(``chat.quoting``) beside the true value, and ends with mlx-lm's summary lines (prompt and
generation tokens and tokens/s, peak memory) plus a line per launch (kernel, tokens,
tokens/s, whether ``--check`` found it exact). Ctrl-C stops the reply (the conversation
goes on without it); Ctrl-C at the prompt exits 130, Ctrl-D or ``q`` exits 0. Piped
input is read line by line as mlx_lm.chat reads the terminal (``q`` ends, ``r`` resets,
``h`` helps); with ``--json`` each turn prints one JSON object instead.
"""

from __future__ import annotations

import json
import sys

from qwengpu_mlx.core.errors import ModelError
from qwengpu_mlx.runtime import CircuitStore
from qwengpu_mlx.runtime.speed import summary_lines as mlx_lm_lines
from qwengpu_mlx.splice.machine_choice import named_machine

from qwengpu_mlx.chat.models import DEMO, GET_A_MODEL, ChatModelError, open_chat_model
from qwengpu_mlx.chat.prompt_cache_progress import prefill_display

from qwengpu_mlx.chat.session import (UNPARSED, ChatSession, ChatSettings, ReasoningPiece, TextPiece, ToolCallDone,
                                      ToolCallStarted, TurnSummary, UnclosedCall)
from qwengpu_mlx.chat.tools import GPU_EVAL_NAME

HELP = "commands: q exit, r reset the conversation, h help; Ctrl-C stops a reply"
RESET = "[context cleared]"
STOPPED = "[reply stopped: it is left out of the conversation; Ctrl-C at the prompt, Ctrl-D or q quits]"
INTERRUPTED = 130  # the shell's status for a command Ctrl-C ended
REASONING_OPEN, REASONING_CLOSE = "[reasoning]", "[end of reasoning]"
DIM, PLAIN = "\x1b[2m", "\x1b[0m"


def settings_from(ns) -> ChatSettings:
    return ChatSettings(mode=ns.mode, max_tokens=ns.max_tokens, temp=ns.temp, top_p=ns.top_p, seed=ns.seed,
                        system_prompt=ns.system_prompt, check=ns.check, thinking=getattr(ns, "thinking", None))


def _log(text: str) -> None:
    print(f"[{text}]", file=sys.stderr, flush=True)


def open_model(spec: str, machine, log=_log):
    """The chat model, or the CLI's error (exit 2) with the reason."""
    try:
        return open_chat_model(spec, CircuitStore(), machine=machine, log=log)
    except ChatModelError as e:
        raise ModelError(f"--model {spec}: {e}") from None


def _choose_model(ns) -> str | None:
    """--model, or (without it) the demo if the user says so: never a silent fallback."""
    if ns.model:
        return ns.model
    print(GET_A_MODEL, file=sys.stderr)
    if ns.json or not sys.stdin.isatty():
        print("error: no --model given (pass --model demo for the toy model)", file=sys.stderr)
        return None
    answer = input("Chat with the demo model now? [y/N] ").strip().lower()
    return DEMO if answer in ("y", "yes") else None


def run(ns) -> int:
    spec = _choose_model(ns)
    if spec is None:
        return 2
    model = open_model(spec, named_machine(ns.machine))  # none named: the default machine when its circuit fits
    if model.note:
        print(model.note, file=sys.stderr)
    if not model.has_tools:
        print(f"warning: {spec}'s chat template has no tool calls: Qwen cannot ask for the GPU", file=sys.stderr)
    progress = prefill_display(ns.json, sys.stderr, _log)  # a slow base's prefill counts its tokens
    session = ChatSession(model, settings_from(ns), progress=progress)
    try:
        if ns.json or not sys.stdin.isatty():
            return _batch(session, ns.json)
        print(f"qwengpu-mlx chat: {spec} ({ns.mode} mode). {HELP}")
        return _interactive(session)
    finally:
        progress.close()


def _interactive(session) -> int:
    """mlx_lm.chat's loop; Ctrl-C stops the reply under way (the conversation is kept without
    it), at the prompt it exits 130 as a shell expects; Ctrl-D exits 0."""
    while True:
        try:
            query = input(">> ")
        except EOFError:
            print()
            return 0
        except KeyboardInterrupt:
            print()
            return INTERRUPTED
        if command(query, session, sys.stdout, as_json=False) == "quit":
            return 0
        if query not in COMMANDS:
            interruptible_turn(session, query, sys.stdout)


def interruptible_turn(session, query: str, out) -> TurnSummary | None:
    """One turn shown on ``out``; on Ctrl-C the reply stops, is dropped from the
    conversation (``ChatSession.turn``) and None comes back."""
    events = session.turn(query)
    try:
        return show_turn(events, out)
    except KeyboardInterrupt:
        events.close()  # the turn drops its partial reply (a no-op if Ctrl-C struck inside it)
        if hasattr(getattr(session, "progress", None), "close"):  # Ctrl-C in a prefill: its live line goes
            session.progress.close()
        out.write("\n" + STOPPED + "\n")
        out.flush()
        return None


COMMANDS = ("q", "r", "h")


def command(query: str, session, out, as_json: bool) -> str | None:
    """mlx_lm.chat's commands: "quit" for ``q``; ``r`` and ``h`` answered here; None for a question."""
    if query not in COMMANDS:
        return None
    if query == "q":
        return "quit"
    if query == "r":
        session.reset()
    said = RESET if query == "r" else HELP
    out.write((json.dumps({"command": query, "said": said}) if as_json else said) + "\n")
    out.flush()
    return query


def _batch(session, as_json: bool) -> int:
    """Piped input: one line a turn, with the same commands as the terminal."""
    for line in sys.stdin:
        query = line.strip()
        if not query:
            continue
        verdict = command(query, session, sys.stdout, as_json)
        if verdict == "quit":
            return 0
        if verdict is not None:
            continue
        if as_json:
            summary = _last(session.turn(query))
            print(json.dumps(turn_record(query, summary)), flush=True)
        else:
            print(f">> {query}")
            show_turn(session.turn(query), sys.stdout)
    return 0


def _last(events):
    out = None
    for out in events:
        pass
    return out


def show_turn(events, out, color: bool | None = None) -> TurnSummary:
    """Print a turn's events as they come (reasoning dimmed and labelled); the summary lines at the end.

    ``color``: dim the reasoning with ANSI codes (default: when ``out`` is a terminal)."""
    view = _TurnView(out, out.isatty() if color is None else color)
    summary = None
    for ev in events:
        if isinstance(ev, TurnSummary):
            summary = ev
        else:
            view.show(ev)
    view.end_reasoning()
    out.write("\n")
    for note in (stop_note(summary), check_note(summary)):
        if note:
            out.write(note + "\n")
    for line in summary_lines(summary):
        out.write(line + "\n")
    out.flush()
    return summary


class _TurnView:
    """Writes a turn's events; knows whether a reasoning block is open on screen."""

    def __init__(self, out, color: bool):
        self.out, self.color, self.reasoning = out, color, False

    def show(self, ev) -> None:
        if isinstance(ev, ReasoningPiece):
            self.begin_reasoning()
            self.out.write(ev.text)
        else:
            self.end_reasoning()
            if isinstance(ev, TextPiece):
                self.out.write(ev.text)
            elif isinstance(ev, ToolCallStarted):
                self.out.write(f"\n[{call_line(ev)}]\n")
            elif isinstance(ev, ToolCallDone):
                self.out.write(f"[{result_line(ev.outcome.content)}]\n")
            elif isinstance(ev, UnclosedCall):
                self.out.write(f"\n[{unclosed_line(ev)}]\n")
        self.out.flush()

    def begin_reasoning(self) -> None:
        if not self.reasoning:
            self.out.write((DIM if self.color else "") + REASONING_OPEN + "\n")
            self.reasoning = True

    def end_reasoning(self) -> None:
        if self.reasoning:
            self.out.write("\n" + REASONING_CLOSE + (PLAIN if self.color else "") + "\n")
            self.reasoning = False


def call_line(ev: ToolCallStarted) -> str:
    """A tool call as the user reads it: ``gpu_eval: [1, 2] @ [3, 4]``; another tool with its
    arguments; a call that did not parse, as written."""
    if ev.name == UNPARSED:
        return f"tool call that did not parse: {ev.expression}"
    if ev.name == GPU_EVAL_NAME and "expression" in ev.arguments:
        return f"{ev.name}: {ev.expression}"
    args = ", ".join(f"{k}={v!r}" for k, v in ev.arguments.items())
    return f"tool call: {ev.name}({args})"


def unclosed_line(ev: UnclosedCall) -> str:
    """A call the message never closed, or ended without starting: not run, never the answer
    (the latter's text streamed as the answer's until its end marker came)."""
    if ev.started:
        return f"a tool call never closed, so not run (and not the answer): {ev.text.strip()}"
    return (f"a tool call ended that never started, so not run (and the reply's text is not the answer): "
            f"{ev.text.strip()}")


def result_line(content: str) -> str:
    """The GPU's answer verbatim: ``result: 11``, or the tool's ``error: why`` (one prefix)."""
    return content if content.startswith("error:") else f"result: {content}"


def check_note(s: TurnSummary) -> str:
    """A line when the answer states a number the GPU did not produce (``chat.quoting``)."""
    flag = s.check.flag()
    return f"[{flag}]" if flag else ""


def stop_note(s: TurnSummary) -> str:
    """A line when the reply did not end on its own: the budget ran out (in reasoning or not)."""
    if s.stopped == "max_tokens_in_reasoning":
        return ("[the reply used all of --max-tokens while still reasoning, so it has no answer: raise it "
                "(e.g. --max-tokens 4096) or turn thinking off (--no-thinking)]")
    if s.stopped == "max_tokens":
        return "[the reply stopped at --max-tokens: raise it (e.g. --max-tokens 2048) for a longer one]"
    if s.stopped == "tool_limit":
        return "[the turn ended after too many tool calls]"
    if s.unclosed_call is not None:
        return "[the reply ended inside a tool call, or ended one it never started: nothing was run]"
    return ""


def summary_lines(s: TurnSummary) -> list[str]:
    """mlx-lm's three summary lines, then one per launch."""
    lines = mlx_lm_lines(s.stats, s.peak_memory_gb)
    for r in s.launches:
        verdict = {True: "exact (checked)", False: "NOT EXACT", None: "not checked"}[r.exact]
        lines.append(f"Launch: {r.kernel}, {r.tokens} tokens, {r.tokens_per_s:.3f} tokens-per-sec, {verdict}")
    return lines


def turn_record(query: str, s: TurnSummary) -> dict:
    """One turn as JSON (``--json``)."""
    st = s.stats
    return {"user": query, "answer": s.answer, "reasoning": s.reasoning, "stopped": s.stopped,
            "calls": [t.to_json() for t in s.tool_results], **s.check.to_json(), "unclosed_call": s.unclosed_call,
            "copy_forced": s.copy_forced,
            "tool_results": [{"content": t.content, "error": t.error} for t in s.tool_results],
            "launches": [{"kernel": r.kernel, "tokens": r.tokens, "tokens_per_s": round(r.tokens_per_s, 3),
                          "exact": r.exact, "logit_margin": round(r.logit_margin, 4)} for r in s.launches],
            "prompt_tokens": st.prompt_tokens, "prompt_tps": round(st.prompt_tps, 3),
            "generation_tokens": st.generation_tokens, "generation_tps": round(st.generation_tps, 3),
            "peak_memory_gb": round(s.peak_memory_gb, 3)}
