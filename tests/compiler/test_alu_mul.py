"""Multiplier (mul.lo / mad.lo) and multi-operand adder against Python, through the real model.

One plan holds one mul/mad instance and one 5-term masked adder with enable on the MLPs of
layers 0-4 (hidden 2048, the Qwen3.5-2B width, where the RMSNorm scale is not exactly 1
and float32 rounding is live).  Every test vector is one token of a single sequence
(MLP-only circuits see each token on its own).  Checked: exact results, the worst
distance of any result bit from 0/1, zero output without an op/enable bit, the gate
margins of every layer, and (in NumPy, ideal gates) many more vectors of the logic.
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import time

import numpy as np
import pytest

from tests.support import alu_harness as harness
from qwengpu_mlx.compiler.alu_mul import build_mul_family, build_multi_add
from qwengpu_mlx.compiler.assemble import CircuitPlan, Shape
from qwengpu_mlx.compiler.mlp import gate_margins
from qwengpu_mlx.compiler.residual import ResidualLayout

M32 = 0xFFFFFFFF
EDGES = [0, 1, 2, 3, 0xFF, 0x100, 0xFFFF, 0x10000, 0x7FFFFFFF, 0x80000000, 0x80000001,
         0xFFFFFFFE, M32, 0xAAAAAAAA, 0x55555555, 0x00FF00FF, 0xFF00FF00, 0xDEADBEEF]
NTERMS = 5
# Qwen3.5-2B width (the RMSNorm scale is then not exactly 1); the mixers are inert and kept
# small, since the per-token recurrence dominates the run time.
SHAPE = Shape(hidden=2048, intermediate=2048, linear_heads=1, key_dim=16, value_dim=16,
              attn_heads=1, kv_heads=1, head_dim=16)


def _ops(kind):
    return {"mul": kind == "mul", "mad": kind == "mad"}


def _build(shape):
    lay = ResidualLayout(shape.hidden)
    io = {
        "a": lay.alloc("a", 32), "b": lay.alloc("b", 32), "c": lay.alloc("c", 32),
        "op": lay.alloc("op", 2), "out": lay.alloc("mul.out", 32),
        "t": [lay.alloc(f"t{j}", 32) for j in range(NTERMS)],
        "mask": lay.alloc("mask", NTERMS), "en": lay.alloc("en", 1)[0],
        "sum": lay.alloc("sum.out", 32), "ballast": lay.alloc("ballast", 1)[0],
    }
    plan = CircuitPlan(shape, lay)
    for _ in range(5):
        plan.new_layer()
    plan.vocab = ["<pad>"]
    plan.embedding = np.zeros((1, shape.hidden))
    stats = {}
    before = (lay.used, [0] * 5)
    nxt = build_mul_family(plan, 0, name="mul0", a=io["a"], b=io["b"], c=io["c"],
                           op={"mul": io["op"][0], "mad": io["op"][1]}, out=io["out"])
    gates = [len(plan.mlp(l).gates) for l in range(5)]
    stats["mul"] = {"next": nxt, "dims": lay.used - before[0], "gates": gates}
    used = lay.used
    nxt = build_multi_add(plan, 0, name="add0",
                          terms=[(io["t"][j], io["mask"][j]) for j in range(NTERMS)],
                          out=io["sum"], enable=io["en"])
    gates2 = [len(plan.mlp(l).gates) - g for l, g in enumerate(gates)]
    stats["add"] = {"next": nxt, "dims": lay.used - used, "gates": gates2}
    return plan, io, stats


def _vectors(rng):
    """(a, b, c, op kind, terms, masks, enable, ballast) per token."""
    vecs = []

    def rnd32():
        return int(rng.integers(0, 1 << 32))

    def dense():  # many ones: long carry chains
        return int(sum(1 << i for i in range(32) if rng.random() < 0.9))

    def small():
        return int(rng.integers(0, 1 << int(rng.integers(1, 17))))

    pairs = []
    for kind in ("mul", "mad"):
        for x in EDGES:
            for y in EDGES[::2]:
                pairs.append((x, y, EDGES[(x + y) % len(EDGES)], kind))
        pairs += [(M32, M32, M32, kind), (0xFFFF, 0xFFFF, 0x1FFFE, kind), (0x10000, 0x10000, M32, kind)]
        for gen in (rnd32, dense, small):
            for _ in range(40):
                pairs.append((gen(), gen(), gen(), kind))
        for _ in range(15):
            pairs.append((small(), rnd32(), rnd32(), kind))
    for _ in range(60):
        pairs.append((rnd32(), rnd32(), rnd32(), "none"))
    for i, (a, b, c, kind) in enumerate(pairs):
        style = i % 4
        if style == 0:
            terms = [rnd32() for _ in range(NTERMS)]
        elif style == 1:
            terms = [dense() for _ in range(NTERMS)]
        elif style == 2:
            terms = [M32] * NTERMS
        else:
            terms = [small() for _ in range(NTERMS)]
        masks = [int(rng.random() < 0.6) for _ in range(NTERMS)]
        if style == 2:
            masks = [1] * NTERMS
        en = int(rng.random() < 0.8)
        ballast = float(rng.uniform(0, 100)) if i % 7 == 0 else 0.0  # moves the RMSNorm scale off 1
        vecs.append((a, b, c, kind, terms, masks, en, ballast))
    return vecs


def _expected(v):
    a, b, c, kind, terms, masks, en, _ = v
    mul = {"mul": (a * b) & M32, "mad": (a * b + c) & M32, "none": 0}[kind]
    add = sum(t for t, m in zip(terms, masks) if m) & M32 if en else 0
    return mul, add


def _encode(plan, io, v):
    a, b, c, kind, terms, masks, en, ballast = v
    vals = {io["a"]: a, io["b"]: b, io["c"]: c, io["op"][0]: int(kind == "mul"),
            io["op"][1]: int(kind == "mad"), io["en"]: en, io["ballast"]: ballast}
    for j in range(NTERMS):
        vals[io["t"][j]] = terms[j]
        vals[io["mask"][j]] = masks[j]
    return harness.encode(plan, vals)


@pytest.fixture(scope="module")
def bench():
    t0 = time.time()
    plan, io, stats = _build(SHAPE)
    vecs = _vectors(np.random.default_rng(7))
    res = harness.run(plan, [_encode(plan, io, v) for v in vecs])
    final = res["resid"][-1]
    got = [(harness.read_word(final[i], io["out"]), harness.read_word(final[i], io["sum"]))
           for i in range(len(vecs))]
    margins = [gate_margins(plan.mlp(l), res["mlp_in"][l]) for l in range(5)]
    return {"plan": plan, "io": io, "stats": stats, "vecs": vecs, "got": got,
            "margins": margins, "seconds": time.time() - t0}


def test_depth_and_cost(bench):
    s = bench["stats"]
    print("\nmul/mad:", s["mul"], "\nmulti_add:", s["add"], f"\nmodel bench {bench['seconds']:.1f} s")
    assert s["mul"]["next"] == 5 and s["add"]["next"] == 5
    assert sum(s["mul"]["gates"]) < 1100 and s["mul"]["dims"] <= 64
    assert sum(s["add"]["gates"]) < 500 and s["add"]["dims"] <= 64


@pytest.mark.parametrize("kind", ["mul", "mad"])
def test_mul_family_exact(bench, kind):
    n = bad = 0
    for v, ((val, err), _) in zip(bench["vecs"], bench["got"]):
        if v[3] != kind:
            continue
        n += 1
        want = _expected(v)[0]
        if val != want:
            bad += 1
            print(f"{kind} {v[0]:#x} {v[1]:#x} {v[2]:#x}: got {val:#x} want {want:#x}")
    assert n >= 300 and bad == 0


def test_no_op_writes_zero(bench):
    n = 0
    for v, ((val, err), _) in zip(bench["vecs"], bench["got"]):
        if v[3] == "none":
            n += 1
            assert val == 0 and err == 0.0  # exactly 0: every gate is off (silu(g) = -0.0)
    assert n >= 50


def test_multi_add_exact(bench):
    n_on = n_off = 0
    for v, (_, (val, err)) in zip(bench["vecs"], bench["got"]):
        want = _expected(v)[1]
        assert val == want, (v, hex(val), hex(want))
        if v[6]:
            n_on += 1
        else:
            n_off += 1
            assert err == 0.0
    assert n_on >= 300 and n_off >= 50


def test_worst_bit_deviation(bench):
    worst = max(max(m[1], s[1]) for m, s in bench["got"])
    print(f"\nworst result-bit deviation {worst:.2e}")
    assert worst < 0.01


def test_gate_margins(bench):
    worst = min(m["min_margin_bits"] for m in bench["margins"])
    print("\nmargins per layer:", [(round(m["min_margin_bits"], 4), m["gate"]) for m in bench["margins"]])
    assert worst >= 0.4


# ---- ideal-gate simulation: the logic on many more vectors (no model, NumPy) ---------------

def _simulate(plan, rows):
    x = np.array(rows, dtype=np.float64)
    one = x[:, plan.layout.ONE] / plan.levels.K
    for lp in plan.layers:
        if lp.mlp is None:
            continue
        delta = np.zeros_like(x)
        for g in lp.mlp.gates:
            s = np.zeros(len(x))
            for d, w in g.terms:
                s += w * x[:, d]
            T = (s / one >= g.theta - 0.5).astype(np.float64)
            for d, w in g.outputs:
                delta[:, d] += w * T
        x = x + delta
    return x


def test_logic_many_vectors():
    plan, io, _ = _build(SHAPE)
    rng = np.random.default_rng(11)
    vecs = []
    kinds = ["mul", "mad", "none"]
    for i in range(6000):
        g = [lambda: int(rng.integers(0, 1 << 32)),
             lambda: int(sum(1 << k for k in range(32) if rng.random() < 0.95)),
             lambda: int(rng.integers(0, 1 << int(rng.integers(1, 33))))][i % 3]
        terms = [g() for _ in range(NTERMS)]
        masks = [int(rng.random() < 0.7) for _ in range(NTERMS)]
        vecs.append((g(), g(), g(), kinds[i % 3], terms, masks, int(rng.random() < 0.9), 0.0))
    x = _simulate(plan, [_encode(plan, io, v) for v in vecs])
    for i, v in enumerate(vecs):
        mul, add = _expected(v)
        assert harness.read_word(x[i], io["out"]) == (mul, 0.0), v
        assert harness.read_word(x[i], io["sum"]) == (add, 0.0), v


def test_instances_are_independent():
    """16 instances in the same layers: distinct scratch, distinct gate names, same cost."""
    shape = Shape(hidden=4096, intermediate=1 << 16)
    lay = ResidualLayout(shape.hidden)
    plan = CircuitPlan(shape, lay)
    for _ in range(5):
        plan.new_layer()
    op = lay.alloc("op", 2)
    for k in range(16):
        a, b, c, out = (lay.alloc(f"i{k}.{n}", 32) for n in "abco")
        assert build_mul_family(plan, 0, name=f"alu{k}.mul", a=a, b=b, c=c,
                                op={"mul": op[0], "mad": op[1]}, out=out) == 5
    names = [g.name for l in range(5) for g in plan.mlp(l).gates]
    assert len(names) == len(set(names))
    assert len(names) % 16 == 0


@pytest.mark.parametrize("nterms", [1, 2, 3, 4, 5])
def test_multi_add_term_counts(nterms):
    """1-5 terms, mixed masked / unmasked, with and without enable (ideal gates)."""
    rng = np.random.default_rng(nterms)
    for use_enable in (False, True):
        lay = ResidualLayout(1024)
        words = [lay.alloc(f"w{j}", 32) for j in range(nterms)]
        masks = lay.alloc("m", nterms)
        en = lay.alloc("en", 1)[0]
        out = lay.alloc("out", 32)
        plan = CircuitPlan(Shape(hidden=1024, intermediate=4096), lay)
        for _ in range(5):
            plan.new_layer()
        masked = [j % 2 == 1 for j in range(nterms)]
        assert build_multi_add(plan, 0, name="s", out=out, enable=en if use_enable else None,
                               terms=[(words[j], masks[j] if masked[j] else None)
                                      for j in range(nterms)]) == 5
        rows, want = [], []
        for i in range(400):
            vals = [int(rng.integers(0, 1 << 32)) if i % 3 else M32 for _ in range(nterms)]
            ms = [int(rng.random() < 0.5) if masked[j] else 1 for j in range(nterms)]
            e = int(rng.random() < 0.8) if use_enable else 1
            enc = {words[j]: vals[j] for j in range(nterms)}
            enc.update({masks[j]: ms[j] for j in range(nterms)})
            enc[en] = e
            rows.append(harness.encode(plan, enc))
            want.append(sum(v for v, m in zip(vals, ms) if m) & M32 if e else 0)
        x = _simulate(plan, rows)
        for i in range(len(rows)):
            assert harness.read_word(x[i], out) == (want[i], 0.0)
