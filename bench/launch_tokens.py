"""Tokens per launch: the plain lowering against the few-token one, over the conformance suite.

    .venv/bin/python bench/launch_tokens.py [--top N]

Counts the complete launch the reference implies (``runtime/expect.py``: the stream the
model must write, checked exact by ``--check``) for every conformance kernel and for the
shuffle-reduction dot product (``tests/kernels_machine/shfl_dot.cu``), lowered twice: plain
(greedy block cut, every branch kept) and few-token (blocks cut again after dead code is
gone where fewest records come back, ``host/packing.py``; short branches guarded,
``host/ifconvert.py``). Prints the totals by token kind, the ratio, and the kernels with
the most tokens. Counting needs no model; that the model writes these launches exactly
is ``bench/model_suite.py``'s job.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from qwengpu_mlx.host.launch import bind, compile_kernel
from qwengpu_mlx.machine import DEFAULT_MACHINE
from qwengpu_mlx.runtime.check import reference_run
from qwengpu_mlx.runtime.expect import expected_segments
from qwengpu_mlx.vocab import vocab_for

ROOT = Path(__file__).resolve().parents[1]


def launch_kinds(folder: Path, name: str, few_tokens: bool) -> tuple[Counter, int]:
    """(tokens by the kind of their record's header, EXEC steps) of one kernel's launch."""
    spec = json.loads((folder / f"{name}.json").read_text())
    prog = bind(compile_kernel(folder / f"{name}.cu", spec["kernel"]), spec["args"], block=spec["block"],
                grid=spec["grid"], few_tokens=few_tokens)
    ref = reference_run(prog, DEFAULT_MACHINE, budget=DEFAULT_MACHINE.step_budget)
    v = vocab_for(DEFAULT_MACHINE)
    kinds = Counter()
    for seg in expected_segments(prog, DEFAULT_MACHINE, ref.trace, fault=ref.fault, inside_step=ref.inside_step):
        for rec in seg.records:
            kinds[v[rec.tokens[0]].kind] += len(rec.tokens)
    return kinds, len(ref.trace)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--top", type=int, default=8, help="kernels to list, most tokens first")
    ns = ap.parse_args()
    folder = ROOT / "examples" / "kernels"
    totals = {False: Counter(), True: Counter()}
    steps = {False: 0, True: 0}
    per_kernel = []
    for path in sorted(folder.glob("*.json")):
        row = []
        for few in (False, True):
            kinds, n = launch_kinds(folder, path.stem, few)
            totals[few] += kinds
            steps[few] += n
            row.append(sum(kinds.values()))
        per_kernel.append((row[1], row[0], path.stem))
    plain, few = sum(totals[False].values()), sum(totals[True].values())
    print(f"conformance suite (78 kernels): plain {plain} tokens, {steps[False]} steps; "
          f"few-token {few} tokens, {steps[True]} steps; ratio {few / plain:.3f}")
    for kind in sorted(totals[False], key=lambda k: -totals[False][k]):
        print(f"  {kind:5s} {totals[False][kind]:6d} -> {totals[True][kind]:6d}")
    print("most tokens (few-token, plain):")
    for f, p, name in sorted(per_kernel, reverse=True)[:ns.top]:
        print(f"  {name:24s} {f:5d} {p:5d}")
    sdot = [sum(launch_kinds(ROOT / "tests" / "kernels_machine", "shfl_dot", few)[0].values()) for few in (False, True)]
    print(f"shuffle-reduction dot product: plain {sdot[0]} tokens, few-token {sdot[1]} (ratio {sdot[1] / sdot[0]:.3f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
