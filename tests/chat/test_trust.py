"""What the user sees around the GPU's results: each call and its result verbatim, a flag on
an answer that misstates one, an unclosed call shown as such, the JSON that audits it, and
Ctrl-C stopping the reply but not the chat.

A scripted model (``chat_script.ScriptedModel``) writes the assistant's messages, the real
circuit runs the launches (checked against the reference); expected values are computed
here from what each question means."""

from __future__ import annotations

import builtins
import io
import json


from tests.support.chat_script import ScriptedModel
from tests.support.qwen35_chat import call

from qwengpu_mlx.chat import cli as chat_cli
from qwengpu_mlx.chat.models import ChatModel
from qwengpu_mlx.chat.session import ChatSession, ChatSettings, TextPiece, TurnSummary, UnclosedCall
from qwengpu_mlx.core.machine import PUBLISHED_MACHINE


def session(tokenizer, runner, script: list) -> ChatSession:
    from qwengpu_mlx.splice.combined_runner import CombinedModel

    base = ScriptedModel(tokenizer, script, len(tokenizer.vocab))
    model = ChatModel("scripted", CombinedModel(base, None, None, runner), tokenizer, PUBLISHED_MACHINE)
    return ChatSession(model, ChatSettings(check=True, max_tokens=200))


def printed_turn(s: ChatSession, question: str) -> tuple[str, TurnSummary]:
    out = io.StringIO()
    summary = chat_cli.show_turn(s.turn(question), out, color=False)
    return out.getvalue(), summary


def test_a_misquoted_result_is_flagged_beside_the_true_value(tokenizer, runner):
    a, b = [3, 1, 2], [4, 5, 6]
    dot = sum(x * y for x, y in zip(a, b))
    s = session(tokenizer, runner, [call("gpu_eval", expression=f"{a} @ {b}"), f"The GPU computed {dot + 10}."])
    printed, summary = printed_turn(s, f"What is {a} @ {b}?")
    assert f"[gpu_eval: {a} @ {b}]\n[result: {dot}]\n" in printed  # the call and the GPU's value, verbatim
    assert f"[not from the GPU: the answer states {dot + 10}, the GPU computed {dot}]" in printed
    record = chat_cli.turn_record("q", summary)
    assert record["quoted"] is False and record["misquotes"] == [{"stated": str(dot + 10), "true": str(dot)}]
    assert record["calls"] == [{"expression": f"{a} @ {b}", "result": str(dot), "error": False, "exact": True,
                                "tokens": summary.launches[0].tokens, "launches": 1}]
    json.dumps(record)


def test_a_faithful_answer_has_no_flag(tokenizer, runner):
    s = session(tokenizer, runner, [call("gpu_eval", expression="gcd(84, 36)"), "gcd(84, 36) is 12."])
    printed, summary = printed_turn(s, "What is the greatest common divisor of 84 and 36?")
    assert "[result: 12]" in printed and "not from the GPU" not in printed
    assert chat_cli.turn_record("q", summary)["quoted"] is True


def test_a_number_after_a_tool_error_is_flagged(tokenizer, runner):
    s = session(tokenizer, runner, [call("gpu_eval", expression="[1, 2] @ [3]"), "The GPU computed 14."])
    printed, summary = printed_turn(s, "What is [1, 2] @ [3]?")
    error = summary.tool_results[0].content
    assert error.startswith("error: ") and f"\n[{error}]\n" in printed and "error: error" not in printed
    assert "[not from the GPU: the answer states 14, but the GPU computed no value this turn" in printed


def test_a_call_never_closed_is_shown_as_such_not_as_the_answer(tokenizer, runner):
    s = session(tokenizer, runner, ["Let me see.\n<tool_call>\n<function=gpu_eval>\n<parameter=expression>\n1 + "])
    out = io.StringIO()
    events = list(s.turn("What is 1 + 2?"))
    summary = events[-1]
    chat_cli.show_turn(iter(events), out, color=False)
    text = "".join(e.text for e in events if isinstance(e, TextPiece))
    assert "<tool_call>" not in text and summary.answer == "Let me see."
    assert [e.text for e in events if isinstance(e, UnclosedCall)][0].startswith("<tool_call>\n<function=gpu_eval>")
    assert summary.unclosed_call is not None and not summary.tool_results
    assert "[a tool call never closed, so not run (and not the answer): <tool_call>" in out.getvalue()
    assert chat_cli.turn_record("q", summary)["unclosed_call"].startswith("<tool_call>")


class CtrlCOnce:
    """A message that is Ctrl-C the first time the model writes it, then ``text``."""

    def __init__(self, text: str):
        self.text, self.fired = text, False

    def __call__(self, conversation: str) -> str:
        if not self.fired:
            self.fired = True
            raise KeyboardInterrupt
        return self.text


def test_ctrl_c_stops_the_reply_and_the_chat_goes_on(tokenizer, runner):
    s = session(tokenizer, runner, ["Hello.", CtrlCOnce("Again.")])
    printed, _ = printed_turn(s, "hi")
    before = list(s.messages)
    out = io.StringIO()
    assert chat_cli.interruptible_turn(s, "and?", out) is None  # Ctrl-C while it writes
    assert chat_cli.STOPPED in out.getvalue()
    assert s.messages == before  # the partial reply (and its question) left out
    printed, summary = printed_turn(s, "and?")
    assert summary.answer == "Again." and len(s.messages) == len(before) + 2


def test_ctrl_c_at_the_prompt_exits_130_and_ctrl_d_0(tokenizer, runner, monkeypatch, capsys):
    s = session(tokenizer, runner, ["Hello."])

    def ctrl_c(prompt):
        raise KeyboardInterrupt

    def ctrl_d(prompt):
        raise EOFError

    monkeypatch.setattr(builtins, "input", ctrl_c)
    assert chat_cli._interactive(s) == 130
    monkeypatch.setattr(builtins, "input", ctrl_d)
    assert chat_cli._interactive(s) == 0


def test_a_result_begun_is_copied_as_the_gpu_wrote_it(tokenizer, runner):
    """The script changes the last digit of 3**7 = 2187; with the copy guard the answer keeps
    the GPU's digits (the script then has nothing to say and ends), without it the flag shows."""
    want = 3 ** 7
    script = [call("gpu_eval", expression="pow(3, 7)"), f"The GPU computed {want - 3}."]
    guarded = session(tokenizer, runner, script)
    printed, summary = printed_turn(guarded, "What is 3 to the power of 7?")
    assert summary.tool_results[0].content == str(want)
    assert summary.answer == f"The GPU computed {want}" and summary.copy_forced == 1
    assert summary.check.quoted and "not from the GPU" not in printed
    free = session(tokenizer, runner, script)
    free.settings = ChatSettings(check=True, max_tokens=200, copy_results=False)
    printed, summary = printed_turn(free, "What is 3 to the power of 7?")
    assert summary.answer == f"The GPU computed {want - 3}." and summary.copy_forced == 0
    assert f"[not from the GPU: the answer states {want - 3}, the GPU computed {want}]" in printed


def test_a_call_ended_but_never_started_is_shown_as_such_not_as_the_answer(tokenizer, runner):
    reply = "I could not compute that: pow(1, 2)\n</parameter>\n</function>\n</tool_call>"
    s = session(tokenizer, runner, [reply])
    out = io.StringIO()
    events = list(s.turn("What is 1 + 2?"))
    summary = events[-1]
    chat_cli.show_turn(iter(events), out, color=False)
    [unclosed] = [e for e in events if isinstance(e, UnclosedCall)]
    assert not unclosed.started and unclosed.text == reply
    assert summary.answer == "" and summary.unclosed_call == reply and not summary.tool_results
    assert "[a tool call ended that never started, so not run (and the reply's text is not the answer): I could" \
        in out.getvalue()
