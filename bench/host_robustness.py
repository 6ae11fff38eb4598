"""How much host-model activation the circuit tolerates (issue: robust inside a host).

    .venv/bin/python bench/host_robustness.py

A random Qwen3.5-architecture host (``qwengpu_mlx.host_front``: Gated DeltaNet and
full-attention layers, hidden 256, three massive-activation dims at 1e3, 3e3 and 1e4)
runs in front of the circuit: its hidden state shares the residual stream, so every
circuit RMSNorm sees it. The dot product runs with the host's hidden state scaled up
step by step; each line gives the smallest signal ratio r = |circuit| / |circuit + host|
over the launch's tokens and whether the launch stayed exact (outputs and the --check
replay). The smallest r that holds is the figure.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

from qwengpu_mlx.host import model_backend as mb  # noqa: E402
from qwengpu_mlx.host.launch import bind, compile_kernel, read_outputs  # noqa: E402
from qwengpu_mlx.host_front import HostFront, random_host  # noqa: E402
from qwengpu_mlx.machine import DEFAULT_MACHINE  # noqa: E402

MASSIVE = {7: 1e3, 100: 3e3, 200: 1e4}


class TooLong(Exception):
    """The launch ran past twice its clean length: it went wrong."""


def launch_with_host(front: HostFront, prog, max_tokens: int = 100) -> tuple[bool | str, float]:
    """(exact?, smallest r) of the dot launch with ``front`` in front of the circuit."""
    runner = mb.runner_for(DEFAULT_MACHINE)
    runner.front = front
    count = iter(range(1, 1 << 30))

    def on_token(tok, t):
        if next(count) > max_tokens:
            raise TooLong()

    try:
        launch = mb.run_model(prog, DEFAULT_MACHINE, step_budget=40, on_token=on_token)
        ok = read_outputs(prog, launch.memory)["out"] == [32] and not mb.check_against_reference(
            prog, launch, DEFAULT_MACHINE)
        result = True if ok else "wrong"
    except Exception as e:  # a broken launch is a result too
        result = type(e).__name__
    finally:
        runner.front = None
    return result, front.min_ratio


def main() -> int:
    mc = mb.machine_circuit_for(DEFAULT_MACHINE)
    free = np.arange(mc.lay.used, mc.plan.shape.hidden)
    spec = json.loads((ROOT / "examples/kernels/dot.json").read_text())
    prog = bind(compile_kernel(ROOT / "examples/kernels/dot.cu"), spec["args"], block=spec["block"])
    host = random_host(massive=MASSIVE)
    smallest = None
    for scale in (1, 100, 300, 1000, 2000, 3000, 3500, 4000, 4500):
        ok, r = launch_with_host(HostFront(host, free, scale), prog)
        print(f"host x {scale:5d}: smallest signal ratio r = {r:.4f}  "
              f"{'exact' if ok is True else 'FAILED (' + str(ok) + ')'}", flush=True)
        if ok is True:
            smallest = r if smallest is None else min(smallest, r)
    print(f"smallest signal ratio with an exact launch: {smallest:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
