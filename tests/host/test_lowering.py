"""PTX -> machine blocks: register allocation, loops, address folding, divergence, memory.

Kernels are written inline, compiled by clang with the prelude, lowered and run on the
reference interpreter. Expected outputs are computed here in plain Python from what
each kernel means (32-bit wrap-around where it matters), never from the interpreter.
"""

from __future__ import annotations

import re

import pytest

from qwengpu_mlx.core.errors import FrontendError, QwenGpuError
from qwengpu_mlx.host.frontend import find_nvcc, select_kernel
from qwengpu_mlx.host.launch import CompiledKernel, bind, compile_kernel
from tests.support.launching import reference, run_reference
from qwengpu_mlx.host.ptx_parser import parse_ptx
from qwengpu_mlx.host.signature import KernelParam, ptx_param_name
from qwengpu_mlx.core.isa import Reg, Op, TermKind
from qwengpu_mlx.core.machine import PUBLISHED_MACHINE


from tests.support.cli import cli, cu, have_clang, needs_clang


def _have_nvcc() -> bool:
    try:
        find_nvcc()
        return True
    except FrontendError:
        return False


needs_nvcc = pytest.mark.skipif(not (have_clang() and _have_nvcc()), reason="nvcc (and clang) needed")

M32 = 0xFFFFFFFF


def s32(x: int) -> int:
    x &= M32
    return x - (1 << 32) if x >> 31 else x


# --------------------------------------------------------------------------- helpers


def cli_ok(*argv) -> str:
    proc = cli(*argv)
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    return proc.stdout


def run_cu(tmp_path, code, args, *, block=4, grid=1, frontend="clang", name="kernel.cu"):
    return reference(cu(tmp_path, code, name), args=args, block=block, grid=grid, frontend=frontend)


def ptx_kernel(text: str) -> CompiledKernel:
    """Hand-written (or saved) PTX: parsed, parameters named ``param_N``."""
    module = parse_ptx(text)
    k = select_kernel(module, None)
    params = [KernelParam(ptx_param_name(p.name), p.type in ("u64", "b64", "s64"), p.type) for p in k.params]
    return CompiledKernel(None, text, module, k, params)


def blocks_of(listing: str) -> dict[int, str]:
    """``B3 (LBB0_2):\\n    ...`` -> {3: "B3 (LBB0_2):\\n    ..."}"""
    out = {}
    for m in re.finditer(r"^B(\d+)\b.*?(?=^B\d+\b|\Z)", listing, re.M | re.S):
        out[int(m.group(1))] = m.group(0)
    return out


# --------------------------------------------------------------------------- register allocation


def _live_values_kernel(name: str, n: int) -> str:
    """n values loaded before a barrier, all needed after it: n values live at once."""
    body = "".join(f"  int v{i} = a[{i}];\n" for i in range(n))
    body += "  a[0] = 0;\n  __syncthreads();\n"
    body += "".join(f"  a[{i}] = v{i} * v{(i + 1) % n} + {i};\n" for i in range(n))
    return f"__global__ void {name}(int *a) {{\n{body}}}\n"


def _live_values_expected(vals: list[int]) -> list[int]:
    n = len(vals)
    return [s32(vals[i] * vals[(i + 1) % n] + i) for i in range(n)]


@needs_clang
@pytest.mark.parametrize("n", [12, 14])
def test_values_live_across_a_barrier_keep_their_registers(tmp_path, n):
    vals = [(-1) ** i * (37 * i + 5) for i in range(n)]
    res = run_cu(tmp_path, _live_values_kernel("live", n), {"a": vals}, block=1)
    assert res.outputs["a"] == _live_values_expected(vals)
    assert res.program.regs_used <= PUBLISHED_MACHINE.usable_regs
    assert res.program.regs_used >= n  # every value has a register of its own
    for b in res.program.blocks:
        for ins in b.instrs:
            for s in ins.srcs:
                assert getattr(s, "index", 1) <= PUBLISHED_MACHINE.usable_regs
    if n == 14:  # 14 values + an address: the last usable register is used
        assert res.program.regs_used == PUBLISHED_MACHINE.usable_regs


@needs_clang
def test_many_accumulators_in_a_loop_with_per_lane_trip_counts(tmp_path):
    code = """\
__global__ void acc(int *a, int n) {
  int t = threadIdx.x;
  int s0 = 0, s1 = 1, s2 = 2, s3 = 3, s4 = 4, s5 = 5, s6 = 6, s7 = 7, s8 = 8;
  #pragma unroll 1
  for (int i = 0; i < n + t; i++) {
    int v = a[i & 7];
    s0 += v; s1 ^= v + i; s2 += s1; s3 = s3 * 3 + v; s4 -= s0;
    s5 += s3 & 15; s6 = max(s6, v - i); s7 += i; s8 ^= s2;
  }
  a[8 + t] = s0 + 2 * s1 + 3 * s2 + 5 * s3 + 7 * s4 + 11 * s5 + 13 * s6 + 17 * s7 + 19 * s8;
}
"""
    data = [3, -1, 4, 1, -5, 9, 2, -6]

    def expected(n, t):
        s = [0, 1, 2, 3, 4, 5, 6, 7, 8]
        for i in range(n + t):
            v = data[i & 7]
            s[0] += v
            s[1] ^= v + i
            s[2] += s[1]
            s[3] = s[3] * 3 + v
            s[4] -= s[0]
            s[5] += s[3] & 15
            s[6] = max(s[6], v - i)
            s[7] += i
            s[8] ^= s[2]
            s = [s32(x) for x in s]
        w = [1, 2, 3, 5, 7, 11, 13, 17, 19]
        return s32(sum(c * x for c, x in zip(w, s)))

    res = run_cu(tmp_path, code, {"a": data + [0] * 4, "n": 5})
    assert res.outputs["a"] == data + [expected(5, t) for t in range(4)]
    assert res.program.regs_used > 9


# --------------------------------------------------------------------------- loops


FIB = """\
__global__ void fib(int *out, int n) {
  int a = 0, b = 1;
  for (int i = 0; i < n + (int)threadIdx.x; i++) { int t = a + b; a = b; b = t; }
  out[threadIdx.x] = a;
}
"""


def _fib(k: int) -> int:
    a, b = 0, 1
    for _ in range(k):
        a, b = b, s32(a + b)
    return a


@needs_clang
@pytest.mark.parametrize("n", [0, 1, 5, 20, 45])
def test_fib_swap_in_a_loop(tmp_path, n):
    res = run_cu(tmp_path, FIB, {"out": [0] * 8, "n": n}, block=8)
    assert res.outputs["out"] == [_fib(n + t) for t in range(8)]


@needs_clang
def test_fib_listing_has_a_loop_back_edge(tmp_path):
    listing = cli_ok("compile", cu(tmp_path, FIB))
    back = [(int(m.group(1)), int(m.group(2)), int(m.group(3)))
            for m in re.finditer(r"^B(\d+)\b[^\n]*\n(?:    [^\n]*\n)*?    branch @!?p\d+ B(\d+) else B(\d+)",
                                 listing, re.M)]
    assert any(t <= b or f <= b for b, t, f in back), listing


@needs_clang
def test_loop_with_break_and_continue(tmp_path):
    code = """\
__global__ void brk(int *a, int *out) {
  int t = threadIdx.x;
  int s = 0;
  #pragma unroll 1
  for (int i = 0; i < 8; i++) {
    int v = a[(t + i) & 7];
    if (v < 0) break;
    if (v & 1) continue;
    s += v;
  }
  out[t] = s;
}
"""
    data = [2, 3, 4, -1, 6, 8, 10, 12]

    def expected(t):
        s = 0
        for i in range(8):
            v = data[(t + i) & 7]
            if v < 0:
                break
            if v & 1:
                continue
            s += v
        return s

    res = run_cu(tmp_path, code, {"a": data, "out": [0] * 8}, block=8)
    assert res.outputs["out"] == [expected(t) for t in range(8)]


# --------------------------------------------------------------------------- addresses


OFFSETS = """\
__global__ void off(int *a, int *b) {
  int t = threadIdx.x;
  b[t] = a[t + 1] + a[t + 2] * 3;
}
"""


@needs_clang
def test_address_offsets_fold_into_memory_operands(tmp_path):
    path = cu(tmp_path, OFFSETS)
    listing = cli_ok("compile", path, "--arg", "a=1,2,3,4,5,6", "--arg", "b=0,0,0,0", "--emit", "blocks")
    # a starts at word 0, b at word 6 (byte 24): a[t+1] is [r+4], a[t+2] is [r+8], b[t] is [r+24]
    assert re.search(r"ld\.global r\d+, \[(r\d+|%tid\.x\*4)\+4\]", listing), listing
    assert re.search(r"ld\.global r\d+, \[(r\d+|%tid\.x\*4)\+8\]", listing), listing
    assert re.search(r"st\.global \[(r\d+|%tid\.x\*4)\+24\], r\d+", listing), listing
    # no separate add of the constant offsets is left
    assert not re.search(r"add r\d+, r\d+, (4|8|24)\b", listing), listing
    a = [1, 2, 3, 4, 5, 6]
    out = cli_ok("run", path, "--arg", "a=" + ",".join(map(str, a)), "--arg", "b=0,0,0,0", "--json")
    b = [a[t + 1] + 3 * a[t + 2] for t in range(4)]
    assert f'"b": {b}' in out


@needs_clang
def test_overlapping_reads_and_writes_in_one_warp(tmp_path):
    code = """\
__global__ void neg(int *a) {
  int t = threadIdx.x + 1;
  a[t - 1] = a[t] - a[t + 2] + (a[t + 1] << 3) - (a[t + 1] >> 1);
}
"""
    a = [1, -2, 3, 40, -5, 6, 7]
    res = run_cu(tmp_path, code, {"a": a})
    # one warp: every lane loads before any lane stores
    exp = list(a)
    for t in range(1, 5):
        exp[t - 1] = s32(a[t] - a[t + 2] + (a[t + 1] << 3) - (a[t + 1] >> 1))
    assert res.outputs["a"] == exp


# --------------------------------------------------------------------------- return, barriers


PRET = """\
__global__ void pret(int *a, int n) {
  __shared__ int s[16];
  int t = threadIdx.x;
  if (t >= n) return;
  s[t] = a[t] * 2;
  __syncthreads();
  a[t] = s[n - 1 - t];
}
"""


@needs_clang
@pytest.mark.parametrize("block, n", [(4, 3), (8, 5), (8, 3), (16, 16), (4, 0)])
def test_return_before_a_barrier(tmp_path, block, n):
    a = [3 * i + 1 for i in range(block)]
    res = run_cu(tmp_path, PRET, {"a": a, "n": n}, block=block)
    exp = [2 * a[n - 1 - t] if t < n else a[t] for t in range(block)]
    assert res.outputs["a"] == exp


@needs_clang
def test_data_dependent_return_before_a_barrier(tmp_path):
    code = """\
__global__ void ret2(int *a, int n) {
  __shared__ int s[16];
  int t = threadIdx.x;
  if (a[t] == 0) return;
  s[t] = a[t] + n;
  __syncthreads();
  a[t] = s[t] * 2;
}
"""
    a = [1, 0, 3, 0, 0, 0, 0, 9]
    res = run_cu(tmp_path, code, {"a": a, "n": 10}, block=8)
    assert res.outputs["a"] == [2 * (v + 10) if v else 0 for v in a]


HAND_PTX = """\
.version 7.0
.target sm_75
.address_size 64

.visible .entry hand(
	.param .u64 hand_param_0,
	.param .u32 hand_param_1
)
{
	.reg .pred 	%p<5>;
	.reg .b32 	%r<10>;
	.reg .b64 	%rd<8>;
	.shared .align 4 .b8 buf[64];

	ld.param.u64 	%rd1, [hand_param_0];
	ld.param.u32 	%r1, [hand_param_1];
	cvta.to.global.u64 	%rd2, %rd1;
	mov.u32 	%r2, %tid.x;
	setp.ge.s32 	%p1, %r2, %r1;
	@%p1 ret;
	mov.pred 	%p2, 1;
	mov.pred 	%p3, 0;
	mul.wide.s32 	%rd3, %r2, 4;
	add.s64 	%rd4, %rd2, %rd3;
	ld.global.u32 	%r3, [%rd4];
	mov.u64 	%rd5, buf;
	add.s64 	%rd6, %rd5, %rd3;
	st.shared.u32 	[%rd6], %r3;
	bar.sync 	0;
	sub.s32 	%r4, %r1, 1;
	sub.s32 	%r5, %r4, %r2;
	mul.wide.s32 	%rd7, %r5, 4;
	add.s64 	%rd6, %rd5, %rd7;
	ld.shared.u32 	%r6, [%rd6];
	selp.b32 	%r7, 100, 200, %p2;
	selp.b32 	%r8, 1000, 2000, %p3;
	add.s32 	%r6, %r6, %r7;
	add.s32 	%r6, %r6, %r8;
	@%p3 mov.u32 	%r6, 7;
	st.global.u32 	[%rd4], %r6;
	@%p2 st.global.u32 	[%rd4+16], %r2;
	ret;
}
"""


@pytest.mark.parametrize("block, n", [(4, 3), (4, 4), (4, 0)])
def test_predicated_ret_before_barrier_and_constant_predicates(block, n):
    ck = ptx_kernel(HAND_PTX)
    a = [1, 2, 3, 4, -1, -1, -1, -1]
    prog = bind(ck, {"param_0": a, "param_1": n}, block=block, machine=PUBLISHED_MACHINE)
    # `@%p1 ret` is a branch to an exit block that reconverges only at exit
    branches = [b for b in prog.blocks if b.term.kind is TermKind.BRANCH]
    assert branches and branches[0].term.reconv is None
    exit_block = prog.blocks[branches[0].term.target]
    assert exit_block.term.kind is TermKind.EXIT and not exit_block.instrs
    # mov.pred with a constant became a compare of constants
    assert any(i.op is Op.SETP and all(getattr(s, "value", None) == 0 or s == Reg(0) for s in i.srcs)
               for b in prog.blocks for i in b.instrs)
    res = run_reference(prog)
    exp = list(a)
    for t in range(min(n, block)):
        exp[t] = a[n - 1 - t] + 100 + 2000  # p2 true: 100; p3 false: 2000, and no `mov 7`
        exp[4 + t] = t  # the store guarded by the true constant predicate happened
    assert res.outputs["param_0"] == exp


# --------------------------------------------------------------------------- conversions


SUBWORD = """\
__global__ void sub(int *a) {
  int t = threadIdx.x;
  int x = a[t];
  a[t] = (int)(signed char)x;
  a[t + 4] = (int)(unsigned char)x;
  a[t + 8] = (int)(short)x;
  a[t + 12] = (int)(unsigned short)x;
}
"""


def _sext(x: int, bits: int) -> int:
    x &= (1 << bits) - 1
    return x - (1 << bits) if x >> (bits - 1) else x


@needs_clang
def test_subword_sign_and_zero_extension(tmp_path):
    xs = [0x1FF, 0x80, -1, 0x12345678]
    res = run_cu(tmp_path, SUBWORD, {"a": xs + [0] * 12})
    exp = ([_sext(x, 8) for x in xs] + [x & 0xFF for x in xs]
           + [_sext(x, 16) for x in xs] + [x & 0xFFFF for x in xs])
    assert res.outputs["a"] == exp


SUBWORD_PARAMS = """\
__global__ void sp(int *a, short s, unsigned char c, signed char d) {
  a[0] = s; a[1] = c; a[2] = d; a[3] = s + c * d;
}
"""


@needs_clang
def test_subword_scalar_parameters_in_range(tmp_path):
    res = run_cu(tmp_path, SUBWORD_PARAMS, {"a": [0] * 4, "s": -3, "c": 200, "d": -2})
    assert res.outputs["a"] == [-3, 200, -2, -3 + 200 * -2]


@needs_clang
def test_subword_scalar_parameters_out_of_range(tmp_path):
    try:
        res = run_cu(tmp_path, SUBWORD_PARAMS, {"a": [0] * 4, "s": 70000, "c": 300, "d": 200})
    except QwenGpuError as e:  # refusing the value is fine too, if it names the parameter
        assert re.search(r"\bs\b", str(e))
        return
    s, c, d = _sext(70000, 16), 300 & 0xFF, _sext(200, 8)  # what CUDA passes: 4464, 44, -56
    assert res.outputs["a"] == [s, c, d, s + c * d]


CVT_PTX = """\
.version 7.0
.target sm_75
.address_size 64

.visible .entry cvtk(
	.param .u64 cvtk_param_0
)
{
	.reg .b16 	%rs<4>;
	.reg .b32 	%r<4>;
	.reg .b64 	%rd<3>;

	ld.param.u64 	%rd1, [cvtk_param_0];
	cvta.to.global.u64 	%rd2, %rd1;
	ld.global.u32 	%r1, [%rd2];
	cvt.u16.u32 	%rs1, %r1;
	cvt.u8.u16 	%rs2, %rs1;
	cvt.u32.u16 	%r2, %rs2;
	st.global.u32 	[%rd2+4], %r2;
	cvt.s8.s16 	%rs3, %rs1;
	cvt.s32.s16 	%r3, %rs3;
	st.global.u32 	[%rd2+8], %r3;
	ret;
}
"""


def test_narrowing_cvt_between_subword_types():
    x = 0x12F0
    res = run_reference(bind(ptx_kernel(CVT_PTX), {"param_0": [x, 0, 0]}, block=1, machine=PUBLISHED_MACHINE))
    assert res.outputs["param_0"] == [x, x & 0xFF, _sext(x, 8)]  # [4848, 240, -16]


# --------------------------------------------------------------------------- divergence


NEST = """\
__global__ void nest2(int *a, int *b) {
  int t = threadIdx.x;
  if (t < 2) {
    if (t == 0) { b[0] = a[0] * 3; } else { b[1] = a[1] + 7; }
    a[t + 4] = b[t] * 2;
  } else {
    if (t == 2) { b[2] = a[2] - 5; } else { b[3] = a[3] ^ 6; }
    a[t + 4] = b[t] * 5;
  }
  a[t] = b[t] + 100;
}
"""


def _nest_expected(a):
    b = [a[0] * 3, a[1] + 7, a[2] - 5, a[3] ^ 6]
    out = list(a)
    for t in range(4):
        out[t + 4] = b[t] * (2 if t < 2 else 5)
        out[t] = b[t] + 100
    return out, b


@needs_clang
def test_nested_if_else_reconverges_at_ipdoms(tmp_path):
    path = cu(tmp_path, NEST)
    a = [10, 20, 30, 40, 0, 0, 0, 0]
    args = ["--arg", "a=" + ",".join(map(str, a)), "--arg", "b=0,0,0,0"]
    listing = cli_ok("compile", path, *args)
    blocks = blocks_of(listing)
    branches = {i: re.search(r"branch @!?p\d+ B(\d+) else B(\d+) \(reconverge (B\d+|exit)\)", txt)
                for i, txt in blocks.items()}
    branches = {i: m for i, m in branches.items() if m}
    assert len(branches) == 3, listing  # the outer if and the two inner ones
    outer = min(branches)
    outer_r = branches[outer].group(3)
    inner_r = {branches[i].group(3) for i in branches if i != outer}
    assert outer_r.startswith("B") and all(r.startswith("B") for r in inner_r)
    # the inner joins are their own blocks, before the outer join
    assert outer_r not in inner_r and len(inner_r) == 2

    trace = cli_ok("run", path, *args, "--trace")
    steps = [ln for ln in trace.splitlines() if ln.startswith("step ")]
    masks = {}
    for ln in steps:
        m = re.match(r"step \d+ cta 0 (B\d+) w0 mask ([01]{4})", ln)
        masks.setdefault(m.group(1), []).append(m.group(2))
    # each inner join runs once, for its half of the warp; the outer join once, for all 4 lanes
    assert sorted(m for r in inner_r for m in masks[r]) == ["0011", "1100"]
    assert masks[outer_r] == ["1111"]
    # the warp is whole again only at the outer join (and at the start)
    is_full = [" mask 1111" in ln.split(" -> ")[0] for ln in steps]
    first_split = is_full.index(False)
    join = next(i for i, ln in enumerate(steps) if f" {outer_r} " in ln.split(" -> ")[0])
    assert first_split < join and not any(is_full[first_split:join]) and all(is_full[join:])
    assert steps[-1].endswith("-> end")
    exp_a, exp_b = _nest_expected(a)
    assert f"a = {exp_a}" in trace and f"b = {exp_b}" in trace


@needs_clang
def test_if_else_chain_values(tmp_path):
    code = """\
__global__ void chain(int *a) {
  int t = threadIdx.x;
  int x = a[t];
  if (x < 0) { a[t] = -x * 2; }
  else if (x < 10) { a[t + 8] = x + 1000; }
  else if (x & 1) { a[t] = x >> 1; }
  else { a[t] = x << 2; }
}
"""
    xs = [-3, 5, 11, 12, 0, -100, 99, 10]
    res = run_cu(tmp_path, code, {"a": xs + [0] * 8}, block=8)
    exp = xs + [0] * 8
    for t, x in enumerate(xs):
        if x < 0:
            exp[t] = -x * 2
        elif x < 10:
            exp[t + 8] = x + 1000
        elif x & 1:
            exp[t] = x >> 1
        else:
            exp[t] = x << 2
    assert res.outputs["a"] == exp


# --------------------------------------------------------------------------- memory layout


SHARED = """\
__shared__ int g[3];
__global__ void sh2(int *a, int *b) {
  __shared__ int s[5];
  int t = threadIdx.x;
  g[t & 3 ? 1 : 0] = t;
  s[t] = a[t] + b[t];
  __syncthreads();
  a[t] = s[4 - t] + g[0] + g[1];
}
"""


@needs_clang
def test_shared_variables_follow_the_global_arrays(tmp_path):
    path = cu(tmp_path, SHARED)
    a, b = [1, 2, 3, 4], [10, 20, 30, 40, 50]
    args = ["--arg", "a=" + ",".join(map(str, a)), "--arg", "b=" + ",".join(map(str, b))]
    out = cli_ok("compile", path, *args)
    head = [ln for ln in out.splitlines() if ln.startswith("//")]
    assert head[0].startswith("// kernel sh2: ")
    assert head[1] == "// a: words 0..3"
    assert head[2] == "// b: words 4..8"
    assert head[3] == "// __shared__ g: words 9..11"
    assert re.fullmatch(r"// __shared__ \S*s\S*: words 12\.\.16", head[4]), head
    res = reference(path, args={"a": a, "b": b})
    s = [a[t] + b[t] for t in range(4)] + [0]  # s[4] is never written: memory starts at zero
    g0, g1 = 0, 3  # lane 0 writes g[0]; lanes 1..3 write g[1] in ascending order
    assert res.outputs["a"] == [s[4 - t] + g0 + g1 for t in range(4)]
    assert res.outputs["b"] == b
    assert [(x.name, x.base, x.length) for x in res.program.arrays] == [("a", 0, 4), ("b", 4, 5)]


@needs_clang
def test_dynamic_shared_memory_does_not_alias(tmp_path):
    code = """\
extern __shared__ int dyn[];
__global__ void ext2(int *a) {
  __shared__ int s[4];
  int t = threadIdx.x;
  dyn[t] = a[t] * 2;
  s[t] = a[t] + 100;
  __syncthreads();
  a[t] = dyn[3 - t] + s[(t + 1) & 3];
}
"""
    a = [1, 2, 3, 4]
    try:
        res = run_cu(tmp_path, code, {"a": a})
    except QwenGpuError as e:  # refusing dynamic shared memory is fine too, if it says so
        assert "dyn" in str(e)
        return
    assert res.outputs["a"] == [2 * a[3 - t] + a[(t + 1) & 3] + 100 for t in range(4)]


@needs_clang
def test_grid_blocks_share_memory_and_atomics(tmp_path):
    code = """\
__global__ void grid(int *a, int *cnt) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  a[i] = a[i] * (int)blockIdx.x + (int)gridDim.x;
  atomicAdd(&cnt[0], i);
}
"""
    a = list(range(1, 13))
    res = run_cu(tmp_path, code, {"a": a, "cnt": [0]}, grid=3)
    assert res.outputs["a"] == [a[i] * (i // 4) + 3 for i in range(12)]
    assert res.outputs["cnt"] == [sum(range(12))]


@needs_clang
def test_signed_and_unsigned_min_max_shift(tmp_path):
    code = """\
__global__ void minmax(int *a, unsigned *u) {
  int t = threadIdx.x;
  int x = a[t], y = a[t + 4];
  a[t + 8] = min(x, y) * 3 + max(x, y);
  u[t] = max(u[t], u[t + 4]) - (u[t] >> 3) + (unsigned)(x >> 2) + abs(y);
}
"""
    a = [-5, 7, 100, -(1 << 31), 3, -7, 100, 5]
    u = [1, M32, 80, 0, 2, 3, M32 - 1, 9]
    res = run_cu(tmp_path, code, {"a": a + [0] * 4, "u": u})
    exp_a = a + [s32(min(a[t], a[t + 4]) * 3 + max(a[t], a[t + 4])) for t in range(4)]
    exp_u = [s32(max(u[t], u[t + 4]) - (u[t] >> 3) + ((a[t] >> 2) & M32) + abs(a[t + 4])) for t in range(4)]
    assert res.outputs["a"] == exp_a
    assert res.outputs["u"] == exp_u + [s32(v) for v in u[4:]]


# --------------------------------------------------------------------------- the compile command


@needs_clang
def test_emit_ptx_prints_the_module(tmp_path):
    out = cli_ok("compile", cu(tmp_path, OFFSETS), "--emit", "ptx")
    assert ".entry _Z3offPiS_(" in out and ".version" in out and ".target sm_75" in out
    # PTX is printed before any lowering: a kernel the machine cannot run still shows
    div = cu(tmp_path, "__global__ void d(int *a, int b) { a[0] /= b; }\n", "div.cu")
    assert "div.s32" in cli_ok("compile", div, "--emit", "ptx")


@needs_clang
def test_compile_without_args_uses_placeholders(tmp_path):
    out = cli_ok("compile", cu(tmp_path, PRET))
    head = out.splitlines()
    assert head[0].startswith("// kernel pret: ") and "placeholder arguments" in head[0]
    assert "// a: words 0..0" in head  # a pointer gets one word
    assert "// n = 0" in head  # a scalar gets 0
    assert any(re.fullmatch(r"// __shared__ \S+: words 1\.\.16", ln) for ln in head)
    assert re.search(r"^B0:", out, re.M) and "bar.sync; jump B" in out and "exit" in out
    # with real arguments the note goes away and the values show
    out = cli_ok("compile", cu(tmp_path, PRET), "--arg", "a=1,2,3", "--arg", "n=2")
    assert "placeholder" not in out and "// a: words 0..2" in out and "// n = 2" in out


@needs_clang
def test_saved_ptx_lowers_like_the_cuda_source(tmp_path):
    """The PTX printed by `compile --emit ptx`, parsed by itself, binds `param_N` names."""
    ptx = cli_ok("compile", cu(tmp_path, OFFSETS), "--emit", "ptx")
    ck = ptx_kernel(ptx)
    assert [p.name for p in ck.params] == ["param_0", "param_1"]
    assert all(p.pointer for p in ck.params)
    a = [1, 2, 3, 4, 5, 6]
    res = run_reference(bind(ck, {"param_0": a, "param_1": [0] * 4}, machine=PUBLISHED_MACHINE))
    assert res.outputs == {"param_0": a, "param_1": [a[t + 1] + 3 * a[t + 2] for t in range(4)]}


@needs_clang
def test_ptx_file_input_runs_with_param_names(tmp_path):
    ptx = cli_ok("compile", cu(tmp_path, OFFSETS), "--emit", "ptx")
    path = tmp_path / "off.ptx"
    path.write_text(ptx)
    a = [1, 2, 3, 4, 5, 6]
    out = cli_ok("run", path, "--arg", "param_0=" + ",".join(map(str, a)), "--arg", "param_1=0,0,0,0", "--json")
    assert f'"param_1": {[a[t + 1] + 3 * a[t + 2] for t in range(4)]}' in out


# --------------------------------------------------------------------------- nvcc


NVCC_CASES = {
    "fib": (FIB, {"out": [0] * 4, "n": 7}, lambda: {"out": [_fib(7 + t) for t in range(4)]}),
    "nest": (NEST, {"a": [10, 20, 30, 40, 0, 0, 0, 0], "b": [0] * 4},
             lambda: dict(zip(("a", "b"), _nest_expected([10, 20, 30, 40, 0, 0, 0, 0])))),
    "pret": (PRET, {"a": [1, 2, 3, 4], "n": 3}, lambda: {"a": [6, 4, 2, 4]}),
    "subword": (SUBWORD, {"a": [0x1FF, 0x80, -1, 0x12345678] + [0] * 12},
                lambda: {"a": [_sext(x, 8) for x in (0x1FF, 0x80, -1, 0x12345678)]
                         + [x & 0xFF for x in (0x1FF, 0x80, -1, 0x12345678)]
                         + [_sext(x, 16) for x in (0x1FF, 0x80, -1, 0x12345678)]
                         + [x & 0xFFFF for x in (0x1FF, 0x80, -1, 0x12345678)]}),
}


@needs_nvcc
@pytest.mark.parametrize("case", sorted(NVCC_CASES))
def test_nvcc_frontend_gives_the_same_outputs(tmp_path, case):
    code, args, expected = NVCC_CASES[case]
    by_clang = run_cu(tmp_path, code, args, name=f"{case}.cu")
    by_nvcc = run_cu(tmp_path, code, args, frontend="nvcc", name=f"{case}.cu")
    assert by_clang.outputs == expected()
    assert by_nvcc.outputs == expected()
    assert "NVIDIA" in compile_kernel(tmp_path / f"{case}.cu", frontend="nvcc").ptx
