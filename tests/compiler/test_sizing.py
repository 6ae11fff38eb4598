"""Circuit sizing: dense parameter counts, live residual dims, fit to a shape, and `build`."""

from __future__ import annotations



from qwengpu_mlx.compiler.assemble import CircuitPlan, Shape
from qwengpu_mlx.compiler.sizing import QWEN35_2B, dense_parameters, live_dims, misfits, needs

from tests.support.cli import cli
from tests.support.plans import two_token_plan

SHAPE = Shape(hidden=64, intermediate=64, linear_heads=2, key_dim=16, value_dim=16, attn_heads=2, kv_heads=1,
              head_dim=16)


def chain_plan() -> CircuitPlan:
    """Embedding writes a; layer 0 copies a to b; layer 1 copies b to c; the output reads c."""
    plan, (a, b, c) = two_token_plan(SHAPE, "abc")
    plan.mlp(0).copy("b", a, [(b, 1)])
    plan.mlp(1).copy("c", b, [(c, 1)])
    plan.new_layer()
    plan.new_layer()
    plan.final_norm_dims = [c]
    return plan


def test_dense_parameters_counts_every_weight():
    plan = chain_plan()
    weights = plan.weights()
    assert dense_parameters(SHAPE, len(plan.layers), len(plan.vocab)) == sum(v.size for v in weights.values())


def test_live_dims_by_hand():
    # layer 0: ONE, ONE2 (written here, read by layer 1's gate over MLP-written b), a, b
    # layer 1: ONE, ONE2, b, c; layers 2 and 3: c (read by the output); ONE1 is never read
    assert live_dims(chain_plan()) == [4, 4, 1, 1]
    # without the embedding's ONE and a: layer 0 ONE2, b; layer 1 ONE2, b, c; then c
    assert live_dims(chain_plan(), computed_only=True) == [2, 3, 1, 1]


def test_fit_to_a_shape():
    n = needs(chain_plan())
    assert n.live_max == 4 and n.units_max == 4 and n.layers == 4  # layer 0: the copy and ONE2, 2 units each
    assert misfits(n, QWEN35_2B) == []
    small = Shape(hidden=5, intermediate=2, linear_heads=1, key_dim=16, value_dim=1)
    text = "\n".join(misfits(n, small))
    assert n.embedding_dims == 2 and n.reuse_bound == 5  # ONE and a, plus 3 computed dims at layer 1
    assert "residual: 6 dims allocated" in text and "the shape has 5" in text
    assert "would still need 5 (2 embedding dims" in text
    assert "layer 0 needs 4 units, the shape has 2" in text
    assert "heads" not in text  # layer 0's one head (ONE1) fits
    assert "a head needs 2 value channels, the shape's value dim is 1" in text


def test_build_refuses_what_does_not_fit(tmp_path):
    # (a shape too narrow for the folded circuit: tests/compiler/test_dense.py)
    out = tmp_path / "ck"
    r = cli("build", "--out", out, "--shape", "narrow")  # the default (qwen3.5-2b) fits
    assert r.returncode == 2 and "over --max-params 4,000,000,000" in r.stderr and "parameters" in r.stderr
    assert not out.exists()  # nothing half-written
