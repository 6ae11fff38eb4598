"""How much host-model activation the circuit tolerates (issue: robust inside a host).

    .venv/bin/python -m bench.host_robustness

A random Qwen3.5-architecture host (``tests.support.host_front``: Gated DeltaNet and
full-attention layers, hidden 256, three massive-activation dims at 1e3, 3e3 and 1e4)
runs in front of the circuit: its hidden state shares the residual stream, so every
circuit RMSNorm sees it. The dot product runs with the host's hidden state scaled up
step by step; each line gives the smallest signal ratio r = |circuit| / |circuit + host|
over the launch's tokens and whether the launch stayed exact (outputs and the --check
replay). The smallest r that holds is the figure.

    .venv/bin/python -m bench.host_robustness --2b [--subset [SCALE]]

does the same with the circuit folded for the Qwen3.5-2B shape (the dense checkpoint's
weights: values sharing dims through clear gates) and a 64-dim host in the dims it
leaves free.

    .venv/bin/python -m bench.host_robustness --subset [SCALE]

runs a representative subset of the conformance suite (divergence, loops, a shared-
memory reduction with barriers, atomics, every shuffle mode) with the host in front at
one scale (default 2500, r of about 0.54), against the NumPy oracles and the replay.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

from tests.support.host_front import HostFront, random_host  # noqa: E402
from qwengpu_mlx.core.machine import PUBLISHED_MACHINE  # noqa: E402
from tests.support.runner_wide import WideCircuitRunner as CircuitRunner  # noqa: E402
from qwengpu_mlx.runtime import CircuitStore  # noqa: E402
from tests.support.launching import TokenEvents, bound_program, on_runner

MASSIVE = {7: 1e3, 100: 3e3, 200: 1e4}


class TooLong(Exception):
    """The launch ran past twice its clean length: it went wrong."""


SUBSET = ["nested_branches", "early_return", "lane_while", "reduce_shared_tree", "atomic_contention",
          "shfl_xor_allreduce", "shfl_down_reduce", "shfl_up_scan", "shfl_broadcast", "grid_index"]


def launch_with_host(runner: CircuitRunner, front: HostFront, prog, max_tokens: int = 100, expected=None,
                     step_budget: int = 40) -> tuple[bool | str, float]:
    """(exact?, smallest r) of a launch on this bench's ``runner`` with ``front`` in front of it."""
    runner.front = front
    count = iter(range(1, 1 << 30))

    def on_token(tok, t):
        if next(count) > max_tokens:
            raise TooLong()

    try:
        launch = on_runner(prog, runner, step_budget=step_budget, events=TokenEvents(on_token), check=True)
        outputs = launch.outputs
        ok = (outputs == expected if expected is not None else outputs["out"] == [32]) and launch.check.exact
        result = True if ok else "wrong"
    except Exception as e:  # a broken launch is a result too
        result = type(e).__name__
    finally:
        runner.front = None
    return result, front.min_ratio


def massive_for(hidden: int) -> dict[int, float]:
    """MASSIVE's three activations, on dims inside a host of this width."""
    return {d * hidden // 256: v for d, v in MASSIVE.items()}


def subset(runner: CircuitRunner, free: np.ndarray, scale: float, host_dims: int = 256) -> int:
    """The representative subset with the host in front at one scale."""
    from tests.support.oracles import ORACLES
    from qwengpu_mlx.core.reference import run_program

    host = random_host(host_dims, massive=massive_for(host_dims))
    exact, smallest = 0, 1.0
    for name in SUBSET:
        spec = json.loads((ROOT / f"examples/kernels/{name}.json").read_text())
        prog = bound_program(ROOT / f"examples/kernels/{name}.cu", spec["kernel"], args=spec["args"],
                    block=spec["block"], grid=spec["grid"])
        budget = 2 * run_program(prog, PUBLISHED_MACHINE, trace=False).steps + 8  # bounds a wrong launch's time
        ok, r = launch_with_host(runner, HostFront(host, free, scale), prog, max_tokens=60 * budget,
                                 expected=ORACLES[name](spec), step_budget=budget)
        exact += ok is True
        smallest = min(smallest, r)
        print(f"{name:24s} r = {r:.4f}  {'exact' if ok is True else 'FAILED (' + str(ok) + ')'}", flush=True)
    print(f"{exact}/{len(SUBSET)} exact with the host in front; smallest signal ratio {smallest:.4f}")
    return 0 if exact == len(SUBSET) else 1


def folded_2b(store: CircuitStore) -> tuple[CircuitRunner, np.ndarray]:
    """A runner of the circuit folded for the Qwen3.5-2B shape (the checkpoint's own weights); its free dims."""
    from qwengpu_mlx.compiler.sizing import QWEN35_2B

    compiled = store.compiled(PUBLISHED_MACHINE, QWEN35_2B)
    r = compiled.reuse
    print(f"folded for the Qwen3.5-2B shape: {r.physical} of {QWEN35_2B.hidden} dims used; the host gets "
          f"the other {QWEN35_2B.hidden - r.physical}", flush=True)
    return CircuitRunner(compiled.compact(), PUBLISHED_MACHINE), np.arange(r.physical, QWEN35_2B.hidden)


def main() -> int:
    args = sys.argv[1:]
    host_dims = 256
    store = CircuitStore()
    if "--2b" in args:  # the folded plan leaves few free dims: a narrower host
        args.remove("--2b")
        runner, free = folded_2b(store)
        host_dims = min(64, len(free))  # 49 free dims since the VALU and short-record gates
    else:
        mc = store.machine_circuit(PUBLISHED_MACHINE)
        runner = CircuitRunner(store.compact(PUBLISHED_MACHINE), PUBLISHED_MACHINE)
        free = np.arange(mc.lay.used, mc.plan.shape.hidden)
    if args[:1] == ["--subset"]:
        return subset(runner, free, float(args[1]) if len(args) > 1 else 2500.0, host_dims)
    spec = json.loads((ROOT / "examples/kernels/dot.json").read_text())
    prog = bound_program(ROOT / "examples/kernels/dot.cu", args=spec["args"], block=spec["block"])
    host = random_host(host_dims, massive=massive_for(host_dims))
    smallest = None
    for scale in (1, 100, 300, 1000, 2000, 3000, 3500, 4000, 4500):
        ok, r = launch_with_host(runner, HostFront(host, free, scale), prog)
        print(f"host x {scale:5d}: smallest signal ratio r = {r:.4f}  "
              f"{'exact' if ok is True else 'FAILED (' + str(ok) + ')'}", flush=True)
        if ok is True:
            smallest = r if smallest is None else min(smallest, r)
    print(f"smallest signal ratio with an exact launch: {smallest:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
