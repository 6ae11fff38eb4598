"""The GPU recurrence self-check (``gpu_trust``): a kernel is used only after its probe
launch matched the MLX-ops path and the reference interpreter; a faulty one switches the
process to the ops path on the CPU with one warning line; the verdict is cached.

Metal cannot run here, so the kernels under test are MLX-ops recurrences injected through
the store (the runner interface's ``recurrence``): an exact twin, and faulty ones with
bugs such kernels have (a value head paired with the wrong key head; the output read
before the token's write). Three others, a state rounded to bf16, a dropped decay gate and
per-head gates read from the next head, do not change this circuit's launches (measured:
its state holds levels bf16 represents exactly and its gates are alike in every head), so
the probe rightly passes them.
"""

from __future__ import annotations

import json

import mlx.core as mx
import pytest

from qwengpu_mlx.runtime import gpu_trust
from qwengpu_mlx.core.machine import PUBLISHED_MACHINE
from qwengpu_mlx.runtime.recurrent import gated_delta_ops
from qwengpu_mlx.runtime import CircuitStore


def exact_twin(q, k, v, g, beta, state):
    return gated_delta_ops(q, k, v, g, beta, state)


def read_before_write(q, k, v, g, beta, state):
    """Each token's output read from the state before its own write (a kernel ordering bug)."""
    ys = []
    for t in range(q.shape[1]):
        ys.append((state * q[:, t, :, None, :]).sum(-1))
        _, state = gated_delta_ops(q[:, t:t + 1], k[:, t:t + 1], v[:, t:t + 1], g[:, t:t + 1], beta[:, t:t + 1],
                                   state)
    return mx.stack(ys, axis=1), state


def key_of_next_head(q, k, v, g, beta, state):
    """Value head h paired with key head h+1 (a wrong head index in the kernel)."""
    return gated_delta_ops(q, mx.roll(k, 1, axis=2), v, g, beta, state)


@pytest.fixture
def cc(store):
    return store.compact(PUBLISHED_MACHINE)


@pytest.fixture(autouse=True)
def keep_device():
    before = mx.default_device()
    yield
    mx.set_default_device(before)


@pytest.mark.parametrize("faulty", [read_before_write, key_of_next_head])
def test_a_faulty_kernel_is_refused_and_the_process_switches_to_ops(cc, tmp_path, faulty):
    warnings: list[str] = []
    chosen = gpu_trust.choose_recurrence(cc, PUBLISHED_MACHINE, kernel=faulty, kernel_name="test kernel",
                                         directory=tmp_path, warn=warnings.append)
    assert chosen is gated_delta_ops
    assert mx.default_device() == mx.cpu
    assert len(warnings) == 1 and warnings[0].startswith("warning: not using the GPU recurrence (test kernel)")
    verdicts = json.loads((tmp_path / gpu_trust.VERDICTS_FILE).read_text())
    (verdict,) = verdicts.values()
    assert verdict["trusted"] is False


def test_an_exact_kernel_is_trusted_once_cached_and_then_runs_the_launches(cc, tmp_path, monkeypatch):
    from tests.support.launching import on_runner
    from qwengpu_mlx.runtime.probe import probe_program

    calls = []

    def counting_twin(q, k, v, g, beta, state):
        calls.append(1)
        return gated_delta_ops(q, k, v, g, beta, state)

    warnings: list[str] = []
    assert gpu_trust.choose_recurrence(cc, PUBLISHED_MACHINE, kernel=counting_twin, directory=tmp_path,
                                       warn=warnings.append) is counting_twin
    assert warnings == [] and calls
    monkeypatch.setattr(gpu_trust, "probe", lambda *a: pytest.fail("probed again despite the cached verdict"))
    runner = CircuitStore(directory=tmp_path, kernel=counting_twin).runner_over(cc, PUBLISHED_MACHINE)
    assert runner.recurrence is counting_twin
    before = len(calls)
    assert on_runner(probe_program(PUBLISHED_MACHINE), runner).ended == "STOP"
    assert len(calls) > before  # the launch ran on the trusted kernel


def test_no_gpu_means_no_probe(cc, tmp_path):
    assert gpu_trust.mlx_lm_kernel() is None  # this machine has no Metal GPU
    assert gpu_trust.choose_recurrence(cc, PUBLISHED_MACHINE, directory=tmp_path) is gated_delta_ops
    assert not (tmp_path / gpu_trust.VERDICTS_FILE).exists()
