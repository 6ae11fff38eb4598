"""The native pack: a store's second runner comes from it and launches exactly as the first.

Expected values come from the circuit runner over the compact circuit (the runner a store
builds the long way, whose native step ``test_native_step.py`` compares with the MLX-ops
path) and from the kernels' NumPy oracles; the packed runner is the code under test.
"""

import json
import types
from pathlib import Path

import pytest

from qwengpu_mlx.core.machine import PUBLISHED_MACHINE, LARGE_MACHINE
from qwengpu_mlx.runtime import CircuitStore, native
from qwengpu_mlx.runtime.circuit_runner import CircuitRunner
from qwengpu_mlx.runtime.native_runner import PackedRunner, _paths, load_pack, pack_key
from tests.support.launching import bound_program, on_runner
from tests.support.oracles import ORACLES

KERNELS = Path(__file__).resolve().parents[2] / "examples" / "kernels"


def _launch(runner, name, machine):
    spec = json.loads((KERNELS / f"{name}.json").read_text())
    prog = bound_program(KERNELS / f"{name}.cu", spec["kernel"], args=spec["args"], block=spec["block"],
                         grid=spec["grid"], machine=machine)
    return spec, on_runner(prog, runner, check=True)


@pytest.mark.parametrize("machine,name", [(PUBLISHED_MACHINE, "shfl_broadcast"), (LARGE_MACHINE, "dot")])
def test_the_second_store_runs_on_the_pack_and_launches_the_same(tmp_path, machine, name):
    built = CircuitStore(directory=tmp_path).runner(machine)
    assert isinstance(built, CircuitRunner) and built.native is not None
    packed = CircuitStore(directory=tmp_path).runner(machine)
    assert isinstance(packed, PackedRunner)
    spec, want = _launch(built, name, machine)
    _, got = _launch(packed, name, machine)
    assert got.tokens == want.tokens and got.min_margin == want.min_margin
    assert got.check.problems == [] and got.outputs == ORACLES[name](spec)
    heads = [(L, h) for L, mz in enumerate(built.mixers) if mz is not None for h in mz.heads][::7]
    for L, h in heads:  # every seventh head's state after the launch, bit for bit
        assert (packed.recurrent_state(L, h) == built.recurrent_state(L, h)).all()


def test_a_corrupt_pack_is_not_used(tmp_path):
    CircuitStore(directory=tmp_path).runner(PUBLISHED_MACHINE)
    arrays, _ = _paths(pack_key(PUBLISHED_MACHINE), tmp_path)
    data = bytearray(arrays.read_bytes())
    data[len(data) // 2] ^= 1
    arrays.write_bytes(bytes(data))
    assert isinstance(CircuitStore(directory=tmp_path).runner(PUBLISHED_MACHINE), CircuitRunner)


def test_a_pack_of_another_native_build_is_not_used(tmp_path, monkeypatch):
    """The program a pack holds is read by the step's C++: a pack saved under another build
    of it (its source changed) is not the one a load looks for."""
    CircuitStore(directory=tmp_path).runner(PUBLISHED_MACHINE)
    saved = pack_key(PUBLISHED_MACHINE)
    monkeypatch.setattr(native, "build_key", lambda: "another build of circuit_step.cpp")
    assert pack_key(PUBLISHED_MACHINE) != saved
    assert load_pack(PUBLISHED_MACHINE, tmp_path) is None


def test_a_pack_is_filed_under_the_build_that_runs_it(module):
    """A pack's key names the build of the module that runs its program (``native.key_of``:
    the source that module was built from, whatever the source on disk says now), and a
    module ``native.load`` did not load has no key: no pack is filed for it."""
    assert native.key_of(module) == native.build_key()
    assert native.key_of(types.ModuleType("elsewhere")) is None
    assert pack_key(PUBLISHED_MACHINE, native.key_of(module)) == pack_key(PUBLISHED_MACHINE)
    assert pack_key(PUBLISHED_MACHINE, "another build") != pack_key(PUBLISHED_MACHINE)
