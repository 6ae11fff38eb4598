"""The circuit's size at both target shapes: dense parameters, non-zeros, and the fit.

    .venv/bin/python -m bench.circuit_size

Prints, for the published machine: the parameters a dense checkpoint would hold at the
narrow shape (the compiled plan's own: hidden 2^17, the schedule pass's MLP and head
widths) and at Qwen3.5-2B's shape (45 layers of 2048 x 6144, 16 heads), the
non-zero parameters the compact path runs, the ratio of the two, what the logical plan
would need from the 2B shape (live residual dims, MLP units, heads), and each machine's
circuit folded for that shape (``compiler.pipeline.compile_machine``): the dims it takes
there and the dims it leaves free (the splice and the host-robustness bench put a host's
signal in those; at least ``MIN_FREE`` should stay). The large machine's fold takes about a
minute on a 2-core CPU, so this bench, not the test suite, is where its fit is checked
(``tests/compiler/test_dense.py``'s benchmark-marked test runs a kernel through it).
"""

from __future__ import annotations

import sys

from qwengpu_mlx.compiler.compact import compact
from qwengpu_mlx.compiler.pipeline import compile_machine
from qwengpu_mlx.compiler.sizing import QWEN35_2B, DoesNotFit, dense_parameters, misfits, needs, nonzero_parameters
from qwengpu_mlx.core.machine import PUBLISHED_MACHINE, MACHINES

MIN_FREE = 64  # residual dims of the 2B shape a folded machine should leave for a host's signal


def main() -> int:
    plan = compile_machine(PUBLISHED_MACHINE).plan
    n = needs(plan)
    nz = nonzero_parameters(compact(plan))
    print(f"published machine: {n.layers} layers, vocabulary {n.vocab}; {n.dims_used} residual dims allocated, "
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
    short = 0  # machines that do not fit at all (fewer than MIN_FREE free dims is flagged in the line)
    for name in ("published", "large", "one-slot"):
        machine = MACHINES[name]
        try:
            reuse = compile_machine(machine, QWEN35_2B).reuse
        except DoesNotFit as e:
            print(f"{name} machine folded for the 2B shape: does not fit ({e})")
            short += 1
            continue
        p = reuse.plan
        dense = dense_parameters(p.shape, len(p.layers), len(p.vocab))
        nz2 = nonzero_parameters(compact(p))
        free = QWEN35_2B.hidden - reuse.physical
        print(f"{name} machine folded for the 2B shape: {reuse.logical} values on {reuse.physical} dims "
              f"({free} free{'' if free >= MIN_FREE else f', fewer than {MIN_FREE}'}), "
              f"{len(p.layers)} layers, {sum(len(lp.mixer.heads) for lp in p.layers if lp.mixer)} heads; "
              f"dense checkpoint {dense:,} parameters, non-zero {nz2:,} (dense / non-zero = {dense / nz2:,.0f})")
    return 1 if short else 0


if __name__ == "__main__":
    sys.exit(main())
