"""The demo answers what the README asks it, through the real chat loop, with its own prompt.

The demo is a toy that writes the right call only after the prompt it was trained on: its
``gpu_eval`` description is pinned beside its weights (``chat/demo/tools.json``, the one its
training checkpoint records), while any other model is offered today's (``chat/tools.py``).
The README's example questions are read from the README itself and answered by an oracle
here (a dot product in Python, a mean in NumPy's float32); the shipped questions are in
``test_demo_answers.py``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from qwengpu_mlx.chat.demo import DEMO_DIR, demo_tools
from qwengpu_mlx.chat.models import ChatModel
from qwengpu_mlx.chat.session import ChatSession, ChatSettings, ToolCallStarted
from qwengpu_mlx.chat.tools import TOOLS

README = Path(__file__).resolve().parents[2] / "README.md"
CHECKPOINT_STATE = Path(__file__).resolve().parents[2] / "scripts" / "demo_checkpoint" / "state.json"


def readme_questions() -> list[str]:
    """The questions the README puts to the demo: the piped chat example and the dashboard's."""
    text = README.read_text()
    piped = [" ".join(q.split()) for q in re.findall(r"printf '(.+?)\\nq\\n' \| qwengpu-mlx chat --model demo",
                                                     text, re.S)]
    dashboard = re.findall(r'--model demo --chat "(.+?)"', text)
    return piped + dashboard


def meaning(question: str) -> str:
    """What the question asks, as the tool's result text: a dot product (``@``), or the
    float32 mean of integers (``the mean of [...]``: NumPy's one rounding of sum / n)."""
    dot = re.search(r"(\[[-\d, ]+\]) @ (\[[-\d, ]+\])", question)
    if dot:
        a, b = (json.loads(v) for v in dot.groups())
        return str(sum(x * y for x, y in zip(a, b)))
    v = json.loads(re.search(r"mean of (\[[-\d, ]+\])", question).group(1))
    return _shortest(np.float32(sum(v)) / np.float32(len(v)))


def _shortest(x: np.float32) -> str:
    """The shortest decimal that reads back as ``x`` in float32 (NumPy's own float32 repr),
    a whole one with its point (``4.0``: a float, as ``run`` prints one)."""
    return np.format_float_positional(x, unique=True, trim="0")


@pytest.fixture(scope="module")
def demo():
    from qwengpu_mlx.chat.models import open_chat_model
    from qwengpu_mlx.runtime import CircuitStore

    return open_chat_model("demo", CircuitStore())


def test_the_demo_is_offered_the_description_it_was_trained_with():
    pinned = json.loads((DEMO_DIR / "tools.json").read_text())["normal"]
    assert demo_tools()["normal"] == pinned and demo_tools()["advanced"] == TOOLS["advanced"]
    assert pinned[0]["function"]["name"] == TOOLS["normal"][0]["function"]["name"]
    assert pinned == json.loads(CHECKPOINT_STATE.read_text())["tools"]  # what its training offered
    assert ChatModel("any", None, None, None).tools == TOOLS  # a real Qwen3.5: today's description


def test_the_readme_questions(demo):
    questions = readme_questions()
    assert len(questions) >= 2, questions
    session = ChatSession(demo, ChatSettings(check=True, max_tokens=200))
    for q in questions:
        session.reset()
        events = list(session.turn(q))
        summary, want = events[-1], meaning(q)
        calls = [e.expression for e in events if isinstance(e, ToolCallStarted)]
        assert [t.content for t in summary.tool_results] == [want], (q, calls)
        assert all(r.exact for r in summary.launches) and summary.check.quoted
        assert want in re.findall(r"-?\d+(?:\.\d+)?", summary.answer.replace(",", "")), (q, summary.answer)
