"""The check asks for every record the reference says must come back, and names each difference.

Real launches written by the model (divergence, barriers across warps, atomics,
shuffles) are mutated token by token (dropped, duplicated, swapped with the next one,
altered to another token of the same kind) and every mutation must be reported, in the
step where it happened (or the one before, when the mutation removes or adds the
boundary between two steps). The expected stream comes from the reference interpreter's
trace (``runtime/expect.py``); the launches from the compiled circuit: two independent
sources that must agree token for token.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from qwengpu_mlx.core.machine import PUBLISHED_MACHINE
from qwengpu_mlx.runtime import check_launch
from qwengpu_mlx.runtime.check import compare_launch, reference_run, split_segments
from qwengpu_mlx.runtime.expect import expected_segments
from qwengpu_mlx.core.vocab import Token, vocab_for

from tests.support.cli import needs_clang

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "examples" / "kernels"
V = vocab_for(PUBLISHED_MACHINE)

pytestmark = needs_clang

# nested divergence (with predicate records); barriers across 4 warps, in a loop, with
# divergent shared-memory adds (tests/kernels_machine/reduce_tree_4warps.cu: the code paths
# of reduce_shared_tree in 530 tokens instead of 1,122); atomics under contention (and a
# lane masked off); a butterfly shuffle. The last three are launches test_model_backend.py
# also runs (shared, run once).
MUTATED = ["nested_branches", "reduce_tree_4warps", "dot", "shfl_xor_allreduce"]
KINDS = {"CTA", "WST", "EXEC", "VAL", "PVAL", "MEM", "ENT", "C0", "C1", "C2", "STOP"}
# what the barrier launch must show: warp status records of all 4 warps (waiting at a
# barrier, released), SIMT stack entries (its divergent adds), shared-memory stores
BARRIER_KINDS = {"CTA", "WST", "EXEC", "VAL", "MEM", "ENT", "C0", "C1", "C2", "STOP"}


@pytest.fixture(scope="module")
def launches(example_launch):
    """name -> (program, the model's launch)."""
    out = {name: example_launch(name)[1:] for name in MUTATED + ["vec_add"]}
    # the coverage cannot shrink unseen: every kind of token is in the mutated launches,
    # and the barrier launch spans the block's 4 warps
    seen = {V[t].kind for name in MUTATED for t in out[name][1].tokens}
    assert KINDS <= seen, KINDS - seen
    barrier = [V[t] for t in out["reduce_tree_4warps"][1].tokens]
    assert BARRIER_KINDS <= {t.kind for t in barrier}, BARRIER_KINDS - {t.kind for t in barrier}
    assert {dict(t.fields)["warp"] for t in barrier if t.kind == "WST"} == {0, 1, 2, 3}
    return out


def altered(tok_id: int) -> int:
    """Another token of the same kind (another value, lane, mask ...), or a token of another kind."""
    t = V[tok_id]
    for name, value in t.fields:
        for delta in (1, -1, 2):
            fields = tuple((n, (v + delta) if n == name else v) for n, v in t.fields)
            other = V.ids.get(Token(t.kind, fields))
            if other is not None:
                return other
    return V.id("STOP") if t.kind != "STOP" else V.id("GO")


def mutations(tokens: list[int]):
    """(description, position, mutated tokens) for every single-token mutation."""
    for i in range(len(tokens)):
        yield "drop", i, tokens[:i] + tokens[i + 1:]
        yield "duplicate", i, tokens[:i + 1] + tokens[i:]
        if i + 1 < len(tokens) and tokens[i] != tokens[i + 1]:
            yield "swap", i, tokens[:i] + [tokens[i + 1], tokens[i]] + tokens[i + 2:]
        yield "alter", i, tokens[:i] + [altered(tokens[i])] + tokens[i + 1:]


def segment_of(tokens: list[int], i: int) -> int:
    pos = 0
    for k, seg in enumerate(split_segments(tokens, V)):
        if pos <= i < pos + len(seg):
            return k
        pos += len(seg)
    raise IndexError(i)


def test_the_mutated_launches_hold_every_kind_of_token(launches):
    seen = {V[t].kind for name in MUTATED for t in launches[name][1].tokens}
    assert KINDS <= seen, KINDS - seen


@pytest.mark.parametrize("name", MUTATED)
def test_every_single_token_mutation_is_named(launches, name):
    prog, launch = launches[name]
    assert launch.check.exact, launch.check.problems  # the model's own launch is what the reference implies
    # check_launch = the reference run + expected_segments + compare_launch: the first two
    # depend on the program only, so each mutation goes through the comparison
    ref = reference_run(prog, PUBLISHED_MACHINE, budget=10 * launch.steps)
    expected = expected_segments(prog, PUBLISHED_MACHINE, ref.trace)
    assert compare_launch(expected, launch.tokens, V) == ([], 0)
    tried = caught = 0
    for how, i, mutated in mutations(launch.tokens):
        tried += 1
        mismatches, _ = compare_launch(expected, mutated, V)
        assert mismatches, f"{how} token {i} ({V[launch.tokens[i]]}) of {name} was not caught"
        first = mismatches[0]
        k = segment_of(launch.tokens, i)
        # named where it happened: in its step; a removed or added boundary token (EXEC, CTA ...)
        # shows as an extra record of the step before or an extra step after
        near = (k - 1, k, k + 1) if how in ("duplicate", "swap") else (k - 1, k)
        assert first.segment in near, (how, i, str(first))
        assert str(first)  # a readable sentence
        caught += 1
    print(f"{name}: {tried} mutations tried, {caught} caught")
    assert tried == caught and tried >= 3 * len(launch.tokens)


def test_dropped_register_records_are_missing_records(launches):
    """Remove every VAL record of vec_add's launch; the check must ask for them."""
    prog, launch = launches["vec_add"]
    toks, kept = launch.tokens, []
    i = 0
    while i < len(toks):
        if V[toks[i]].kind == "VAL":
            i += 4
            continue
        kept.append(toks[i])
        i += 1
    assert len(kept) < len(toks)
    report = check_launch(prog, kept, PUBLISHED_MACHINE)
    assert not report.exact
    first = str(report.mismatches[0])
    assert "expected VAL(" in first and "lane" in first and "step" in first
    # one report per step that lost its records (at most MAX_REPORTED listed)
    assert len(report.mismatches) + report.more >= 3


def test_memory_read_from_the_state_is_compared(launches):
    prog, launch = launches["vec_add"]
    memory = list(launch.memory)
    out = next(a for a in prog.arrays if a.name == "out")
    memory[out.base + 2] ^= 1 << 7
    report = check_launch(prog, launch.tokens, PUBLISHED_MACHINE, memory=memory)
    assert not report.exact and not report.mismatches
    assert any(f"word {out.base + 2} (out[2])" in p for p in report.memory_problems)


def _cli_check(args: list[str], stdin: str | None = None):
    return subprocess.run([sys.executable, "-m", "qwengpu_mlx.cli.main", "check", *args], capture_output=True,
                          text=True, cwd=ROOT, input=stdin, timeout=300)


def _vec_add_args() -> list[str]:
    spec = json.loads((KERNELS / "vec_add.json").read_text())
    out = [str(KERNELS / "vec_add.cu"), "--block", str(spec["block"]), "--machine", "published"]  # the launches' machine
    for name, value in spec["args"].items():
        out += ["--arg", f"{name}={','.join(map(str, value)) if isinstance(value, list) else value}"]
    return out


def test_check_command_exit_codes(launches, tmp_path):
    prog, launch = launches["vec_add"]
    good = tmp_path / "launch.json"
    good.write_text(json.dumps(launch.tokens))
    r = _cli_check(_vec_add_args() + ["--launch-tokens", str(good)])
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("exact")
    # the launch with its prompt in front (as mlx-lm's generate returns it), from stdin, as `run --json` prints it
    from qwengpu_mlx.runtime import prompt_tokens

    obj = {"launch_tokens": prompt_tokens(prog, PUBLISHED_MACHINE) + launch.tokens}
    r = _cli_check(_vec_add_args() + ["--launch-tokens", "-"], stdin=json.dumps(obj))
    assert r.returncode == 0, r.stdout + r.stderr
    bad = list(launch.tokens)
    k = next(i for i, t in enumerate(bad) if V[t].kind == "MEM")
    bad[k + 1] = altered(bad[k + 1])  # the first chunk of a memory record
    r = _cli_check(_vec_add_args() + ["--launch-tokens", "-"], stdin=json.dumps(bad))
    assert r.returncode == 1
    assert r.stdout.startswith("MISMATCH: step") and "MEM(" in r.stdout and "out[" in r.stdout
    r = _cli_check(_vec_add_args() + ["--launch-tokens", "-"], stdin="[1, 2,")
    assert r.returncode == 2 and "not JSON" in r.stderr and "Traceback" not in r.stderr
