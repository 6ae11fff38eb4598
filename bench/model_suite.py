"""Run the conformance suite on the model backend: exactness, margins, speed.

    .venv/bin/python -m bench.model_suite [KERNEL ...]
    .venv/bin/python -m bench.model_suite --machine one-slot --shape qwen3.5-2b [--subset | KERNEL ...]

``--shape qwen3.5-2b`` runs the circuit folded for a dense Qwen3.5-2B-shaped checkpoint
(``compiler.pipeline.compile_machine``: the very weights ``qwengpu-mlx build`` saves) through the compact
path; ``--subset`` runs the representative subset (divergence, loops, a shared-memory
reduction with barriers, atomics, every shuffle mode, a grid) instead of all kernels.

Prints one line per kernel (outputs vs the NumPy oracle, --check replay, tokens,
tokens/s, smallest gate margin) and a summary with ratios measured in this run (this
machine is shared and noisy): model time / reference time, and the circuit's size
(parameters a dense checkpoint would hold versus the non-zeros it runs).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from tests.support.oracles import ORACLES  # noqa: E402

from qwengpu_mlx.core.reference import run_program  # noqa: E402
from qwengpu_mlx.core.machine import MACHINES  # noqa: E402
from qwengpu_mlx.runtime.circuit_runner import CircuitRunner  # noqa: E402
from qwengpu_mlx.runtime import CircuitStore  # noqa: E402
from tests.support.launching import bound_program, on_runner


def circuit_size(plan) -> tuple[int, int]:
    """(dense parameters at this shape, non-zero parameters)."""
    from qwengpu_mlx.compiler.compact import compact
    from qwengpu_mlx.compiler.sizing import dense_parameters, nonzero_parameters

    return dense_parameters(plan.shape, len(plan.layers), len(plan.vocab)), nonzero_parameters(compact(plan))


def expected_error(name: str, error: str, prog, runner) -> bool:
    """The model's launch stops with the launch file's ``error`` (e.g. DivisionByZero); prints the line."""
    try:
        on_runner(prog, runner, check=True)
    except Exception as e:  # the expected outcome
        ok = type(e).__name__ == error
        print(f"{name:24s} {'exact' if ok else 'WRONG'}: stopped with {type(e).__name__}: {e}", flush=True)
        return ok
    print(f"{name:24s} WRONG: ran to its end, expected {error}", flush=True)
    return False


SUBSET = ["nested_branches", "early_return", "lane_while", "reduce_shared_tree", "atomic_contention",
          "shfl_xor_allreduce", "shfl_down_reduce", "shfl_up_scan", "shfl_broadcast", "grid_index"]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("kernels", nargs="*")
    ap.add_argument("--machine", choices=sorted(MACHINES), default="default")
    ap.add_argument("--shape", choices=["narrow", "qwen3.5-2b"], default="narrow")
    ap.add_argument("--subset", action="store_true")
    ns = ap.parse_args(argv)
    machine = MACHINES[ns.machine]
    t0 = time.perf_counter()
    store = CircuitStore()
    if ns.shape == "qwen3.5-2b":  # the folded plan, run by its own runner
        from qwengpu_mlx.compiler.sizing import QWEN35_2B

        compiled = store.compiled(machine, QWEN35_2B)
        runner = CircuitRunner(compiled.compact(), machine)
    else:
        compiled, runner = store.compiled(machine), store.runner(machine)
    build_s = time.perf_counter() - t0
    kernels = ns.kernels or (SUBSET if ns.subset else
                             sorted(p.stem for p in (ROOT / "examples" / "kernels").glob("*.json")))
    exact = tokens = skipped = 0
    t_model = t_ref = 0.0
    worst = 1.0
    for name in kernels:
        spec = json.loads((ROOT / "examples" / "kernels" / f"{name}.json").read_text())
        if MACHINES[spec.get("machine", "default")] not in (MACHINES["default"], machine):
            print(f"{name:24s} skipped: its launch file asks for the {spec['machine']} machine", flush=True)
            skipped += 1
            continue
        prog = bound_program(ROOT / "examples" / "kernels" / f"{name}.cu", spec["kernel"], args=spec["args"],
                    block=spec["block"], grid=spec["grid"], machine=machine, shared=spec.get("shared", 0))
        if "error" in spec:  # the launch must stop with this error on the model too
            exact += expected_error(name, spec["error"], prog, runner)
            continue
        t = time.perf_counter()
        ref = run_program(prog, machine, trace=False)
        t_ref += time.perf_counter() - t
        t = time.perf_counter()
        try:  # a wrong launch could loop: bound it by a generous multiple of the steps it needs
            launch = on_runner(prog, runner, step_budget=2 * ref.steps + 8, check=True)
        except Exception as e:  # report and go on
            print(f"{name:24s} ERROR {type(e).__name__}: {e}", flush=True)
            continue
        t_model += time.perf_counter() - t
        ok = launch.outputs == ORACLES[name](spec)
        problems = launch.check.problems
        exact += ok and not problems
        tokens += len(launch.tokens)
        worst = min(worst, launch.min_margin)
        print(f"{name:24s} {'exact' if ok and not problems else 'WRONG'} steps {launch.steps:4d} "
              f"tokens {len(launch.tokens):5d} {launch.tokens_per_s:6.1f} tok/s "
              f"margin {launch.min_margin:.4f} state {launch.min_state_margin:.4f}", flush=True)
        for p in problems[:3]:
            print(f"    {p}", flush=True)
    dense, nz = circuit_size(compiled.plan)
    print(f"\n{exact}/{len(kernels) - skipped} kernels exact through the model ({skipped} for another machine "
          f"skipped); {tokens} tokens; "
          f"smallest gate margin {worst:.4f} bits (0.5 ideal)")
    print(f"model/reference time ratio {t_model / max(t_ref, 1e-9):.0f}x; {tokens / max(t_model, 1e-9):.1f} tokens/s "
          f"on this CPU; circuit built in {build_s:.1f} s; {len(compiled.plan.layers)} layers")
    print(f"{ns.machine} machine; circuit parameters at the {ns.shape} shape: dense {dense / 1e9:.1f} G, non-zero {nz / 1e6:.1f} M "
          f"(ratio {dense / nz:.0f})")
    return 0 if exact == len(kernels) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
