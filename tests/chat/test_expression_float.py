"""The expression tool's floats: literals, + - * /, -x, sqrt, sum, mean (fmean), each a
float kernel run on the exact interpreter of the large machine (float kernels need its
ROM). Expected values are NumPy's float32 arithmetic written from what each operation
means (one IEEE-754 rounding per operation, an int operand converted to float32 first),
never the code under test."""

from __future__ import annotations

import random

import numpy as np
import pytest

from qwengpu_mlx.chat.expression import ExpressionError, F32, evaluate, parse, reference_launch
from qwengpu_mlx.chat.tools import result_text
from qwengpu_mlx.core.machine import PUBLISHED_MACHINE, LARGE_MACHINE
from tests.support import oracles_float

LAUNCH = reference_launch(LARGE_MACHINE)
f32 = np.float32


def bits(x) -> int:
    return int(np.array(x, dtype=np.float32).view(np.uint32))


def run(text: str):
    """The value as bit patterns (floats) or ints, and the kernels launched."""
    result = evaluate(text, LAUNCH, machine=LARGE_MACHINE)
    value = result.value
    show = (lambda v: v.bits if isinstance(v, F32) else v)
    return ([show(v) for v in value] if isinstance(value, list) else show(value)), \
        [job.kernel for job, _ in result.launches]


def test_literals_are_the_nearest_float32():
    assert parse("2.5").value == F32(bits(f32(2.5)))
    assert parse("1e-3").value == F32(bits(f32("1e-3")))
    assert parse("-0.1").value == F32(bits(-f32("0.1")))
    assert parse("1e999999999").value == F32(0x7F800000)
    assert parse("2").value == 2  # an integer stays an integer


def test_mean_of_integers_as_a_float():
    """``mean`` of ints is the float mean (what "the mean of 1, 2 and 4" means); ``fmean``
    is the same call; a whole mean is still a float, printed with its point as ``run``
    prints a float; C's truncated mean is ``imean``."""
    value, kernels = run("mean([1, 2, 4])")
    assert value == bits(f32(1 + 2 + 4) / f32(3)) and kernels == ["mean_i"]
    assert str(F32(value)) == "2.3333333"
    assert run("fmean([1, 2, 4])") == (value, kernels)
    whole = evaluate("mean([2, 4, 6])", LAUNCH, machine=LARGE_MACHINE).value
    assert whole == F32(bits(f32(12) / f32(3))) and result_text(whole) == "4.0"
    assert run("mean([-7, 2])")[0] == bits(f32(-5) / f32(2))  # -2.5, not C's -2
    assert run("imean([1, 2, 4])") == (7 // 3, [None])


@pytest.mark.parametrize("op", ["+", "-", "*", "/"])
def test_mixed_and_float_operands(op):
    rng = random.Random(f"chat-float-{op}")
    xs = [f32(rng.uniform(-100, 100)) for _ in range(3)]
    ks = [rng.randint(-50, 50) or 7 for _ in range(3)]
    apply = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}[op]
    lit = lambda v: "[" + ", ".join(repr(float(x)) for x in v) + "]"  # noqa: E731
    want_ff = [bits(apply(a, b)) for a, b in zip(xs, reversed(xs))]
    want_fi = [bits(apply(a, f32(k))) for a, k in zip(xs, ks)]
    want_if = [bits(apply(f32(k), a)) for a, k in zip(xs, ks)]
    assert run(f"{lit(xs)} {op} {lit(xs[::-1])}")[0] == want_ff
    assert run(f"{lit(xs)} {op} {ks}")[0] == want_fi
    assert run(f"{ks} {op} {lit(xs)}")[0] == want_if


def test_scalars_repeat_beside_vectors_and_ints_divide_as_in_c():
    assert run("[1.5, 2.5] * 2")[0] == [bits(f32(3)), bits(f32(5))]
    assert run("1 / 3.0") == (bits(f32(1) / f32(3)), ["div_if"])
    assert run("7 / 2") == (3, ["div_vk"])  # integer division stays C's, truncating


def test_negate_sqrt_sum_mean():
    assert run("-(2.5 * 1.5)")[0] == bits(-(f32(2.5) * f32(1.5)))
    assert run("sqrt(2)") == (bits(np.sqrt(f32(2))), ["sqrt_i"])
    assert run("sqrt([2.0, 9.0, -1.0])")[0][:2] == [bits(np.sqrt(f32(2))), bits(f32(3))]
    assert np.isnan(np.uint32(run("sqrt(-1.0)")[0]).view(np.float32))
    xs = [f32("0.1"), f32("0.2"), f32("0.4")]
    total = (xs[0] + xs[1]) + xs[2]  # index order, one rounding per addition
    assert run("sum([0.1, 0.2, 0.4])")[0] == bits(total)
    assert run("mean([0.1, 0.2, 0.4])")[0] == bits(total / f32(3))
    assert run("imean([-7, 2])")[0] == -2  # the integer mean is C's, truncated toward zero


def literal(v) -> str:
    return "[" + ", ".join(repr(float(x)) for x in v) + "]"


def test_dot_min_max_sort_of_floats():
    """``@`` one fma per element in index order from +0 (the oracle: the exact value rounded
    once, ``oracles_float.fma``); min/max folded as PTX's min.f32/max.f32; sort the
    odd-even transposition's phases with IEEE's <, NaN-free here: a stable ascending sort."""
    rng = random.Random(36)
    a = [f32(rng.uniform(-4, 4)) for _ in range(6)]
    b = [f32(rng.uniform(-4, 4)) for _ in range(6)]
    want = 0
    for x, y in zip(a, b):
        want = oracles_float.fma(bits(x), bits(y), want)
    assert run(f"{literal(a)} @ {literal(b)}") == (want, ["dot_f"])
    xs = [f32(2.5), f32(-0.0), f32(0.0), f32(1e-40), f32(-3.0), f32(7.25)]
    assert run(f"min({literal(xs)})") == (bits(f32(-3.0)), ["min_f"])
    assert run(f"max({literal(xs)})") == (bits(f32(7.25)), ["max_f"])
    assert run("min([0.0, -0.0])")[0] == bits(-f32(0.0))  # -0 below +0, as PTX's min.f32
    got, kernels = run(f"sort({literal(xs)})")
    assert kernels == ["sort_f"]
    assert got == [bits(x) for x in sorted(xs)]  # Python's sort is stable: -0 stays before +0


def test_results_print_the_shortest_decimal():
    assert result_text(F32(bits(f32(1) / f32(3)))) == "0.33333334"
    assert result_text([F32(bits(f32(0.5))), F32(0x7FFFFFFF)]) == "[0.5, nan]"


@pytest.mark.parametrize("text, message", [
    ("[1, 2.0]", "mixes integers and floats"),
    ("2.5 % 2", "'%' takes integers only"),
    ("[1.0, 2.0] @ [1, 2]", "'@' of floats takes two float vectors"),
    ("[1.0, 2.0] @ [1.0]", "the vectors have 2 and 1 elements"),
    ("histogram([2.0, 1.0], 2)", "histogram takes integers only"),
    ("[1.0, 2.0] + [1.0]", "the vectors have 2 and 1 elements"),
])
def test_refusals(text, message):
    with pytest.raises(ExpressionError, match=message):
        evaluate(text, LAUNCH, machine=LARGE_MACHINE)


def published(text: str):
    """``run`` on the published machine's 32-block ROM, where a float op on ints and a float
    division do not fit one kernel and run staged."""
    result = evaluate(text, reference_launch(PUBLISHED_MACHINE), machine=PUBLISHED_MACHINE)
    value = result.value
    show = (lambda v: v.bits if isinstance(v, F32) else v)
    return ([show(v) for v in value] if isinstance(value, list) else show(value)), \
        [job.kernel or job.form for job, _ in result.launches]


def test_the_published_machine_stages_a_float_mean():
    """The integer sum, both ints converted on the GPU, then one correctly rounded division."""
    value, kernels = published("mean([1, 2, 4])")
    assert value == bits(f32(7) / f32(3)) and str(F32(value)) == "2.3333333"
    assert kernels == ["sum", "to_float", "div_ff_block"]
    rng = random.Random("published-fmean")
    v = [rng.randint(-10**6, 10**6) for _ in range(16)]
    assert published(f"mean({v})")[0] == bits(f32(sum(v)) / f32(len(v)))


@pytest.mark.parametrize("op", ["+", "-", "*", "/"])
def test_the_published_machine_stages_mixed_operands(op):
    """An int side converted by its own launch, then the float-only kernel: the same one
    rounding per element as the one mixed kernel (the oracle converts, then rounds once)."""
    rng = random.Random(f"published-{op}")
    xs = [f32(rng.uniform(-100, 100)) for _ in range(5)]
    ks = [rng.randint(-(2**31), 2**31 - 1) for _ in range(5)]  # beyond 2^24: the conversion rounds
    apply = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}[op]
    lit = "[" + ", ".join(repr(float(x)) for x in xs) + "]"
    assert published(f"{lit} {op} {ks}")[0] == [bits(apply(a, f32(k))) for a, k in zip(xs, ks)]
    assert published(f"{ks} {op} {lit}")[0] == [bits(apply(f32(k), a)) for a, k in zip(xs, ks)]


def test_the_published_machine_names_the_large_one():
    """A division of more elements than one block has threads has no staged form there."""
    with pytest.raises(ExpressionError, match="--machine large"):
        evaluate(f"{list(range(1, 18))} / 3.0", reference_launch(PUBLISHED_MACHINE), machine=PUBLISHED_MACHINE)


# --- through the model -------------------------------------------------------------------

def _tools(store, machine):
    """gpu_eval as the chat runs it on ``machine``: every launch in the model, checked."""
    from qwengpu_mlx.chat.calls import GpuTools  # lazy: only the model tests need the runner

    return GpuTools(store.runner(machine), machine, check=True)


@pytest.fixture(scope="module")
def large_tools(store):
    return _tools(store, LARGE_MACHINE)


def test_a_float_mean_through_the_model(large_tools):
    outcome = large_tools.run({"name": "gpu_eval", "arguments": {"expression": "fmean([1, 2, 4])"}}, "normal")
    assert not outcome.error, outcome.content
    assert outcome.content == str(F32(bits(f32(1 + 2 + 4) / f32(3)))) == "2.3333333"
    assert [r.kernel for r in outcome.launches] == ["fmean"] and all(r.exact for r in outcome.launches)


@pytest.fixture(scope="module")
def published_tools(store):
    """The demo chat's machine."""
    return _tools(store, PUBLISHED_MACHINE)


def test_a_staged_float_mean_through_the_model(published_tools):
    outcome = published_tools.run({"name": "gpu_eval", "arguments": {"expression": "mean([1, 2, 4])"}}, "normal")
    assert not outcome.error, outcome.content
    assert outcome.content == "2.3333333"
    assert len(outcome.launches) == 3 and all(r.exact for r in outcome.launches)
