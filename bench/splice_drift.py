"""Drift of a combined checkpoint through unmodified mlx-lm and through our runner.

    .venv/bin/python -m bench.splice_drift [--tokens N]

A dense combined checkpoint at a real width is tens of gigabytes, so this splices a
small complete circuit (``tests/compiler/test_equivalence.py``'s pointer chase) into small random
Qwen3.5 bases (Qwen-like statistics), float32 and bfloat16, writes the checkpoint as
``build --base`` does, and measures on the shipped public-domain sample (its UTF-8 bytes
folded into the base's vocabulary): mean and largest KL(base || combined) per token,
the positions where the greedy token differs, and the launch tokens' largest mass. Our
runner keeps the base's own arithmetic; mlx-lm promotes a bfloat16 stream to float32 at
the first float32 circuit layer (the final norm and logits then run in float32).

For the bfloat16 base through mlx-lm it then explains each greedy difference against the
base's own precision (``splice.drift.bf16_ties``): one line per differing position with
the base's bfloat16 logits of its token and of the combined model's, how many bfloat16
rounding steps apart they lie (0: tied, where argmax takes the lower index) and one step
there, and the combined model's float32 gap between the two; then how many differing
positions lie within one step (tie or adjacent) and the largest step count; over all
positions, how many have the base's top two within one step (exact ties, adjacent) and
how many of each differ; and how far the base's logit of its token lies from the
combined model's float32 one rounded to bfloat16 (the base's bfloat16 norm and matmul
are not just a rounding of the float32 ones).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import mlx.core as mx

ROOT = Path(__file__).resolve().parents[1]

from tests.support.circuits import build_circuit  # noqa: E402

from qwengpu_mlx.runtime.checkpoint import random_config  # noqa: E402
from qwengpu_mlx.compiler.compact import compact  # noqa: E402
from qwengpu_mlx.runtime.circuit_runner import CircuitRunner  # noqa: E402
from qwengpu_mlx.splice.build import write_combined  # noqa: E402
from qwengpu_mlx.splice.drift import bf16_ties, measure, mlx_lm_logits, ours_logits  # noqa: E402
from qwengpu_mlx.splice.pipeline import calibration_text, sample_text  # noqa: E402
from qwengpu_mlx.splice.random_base import qwen_like_weights  # noqa: E402
from qwengpu_mlx.splice.combined_runner import base_model_from_config, load_combined  # noqa: E402

VOCAB = 300


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=2048)
    ns = ap.parse_args()
    from mlx_lm.utils import load_model

    plan, _ = build_circuit()
    tokens = [b % VOCAB for b in sample_text().encode("utf-8")][: ns.tokens]
    calibration = [b % VOCAB for b in calibration_text().encode("utf-8")][:512]
    for dtype in (mx.float32, mx.bfloat16):
        cfg = random_config(96, 4, vocab_size=VOCAB, intermediate=512, linear_key_heads=4, linear_value_heads=4,
                            linear_key_dim=16, linear_value_dim=32, heads=4, kv_heads=2, head_dim=16)
        base = base_model_from_config(cfg)
        base.load_weights(list(qwen_like_weights(cfg, seed=1, dtype=dtype).items()), strict=True)
        with tempfile.TemporaryDirectory() as d:
            out = Path(d)
            write_combined(out, base, {"model_type": "qwen3_5", "text_config": cfg}, plan, list(plan.vocab),
                           calibration)
            dense, _ = load_model(out)
            ours = load_combined(out, CircuitRunner(compact(plan)))
            base_logits = list(mlx_lm_logits(base, tokens))
            for name, logits in (("mlx-lm", mlx_lm_logits(dense, tokens)), ("our runner", ours_logits(ours, tokens))):
                logits = list(logits)
                r = measure(iter(base_logits), iter(logits), VOCAB)
                print(f"{str(dtype).split('.')[-1]:8s} {name:10s}  mean KL {r.kl_mean:.2e}  max KL {r.kl_max:.2e}  "
                      f"greedy differs at {r.argmax_differs} of {r.positions}  launch mass max {r.launch_mass_max:.1e}")
                if dtype == mx.bfloat16 and name == "mlx-lm":
                    report_ties(bf16_ties(iter(base_logits), iter(logits), VOCAB))
    return 0


def report_ties(t) -> None:
    """The bfloat16 analysis lines (see the module docstring)."""
    import numpy as np

    print("  where the greedy token differs (the base's bf16 logits; steps: bf16 rounding steps between them):")
    print("    position  base tok  comb tok  base logit  its logit of comb tok  steps  one step  comb f32 gap")
    for f in t.flips:
        print(f"    {f.position:8d}  {f.base_token:8d}  {f.combined_token:8d}  {f.base_top:10.6g}  {f.base_other:21.6g}"
              f"  {f.steps:5d}  {f.ulp:8.2e}  {f.combined_gap:+.2e} ({f.combined_gap / f.ulp:.2f} step)")
    n = len(t.flips)
    largest = max((f.steps for f in t.flips), default=0)
    largest_gap = max((f.combined_gap / f.ulp for f in t.flips), default=0.0)
    tied = sum(f.tied for f in t.flips)
    print(f"  differing positions within one bf16 step of each other in the base: {t.flips_within(1)} of {n} "
          f"({t.flips_within(1) / max(n, 1):.0%}; {tied} exactly tied, lower index wins in the base); "
          f"largest {largest} steps; combined float32 gap at most {largest_gap:.2f} step")
    ties, adjacent = t.near_ties(0), t.near_ties(1) - t.near_ties(0)
    print(f"  all {t.positions} positions: the base's top two within one bf16 step at {t.near_ties(1)} "
          f"({ties} exactly tied, {adjacent} adjacent); greedy differs at {t.flips_at_top2_steps(0)} of the ties, "
          f"{t.flips_at_top2_steps(1)} of the adjacent, {n - t.flips_at_top2_steps(0) - t.flips_at_top2_steps(1)} "
          f"elsewhere")
    hist = np.bincount(t.rounding_steps)
    print("  the base's logit of its token against the combined float32 one rounded to bf16: "
          + ", ".join(f"{k} steps at {int(c)}" for k, c in enumerate(hist) if c))


if __name__ == "__main__":
    sys.exit(main())
