"""Dense checkpoints: dim reuse, and a whole machine at Qwen3.5-2B's shape.

Each machine's circuit (the default one and the one-slot one), folded onto 2048
residual dims with clear gates, must run the same launch as the embedded circuit: same
tokens, outputs equal to the NumPy oracle, every step equal to the reference replay.
(That unmodified mlx-lm runs the saved checkpoint to the same tokens is
``bench/mlx_lm_machine.py``: billions of parameters is a benchmark's size, not a test's;
``tests/compiler/test_equivalence.py`` checks the three paths on a small circuit.)
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from qwengpu_mlx.compiler.assemble import CircuitPlan, Shape
from qwengpu_mlx.compiler.reuse import reuse_dims
from qwengpu_mlx.compiler.sizing import QWEN35_2B, DoesNotFit
from qwengpu_mlx.compiler.pipeline import compile_machine
from tests.support.launching import bound_program, on_runner
from qwengpu_mlx.core.readout import read_outputs
from qwengpu_mlx.core.machine import PUBLISHED_MACHINE, MACHINES, ONE_SLOT_MACHINE

from tests.support.cli import cli
from tests.support.plans import two_token_plan

from tests.support.oracles import ORACLES

KERNELS = Path(__file__).resolve().parents[2] / "examples" / "kernels"


def chain_plan() -> tuple[CircuitPlan, dict]:
    """x (token bit) -> a (MLP 0) -> b (MLP 1) -> c (MLP 3) -> output; b is a 2-writer OR."""
    shape = Shape(hidden=64, intermediate=64, linear_heads=2, key_dim=16, value_dim=16)
    plan, (x, a, b, c) = two_token_plan(shape, "xabc")
    plan.mlp(1).copy("b1", a, [(b, 1)])
    plan.mlp(1).not_("b2", a, [(b, 1)])  # b = a OR NOT a = 1: two writers, value in 0..2
    plan.mlp(0).copy("a", x, [(a, 1)])
    plan.mlp(3).and_("c", [b, x], [(c, 1)])
    plan.new_layer()
    plan.final_norm_dims = [c]
    return plan, {"x": x, "a": a, "b": b, "c": c}


def test_values_with_disjoint_lives_share_a_dim_through_clear_gates():
    plan, d = chain_plan()
    r = reuse_dims(plan, units=64)
    m = r.mapping
    # a is read last by MLP 1 and b is first seen after MLP 1: a's clear (MLP 1) comes
    # between, so b takes a's dim; c takes it from b the same way (b's clear at MLP 3)
    assert m[d["a"]] == m[d["b"]] == m[d["c"]]
    assert m[d["x"]] != m[d["a"]]  # a token bit keeps its dim: its level is not a gate's
    clears = {i: sorted(g.name for g in lp.mlp.gates if g.name.startswith("clear."))
              for i, lp in enumerate(r.plan.layers) if lp.mlp}
    p = m[d["a"]]
    assert clears[1] == [f"clear.{p}.+1"]  # a is 0 or 1: one step
    assert clears[3] == [f"clear.{p}.+1", f"clear.{p}.+2"]  # b counts two writers: 0..2
    assert r.physical < r.logical and r.plan.layout.used == r.physical
    assert plan.layers[1].mlp.gates[0].name == "b1"  # the logical plan is untouched


def test_a_claimed_range_shortens_the_clear_and_unread_values_take_no_dim():
    shape = Shape(hidden=64, intermediate=64, linear_heads=2, key_dim=16, value_dim=16)
    plan, (x, a, b, c, junk) = two_token_plan(shape, "xabcj")
    plan.layout.claim([b], 0, 1)  # two writers, but never both: NOT a and a
    plan.mlp(0).copy("a", x, [(a, 1)])
    plan.mlp(0).copy("junk", x, [(junk, 1)])  # written, read by nobody
    plan.mlp(1).copy("b1", a, [(b, 1)])
    plan.mlp(1).not_("b2", a, [(b, 1)])
    plan.mlp(3).and_("c", [b, x], [(c, 1)])
    plan.new_layer()
    plan.final_norm_dims = [c]
    r = reuse_dims(plan, units=64)
    p = r.mapping[a]
    assert r.mapping[b] == r.mapping[c] == p
    clears = {i: sorted(g.name for g in lp.mlp.gates if g.name.startswith("clear."))
              for i, lp in enumerate(r.plan.layers) if lp.mlp}
    assert clears[3] == [f"clear.{p}.+1"]  # b cleared in one step: its claim, not its two writers
    assert junk not in r.mapping
    kept = r.plan.layers[0].mlp.gates
    assert "junk" in [g.name for g in plan.layers[0].mlp.gates] and "junk" not in [g.name for g in kept]
    assert [g.unit for g in kept] == [2 * i for i in range(len(kept))]  # units renumbered after the drop


@pytest.fixture(scope="module", params=["published", "one-slot"])  # the machines that fold into 2,048 dims
def folded(request, store):
    machine = MACHINES[request.param]
    compiled = store.compiled(machine, QWEN35_2B)  # the session's fold: test_splice_widths folds the default too
    return machine, compiled, compiled.reuse


def test_both_machines_fit_every_width_of_the_2b_shape(folded):
    machine, mc, r = folded
    plan, s = r.plan, QWEN35_2B
    assert plan.shape == s and r.physical <= s.hidden
    assert len(plan.layers) <= 45
    dims = set()
    for i, lp in enumerate(plan.layers):
        if lp.mlp:
            assert lp.mlp.units <= s.intermediate
            dims |= {d for g in lp.mlp.gates for d, _ in g.terms + g.outputs}
        if lp.mixer and lp.mixer.heads:
            assert s.is_linear(i) and len(lp.mixer.heads) <= s.linear_heads
            assert all(h.rows <= s.key_dim and 2 * h.bits <= s.value_dim for h in lp.mixer.heads)
            dims |= {int(x) for x in lp.mixer.input_dims()} | {int(x) for x in lp.mixer.output_dims()}
    assert max(dims) < s.hidden


# divergence and a loop; a butterfly shuffle over the warp
@pytest.mark.parametrize("name", ["dot", "shfl_xor_allreduce"])
def test_the_machine_at_the_2b_shape_runs_the_same_launch(store, example_launch, folded, name):
    machine, mc, r = folded
    spec = json.loads((KERNELS / f"{name}.json").read_text())
    prog = bound_program(KERNELS / f"{name}.cu", spec["kernel"], args=spec["args"], block=spec["block"],
                grid=spec["grid"], machine=machine)
    if machine == PUBLISHED_MACHINE:  # the logical plan, compact path: this very launch, shared with test_model_backend
        embedded = example_launch(name)[2]
        assert embedded.check.exact
    else:
        embedded = on_runner(prog, store.runner(machine))  # the logical plan, compact path
    folded_runner = store.runner_over(mc.compact(), machine)  # the folded plan's weights, as the product runs them
    run = on_runner(prog, folded_runner, check=True)
    assert run.tokens == embedded.tokens
    outputs = read_outputs(prog, run.memory)
    assert outputs == ORACLES[name](spec)
    assert run.check.exact, run.check.problems
    assert 0.45 < run.min_margin <= 0.5


def _large_launches() -> dict:
    """name -> (source, spec) of launches that use what the large machine adds: every part of
    its memory (32 threads, 8 warps), a program past ROM block 100, and the dot product."""
    a = [0] * 992
    for t in range(32):
        a[31 * t + 7] = (t * 2654435761) % 2001 - 1000
    mem = {"kernel": "mem_stride", "block": 32, "grid": 1, "args": {"a": a, "out": [0] * 32}}
    dot = json.loads((KERNELS / "dot.json").read_text())
    long = json.loads((KERNELS / "long_program.json").read_text())
    long.update(block=1, args={"a": [-12345], "out": [0], "n": 1})  # one thread: fewer records
    return {"dot": (KERNELS / "dot.cu", dot), "long_program": (KERNELS / "long_program.cu", long),
            "mem_stride": (KERNELS.parents[1] / "tests" / "kernels_machine" / "mem_stride.cu", mem)}


def _oracle(name: str, spec: dict) -> dict:
    if name != "mem_stride":
        return ORACLES[name](spec)
    a = spec["args"]["a"]
    return {"a": list(a), "out": [a[31 * t + 7] - t for t in range(32)]}  # out[t] = a[31 t + 7] - t


@pytest.mark.benchmark  # the large machine's fold takes about a minute here (bench/circuit_size.py prints it)
@pytest.mark.parametrize("name", ["dot", "mem_stride", "long_program"])
def test_the_large_machine_folds_onto_the_2b_shape_with_room_for_a_host(store, name):
    machine = MACHINES["large"]
    mc = store.compiled(machine, QWEN35_2B)
    r, s = mc.reuse, QWEN35_2B
    assert r.physical <= s.hidden - 64  # the splice and the host bench put a host's signal in the rest
    assert all(len(lp.mixer.heads) <= s.linear_heads for lp in r.plan.layers if lp.mixer)
    assert all(lp.mlp.units <= s.intermediate for lp in r.plan.layers if lp.mlp)
    source, spec = _large_launches()[name]
    prog = bound_program(source, spec["kernel"], args=spec["args"], block=spec["block"], grid=spec["grid"],
                         machine=machine)
    embedded = on_runner(prog, store.runner(machine))  # the compact form, as a launch runs it
    run = on_runner(prog, store.runner_over(mc.compact(), machine), check=True)
    assert run.tokens == embedded.tokens and run.check.exact, run.check.problems
    assert read_outputs(prog, run.memory) == _oracle(name, spec)
    assert run.min_margin > 0.45


def test_a_shape_too_narrow_is_refused_by_how_much():
    narrow = replace(QWEN35_2B, hidden=1536)
    with pytest.raises(DoesNotFit, match=r"residual: \d+ dims after reuse \(\d+ values\), the shape has 1536"):
        compile_machine(ONE_SLOT_MACHINE, narrow)


def test_cli_runs_the_one_slot_machine_and_refuses_what_does_not_fit():
    r = cli("run", KERNELS / "dot.cu", "--machine", "one-slot", "--backend", "model", "--arg", "a=1,2,3",
            "--arg", "b=4,5,6", "--arg", "out=0", "--arg", "n=3", "--check", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["outputs"]["out"] == [32] and out["exact"] is True  # a . b, and every step replayed
    r = cli("run", KERNELS / "dot.cu", "--machine", "one-slot", "--block", "32", "--arg", "a=1,2,3",
            "--arg", "b=4,5,6", "--arg", "out=0", "--arg", "n=3")
    assert r.returncode == 1 and "blockDim.x = 32" in r.stderr and "4 warps of 4" in r.stderr  # does not fit: 1


def _head_then_two_values(heavy_weight: float):
    """h: a head's read of a stored bit (layer 1), last read by a head at layer 2; then
    ``heavy`` and ``light`` start (MLP 2), read at MLP 3 with weights ``heavy_weight`` and 1."""
    shape = Shape(hidden=64, intermediate=64, linear_heads=2, key_dim=16, value_dim=16)
    plan, (x, h, heavy, light, o, b) = two_token_plan(shape, "xhHlob")
    for layer, src, out in ((1, x, h), (2, h, o)):
        head = plan.mixer(layer).head(f"copy{layer}", 1, 1)
        head.key(0, plan.layout.ONE, weight=1.0 / plan.levels.K)
        head.value_bit(0, src)
        head.query(0, plan.layout.ONE, 1.0 / plan.levels.K)
        head.read_bit(0, out)
    plan.mlp(2).copy("heavy", x, [(heavy, 1)])
    plan.mlp(2).copy("light", x, [(light, 1)])
    plan.mlp(3).gate("reads heavy", [(heavy, heavy_weight)], heavy_weight, [(b, 1)])
    plan.mlp(3).copy("reads light", light, [(b, 1)])
    plan.new_layer()
    plan.final_norm_dims = [b, o]
    return plan, h, heavy, light


def test_a_heavily_weighted_value_keeps_off_a_dim_that_held_a_head_output():
    # a head's read leaves a residue after its clear (2e-4 of a bit, measured) that a
    # weight of 512 (the multiplier's nibbles) would blow up past the margin
    plan, h, heavy, light = _head_then_two_values(512.0)
    r = reuse_dims(plan, units=64)
    assert r.mapping[heavy] != r.mapping[h] and r.mapping[light] == r.mapping[h]
    plan, h, heavy, light = _head_then_two_values(1.0)  # weighed lightly, either may take it
    r = reuse_dims(plan, units=64)
    assert r.mapping[h] in (r.mapping[heavy], r.mapping[light])
