"""The circuit's size at both target shapes: dense parameters, non-zeros, and the fit.

    .venv/bin/python -m bench.circuit_size

Prints, for the default machine: the parameters a dense checkpoint would hold at the
narrow shape (the compiled plan's own: hidden 2^17, the schedule pass's MLP and head
widths) and at Qwen3.5-2B's shape (45 layers of 2048 x 6144, 16 heads), the
non-zero parameters the compact path runs, the ratio of the two, what the logical plan
would need from the 2B shape (live residual dims, MLP units, heads), and each machine's
circuit folded for that shape (``compiler.pipeline.compile_machine``): the dims it takes there.
"""

from __future__ import annotations

import sys

from qwengpu_mlx.compiler.compact import compact
from qwengpu_mlx.compiler.pipeline import compile_machine
from qwengpu_mlx.compiler.sizing import QWEN35_2B, DoesNotFit, dense_parameters, misfits, needs, nonzero_parameters
from qwengpu_mlx.core.machine import DEFAULT_MACHINE, ONE_SLOT_MACHINE


def main() -> int:
    plan = compile_machine(DEFAULT_MACHINE).plan
    n = needs(plan)
    nz = nonzero_parameters(compact(plan))
    print(f"default machine: {n.layers} layers, vocabulary {n.vocab}; {n.dims_used} residual dims allocated, "
          f"{n.live_max} live at once (layer {n.live_layer}); {n.reuse_bound} with every dead dim reused "
          f"({n.embedding_dims} embedding dims kept); widest MLP {n.units_max} units (layer "
          f"{n.units_layer}); most heads {n.heads_max} (layer {n.heads_layer})")
    print(f"non-zero parameters (what the compact path runs): {nz:,}")
    for name, shape in (("narrow", plan.shape), ("qwen3.5-2b", QWEN35_2B)):
        dense = dense_parameters(shape, n.layers, n.vocab)
        print(f"{name:11s} dense checkpoint: {dense:,} parameters; dense / non-zero = {dense / nz:,.0f}")
    problems = misfits(n, QWEN35_2B)
    print("as compiled (one residual dim per value) it fits the Qwen3.5-2B shape" if not problems else
          "as compiled (one residual dim per value), not the Qwen3.5-2B shape:\n  " + "\n  ".join(problems)
          + "\n  (a dense checkpoint folds the values onto reused dims, scheduled for that shape:)")
    for name, machine in (("default", DEFAULT_MACHINE), ("one-slot", ONE_SLOT_MACHINE)):
        try:
            reuse = compile_machine(machine, QWEN35_2B).reuse
        except DoesNotFit as e:
            print(f"{name} machine folded for the 2B shape: does not fit ({e})")
            continue
        p = reuse.plan
        dense = dense_parameters(p.shape, len(p.layers), len(p.vocab))
        nz2 = nonzero_parameters(compact(p))
        print(f"{name} machine folded for the 2B shape: {reuse.logical} values on {reuse.physical} dims, "
              f"{len(p.layers)} layers; dense checkpoint {dense:,} parameters, non-zero {nz2:,} "
              f"(dense / non-zero = {dense / nz2:,.0f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
