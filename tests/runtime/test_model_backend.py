"""Launches written by the compiled circuit: exact against NumPy oracles and the reference.

Each kernel runs on the model (the circuit built once, the same weights for every
program), its outputs are read from the recurrent state and compared with the
kernel's NumPy oracle (tests/support/oracles.py), and every step is replayed against the
reference interpreter's trace. The whole suite through the model is a benchmark
(bench/model_suite.py); here a representative subset keeps CI fast.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import mlx.core as mx
import pytest

from qwengpu_mlx.core.errors import MemoryFault, ResourceError, StepBudgetExceeded
from qwengpu_mlx.core.readout import read_outputs
from qwengpu_mlx.core.reference import run_program
from qwengpu_mlx.core.machine import PUBLISHED_MACHINE
from tests.support.launching import TokenEvents, bound_program, on_runner

from tests.support.oracles import ORACLES, TEST_ORACLES

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "examples" / "kernels"


@pytest.fixture(scope="module")
def circuit(store):
    return store.machine_circuit(PUBLISHED_MACHINE), store.runner(PUBLISHED_MACHINE)


def program_for(name: str, **override):
    spec = json.loads((KERNELS / f"{name}.json").read_text())
    spec.update(override)
    return spec, bound_program(KERNELS / f"{name}.cu", spec["kernel"], args=spec["args"], block=spec["block"],
                               grid=spec["grid"])


# divergence + atomics under contention; divergent early exit; warp shuffle butterfly;
# a 4-warp shared-memory tree reduction with barriers in a loop (reduce_tree_4warps, from
# tests/kernels_machine: reduce_shared_tree's code paths in 530 launch tokens instead of
# 1,122; reduce_shared_tree itself runs through the model in bench/model_suite.py); a
# multi-block grid; guarded code from short branches (host/ifconvert.py): a shuffle dot whose
# lane 0 stores under a guard, a grid whose guarded load keeps a register set to 0 first,
# and a predicate file that comes back with bits a block wrote but never sent
SUBSET = ["dot", "early_return", "shfl_xor_allreduce", "reduce_tree_4warps", "grid_index", "shfl_dot",
          "histogram", "warp_argmax"]


@pytest.mark.parametrize("name", SUBSET)
def test_kernel_through_model_matches_oracle_and_reference(example_launch, name):
    spec, prog, launch = example_launch(name)
    assert launch.outputs == {**ORACLES, **TEST_ORACLES}[name](spec)
    assert launch.check.exact, launch.check.problems
    # every gate decided with a margin (0.5 bits is perfect; exactness needs > 0.28)
    assert launch.min_margin > 0.4
    assert launch.min_state_margin > 0.9  # memory words read back from the state are clean


def test_dot_product_launch_shape(example_launch):
    spec, prog, launch = example_launch("dot")
    kinds = [t.kind for t in launch.decoded]
    assert kinds[0] == "CTA" and kinds[-1] == "STOP"
    from qwengpu_mlx.runtime.check import reference_run

    ref = reference_run(prog, PUBLISHED_MACHINE, budget=PUBLISHED_MACHINE.step_budget)
    assert kinds.count("EXEC") == launch.steps == len(ref.trace)
    assert read_outputs(prog, launch.memory)["out"] == [32]
    # the published system wrote this launch in 47 tokens; the guarded lowering needs no divergence
    assert len(launch.tokens) <= 36 and "ENT" not in kinds


def test_same_weights_run_every_program(circuit, store):
    mc, runner = circuit
    before = [float(w.astype(mx.float32).sum()) for w in runner.weights()]
    assert store.runner(PUBLISHED_MACHINE) is runner  # one circuit per store, built once
    for name in ("partial_warp3", "avg_floor_signed"):
        spec, prog = program_for(name)
        launch = on_runner(prog, runner)
        assert read_outputs(prog, launch.memory) == ORACLES[name](spec)
    after = [float(w.astype(mx.float32).sum()) for w in runner.weights()]
    assert before == after


def test_infinite_loop_stops_at_step_budget(circuit, tmp_path):
    src = tmp_path / "spin.cu"
    src.write_text("__global__ void spin(volatile int *x) { while (x[0] == 0) { } }\n")
    prog = bound_program(src, args={"x": [0]}, block=1)
    with pytest.raises(StepBudgetExceeded, match="step budget"):
        on_runner(prog, circuit[1], step_budget=20)


def test_launch_refused_before_any_token(circuit):
    spec, prog = program_for("grid_index")
    prog.grid_dim = 65
    seen = []
    with pytest.raises(ResourceError, match="64 thread blocks"):
        on_runner(prog, circuit[1], events=TokenEvents(lambda i, t: seen.append(t)))
    assert seen == []


def test_memory_fault_reported_by_the_model(circuit, tmp_path):
    src = tmp_path / "oob.cu"
    src.write_text("__global__ void oob(int *a, int k) { a[threadIdx.x + k] = 1; }\n")
    prog = bound_program(src, args={"a": [0, 0], "k": 200}, block=2)
    with pytest.raises(MemoryFault, match="out of range") as err:
        on_runner(prog, circuit[1], check=True)
    # the launch up to the fault is what the reference implies: the EXEC of the faulting step, then FAULT(1)
    assert err.value.launch.check.exact, err.value.launch.check.problems


@pytest.mark.parametrize("body, args", [
    # word 1 plus 2 bytes: in range, not word aligned (the alignment bit of the address)
    ("((int *)((char *)a + 6))[0] = 1;", {"a": [0, 0, 0], "k": 0}),
    # a negative word index: below the memory (the thermometer's in-range bit)
    ("a[threadIdx.x + k] = 1;", {"a": [0, 0], "k": -3}),
])
def test_misaligned_and_negative_addresses_fault_in_the_model(circuit, tmp_path, body, args):
    src = tmp_path / "bad.cu"
    src.write_text("__global__ void bad(int *a, int k) { " + body + " }\n")
    prog = bound_program(src, args=args, block=2)
    with pytest.raises(MemoryFault):  # the reference interpreter faults too
        run_program(prog, PUBLISHED_MACHINE)
    with pytest.raises(MemoryFault, match="out of range"):
        on_runner(prog, circuit[1])


def test_cli_model_backend_json_with_check():
    out = subprocess.run(
        [sys.executable, "-m", "qwengpu_mlx.cli.main", "run", str(KERNELS / "dot.cu"), "--backend", "model",
         "--arg", "a=1,2,3", "--arg", "b=4,5,6", "--arg", "out=0", "--arg", "n=3", "--check", "--json"],
        capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert out.returncode == 0, out.stderr
    obj = json.loads(out.stdout)
    assert obj["outputs"]["out"] == [32] and obj["backend"] == "model"
    assert obj["exact"] is True and obj["min_margin"] > 0.4 and obj["min_state_margin"] > 0.9
    assert obj["tokens"] == len(obj["launch_tokens"]) and obj["tokens_per_s"] > 0
    assert obj["peak_resident_gb"] > 0.01  # the process: at least Python, NumPy and the circuit's pack
