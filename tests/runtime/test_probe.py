"""The trust probes' launch is a program the runtime holds (no kernel is compiled to hand
out a runner): it must be exactly what the host makes of the probe's CUDA source, on every
named machine, and its launch must give the CUDA answer."""

from __future__ import annotations

import pytest

from qwengpu_mlx.core.machine import MACHINES
from qwengpu_mlx.runtime.probe import PROBE_ARGS, PROBE_SOURCE, probe_program

from tests.support.cli import needs_clang
from tests.support.launching import bound_program, run_reference


@needs_clang
@pytest.mark.parametrize("name", sorted(MACHINES))
def test_the_held_probe_is_what_the_host_compiles(tmp_path, name):
    source = tmp_path / "probe.cu"
    source.write_text(PROBE_SOURCE)
    machine = MACHINES[name]
    compiled = bound_program(source, "probe", args=PROBE_ARGS, block=4, grid=1, machine=machine)
    assert probe_program(machine) == compiled


@pytest.mark.parametrize("name", sorted(MACHINES))
def test_the_probe_launch_gives_the_cuda_answer(name):
    a, b, n = PROBE_ARGS["a"], PROBE_ARGS["b"], PROBE_ARGS["n"]
    want = PROBE_ARGS["out"][0] + sum(a[i] * b[i] - i for i in range(n))  # atomicAdd of each lane below n
    result = run_reference(probe_program(MACHINES[name]), MACHINES[name])
    assert result.outputs["out"] == [want]
