"""The chat's staged floats (``chat/staging.py``): a form's launches and its value.

Each form runs here on a stand-in of the evaluator: a job whose kernel "outgrows the ROM"
(a set of kernel names the stand-in refuses, as the published machine's 32 blocks refuse
the mixed and division kernels) is run by its own staged form; the others are launched
as what their kernels mean, written with NumPy's float32. The expected values come from
the operands directly (each int converted once, then one float32 operation), never from
the launches the forms ran.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np
import pytest

from qwengpu_mlx.chat.expression_parse import F32
from qwengpu_mlx.chat.staging import IntsConverted, MeanOfInts, OneBlock, float_words
from qwengpu_mlx.core.machine import LARGE_MACHINE, PUBLISHED_MACHINE

OPS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}

OUTGROWN = {f"{op}_{sides}" for op in OPS for sides in ("fi", "if")} | {"div_ff", "mean_i"}
"""The kernels the stand-in's ROM refuses: their jobs run by their staged forms."""


@dataclass(frozen=True)
class Job:
    """The fields of ``expression.KernelJob`` a staged form reads and replaces."""

    kernel: str
    args: dict
    result: str
    block: int = 1
    grid: int = 1
    staged: object = None


def f32(x) -> np.float32:
    return np.float32(x)


def bits(x: np.float32) -> int:
    return int(np.float32(x).view(np.uint32))


def _floats(words: list) -> np.ndarray:
    """Launch arguments as float32: ``0f...`` bit patterns."""
    return np.array([int(w[2:], 16) for w in words], dtype=np.uint32).view(np.float32)


def to_float(ints: list[int]) -> Job:
    return Job("to_float", {"x": list(ints), "n": len(ints)}, "x")


def add_up(ints: list[int]) -> Job:
    return Job("sum", {"x": list(ints), "out": [0], "n": len(ints)}, "out")


def divide(a: F32, b: F32) -> Job:
    return Job("div_ff", {"a": float_words([a]), "b": float_words([b]), "n": 1}, "a",
               staged=OneBlock("div_ff_block", ("a", "b")))


@dataclass
class Evaluator:
    """Runs jobs as the chat's evaluator does: a refused kernel by its staged form."""

    machine: object
    ran: list = field(default_factory=list)

    def run(self, job: Job):
        if job.kernel in OUTGROWN:
            value = None if job.staged is None else job.staged.value(job, self.run, self.machine)
            if value is None:
                raise AssertionError(f"{job.kernel} outgrows the ROM and has no form that fits")
            return value
        self.ran.append((job.kernel, job.block, job.grid, sorted(job.args)))
        return self.launch(job)

    @staticmethod
    def launch(job: Job):
        """What the kernel computes, on the job's own arguments."""
        if job.kernel == "to_float":
            return [F32(bits(f32(k))) for k in job.args["x"]]
        if job.kernel == "sum":
            return sum(job.args["x"])
        name = job.kernel.split("_")[0]
        out = OPS[name](_floats(job.args["a"]), _floats(job.args["b"]))
        values = [F32(bits(x)) for x in out]
        return values if len(values) > 1 else values[0]


def _mixed(op: str, xs: list[float], ks: list[int], int_side: str) -> Job:
    """``xs op ks`` (``int_side`` "b") or ``ks op xs`` ("a") as the chat builds it."""
    floats = float_words([F32(bits(f32(x))) for x in xs])
    a, b = (floats, ks) if int_side == "b" else (ks, floats)
    then = OneBlock("div_ff_block", ("a", "b")) if op == "div" else None
    kernel = f"{op}_fi" if int_side == "b" else f"{op}_if"
    return Job(kernel, {"a": a, "b": b, "n": len(xs)}, "a" if int_side == "b" else "b",
               block=len(xs), staged=IntsConverted(int_side, f"{op}_ff", "a", to_float, then))


@pytest.mark.parametrize("int_side", ["a", "b"])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_an_int_side_is_converted_then_the_float_kernel_runs(op, int_side):
    rng = random.Random(f"staging-{op}-{int_side}")
    xs = [rng.uniform(-100, 100) for _ in range(5)]
    ks = [rng.randint(-(2 ** 31), 2 ** 31 - 1) for _ in range(5)]  # beyond 2^24: the conversion rounds
    ev = Evaluator(PUBLISHED_MACHINE)
    got = ev.run(_mixed(op, xs, ks, int_side))
    left, right = ([f32(x) for x in xs], [f32(k) for k in ks]) if int_side == "b" else \
        ([f32(k) for k in ks], [f32(x) for x in xs])
    assert [v.bits for v in got] == [bits(OPS[op](a, b)) for a, b in zip(left, right)]
    expected = ["to_float", "div_ff_block" if op == "div" else f"{op}_ff"]
    assert [kernel for kernel, *_ in ev.ran] == expected


def test_a_division_runs_as_one_block_of_its_elements():
    ev = Evaluator(PUBLISHED_MACHINE)
    ev.run(_mixed("div", [1.0, 2.0, 3.0], [3, 7, -9], "b"))
    assert ev.ran[-1] == ("div_ff_block", 3, 1, ["a", "b"])  # the count is the block: no n, no guard


def test_a_division_longer_than_a_block_has_no_smaller_form():
    n = PUBLISHED_MACHINE.max_block_dim + 1
    job = Job("div_ff", {"a": ["0f3F800000"] * n, "b": ["0f40000000"] * n, "n": n}, "a", block=16, grid=2,
              staged=OneBlock("div_ff_block", ("a", "b")))
    assert job.staged.value(job, Evaluator(PUBLISHED_MACHINE).run, PUBLISHED_MACHINE) is None
    assert LARGE_MACHINE.max_block_dim >= n  # where a block holds them, it runs
    assert len(job.staged.value(job, Evaluator(LARGE_MACHINE).run, LARGE_MACHINE)) == n


@pytest.mark.parametrize("xs", [[1, 2, 4], [2 ** 30, 2 ** 30 - 1, -7], list(range(-8, 8))])
def test_a_mean_of_ints_is_the_sum_converted_then_divided(xs):
    job = Job("mean_i", {"x": xs, "sum": [0], "out": ["0f00000000"], "n": len(xs)}, "out",
              staged=MeanOfInts(add_up, to_float, divide))
    ev = Evaluator(PUBLISHED_MACHINE)
    assert ev.run(job).bits == bits(f32(sum(xs)) / f32(len(xs)))
    assert [kernel for kernel, *_ in ev.ran] == ["sum", "to_float", "div_ff_block"]


def test_a_job_with_no_staged_form_keeps_its_refusal():
    ev = Evaluator(PUBLISHED_MACHINE)
    with pytest.raises(AssertionError, match="no form that fits"):
        ev.run(Job("add_fi", {"a": ["0f3F800000"], "b": [1], "n": 1}, "a"))
