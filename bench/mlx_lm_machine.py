"""A whole SIMT machine as a Qwen3.5-2B-shaped checkpoint, run by unmodified mlx-lm.

    .venv/bin/python -m bench.mlx_lm_machine [--machine default|one-slot] [--out DIR] [--kernel NAME]

Builds the machine's circuit (``qwengpu-mlx build [--machine M] --shape qwen3.5-2b``:
hidden 2048, intermediate 6144, 16 linear heads of 128 x 128; 45 layers for the default
machine, 25 for the one-slot one), saves it as a standard sharded checkpoint, loads it
with unmodified ``mlx_lm.load`` and decodes the dot product's launch prompt (or
``--kernel NAME``'s, from examples/kernels) greedily with mlx-lm's own
``generate_step``. The tokens are compared one for one with (a) our compact runner over
the same weights and (b) the embedded circuit (``qwengpu-mlx run --machine M``); the
result is read from mlx-lm's own cache (the memory head's recurrent state) and checked
against the NumPy oracle and the reference replay. Prints the tokens/s of each path as
ratios measured in this run (the machine is shared and noisy). The default machine needs
about 13 GB of memory and 11 GB of disk (the one-slot one 7 and 6); a benchmark, not a
test.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import mlx.core as mx

ROOT = Path(__file__).resolve().parents[1]

from tests.support.oracles import ORACLES  # noqa: E402

import qwengpu_mlx.host.frontend  # noqa: E402,F401  (import order: the launch module needs it first)
from qwengpu_mlx.runtime.checkpoint import save_checkpoint  # noqa: E402
from qwengpu_mlx.compiler.pipeline import compile_machine  # noqa: E402
from qwengpu_mlx.compiler.sizing import QWEN35_2B, dense_parameters  # noqa: E402
from qwengpu_mlx.core.readout import read_outputs
from qwengpu_mlx.core.reference import run_program  # noqa: E402
from qwengpu_mlx.core.machine import MACHINES  # noqa: E402
from qwengpu_mlx.runtime.circuit_runner import CircuitRunner  # noqa: E402
from qwengpu_mlx.core.readout import read_memory  # noqa: E402
from qwengpu_mlx.runtime import CircuitStore, check_launch, prompt_tokens  # noqa: E402
from tests.support.launching import bound_program, on_runner
from qwengpu_mlx.core.vocab import vocab_for  # noqa: E402


class CacheState:
    """mlx-lm's prompt cache seen through ``read_memory``'s interface."""

    def __init__(self, cache, memory_heads):
        self.cache, self.memory_heads = cache, memory_heads

    def recurrent_state(self, layer: int, head: int):
        import numpy as np

        return np.array(self.cache[layer][1][0, head])  # ssm state [B, Hv, Dv, Dk] -> [Dv, Dk]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", help="checkpoint directory (default: a temporary one, removed after)")
    ap.add_argument("--kernel", default="dot", help="a conformance kernel (default dot)")
    ap.add_argument("--machine", choices=sorted(MACHINES), default="default")
    ns = ap.parse_args()
    out = Path(ns.out) if ns.out else Path(tempfile.mkdtemp(prefix="qwengpu-2b-"))
    m = MACHINES[ns.machine]
    spec = json.loads((ROOT / f"examples/kernels/{ns.kernel}.json").read_text())
    prog = bound_program(ROOT / f"examples/kernels/{ns.kernel}.cu", spec["kernel"], args=spec["args"],
                block=spec["block"], grid=spec["grid"], machine=m)
    expected = ORACLES[ns.kernel](spec)  # NumPy, from the kernel's meaning
    stop = vocab_for(m).id("STOP")
    try:
        t = time.perf_counter()
        compiled = compile_machine(m, QWEN35_2B)
        reuse, plan = compiled.reuse, compiled.plan
        params = dense_parameters(plan.shape, len(plan.layers), len(plan.vocab))
        save_checkpoint(out, plan.config(), plan.weight_shards(), plan.vocab, eos_token=plan.vocab[stop],
                        shards=1 + len(plan.layers))
        build_s = time.perf_counter() - t
        print(f"{ns.machine} machine at the Qwen3.5-2B shape: {len(plan.layers)} layers, {params:,} parameters, "
              f"{reuse.logical} values on {reuse.physical} of {plan.shape.hidden} residual dims "
              f"({reuse.clear_gates} clear gates); built and saved in {build_s:.0f} s", flush=True)
        prompt = prompt_tokens(prog, m)

        # (b) the embedded circuit (logical plan, compact path)
        t = time.perf_counter()
        launch = on_runner(prog, CircuitStore().runner(m))
        emb_s = time.perf_counter() - t
        # (a) our compact runner over the checkpoint's own plan
        runner = CircuitRunner(compiled.compact(), m)
        t = time.perf_counter()
        same_plan = on_runner(prog, runner)
        ours_s = time.perf_counter() - t
        del runner

        # (c) unmodified mlx_lm.load + mlx-lm's generation loop
        import mlx_lm
        from mlx_lm.generate import generate_step
        from mlx_lm.models.cache import make_prompt_cache
        from mlx_lm.sample_utils import make_sampler

        lm, _tok = mlx_lm.load(str(out))
        cache = make_prompt_cache(lm)
        toks = []
        t = time.perf_counter()
        for tok, _ in generate_step(mx.array(prompt), lm, max_tokens=4 * len(launch.tokens),
                                    sampler=make_sampler(temp=0.0), prompt_cache=cache):
            toks.append(int(tok))
            if toks[-1] == stop:
                break
        lm_s = time.perf_counter() - t
        memory, _ = read_memory(CacheState(cache, compiled.memory_heads), m)
        outputs = read_outputs(prog, memory)
    finally:
        if not ns.out:
            shutil.rmtree(out, ignore_errors=True)
    ref = run_program(prog, m, trace=False)
    report = check_launch(prog, toks, m, memory=memory)  # mlx-lm's launch, checked like any other
    ok = toks == same_plan.tokens == launch.tokens and outputs == expected \
        and read_outputs(prog, ref.memory) == expected and report.exact
    n = len(toks)
    print(f"{ns.kernel}: mlx_lm.load + generate_step: {n} tokens, outputs equal to the oracle: "
          f"{outputs == expected}; "
          f"identical to our runner over the same weights: {toks == same_plan.tokens}, "
          f"to the embedded circuit: {toks == launch.tokens}; the complete check of mlx-lm's launch: "
          f"{'exact' if report.exact else report.problems[0]}")
    print(f"tokens/s: mlx-lm dense {n / lm_s:.2f}, our compact runner on the same weights {n / ours_s:.2f} "
          f"({lm_s / ours_s:.1f}x faster), embedded circuit {n / emb_s:.2f}")
    print("EXACT" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
