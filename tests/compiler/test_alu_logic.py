"""The logic/shift/select family (compiler/alu_logic.py) through the real MLX model.

Test vectors are circuit tokens (harness.encode) run as one sequence; the expected
values are computed here from the instruction definitions (docs/MACHINE.md), 32-bit.
Two instances share layer 1 (the second one with only shl and xor) to check that
instances coexist and that an instance adds nothing for ops it does not hold.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from qwengpu_mlx.compiler.alu_logic import OPS, build_logic_family
from qwengpu_mlx.compiler.assemble import CircuitPlan, Shape
from tests.support.alu_harness import encode, read_word, run
from qwengpu_mlx.compiler.mlp import gate_margins
from qwengpu_mlx.compiler.residual import ResidualLayout

M32 = 0xFFFFFFFF
EDGE = [0, 1, 2, 3, 0x7FFFFFFF, 0x80000000, 0x80000001, 0xFFFFFFFF, 0xFFFFFFFE, 0x55555555,
        0xAAAAAAAA, 0x0000FFFF, 0xFFFF0000, 0x12345678, 0xDEADBEEF, 0x00000100, 0x40000000]
HUGE = [32, 33, 40, 63, 64, 100, 255, 256, 1023, 1024, 0x10000, 0x7FFFFFFF, 0x80000000,
        0x80000001, 0xFFFFFFE0, 0xFFFFFFFF, 0xFFFFFFFE] + [1 << m for m in range(5, 32)] \
    + [(1 << m) | 3 for m in range(5, 32)]


def semantics(op: str, a: int, b: int, p: int, signed: int) -> int:
    if op == "mov":
        return a
    if op == "and":
        return a & b
    if op == "or":
        return a | b
    if op == "xor":
        return a ^ b
    if op == "not":
        return ~a & M32
    if op == "selp":
        return a if p else b
    if op == "shl":
        return (a << b) & M32 if b < 32 else 0
    if op == "shr":
        if not signed:
            return a >> b if b < 32 else 0
        sa = a - (1 << 32) if a >> 31 else a
        return (sa >> min(b, 31)) & M32
    raise ValueError(op)


def vectors() -> list[tuple]:
    """(op or None, a, b, p, signed, foreign); >= 300 per op (shr: per signedness)."""
    rng = random.Random(1234)
    r32 = lambda: rng.getrandbits(32)  # noqa: E731
    vs = []
    for op in ("mov", "and", "or", "xor", "not", "selp"):
        for a in EDGE:
            for b in EDGE[::2]:
                vs.append((op, a, b, rng.getrandbits(1), rng.getrandbits(1), 0))
        for _ in range(220):
            vs.append((op, r32(), r32(), rng.getrandbits(1), rng.getrandbits(1), 0))
    for op, signed in (("shl", 0), ("shl", 1), ("shr", 0), ("shr", 1)):
        avals = EDGE + [r32() | 0x80000000, r32() & 0x7FFFFFFF]
        n = 0
        for amt in range(41):
            for a in rng.sample(avals, 5) + [r32()]:
                vs.append((op, a, amt, rng.getrandbits(1), signed, 0)); n += 1
        for amt in HUGE:
            vs.append((op, rng.choice(avals + [r32()]), amt, rng.getrandbits(1), signed, 0)); n += 1
        while n < 400:
            vs.append((op, r32(), rng.choice([rng.randrange(32), r32()]), rng.getrandbits(1), signed, 0)); n += 1
    # no op bit of this family: nothing may be added (also with a foreign ALU op bit set)
    for i in range(120):
        vs.append((None, rng.choice(EDGE + [r32()]), rng.choice(EDGE + HUGE + [r32()]),
                   rng.getrandbits(1), rng.getrandbits(1), i % 2))
    return vs


@pytest.fixture(scope="module")
def circuit():
    shape = Shape(hidden=256, intermediate=1024, linear_heads=4, key_dim=32, value_dim=32, head_dim=32)
    lay = ResidualLayout(shape.hidden)
    a, b = lay.alloc("a", 32), lay.alloc("b", 32)
    p, signed = lay.alloc("p", 1)[0], lay.alloc("signed", 1)[0]
    ops = lay.alloc("op", len(OPS) + 1)  # last one: a foreign ALU op ("add")
    op = {k: ops[i] for i, k in enumerate(OPS)}
    out, out2 = lay.alloc("out", 32), lay.alloc("out2", 32)
    plan = CircuitPlan(shape, lay, vocab=["PAD"], embedding=np.zeros((1, shape.hidden)))
    for _ in range(4):
        plan.new_layer()
    end = build_logic_family(plan, 0, name="lg0", a=a, b=b, p=p, op=op, signed=signed, out=out)
    end2 = build_logic_family(plan, 1, name="lg1", a=a, b=b, p=p, op={k: op[k] for k in ("shl", "xor")},
                              signed=signed, out=out2)
    assert (end, end2) == (2, 3)
    vs = vectors()
    rows = []
    for name, av, bv, pv, sv, foreign in vs:
        vals = {a: av, b: bv, p: pv, signed: sv}
        if name:
            vals[op[name]] = 1
        if foreign:
            vals[ops[len(OPS)]] = 1
        rows.append(encode(plan, vals))
    res = run(plan, rows)
    return plan, vs, res, out, out2, lay


def test_gate_counts(circuit):
    plan, *_, lay = circuit
    g0 = [g for g in plan.layers[0].mlp.gates if g.name.startswith("lg0.")]
    g1 = [g for g in plan.layers[1].mlp.gates if g.name.startswith("lg0.")]
    assert (len(g0), len(g1)) == (384, 296)
    private = sum(s.width for n, s in lay.spaces.items() if n.startswith("lg0."))
    assert private == 41  # the shifted word (one for shl and shr), eqh (8), big
    # small input sums: every gate's |sum| <= sum |w| stays far below 2^12
    for layer in plan.layers[:3]:
        assert max(sum(abs(w) for _, w in g.terms) for g in layer.mlp.gates) < 64


def test_results_exact(circuit):
    plan, vs, res, out, out2, _ = circuit
    r2, r3 = res["resid"][2], res["resid"][3]
    worst = 0.0
    per_op = {}
    for t, (name, av, bv, pv, sv, _) in enumerate(vs):
        got, err = read_word(r2[t], out)
        got2, err2 = read_word(r3[t], out2)
        worst = max(worst, err, err2)
        if name is None:
            assert np.all(r3[t, out.dims] == 0.0) and np.all(r3[t, out2.dims] == 0.0), t
            continue
        key = name + (".s" if name == "shr" and sv else "")
        per_op[key] = per_op.get(key, 0) + 1
        want = semantics(name, av, bv, pv, sv)
        assert got == want, (name, hex(av), hex(bv), pv, sv, hex(got), hex(want))
        want2 = want if name in ("shl", "xor") else 0
        assert got2 == want2, (name, hex(av), hex(bv), hex(got2))
        if name not in ("shl", "xor"):  # none of instance 2's op bits: exactly nothing added
            assert np.all(r3[t, out2.dims] == 0.0)
    assert worst < 0.01, worst
    assert min(per_op.values()) >= 300, per_op
    # out of the first instance is final after layer 1 and untouched later
    assert np.array_equal(res["resid"][2][:, out.dims], res["resid"][4][:, out.dims])


def test_margins(circuit):
    plan, vs, res, *_ = circuit
    for layer in range(3):
        m = gate_margins(plan.layers[layer].mlp, res["mlp_in"][layer])
        assert m["min_margin_bits"] >= 0.4, (layer, m)
