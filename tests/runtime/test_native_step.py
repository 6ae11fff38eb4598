"""The native token step against the MLX-ops runner it must equal, and the trust around it.

Expected values come from the MLX-ops runner (``runner.py``, itself checked against the
dense model and mlx-lm in ``test_equivalence.py``), from the reference interpreter and
from the NumPy oracles; the native step is the code under test.
"""

import json
from pathlib import Path

import mlx.core as mx
import numpy as np
import pytest

from qwengpu_mlx.runtime import native
from qwengpu_mlx.core.machine import PUBLISHED_MACHINE
from qwengpu_mlx.runtime.native_step import NativeStep
from qwengpu_mlx.runtime.native_trust import choose_native
from qwengpu_mlx.runtime.circuit_runner import CircuitRunner
from qwengpu_mlx.runtime import CircuitStore
from tests.support.launching import bound_program, on_runner

from tests.support.oracles import ORACLES

KERNELS = Path(__file__).resolve().parents[2] / "examples" / "kernels"
# divergence, atomics, a shuffle (the representative ten, with loops, barriers and the
# other shuffle modes, run on both paths in bench/profile_step.py --subset)
SUBSET = ["early_return", "atomic_contention", "shfl_broadcast"]


@pytest.fixture(scope="module")
def cc(store):
    return store.compact(PUBLISHED_MACHINE)


def _program(name):
    spec = json.loads((KERNELS / f"{name}.json").read_text())
    return spec, bound_program(KERNELS / f"{name}.cu", spec["kernel"], args=spec["args"], block=spec["block"],
                      grid=spec["grid"])


def test_exp_and_sigmoid_are_mlx_own_bit_for_bit(module):
    # every 97th float bit pattern: normals, subnormals, infinities, NaNs, both signs
    assert module.math_mismatches(97) == 0


def test_residual_after_every_block_equals_the_mlx_layers(cc, module):
    ops = CircuitRunner(cc, PUBLISHED_MACHINE)
    step = NativeStep(ops.narrow, module)
    x = ops.embed([5])
    mx.eval(x)
    n = len(ops.mixers)
    trace = [x]
    ops._forward(x, [None] * n, [None] * n, False, trace)
    blocks = 0
    for L, (mz, ml) in enumerate(zip(ops.mixers, ops.mlps)):
        blocks += (mz is not None) + (ml is not None)
        got = np.array(step.residual(x, step.zeros(), blocks))  # fresh states: a step writes over its own
        want = np.array(trace[L + 1])
        assert np.array_equal(got, want), f"residual after layer {L} differs by {np.abs(got - want).max()}"


@pytest.mark.parametrize("name", SUBSET)
def test_launch_tokens_and_margins_equal_the_ops_path(cc, module, name):
    spec, prog = _program(name)
    want = on_runner(prog, CircuitRunner(cc, PUBLISHED_MACHINE), check=True)
    got = on_runner(prog, CircuitRunner(cc, PUBLISHED_MACHINE, native=module), check=True)
    assert got.tokens == want.tokens
    assert got.min_margin == pytest.approx(want.min_margin, abs=1e-6)
    assert got.min_state_margin == pytest.approx(want.min_state_margin, abs=1e-6)
    assert got.check.problems == [] and got.outputs == ORACLES[name](spec)


TEN = ["nested_branches", "early_return", "lane_while", "reduce_shared_tree", "atomic_contention",
       "shfl_xor_allreduce", "shfl_down_reduce", "shfl_up_scan", "shfl_broadcast", "grid_index"]


@pytest.mark.benchmark
@pytest.mark.parametrize("name", TEN)
def test_the_representative_ten_equal_the_ops_path(cc, module, name):
    """The whole representative subset (loops, barriers, every shuffle mode too): about
    two minutes on the MLX-ops path, so a benchmark (``-m benchmark``)."""
    test_launch_tokens_and_margins_equal_the_ops_path(cc, module, name)


def test_states_and_logits_equal_the_ops_path_over_a_prefill(cc, module):
    ops = CircuitRunner(cc, PUBLISHED_MACHINE)
    fast = CircuitRunner(cc, PUBLISHED_MACHINE, native=module)
    tokens = [7, 300, 42, 9, 1000, 17]
    lo, lf = np.array(ops.step(tokens)), np.array(fast.step(tokens))
    assert np.array_equal(lo, lf)
    lo, lf = np.array(ops.step([11])), np.array(fast.step([11]))  # a decode token after the prefill
    assert np.array_equal(lo, lf)
    for L, mz in enumerate(ops.mixers):
        if mz is not None:
            for head in mz.heads[:2]:
                assert np.array_equal(ops.recurrent_state(L, head), fast.recurrent_state(L, head)), (L, head)


def test_a_step_updates_its_states_in_place_and_recurrent_state_is_a_copy(cc, module):
    runner = CircuitRunner(cc, PUBLISHED_MACHINE, native=module)
    runner.step([5])
    packed = runner._packed
    L, mz = next((L, mz) for L, mz in enumerate(runner.mixers) if mz is not None)
    kept = runner.recurrent_state(L, mz.heads[0])
    snapshot = kept.copy()
    before = [a.copy() for a in packed]
    runner.step([300])
    assert runner._packed is packed  # the same arrays...
    assert not np.array_equal(packed[0], before[0]) and not np.array_equal(packed[1], before[1])  # ...updated
    assert np.array_equal(kept, snapshot)  # what recurrent_state handed out stays as it was


class _Faulty:
    """The real module with one fault: the logits of every token negated, or the
    recurrent state never updated; on the launch loop's greedy-token call too."""

    def __init__(self, real, fault):
        self.real, self.fault, self.__name__ = real, fault, f"faulty-{fault}"
        self.plan = real.plan

    def run(self, plan, x, conv, state, aux, floats, ints, logits, residual):
        old_state = state.copy()
        margin = self.real.run(plan, x, conv, state, aux, floats, ints, logits, residual)
        if self.fault == "logits":
            with np.errstate(invalid="ignore"):  # a prompt token's logits are not written
                logits *= -1
        else:
            state[:] = old_state
        return margin

    def run_top_two(self, plan, x, conv, state, aux, floats, ints, logits, residual):
        margin = self.run(plan, x, conv, state, aux, floats, ints, logits, residual)
        return (*self.real.top_two(logits), margin)


@pytest.mark.parametrize("fault", ["logits", "state"])
def test_a_faulty_step_is_refused_once_and_launches_run_on_the_ops_path(cc, module, tmp_path, fault):
    warnings = []
    chosen = choose_native(cc, PUBLISHED_MACHINE, directory=tmp_path, warn=warnings.append,
                           module=_Faulty(module, fault))
    assert chosen is None and len(warnings) == 1 and "native circuit step" in warnings[0]
    verdicts = json.loads((tmp_path / "gpu-trust.json").read_text())
    assert [v["trusted"] for v in verdicts.values()] == [False]
    assert "failed" not in warnings[0], warnings[0]  # refused for what it wrote, not for a crash
    again = choose_native(cc, PUBLISHED_MACHINE, directory=tmp_path, warn=warnings.append,
                          module=_Faulty(module, fault))
    assert again is None and len(warnings) == 2  # the cached verdict (no second probe), said again


def test_the_built_step_is_trusted_and_the_store_runs_on_it(cc, module, tmp_path):
    assert choose_native(cc, PUBLISHED_MACHINE, directory=tmp_path) is module  # probed afresh here
    verdicts = json.loads((tmp_path / "gpu-trust.json").read_text())
    assert [v["trusted"] for v in verdicts.values()] == [True]
    runner = CircuitStore(directory=tmp_path).runner_over(cc, PUBLISHED_MACHINE)
    assert runner.native is not None and runner.native.module is module
    shared = json.loads((native.native_dir() / "gpu-trust.json").read_text())  # the stores' verdicts
    assert shared[f"native circuit step {native.build_key()}"]["trusted"] is True


def test_without_cmake_launches_run_on_the_ops_path_quietly(cc, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("QWENGPU_MLX_CACHE", str(tmp_path / "cache"))  # no module built there
    monkeypatch.setenv("QWENGPU_MLX_CMAKE", str(tmp_path / "no-cmake"))  # and no cmake
    found = native.load()
    assert found.module is None and "cmake" in found.reason
    runner = CircuitStore(directory=tmp_path).runner_over(cc, PUBLISHED_MACHINE)
    assert runner.native is None
    assert capsys.readouterr().err == ""


def test_switched_off_by_the_environment(monkeypatch):
    monkeypatch.setenv("QWENGPU_MLX_NATIVE", "0")
    assert native.load().module is None
