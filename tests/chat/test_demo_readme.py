"""The demo answers what the README asks it, through the real chat loop, with its own prompt.

The demo is a toy that writes the right call only after the prompt it was trained on: its
``gpu_eval`` description is pinned beside its weights (``chat/demo/tools.json``, the one its
training checkpoint records), while any other model is offered today's (``chat/tools.py``).
The README's example questions are read from the README itself and answered by an oracle
here (a dot product in Python); the shipped questions are in ``test_demo_answers.py``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from qwengpu_mlx.chat.demo import DEMO_DIR, demo_tools
from qwengpu_mlx.chat.evaluate import contains_value
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


def dot_of(question: str) -> int:
    a, b = re.search(r"(\[[-\d, ]+\]) @ (\[[-\d, ]+\])", question).groups()
    return sum(x * y for x, y in zip(json.loads(a), json.loads(b)))


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
        summary, want = events[-1], dot_of(q)
        calls = [e.expression for e in events if isinstance(e, ToolCallStarted)]
        assert [t.content for t in summary.tool_results] == [str(want)], (q, calls)
        assert all(r.exact for r in summary.launches) and summary.check.quoted
        assert contains_value(summary.answer, want), (q, summary.answer)
