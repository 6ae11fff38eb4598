"""Conformance suite: every kernel in examples/kernels against its NumPy oracle.

Each ``examples/kernels/NAME.json`` holds a launch (kernel name, block and grid: an int
or a list of up to three, the dynamic shared bytes, one argument per kernel parameter in
order). The kernel runs on the reference backend and
its final memory must equal what ``tests/support/oracles.py`` computes from the kernel's meaning.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.oracles import ORACLES
from tests.support.oracles_launch import dim3

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "examples" / "kernels"
EXAMPLES = sorted(KERNELS.glob("*.json"))

def _spec(path: Path) -> dict:
    return json.loads(path.read_text())


def _machine(spec: dict):
    """The machine the launch file names (the published one when it names none)."""
    from qwengpu_mlx.core.machine import MACHINES

    return MACHINES[spec.get("machine", "default")]


def test_enough_examples_and_every_one_has_an_oracle():
    assert len(EXAMPLES) >= 49
    stems = {p.stem for p in EXAMPLES}
    assert sorted(stems - ORACLES.keys()) == [], "examples without an oracle"
    assert sorted(ORACLES.keys() - stems) == [], "oracles without an example"
    for p in EXAMPLES:
        assert p.with_suffix(".cu").is_file(), f"{p.stem}.cu is missing"
    assert "dot" in stems


def _is_argument(v) -> bool:
    """A 32-bit integer, or a float parameter's value: a decimal, or "nan", "inf", "-inf"."""
    return (isinstance(v, int) and -(2**31) <= v < 2**31) or isinstance(v, float) or v in ("nan", "inf", "-inf")


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_launch_spec_is_well_formed(path: Path):
    spec = _spec(path)
    assert isinstance(spec["kernel"], str) and spec["kernel"]
    m = _machine(spec)
    block, grid = dim3(spec["block"]), dim3(spec["grid"])
    assert min(block) >= 1 and block[0] * block[1] * block[2] <= m.max_block_dim
    assert min(grid) >= 1
    assert spec.get("shared", 0) >= 0
    words = (spec.get("shared", 0) + 3) // 4
    for name, value in spec["args"].items():
        if isinstance(value, list):
            assert value, f"{name}: empty array"
            assert all(_is_argument(v) for v in value), name
            words += len(value)
        else:
            assert _is_argument(value), name
    assert words <= m.mem_words
    # the oracle returns every pointer parameter, in parameter order
    expected = ORACLES[path.stem](spec)
    assert list(expected) == [k for k, v in spec["args"].items() if isinstance(v, list)]


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_kernel_matches_oracle(path: Path):
    from tests.support.launching import reference

    from qwengpu_mlx.core import errors

    spec = _spec(path)
    run = lambda: reference(  # noqa: E731
        source=path.with_suffix(".cu"),
        kernel=spec["kernel"],
        block=spec["block"],
        grid=spec["grid"],
        shared=spec.get("shared", 0),
        args=spec["args"],
        machine=_machine(spec),
    )
    if "error" in spec:  # the launch must stop with this error, naming the kernel's line
        with pytest.raises(getattr(errors, spec["error"]), match=rf"{path.stem}\.cu:\d+"):
            run()
        return
    assert run().outputs == ORACLES[path.stem](spec)


def test_cli_runs_dot_and_prints_one_json_object():
    cmd = [
        sys.executable, "-m", "qwengpu_mlx.cli.main", "run", "examples/kernels/dot.cu",
        "--backend", "reference",
        "--arg", "a=1,2,3", "--arg", "b=4,5,6", "--arg", "out=0", "--arg", "n=3",
        "--json",
    ]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert isinstance(data, dict)
    assert data["outputs"]["out"] == [32]
    assert data["kernel"] == "dot"
    assert data["backend"] == "reference"
    assert isinstance(data["steps"], int) and not isinstance(data["steps"], bool)
