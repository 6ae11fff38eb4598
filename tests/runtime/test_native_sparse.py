"""The sparse native step (the default) against the dense one, bit for bit, on both machines.

The sparse step skips every product term, channel, head and state column that a token
leaves at zero; ``circuit_step.cpp`` argues why each skipped term cannot change a float.
The dense step (``plan(sparse=False)``: every row, channel and head) is the one
``test_native_step.py`` compares with the MLX-ops path; here both run the same tokens in
lockstep and must give the same logits (every bit, signed zeros included), the same
gate margins and the same conv and recurrent states, and the launch must be exact
against the kernel's oracle.
"""

import json
from pathlib import Path

import mlx.core as mx
import numpy as np
import pytest

from qwengpu_mlx.core.machine import PUBLISHED_MACHINE, LARGE_MACHINE
from qwengpu_mlx.runtime.circuit_runner import CircuitRunner
from qwengpu_mlx.runtime.native_step import NativeStep, _Blobs
from qwengpu_mlx.runtime.prompt import prompt_tokens
from tests.support.launching import bound_program, on_runner
from tests.support.oracles import ORACLES

KERNELS = Path(__file__).resolve().parents[2] / "examples" / "kernels"
# divergence and a shuffle on the published machine; a 32-thread block reduction and
# division on the large one (their launch files name it)
CASES = [("published", "early_return"), ("published", "shfl_broadcast"), ("large", "dot"),
         ("large", "block32_reduce")]
MACHINES = {"published": PUBLISHED_MACHINE, "large": LARGE_MACHINE}


def _program(name, machine):
    spec = json.loads((KERNELS / f"{name}.json").read_text())
    return spec, bound_program(KERNELS / f"{name}.cu", spec["kernel"], args=spec["args"], block=spec["block"],
                               grid=spec["grid"], machine=machine)


def _bits(a: mx.array) -> np.ndarray:
    return np.array(a).view(np.uint32)  # float32 -> its bit patterns: -0 and +0 differ


@pytest.mark.parametrize("machine_name,name", CASES)
def test_the_sparse_step_equals_the_dense_one_bit_for_bit(store, module, machine_name, name):
    machine = MACHINES[machine_name]
    cc = store.compact(machine)
    sparse = CircuitRunner(cc, machine, native=module)
    dense = CircuitRunner(cc, machine)
    dense.native = NativeStep(dense.narrow, module, sparse=False)
    spec, prog = _program(name, machine)
    launch = on_runner(prog, sparse)
    assert launch.outputs == ORACLES[name](spec)
    for r in (sparse, dense):
        r.reset()
        r.track_margins = True
    sparse.native.start_profile()  # the same arithmetic, the work counted
    fed = [prompt_tokens(prog, machine)] + [[t] for t in launch.tokens[:-1]]
    for i, tokens in enumerate(fed):
        assert np.array_equal(_bits(sparse.step(tokens)), _bits(dense.step(tokens))), f"logits of token {i}"
    assert sparse.min_margin == dense.min_margin
    # the large machine's register and memory heads are left as they are between EXEC passes
    # (circuit_step.cpp's kept_as_is): that path is among what was compared
    kept = sparse.native.profile_report()[1]["heads kept (a state, no key or query)"]
    assert (kept > 0) == (machine_name == "large")
    assert np.array_equal(_bits(sparse.native.settled(sparse._packed)), _bits(dense._packed[0]))
    assert np.array_equal(_bits(sparse._packed[1]), _bits(dense._packed[1]))


@pytest.mark.parametrize("machine_name,name", [("published", "shfl_broadcast"), ("large", "dot")])
def test_the_sparse_step_without_margins_equals_the_dense_one_bit_for_bit(store, module, machine_name, name):
    """The launch path (no gate margins measured: the MLPs skip what the margins need)."""
    machine = MACHINES[machine_name]
    cc = store.compact(machine)
    sparse = CircuitRunner(cc, machine, native=module)
    dense = CircuitRunner(cc, machine)
    dense.native = NativeStep(dense.narrow, module, sparse=False)
    spec, prog = _program(name, machine)
    launch = on_runner(prog, sparse)
    for r in (sparse, dense):
        r.reset()
        r.track_margins = False
    fed = [prompt_tokens(prog, machine)] + [[t] for t in launch.tokens[:-1]]
    for i, tokens in enumerate(fed):
        assert np.array_equal(_bits(sparse.step(tokens)), _bits(dense.step(tokens))), f"logits of token {i}"
    assert np.array_equal(_bits(sparse.native.settled(sparse._packed)), _bits(dense._packed[0]))
    assert np.array_equal(_bits(sparse._packed[1]), _bits(dense._packed[1]))


def test_the_logits_on_two_threads_are_the_same_floats(store, module, monkeypatch):
    """QWENGPU_MLX_THREADS splits the logits by row ranges (each row still adds its terms in
    input order, from its token kind's shared partial sum): the same bits as one thread."""
    cc = store.compact(LARGE_MACHINE)
    one = CircuitRunner(cc, LARGE_MACHINE, native=module)
    monkeypatch.setenv("QWENGPU_MLX_THREADS", "2")
    two = CircuitRunner(cc, LARGE_MACHINE, native=module)
    _assert_same_logits(one, two, "dot", LARGE_MACHINE)


def test_the_logits_without_row_groups_are_the_same_floats(store, module, monkeypatch):
    """A product whose rows share no leading columns (no row groups: every row from +0) gives
    the same bits as the tied logits' grouped rows."""
    cc = store.compact(PUBLISHED_MACHINE)
    grouped = CircuitRunner(cc, PUBLISHED_MACHINE, native=module)
    original = _Blobs.row_groups
    monkeypatch.setattr(_Blobs, "row_groups", lambda self, p: original(self, p, most=0))
    plain = CircuitRunner(cc, PUBLISHED_MACHINE, native=module)
    _assert_same_logits(grouped, plain, "shfl_broadcast", PUBLISHED_MACHINE)


def test_the_logits_filled_by_runs_are_the_same_floats(store, module, monkeypatch):
    """Row groups started run by run (a token kind's consecutive rows filled with its
    partial sum) give the same bits as every row looking its group up."""
    cc = store.compact(PUBLISHED_MACHINE)
    runs = CircuitRunner(cc, PUBLISHED_MACHINE, native=module)
    original = _Blobs.row_groups
    monkeypatch.setattr(_Blobs, "row_groups", lambda self, p: original(self, p, most_runs=0))
    looked_up = CircuitRunner(cc, PUBLISHED_MACHINE, native=module)
    _assert_same_logits(runs, looked_up, "shfl_broadcast", PUBLISHED_MACHINE)


def _assert_same_logits(first, second, name, machine):
    """The example's launch, as ``first`` runs it, fed token by token to both runners: the
    same logits bits at every token."""
    spec, prog = _program(name, machine)
    launch = on_runner(prog, first)
    first.reset()
    fed = [prompt_tokens(prog, machine)] + [[t] for t in launch.tokens[:-1]]
    for i, tokens in enumerate(fed):
        assert np.array_equal(_bits(first.step(tokens)), _bits(second.step(tokens))), f"logits of token {i}"
