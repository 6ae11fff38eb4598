"""The adder family (compiler/alu_add.py) run through the real MLX model.

One plan holds a full ``build_add_family`` instance (layers 0-2) and three
``build_add32`` instances (layers 1-3; layer 3 is a full-attention layer whose MLP is
used normally). All test vectors go through the model as one sequence; every op is
checked bit-exactly against Python's 32-bit semantics on > 300 vectors, plus tokens
with no family op selected (nothing may be written), the worst output deviation from
0/1 and the smallest gate margin over every gate and token.
"""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import random

import numpy as np
import pytest

from tests.support import alu_harness as harness
from qwengpu_mlx.compiler.alu_add import CMPS, OPS, build_add32, build_add_family
from qwengpu_mlx.compiler.assemble import CircuitPlan, Shape
from qwengpu_mlx.compiler.mlp import gate_margins
from qwengpu_mlx.compiler.residual import ResidualLayout

MASK = 0xFFFFFFFF
SMALL_EDGES = [0, 1, 0xFF, 0x100, 0x7FFFFFFF, 0x80000000, 0x80000001, 0xFFFFFFFE, 0xFFFFFFFF]
EDGES = [0, 1, 2, 0x7F, 0x80, 0xFF, 0x100, 0xFFFF, 0x10000, 0xFFFFFF, 0x1000000,
         0x7FFFFFFE, 0x7FFFFFFF, 0x80000000, 0x80000001, 0xFFFFFFFE, 0xFFFFFFFF]


def s32(x):
    x &= MASK
    return x - (1 << 32) if x >> 31 else x


def reference(op, a, b, signed, cmp=None):
    """(out, pout) of one op with PTX semantics."""
    key = s32 if signed else (lambda v: v & MASK)
    if op == "add":
        return (a + b) & MASK, 0
    if op == "sub":
        return (a - b) & MASK, 0
    if op == "neg":
        return -a & MASK, 0
    if op == "abs":
        return abs(s32(a)) & MASK, 0
    if op == "min":
        return (a if key(a) <= key(b) else b), 0
    if op == "max":
        return (a if key(a) >= key(b) else b), 0
    x, y = key(a), key(b)
    return 0, int({"eq": x == y, "ne": x != y, "lt": x < y, "le": x <= y,
                   "gt": x > y, "ge": x >= y}[cmp])


def limb_pattern(rng):
    """Words whose limbs are 0x00/0xFF/0x7F/0x80/random: long propagate chains."""
    v = 0
    for k in range(4):
        v |= rng.choice([0x00, 0xFF, 0xFF, 0x7F, 0x80, 0x01, rng.randrange(256)]) << (8 * k)
    return v


def operand_pairs(rng, n_random=60):
    pairs = [(x, y) for x in EDGES for y in EDGES]  # 289 edge pairs
    # carries/borrows across every limb boundary
    for k in range(1, 5):
        lo = (1 << (8 * k)) - 1
        pairs += [(lo, 1), (1, lo), (lo & MASK, lo & MASK), ((lo + 1) & MASK, 1)]
    pairs += [(limb_pattern(rng), limb_pattern(rng)) for _ in range(40)]
    x = [rng.getrandbits(32) for _ in range(20)]
    pairs += [(v, v) for v in x]  # equal operands
    pairs += [(v, v ^ (1 << rng.randrange(32))) for v in x]  # one bit apart
    pairs += [(v, (v + d) & MASK) for v in x for d in (1, -1)]  # neighbours
    pairs += [(rng.getrandbits(32), rng.getrandbits(32)) for _ in range(n_random)]
    return pairs


@pytest.fixture(scope="module")
def bench():
    # small enough that ~5000 tokens run in a few seconds on 2 CPU threads
    shape = Shape(hidden=288, intermediate=640, linear_heads=2, key_dim=16, value_dim=16,
                  attn_heads=1, kv_heads=1, head_dim=16)
    lay = ResidualLayout(shape.hidden)
    a, b = lay.alloc("a", 32), lay.alloc("b", 32)
    opd = {n: lay.alloc(f"op.{n}", 1)[0] for n in OPS}
    other = lay.alloc("op.other", 1)[0]  # some other ALU unit's op bit
    signed = lay.alloc("signed", 1)[0]
    cmp = {c: lay.alloc(f"cmp.{c}", 1)[0] for c in CMPS}
    out, pout = lay.alloc("out", 32), lay.alloc("pout", 1)[0]
    en = lay.alloc("en", 1)[0]
    o_add, o_sub, o_inc = (lay.alloc(n, 32) for n in ("o_add", "o_sub", "o_inc"))
    plan = CircuitPlan(shape, lay)
    plan.vocab, plan.embedding = ["PAD"], np.zeros((1, shape.hidden), np.float32)  # inputs are raw embeddings
    for _ in range(4):
        plan.new_layer()
    used0 = lay.used
    nxt = build_add_family(plan, 0, name="alu0.add", a=a, b=b, op=opd, signed=signed,
                           cmp=cmp, out=out, pout=pout)
    family_dims = lay.used - used0
    family_gates = [sum(1 for g in plan.layers[i].mlp.gates if g.name.startswith("alu0.add."))
                    for i in range(3)]
    assert nxt == 3
    assert build_add32(plan, 1, name="ad1", a=a, b=b, out=o_add, enable=en) == 4
    assert build_add32(plan, 1, name="ad2", a=a, b=b, out=o_sub, enable=en,
                       invert_b=True, carry_in_one=True) == 4
    assert build_add32(plan, 1, name="ad3", a=a, b=b, out=o_inc, carry_in_one=True) == 4

    rng = random.Random(1234)
    pairs = operand_pairs(rng)
    cases, rows = [], []

    def add_case(case):
        opname, x, y, sg, c, e = case
        vals = {a: x, b: y, signed: sg, en: e}
        if opname in opd:
            vals[opd[opname]] = 1
        elif opname == "other":
            vals[other] = 1
        vals[cmp[c or rng.choice(CMPS)]] = 1  # cmp bits are garbage unless setp
        cases.append(case)
        rows.append(harness.encode(plan, vals))

    for opname in OPS:
        for x, y in pairs:
            if opname == "setp":  # two random comparisons per pair
                for c in rng.sample(CMPS, 2):
                    add_case(("setp", x, y, rng.randrange(2), c, 0))
            else:
                add_case((opname, x, y, rng.randrange(2), None, rng.randrange(2)))
    for x, y in pairs[:: 3]:  # no family op selected
        add_case((rng.choice(["none", "other"]), x, y, rng.randrange(2), None, 1))
    # setp: every comparison, both signednesses, on a grid of edge values
    for x in SMALL_EDGES:
        for y in SMALL_EDGES:
            for c in CMPS:
                add_case(("setp", x, y, 1, c, 0))
                add_case(("setp", x, y, 0, c, 0))

    res = harness.run(plan, rows)
    return dict(plan=plan, res=res, cases=cases, out=out, pout=pout, o_add=o_add,
                o_sub=o_sub, o_inc=o_inc, family_dims=family_dims, family_gates=family_gates)


def _check(bench, sel):
    fin = bench["res"]["resid"][-1]
    bad, worst, n = [], 0.0, 0
    for t, case in enumerate(bench["cases"]):
        if not sel(case):
            continue
        opname, x, y, sg, c, _ = case
        want_out, want_p = reference(opname, x, y, sg, c) if opname in OPS else (0, 0)
        got, err = harness.read_word(fin[t], bench["out"])
        p = fin[t, bench["pout"]]
        worst = max(worst, err, abs(p - round(p)))
        n += 1
        if got != want_out or round(p) != want_p:
            bad.append((opname, hex(x), hex(y), sg, c, hex(got), hex(want_out), p, want_p))
    return n, bad, worst


@pytest.mark.parametrize("opname", OPS)
def test_op_exact(bench, opname):
    n, bad, worst = _check(bench, lambda case: case[0] == opname)
    assert n >= 300
    assert not bad, f"{len(bad)}/{n} wrong, e.g. {bad[:5]}"
    assert worst < 0.01


def test_setp_every_comparison(bench):
    for c in CMPS:
        for sg in (0, 1):
            n, bad, _ = _check(bench, lambda case: case[0] == "setp" and case[4] == c
                               and case[3] == sg)
            assert n >= 120 and not bad, (c, sg, bad[:5])


def test_no_op_writes_nothing(bench):
    fin = bench["res"]["resid"][-1]
    idx = [t for t, case in enumerate(bench["cases"]) if case[0] not in OPS]
    assert len(idx) >= 100
    assert np.all(fin[idx][:, bench["out"].dims] == 0)
    assert np.all(fin[idx, bench["pout"]] == 0)
    # and nothing on the ops that must leave the other port alone
    setp = [t for t, case in enumerate(bench["cases"]) if case[0] == "setp"]
    assert np.all(fin[setp][:, bench["out"].dims] == 0)
    others = [t for t, case in enumerate(bench["cases"]) if case[0] in OPS and case[0] != "setp"]
    assert np.all(fin[others, bench["pout"]] == 0)


def test_add32(bench):
    fin = bench["res"]["resid"][-1]
    worst = 0.0
    for t, (_, x, y, _, _, e) in enumerate(bench["cases"]):
        for sp, want in ((bench["o_add"], (x + y) & MASK if e else 0),
                         (bench["o_sub"], (x - y) & MASK if e else 0),
                         (bench["o_inc"], (x + y + 1) & MASK)):
            got, err = harness.read_word(fin[t], sp)
            assert got == want, (sp.name, hex(x), hex(y), e, hex(got), hex(want))
            worst = max(worst, err)
            if not e and sp.name != "o_inc":
                assert np.all(fin[t, sp.dims] == 0)
    assert worst < 0.01


def test_margins_and_cost(bench):
    plan, res = bench["plan"], bench["res"]
    margins = [gate_margins(plan.layers[i].mlp, res["mlp_in"][i]) for i in range(4)]
    worst = min(m["min_margin_bits"] for m in margins)
    print("gate margins per layer:", margins, "family gates per layer:", bench["family_gates"],
          "scratch dims:", bench["family_dims"])
    assert worst >= 0.4, margins
    assert sum(bench["family_gates"]) <= 400
