"""Every CUDA integer atomic: the values returned and the word left are those of a serial order.

A GPU performs the atomics on one word one after another, in an order it picks. So the
tests here do not ask for the machine's order: :func:`serial_order` searches for any order
of the threads' operations in which each thread sees the old value it returned and the
word ends as it did, with each operation's new value from CUDA's definition
(``tests/support/oracles_atomics``). The conformance kernels (``examples/kernels/atomic_*``)
check order-independent results; these check the old values themselves, under contention
within a warp and between warps, in global and shared memory, under divergence, on the
one-slot machine, from PTX written by hand (``red``, scopes, a guarded ``atom``), and the
refusals.
"""

from __future__ import annotations

from functools import lru_cache

import pytest

from qwengpu_mlx.core.errors import FrontendError, UnsupportedError
from qwengpu_mlx.core.isa import Op
from qwengpu_mlx.core.machine import LARGE_MACHINE, ONE_SLOT_MACHINE, PUBLISHED_MACHINE, to_signed
from qwengpu_mlx.host.launch import bind, compile_kernel
from tests.support.cli import cu, needs_clang
from tests.support.launching import reference
from tests.support.oracles_atomics import cuda_cas, cuda_dec, cuda_inc
from tests.support.oracles_base import u32

pytestmark = needs_clang

STEP = {
    "atomicAdd": lambda old, b: u32(old + b),
    "atomicSub": lambda old, b: u32(old - b),
    "atomicExch": lambda old, b: u32(b),
    "atomicMin": lambda old, b: u32(min(to_signed(old), to_signed(b))),
    "atomicMax": lambda old, b: u32(max(to_signed(old), to_signed(b))),
    "atomicMin_u": lambda old, b: min(old, b),
    "atomicMax_u": lambda old, b: max(old, b),
    "atomicAnd": lambda old, b: u32(old & b),
    "atomicOr": lambda old, b: u32(old | b),
    "atomicXor": lambda old, b: u32(old ^ b),
    "atomicInc": lambda old, b: cuda_inc(old, b),
    "atomicDec": lambda old, b: cuda_dec(old, b),
}
"""The new value of a word from its old value and the operand (both unsigned 32-bit), per
CUDA function; ``_u``: the ``unsigned`` overload where it differs (min/max)."""


def serial_order(init: int, steps: list, olds: list[int], final: int) -> list[int] | None:
    """An order of the operations ``steps[t]`` (old -> new) in which operation ``t`` sees
    ``olds[t]`` and the word goes from ``init`` to ``final``; None when there is none."""
    olds = [u32(o) for o in olds]

    @lru_cache(maxsize=None)
    def go(word: int, left: frozenset) -> tuple | None:
        if not left:
            return () if word == u32(final) else None
        for t in sorted(left):
            if olds[t] == word:
                rest = go(steps[t](word), left - {t})
                if rest is not None:
                    return (t, *rest)
        return None

    found = go(u32(init), frozenset(range(len(steps))))
    return None if found is None else list(found)


def test_the_search_finds_an_order_and_refuses_an_impossible_one():
    inc = lambda old: cuda_inc(old, 2)  # noqa: E731
    assert serial_order(0, [inc] * 4, [1, 0, 0, 2], 1) == [1, 0, 3, 2]
    assert serial_order(0, [inc] * 4, [1, 1, 0, 2], 1) is None  # two threads cannot both see 1


CONTENDED = """\
__global__ void contended(TYPE* w, TYPE* arg, TYPE* old, int* skip) {
    int t = threadIdx.x;
    SHARED_SETUP
    if (t != skip[0] && t != skip[0] + 5) old[t] = CALL(WORD, arg[t]);
    SHARED_OUT
}
"""
SHARED_SETUP = "__shared__ TYPE s; if (t == 0) s = w[0]; __syncthreads();"
SHARED_OUT = "__syncthreads(); if (t == 0) w[0] = s;"


def _contended(tmp_path, call: str, unsigned: bool, shared: bool, init: int, args: list[int],
               skip: int = -1, machine=PUBLISHED_MACHINE):
    """(outputs, threads that ran the atomic) of ``old[t] = CALL(word, arg[t])`` on one word."""
    code = CONTENDED.replace("SHARED_SETUP", SHARED_SETUP if shared else "")
    code = code.replace("SHARED_OUT", SHARED_OUT if shared else "").replace("WORD", "&s" if shared else "&w[0]")
    code = code.replace("CALL", call).replace("TYPE", "unsigned" if unsigned else "int")
    n = len(args)
    r = reference(cu(tmp_path, code, "contended.cu"), block=n, machine=machine,
                  args={"w": [init], "arg": args, "old": [0] * n, "skip": [skip]})
    ran = [t for t in range(n) if t not in (skip, skip + 5)]
    return r.outputs, ran


def _check_serial(out: dict, call: str, init: int, args: list[int], ran: list[int], unsigned=False) -> list[int]:
    step = STEP.get(call + "_u", STEP[call]) if unsigned else STEP[call]
    steps = [lambda old, b=u32(args[t]): step(old, b) for t in ran]
    order = serial_order(init, steps, [out["old"][t] for t in ran], out["w"][0])
    assert order is not None, (call, out)
    return order


ARGS = [5, -3, 12, 7, 12, -20, 9, 1, 0, 33, -7, 2]  # 12 threads: three warps, repeats, signs
CASES = [("atomicMax", False, -4), ("atomicMin", False, 6), ("atomicMax", True, 7), ("atomicMin", True, 6),
         ("atomicExch", False, -1), ("atomicAnd", False, -1), ("atomicOr", True, 64), ("atomicXor", False, 3),
         ("atomicSub", False, 100), ("atomicAdd", True, 0)]


@pytest.mark.parametrize("call,unsigned,init", CASES, ids=[f"{c}{'_u' if u else ''}" for c, u, _ in CASES])
def test_old_values_follow_a_serial_order_in_global_memory(tmp_path, call, unsigned, init):
    out, ran = _contended(tmp_path, call, unsigned, False, init, ARGS)
    _check_serial(out, call, init, ARGS, ran, unsigned)


@pytest.mark.parametrize("call", ["atomicInc", "atomicDec"])
@pytest.mark.parametrize("shared", [False, True], ids=["global", "shared"])
def test_inc_and_dec_wrap_in_a_serial_order(tmp_path, call, shared):
    limits = [3, 3, 3, 3, 5, 5, 5, 5, 2, 2, 2, 2]  # a limit per thread: the order matters
    out, ran = _contended(tmp_path, call, True, shared, 1, limits)
    _check_serial(out, call, 1, limits, ran, True)


@pytest.mark.parametrize("call", ["atomicMax", "atomicExch", "atomicXor"])
def test_in_shared_memory_and_under_divergence(tmp_path, call):
    out, ran = _contended(tmp_path, call, False, True, 7, ARGS, skip=2)  # threads 2 and 7 skip it
    assert [out["old"][t] for t in (2, 7)] == [0, 0]
    _check_serial(out, call, 7, ARGS, ran)


@pytest.mark.parametrize("call", ["atomicMin", "atomicInc", "atomicExch"])
def test_on_the_one_slot_machine(tmp_path, call):
    args = [3, 1, 4, 1, 5, 9, 2, 6]
    out, ran = _contended(tmp_path, call, True, False, 2, args, machine=ONE_SLOT_MACHINE)
    _check_serial(out, call, 2, args, ran, True)


CAS_COUNTER = """\
__global__ void cas_counter(int* w, int* got, int* tries) {
    int t = threadIdx.x;
    int seen = w[0], n = 1;
    for (;;) {
        int old = atomicCAS(&w[0], seen, seen + 1);
        if (old == seen) break;
        seen = old;
        n++;
    }
    got[t] = seen;
    tries[t] = n;
}
"""


def test_cas_increments_hand_out_every_value_once(tmp_path):
    n = 12
    r = reference(cu(tmp_path, CAS_COUNTER, "cas.cu"), block=n,
                  args={"w": [40], "got": [0] * n, "tries": [0] * n})
    assert sorted(r.outputs["got"]) == list(range(40, 40 + n)) and r.outputs["w"] == [40 + n]
    steps = [lambda old, s=s: cuda_cas(old, s, s + 1) for s in r.outputs["got"]]
    assert serial_order(40, steps, r.outputs["got"], 40 + n) is not None
    assert all(k >= 1 for k in r.outputs["tries"]) and max(r.outputs["tries"]) > 1  # some retried


SCOPED = """\
__global__ void scoped(int* w, unsigned* u) {
    int t = threadIdx.x;
    atomicMax_block(&w[0], t);
    atomicOr_system(&w[1], 1 << t);
    atomicInc_block(&u[0], 100u);
    atomicCAS_system(&w[2], 0, t + 1);
}
"""


def test_scoped_forms_are_the_same_atomics(tmp_path):
    r = reference(cu(tmp_path, SCOPED, "scoped.cu"), block=8, args={"w": [-1, 0, 0], "u": [0]})
    assert r.outputs["w"][:2] == [7, 255] and 1 <= r.outputs["w"][2] <= 8 and r.outputs["u"] == [8]


def test_an_exchange_nobody_reads_is_one_store(tmp_path):
    code = "__global__ void swap(int* w) { atomicExch(&w[0], threadIdx.x); }\n"
    prog = bind(compile_kernel(cu(tmp_path, code, "swap.cu")), {"w": [0]}, block=8)
    ops = [i.op for b in prog.blocks for i in b.instrs]
    assert ops.count(Op.ST) == 1 and Op.LD not in ops


PTX_FORMS = """\
.version 7.0
.target sm_75
.address_size 64

.visible .entry forms(
\t.param .u64 forms_param_0,
\t.param .u64 forms_param_1
)
{
\t.reg .pred \t%p<2>;
\t.reg .b32 \t%r<8>;
\t.reg .b64 \t%rd<8>;
\t.shared .align 4 .b8 sh[4];

\tld.param.u64 \t%rd1, [forms_param_0];
\tld.param.u64 \t%rd2, [forms_param_1];
\tcvta.to.global.u64 \t%rd3, %rd1;
\tcvta.to.global.u64 \t%rd4, %rd2;
\tmov.u32 \t%r1, %tid.x;
\tmul.wide.u32 \t%rd5, %r1, 4;
\tadd.s64 \t%rd6, %rd4, %rd5;
\tred.global.max.s32 \t[%rd3], %r1;
\tred.relaxed.gpu.global.xor.b32 \t[%rd3+4], %r1;
\tatom.relaxed.gpu.global.inc.u32 \t%r2, [%rd3+8], 2;
\tst.global.u32 \t[%rd6], %r2;
\tsetp.ne.s32 \t%p1, %r1, 1;
\t@%p1 atom.exch.b32 \t%r3, [%rd1+12], %r1;
\t@%p1 st.global.u32 \t[%rd6+16], %r3;
\tst.shared.u32 \t[sh], 0;
\tbar.sync \t0;
\tatom.shared.cas.b32 \t%r4, [sh], 0, 7;
\tst.global.u32 \t[%rd6+32], %r4;
\tred.shared.add.u32 \t[sh], 1;
\tbar.sync \t0;
\tld.shared.u32 \t%r5, [sh];
\tst.global.u32 \t[%rd3+16], %r5;
\tret;
}
"""


def test_ptx_forms_red_scopes_generic_and_a_guarded_atom(tmp_path):
    path = tmp_path / "forms.ptx"
    path.write_text(PTX_FORMS)
    r = reference(path, block=4, args={"param_0": [-5, 6, 0, 9, 0], "param_1": [-1] * 12})
    w, out = r.outputs["param_0"], r.outputs["param_1"]
    assert w[:2] == [3, 6 ^ 0 ^ 1 ^ 2 ^ 3]
    assert serial_order(0, [lambda o: cuda_inc(o, 2)] * 4, out[0:4], w[2]) is not None
    exch = [0, 2, 3]  # lane 1's guard fails: it neither swaps nor stores
    assert out[5] == -1
    assert serial_order(9, [lambda o, t=t: t for t in exch], [out[4 + t] for t in exch], w[3]) is not None
    assert sorted(out[8:12]) == [0, 7, 7, 7] and w[4] == 7 + 4  # one CAS wins; then four adds


def _ptx_error(tmp_path, line: str) -> str:
    path = tmp_path / "bad.ptx"
    path.write_text(PTX_FORMS.replace("\tred.global.max.s32 \t[%rd3], %r1;", line))
    with pytest.raises(UnsupportedError) as e:
        bind(compile_kernel(path), {"param_0": [0] * 5, "param_1": [0] * 12}, block=4)
    return str(e.value)


@pytest.mark.parametrize("line,why", [
    ("\tatom.global.add.u64 \t%rd7, [%rd3], %rd5;", "32-bit words"),
    ("\tred.global.exch.b32 \t[%rd3], %r1;", "does not exist in PTX"),
    ("\tatom.global.inc.s32 \t%r6, [%rd3], 1;", ".u32 only"),
    ("\tatom.global.add.noftz.u32 \t%r6, [%rd3], 1;", "with .noftz is not supported"),
])
def test_ptx_atomics_the_machine_lacks_are_refused_with_the_reason(tmp_path, line, why):
    msg = _ptx_error(tmp_path, line)
    assert "PTX line" in msg and why in msg, msg


@pytest.mark.parametrize("call,why", [
    ("atomicAdd((unsigned long long*)p, 1ull)", "64-bit atomics are not supported"),
    ("atomicMax((long long*)p, 1ll)", "64-bit atomics are not supported"),
])
def test_wide_atomics_are_refused_at_the_users_line(tmp_path, call, why):
    code = f"__global__ void k(int* p) {{\n    {call};\n}}\n"
    with pytest.raises(FrontendError) as e:
        compile_kernel(cu(tmp_path, code, "wide.cu"))
    assert "wide.cu:2:" in str(e.value) and why in str(e.value)


TWO_D = """\
__global__ void grid2d(int* w, int* old) {
    int t = threadIdx.y * blockDim.x + threadIdx.x;
    old[t] = atomicMax(&w[threadIdx.y], threadIdx.x * 10 + threadIdx.y);
}
"""


def test_lanes_are_the_machines_in_a_two_dimensional_block(tmp_path):
    """The routine tells lanes apart by the machine's linear thread index, not by what a
    kernel reads as ``threadIdx.x`` (an 8x2 block: row y is threads 8y .. 8y+7)."""
    r = reference(cu(tmp_path, TWO_D, "grid2d.cu"), block=(8, 2), machine=LARGE_MACHINE,
                  args={"w": [0, 0], "old": [0] * 16})
    assert r.outputs["w"] == [70, 71]
    for y in (0, 1):
        steps = [lambda o, v=x * 10 + y: max(o, v) for x in range(8)]
        assert serial_order(0, steps, r.outputs["old"][8 * y: 8 * y + 8], 70 + y) is not None


ALIASED = """\
.version 7.0
.target sm_75
.address_size 64

.visible .entry alias(
\t.param .u64 alias_param_0,
\t.param .u64 alias_param_1
)
{
\t.reg .b32 \t%r<4>;
\t.reg .b64 \t%rd<6>;

\tld.param.u64 \t%rd1, [alias_param_0];
\tld.param.u64 \t%rd2, [alias_param_1];
\tmov.u32 \t%r1, %tid.x;
\tmul.wide.u32 \t%rd3, %r1, 4;
\tadd.s64 \t%rd4, %rd2, %rd3;
\tadd.u32 \t%r2, %r1, 10;
\tatom.global.exch.b32 \t%r2, [%rd1], %r2;
\tst.global.u32 \t[%rd4], %r2;
\tret;
}
"""


def test_a_destination_that_is_also_the_operand(tmp_path):
    """``atom.exch %r2, [a], %r2``: each thread swaps in its own value, not what an earlier round loaded."""
    path = tmp_path / "alias.ptx"
    path.write_text(ALIASED)
    r = reference(path, block=8, args={"param_0": [-1], "param_1": [0] * 8})
    olds, final = r.outputs["param_1"], r.outputs["param_0"][0]
    assert serial_order(-1, [lambda o, v=t + 10: v for t in range(8)], olds, final) is not None
    assert sorted(olds + [final]) == [-1] + list(range(10, 18))


@pytest.mark.parametrize("call", ["atomicAdd(p, 0)", "atomicOr(p, 0)", "atomicAnd(p, -1)", "atomicMax(p, -2147483648)",
                                  "atomicMin((unsigned*)p, 0xffffffffu)"])
def test_an_atomic_that_changes_nothing_is_a_load(tmp_path, call):
    """clang writes ``atomicAdd(p, 0)`` as ``atom.or [p], 0``: a read, run as one load."""
    code = f"__global__ void peek(int* p, int* out) {{\n    out[threadIdx.x] = {call};\n}}\n"
    ck = compile_kernel(cu(tmp_path, code, "peek.cu"))
    prog = bind(ck, {"p": [-7], "out": [0] * 4}, block=4)
    ops = [i.op for b in prog.blocks for i in b.instrs]
    assert ops.count(Op.LD) == 1 and ops.count(Op.ST) == 1 and len(prog.blocks) == 1
    assert reference(cu(tmp_path, code, "peek2.cu"), args={"p": [-7], "out": [0] * 4}, block=4).outputs == \
        {"p": [-7], "out": [-7] * 4}
