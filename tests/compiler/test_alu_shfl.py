"""The warp shuffle (compiler/alu_shfl.py) through the real MLX model.

Every (mode, clamp, segmask, member) combination with every lane seeing every b, the
CUDA __shfl_*_sync widths 1/2/4, the reference interpreter's table
(tests/core/test_reference.py) and random vectors, as circuit tokens in one sequence.
Expected values come from the PTX definition written out here.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from qwengpu_mlx.compiler.alu_shfl import MODES, build_shfl, lane_covers
from qwengpu_mlx.compiler.assemble import CircuitPlan, Shape
from tests.support.alu_harness import encode, read_word, run
from qwengpu_mlx.compiler.mlp import gate_margins
from qwengpu_mlx.compiler.residual import ResidualLayout

LANES = 4


def expect(mode: str, bs: list[int], clamp: int, segmask: int, member: int, vals: list[int]):
    """(values, in-range bits) after shfl.sync.mode on a full 4-lane warp (2-bit lane fields)."""
    res, preds = [], []
    for lane in range(LANES):
        b = bs[lane] & 3
        max_lane = (lane & segmask) | (clamp & ~segmask & 3)
        min_lane = lane & segmask
        if mode == "up":
            j = lane - b
            ok = j >= max_lane
        elif mode == "down":
            j = lane + b
            ok = j <= max_lane
        elif mode == "bfly":
            j = lane ^ b
            ok = j <= max_lane
        else:
            j = min_lane | (b & ~segmask & 3)
            ok = j <= max_lane
        src = j if ok and 0 <= j < LANES and (member >> j) & 1 else lane
        res.append(vals[src])
        preds.append(int(ok))
    return res, preds


def cuda_c(mode: str, width: int) -> int:
    """The c operand CUDA's __shfl_*_sync(mask, v, x, width) passes, on 4-lane lane fields."""
    return (LANES - width) << 8 if mode == "up" else ((LANES - width) << 8) | 3


# (mode, b, c, member, values of r1 = 10*lane + 1, in range): tests/core/test_reference.py
T, F = 1, 0
REFERENCE_TABLE = [
    ("idx", 2, 0x3, 0xF, [21, 21, 21, 21], [T, T, T, T]),
    ("up", 1, 0x0, 0xF, [1, 1, 11, 21], [F, T, T, T]),
    ("up", 2, 0x0, 0xF, [1, 11, 1, 11], [F, F, T, T]),
    ("down", 1, 0x3, 0xF, [11, 21, 31, 31], [T, T, T, F]),
    ("down", 3, 0x3, 0xF, [31, 11, 21, 31], [T, F, F, F]),
    ("bfly", 3, 0x3, 0xF, [31, 21, 11, 1], [T, T, T, T]),
    ("down", 1, 0x203, 0xF, [11, 11, 31, 31], [T, F, T, F]),
    ("up", 1, 0x200, 0xF, [1, 1, 21, 21], [F, T, F, T]),
    ("idx", 1, 0x203, 0xF, [11, 11, 31, 31], [T, T, T, T]),
    ("bfly", 1, 0x203, 0xF, [11, 1, 31, 21], [T, T, T, T]),
    ("down", 1, 0x1, 0xF, [11, 11, 21, 31], [T, F, F, F]),
    ("down", 1, 0x3, 0b1011, [11, 11, 31, 31], [T, T, T, F]),
    ("idx", 2, 0x3, 0b1011, [1, 11, 21, 31], [T, T, T, T]),
    ("idx", 5, 0x3, 0xF, [11, 11, 11, 11], [T, T, T, T]),
]


def vectors() -> list[dict]:
    rng = random.Random(99)
    r32 = lambda: rng.getrandbits(32)  # noqa: E731
    vs = []

    def add(mode, bs, clamp, segmask, member, vals=None, sel=1, kind=""):
        vals = vals or [r32() for _ in range(LANES)]
        vs.append(dict(mode=mode, b=bs, clamp=clamp, segmask=segmask, member=member, vals=vals, sel=sel, kind=kind))

    # exhaustive: every lane sees every b under every (mode, clamp, segmask, member)
    for mode in MODES:
        for clamp in range(4):
            for segmask in range(4):
                for member in range(16):
                    for k in range(4):
                        add(mode, [((k + l) % 4) | (r32() & ~3) for l in range(LANES)], clamp, segmask, member,
                            kind="all")
    # CUDA widths 1, 2, 4 with the same delta/srcLane/laneMask in every lane
    for width in (1, 2, 4):
        for mode in MODES:
            c = cuda_c(mode, width)
            for x in range(8):
                for member in (0xF, rng.randrange(16)):
                    add(mode, [x] * LANES, c & 3, (c >> 8) & 3, member, kind=f"w{width}")
            if mode == "idx":  # srcLane differing per lane, as __shfl_sync(m, v, f(laneid), width)
                for _ in range(8):
                    add(mode, [rng.randrange(64) for _ in range(LANES)], c & 3, (c >> 8) & 3, 0xF, kind=f"w{width}")
    for mode, bv, c, member, values, inr in REFERENCE_TABLE:
        add(mode, [bv] * LANES, c & 3, (c >> 8) & 3, member, vals=[10 * l + 1 for l in range(LANES)], kind="ref")
        assert expect(mode, [bv] * LANES, c & 3, (c >> 8) & 3, member, vs[-1]["vals"]) == (values, inr)
    for _ in range(300):
        add(rng.choice(MODES), [r32() for _ in range(LANES)], rng.randrange(4), rng.randrange(4),
            rng.randrange(16), vals=[rng.choice([0, 0xFFFFFFFF, r32()]) for _ in range(LANES)], kind="random")
    # sel = 0: nothing written, whatever the mode bits say
    for i in range(100):
        add(rng.choice(MODES) if i % 4 else None, [r32() for _ in range(LANES)], rng.randrange(4),
            rng.randrange(4), rng.randrange(16), sel=0, kind="off")
    return vs


@pytest.fixture(scope="module")
def circuit():
    shape = Shape(hidden=512, intermediate=1024, linear_heads=4, key_dim=32, value_dim=32, head_dim=32)
    lay = ResidualLayout(shape.hidden)
    vals = [lay.alloc(f"v{l}", 32) for l in range(LANES)]
    bw = [lay.alloc(f"b{l}", 32) for l in range(LANES)]
    modes = lay.alloc("mode", 4)
    mode = {m: modes[i] for i, m in enumerate(MODES)}
    clamp, segmask, member = lay.alloc("clamp", 2), lay.alloc("segmask", 2), lay.alloc("member", 4)
    sel = lay.alloc("sel", 1)[0]
    outs = [lay.alloc(f"out{l}", 32) for l in range(LANES)]
    pouts = list(lay.alloc("pout", 4).dims)
    plan = CircuitPlan(shape, lay, vocab=["PAD"], embedding=np.zeros((1, shape.hidden)))
    for _ in range(4):
        plan.new_layer()
    end = build_shfl(plan, 0, name="shfl0", vals=vals, b=bw, mode=mode, clamp=clamp, segmask=segmask,
                     member=member, sel=sel, outs=outs, pouts=pouts)
    assert end == 2
    vs = vectors()
    rows = []
    for v in vs:
        enc = {clamp: v["clamp"], segmask: v["segmask"], member: v["member"], sel: v["sel"]}
        for l in range(LANES):
            enc[vals[l]] = v["vals"][l]
            enc[bw[l]] = v["b"][l]
        if v["mode"]:
            enc[mode[v["mode"]]] = 1
        rows.append(encode(plan, enc))
    res = run(plan, rows)
    return plan, vs, res, outs, pouts, lay


def test_covers_match_definition():
    # lane_covers checks itself exhaustively; here: sizes (gates per lane and mode)
    total_p = sum(len(lane_covers(m, l)[0]) for m in MODES for l in range(LANES))
    total_t = sum(len(c) for m in MODES for l in range(LANES) for c in lane_covers(m, l)[1].values())
    assert (total_p, total_t) == (32, 40)


def test_gate_counts(circuit):
    plan, *_, lay = circuit
    assert len([g for g in plan.layers[0].mlp.gates if g.name != "ONE2"]) == 72  # + the ONE2 constant
    assert len(plan.layers[1].mlp.gates) == 512
    assert sum(s.width for n, s in lay.spaces.items() if n.startswith("shfl0.")) == 12
    for layer in plan.layers[:2]:
        assert max(sum(abs(w) for _, w in g.terms) for g in layer.mlp.gates) < 64


def test_results_exact(circuit):
    plan, vs, res, outs, pouts, _ = circuit
    r = res["resid"][2]
    worst, kinds = 0.0, {}
    for t, v in enumerate(vs):
        kinds[v["kind"]] = kinds.get(v["kind"], 0) + 1
        if not v["sel"]:
            for l in range(LANES):
                assert np.all(r[t, outs[l].dims] == 0.0), (t, v)
            assert np.all(r[t, pouts] == 0.0), (t, v)
            continue
        want, wantp = expect(v["mode"], v["b"], v["clamp"], v["segmask"], v["member"], v["vals"])
        got = []
        for l in range(LANES):
            val, err = read_word(r[t], outs[l])
            worst = max(worst, err)
            got.append(val)
        gotp = [int(round(r[t, d])) for d in pouts]
        worst = max(worst, float(np.max(np.abs(r[t, pouts] - gotp))))
        assert (got, gotp) == (want, wantp), (v, [hex(x) for x in got], [hex(x) for x in want], gotp, wantp)
    assert worst < 0.01, worst
    assert kinds["all"] == 4096 and kinds["ref"] == len(REFERENCE_TABLE), kinds


def test_margins(circuit):
    plan, vs, res, *_ = circuit
    for layer in range(2):
        m = gate_margins(plan.layers[layer].mlp, res["mlp_in"][layer])
        assert m["min_margin_bits"] >= 0.4, (layer, m)
