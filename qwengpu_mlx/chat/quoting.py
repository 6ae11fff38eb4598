"""Whether an answer states only numbers its GPU computed: the check behind every flag.

A model copies a tool result into its answer, and a model can copy it wrong (``531241``
for ``531441``), or state a number after the tool refused (``The GPU computed 14.``).
:func:`check_answer` compares the numbers an answer states with the turn's tool results:

* a bracketed list in the answer (``[11, 22, 33]``) must be one of the results' vectors;
* a bare integer must be a scalar result or an element of a vector result;
* a call's expression restated verbatim (``[1, 2] @ [3, 4] = 11``) is the question, not a
  claim, and is left out before the numbers are read; so is a number the user's question or
  a call's expression or a tool error holds (``3 to the power of 9 is 19683``), as long as the answer also
  states a result (an answer whose only numbers are the question's states none of the GPU's)
  or, after calls that all failed, gives the GPU's reason.

The verdict (:class:`AnswerCheck`) says whether the answer is ``quoted`` (every number it
states is a result; vacuously true when it states none) and, for each number that is not,
the stated text beside the GPU's nearest value (:class:`Misquote`); after calls that all
failed, whether the answer gives the GPU's reason (``misexplained`` when it does not). The
chat, the JSON and the dashboard show :meth:`AnswerCheck.flag` beside the answer.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

_DECIMAL = r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
_LIST = re.compile(rf"\[\s*{_DECIMAL}(?:\s*,\s*{_DECIMAL})*\s*\]")
# A number in prose: ``-12``, ``1,048,576``, ``3.5`` or ``1e-45`` (a float result is the
# shortest decimal that reads back as the GPU's float32: the answer must state those
# digits, so ``2.3333333333`` for ``2.3333333`` is not the GPU's number); not one inside a
# word (``Qwen3``, ``15th``).
_NUMBER = re.compile(r"(?<![\w.])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?(?!\w)")
# A float result's infinities and NaN as the tool writes them, read as JSON's spellings.
_SPECIAL = re.compile(r"(?<![\w\"])(-?)(inf|nan)(?![\w\"])")
_ERROR_PREFIX = "error:"


@dataclass(frozen=True)
class Misquote:
    """A number the answer states that no tool result holds."""

    stated: str  # as the answer wrote it: "531241" or "[1, 2, 4, 2]"
    true: str  # the GPU's value it most likely copies ("" when the turn has no result)


@dataclass
class AnswerCheck:
    """One answer against the turn's tool results."""

    stated: list[str] = field(default_factory=list)  # every number / list the answer states, in order
    misquotes: list[Misquote] = field(default_factory=list)
    results: list[str] = field(default_factory=list)  # the GPU's values this turn (tool results without errors)
    errors: list[str] = field(default_factory=list)  # the tool errors this turn (their text, one "error:" prefix)
    answer: str = ""

    @property
    def quoted(self) -> bool:
        """Every number the answer states is one of the results (true when it states none)."""
        return not self.misquotes

    @property
    def misexplained(self) -> bool:
        """The turn's calls all failed and the answer does not give the GPU's reason (the
        last error's text): a model may invent one."""
        if self.results or not self.errors or not self.answer:
            return False
        why = self.errors[-1].removeprefix(_ERROR_PREFIX).strip()
        return why not in self.answer

    @property
    def after_error(self) -> bool:
        """The answer states a number although no call this turn gave a value."""
        return bool(self.misquotes) and not self.results and bool(self.errors)

    def flag(self) -> str | None:
        """What to show the user beside the answer, or None when it states only the GPU's
        results (and, after a failed call, gives the GPU's reason)."""
        if self.quoted:
            return f"not the GPU's reason: the GPU said {self.errors[-1]}" if self.misexplained else None
        said = ", ".join(m.stated for m in self.misquotes)
        if not self.results:
            why = f" ({self.errors[-1]})" if self.errors else ""
            return f"not from the GPU: the answer states {said}, but the GPU computed no value this turn{why}"
        true = "; ".join(f"the answer states {m.stated}, the GPU computed {m.true}" for m in self.misquotes)
        return f"not from the GPU: {true}"

    def to_json(self) -> dict:
        return {"quoted": self.quoted, "misquotes": [{"stated": m.stated, "true": m.true} for m in self.misquotes],
                "flag": self.flag()}


def tool_values(content: str) -> list[object]:
    """A tool result's values: an int or a float, a list of them, or each array of a
    kernel's result (``{"out": [...]}``); [] for an error or text that is not a value."""
    if content.strip().startswith(_ERROR_PREFIX):
        return []
    spelled = _SPECIAL.sub(lambda m: m.group(1) + ("Infinity" if m.group(2) == "inf" else "NaN"), content)
    try:
        value = json.loads(spelled)
    except ValueError:
        return []
    if isinstance(value, dict):
        return [v for v in value.values() if _is_value(v)]
    return [value] if _is_value(value) else []


def _is_value(v) -> bool:
    """An int or a float (a float32 result), or a list of them."""
    items = v if isinstance(v, list) else [v]
    return all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in items)


def stated_numbers(answer: str, expressions: list[str] = ()) -> list[object]:
    """The numbers and bracketed lists of numbers ``answer`` states, in order, with the
    calls' expressions (the question restated) left out."""
    text = answer
    for e in sorted((e for e in expressions if e), key=len, reverse=True):
        text = text.replace(e, " ")
    found: list[tuple[int, object]] = []
    for m in _LIST.finditer(text):
        found.append((m.start(), json.loads(m.group(0))))
    rest = _LIST.sub(lambda m: " " * len(m.group(0)), text)
    for m in _NUMBER.finditer(rest):
        found.append((m.start(), _number(m.group(0))))
    return [v for _, v in sorted(found, key=lambda p: p[0])]


def _number(text: str) -> int | float:
    plain = text.replace(",", "")
    return float(plain) if any(c in plain for c in ".eE") else int(plain)


def check_answer(answer: str, outcomes, question: str = "") -> AnswerCheck:
    """``answer`` against the turn's tool outcomes (``calls.ToolOutcome``: ``content``,
    ``error`` and ``expression``); ``question``: the user's, whose numbers it may restate."""
    values = [v for o in outcomes if not o.error for v in tool_values(o.content)]
    expressions = [getattr(o, "expression", "") for o in outcomes]
    errors = [o.content for o in outcomes if o.error]  # an answer may quote the GPU's reason
    check = AnswerCheck(results=[o.content for o in outcomes if not o.error and tool_values(o.content)],
                        errors=errors, answer=answer)
    # After calls that all failed, the question's numbers are restated only beside the GPU's
    # reason; without it ("The GPU computed 14.") they are claims.
    asked = [] if check.misexplained else [question] + expressions
    echoes = stated_numbers(" ".join(asked + errors))
    stated = stated_numbers(answer, expressions)
    check.stated = [_text(v) for v in stated]
    claims = [v for v in stated if not (_is_result(v, values) or v in echoes)]
    if values and stated and not claims and not any(_is_result(v, values) for v in stated):
        claims = stated  # it restates the question's numbers and none of the GPU's: that is its claim
    check.misquotes = [Misquote(_text(v), _nearest(v, values)) for v in claims]
    return check


def _is_result(v, values: list[object]) -> bool:
    if isinstance(v, list):
        return any(v == r for r in values)
    return any(v == r or (isinstance(r, list) and v in r) for r in values)


def _nearest(v, values: list[object]) -> str:
    """The result ``v`` most likely copies: of the same kind (list or not), the closest."""
    same = [r for r in values if isinstance(r, list) == isinstance(v, list)] or values
    if not same:
        return ""
    return _text(min(same, key=lambda r: _distance(v, r)))


def _distance(v, r) -> float:
    if isinstance(v, list) and isinstance(r, list):
        return sum(a != b for a, b in zip(v, r)) + abs(len(v) - len(r))
    if isinstance(v, list) or isinstance(r, list):
        return float("inf")
    return abs(v - r)


def _text(v) -> str:
    return "[" + ", ".join(str(x) for x in v) + "]" if isinstance(v, list) else str(v)
