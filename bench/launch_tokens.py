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

Then bounds for record formats the circuit does not have yet, counted on the same
launches (what each would save, before any circuit work): a 2-token ``VAL`` (header and
one chunk) for values that fit 11 bits, and one record for a slot whose four lanes
all ran and hold the same value.
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
from qwengpu_mlx.vocab import RECORD_TOKENS, chunk_value, vocab_for

ROOT = Path(__file__).resolve().parents[1]


def launch_segments(folder: Path, name: str, few_tokens: bool):
    """(expected segments, EXEC steps) of one kernel's launch."""
    spec = json.loads((folder / f"{name}.json").read_text())
    prog = bind(compile_kernel(folder / f"{name}.cu", spec["kernel"]), spec["args"], block=spec["block"],
                grid=spec["grid"], few_tokens=few_tokens)
    ref = reference_run(prog, DEFAULT_MACHINE, budget=DEFAULT_MACHINE.step_budget)
    segs = expected_segments(prog, DEFAULT_MACHINE, ref.trace, fault=ref.fault, inside_step=ref.inside_step)
    return segs, len(ref.trace)


def launch_kinds(folder: Path, name: str, few_tokens: bool) -> tuple[Counter, int]:
    """(tokens by the kind of their record's header, EXEC steps) of one kernel's launch."""
    v = vocab_for(DEFAULT_MACHINE)
    segs, steps = launch_segments(folder, name, few_tokens)
    kinds = Counter()
    for seg in segs:
        for rec in seg.records:
            kinds[v[rec.tokens[0]].kind] += len(rec.tokens)
    return kinds, steps


def val_savings(segs) -> dict[str, int]:
    """Tokens the what-if record formats would save on these segments' ``VAL`` records."""
    v = vocab_for(DEFAULT_MACHINE)
    lanes = DEFAULT_MACHINE.lanes
    saved = Counter()
    for seg in segs:
        by_slot: dict[int, list[int]] = {}
        for rec in seg.records:
            head = v[rec.tokens[0]]
            if head.kind != "VAL":
                continue
            value = chunk_value([v[t] for t in rec.tokens[1:]])
            by_slot.setdefault(head.get("slot"), []).append(value)
        for values in by_slot.values():
            signed = [x - (1 << 32) if x >> 31 else x for x in values]
            short = sum(2 for x in signed if -1024 <= x < 1024)
            uniform = len(values) == lanes and len(set(values)) == 1
            saved["short"] += short
            saved["uniform"] += (lanes - 1) * RECORD_TOKENS if uniform else 0
            saved["both"] += (lanes * RECORD_TOKENS - (2 if -1024 <= signed[0] < 1024 else RECORD_TOKENS)
                              if uniform else short)
    return saved


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
    saved, sdot_saved = Counter(), Counter()
    for path in sorted(folder.glob("*.json")):
        saved += val_savings(launch_segments(folder, path.stem, True)[0])
    sdot_saved = val_savings(launch_segments(ROOT / "tests" / "kernels_machine", "shfl_dot", True)[0])
    print("bounds for record formats the circuit lacks (few-token launches):")
    for what, label in (("short", "VAL of 2 tokens for values in -1024..1023"),
                        ("uniform", "one VAL for a slot's 4 equal lanes"), ("both", "both")):
        print(f"  {label}: suite {few - saved[what]} tokens")
    sdot = [sum(launch_kinds(ROOT / "tests" / "kernels_machine", "shfl_dot", few)[0].values()) for few in (False, True)]
    print(f"shuffle-reduction dot product: plain {sdot[0]} tokens, few-token {sdot[1]} (ratio {sdot[1] / sdot[0]:.3f}); "
          f"with both record formats {sdot[1] - sdot_saved['both']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
