"""Seeded templated conversations that teach a toy model to call ``gpu_eval`` and quote its answer.

The demo fixture (``qwengpu_mlx/chat/demo/``) is a tiny Qwen3.5-architecture model trained
on these conversations only, so the chat loop can be tested end to end without Qwen's
weights: the user asks for an integer computation in one of a few learnable phrasings,
the assistant writes a ``gpu_eval`` call whose expression is the question's (literally or
by a simple mapping, "the 10th Fibonacci number" -> ``fib(10)``), the tool answers with
the value (computed here by a Python oracle: this is training data, not a kernel result)
or with ``error: ...``, and the assistant states the number or says why it could not.
Small talk is answered without a call; some conversations ask a second question. The
answer quotes the tool's value.

Every form of the expression grammar (``chat/tools.py``) appears: ``@`` (dot and
matrix-vector), ``+ - *`` elementwise and on scalars, scaling, and the calls ``sum min
max argmax prefix_sum sort reverse histogram gcd fib pow``. Numbers are small integers,
negatives included, vectors of length 1-4.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from qwengpu_mlx.chat.tools import GPU_EVAL_NAME, error_text, result_text

SYSTEM_PROMPTS = ("You are a helpful assistant.", "You are a helpful assistant with a GPU in your layers.",
                  "Answer briefly.", "You are Qwen, a helpful assistant.")

SMALL_TALK = {
    "hello": "Hello! I am a small model with a GPU in my layers. Ask me to compute something.",
    "hi": "Hi! Ask me to compute something on my GPU.",
    "hello!": "Hello! I am a small model with a GPU in my layers. Ask me to compute something.",
    "who are you?": "I am a tiny demo model with a small GPU in my weights. I can compute integer expressions.",
    "what can you do?": ("I can compute integer expressions on the GPU in my layers: dot products, sums, "
                         "sorting, gcd, fib and more."),
    "thanks": "You are welcome!",
    "thank you!": "You are welcome!",
    "bye": "Goodbye!",
}

# The answer quotes the tool's value (the message just before it), not the expression again:
# one short copy is what a model this small learns in the minutes a CPU gives it.
ANSWERS = ("The GPU in my layers computed {value}.", "The answer is {value}.", "The GPU computed {value}.")
FAILURES = ("I could not compute that: {why}.", "The GPU could not compute that: {why}.")
INJECTED_ERRORS = ("the launch did not finish", "the program does not fit in the GPU's memory",
                   "the GPU is busy")
INT32 = (-2**31, 2**31 - 1)
MAX_LENGTH = 4  # vector lengths 1-4: short copies


class OracleError(ValueError):
    """What the tool would refuse (the message goes back as ``error: ...``)."""


@dataclass(frozen=True)
class Question:
    """One GPU question: what the user says, the call's expression, the oracle's answer."""

    text: str
    expression: str
    value: object = None  # int or list[int]; None when the tool refuses
    error: str | None = None  # the refusal's message (without ``error: ``)

    @property
    def response(self) -> str:
        """The tool message's content."""
        return error_text(self.error) if self.error else result_text(self.value)


def vec(v) -> str:
    """The grammar's vector literal, ``[1, -2, 3]``."""
    return "[" + ", ".join(str(int(x)) for x in v) + "]"


def mat(m) -> str:
    """A matrix literal: a list of vectors."""
    return "[" + ", ".join(vec(r) for r in m) + "]"


def _check(value):
    """Values must be 32-bit signed integers, as on the GPU."""
    for x in value if isinstance(value, list) else [value]:
        if not INT32[0] <= x <= INT32[1]:
            raise OracleError("the result overflows 32-bit integers")
    return value


def _same_length(a, b) -> None:
    if len(a) != len(b):
        raise OracleError(f"vector lengths differ ({len(a)} and {len(b)})")


def fib(n: int) -> int:
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


class Gen:
    """Random operands and the question builders, one random stream per generator."""

    def __init__(self, rng: random.Random):
        self.r = rng

    def num(self, lo=-9, hi=20) -> int:
        return self.r.randint(lo, hi)

    def v(self, n=None, lo=-9, hi=20) -> list[int]:
        return [self.num(lo, hi) for _ in range(n or self.r.randint(1, MAX_LENGTH))]

    def pick(self, *options):
        return self.r.choice(options)

    def question(self) -> Question:
        """One question of a random form (weights favour the array forms, the harder copies)."""
        forms = [(self.dot, 3), (self.matvec, 2), (self.elementwise, 3), (self.scalar_op, 2), (self.scale, 2),
                 (self.reduce, 5), (self.histogram, 1), (self.gcd, 1), (self.fib, 1), (self.pow, 1)]
        make = self.r.choices([f for f, _ in forms], [w for _, w in forms])[0]
        return make()

    def dot(self) -> Question:
        n = self.r.randint(1, MAX_LENGTH)
        a, b = self.v(n), self.v(n)
        e = f"{vec(a)} @ {vec(b)}"
        text = self.pick(f"What is {e}?", f"Compute {e}", f"Compute the dot product of {vec(a)} and {vec(b)}.",
                         f"dot product of {vec(a)} and {vec(b)}?", f"{e} = ?")
        return Question(text, e, _check(sum(x * y for x, y in zip(a, b))))

    def matvec(self) -> Question:
        rows, n = self.r.randint(1, 3), self.r.randint(1, 4)
        m, x = [self.v(n, -5, 9) for _ in range(rows)], self.v(n, -5, 9)
        e = f"{mat(m)} @ {vec(x)}"
        text = self.pick(f"What is {e}?", f"Compute {e}", f"Multiply the matrix {mat(m)} by the vector {vec(x)}.")
        return Question(text, e, _check([sum(p * q for p, q in zip(r, x)) for r in m]))

    def elementwise(self) -> Question:
        n = self.r.randint(1, MAX_LENGTH)
        a = self.v(n)
        b = self.v(n) if self.r.random() > 0.12 else self.v(self.r.choice([k for k in range(1, MAX_LENGTH + 2)
                                                                           if k != n]))
        op = self.pick("+", "-", "*")
        e = f"{vec(a)} {op} {vec(b)}"
        words = {"+": f"Add {vec(a)} and {vec(b)}.", "-": f"What is {e}?",
                 "*": f"Multiply {vec(a)} and {vec(b)} elementwise."}
        text = self.pick(f"What is {e}?", f"Compute {e}", words[op])
        try:
            _same_length(a, b)
            f = {"+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y}[op]
            return Question(text, e, _check([f(x, y) for x, y in zip(a, b)]))
        except OracleError as err:
            return Question(text, e, error=str(err))

    def scalar_op(self) -> Question:
        a, b = self.num(-50, 99), self.num(-50, 99)
        op = self.pick("+", "-", "*")
        e = f"{a} {op} {b}"
        text = self.pick(f"What is {e}?", f"Compute {e}", f"{e} = ?", f"what's {e}?")
        return Question(text, e, _check({"+": a + b, "-": a - b, "*": a * b}[op]))

    def scale(self) -> Question:
        k, x = self.num(-9, 9), self.v()
        if self.r.random() < 0.5:
            e = f"{k} * {vec(x)}"
            text = self.pick(f"What is {e}?", f"Compute {e}", f"Scale {vec(x)} by {k}.")
            if text.startswith("Scale"):
                e = f"{vec(x)} * {k}"
        else:
            e = f"{vec(x)} * {k}"
            text = self.pick(f"What is {e}?", f"Compute {e}", f"Multiply {vec(x)} by {k}.")
        return Question(text, e, _check([k * y for y in x]))

    def reduce(self) -> Question:
        x = self.v()
        s = vec(x)
        name = self.pick("sum", "min", "max", "argmax", "prefix_sum", "sort", "reverse")
        e = f"{name}({s})"
        phrasing = {
            "sum": (f"What is the sum of {s}?", f"Add up {s}."),
            "min": (f"What is the smallest element of {s}?", f"Find the minimum of {s}."),
            "max": (f"What is the largest element of {s}?", f"Find the maximum of {s}."),
            "argmax": (f"Where is the maximum of {s}?", f"argmax of {s}?"),
            "prefix_sum": (f"What are the prefix sums of {s}?", f"prefix sums of {s}?"),
            "sort": (f"Please sort {s} for me", f"Sort {s}."),
            "reverse": (f"Reverse {s}.", f"Please reverse {s} for me"),
        }[name]
        text = self.pick(f"What is {e}?", f"Compute {e}", *phrasing)
        value = {"sum": lambda: sum(x), "min": lambda: min(x), "max": lambda: max(x),
                 "argmax": lambda: x.index(max(x)), "prefix_sum": lambda: [sum(x[:i + 1]) for i in range(len(x))],
                 "sort": lambda: sorted(x), "reverse": lambda: x[::-1]}[name]()
        return Question(text, e, _check(value))

    def histogram(self) -> Question:
        bins = self.r.randint(2, 6)
        x = self.v(None, 0, bins - 1)
        e = f"histogram({vec(x)}, {bins})"
        text = self.pick(f"What is {e}?", f"Compute {e}",
                         f"Count how many times each value in [0, {bins}) appears in {vec(x)}.")
        return Question(text, e, [x.count(i) for i in range(bins)])

    def gcd(self) -> Question:
        a, b = self.r.randint(1, 200), self.r.randint(1, 200)
        e = f"gcd({a}, {b})"
        text = self.pick(f"What is {e}?", f"gcd of {a} and {b}?", f"What is the greatest common divisor of {a} and {b}?",
                         f"Compute {e}")
        return Question(text, e, math.gcd(a, b))

    def fib(self) -> Question:
        n = self.r.randint(0, 30)
        e = f"fib({n})"
        th = {1: "st", 2: "nd", 3: "rd"}.get(n % 10 if n % 100 not in (11, 12, 13) else 0, "th")
        text = self.pick(f"What is {e}?", f"Compute {e}", f"What is the {n}{th} Fibonacci number?",
                         f"the {n}{th} Fibonacci number")
        return Question(text, e, fib(n))

    def pow(self) -> Question:
        b, n = self.r.randint(-9, 9), self.r.randint(0, 9)
        e = f"pow({b}, {n})"
        text = self.pick(f"What is {e}?", f"Compute {e}", f"What is {b} to the power of {n}?")
        try:
            return Question(text, e, _check(b ** n))
        except OracleError as err:
            return Question(text, e, error=str(err))


def tool_call_message(expression: str) -> dict:
    """The assistant's call in the shape mlx-lm and transformers use."""
    return {"role": "assistant", "content": "",
            "tool_calls": [{"type": "function", "function": {"name": GPU_EVAL_NAME,
                                                             "arguments": {"expression": expression}}}]}


def answer_text(q: Question, rng: random.Random) -> str:
    """The final answer: the number with its expression, or why not."""
    if q.error:
        return rng.choice(FAILURES).format(expr=q.expression, why=q.error)
    return rng.choice(ANSWERS).format(expr=q.expression, value=result_text(q.value))


def inject_error(q: Question, rng: random.Random) -> Question:
    """The same call, refused by the tool for a reason outside the expression."""
    return Question(q.text, q.expression, error=rng.choice(INJECTED_ERRORS))


def gpu_turn(q: Question, rng: random.Random) -> list[dict]:
    """User question, tool call, tool response, final answer."""
    return [{"role": "user", "content": q.text}, tool_call_message(q.expression),
            {"role": "tool", "content": q.response}, {"role": "assistant", "content": answer_text(q, rng)}]


def small_talk_turn(rng: random.Random) -> list[dict]:
    prompt = rng.choice(sorted(SMALL_TALK))
    text = prompt.capitalize() if rng.random() < 0.5 else prompt
    return [{"role": "user", "content": text}, {"role": "assistant", "content": SMALL_TALK[prompt]}]


def conversation(rng: random.Random) -> list[dict]:
    """One conversation: optional system prompt, then one to three turns."""
    g = Gen(rng)
    messages = [{"role": "system", "content": rng.choice(SYSTEM_PROMPTS)}] if rng.random() < 0.5 else []
    for _ in range(rng.choices([1, 2], [8, 2])[0]):
        if rng.random() < 0.12:
            messages += small_talk_turn(rng)
            continue
        q = g.question()
        if q.error is None and rng.random() < 0.04:
            q = inject_error(q, rng)
        messages += gpu_turn(q, rng)
    return messages


def conversations(n: int, seed: int) -> list[list[dict]]:
    """``n`` conversations from one seed (the same seed gives the same list)."""
    rng = random.Random(seed)
    return [conversation(rng) for _ in range(n)]


def questions(n: int, seed: int) -> list[Question]:
    """``n`` GPU questions from one seed, for held-out evaluation."""
    g = Gen(random.Random(seed))
    return [g.question() for _ in range(n)]
