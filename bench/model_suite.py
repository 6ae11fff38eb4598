"""Run the conformance suite on the model backend: exactness, margins, speed.

    .venv/bin/python bench/model_suite.py [KERNEL ...]

Prints one line per kernel (outputs vs the NumPy oracle, --check replay, tokens,
tokens/s, smallest gate margin) and a summary with ratios measured in this run (this
machine is shared and noisy): model time / reference time, and the circuit's size
(parameters a dense checkpoint would hold versus the non-zeros it runs).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from oracles import ORACLES  # noqa: E402

from qwengpu_mlx.host import model_backend as mb  # noqa: E402
from qwengpu_mlx.host.launch import bind, compile_kernel, read_outputs  # noqa: E402
from qwengpu_mlx.host.reference import run_program  # noqa: E402
from qwengpu_mlx.machine import DEFAULT_MACHINE  # noqa: E402


def circuit_size(mc) -> tuple[int, int]:
    """(dense parameters at this shape, non-zero parameters)."""
    from qwengpu_mlx.compiler.compact import compact
    from qwengpu_mlx.compiler.sizing import dense_parameters, nonzero_parameters

    plan = mc.plan
    return dense_parameters(plan.shape, len(plan.layers), len(plan.vocab)), nonzero_parameters(compact(plan))


def main(names: list[str]) -> int:
    t0 = time.perf_counter()
    mc, runner = mb.circuit_for(DEFAULT_MACHINE)
    build_s = time.perf_counter() - t0
    runner.track_margins = True
    kernels = names or sorted(p.stem for p in (ROOT / "examples" / "kernels").glob("*.json"))
    exact = tokens = 0
    t_model = t_ref = 0.0
    worst = 1.0
    for name in kernels:
        spec = json.loads((ROOT / "examples" / "kernels" / f"{name}.json").read_text())
        prog = bind(compile_kernel(ROOT / "examples" / "kernels" / f"{name}.cu", spec["kernel"]), spec["args"],
                    block=spec["block"], grid=spec["grid"])
        runner.min_margin = float("inf")
        t = time.perf_counter()
        ref = run_program(prog, DEFAULT_MACHINE, trace=False)
        t_ref += time.perf_counter() - t
        t = time.perf_counter()
        try:  # a wrong launch could loop: bound it by a generous multiple of the steps it needs
            launch = mb.run_model(prog, DEFAULT_MACHINE, step_budget=2 * ref.steps + 8)
        except Exception as e:  # report and go on
            print(f"{name:24s} ERROR {type(e).__name__}: {e}", flush=True)
            continue
        t_model += time.perf_counter() - t
        ok = read_outputs(prog, launch.memory) == ORACLES[name](spec)
        problems = mb.check_against_reference(prog, launch, DEFAULT_MACHINE)
        exact += ok and not problems
        tokens += len(launch.tokens)
        worst = min(worst, runner.min_margin)
        print(f"{name:24s} {'exact' if ok and not problems else 'WRONG'} steps {launch.steps:4d} "
              f"tokens {len(launch.tokens):5d} {len(launch.tokens) / launch.seconds:6.1f} tok/s "
              f"margin {runner.min_margin:.4f}", flush=True)
    dense, nz = circuit_size(mc)
    print(f"\n{exact}/{len(kernels)} kernels exact through the model; {tokens} tokens; "
          f"smallest gate margin {worst:.4f} bits (0.5 ideal)")
    print(f"model/reference time ratio {t_model / max(t_ref, 1e-9):.0f}x; {tokens / max(t_model, 1e-9):.1f} tokens/s "
          f"on this CPU; circuit built in {build_s:.1f} s; {len(mc.plan.layers)} layers")
    print(f"circuit parameters at the narrow shape: dense {dense / 1e9:.1f} G, non-zero {nz / 1e6:.1f} M "
          f"(ratio {dense / nz:.0f})")
    return 0 if exact == len(kernels) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
