"""End to end: the demo chat model really writes the tool calls, and answers with the GPU's number.

``--model demo`` opens the trained toy model shipped in the package, widens it exactly to a
width the circuit fits beside, combines it with the machine's circuit (folded at
Qwen3.5-2B's shape) in memory, and the real chat loop talks to it. The questions are
generated with a seed the training never used; the expected values come from the data
generator's Python oracle (``demo_data``), not from our kernels. Each answer's number
must have come from a launch checked exact against the reference interpreter, read out
of the recurrent state.
"""

from __future__ import annotations

import pytest

from qwengpu_mlx.chat.evaluate import contains_value
from qwengpu_mlx.chat.session import ChatSession, ChatSettings, ToolCallStarted, TurnSummary

HELD_OUT_SEED = 20261202  # scripts/train_demo_chat.py trains and validates on other seeds
CHEAP = ("@", "+", "sum(", "gcd(", "pow(", " - ")  # forms whose launches take tens of tokens, not hundreds


def held_out_questions(n: int):
    """``n`` generated questions of different forms with short launches (suite time)."""
    from qwengpu_mlx.chat.demo_data import questions

    picked, forms = [], set()
    for q in questions(400, HELD_OUT_SEED):
        form = next((f for f in CHEAP if f in q.expression), None)
        if q.error or form is None or form in forms or "[[" in q.expression or "sort" in q.expression:
            continue
        picked.append(q)
        forms.add(form)
        if len(picked) == n:
            return picked
    raise AssertionError("the generator gave too few held-out questions")


@pytest.fixture(scope="module")
def demo():
    from qwengpu_mlx.chat.models import open_chat_model
    from qwengpu_mlx.runtime import CircuitStore

    return open_chat_model("demo", CircuitStore())


def test_demo_opens_as_a_spliced_model(demo):
    from qwengpu_mlx.compiler.sizing import QWEN35_2B
    from qwengpu_mlx.splice.layout import shape_sizes, splice_misfits

    lay = demo.combined.layout
    assert splice_misfits(lay.base, shape_sizes(QWEN35_2B)) == []
    assert lay.circuit_hidden == QWEN35_2B.hidden and demo.has_tools
    assert "not Qwen" in demo.note


def test_the_demo_model_answers_with_gpu_numbers(demo):
    """Six held-out questions through the real chat loop.

    Whatever the toy writes, every launch must be exact (replayed against the reference
    interpreter) and a tool value must be what the launch left in memory; a question is
    right when that value is the oracle's and the answer states it. The toy is imperfect
    (the training script measured 81% exact calls on held-out questions): at least half
    must be right (``qwengpu-mlx chat --model demo`` runs the same loop)."""
    session = ChatSession(demo, ChatSettings(check=True, max_tokens=200))
    right = []
    for q in held_out_questions(6):
        session.reset()
        events = list(session.turn(q.text))
        summary = events[-1]
        assert isinstance(summary, TurnSummary)
        calls = [e for e in events if isinstance(e, ToolCallStarted)]
        assert all(c.name == "gpu_eval" for c in calls)
        assert all(r.exact for r in summary.launches)  # every launch checked against the reference
        for result in summary.tool_results:
            if not result.error:  # the tool's value is what the last launch left in memory (the state)
                words = [v for out in result.launches[-1].launch.outputs.values() for v in out]
                assert all(contains_value(" ".join(map(str, words)), int(x)) for x in
                           result.content.strip("[]").split(",")), result.content
        gpu_right = any(not r.error and r.launches and contains_value(r.content, q.value)
                        for r in summary.tool_results)
        if gpu_right and contains_value(summary.answer, q.value):
            right.append(q.text)
    assert len(right) >= 3, f"right: {right}"
