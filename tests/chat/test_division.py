"""The normal mode's division forms (``/ %``, ``imean``, ``abs``): parsing, every operand shape
on the reference interpreter against C's rules written out here, the refusals (division
by zero, over-long vectors, a wrapping sum), and two expressions through the model."""

from __future__ import annotations

import random
import re

import pytest

from qwengpu_mlx.chat.expression import ExpressionError, KernelJob, bind_job, evaluate, parse, reference_launch
from qwengpu_mlx.core.machine import PUBLISHED_MACHINE, MachineConfig

LAUNCH = reference_launch()
INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1
EDGES = [INT_MIN, INT_MIN + 1, -7, -1, 0, 1, 7, INT_MAX]


# --- the oracle: C99 / CUDA integer division, from its definition -----------------------

def wrap(x: int) -> int:
    """Two's complement in 32 bits (INT_MIN / -1 = 2^31 wraps to INT_MIN)."""
    return (x + (1 << 31)) % (1 << 32) - (1 << 31)


def c_div(a: int, b: int) -> int:
    """The quotient truncated toward zero: |a| // |b| with the sign of a * b."""
    q = abs(a) // abs(b)
    return wrap(-q if (a < 0) != (b < 0) else q)


def c_rem(a: int, b: int) -> int:
    """The remainder takes the dividend's sign and |r| < |b|."""
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def c_mean(v: list[int]) -> int:
    return c_div(sum(v), len(v))


def lit(v) -> str:
    return "[" + ", ".join(str(x) for x in v) + "]"


def test_the_oracle_is_cs_division():
    """C's identity (a / b) * b + a % b == a, and the textbook cases."""
    assert (c_div(7, 2), c_div(-7, 2), c_div(7, -2), c_div(-7, -2)) == (3, -3, -3, 3)
    assert (c_rem(7, 2), c_rem(-7, 2), c_rem(7, -2), c_rem(-7, -2)) == (1, -1, 1, -1)
    assert c_div(INT_MIN, -1) == INT_MIN and c_rem(INT_MIN, -1) == 0
    for a in EDGES:
        for b in EDGES:
            if b:
                assert wrap(c_div(a, b) * b + c_rem(a, b)) == a


# --- parsing -----------------------------------------------------------------------------

def test_division_binds_like_multiplication_left_to_right():
    tree = parse("7 - 6 / 2 % 4 * 3")  # 7 - (((6 / 2) % 4) * 3), as in C
    assert tree.op == "-" and tree.left.value == 7
    mul = tree.right
    assert mul.op == "*" and mul.left.op == "%" and mul.left.left.op == "/"
    assert (mul.left.left.left.value, mul.left.left.right.value, mul.left.right.value) == (6, 2, 4)
    assert [tree.column, mul.left.left.column, mul.left.column] == [3, 7, 11]
    neg = parse("-7 / 2")  # the literal keeps its sign: (-7) / 2
    assert neg.op == "/" and neg.left.value == -7
    assert parse("-(7) % 2").op == "%"


def test_imean_and_abs_parse_as_calls():
    assert parse("imean([1, 2])").name == "imean"
    tree = parse("abs(-5)")
    assert tree.name == "abs" and tree.args[0].value == -5


# --- evaluation on the reference interpreter ---------------------------------------------

def nonzero(rng: random.Random, big: bool) -> int:
    x = rng.randint(INT_MIN, INT_MAX) if big else rng.choice([-9, -5, -3, -2, -1, 1, 2, 3, 5, 9])
    return x or 1


def vectors(rng: random.Random, n: int, big: bool) -> tuple[list[int], list[int]]:
    a = [rng.randint(INT_MIN, INT_MAX) if big else rng.randint(-100, 100) for _ in range(n)]
    return a, [nonzero(rng, big and i % 2 == 0) for i in range(n)]


@pytest.mark.parametrize("op,oracle", [("/", c_div), ("%", c_rem)])
def test_division_of_every_operand_shape_matches_c(op, oracle):
    rng = random.Random(f"chat-division-{op}")
    longest = PUBLISHED_MACHINE.mem_words // 2
    for n, big in [(1, False), (5, True), (17, False), (longest, True)]:
        a, b = vectors(rng, n, big)
        assert evaluate(f"{lit(a)} {op} {lit(b)}", LAUNCH).value == [oracle(x, y) for x, y in zip(a, b)]
    a = EDGES + [rng.randint(INT_MIN, INT_MAX) for _ in range(PUBLISHED_MACHINE.mem_words - len(EDGES))]
    for k in (7, -3, -1, INT_MIN):
        assert evaluate(f"{lit(a)} {op} {k}", LAUNCH).value == [oracle(x, k) for x in a], k
    divisors = [b for b in EDGES if b]
    for k in (100, INT_MIN, -1):
        assert evaluate(f"{k} {op} {lit(divisors)}", LAUNCH).value == [oracle(k, y) for y in divisors], k
    for x, y in [(100, 7), (-100, 7), (7, -100), (INT_MIN, -1), (INT_MAX, INT_MIN), (0, 5)]:
        assert evaluate(f"{x} {op} {y}", LAUNCH).value == oracle(x, y), (x, y)


def test_imean_matches_c():
    rng = random.Random("chat-mean")
    cases = [[1, 2, 3, 4], [-7, 0], [-1, -1, 1], [5], [INT_MAX], [INT_MIN], [INT_MAX, INT_MIN], [9] * 17]
    for n in (16, 33, PUBLISHED_MACHINE.mem_words - 1):
        bound = INT_MAX // n
        cases.append([rng.randint(-bound, bound) for _ in range(n)])
    for v in cases:
        assert evaluate(f"imean({lit(v)})", LAUNCH).value == c_mean(v), v


def test_abs_matches_c():
    assert evaluate(f"abs({lit(EDGES)})", LAUNCH).value == [wrap(abs(x)) for x in EDGES]
    for x in (-5, 0, INT_MAX, INT_MIN):
        assert evaluate(f"abs({x})", LAUNCH).value == wrap(abs(x))


def test_nested_division_runs_one_launch_per_operation():
    cases = {"imean([1, 2, 3, 4]) % 3": (c_rem(c_mean([1, 2, 3, 4]), 3), ["imean", "rem"]),
             "abs([7, -7] / 2)": ([3, 3], ["div", "abs"]),
             "100 / 7 * 7 + 100 % 7": (100, ["div", "mul", "rem", "add"]),
             "sum([10, 20, 30] / [3, -4, 7])": (3 - 5 + 4, ["div", "sum"])}
    for text, (value, forms) in cases.items():
        result = evaluate(text, LAUNCH)
        assert result.value == value, text
        assert [job.form for job, _ in result.launches] == forms, text


def test_the_value_is_the_launchs_not_the_hosts():
    """A fake GPU answers with sentinels: a divided value must be made of them."""
    def sentinel(job: KernelJob) -> dict[str, list[int]]:
        return {name: [900 + k for k in range(len(v))] for name, v in job.args.items() if isinstance(v, list)}

    assert evaluate("7 / 2", sentinel).value == 900
    assert evaluate("[7, 8] % 3", sentinel).value == [900, 901]
    assert evaluate("imean([1, 2, 3])", sentinel).value == 900
    assert evaluate("abs(-4)", sentinel).value == 900


# --- refusals ----------------------------------------------------------------------------

ZERO = {"5 / 0": "division by zero ('/' at column 3): the divisor is 0",
        "[1, 2, 3] % [4, 0, 6]": "division by zero ('%' at column 11): element 1 of the divisor is 0",
        "[1, 2] / 0": "division by zero ('/' at column 8): the divisor is 0",
        "10 % [5, 2, 0]": "division by zero ('%' at column 4): element 2 of the divisor is 0",
        "1 + 5 / (2 - 2)": "division by zero ('/' at column 7): the divisor is 0"}


@pytest.mark.parametrize("text", list(ZERO))
def test_division_by_zero_is_the_gpus_stop_said_plainly(text):
    with pytest.raises(ExpressionError, match=re.escape(ZERO[text])) as caught:
        evaluate(text, LAUNCH)
    assert re.search(r"the GPU stopped the (div|rem) launch at divide\.cu:\d+$", str(caught.value))


def test_a_too_long_vector_is_told_the_longest_this_machine_takes():
    words = PUBLISHED_MACHINE.mem_words
    cases = {f"{lit([1] * (words // 2 + 1))} / {lit([1] * (words // 2 + 1))}": f"div takes 2 vectors of at most "
                                                                                f"{words // 2} elements",
             f"{lit([1] * (words + 1))} % 3": f"rem takes a vector of at most {words} elements, got {words + 1}",
             f"imean({lit([1] * words)})": f"imean takes a vector of at most {words - 1} elements, got {words}",
             f"abs({lit([1] * (words + 1))})": f"abs takes a vector of at most {words} elements",
             f"sum({lit([1] * words)})": f"sum takes a vector of at most {words - 1} elements",
             f"{lit([1] * words)} + {lit([1] * words)}": f"add takes 2 vectors of at most {words // 2} elements"}
    for text, message in cases.items():
        with pytest.raises(ExpressionError, match=re.escape(message)):
            evaluate(text, reference_launch(PUBLISHED_MACHINE), machine=PUBLISHED_MACHINE)
    small = MachineConfig(mem_words=40)  # the limit is the machine's, not a number in the code
    with pytest.raises(ExpressionError, match="div takes 2 vectors of at most 20 elements, got 21"):
        evaluate(f"{lit([1] * 21)} / {lit([1] * 21)}", LAUNCH, machine=small)


REFUSALS = {
    "[1, 2] / [1]": "the vectors have 2 and 1 elements ('/' at column 8)",
    "[[1, 2]] % 2": "'%' needs a vector, got a matrix",
    "imean(5)": "imean needs a vector, got a scalar",
    "imean([])": "imean needs a non-empty vector",
    "imean([1], [2])": "imean takes 1 argument, got 2",
    "abs([[1]])": "abs needs a vector, got a matrix",
    f"imean([{INT_MAX}, 1])": "the sum of the 2 elements is outside 32-bit signed integers",
    f"imean([{INT_MIN}, -1])": "outside 32-bit signed integers",
    "7 /": "expected a number",
    "7 // 2": "expected a number, '[', '(' or a function at column 4, found '/'",
}


@pytest.mark.parametrize("text", list(REFUSALS))
def test_division_refusals_say_what_and_where(text):
    with pytest.raises(ExpressionError, match=re.escape(REFUSALS[text])):
        evaluate(text, LAUNCH)


def test_the_division_kernels_fit_the_default_machine_at_their_largest():
    words = PUBLISHED_MACHINE.mem_words
    cases = [f"{lit([INT_MIN] * (words // 2))} / {lit([1] * (words // 2))}", f"{lit([1] * words)} % 7",
             f"-5 / {lit([3] * words)}", f"imean({lit([1] * (words - 1))})", f"abs({lit([-1] * words)})"]
    for text in cases:
        for job, _ in evaluate(text, LAUNCH).launches:
            program = bind_job(job, PUBLISHED_MACHINE)
            assert len(program.blocks) <= PUBLISHED_MACHINE.rom_blocks, job.kernel
            assert program.regs_used <= PUBLISHED_MACHINE.usable_regs, job.kernel


# --- through the model -------------------------------------------------------------------

@pytest.fixture(scope="module")
def model_tools(store):
    """gpu_eval as the chat runs it: every launch in the default machine's circuit, checked."""
    from qwengpu_mlx.chat.calls import GpuTools

    return GpuTools(store.runner(PUBLISHED_MACHINE), PUBLISHED_MACHINE, check=True)


def ask(tools, expression: str):
    return tools.run({"name": "gpu_eval", "arguments": {"expression": expression}}, "normal")


def test_imean_and_division_through_the_model(model_tools):
    outcome = ask(model_tools, "imean([1, 2, 3, 4]) % [3, -3] / [1, -1]")
    want = [c_div(c_rem(c_mean([1, 2, 3, 4]), k), d) for k, d in [(3, 1), (-3, -1)]]
    assert not outcome.error and outcome.content == lit(want)
    assert [r.kernel for r in outcome.launches] == ["imean", "rem", "div"]
    assert all(r.exact for r in outcome.launches)


def test_division_by_zero_through_the_model_is_an_error_text(model_tools):
    outcome = ask(model_tools, "[10, 20] / [5, 0]")
    assert outcome.error
    assert outcome.content.startswith("error: division by zero ('/' at column 10): element 1 of the divisor is 0")
    assert "Traceback" not in outcome.content
