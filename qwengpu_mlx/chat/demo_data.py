"""Seeded templated conversations that teach a toy model to call ``gpu_eval`` and quote its answer.

The demo fixture (``qwengpu_mlx/chat/demo/``) is a tiny Qwen3.5-architecture model trained
on these conversations only, so the chat loop can be tested end to end without Qwen's
weights: the user asks for a computation, the assistant writes a ``gpu_eval`` call whose
expression means the question ("the 10th Fibonacci number" -> ``fib(10)``, "the smallest
of 4, 7 and 2" -> ``min([4, 7, 2])``), the tool answers with the value (computed here by a
Python oracle: this is training data, not a kernel result) or with ``error: ...``, and the
assistant states the number or says why it could not. Small talk is answered without a
call; some conversations ask a second question.

A question is built from parts, so the toy sees many phrasings of each operation rather
than a few sentences: a request frame ("what's ...?", "can you compute ...", "please ...",
a bare noun phrase), a noun phrase or an imperative for the operation (several wordings
each), operands written as lists with or without spaces, as "the vector ...", or as bare
numbers ("4, 7 and 2"), and optional lower case and missing final punctuation. The call
always writes the grammar's canonical form (``[1, 2, 3]``, one space after each comma).

Every form of the expression grammar (``chat/tools.py``) appears: ``@`` (dot and
matrix-vector), ``+ - *`` elementwise and on scalars, scaling, ``/ %`` (C's integer
division), floats with ``+ - * /``, ``sqrt``, ``mean`` (the float mean, of ints too),
``imean`` (C's integer mean), and ``sum min max argmax abs prefix_sum sort reverse histogram
gcd fib pow``; tool errors as the evaluator words
them (lengths that differ, a zero divisor, a value outside 32 bits).
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass

import numpy as np

from qwengpu_mlx.chat.tools import GPU_EVAL_NAME, error_text, result_text
from qwengpu_mlx.core.float32 import float32_text

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
MAX_LENGTH = 7  # vector lengths 1-7

# Request frames around a noun phrase ("the sum of [1, 2]") or an imperative ("sort [3, 1]").
NOUN_FRAMES = ("What is {x}?", "What's {x}?", "what is {x}", "Compute {x}.", "Calculate {x}.", "compute {x}",
               "Can you compute {x}?", "Could you calculate {x}?", "Please compute {x}.", "Tell me {x}.",
               "Find {x}.", "I need {x}.", "Give me {x}.", "{x}?", "{x}", "Work out {x}.", "What do you get for {x}?",
               "Please find {x}.", "Evaluate {x}.", "Can you tell me {x}?", "I'd like {x}.", "Determine {x}.",
               "Which is {x}?", "Give {x}.", "Show me {x}.")
VERB_FRAMES = ("{x}.", "{x}", "Please {x}.", "please {x}", "Can you {x}?", "Could you {x}?", "{x}, please.",
               "{x} for me.", "Please {x} for me.", "I need you to {x}.")
EXPRESSION_FRAMES = ("What is {x}?", "What's {x}?", "Compute {x}", "Calculate {x}.", "{x} = ?", "{x}?", "{x}",
                     "Evaluate {x}.", "what is {x}", "Can you compute {x}?", "Please compute {x}.", "Solve {x}.")


class OracleError(ValueError):
    """What the tool would refuse (the message goes back as ``error: ...``)."""


@dataclass(frozen=True)
class Float:
    """A float32 value (the oracle's, in training data): printed as the tool prints one."""

    value: float

    def __str__(self) -> str:
        return float32_text(int(np.float32(self.value).view(np.uint32)))


@dataclass(frozen=True)
class Question:
    """One GPU question: what the user says, the call's expression, the oracle's answer."""

    text: str
    expression: str
    value: object = None  # int, Float or a list of them; None when the tool refuses
    error: str | None = None  # the refusal's message (without ``error: ``)

    @property
    def response(self) -> str:
        """The tool message's content."""
        return error_text(self.error) if self.error else result_text(self.value)


def vec(v) -> str:
    """The grammar's vector literal, ``[1, -2, 3]``."""
    return "[" + ", ".join(str(x) for x in v) + "]"


def mat(m) -> str:
    """A matrix literal: a list of vectors."""
    return "[" + ", ".join(vec(r) for r in m) + "]"


def _check(value):
    """Values must be 32-bit signed integers, as on the GPU."""
    for x in value if isinstance(value, list) else [value]:
        if isinstance(x, int) and not INT32[0] <= x <= INT32[1]:
            raise OracleError("the result overflows 32-bit integers")
    return value


def fib(n: int) -> int:
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


def c_div(a: int, b: int) -> int:
    """C's integer division: the quotient truncated toward zero."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def ordinal(n: int) -> str:
    th = {1: "st", 2: "nd", 3: "rd"}.get(n % 10 if n % 100 not in (11, 12, 13) else 0, "th")
    return f"{n}{th}"


def f32(x) -> float:
    return float(np.float32(x))


class Words:
    """How the user writes things: frames, operands, case; one random stream."""

    def __init__(self, rng: random.Random):
        self.r = rng

    def pick(self, *options):
        return self.r.choice(options)

    def ask(self, noun: str) -> str:
        return self.finish(self.pick(*NOUN_FRAMES).format(x=noun))

    def tell(self, verb: str) -> str:
        return self.finish(self.pick(*VERB_FRAMES).format(x=verb))

    def expression(self, e: str) -> str:
        return self.finish(self.pick(*EXPRESSION_FRAMES).format(x=e))

    def finish(self, text: str) -> str:
        """Capitalized (mostly) as a sentence starts, unless it starts with a call (``sum(...)``)."""
        if self.r.random() < 0.8 and not re.match(r"[a-z_]+\(", text):
            text = text[0].upper() + text[1:]
        return text

    def listing(self, v) -> str:
        """A list as the user types it: ``[1, 2]``, ``[1,2]`` or ``[ 1, 2 ]``."""
        return self.r.choices([vec(v), "[" + ",".join(str(x) for x in v) + "]", "[ " + ", ".join(map(str, v)) + " ]"],
                              [6, 3, 1])[0]

    def operand(self, v) -> str:
        """A vector operand: bare, or named ("the vector [...]", "the list [...]")."""
        return self.r.choices([self.listing(v), f"the vector {self.listing(v)}", f"the list {self.listing(v)}",
                               f"the array {self.listing(v)}"], [6, 2, 1, 1])[0]

    def matrix(self, m) -> str:
        """A matrix as the user types it: ``[[1, 2], [3, 4]]`` or ``[[1,2],[3,4]]``."""
        return mat(m) if self.r.random() < 0.75 else "[" + ",".join("[" + ",".join(map(str, r)) + "]" for r in m) + "]"

    def numbers(self, v) -> str:
        """Numbers written out: ``4, 7 and 2`` or ``4, 7, and 2`` or a list."""
        if len(v) < 2 or self.r.random() < 0.4:
            return self.operand(v)
        head = ", ".join(map(str, v[:-1]))
        return self.pick(f"{head} and {v[-1]}", f"{head}, and {v[-1]}", ", ".join(map(str, v)))

    def pair(self, a, b) -> str:
        """Two vectors: "A and B" or "the vectors A and B"."""
        if self.r.random() < 0.25:
            return f"the {self.pick('vectors', 'lists', 'arrays')} {self.listing(a)} and {self.listing(b)}"
        return f"{self.operand(a)} and {self.operand(b)}"


class Gen(Words):
    """Random operands and the question builders."""

    def num(self, lo=-9, hi=20) -> int:
        return self.r.randint(lo, hi)

    def v(self, n=None, lo=-9, hi=20) -> list[int]:
        return [self.num(lo, hi) for _ in range(n or self.length())]

    def operands(self, n=None, lo=-9, hi=20) -> list[int]:
        """A vector operand: random values, sometimes evenly spaced or all negative. Evenly
        spaced lists (1, 2, 3, 4; 100, 200, 300) are where a toy copies one element too many
        or repeats one, so they are drilled."""
        n = n or self.length()
        kind = self.r.random()
        if n >= 3 and kind < 0.2:
            return self.progression(n)
        if n >= 2 and kind < 0.3:
            return self.v(n, -30, -1)
        return self.v(n, lo, hi)

    def progression(self, n: int) -> list[int]:
        step = self.r.choice([1, 1, 1, 2, 3, 5, 10, 10, 100, 100, -1, -1, -10])
        start = self.r.choice([0, 1, 1, step, step, self.r.randint(-20, 20)])
        return [start + i * step for i in range(n)]

    def length(self) -> int:
        return self.r.choices(range(1, MAX_LENGTH + 1), [2, 4, 5, 5, 4, 3, 2])[0]

    def big(self) -> int:
        """A scalar operand: mostly small, sometimes up to four digits."""
        return self.r.choice([self.r.randint(-20, 20), self.r.randint(0, 99), self.r.randint(0, 999),
                              self.r.randint(0, 9999), self.r.randint(-999, 999)])

    def question(self) -> Question:
        """One question of a random form (weights favour the harder copies)."""
        forms = [(self.dot, 5), (self.matvec, 4), (self.elementwise, 6), (self.scalar_op, 4), (self.scale, 3),
                 (self.reduce, 14), (self.histogram, 5), (self.gcd, 2), (self.fib, 2), (self.pow, 2),
                 (self.divide, 2), (self.floats, 2), (self.average, 3), (self.literal, 1)]
        make = self.r.choices([f for f, _ in forms], [w for _, w in forms])[0]
        return make()

    def dot(self) -> Question:
        n = self.length()
        a, b = self.operands(n), self.operands(n)
        e = f"{vec(a)} @ {vec(b)}"
        pair = self.pair(a, b)
        text = self.pick(self.ask(f"the {self.pick('dot', 'inner', 'scalar')} product of {pair}"),
                         self.ask(f"{self.listing(a)} dot {self.listing(b)}"), self.expression(e),
                         self.ask(f"{self.listing(a)} · {self.listing(b)}"),
                         self.tell(f"take the dot product of {pair}"), self.ask(f"the dot product between {pair}"),
                         self.ask(f"the sum of the {self.pick('elementwise', 'element-wise', 'pairwise')} products of "
                                  f"{pair}"))
        return Question(text, e, _check(sum(x * y for x, y in zip(a, b))))

    def matvec(self) -> Question:
        rows, n = self.r.choices([1, 2, 3], [1, 4, 3])[0], self.r.choices([1, 2, 3, 4], [1, 4, 3, 2])[0]
        m, x = [self.v(n, -5, 9) for _ in range(rows)], self.v(n, -5, 9)
        e = f"{mat(m)} @ {vec(x)}"
        M, X = self.matrix(m), self.listing(x)
        text = self.pick(self.expression(e), self.tell(f"multiply the matrix {M} by the vector {X}"),
                         self.ask(f"the product of the matrix {M} and the vector {X}"),
                         self.ask(f"the matrix {M} times the vector {X}"),
                         self.tell(f"apply the matrix {M} to {X}"), self.tell(f"multiply {M} by {X}"),
                         self.ask(f"the matrix-vector product of {M} and {X}"),
                         self.tell(f"multiply the {rows}x{n} matrix {M} by {X}"),
                         self.ask(f"{M} multiplied by the vector {X}"))
        return Question(text, e, _check([sum(p * q for p, q in zip(r, x)) for r in m]))

    def elementwise(self) -> Question:
        n = self.length()
        a = self.operands(n)
        b = self.operands(n) if self.r.random() > 0.08 else self.v(self.r.choice([k for k in range(1, 8) if k != n]))
        op = self.pick("+", "-", "*")  # + twice as often made the toy write + for dot and * products
        e = f"{vec(a)} {op} {vec(b)}"
        A, B, pair = self.listing(a), self.listing(b), self.pair(a, b)
        vectors = self.pick("vectors", "lists", "arrays")
        how = self.pick("elementwise", "element-wise", "element by element", "pointwise", "entry by entry",
                        "componentwise")
        text = {"+": lambda: self.pick(self.ask(f"{A} plus {B}"), self.tell(f"add {pair}"), self.tell(f"add {B} to {A}"),
                                       self.ask(f"the sum of {pair}"), self.ask(f"the {how} sum of {pair}"),
                                       self.tell(f"add the {vectors} {A} and {B}"), self.tell(f"add {pair} {how}"),
                                       self.ask(f"the vector sum of {A} and {B}"),
                                       self.ask(f"the sum of the {vectors} {A} and {B}")),
                "-": lambda: self.pick(self.ask(f"{A} minus {B}"), self.tell(f"subtract {B} from {A}"),
                                       self.ask(f"the difference {A} - {B}"), self.ask(f"{A} take away {B}")),
                "*": lambda: self.pick(self.tell(f"multiply {pair} {how}"), self.ask(f"the {how} product of {pair}"),
                                       self.ask(f"{A} times {B} {how}"), self.tell(f"multiply {pair} {how}"))}[op]()
        text = text if self.r.random() < 0.75 else self.expression(e)
        if len(a) != len(b):
            return Question(text, e, error=f"the vectors have {len(a)} and {len(b)} elements ('{op}' at column "
                                           f"{len(vec(a)) + 2})")
        f = {"+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y}[op]
        return Question(text, e, _check([f(x, y) for x, y in zip(a, b)]))

    def scalar_op(self) -> Question:
        a, b = self.big(), self.big()
        op = self.pick("+", "-", "*")
        e = f"{a} {op} {b}"
        words = {"+": (f"{a} plus {b}", f"the sum of {a} and {b}", f"{a} added to {b}"),
                 "-": (f"{a} minus {b}", f"the difference between {a} and {b}", f"{a} take away {b}"),
                 "*": (f"{a} times {b}", f"{a} multiplied by {b}", f"the product of {a} and {b}")}[op]
        verbs = {"+": f"add {a} and {b}", "-": f"subtract {b} from {a}", "*": f"multiply {a} by {b}"}[op]
        text = self.pick(self.ask(self.pick(*words)), self.tell(verbs), self.expression(e))
        return Question(text, e, _check({"+": a + b, "-": a - b, "*": a * b}[op]))

    def scale(self) -> Question:
        k, x = self.num(-9, 12), self.v()
        X = self.operand(x)
        if self.r.random() < 0.3:
            e = f"{k} * {vec(x)}"
            text = self.pick(self.expression(e), self.ask(f"{k} times {X}"))
        else:
            e = f"{vec(x)} * {k}"
            text = self.pick(self.expression(e), self.tell(f"scale {X} by {k}"), self.tell(f"multiply {X} by {k}"),
                             self.ask(f"{X} scaled by {k}"), self.ask(f"{X} times {k}"),
                             self.tell(f"multiply every element of {X} by {k}"))
        return Question(text, e, _check([k * y for y in x]))

    REDUCE_WORDS = {
        "sum": ("the sum of {n}", "the total of {n}", "the sum of all elements of {v}", "the total of {v}"),
        "min": ("the smallest of {n}", "the minimum of {n}", "the smallest element of {v}", "the lowest value in {v}",
                "the min of {v}", "the least of {n}", "the smallest number in {v}", "the minimum value of {v}",
                "the smallest value of {n}", "the least number in {v}"),
        "max": ("the largest of {n}", "the maximum of {n}", "the biggest element of {v}", "the highest value in {v}",
                "the max of {v}", "the greatest of {n}", "the largest number in {v}", "the maximum value of {v}",
                "the largest value of {n}", "the greatest number in {v}"),
        "argmax": ("the index of the maximum of {v}", "the position of the largest element in {v}",
                   "the index of the largest value in {v}{z}", "the argmax of {v}", "where the maximum of {v} is{z}",
                   "the index of the biggest number in {v}{z}", "the position of the max in {v}{z}",
                   "the index of the first maximum of {v}{z}", "the index{z} of the first maximum of {v}",
                   "the position{z} of the largest value in {v}", "the index{z} of the maximum in {v}",
                   "the index of the greatest element of {v}{z}", "the first index{z} of the maximum of {v}"),
        "prefix_sum": ("the prefix sums of {v}", "the cumulative sums of {v}", "the running sum of {v}",
                       "the prefix sum of {v}", "the cumulative sum of {v}", "the inclusive scan of {v}",
                       "the running totals of {v}", "the running total of {v}", "the partial sums of {v}",
                       "the {running} ({prefix}) of {v}"),
        "sort": ("{v} sorted", "{v} in increasing order", "{v} sorted from smallest to largest", "{v} in sorted order",
                 "{v} in ascending order", "{v} sorted ascending"),
        "reverse": ("{v} reversed", "{v} in reverse order", "the reverse of {v}", "{v} backwards"),
        "abs": ("the absolute values of {v}", "the absolute value of each element of {v}", "abs of {v}"),
    }
    SCANS = ("prefix sums", "running totals", "cumulative sums", "partial sums", "running sums")
    REDUCE_VERBS = {
        "sum": ("add up {n}", "sum {v}", "total {n}", "add together {n}", "sum up {v}"),
        "min": ("find the minimum of {n}", "find the smallest of {n}", "pick the smallest number in {v}"),
        "max": ("find the maximum of {n}", "find the largest of {n}", "pick the biggest number in {v}",
                "find the largest number in {v}", "give the largest of {n}"),
        "argmax": ("find the index of the maximum in {v}{z}", "locate the largest element of {v}{z}"),
        "prefix_sum": ("compute the prefix sums of {v}", "take the cumulative sum of {v}", "scan {v}",
                       "give the {running} of {v}", "give the {running} ({prefix}) of {v}",
                       "compute the {running} ({prefix}) of {v}", "list the {running} of {v}"),
        "sort": ("sort {v}", "sort {v} in increasing order", "sort {v} ascending", "put {v} in order",
                 "sort {v} from low to high", "order {v} from smallest to largest", "arrange {v} in increasing order",
                 "sort {v} in ascending order", "arrange {v} in ascending order"),
        "reverse": ("reverse {v}", "flip {v}", "reverse the order of {v}", "write {v} backwards",
                    "reverse the list {l}", "reverse the vector {l}", "reverse the array {l}", "reverse the order of {n}"),
        "abs": ("take the absolute value of {v}",),
    }

    def reduce(self) -> Question:
        name = self.pick("sum", "sum", "min", "max", "max", "argmax", "argmax", "prefix_sum", "prefix_sum", "sort",
                         "reverse", "reverse", "abs")
        x = self.operands(None, -20, 60) if self.r.random() < 0.7 else self.v(None, -999, 999)
        e = f"{name}({vec(x)})"
        z = self.pick("", "", " (0-based)", " (zero-based)", ", starting from 0", " (indices from 0)",
                      " (counting from 0)")
        running, prefix = self.pick(*self.SCANS), self.pick(*self.SCANS)
        fill = dict(v=self.operand(x), n=self.numbers(x), z=z, l=self.listing(x), running=running, prefix=prefix)
        asks = [self.ask(self.pick(*self.REDUCE_WORDS[name]).format(**fill)),
                self.tell(self.pick(*self.REDUCE_VERBS[name]).format(**fill)),
                self.ask(f"{name}({self.listing(x)})"), self.expression(e)]
        if name == "argmax":  # a question that names the index first: "At which index ... ?"
            asks.append(self.finish(self.pick("at which", "at what", "in which") + " "
                                    + self.pick("index", "position") + f"{z} is the "
                                    + self.pick("first ", "") + self.pick("maximum", "largest value", "max")
                                    + f" of {fill['v']}" + self.pick("?", "")))
        text = self.pick(*asks)
        value = {"sum": lambda: sum(x), "min": lambda: min(x), "max": lambda: max(x),
                 "argmax": lambda: x.index(max(x)), "prefix_sum": lambda: [sum(x[:i + 1]) for i in range(len(x))],
                 "sort": lambda: sorted(x), "reverse": lambda: x[::-1], "abs": lambda: [abs(y) for y in x]}[name]()
        return Question(text, e, _check(value))

    def histogram(self) -> Question:
        bins = self.r.randint(2, 7)
        x = self.v(self.r.randint(2, MAX_LENGTH), 0, bins - 1)
        e = f"histogram({vec(x)}, {bins})"
        X, top = self.operand(x), bins - 1
        text = self.pick(self.expression(e),
                         self.tell(f"count how many times each value from 0 to {top} appears in {X}"),
                         self.ask(f"how often each of 0 to {top} appears in {X}"),
                         self.ask(f"a histogram of {X} with {bins} bins"),
                         self.tell(f"count the occurrences of each value 0..{top} in {X}"),
                         self.ask(f"the counts of the values 0 through {top} in {X}"),
                         self.tell(f"make a histogram of {X} with bins 0 to {top}"),
                         self.tell(f"count each value in [0, {bins}) in {X}"),
                         self.ask(f"how often each value from 0 to {top} occurs in {X}"),
                         self.tell(f"count how often each of the values 0 to {top} occurs in {X}"),
                         self.tell(f"count the occurrences of 0 to {top} in {X}"),
                         self.tell(f"count how often each value {self.pick('', 'from ')}0 to {top} occurs in {X}"),
                         self.ask(f"the number of times each value 0 to {top} appears in {X}"),
                         self.tell(f"tally the values 0 to {top} in {X}"))
        return Question(text, e, [x.count(i) for i in range(bins)])

    def gcd(self) -> Question:
        a, b = self.r.randint(1, 2000), self.r.randint(1, 2000)
        if self.r.random() < 0.3:
            k = self.r.randint(2, 30)
            a, b = a % 100 * k + k, b % 100 * k
        e = f"gcd({a}, {b})"
        what = self.pick("the greatest common divisor", "the gcd", "the GCD", "the highest common factor",
                         "the largest common divisor", "the greatest common factor")
        text = self.pick(self.ask(f"{what} of {a} and {b}"), self.expression(e),
                         self.ask(f"the largest number that divides both {a} and {b}"), self.ask(e))
        return Question(text, e, math.gcd(a, b))

    def fib(self) -> Question:
        n = self.r.randint(0, 46)
        e = f"fib({n})"
        note = self.pick("", "", "", " (fib(0) = 0)", " (starting from 0, 1)", ", where F(0) = 0 and F(1) = 1",
                         " of the Fibonacci sequence", " (F(1) = 1)")
        text = self.pick(self.ask(f"the {ordinal(n)} Fibonacci number{note}"), self.expression(e),
                         self.ask(f"Fibonacci number {n}{note}"), self.ask(f"fibonacci({n})"),
                         self.ask(f"F({n}) in the Fibonacci sequence"), self.ask(f"the Fibonacci number F({n})"))
        return Question(text, e, fib(n))

    def pow(self) -> Question:
        b, n = self.r.choice([(self.r.randint(-9, 9), self.r.randint(0, 9)), (self.r.randint(2, 5), self.r.randint(0, 31)),
                              (self.r.randint(-30, 30), self.r.randint(0, 4))])
        e = f"pow({b}, {n})"
        words = (f"{b} to the power of {n}", f"{b} to the power {n}", f"{b} raised to {n}", f"{b} ^ {n}", f"{b}^{n}",
                 f"{b} ** {n}", f"{b} raised to the power of {n}", f"{b} to the {ordinal(n)} power",
                 f"the {ordinal(n)} power of {b}", f"{b} raised to the {ordinal(n)}")
        text = self.pick(self.ask(self.pick(*words)), self.expression(e), self.ask(f"pow({b}, {n})"))
        try:
            return Question(text, e, _check(b ** n))
        except OracleError:
            return Question(text, e, error=f"pow({b}, {n}) is outside 32-bit signed integers (column 1)")

    def divide(self) -> Question:
        a, b = self.big(), self.r.choice([self.r.randint(1, 12), self.r.randint(-9, 30), self.r.randint(1, 99)])
        op = self.pick("/", "/", "%")
        e = f"{a} {op} {b}"
        words = {"/": (f"{a} divided by {b}", f"{a} / {b}", f"the integer quotient of {a} and {b}",
                       f"{a} over {b}", f"the quotient of {a} divided by {b}"),
                 "%": (f"{a} mod {b}", f"{a} modulo {b}", f"the remainder of {a} divided by {b}", f"{a} % {b}")}[op]
        text = self.pick(self.ask(self.pick(*words)), self.expression(e), self.tell(f"divide {a} by {b}")
                         if op == "/" else self.ask(f"the remainder when {a} is divided by {b}"))
        if b == 0:
            return Question(text, e, error=f"division by zero ('{op}' at column {len(str(a)) + 2}): the divisor is 0; "
                                           f"the GPU stopped the {'div' if op == '/' else 'rem'} launch")
        q = c_div(a, b)
        return Question(text, e, q if op == "/" else a - q * b)

    def decimal(self) -> str:
        return self.pick(f"{self.r.randint(0, 99)}.{self.r.randint(0, 9)}", f"{self.r.randint(0, 9)}.{self.r.randint(0, 99)}",
                         f"{self.r.randint(0, 20)}.5", f"-{self.r.randint(0, 9)}.{self.r.randint(1, 9)}")

    def floats(self) -> Question:
        """``+ - * /`` with a decimal side, or ``sqrt``: float kernels (the oracle in float32)."""
        if self.r.random() < 0.3:
            x = self.pick(str(self.r.randint(0, 200)), f"{self.r.randint(0, 99)}.{self.r.randint(0, 9)}",
                          str(self.r.choice([4, 9, 16, 25, 36, 49, 64, 81, 100, 144])))
            e = f"sqrt({x})"
            text = self.pick(self.ask(f"the square root of {x}"), self.ask(f"sqrt of {x}"), self.expression(e),
                             self.ask(f"the root of {x}"))
            return Question(text, e, Float(float(np.sqrt(np.float32(x)))))
        a, b = self.decimal(), self.pick(self.decimal(), str(self.r.randint(1, 20)))
        a, b = (a, b) if self.r.random() < 0.7 else (b, a)
        op = self.pick("+", "-", "*", "/", "/")
        e = f"{a} {op} {b}"
        words = {"+": f"{a} plus {b}", "-": f"{a} minus {b}", "*": f"{a} times {b}", "/": f"{a} divided by {b}"}[op]
        text = self.pick(self.ask(words), self.expression(e))
        fa, fb = np.float32(a), np.float32(b)
        if op == "/" and fb == 0:
            return self.floats()
        value = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}[op](fa, fb)
        return Question(text, e, Float(float(np.float32(value))))

    def average(self) -> Question:
        """``mean`` for "the mean/average" (the float mean: 2.3333333, and 4.0 for a whole
        one), ``imean`` for the integer mean."""
        x = self.operands(self.r.randint(2, MAX_LENGTH), -10, 99)
        X, N = self.operand(x), self.numbers(x)
        if self.r.random() < 0.2:
            e = f"imean({vec(x)})"
            text = self.pick(self.ask(f"the integer mean of {X}"), self.ask(f"the integer average of {N}"),
                             self.expression(e), self.ask(f"the mean of {X} rounded toward zero"))
            return Question(text, e, c_div(sum(x), len(x)))
        e = f"mean({vec(x)})"
        text = self.pick(self.ask(f"the mean of {X}"), self.ask(f"the average of {N}"), self.expression(e),
                         self.ask(f"the arithmetic mean of {X}"), self.tell(f"average {N}"),
                         self.ask(f"the mean of {N}"), self.ask(f"the average of {X}"),
                         self.ask(f"the mean value of {X}"), self.tell(f"take the mean of {N}"))
        # (float)sum / (float)n, one rounding each: what the mean of integers means in float32
        return Question(text, e, Float(float(np.float32(np.float32(sum(x)) / np.float32(len(x))))))

    def literal(self) -> Question:
        """A nested expression written out, copied as it is (``sum([1, 2]) * 3``). Only ``sum``
        nests here: with ``max(...) + k`` among them the toy wrote ``max([...]) + 1`` for "the
        largest number in [...]"."""
        x, k = self.v(self.r.randint(2, 5)), self.num(2, 9)
        name, inner = "sum", sum(x)
        e, value = self.pick((f"{name}({vec(x)}) * {k}", inner * k), (f"{name}({vec(x)}) + {k}", inner + k),
                             (f"({k} + {x[0]}) * {x[1]}", (k + x[0]) * x[1]))
        return Question(self.expression(e), e, _check(value))


def tool_call_message(expression: str) -> dict:
    """The assistant's call in the shape mlx-lm and transformers use."""
    return {"role": "assistant", "content": "",
            "tool_calls": [{"type": "function", "function": {"name": GPU_EVAL_NAME,
                                                             "arguments": {"expression": expression}}}]}


def answer_text(q: Question, rng: random.Random) -> str:
    """The final answer: the number, or why not."""
    if q.error:
        return rng.choice(FAILURES).format(why=q.error)
    return rng.choice(ANSWERS).format(value=result_text(q.value))


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
    """One conversation: optional system prompt, then one to four turns (a chat goes on: a later
    question must be read as itself, not as the earlier calls)."""
    g = Gen(rng)
    messages = [{"role": "system", "content": rng.choice(SYSTEM_PROMPTS)}] if rng.random() < 0.5 else []
    for _ in range(rng.choices([1, 2, 3, 4], [7, 3, 2, 1])[0]):
        if rng.random() < 0.08:
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
