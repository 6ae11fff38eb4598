"""Drift of a combined checkpoint through unmodified mlx-lm and through our runner.

    .venv/bin/python bench/splice_drift.py [--tokens N]

A dense combined checkpoint at a real width is tens of gigabytes, so this splices a
small complete circuit (``tests/test_equivalence.py``'s pointer chase) into small random
Qwen3.5 bases (Qwen-like statistics), float32 and bfloat16, writes the checkpoint as
``build --base`` does, and measures on the shipped public-domain sample (its UTF-8 bytes
folded into the base's vocabulary): mean and largest KL(base || combined) per token,
the positions where the greedy token differs, and the launch tokens' largest mass. Our
runner keeps the base's own arithmetic; mlx-lm promotes a bfloat16 stream to float32 at
the first float32 circuit layer (the final norm and logits then run in float32).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import mlx.core as mx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from test_equivalence import build_circuit  # noqa: E402

from qwengpu_mlx.checkpoint import random_config  # noqa: E402
from qwengpu_mlx.compiler.compact import compact  # noqa: E402
from qwengpu_mlx.runner import CircuitRunner  # noqa: E402
from qwengpu_mlx.splice.build import write_combined  # noqa: E402
from qwengpu_mlx.splice.drift import measure, mlx_lm_logits, ours_logits  # noqa: E402
from qwengpu_mlx.splice.pipeline import calibration_text, sample_text  # noqa: E402
from qwengpu_mlx.splice.random_base import qwen_like_weights  # noqa: E402
from qwengpu_mlx.splice.runner import base_model_from_config, load_combined  # noqa: E402

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
            for name, logits in (("mlx-lm", mlx_lm_logits(dense, tokens)), ("our runner", ours_logits(ours, tokens))):
                r = measure(mlx_lm_logits(base, tokens), logits, VOCAB)
                print(f"{str(dtype).split('.')[-1]:8s} {name:10s}  mean KL {r.kl_mean:.2e}  max KL {r.kl_max:.2e}  "
                      f"greedy differs at {r.argmax_differs} of {r.positions}  launch mass max {r.launch_mass_max:.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
