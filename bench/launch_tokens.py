"""Tokens per launch: the plain lowering against the few-token one, over the conformance suite.

    .venv/bin/python -m bench.launch_tokens [--top N] [--per-element]

Counts the complete launch the reference implies (``runtime/expect.py``: the stream the
model must write, checked exact by ``--check``) for every conformance kernel and for the
shuffle-reduction dot product (``tests/kernels_machine/shfl_dot.cu``), lowered twice: plain
(greedy block cut, every branch kept) and few-token (blocks cut again after dead code is
gone where fewest records come back, ``host/packing.py``; short branches guarded,
``host/ifconvert.py``). Prints the totals by token kind, the ratio, and the kernels with
the most tokens. Counting needs no model; that the model writes these launches exactly
is ``bench/model_suite.py``'s job. Last, the tokens per element (by kind) of a
grid-stride vector operation over 450 elements on the large machine (``--per-element``:
only that).

Both count today's record formats: short ``VAL``/``VALU``/``MEM`` records (header and
``C0``) for values in 0..2047 with a record after them in the step, and one ``VALU``
for a slot whose active lanes hold the same value; the first line also says what the
plain lowering took with a full 4-token record per lane (the format before them). Then
a bound for a format the circuit does not have: short records for negative 11-bit
values and at a step's end too, counted on the same launches.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
from pathlib import Path

from tests.support.launching import bound_program
from qwengpu_mlx.core.machine import DEFAULT_MACHINE, MACHINES, MachineConfig
from qwengpu_mlx.runtime.check import reference_run
from qwengpu_mlx.runtime.expect import expected_segments
from qwengpu_mlx.core.vocab import RECORD_TOKENS, SHORT_KINDS, chunk_value, vocab_for

ROOT = Path(__file__).resolve().parents[1]


def spec_machine(folder: Path, name: str):
    """The machine the launch file names (the default one when it names none)."""
    return MACHINES[json.loads((folder / f"{name}.json").read_text()).get("machine", "default")]


def launch_segments(folder: Path, name: str, few_tokens: bool, args: dict | None = None):
    """(expected segments, EXEC steps) of one kernel's launch (``args``: other arguments)."""
    spec = json.loads((folder / f"{name}.json").read_text())
    machine = spec_machine(folder, name)
    prog = bound_program(folder / f"{name}.cu", spec["kernel"], args=args or spec["args"], block=spec["block"],
                         grid=spec["grid"], few_tokens=few_tokens, machine=machine, shared=spec.get("shared", 0))
    ref = reference_run(prog, machine, budget=machine.step_budget)
    segs = expected_segments(prog, machine, ref.trace, fault=ref.fault, inside_step=ref.inside_step)
    return segs, len(ref.trace)


def launch_kinds(folder: Path, name: str, few_tokens: bool, args: dict | None = None) -> tuple[Counter, int]:
    """(tokens by the kind of their record's header, EXEC steps) of one kernel's launch.

    ``kinds["SHORTENED"]``: the tokens short and ``VALU`` records save against a full
    4-token record per lane (the record format before them), counted apart from the totals."""
    v = vocab_for(spec_machine(folder, name))
    segs, steps = launch_segments(folder, name, few_tokens, args)
    kinds = Counter()
    for seg in segs:
        head = v[seg.records[0].tokens[0]]
        lanes = bin(head.get("mask")).count("1") if head.kind == "EXEC" else 1
        for rec in seg.records:
            kind = v[rec.tokens[0]].kind
            kinds[kind] += len(rec.tokens)
            full = lanes * RECORD_TOKENS if kind == "VALU" else RECORD_TOKENS
            kinds["SHORTENED"] += full - len(rec.tokens) if kind in SHORT_KINDS else 0
    return kinds, steps


def grid_stride_kinds(n: int, block: int, grid: int, magnitude: int, machine: MachineConfig) -> tuple[Counter, int]:
    """(tokens by kind, EXEC steps) of ``examples/kernels/grid_stride.cu`` (``out[i] = 2*x[i] + i``
    in a grid-stride loop) over ``n`` elements of seeded values in ``[-magnitude, magnitude]``:
    the array kernels' cost per element, which grows with the values (short records hold
    0..2047) and with the launch's shape."""
    rnd = random.Random(0)
    x = [rnd.randrange(-magnitude, magnitude + 1) for _ in range(n)]
    prog = bound_program(ROOT / "examples" / "kernels" / "grid_stride.cu", "grid_stride",
                         args={"x": x, "out": [0] * n, "n": n}, block=block, grid=grid, machine=machine)
    ref = reference_run(prog, machine, budget=machine.step_budget)
    v = vocab_for(machine)
    kinds = Counter()
    for seg in expected_segments(prog, machine, ref.trace, fault=ref.fault, inside_step=ref.inside_step):
        for rec in seg.records:
            kinds[v[rec.tokens[0]].kind] += len(rec.tokens)
    return kinds, len(ref.trace)


def print_per_element(n: int = 450) -> None:
    """Tokens per element of a grid-stride vector operation on the large machine."""
    print(f"grid-stride vector operation (grid_stride.cu) over {n} elements, large machine, tokens per element:")
    for magnitude in (6, 10**6):
        for block, grid in ((4, 3), (32, 1), (32, 4)):
            kinds, steps = grid_stride_kinds(n, block, grid, magnitude, MACHINES["large"])
            total = tokens(kinds)
            by_kind = ", ".join(f"{k} {kinds[k] / n:.1f}" for k in sorted(kinds, key=lambda k: -kinds[k]))
            print(f"  values within +-{magnitude}, block {block}, grid {grid}: {total / n:.1f} "
                  f"({total} tokens, {steps} steps; {by_kind})")


def tokens(kinds: Counter) -> int:
    return sum(n for k, n in kinds.items() if k != "SHORTENED")


def signed_short_savings(segs, machine=DEFAULT_MACHINE) -> int:
    """Tokens a short form for every 11-bit signed value (negative ones, and at a step's
    end too) would save on these segments' full ``VAL``/``VALU``/``MEM`` records."""
    v = vocab_for(machine)
    saved = 0
    for seg in segs:
        for rec in seg.records:
            if v[rec.tokens[0]].kind in SHORT_KINDS and len(rec.tokens) == RECORD_TOKENS:
                value = chunk_value([v[t] for t in rec.tokens[1:]])
                saved += 2 if -1024 <= (value - (1 << 32) if value >> 31 else value) < 1024 else 0
    return saved


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--top", type=int, default=8, help="kernels to list, most tokens first")
    ap.add_argument("--per-element", action="store_true",
                    help="only the tokens per element of a grid-stride vector operation")
    ns = ap.parse_args()
    if ns.per_element:
        print_per_element()
        return 0
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
            row.append(tokens(kinds))
        per_kernel.append((row[1], row[0], path.stem))
    plain, few = tokens(totals[False]), tokens(totals[True])
    before = plain + totals[False]["SHORTENED"]
    print(f"conformance suite ({len(per_kernel)} kernels): plain lowering with 4-token records {before} tokens; "
          f"plain {plain} tokens, {steps[False]} steps; few-token {few} tokens, {steps[True]} steps; "
          f"ratio {few / plain:.3f} (against 4-token records {few / before:.3f})")
    for kind in sorted(set(totals[False]) - {'SHORTENED'}, key=lambda k: -totals[False][k]):
        print(f"  {kind:5s} {totals[False][kind]:6d} -> {totals[True][kind]:6d}")
    print("most tokens (few-token, plain):")
    for f, p, name in sorted(per_kernel, reverse=True)[:ns.top]:
        print(f"  {name:24s} {f:5d} {p:5d}")
    saved = sum(signed_short_savings(launch_segments(folder, p.stem, True)[0], spec_machine(folder, p.stem))
                for p in sorted(folder.glob("*.json")))
    print(f"bound for a record format the circuit lacks: short records for negative 11-bit values and at a "
          f"step's end too: suite {few - saved} tokens")
    tests = ROOT / "tests" / "kernels_machine"
    sdot = [tokens(launch_kinds(tests, "shfl_dot", few)[0]) for few in (False, True)]
    print(f"shuffle-reduction dot product (its test arguments, products up to 11,000 and negative): "
          f"plain {sdot[0]} tokens, few-token {sdot[1]} (ratio {sdot[1] / sdot[0]:.3f})")
    small = {"a": [1, 2, 3, 4], "b": [5, 6, 7, 8], "out": [0]}
    plain4 = launch_kinds(tests, "shfl_dot", False, small)[0]
    print(f"  with a = 1,2,3,4 and b = 5,6,7,8: plain lowering with 4-token records "
          f"{tokens(plain4) + plain4['SHORTENED']}, few-token {tokens(launch_kinds(tests, 'shfl_dot', True, small)[0])}")
    print_per_element()
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        raise SystemExit(130)
