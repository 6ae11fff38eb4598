"""Launch tokens/s of the native step on 1, 2, ... threads, interleaved in one run.

    .venv/bin/python -m bench.threads [--machine large] [--threads 1,2] [--rounds 2]

The sparse step's per-token work is mostly serial (layer after layer, each a few tens of
microseconds); what it splits is the logits, its one product as wide as the vocabulary
(``QWENGPU_MLX_THREADS`` threads by row ranges, the same floats), where it computes every
row: the launch loop's greedy token comes from the few spans of rows that can hold it, on
one thread (``top_two_grouped``), so the thread count now changes only those tokens. Each thread count
gets its own runner (a store of its own, the same cached pack); the kernels are
``bench/machines.py``'s, and every launch is checked against the others' tokens.
Wall and process CPU seconds are both given: on a shared machine the wall time also
counts the waits for a core.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from bench.machines import EXAMPLES, SPEED_KERNELS, _spec
from qwengpu_mlx.core.machine import MACHINES
from qwengpu_mlx.runtime import CircuitStore
from tests.support.launching import bound_program, on_runner


def runner_on(machine, threads: int):
    """A fresh store's runner whose step takes ``threads`` threads."""
    os.environ["QWENGPU_MLX_THREADS"] = str(threads)
    return CircuitStore().runner(machine)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--machine", default="large", choices=sorted(MACHINES))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=2)
    ns = ap.parse_args(argv)
    machine = MACHINES[ns.machine]
    counts = [int(t) for t in ns.threads.split(",")]
    runners = {n: runner_on(machine, n) for n in counts}
    programs = [bound_program(EXAMPLES / f"{k}.cu", _spec(k)["kernel"], args=_spec(k)["args"],
                              block=_spec(k)["block"], grid=_spec(k)["grid"], machine=machine) for k in SPEED_KERNELS]
    totals = {n: [0, 0.0, 0.0] for n in counts}
    for _ in range(ns.rounds):
        for prog in programs:
            seen = None
            for n in counts:
                wall, cpu = time.perf_counter(), time.process_time()
                launch = on_runner(prog, runners[n])
                totals[n][1] += time.perf_counter() - wall
                totals[n][2] += time.process_time() - cpu
                totals[n][0] += len(launch.tokens)
                assert seen is None or launch.tokens == seen, "thread counts wrote different tokens"
                seen = launch.tokens
    for n, (tokens, wall, cpu) in totals.items():
        print(f"{ns.machine} machine, {n} thread(s): {tokens / wall:.0f} launch tokens/s wall, "
              f"{tokens / cpu:.0f} per CPU second ({tokens} tokens)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
