"""The real machine's circuit beside random bases at Qwen3.5-2B's and 4B's real widths.

The dense combined checkpoint at these widths holds billions of parameters (a
benchmark's size), so this runs our runner: the base's mlx-lm model (4 layers, Qwen-like
statistics, massive dims) and the machine's folded circuit. What it checks that the
small splice test cannot: the real circuit fits both geometries and not Qwen3.5-0.8B's;
the shared launch row keeps the launch tokens' mass under 1e-6 at the real width with
massive activations in the hidden state and stays far below the circuit's RMS; and
launches run through the runtime in the combined vocabulary, outputs equal to the NumPy
oracle, the complete check exact.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import mlx.core as mx

from qwengpu_mlx.compiler.sizing import QWEN35_2B
from qwengpu_mlx.core.machine import PUBLISHED_MACHINE
from tests.support.launching import bound_program, on_runner
from qwengpu_mlx.splice.layout import SpliceLayout, splice_misfits
from qwengpu_mlx.splice.logits import launch_mass_from_logits, suppression_row
from qwengpu_mlx.splice.random_base import qwen4b_like_config, qwen_like_config, qwen_like_weights
from qwengpu_mlx.splice.combined_runner import CombinedModel, base_model_from_config, launch_rms_share

from tests.support.oracles import ORACLES

KERNELS = Path(__file__).resolve().parents[2] / "examples" / "kernels"
QWEN35_08B = {"hidden_size": 1024, "intermediate_size": 3584, "num_hidden_layers": 24, "linear_num_key_heads": 16,
              "linear_num_value_heads": 16, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
              "linear_conv_kernel_dim": 4, "full_attention_interval": 4, "tie_word_embeddings": True}


@pytest.fixture(scope="module")
def folded(store):
    return store.compiled(PUBLISHED_MACHINE, QWEN35_2B)


def _combined(cfg: dict, dtype, folded) -> CombinedModel:
    """The base and the launch row at ``cfg``'s width; text needs no circuit runner (None)."""
    model = base_model_from_config(cfg)
    model.load_weights(list(qwen_like_weights(cfg, seed=7, dtype=dtype).items()), strict=True)
    mx.eval(model.parameters())
    plan = folded.plan
    calibration = np.random.default_rng(3).integers(0, cfg["vocab_size"], 96).tolist()
    sup = suppression_row(model, calibration, len(plan.vocab))
    lay = SpliceLayout(cfg, plan.config(), len(plan.vocab))
    return CombinedModel(model, lay, sup.row, None)


def test_the_machine_fits_2b_and_4b_and_not_08b(folded):
    circuit = folded.plan.config()
    assert splice_misfits(qwen_like_config(layers=24), circuit) == []
    assert splice_misfits(qwen4b_like_config(layers=32), circuit) == []
    problems = splice_misfits(QWEN35_08B, circuit)
    assert len(problems) == 1 and problems[0].startswith("MLP width") and "6,144" in problems[0], problems


# the 4B width in bfloat16 runs without BLAS on a CPU (a minute here): a benchmark; the 2B width
# checks the same suppression in the suite, and the 4B geometry's fit is checked above
@pytest.mark.parametrize("width", ["2b", pytest.param("4b", marks=pytest.mark.benchmark)])
def test_text_keeps_the_launch_tokens_out_at_real_width(width, folded):
    cfg, dtype = (qwen_like_config(), mx.float32) if width == "2b" else (qwen4b_like_config(), mx.bfloat16)
    combined = _combined(cfg, dtype, folded)
    assert launch_rms_share(combined.launch_row) < 2.0 ** -30
    held_out = np.random.default_rng(11).integers(0, cfg["vocab_size"], 64).tolist()
    logits = combined.text_logits(held_out)
    V = cfg["vocab_size"]
    mass = launch_mass_from_logits(logits[:, :V], logits[:, V:])
    assert mass.max < 1e-6, mass
    # the massive dims are there: the base's hidden state carries values of 1e3 and more
    h = combined.base.language_model.model.embed_tokens(mx.array([held_out[:16]]))
    for layer in combined.base.language_model.model.layers[:2]:
        h = layer(h, None, None)
    assert float(mx.max(mx.abs(h))) > 1e3


def test_a_launch_runs_in_the_combined_vocabulary(folded, store):
    """The combined model's launch runs on the circuit runner (the same at both widths)."""
    plan = folded.plan
    lay = SpliceLayout(qwen_like_config(), plan.config(), len(plan.vocab))
    runner = store.runner_over(folded.compact(), PUBLISHED_MACHINE)
    combined = CombinedModel(None, lay, np.zeros(2048, np.float32), runner)
    V = lay.base_rows
    spec = {"kernel": "dot", "block": 4, "grid": 1, "args": {"a": [7, 1, 9, 2], "b": [3, 8, 5, 6], "out": [5], "n": 4}}
    prog = bound_program(KERNELS / "dot.cu", "dot", args=spec["args"], block=4, grid=1, machine=PUBLISHED_MACHINE)
    launch = on_runner(prog, combined.circuit, check=True)
    assert launch.check.exact, launch.check.problems
    assert launch.outputs == ORACLES["dot"](spec)
    ids = combined.launch_ids(launch.tokens)
    assert all(combined.layout.circuit_id(t) == c for t, c in zip(ids, launch.tokens))
    assert min(ids) >= V
