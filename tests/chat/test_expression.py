"""The normal mode's expression language: every form on the reference interpreter against an
independent Python oracle, the limits, the refusals, and the no-host-arithmetic rule."""

from __future__ import annotations

import math
import random
import re

import pytest

from qwengpu_mlx.chat.expression import (MAX_LAUNCHES, ExpressionError, KernelJob, bind_job, evaluate, parse,
                                         reference_launch)
from qwengpu_mlx.core.machine import PUBLISHED_MACHINE, to_signed

LAUNCH = reference_launch()
INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1


def wrap(x: int) -> int:
    return to_signed(x)


def lit(v) -> str:
    return "[" + ", ".join(lit(x) if isinstance(x, list) else str(x) for x in v) + "]"


def fib_oracle(n: int) -> int:
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


def prefix_oracle(v):
    out, acc = [], 0
    for x in v:
        acc = wrap(acc + x)
        out.append(acc)
    return out


# form name -> (expression builder, oracle) over one or two random vectors
VECTOR_FORMS = {
    "dot": (lambda a, b: f"{lit(a)} @ {lit(b)}", lambda a, b: wrap(sum(x * y for x, y in zip(a, b)))),
    "add": (lambda a, b: f"{lit(a)} + {lit(b)}", lambda a, b: [wrap(x + y) for x, y in zip(a, b)]),
    "sub": (lambda a, b: f"{lit(a)} - {lit(b)}", lambda a, b: [wrap(x - y) for x, y in zip(a, b)]),
    "mul": (lambda a, b: f"{lit(a)} * {lit(b)}", lambda a, b: [wrap(x * y) for x, y in zip(a, b)]),
    "scale": (lambda a, b: f"{b[0]} * {lit(a)}", lambda a, b: [wrap(b[0] * x) for x in a]),
    "scale_right": (lambda a, b: f"{lit(a)} * {b[0]}", lambda a, b: [wrap(b[0] * x) for x in a]),
    "negate": (lambda a, b: f"-{lit(a)}", lambda a, b: [wrap(-x) for x in a]),
    "sum": (lambda a, b: f"sum({lit(a)})", lambda a, b: wrap(sum(a))),
    "min": (lambda a, b: f"min({lit(a)})", lambda a, b: min(a)),
    "max": (lambda a, b: f"max({lit(a)})", lambda a, b: max(a)),
    "argmax": (lambda a, b: f"argmax({lit(a)})", lambda a, b: a.index(max(a))),
    "prefix_sum": (lambda a, b: f"prefix_sum({lit(a)})", lambda a, b: prefix_oracle(a)),
    "sort": (lambda a, b: f"sort({lit(a)})", lambda a, b: sorted(a)),
    "reverse": (lambda a, b: f"reverse({lit(a)})", lambda a, b: a[::-1]),
}
MAX_LENGTH = {"dot": 62, "add": 63, "sub": 63, "mul": 63, "scale": 126, "scale_right": 126, "negate": 126,
              "sum": 125, "min": 125, "max": 125, "argmax": 124, "prefix_sum": 125, "sort": 64, "reverse": 126}


def random_vector(rng: random.Random, n: int, big: bool) -> list[int]:
    if big:
        return [rng.randint(INT_MIN, INT_MAX) for _ in range(n)]
    return [rng.randint(-9, 9) for _ in range(n)]  # small values: many duplicates


@pytest.mark.parametrize("form", sorted(VECTOR_FORMS))
def test_vector_forms_match_the_oracle(form):
    build, oracle = VECTOR_FORMS[form]
    rng = random.Random(f"chat-expression-{form}")
    lengths = [1, 2, 3, 4, 5, 7, 16, 17, rng.randint(18, MAX_LENGTH[form]), MAX_LENGTH[form]]
    for i, n in enumerate(lengths):
        a = random_vector(rng, n, big=i % 2 == 1)
        b = random_vector(rng, n, big=i % 3 == 1)
        result = evaluate(build(a, b), LAUNCH)
        assert result.value == oracle(a, b), (form, a, b)
        assert len(result.launches) == 1


def test_argmax_returns_the_first_maximal_index():
    for v in ([7, 7, 7], [1, 9, 3, 9], [INT_MIN, INT_MIN], [0] * 20 + [5] + [5] * 20, [-3] * 9 + [-1] + [-1] * 7):
        assert evaluate(f"argmax({lit(v)})", LAUNCH).value == v.index(max(v))


@pytest.mark.parametrize("rows,cols", [(1, 1), (3, 3), (2, 4), (5, 16), (1, 62), (4, 20), (6, 17), (62, 1)])
def test_matvec_matches_the_oracle(rows, cols):
    rng = random.Random(rows * 1000 + cols)
    m = [random_vector(rng, cols, big=rows % 2 == 0) for _ in range(rows)]
    v = random_vector(rng, cols, big=cols % 2 == 0)
    expected = [wrap(sum(x * y for x, y in zip(row, v))) for row in m]
    assert evaluate(f"{lit(m)} @ {lit(v)}", LAUNCH).value == expected


def test_histogram_matches_the_oracle():
    rng = random.Random(7)
    for n, bins in [(1, 1), (5, 3), (20, 8), (100, 26), (63, 63)]:
        v = [rng.randrange(bins) for _ in range(n)]
        assert evaluate(f"histogram({lit(v)}, {bins})", LAUNCH).value == [v.count(k) for k in range(bins)]


def test_scalar_forms_match_the_oracle():
    rng = random.Random(11)
    pairs = [(0, 0), (0, 5), (-12, 18), (INT_MAX, INT_MAX - 1), (INT_MIN, 6), (1 << 30, 3 << 20), (17, 17)]
    pairs += [(rng.randint(INT_MIN + 1, INT_MAX), rng.randint(INT_MIN + 1, INT_MAX)) for _ in range(4)]
    for a, b in pairs:
        assert evaluate(f"gcd({a}, {b})", LAUNCH).value == math.gcd(a, b)
    for n in (0, 1, 2, 10, 31, 45, 46):
        assert evaluate(f"fib({n})", LAUNCH).value == fib_oracle(n)
    for base, e in [(3, 4), (2, 30), (-2, 31), (0, 0), (0, 7), (1, INT_MAX), (-1, 12345), (-7, 11), (46340, 2)]:
        assert evaluate(f"pow({base}, {e})", LAUNCH).value == base ** e
    for a, b in [(2, 3), (INT_MAX, 1), (INT_MIN, 1), (-5, 7)]:
        assert evaluate(f"{a} + {b}", LAUNCH).value == wrap(a + b)
        assert evaluate(f"{a} - {b}", LAUNCH).value == wrap(a - b)
        assert evaluate(f"{a} * {b}", LAUNCH).value == wrap(a * b)
        assert evaluate(f"-({a})", LAUNCH).value == wrap(-a)


def test_nested_expressions_run_one_launch_per_operation():
    cases = {"sum([1, 2] * [3, 4])": (11, ["mul", "sum"]),
             "2 * [1, 2] + [3, 4]": ([5, 8], ["scale", "add"]),
             "2 + 3": (5, ["add"]),
             "[[1, 2], [3, 4]] @ [1, 1] - [1, 1]": ([2, 6], ["matvec", "sub"]),
             "fib(gcd(12, 18) + 1)": (13, ["gcd", "add", "fib"]),
             "[1 + 1, 3] @ sort([2, 1])": (8, ["add", "sort", "dot"]),
             "pow(2, sum([1, 2, 3]))": (64, ["sum", "pow"]),
             "histogram(reverse([0, 1, 1]), argmax([1, 5, 2]) + 1)": ([1, 2], ["reverse", "argmax", "add",
                                                                              "histogram"])}
    for text, (value, forms) in cases.items():
        result = evaluate(text, LAUNCH)
        assert result.value == value, text
        assert [job.form for job, _ in result.launches] == forms, text


def test_bare_literals_need_no_launch():
    for text, value in {"5": 5, "-2147483648": INT_MIN, "[1, 2, 3]": [1, 2, 3], "[]": [], "[-1]": [-1]}.items():
        result = evaluate(text, LAUNCH)
        assert result.value == value and result.launches == []


def test_no_host_arithmetic_the_value_comes_from_the_launch():
    """A fake GPU answers every launch with sentinels: the value must be made of them."""
    jobs: list[KernelJob] = []

    def sentinel_launch(job: KernelJob) -> dict[str, list[int]]:
        jobs.append(job)
        return {name: [1000 + len(jobs) * 10 + k for k in range(len(v))]
                for name, v in job.args.items() if isinstance(v, list)}

    assert evaluate("2 + 3", sentinel_launch).value == 1010
    assert evaluate("[1, 2] @ [3, 4]", sentinel_launch).value == 1020
    jobs.clear()
    result = evaluate("sum(2 * [1, 2, 3] + [4, 5, 6])", sentinel_launch)
    assert result.value == 1030
    assert jobs[1].args["a"] == [1010, 1011, 1012]  # the scale launch's output, passed on
    assert jobs[2].args["x"] == [1020, 1021, 1022]  # the add launch's output, passed on
    jobs.clear()
    assert evaluate("-(fib(3))", sentinel_launch).value == 1020
    assert jobs[1].args["x"] == [1010]


REFUSALS = {
    "[1, 2": "expected ']' at column 6",
    "[1, 2, 3] @ [4, 5": "expected ']' at column 18",
    "3.5 % 2": "'%' takes integers only, got a float",
    "[1, 2.0]": "an array mixes integers and floats",
    "4294967296": "4294967296 is outside 32-bit signed integers",
    "2147483648": "outside 32-bit signed integers",
    "-2147483649": "outside 32-bit signed integers",
    "1" + "0" * 5000: "characters, at most",
    "9" * 3000: "outside 32-bit signed integers",
    "[1, 2, 3] + [1, 2, 3, 4]": "the vectors have 3 and 4 elements",
    "[1, 2] @ [1, 2, 3]": "the vectors have 2 and 3 elements",
    "[[1, 2], [3, 4]] @ [1, 2, 3]": "2 columns",
    "histogram([0, 3], 3)": "histogram needs 0 <= value < bins",
    "histogram([-1], 3)": "histogram needs 0 <= value < bins",
    "histogram([1], 0)": "bins >= 1",
    "histogram([1], 1000000000)": "the GPU has 126",
    lit(list(range(64))) + " + " + lit(list(range(64))): "the data needs 128 words, the GPU has 126",
    "sum(" + lit([1] * 126) + ")": "the data needs 127 words",
    "sort(" + lit([1] * 65) + ")": "sort supports at most 64",
    "foo(1)": "unknown function 'foo'",
    "sin(1)": "known: sum, min, max",
    "fib(47)": "fib(n) needs 0 <= n <= 46",
    "fib(-1)": "fib(n) needs",
    "pow(2, 31)": "outside 32-bit signed integers",
    "pow(10, 10)": "outside 32-bit signed integers",
    "pow(2, -1)": "exponent >= 0",
    "gcd(-2147483648, 0)": "outside 32-bit signed integers",
    "gcd(1)": "gcd takes 2 arguments, got 1",
    "sum([1], [2])": "sum takes 1 argument, got 2",
    "sum(5)": "sum needs a vector, got a scalar",
    "sum([])": "non-empty vector",
    "[] @ []": "non-empty vector",
    "sort([[1], [2]])": "needs a vector, got a matrix",
    "fib([1])": "fib needs a scalar",
    "[1, 2] + 3": "needs a vector, got a scalar",
    "[1, 2] @ 3": "'@' needs vector @ vector",
    "[[1, 2], [3, 4]]": "the result is a matrix",
    "[[1, 2], [3]]": "different lengths",
    "[[1], 2]": "mixes numbers and vectors",
    "[[[1]]]": "nest at most two deep",
    "": "the expression is empty",
    "   ": "the expression is empty",
    "1 +": "expected a number",
    "--5": "expected a number",
    "1 2": "unexpected '2' at column 3",
    "sum": "expected '('",
    "1 $ 2": "unexpected character '$' at column 3",
    "[1, 2] ÷ [3]": "unexpected character '÷'",
    "٣ + 1": "is not an integer",
    "(" * 40 + "1" + ")" * 40: "nests deeper than 32 levels",
    "[" * 40 + "]" * 40: "nests deeper than 32 levels",
    "sum(" * 40 + "[1]" + ")" * 40: "nests deeper",
    " + ".join(["1"] * (MAX_LAUNCHES + 2)): f"at most {MAX_LAUNCHES} are allowed",
}


@pytest.mark.parametrize("text", list(REFUSALS), ids=range(len(REFUSALS)))
def test_refusals_say_what_and_where(text):
    """On the published machine: some refusals quote its 126 memory words."""
    with pytest.raises(ExpressionError, match=re.escape(REFUSALS[text])):
        evaluate(text, reference_launch(PUBLISHED_MACHINE), machine=PUBLISHED_MACHINE)


def _echo_launch(job: KernelJob) -> dict[str, list[int]]:
    """A cheap stand-in GPU for the fuzz test: every array comes back as it went in."""
    return {name: list(v) for name, v in job.args.items() if isinstance(v, list)}


def test_fuzz_only_expression_errors():
    rng = random.Random(1234)
    alphabet = list("0123456789+-*/%@()[], ") + ["sum", "min", "argmax", "sort", "fib", "pow", "gcd", "histogram",
                                                "mean", "abs", "2147483648", "-", "é", "\u0000", "\n", "3.5",
                                                "1e9", "[]"]
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        try:
            evaluate(text, _echo_launch)
        except ExpressionError:
            pass
    for bad in (None, 5, ["1"], b"1 + 2"):
        with pytest.raises(ExpressionError):
            evaluate(bad, _echo_launch)  # type: ignore[arg-type]


def test_launch_failures_become_expression_errors():
    from qwengpu_mlx.core.errors import StepBudgetExceeded

    def failing(job):
        raise StepBudgetExceeded("step budget exceeded")

    with pytest.raises(ExpressionError, match="the dot launch failed"):
        evaluate("[1] @ [2]", failing)
    with pytest.raises(ExpressionError, match="returned no 'out'"):
        evaluate("[1] @ [2]", lambda job: {})


def test_parse_keeps_literals_unfolded():
    tree = parse("2 + 3")
    assert type(tree).__name__ == "BinOp" and tree.op == "+"
    assert parse("-5").value == -5


def test_every_kernel_fits_the_machine_at_its_largest_launch():
    """The biggest job of each form binds within the ROM, registers and memory."""
    cases = ["sort(" + lit(list(range(64, 0, -1))) + ")", lit([1] * 62) + " @ " + lit([2] * 62),
             lit([[1] * 20] * 5) + " @ " + lit([1] * 20), "histogram(" + lit([0] * 100) + ", 26)",
             "prefix_sum(" + lit([1] * 125) + ")", "reverse(" + lit([1] * 126) + ")", "gcd(1, 2147483647)",
             "fib(46)", "pow(1, 2147483647)", "argmax(" + lit([1] * 124) + ")", "max(" + lit([1] * 125) + ")"]
    for text in cases:
        for job, _ in evaluate(text, LAUNCH).launches:
            program = bind_job(job, PUBLISHED_MACHINE)
            assert len(program.blocks) <= PUBLISHED_MACHINE.rom_blocks
            assert program.regs_used <= PUBLISHED_MACHINE.usable_regs
