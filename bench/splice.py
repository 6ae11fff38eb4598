"""The combined model (base + circuit) through our runner, against the base alone.

    .venv/bin/python -m bench.splice [--layers N] [--vocab V] [--tokens N] [--width 2b|4b]

A random Qwen3.5 base at a real width (Qwen-like statistics, massive dims; depth and
vocabulary reduced, this CPU decodes the whole 2B at 0.6 tokens/s) and the published
machine's circuit (its figures in bench/README.md were measured on it), spliced as ``build --base`` does (``qwengpu_mlx/splice``). Measured in
one run, as ratios (the machine is shared and noisy):

* text decode: our runner's combined model (the base's own mlx-lm model, plus the launch
  tokens' logits ``b . h``) against the base alone, alternating, token by token;
* the launch tokens' probability mass on the shipped sample's token ids (folded into the
  reduced vocabulary) at every position;
* a launch (the dot product, unseen arguments) in the combined vocabulary: tokens/s and
  exactness under the complete check;
* memory: what the combined model holds beyond the base (the compact circuit and the
  shared row), and the dense combined checkpoint's size for the real Qwen3.5-2B and 4B
  configs (``splice.pipeline.combined_parameters``), which unmodified mlx-lm loads.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import mlx.core as mx
import numpy as np
from mlx.utils import tree_flatten

ROOT = Path(__file__).resolve().parents[1]

from tests.support.oracles import ORACLES  # noqa: E402

import qwengpu_mlx.host.frontend  # noqa: E402,F401
from qwengpu_mlx.compiler.sizing import QWEN35_2B  # noqa: E402
from qwengpu_mlx.core.machine import PUBLISHED_MACHINE  # noqa: E402
from qwengpu_mlx.runtime.circuit_runner import CircuitRunner  # noqa: E402
from qwengpu_mlx.runtime import CircuitStore  # noqa: E402
from tests.support.launching import bound_program, on_runner
from qwengpu_mlx.splice.layout import SpliceLayout  # noqa: E402
from qwengpu_mlx.splice.logits import (combined_text_logits, final_hidden, launch_mass_from_logits,  # noqa: E402
                                       suppression_row)
from qwengpu_mlx.splice.pipeline import combined_parameters  # noqa: E402
from qwengpu_mlx.splice.random_base import qwen4b_like_config, qwen_like_config, qwen_like_weights  # noqa: E402
from qwengpu_mlx.splice.combined_runner import CombinedModel, base_model_from_config, combine  # noqa: E402

REAL_2B = dict(qwen_like_config(layers=24, vocab=248320), intermediate_size=6144)
REAL_4B = qwen4b_like_config(layers=32, vocab=248320)


def _bytes(tree) -> int:
    """Bytes of every mx.array in a nested structure (other leaves count 0)."""
    return sum(v.nbytes for _, v in tree_flatten(tree) if isinstance(v, mx.array))


def decode_ratio(base, combined: CombinedModel, prompt: list[int], n: int) -> tuple[float, float]:
    """(tokens/s of the base alone, of the combined model), greedy, alternating per token."""
    from mlx_lm.models.cache import make_prompt_cache

    caches = [make_prompt_cache(base), make_prompt_cache(combined.base)]
    V = combined.layout.launch_tokens

    def base_step(t, cache):
        return base(mx.array([t]), cache=cache)[0, -1]

    def combined_step(t, cache):
        h = final_hidden(combined.base, t, cache)[-1:]
        return combined_text_logits(combined.base, h, combined.launch_row, V)[0]

    steps = [base_step, combined_step]
    toks = [prompt, prompt]
    spent = [0.0, 0.0]
    for i in range(n + 1):
        for k in (0, 1):
            t0 = time.perf_counter()
            logits = steps[k](toks[k] if i == 0 else toks[k][-1:], caches[k])
            nxt = int(mx.argmax(logits))
            if i:
                spent[k] += time.perf_counter() - t0
            toks[k] = toks[k] + [nxt]
    assert toks[0] == toks[1], "the combined model left the base's greedy tokens"
    return n / spent[0], n / spent[1]


def launch_logit_margins(runner, prompt: list[int], n: int) -> tuple[float, float]:
    """(smallest logit of the emitted token, smallest gap to the runner-up) over a greedy launch.

    The circuit runner's logits are the combined model's for launch tokens: its final norm
    (``K / sqrt(2048)`` over 2,048 dims) and the combined one (``K / sqrt(4 H)`` over
    ``4 H``, ``4 H = 4 * 2048`` at 2B) normalize to the same values."""
    runner.reset()
    logits = runner.step(prompt)
    top, gap = float("inf"), float("inf")
    for _ in range(n):
        srt = mx.sort(logits.reshape(-1))
        first, second = float(srt[-1]), float(srt[-2])
        top, gap = min(top, first), min(gap, first - second)
        logits = runner.step([int(mx.argmax(logits))])
    return top, gap


def best_text_logit_bound(combined: CombinedModel) -> float:
    """An upper bound on any text token's logit at a launch position.

    There the final state's base dims hold the launch rows' doubled part ``2 b`` (plus the
    base layers' additions, below 1e-9), normalized by the circuit's RMS ``K / sqrt(4 H)``
    and weighted by the quartered final norm; a text row is the doubled base row."""
    from qwengpu_mlx.compiler.levels import DEFAULT_LEVELS

    base = combined.base.language_model.model
    w = base.norm.weight.astype(mx.float32)
    h = mx.array(2 * combined.launch_row.astype(np.float32)) * w / 4 * (combined.layout.hidden ** 0.5 / DEFAULT_LEVELS.K)
    return float(mx.max(mx.abs(2 * base.embed_tokens.as_linear(h[None, :]))))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=32768)
    ap.add_argument("--tokens", type=int, default=16, help="greedy text tokens timed per model")
    ap.add_argument("--width", choices=["2b", "4b"], default="2b")
    ns = ap.parse_args()

    cfg = (qwen_like_config if ns.width == "2b" else lambda **k: qwen4b_like_config(**k))(layers=ns.layers,
                                                                                           vocab=ns.vocab)
    base = base_model_from_config(cfg)
    base.load_weights(list(qwen_like_weights(cfg, seed=5, dtype=mx.bfloat16).items()), strict=True)
    mx.eval(base.parameters())
    compiled = CircuitStore().compiled(PUBLISHED_MACHINE, QWEN35_2B)
    plan = compiled.plan
    from qwengpu_mlx.splice.pipeline import calibration_text, sample_text

    def ids(text: str) -> list[int]:  # the sample's bytes folded into the reduced vocabulary
        return [b % ns.vocab for b in text.encode("utf-8")]

    sup = suppression_row(base, ids(calibration_text())[:512], len(plan.vocab))
    circuit = CircuitRunner(compiled.compact(), PUBLISHED_MACHINE)
    combined = combine(base, SpliceLayout(cfg, plan.config(), len(plan.vocab)), circuit, sup.row)

    sample = ids(sample_text())[:512]
    logits = combined.text_logits(sample)
    mass = launch_mass_from_logits(logits[:, :ns.vocab], logits[:, ns.vocab:])
    print(f"launch tokens at text positions: max mass {mass.max:.2e}, mean {mass.mean:.2e} over {mass.positions} "
          f"positions (alpha {sup.alpha:.3g})")

    base_tps, comb_tps = decode_ratio(base, combined, sample[:32], ns.tokens)
    print(f"text decode, combined / base alone: {comb_tps / base_tps:.3f} ({ns.tokens} greedy tokens each, same tokens)")

    spec = {"a": [9, 4, 1, 7], "b": [2, 8, 6, 3], "out": [11], "n": 4}
    prog = bound_program(ROOT / "examples" / "kernels" / "dot.cu", "dot", args=spec, block=4, grid=1,
                machine=PUBLISHED_MACHINE)
    launch = on_runner(prog, circuit, check=True)
    want = ORACLES["dot"]({"kernel": "dot", "block": 4, "grid": 1, "args": spec})
    print(f"launch: {len(launch.tokens)} tokens, {launch.tokens_per_s:.1f} tokens/s, "
          f"{'exact' if launch.check.exact and launch.outputs == want else 'WRONG'}, margin {launch.min_margin:.4f}; "
          f"launch tokens/s over base text tokens/s: {launch.tokens_per_s / base_tps:.1f}")

    from qwengpu_mlx.runtime import native

    found = native.load()
    if found.module is not None:  # the same launch on the native step over the same circuit
        fast = combine(base, combined.layout, CircuitRunner(compiled.compact(), PUBLISHED_MACHINE, native=found.module),
                       sup.row)
        quick = on_runner(prog, fast.circuit, check=True)
        print(f"launch on the native step: {quick.tokens_per_s:.1f} tokens/s, "
              f"{'the same tokens' if quick.tokens == launch.tokens else 'OTHER TOKENS'}, "
              f"{'exact' if quick.check.exact and quick.outputs == want else 'WRONG'}, margin {quick.min_margin:.4f}; "
              f"native / MLX ops {quick.tokens_per_s / launch.tokens_per_s:.1f}x")
    else:
        print(f"no native step here: {found.reason}")

    top, gap = launch_logit_margins(circuit, launch.prompt, len(launch.tokens))
    text_bound = best_text_logit_bound(combined)
    print(f"launch logits: the emitted token's logit >= {top:.1f}, >= {gap:.1f} above the next launch token; "
          f"every text token's logit at launch positions <= {text_bound:.2e} (so the margin over the best text "
          f"token is >= {top - text_bound:.1f})")

    extra = circuit.nbytes()
    print(f"memory beyond the base: the compact circuit {extra / 1e6:.0f} MB; base {_bytes(base.parameters()) / 1e9:.2f} GB")
    for name, real in (("Qwen3.5-2B", REAL_2B), ("Qwen3.5-4B", REAL_4B)):
        lazy = base_model_from_config(real)  # parameters are never evaluated: shapes only
        n = combined_parameters(SpliceLayout(real, plan.config(), len(plan.vocab)), lazy)
        print(f"dense combined checkpoint for {name}: {n:,} parameters")
    return 0


if __name__ == "__main__":
    sys.exit(main())
