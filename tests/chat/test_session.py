"""The chat loop with a scripted model: calls parsed, launches run in the model, results go back.

The base is :class:`chat_script.ScriptedModel` (it writes given messages), the tokenizer
and chat template the demo model's (Qwen3.5's XML tool-call format, mlx-lm's
``qwen3_coder`` parser), the launches the real circuit (checked against the reference).
Expected values are computed here from each question's meaning.
"""

from __future__ import annotations


from tests.support.chat_script import ScriptedModel
from tests.support.qwen35_chat import call

from qwengpu_mlx.chat.models import ChatModel
from qwengpu_mlx.chat.session import MAX_RETRIES, ChatSession, ChatSettings, TextPiece, ToolCallDone, \
    ToolCallStarted, TurnSummary
from qwengpu_mlx.core.machine import PUBLISHED_MACHINE


def session(tokenizer, runner, script: list[str], mode="normal") -> ChatSession:
    from qwengpu_mlx.splice.combined_runner import CombinedModel

    base = ScriptedModel(tokenizer, script, len(tokenizer.vocab))
    model = ChatModel("scripted", CombinedModel(base, None, None, runner), tokenizer, PUBLISHED_MACHINE)
    return ChatSession(model, ChatSettings(mode=mode, check=True, max_tokens=400))


def events_of(s: ChatSession, text: str) -> list:
    return list(s.turn(text))


def test_a_tool_call_runs_in_the_model_and_its_result_goes_back(tokenizer, runner):
    a, b = [7, -2, 5], [3, 4, -6]
    expected = sum(x * y for x, y in zip(a, b))  # 21 - 8 - 30
    s = session(tokenizer, runner, ["Let me use the GPU.\n\n" + call("gpu_eval", expression=f"{a} @ {b}"),
                                    f"The GPU computed {expected}."])
    evs = events_of(s, f"What is {a} @ {b}?")
    started = [e for e in evs if isinstance(e, ToolCallStarted)]
    done = [e for e in evs if isinstance(e, ToolCallDone)]
    summary = evs[-1]
    assert isinstance(summary, TurnSummary)
    assert [(e.name, e.arguments) for e in started] == [("gpu_eval", {"expression": f"{a} @ {b}"})]
    assert done[0].outcome.content == str(expected) and not done[0].outcome.error
    assert summary.launches and all(r.exact for r in summary.launches)  # checked against the reference
    # the value came from the launch's memory, read from the recurrent state
    assert expected in [v for r in summary.launches for out in r.launch.outputs.values() for v in out]
    assert summary.answer == f"The GPU computed {expected}."
    text = "".join(e.text for e in evs if isinstance(e, TextPiece))
    assert "<tool_call>" not in text and "Let me use the GPU." in text
    # the tool's response went back through the chat template as Qwen3.5 renders it
    assert s.messages[-2] == {"role": "tool", "content": str(expected)}
    prompt = tokenizer.decode(s.text.fed)
    assert f"<tool_response>\n{expected}\n</tool_response>" in prompt
    assert summary.stats.generation_tokens > 0 and summary.peak_memory_gb > 0


def test_what_a_model_writes_never_crashes_the_chat(tokenizer, runner):
    script = ["<tool_call>\nnot a function at all\n</tool_call>",
              call("rm_rf", path="/"),
              call("gpu_eval", expression="[1, 2, 3] @ [4, 5]"),
              call("gpu_eval", expression="[" + ", ".join(f"{k}.0" for k in range(1, 18)) + "] / 3.0"),
              "Sorry, I could not compute that."]
    s = session(tokenizer, runner, script)
    summary = events_of(s, "break things")[-1]
    results = summary.tool_results
    assert [r.error for r in results] == [True, True, True, True]
    assert "did not parse" in results[0].content or "names no function" in results[0].content
    assert "unknown tool 'rm_rf'" in results[1].content
    assert "3" in results[2].content and "2" in results[2].content  # the two lengths
    assert "--machine large" in results[3].content  # 17 float divisions outgrow the published machine's ROM
    assert not summary.launches and summary.answer == "Sorry, I could not compute that."


ADD_OK = """__global__ void add(const int* a, const int* b, int* out, int n) {
    int i = threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}"""
ADD_SYNTAX = ADD_OK.replace("out[i] = a[i] + b[i];", "out[i] = a[i] + b[i]")
ADD_DOUBLE = ADD_OK.replace("out[i] = a[i] + b[i];", "out[i] = (int)((double)a[i] * 0.5) + b[i];")


def test_advanced_mode_compiler_errors_go_back_for_retries(tokenizer, runner):
    a, b = [1, -2, 30, 4], [10, 20, -3, 40]
    args = f'{{"a": {a}, "b": {b}, "out": [0, 0, 0, 0], "n": 4}}'
    expected = [x + y for x, y in zip(a, b)]
    script = [call("gpu_kernel", source=ADD_SYNTAX, args=args, block=4),
              call("gpu_kernel", source=ADD_DOUBLE, args=args, block=4),
              call("gpu_kernel", source=ADD_OK, args=args, block=4),
              f"out = {expected}"]
    s = session(tokenizer, runner, script, mode="advanced")
    summary = events_of(s, "add two arrays with a kernel")[-1]
    first, second, third = summary.tool_results
    assert first.error and "kernel.cu:3" in first.content  # clang's message, at the model's own line
    assert second.error and "kernel.cu:3" in second.content and "double" in second.content  # the machine's refusal
    assert not third.error and f'"out": {expected}' in third.content
    assert len(summary.launches) == 1 and summary.launches[0].exact
    assert summary.answer == f"out = {expected}"


def test_retries_are_bounded(tokenizer, runner):
    bad = call("gpu_kernel", source="__global__ void k( {", args="{}", block=1)
    s = session(tokenizer, runner, [bad] * (MAX_RETRIES + 3) + ["I give up."], mode="advanced")
    summary = events_of(s, "try forever")[-1]
    results = summary.tool_results
    assert all(r.error for r in results)
    assert "no more GPU calls" in results[MAX_RETRIES + 1].content
    assert summary.answer == "I give up."
