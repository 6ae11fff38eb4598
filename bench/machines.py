"""The named machines side by side: circuit size, launch speed, conformance tokens.

    .venv/bin/python -m bench.machines [--no-speed] [--rounds N]

Per machine (published and large): layers, vocabulary, residual values and the most
live at once, MLP units and heads (in all and at most per layer), dense parameters at
Qwen3.5-2B's layer widths (hidden 2048 and the widest the circuit can take in a
combined checkpoint, 6144) and the non-zero parameters the compact path runs; launch
tokens/s through the model on this CPU (the same kernels on both, interleaved, so the
ratio is measured in one run; also per CPU second of this process, which other
processes' load changes less); and the conformance suite's launch tokens over the
kernels each machine runs (the reference's expected launch, which an exact model launch
equals token for token).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

from qwengpu_mlx.compiler.compact import compact
from qwengpu_mlx.compiler.pipeline import compile_machine
from qwengpu_mlx.compiler.sizing import QWEN35_2B, dense_parameters, needs, nonzero_parameters
from qwengpu_mlx.core.machine import PUBLISHED_MACHINE, LARGE_MACHINE
from qwengpu_mlx.runtime import CircuitStore
from tests.support.launching import bound_program, on_runner
from qwengpu_mlx.runtime.check import reference_run
from qwengpu_mlx.runtime.expect import expected_segments

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "kernels"
MACHINES = {"published": PUBLISHED_MACHINE, "large": LARGE_MACHINE}
SPEED_KERNELS = ("dot", "collatz_steps", "shared_scan", "histogram", "div_const_signed")


def _spec(name: str) -> dict:
    return json.loads((EXAMPLES / f"{name}.json").read_text())


def _runs_on(spec: dict, name: str) -> bool:
    """A launch file runs on the large machine always, on the published one unless it names another."""
    return name == "large" or spec.get("machine", "default") in ("default", "published")


def size_row(machine) -> dict:
    plan = compile_machine(machine).plan
    n = needs(plan)
    heads = sum(len(lp.mixer.heads) for lp in plan.layers if lp.mixer)
    units = sum(lp.mlp.units for lp in plan.layers if lp.mlp)
    wide = replace(QWEN35_2B, hidden=3 * QWEN35_2B.hidden)
    return {"layers": n.layers, "vocab": n.vocab, "values": n.dims_used, "live": n.live_max, "units": units,
            "units_max": n.units_max, "heads": heads, "heads_max": n.heads_max,
            "dense_2048": dense_parameters(QWEN35_2B, n.layers, n.vocab),
            "dense_6144": dense_parameters(wide, n.layers, n.vocab), "nonzero": nonzero_parameters(compact(plan))}


def suite_tokens(machine, name: str) -> tuple[int, int]:
    """(kernels, launch tokens) over the conformance kernels this machine runs."""
    kernels = tokens = 0
    for path in sorted(EXAMPLES.glob("*.json")):
        spec = json.loads(path.read_text())
        if not _runs_on(spec, name):
            continue
        prog = bound_program(path.with_suffix(".cu"), spec["kernel"], args=spec["args"], block=spec["block"],
                             grid=spec["grid"], machine=machine, shared=spec.get("shared", 0))
        ref = reference_run(prog, machine, budget=machine.step_budget)
        segs = expected_segments(prog, machine, ref.trace, fault=ref.fault, inside_step=ref.inside_step)
        kernels, tokens = kernels + 1, tokens + sum(len(s.tokens) for s in segs)
    return kernels, tokens


def speeds(rounds: int = 2) -> dict[str, float]:
    """Launch tokens per second of the same kernels on each machine, interleaved (wall time)."""
    return {name: tok / wall for name, (tok, wall, _) in timed_launches(rounds).items()}


def timed_launches(rounds: int = 2) -> dict[str, tuple[int, float, float]]:
    """(launch tokens, wall seconds, this process's CPU seconds) of the same kernels on each
    machine, interleaved launch by launch, the machines' order swapped every round: the
    load of a shared, noisy machine falls on both alike (whole rounds of one machine then
    the other read from 0.83x to 1.10x on the same code); the CPU seconds still compare
    where other processes take turns."""
    runners = {name: CircuitStore().runner(m) for name, m in MACHINES.items()}
    programs = {name: [bound_program(EXAMPLES / f"{k}.cu", _spec(k)["kernel"], args=_spec(k)["args"],
                            block=_spec(k)["block"], grid=_spec(k)["grid"], machine=m) for k in SPEED_KERNELS]
                for name, m in MACHINES.items()}
    totals = {name: [0, 0.0, 0.0] for name in MACHINES}
    for r in range(rounds):
        order = list(MACHINES) if r % 2 == 0 else list(MACHINES)[::-1]
        for k in range(len(SPEED_KERNELS)):
            for name in order:
                t, c = time.perf_counter(), time.process_time()
                launch = on_runner(programs[name][k], runners[name])
                totals[name][1] += time.perf_counter() - t
                totals[name][2] += time.process_time() - c
                totals[name][0] += len(launch.tokens)
    return {name: tuple(v) for name, v in totals.items()}


def _rounds(text: str) -> int:
    n = int(text)
    if n < 1:
        raise ValueError(text)
    return n


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--no-speed", action="store_true", help="sizes and suite tokens only, no launches timed")
    ap.add_argument("--rounds", type=_rounds, default=4, metavar="N",
                    help="rounds of the speed kernels on each machine, launch by launch (default 4)")
    ns = ap.parse_args(argv)
    rows = {name: size_row(m) for name, m in MACHINES.items()}
    for name, m in MACHINES.items():
        rows[name]["suite"] = suite_tokens(m, name)
    if not ns.no_speed:
        for name, (tokens, wall, cpu) in timed_launches(ns.rounds).items():
            rows[name]["tps"], rows[name]["cpu_tps"] = tokens / wall, tokens / cpu
    keys = [("layers", "layers"), ("vocab", "launch vocabulary"), ("values", "residual values (logical)"),
            ("live", "most values live at once"), ("units", "MLP units in all"), ("units_max", "widest MLP"),
            ("heads", "heads in all"), ("heads_max", "most heads in a layer"),
            ("dense_2048", "dense parameters at hidden 2048"), ("dense_6144", "dense parameters at hidden 6144"),
            ("nonzero", "non-zero parameters")]
    print(f"{'':34}" + "".join(f"{n:>16}" for n in MACHINES))
    for key, label in keys:
        print(f"{label:34}" + "".join(f"{rows[n][key]:>16,}" for n in MACHINES))
    print(f"{'conformance kernels / tokens':34}" + "".join(f"{'%d / %d' % rows[n]['suite']:>16}" for n in MACHINES))
    if all("tps" in r for r in rows.values()):
        print(f"{'launch tokens/s (same kernels)':34}" + "".join(f"{rows[n]['tps']:>16.0f}" for n in MACHINES))
        print(f"{'launch tokens per CPU second':34}" + "".join(f"{rows[n]['cpu_tps']:>16.0f}" for n in MACHINES))
        print(f"large / published speed: {rows['large']['tps'] / rows['published']['tps']:.2f} "
              f"(per CPU second: {rows['large']['cpu_tps'] / rows['published']['cpu_tps']:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
