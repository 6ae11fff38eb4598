"""``qwengpu-mlx eval chat``: how often Qwen answers right with a number its GPU computed.

A question set is JSON: ``{"normal": [{"question": ..., "answer": N or [N, ...]}, ...],
"advanced": [...]}`` (the shipped one: ``data/questions.json``, 24 normal and 5 advanced
questions; ``--questions FILE`` brings another). Each question is a fresh conversation,
every launch checked against the reference interpreter. A question counts as right only
when the expected value is in a tool response that launches produced (so the GPU
computed it, every launch exact) and in the final answer's text; in advanced mode it is
right first try when the first tool call already gave it.

Every question's record can be audited: its ``calls`` (expression, the GPU's result or
error, exact, launch tokens), its ``answer``, and whether the answer is ``quoted``: every
number it states is one of the results (``chat.quoting``). The counts: ``right``;
``launched`` (a call ran on the GPU); ``exact`` (it did, every launch exact); ``quoted``
(the answer states a number, and every number it states is a result); ``misquoted`` (it
states one that no result holds). ``quoted / launched`` is the copy rate.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Callable

from qwengpu_mlx.chat.session import ChatSession, ChatSettings, TurnSummary

_INT = re.compile(r"-?\d+")


class QuestionSetError(ValueError):
    """A question file that is not in the documented JSON form; the message says where."""


def load_questions(path: Path | None = None) -> dict[str, list[dict]]:
    """The question set at ``path`` (default: the shipped one), validated."""
    try:
        text = (Path(path).read_text() if path is not None else
                resources.files("qwengpu_mlx.chat").joinpath("data/questions.json").read_text())
        data = json.loads(text)
    except (OSError, ValueError) as e:
        raise QuestionSetError(f"{path}: {e}") from None
    if not isinstance(data, dict):
        raise QuestionSetError(f"{path}: expected an object with 'normal' and/or 'advanced' lists")
    for mode, items in data.items():
        if mode not in ("normal", "advanced") or not isinstance(items, list):
            raise QuestionSetError(f"{path}: key {mode!r}: expected 'normal' or 'advanced' with a list")
        for i, q in enumerate(items):
            if not (isinstance(q, dict) and isinstance(q.get("question"), str) and _is_answer(q.get("answer"))):
                raise QuestionSetError(f"{path}: {mode}[{i}]: expected {{\"question\": text, \"answer\": an integer "
                                       f"or a list of integers}}")
    return data


def _is_answer(a) -> bool:
    ints = a if isinstance(a, list) else [a]
    return bool(ints) and all(isinstance(x, int) and not isinstance(x, bool) for x in ints)


def contains_value(text: str, expected) -> bool:
    """Whether ``text`` states ``expected``: the integer, or the list's integers in order, adjacent."""
    found = [int(x) for x in _INT.findall(text)]
    want = expected if isinstance(expected, list) else [expected]
    return any(found[i:i + len(want)] == want for i in range(len(found) - len(want) + 1))


@dataclass
class QuestionResult:
    question: str
    expected: object
    answer: str
    gpu_value: bool  # the expected value is in a tool response that launches produced
    in_answer: bool
    first_try: bool  # the first tool call already produced it
    tool_calls: int
    launches: list[dict] = field(default_factory=list)  # kernel, tokens, exact
    calls: list[dict] = field(default_factory=list)  # calls.ToolOutcome.to_json of each call
    quoted: bool = True  # every number the answer states is a result (quoting.AnswerCheck.quoted)
    misquotes: list[dict] = field(default_factory=list)  # {"stated", "true"} for each that is not
    states_number: bool = False  # the answer states a number at all
    copy_forced: int = 0  # answer tokens held to a result being copied (chat.copying)

    @property
    def right(self) -> bool:
        return self.gpu_value and self.in_answer and all(ln["exact"] for ln in self.launches)

    @property
    def launched(self) -> bool:
        return bool(self.launches)

    @property
    def exact(self) -> bool:
        return self.launched and all(ln["exact"] for ln in self.launches)


@dataclass
class ChatEval:
    mode: str
    results: list[QuestionResult]

    @property
    def right(self) -> int:
        return sum(r.right for r in self.results)

    @property
    def right_first_try(self) -> int:
        return sum(r.right and r.first_try for r in self.results)

    @property
    def launches(self) -> list[dict]:
        return [ln for r in self.results for ln in r.launches]

    def counts(self) -> dict:
        """Questions answered right, launched, exact, quoted and misquoted (module docstring)."""
        rs = self.results
        return {"right": self.right, "launched": sum(r.launched for r in rs), "exact": sum(r.exact for r in rs),
                "quoted": sum(r.quoted and r.states_number for r in rs), "misquoted": sum(not r.quoted for r in rs)}

    def to_json(self) -> dict:
        return {"mode": self.mode, "questions": len(self.results), **self.counts(),
                "right_first_try": self.right_first_try,
                "launches": len(self.launches), "launches_exact": sum(bool(ln["exact"]) for ln in self.launches),
                "results": [vars(r) | {"right": r.right, "launched": r.launched, "exact": r.exact}
                            for r in self.results]}


def score(question: str, expected, summary: TurnSummary) -> QuestionResult:
    """One question's verdict from its turn (see the module docstring)."""
    from_gpu = [t for t in summary.tool_results if not t.error and t.launches]
    first = summary.tool_results[:1]
    launches = [{"kernel": r.kernel, "tokens": r.tokens, "exact": bool(r.exact)} for r in summary.launches]
    return QuestionResult(question, expected, summary.answer,
                          gpu_value=any(contains_value(t.content, expected) for t in from_gpu),
                          in_answer=contains_value(summary.answer, expected),
                          first_try=bool(first) and not first[0].error and contains_value(first[0].content, expected),
                          tool_calls=len(summary.tool_results), launches=launches,
                          calls=[t.to_json() for t in summary.tool_results], quoted=summary.check.quoted,
                          misquotes=summary.check.to_json()["misquotes"], states_number=bool(summary.check.stated),
                          copy_forced=summary.copy_forced)


def evaluate_chat(model, mode: str, questions: list[dict], settings: ChatSettings | None = None,
                  on_result: Callable[[int, QuestionResult], None] | None = None) -> ChatEval:
    """Every question as its own conversation on ``model``, launches checked."""
    base = settings or ChatSettings()
    settings = ChatSettings(mode=mode, max_tokens=base.max_tokens, temp=base.temp, top_p=base.top_p,
                            seed=base.seed, system_prompt=base.system_prompt, check=True, thinking=base.thinking,
                            copy_results=base.copy_results)
    session = ChatSession(model, settings)
    results = []
    for i, q in enumerate(questions):
        session.reset()
        summary = None
        for summary in session.turn(q["question"]):
            pass
        results.append(score(q["question"], q["answer"], summary))
        if on_result is not None:
            on_result(i, results[-1])
    return ChatEval(mode, results)


def report_lines(ev: ChatEval) -> list[str]:
    """The eval's summary for a person."""
    n = len(ev.results)
    lines = [f"eval chat ({ev.mode} mode): {ev.right}/{n} answered right with a GPU-computed number"]
    if ev.mode == "advanced":
        lines.append(f"  right first try: {ev.right_first_try}/{n}; after retries: {ev.right}/{n}")
    exact = sum(bool(ln["exact"]) for ln in ev.launches)
    lines.append(f"  launches: {len(ev.launches)}, exact (checked against the reference): {exact}")
    c = ev.counts()
    lines.append(f"  questions launched: {c['launched']}, all launches exact: {c['exact']}; answers quoting "
                 f"only GPU results: {c['quoted']}, stating a number the GPU did not produce: {c['misquoted']}")
    return lines
