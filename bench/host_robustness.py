"""How much host-model activation the circuit tolerates (issue: robust inside a host).

    .venv/bin/python bench/host_robustness.py

Adds a fixed "host" vector to every token's residual (massive activations in a few dims
the circuit does not use, as Qwen3.5's hidden states carry), which lowers the signal
ratio r = designed RMS / actual RMS that every circuit value is scaled by, and runs the
dot product on the model at several magnitudes. Prints r and whether the launch stayed
exact; the smallest r that holds is the figure.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import mlx.core as mx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from qwengpu_mlx.host import model_backend as mb  # noqa: E402
from qwengpu_mlx.host.launch import bind, compile_kernel, read_outputs  # noqa: E402
from qwengpu_mlx.machine import DEFAULT_MACHINE  # noqa: E402


def main() -> int:
    mc, runner = mb.circuit_for(DEFAULT_MACHINE)
    H, K = runner.hidden, runner.K
    free = np.arange(mc.lay.used, H)  # dims no circuit part reads or writes
    spec = json.loads((ROOT / "examples/kernels/dot.json").read_text())
    prog = bind(compile_kernel(ROOT / "examples/kernels/dot.cu"), spec["args"], block=spec["block"])
    embed = runner.embed
    rng = np.random.default_rng(0)
    massive = free[:4]
    bulk = free[4:2052]
    for M in (0.0, 30.0, 100.0, 300.0, 1000.0, 3000.0, 10000.0):
        host = np.zeros(H, np.float32)
        host[massive] = M
        host[bulk] = rng.standard_normal(len(bulk)).astype(np.float32)  # ordinary activations ~1
        hv = mx.array(host)
        runner.embed = lambda toks, hv=hv: embed(toks) + hv
        r = float(K / np.sqrt(K * K + float(np.sum(host.astype(np.float64) ** 2))))
        try:
            launch = mb.run_model(prog, DEFAULT_MACHINE, step_budget=40)
            ok = read_outputs(prog, launch.memory)["out"] == [32] and not mb.check_against_reference(
                prog, launch, DEFAULT_MACHINE)
            what = "exact" if ok else "WRONG"
        except Exception as e:  # a broken launch is a result too
            what = f"failed ({type(e).__name__})"
        print(f"massive dims {M:8.0f}: signal ratio r = {r:.7f}  {what}", flush=True)
    runner.embed = embed
    return 0


if __name__ == "__main__":
    sys.exit(main())
