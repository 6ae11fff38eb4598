"""The message splitter alone: Qwen3.5's think block, text and tool calls, fed a character at a time.

Feeding every prefix of a message is what the loop does token by token (with tokens of
any length), so these check that no prefix ever shows a half-written marker, and that the
pieces shown add up to the message's reasoning and text.
"""

from __future__ import annotations

from qwengpu_mlx.chat.reply import Markers, ReplySplitter

QWEN = Markers("<think>", "</think>", "<tool_call>", "</tool_call>")
CALL = "<tool_call>\n<function=gpu_eval>\n<parameter=expression>\n1 + 2\n</parameter>\n</function>\n</tool_call>"


def stream(split: ReplySplitter, message: str) -> tuple[str, str]:
    """(reasoning, text) as shown at the end; what any prefix showed is a prefix of it (so
    nothing shown, a half-written marker included, is ever taken back)."""
    shown = [split.shown(message[:n]) for n in range(1, len(message) + 1)]
    r, t = split.shown(message, final=True)
    for (r0, t0), (r1, t1) in zip(shown, shown[1:] + [(r, t)]):
        assert r1.startswith(r0) and t1.startswith(t0), (r0, t0, r1, t1)
    return r, t


def test_a_think_block_the_prompt_opened_then_a_call():
    split = ReplySplitter(QWEN, starts_in_reasoning=True)
    message = "Add them.\n</think>\n\n" + CALL
    assert stream(split, message) == ("Add them.", "")
    p = split.parts(message)
    assert p.reasoning == "Add them." and not p.reasoning_open and p.calls == [CALL[11:-12]]


def test_a_think_block_the_model_opened_then_text():
    split = ReplySplitter(QWEN)
    assert stream(split, "<think>\nHm.\n</think>\n\nHello there.") == ("Hm.", "Hello there.")


def test_without_think_markers_everything_is_text():
    split = ReplySplitter(Markers(None, None, "<tool_call>", "</tool_call>"))
    assert stream(split, "<think>not special here</think> hi") == ("", "<think>not special here</think> hi")


def test_two_calls_and_when_the_calls_are_done():
    split = ReplySplitter(QWEN)
    two = "Both.\n\n" + CALL + "\n" + CALL
    assert not split.calls_done(CALL + "\n<tool")  # another call may be starting
    assert not split.calls_done(two)  # a call just closed: the end of message decides
    assert split.calls_done(two + "\nAnd then some text")  # text after calls: the model is done calling
    assert len(split.parts(two).calls) == 2 and split.parts(two).content == "Both.\n\n"


def test_a_call_never_closed_is_never_the_answer():
    """The text before it is the message's text; the call stays an open call, not text."""
    split = ReplySplitter(QWEN)
    message = "Let me see <tool_call>\n<function=gpu_eval>"
    r, t = stream(split, message)
    assert (r, t) == ("", "Let me see ")
    p = split.parts(message)
    assert p.open_call and p.unclosed == "\n<function=gpu_eval>" and not p.calls


def test_reasoning_that_never_closes_shows_no_text():
    split = ReplySplitter(QWEN, starts_in_reasoning=True)
    r, t = stream(split, "Still going, and <tool_call> inside reasoning is reasoning")
    assert t == "" and r.endswith("is reasoning") and split.parts("x").reasoning_open


def test_a_call_ended_but_never_started_is_not_the_answer():
    """A toy's reply that writes a call's body and end marker without its start: a call that
    does not parse, never the message's text."""
    split = ReplySplitter(QWEN)
    message = "I could not compute that: pow(1, 2)\n</parameter>\n</function>\n</tool_call>"
    p = split.parts(message)
    assert p.open_call and p.unstarted and p.unclosed == message and p.content == "" and not p.calls
    assert split.text(p, final=True) == ""
