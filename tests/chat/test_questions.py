"""The shipped chat question sets and how ``eval chat`` scores an answer.

Every expected answer in ``chat/data/questions.json`` is recomputed here from what the
question asks (plain Python, written from the question's words, not from our kernels).
"""

from __future__ import annotations

import json
import math

import pytest

from qwengpu_mlx.chat.calls import LaunchRecord, ToolOutcome
from qwengpu_mlx.chat.evaluate import QuestionSetError, contains_value, load_questions, score
from qwengpu_mlx.chat.session import TurnSummary
from qwengpu_mlx.chat.textgen import GenStats


def fib(n: int) -> int:
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


NORMAL_MEANING = [
    sum(x * y for x, y in zip([1, 2, 3], [4, 5, 6])),
    [1 * 5 + 2 * 6, 3 * 5 + 4 * 6],
    [1 + 10, 2 + 20, 3 + 30],
    [9 - 1, 8 - 2, 7 - 3],
    [2 * 5, 3 * 6, 4 * 7],
    [3 * 5, -1 * 5, 4 * 5],
    12 + 7 + 30 + 51,
    min(14, -3, 8, 22),
    max(5, 17, 2, 9),
    [4, 9, 2, 9, 1].index(max([4, 9, 2, 9, 1])),
    [1, 1 + 2, 1 + 2 + 3, 1 + 2 + 3 + 4],
    sorted([5, 1, 4, 2, 3]),
    [1, 2, 3, 4, 5][::-1],
    [[0, 1, 1, 3, 2, 1].count(v) for v in range(4)],
    math.gcd(84, 36),
    fib(15),
    3 ** 7,
    123 * 456,
    1234 + 5678,
    sum(x * y for x, y in zip([1, 2, 3, 4], [4, 3, 2, 1])),
    math.gcd(1071, 462),
    2 ** 20,
    100 + 200 + 300 + 400 + 500,
    max(-5, -2, -9, -1),
]

ADVANCED_MEANING = [
    [1 + 10, 2 + 20, 3 + 30, 4 + 40],
    [v * v for v in range(1, 9)],
    sum([3, 1, 4, 1, 5, 9, 2, 6]),
    sum(v > 10 for v in [5, 12, 7, 20, 3, 15]),
    list(range(8, 0, -1)),
]


def test_the_shipped_sets_are_24_normal_and_5_advanced_with_answers_from_their_meaning():
    q = load_questions()
    assert len(q["normal"]) == 24 and len(q["advanced"]) == 5
    assert [x["answer"] for x in q["normal"]] == NORMAL_MEANING
    assert [x["answer"] for x in q["advanced"]] == ADVANCED_MEANING


def test_a_question_file_in_another_form_is_a_clear_error(tmp_path):
    cases = {"not json": "{", "a list": "[]", "an unknown mode": '{"hard": []}',
             "a float answer": '{"normal": [{"question": "q", "answer": 1.5}]}',
             "no question": '{"normal": [{"answer": 1}]}'}
    for what, text in cases.items():
        f = tmp_path / "q.json"
        f.write_text(text)
        with pytest.raises(QuestionSetError):
            load_questions(f)
    f.write_text(json.dumps({"normal": [{"question": "2 + 2?", "answer": 4}]}))
    assert load_questions(f) == {"normal": [{"question": "2 + 2?", "answer": 4}]}


def test_a_value_is_stated_only_as_itself():
    assert contains_value("The GPU computed 32.", 32)
    assert not contains_value("The GPU computed 320.", 32) and not contains_value("1232", 32)
    assert contains_value("min is -3", -3) and not contains_value("min is 3", -3)
    assert contains_value("sorted: [1, 2, 3, 4, 5]", [1, 2, 3, 4, 5])
    assert not contains_value("sorted: [1, 2, 3, 5, 4]", [1, 2, 3, 4, 5])
    assert contains_value('{"out": [11, 22]}', [11, 22])


def _summary(answer: str, results: list[ToolOutcome]) -> TurnSummary:
    s = TurnSummary(GenStats(), 0.0, answer=answer, tool_results=results)
    s.launches = [ln for r in results for ln in r.launches]
    return s


def test_right_needs_the_number_from_an_exact_launch_and_in_the_answer():
    launched = ToolOutcome("32", False, [LaunchRecord("dot", 51, 10.0, True, 1.0)])
    assert score("q", 32, _summary("It is 32.", [launched])).right
    # stated without the GPU: not right
    assert not score("q", 32, _summary("It is 32.", [])).right
    # the GPU said it but the answer did not
    assert not score("q", 32, _summary("It is 23.", [launched])).right
    # a launch that was not exact does not count
    inexact = ToolOutcome("32", False, [LaunchRecord("dot", 51, 10.0, False, 1.0)])
    assert not score("q", 32, _summary("It is 32.", [inexact])).right
    # a bare literal echoed by the tool (no launch) is not a GPU result
    echoed = ToolOutcome("32", False, [])
    assert not score("q", 32, _summary("It is 32.", [echoed])).right
    # right after a retry, not on the first try
    failed = ToolOutcome("error: kernel.cu:2:1: expected ';'", True)
    r = score("q", 32, _summary("It is 32.", [failed, launched]))
    assert r.right and not r.first_try
