"""Float routines shared by their call sites (``host/float_routines.py``).

A kernel whose inlined float routines do not fit the ROM is lowered again with one copy
of a routine called from every use. The examples that need it (``float_variance``,
``float_ratios``, ``float_normalise``) run on the reference against their exact oracles
(``tests/support/oracles_float``, written with ``fractions``); here: that they needed
sharing, that lanes of a warp calling from different sites (and under a branch, and
before a barrier) each return to their own site without the return dispatch ever
diverging, and that add, sub and mul computed by the fma routine are the add and the
multiply bit for bit, the special operands included.
"""

from __future__ import annotations

import json
import random
import struct
from fractions import Fraction
from pathlib import Path

import pytest

from qwengpu_mlx.core.errors import ResourceError, RomError
from qwengpu_mlx.core.isa import TermKind
from qwengpu_mlx.core.machine import LARGE_MACHINE, MACHINES
from qwengpu_mlx.core.readout import read_outputs
from qwengpu_mlx.host import float_routines, lowering, translate
from qwengpu_mlx.host.float_routines import BODIES, NEGATIVE_ZERO, ONE, RoutineCalls, Sharing, sharing_levels
from qwengpu_mlx.host.ir import VReg
from qwengpu_mlx.host.launch import bind, compile_kernel
from qwengpu_mlx.runtime.check import reference_run
from tests.support import oracles_float as f32
from tests.support.cli import needs_clang
from tests.support.float_routines import emitter, run
from tests.support.oracles import ORACLES

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "kernels"
SHARING = ("float_variance", "float_ratios", "float_normalise", "float_add3")

EDGES = [0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x00000001, 0x807FFFFF, 0x00800000, 0x3F800000,
         0xBF800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x33800000, 0x4B800001, 0xCB000000]


def _machine(spec: dict):
    """The machine a launch file names; the published one where it names none: those files
    (``float_add3``, ``float_mean``) were written for its 32-block ROM, where the question
    whether the inlined routines fit is asked, whichever machine is the default."""
    return MACHINES[spec.get("machine", "published")]


def _lowered(name: str, monkeypatch=None, sharing: Sharing | None = None):
    """(launch file, program) of an example; ``sharing``: every translation shares that."""
    if sharing is not None:
        real = translate.Translator
        monkeypatch.setattr(lowering, "Translator", lambda k, s, p: real(k, s, p, sharing))
    spec = json.loads((EXAMPLES / f"{name}.json").read_text())
    ck = compile_kernel(EXAMPLES / f"{name}.cu", spec["kernel"])
    prog = bind(ck, spec["args"], block=spec["block"], grid=spec["grid"], machine=_machine(spec))
    return spec, prog


def _routines(prog) -> list[str]:
    return [b.label for b in prog.blocks if (b.label or "").startswith("$froutine_")]


def _dispatch_blocks(prog) -> set[int]:
    """Blocks that branch to a call's continuation: a routine's return."""
    called = {b.index for b in prog.blocks if (b.label or "").startswith("$fcalled_")}
    return {b.index for b in prog.blocks if b.term.kind is TermKind.BRANCH
            and {b.term.target, b.term.fallthrough} & called}


@needs_clang
def test_a_kernel_that_fits_inlined_calls_no_routine():
    _, prog = _lowered("float_mean")
    assert _routines(prog) == []


@needs_clang
@pytest.mark.parametrize("name", SHARING)
def test_inlined_the_kernel_does_not_fit(name, monkeypatch):
    monkeypatch.setattr(translate.Translator, "shared_variants", lambda self: [])
    with pytest.raises(ResourceError, match="machine blocks"):
        _lowered(name)


@needs_clang
@pytest.mark.parametrize("name", SHARING)
def test_each_lane_returns_to_its_own_call_site(name):
    """Exact results, and no divergence at a routine's return: lanes enter a routine
    together only from one site (the branches before reconverge at their own joins)."""
    spec, prog = _lowered(name)
    m = _machine(spec)
    assert _routines(prog) and len(prog.blocks) <= m.rom_blocks
    ref = reference_run(prog, m, budget=m.step_budget)
    assert ref.fault is None
    assert read_outputs(prog, ref.memory) == ORACLES[name](spec)
    returns = _dispatch_blocks(prog)
    assert returns
    assert not [r.block for r in ref.trace if r.event == "diverge" and r.block in returns]
    if name == "float_ratios":  # odd and even lanes of the warp call from two sites
        assert any(r.event == "diverge" for r in ref.trace)


@needs_clang
def test_the_variance_shares_the_add_and_the_division_and_keeps_the_fma_inline():
    _, prog = _lowered("float_variance")
    kinds = {label.split("_")[1] for label in _routines(prog)}
    assert kinds == {"add", "div"}


def _decimals(patterns: list[int]) -> list:
    """Float arguments as the launch takes them: each pattern's exact value, or "inf"/"-inf"."""
    out = []
    for b in patterns:
        v = float(struct.unpack("<f", struct.pack("<I", b))[0])
        out.append(("-inf" if b >> 31 else "inf") if v in (float("inf"), float("-inf")) else v)
    return out


def _through_fma(op: str, a: int, b: int) -> int:
    """``op`` (add, sub, mul) as the shared fma routine computes it: the call site's
    arguments (``float_routines._canonical``) run through the fma routine's body."""
    em = emitter()
    kind, args, pre = float_routines._canonical(op, [VReg("a"), VReg("b")], True, em)
    assert kind == "fma"
    items = pre + BODIES["fma"](em, "d", *args)
    return run(items, {"a": a, "b": b}).regs["d"]


def test_add_sub_and_mul_through_the_fma_are_the_add_sub_and_mul():
    rng = random.Random(36)
    pairs = [(a, b) for a in EDGES for b in EDGES[::2]]
    pairs += [(rng.getrandbits(32), rng.getrandbits(32)) for _ in range(60)]
    pairs += [(a, a ^ 0x80000000 ^ rng.choice([0, 1])) for a in (rng.getrandbits(32) for _ in range(20))]
    bad = []
    for a, b in pairs:
        for op, want in (("add", f32.add(a, b)), ("sub", f32.add(a, b ^ f32.SIGN)), ("mul", f32.mul(a, b))):
            if _through_fma(op, a, b) != want:
                bad.append((op, hex(a), hex(b)))
    assert not bad, bad[:5]
    assert (ONE, NEGATIVE_ZERO) == (0x3F800000, 0x80000000)


def test_the_sharing_levels_least_first():
    calls = RoutineCalls()
    for op, items in (("div", 90), ("div", 90), ("add", 50), ("sub", 50), ("fma", 140), ("mul", 60)):
        calls.emit(op, [], "d", None, emitter(), lambda n=items: [None] * n)
    levels = sharing_levels(calls)
    assert [sorted(s.kinds) for s in levels] == [["div"], ["add", "div"], ["div", "fma"], ["div", "fma"], ["fma"]]
    assert [s.through_fma for s in levels] == [False, False, True, True, True]
    assert [s.spill for s in levels] == [False, False, False, True, True]  # the deepest again, saving across calls
    assert [s.compact for s in levels] == [False] * 4 + [True]  # and the division an entry of the fma routine
    assert dict(levels[2].sites)["fma"] == 4 and dict(levels[0].sites)["add"] == 2


@needs_clang
def test_the_fused_sharing_through_the_lowering(monkeypatch, tmp_path):
    """add, sub and mul as calls of one fma routine, forced, on special operands per lane."""
    src = tmp_path / "fused.cu"
    src.write_text("""
__global__ void fused(const float* a, const float* b, const float* c, float* out) {
    int i = threadIdx.x;
    float x = a[i], y = b[i];
    out[4 * i] = x + y;
    out[4 * i + 1] = x - y;
    out[4 * i + 2] = x * y;
    out[4 * i + 3] = fmaf(x, y, c[i]);
}
""")
    a = [0x80000000, 0x7F800000, 0x00000001, 0x3F800001]
    b = [0x80000000, 0xFF800000, 0x80000001, 0xBF800000]
    c = [0x00000000, 0x3F800000, 0x00000001, 0x3F800001]
    sharing = Sharing(frozenset({"fma"}), through_fma=True)
    real = translate.Translator
    monkeypatch.setattr(lowering, "Translator", lambda k, s, p: real(k, s, p, sharing))
    args = {"a": _decimals(a), "b": _decimals(b), "c": _decimals(c), "out": [0] * 16}
    prog = bind(compile_kernel(src, "fused"), args, block=4, grid=1, machine=LARGE_MACHINE)
    assert {label.split("_")[1] for label in _routines(prog)} == {"fma"}
    ref = reference_run(prog, LARGE_MACHINE, budget=LARGE_MACHINE.step_budget)
    want = []
    for x, y, z in zip(a, b, c):
        want += [f32.add(x, y), f32.add(x, y ^ f32.SIGN), f32.mul(x, y), f32.fma(x, y, z)]
    assert read_outputs(prog, ref.memory)["out"] == f32.words(want)


@needs_clang
def test_a_float_atomic_add_calls_the_shared_add(tmp_path):
    """The atomic's rounds (one per lane, ``translate_atomics._serialised``) call the add
    the kernel's other adds call: the sum in the machine's serial order, lanes ascending."""
    src = tmp_path / "atomic.cu"
    src.write_text("""
__global__ void atomic(const float* x, float* sum, float* out) {
    int i = threadIdx.x;
    float v = x[i] / 3.0f + x[i] / 7.0f;
    out[i] = v - 1.0f;
    atomicAdd(sum, v);
}
""")
    xs = [1.0, 2.0, 1e-3, -4.5]
    prog = bind(compile_kernel(src, "atomic"), {"x": xs, "sum": [0.5], "out": [0.0] * 4}, block=4, grid=1,
                machine=LARGE_MACHINE)
    assert {label.split("_")[1] for label in _routines(prog)} == {"add"}
    ref = reference_run(prog, LARGE_MACHINE, budget=LARGE_MACHINE.step_budget)
    x = [f32.to_binary32(Fraction(v)) for v in xs]
    three, seven, one = (f32.to_binary32(Fraction(n)) for n in (3, 7, 1))
    v = [f32.add(f32.div(a, three), f32.div(a, seven)) for a in x]
    word = f32.to_binary32(Fraction(1, 2))
    for a in v:
        word = f32.flushed(f32.add(f32.flushed(word), f32.flushed(a)))
    got = read_outputs(prog, ref.memory)
    assert got["out"] == f32.words([f32.add(a, one ^ f32.SIGN) for a in v])
    assert got["sum"] == f32.words([word])


@needs_clang
def test_lanes_that_leave_a_loop_of_calls_at_different_trips(tmp_path):
    """Thread t adds x[0..t] (its own trip count) through the shared add, then divides: the
    lanes still looping call the routine while the others wait at the loop's exit."""
    src = tmp_path / "prefix_means.cu"
    src.write_text("""
__global__ void prefix_means(const float* x, float* out) {
    int t = threadIdx.x;
    float s = 0.0f;
#pragma unroll 1
    for (int k = 0; k <= t; k++) s += x[k];
    out[t] = s / (t + 1.0f) + x[t] / 3.0f;
}
""")
    xs = [1.0, 0.1, 2.5, -3.0, 1e-3, 7.0, 0.3, -0.7]
    prog = bind(compile_kernel(src, "prefix_means"), {"x": xs, "out": [0.0] * 8}, block=8, grid=1,
                machine=LARGE_MACHINE)
    assert _routines(prog)
    ref = reference_run(prog, LARGE_MACHINE, budget=LARGE_MACHINE.step_budget)
    x = [f32.to_binary32(Fraction(v)) for v in xs]
    want = []
    for t in range(8):
        s = 0
        for k in range(t + 1):
            s = f32.add(s, x[k])
        count = f32.add(f32.to_binary32(Fraction(t)), f32.to_binary32(Fraction(1)))
        want.append(f32.add(f32.div(s, count), f32.div(x[t], f32.to_binary32(Fraction(3)))))
    assert read_outputs(prog, ref.memory)["out"] == f32.words(want)
    returns = _dispatch_blocks(prog)
    assert not [r.block for r in ref.trace if r.event == "diverge" and r.block in returns]


UNROLLED_CHAIN = """
__global__ void chain(const float* x, float* out) {
    float s = x[threadIdx.x];
#pragma unroll
    for (int k = 0; k < 64; k++) s = s / x[k] + sqrtf(x[k + 64] * s);
    out[threadIdx.x] = s;
}
"""

SQUARE_THEN_KERNEL = """
__device__ float sq(float v) { return v * v + 1.0f; }
__global__ void many(const float* x, const int* i, float* out, int* r) {
    int t = threadIdx.x;
    float a = x[t], b = x[t + 4], c = x[t + 8];
    out[t] = a / b + sqrtf(c) * fmaf(a, b, c) - (float)i[t] + sq(a) * sq(b);
    r[t] = (int)(a * c) + (int)rintf(b) + (int)floorf(c / a);
}
"""


def _refusal(tmp_path, source: str, kernel: str, args: dict) -> str:
    src = tmp_path / f"{kernel}.cu"
    src.write_text(source)
    with pytest.raises(ResourceError) as e:
        bind(compile_kernel(src, kernel), args, block=4, grid=1, machine=LARGE_MACHINE)
    return str(e.value)


@needs_clang
def test_the_refusal_names_the_loop_clang_unrolled(tmp_path):
    """A fully unrolled loop of divisions still overflows the ROM with its routines
    shared (each copy is a call): the refusal names the copied operation's line."""
    text = _refusal(tmp_path, UNROLLED_CHAIN, "chain", {"x": [1.5] * 128, "out": [0.0] * 4})
    assert "still does not fit" in text
    assert "clang emitted line 5's float `" in text and "64 times" in text and "#pragma unroll 1" in text


@needs_clang
def test_the_refusal_mentions_unrolling_only_where_clang_unrolled(tmp_path):
    """No loop, and a __device__ function called twice (its copies share one .loc, not a
    loop's): the refusal lists the float operations and says nothing of unrolling."""
    text = _refusal(tmp_path, SQUARE_THEN_KERNEL, "many",
                    {"x": [float(v) for v in range(1, 13)], "i": [1, 2, 3, 4], "out": [0.0] * 4, "r": [0] * 4})
    assert "still does not fit" in text and "unroll" not in text
    assert "its float operations (" in text and "div x2" in text and "sqrt" in text


def test_a_register_refusal_after_sharing_keeps_the_rom_one():
    """Inlined and first shared tries over the ROM, the last short of predicates: the
    refusal gives the ROM's and then the registers' reason, and the way left."""
    rom = "kernel `k` needs {} machine blocks (352 instructions) but the program ROM holds 128 blocks of 3"
    preds = "kernel `k` needs more than 8 predicate registers per lane (10 live at once near k.cu:5: PTX line 49)"
    kernel = type("Kernel", (), {"body": []})()
    text = str(float_routines.refusal_after_sharing(
        [RomError(rom.format(198)), RomError(rom.format(138)), ResourceError(preds)], kernel))
    assert text.startswith(rom.format(138))
    assert "shared (one copy each, called from every use) it does not fit either: " + preds in text
    assert "split the work over two kernels" in text and "unroll" not in text
    assert str(float_routines.refusal_after_sharing([ResourceError(preds)], kernel)) == preds
