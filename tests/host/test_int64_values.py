"""64-bit integer values (``host/wide64.py``): every operation clang emits for ``long long``
and ``unsigned long long``, on values across the 32-bit boundary, against Python's
integers wrapped to 64 bits (the oracle: C's meaning, never the lowering's code); 64-bit
scalar parameters beyond 32 bits; what is refused, at the user's line.
"""

from __future__ import annotations

import re

import pytest

from qwengpu_mlx.core.errors import FrontendError, MemoryFault, UnsupportedError
from qwengpu_mlx.core.machine import PUBLISHED_MACHINE, LARGE_MACHINE
from qwengpu_mlx.core.readout import read_outputs
from qwengpu_mlx.host.frontend import select_kernel
from qwengpu_mlx.host.launch import CompiledKernel, bind
from qwengpu_mlx.host.ptx_parser import parse_ptx
from qwengpu_mlx.host.signature import KernelParam
from qwengpu_mlx.runtime.check import reference_run
from tests.support.cli import cu, needs_clang
from tests.support.launching import reference

pytestmark = needs_clang

M64 = (1 << 64) - 1


def s64(x: int) -> int:
    x &= M64
    return x - (1 << 64) if x >> 63 else x


def word(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x >> 31 else x


def words(x: int) -> list[int]:
    return [word(x), word(x >> 32)]


OPS = """\
__device__ void put(unsigned *out, int k, long long v) {
    out[2 * k] = (unsigned)v;
    out[2 * k + 1] = (unsigned)(v >> 32);
}
__global__ void ops(long long x, long long y, unsigned *out) {
    unsigned long long ux = x, uy = y;
    put(out, 0, x + y); put(out, 1, x - y); put(out, 2, x * y); put(out, 3, -x);
    put(out, 4, x & y); put(out, 5, x | y); put(out, 6, x ^ y); put(out, 7, ~x);
    put(out, 8, x << 7); put(out, 9, x >> 9); put(out, 10, (long long)(ux >> 37)); put(out, 11, x < y ? x : y);
    put(out, 12, (long long)(ux > uy ? ux : uy)); put(out, 13, x < 0 ? -x : x);
    put(out, 14, (x < y) + 2 * (ux < uy) + 4 * (x == y) + 8 * (x >= y)); put(out, 15, (long long)(int)x);
}
"""


def ops_oracle(x: int, y: int) -> list[int]:
    ux, uy = x & M64, y & M64
    r = [x + y, x - y, x * y, -x, x & y, x | y, x ^ y, ~x, x << 7, x >> 9, ux >> 37, min(x, y),
         max(ux, uy), abs(x), (x < y) + 2 * (ux < uy) + 4 * (x == y) + 8 * (x >= y), s64(word(x))]
    return [w for v in r for w in words(v)]


@pytest.mark.parametrize("x, y", [
    (0x123456789, -0x987654321), (-1, 1), (0xFFFFFFFF, 1), (-(1 << 63), -1), ((1 << 32) + 5, (1 << 32) + 5),
    (7, -0x100000000),
], ids=["mixed", "minus-one", "carry", "min", "equal", "borrow"])
def test_every_operation_on_values_across_32_bits(tmp_path, x, y):
    """Parameters beyond 32 bits given as launch arguments; 16 results, each as two words."""
    run = reference(cu(tmp_path, OPS, "ops.cu"), args={"x": x, "y": y, "out": [0] * 32}, block=1,
                    machine=LARGE_MACHINE)
    assert run.outputs["out"] == ops_oracle(x, y)


def test_a_size_t_loop_bound_beyond_memory_faults_as_an_out_of_bounds_access(tmp_path):
    """n = 2^32 + 3: the loop runs past the array, which faults (on a GPU: an illegal address)."""
    code = ("__global__ void fill(int *c, size_t n) {\n"
            "    for (size_t i = threadIdx.x; i < n; i += blockDim.x) c[i] = (int)i;\n}\n")
    path = cu(tmp_path, code, "fill.cu")
    assert reference(path, args={"c": [0] * 6, "n": 6}).outputs["c"] == [0, 1, 2, 3, 4, 5]
    with pytest.raises(MemoryFault):
        reference(path, args={"c": [0] * 6, "n": (1 << 32) + 3})


def test_an_index_beyond_32_bits_faults_and_never_wraps(tmp_path):
    """a[k] with k = 2^32 + 1: the low word alone would read a[1]; the GPU's address is far outside."""
    code = "__global__ void pick(const int *a, int *out, long long k) {\n    out[0] = a[k];\n}\n"
    path = cu(tmp_path, code, "pick.cu")
    assert reference(path, args={"a": [5, 6, 7], "out": [0], "k": 2}, block=1).outputs["out"] == [7]
    with pytest.raises(MemoryFault):
        reference(path, args={"a": [5, 6, 7], "out": [0], "k": (1 << 32) + 1}, block=1)


def test_a_shared_array_of_long_long_holds_two_words_an_element(tmp_path):
    code = ("__global__ void rev(const unsigned *lo, unsigned *out) {\n"
            "    __shared__ unsigned long long s[4];\n    int t = threadIdx.x;\n"
            "    s[t] = ((unsigned long long)lo[t] << 32) + t;\n    __syncthreads();\n"
            "    unsigned long long v = s[3 - t];\n"
            "    out[2 * t] = (unsigned)v;\n    out[2 * t + 1] = (unsigned)(v >> 32);\n}\n")
    lo = [1, -1, 123, -2]
    run = reference(cu(tmp_path, code, "rev.cu"), args={"lo": lo, "out": [0] * 8})
    expected = [w for t in range(4) for w in words(((lo[3 - t] & 0xFFFFFFFF) << 32) + 3 - t)]
    assert run.outputs["out"] == expected


def test_a_64_bit_atomic_is_refused_by_clang_at_the_call(tmp_path):
    code = "__global__ void k(int *o) {\n    __shared__ unsigned long long c;\n    atomicAdd(&c, 1ULL);\n}\n"
    with pytest.raises(FrontendError, match=r"k\.cu:3:.*64-bit atomics are not supported"):
        reference(cu(tmp_path, code, "k.cu"), args={"o": [0]}, block=1)


@pytest.mark.parametrize("code, needle, says", [
    ("__global__ void k(int *o, long long a, long long b) {\n    o[0] = (int)(a / b);\n}\n", "a / b", "division"),
    ("__global__ void k(int *o, unsigned long long a) {\n    o[0] = (int)(a % 10);\n}\n", "a % 10", "remainder"),
    ("__global__ void k(long long *o, int n) {\n    o[0] = n;\n}\n", "o[0]", "array of 64-bit"),
], ids=["division", "remainder", "array-parameter"])
def test_what_is_not_done_is_refused_at_the_line(tmp_path, code, needle, says):
    path = cu(tmp_path, code, "k.cu")
    line = next(n for n, text in enumerate(code.splitlines(), 1) if needle in text)
    args = {"o": [0], "a": 5, "b": 2, "n": 1}
    names = re.findall(r"(\w+)[,)]", code.splitlines()[0])
    with pytest.raises(UnsupportedError, match=rf"^k\.cu:{line}: .*{says}"):
        reference(path, args={n: args[n] for n in names}, block=1)


FUNCTIONS = """\\
__device__ void put(unsigned *out, int k, unsigned long long v) {
    out[2 * k] = (unsigned)v;
    out[2 * k + 1] = (unsigned)(v >> 32);
}
__global__ void order(long long x, long long y, unsigned *out) {
    put(out, 0, llmin(x, y)); put(out, 1, llmax(x, y)); put(out, 2, ullmin(x, y)); put(out, 3, min(x, y));
    put(out, 4, max((unsigned long long)x, (unsigned long long)y)); put(out, 5, llabs(x));
}
__global__ void bits(long long x, long long y, unsigned *out) {
    put(out, 0, __popcll(x)); put(out, 1, __clzll(x)); put(out, 2, __ffsll(y)); put(out, 3, __brevll(x));
}
__global__ void high(long long x, long long y, unsigned *out) {
    put(out, 0, __umul64hi(x, y)); put(out, 1, __mul64hi(x, y));
}
"""


def functions_oracle(x: int, y: int) -> dict[str, list[int]]:
    """CUDA's 64-bit integer functions by their definitions."""
    ux, uy = x & M64, y & M64
    brev = int(f"{ux:064b}"[::-1], 2)
    ffs = (uy & -uy).bit_length()
    order = [min(x, y), max(x, y), min(ux, uy), min(x, y), max(ux, uy), abs(x)]
    bits = [bin(ux).count("1"), 64 - ux.bit_length(), ffs, brev]
    high = [(ux * uy) >> 64, (x * y) >> 64]
    return {k: [w for v in vals for w in words(v)] for k, vals in
            (("order", order), ("bits", bits), ("high", high))}


@pytest.mark.parametrize("x, y", [(-0x123456789A, 0x700000000), (0x8000000000000000 - (1 << 64), -1),
                                  (0xFFFFFFFF, 0x100000001), (0, 1 << 40)],
                         ids=["mixed", "min-by-minus-one", "words", "zero"])
@pytest.mark.parametrize("kernel", ["order", "bits", "high"])
def test_cuda_64_bit_integer_functions(tmp_path, kernel, x, y):
    """llmin/llmax/ullmin/min/max/llabs, __popcll/__clzll/__ffsll/__brevll, __umul64hi/__mul64hi."""
    expected = functions_oracle(x, y)[kernel]
    run = reference(cu(tmp_path, FUNCTIONS, "functions.cu"), kernel=kernel,
                    args={"x": x, "y": y, "out": [0] * len(expected)}, block=1, machine=LARGE_MACHINE)
    assert run.outputs["out"] == expected


SHIFTS = """\
__global__ void shifts(long long x, const int *s, unsigned *out) {
    int t = threadIdx.x;
    unsigned long long l = (unsigned long long)x << s[t], r = (unsigned long long)x >> s[t];
    long long a = x >> s[t];
    out[6 * t] = (unsigned)l; out[6 * t + 1] = (unsigned)(l >> 32);
    out[6 * t + 2] = (unsigned)r; out[6 * t + 3] = (unsigned)(r >> 32);
    out[6 * t + 4] = (unsigned)a; out[6 * t + 5] = (unsigned)(a >> 32);
}
"""


@pytest.mark.parametrize("x", [-0x123456789ABCDEF, 0x7EDCBA9876543210], ids=["negative", "positive"])
def test_shifts_by_a_variable_amount(tmp_path, x):
    """``<<``, unsigned ``>>`` and signed ``>>`` by amounts 0..63 read from memory, one per lane."""
    amounts = [0, 1, 31, 32, 33, 40, 63, 5]
    run = reference(cu(tmp_path, SHIFTS, "shifts.cu"), args={"x": x, "s": amounts, "out": [0] * 48}, block=8,
                    machine=LARGE_MACHINE)
    ux = x & M64
    expected = [w for k in amounts for v in (ux << k, ux >> k, x >> k) for w in words(v)]
    assert run.outputs["out"] == expected


def test_a_product_with_a_thread_index_takes_the_short_high_word(tmp_path):
    """``(unsigned long long)threadIdx.x * b``: the thread index is below 2^16, whose product's
    high word is a shorter routine (``wide64_ops._small_mul_hi``); exact for every b."""
    code = ("__global__ void scale(const unsigned *b, unsigned *out) {\n    unsigned t = threadIdx.x;\n"
            "    unsigned long long p = (unsigned long long)t * b[t];\n"
            "    out[2 * t] = (unsigned)p;\n    out[2 * t + 1] = (unsigned)(p >> 32);\n}\n")
    b = [-1, -65536, 0x7FFFFFFF, 65535, -2, 123456789, 1, 0xFFFF]
    run = reference(cu(tmp_path, code, "scale.cu"), args={"b": b, "out": [0] * 16}, block=8)
    assert run.outputs["out"] == [w for t in range(8) for w in words(t * (b[t] & 0xFFFFFFFF))]


def test_a_warp_sum_of_long_longs_by_shuffles(tmp_path):
    """The canonical 16-8-4-2-1 __shfl_down_sync reduction on long long values past 2^32
    (CUDA's 64-bit overload: two 32-lane shuffles, one a word); lane 0 holds the sum."""
    code = ("__global__ void wsum(const int *a, unsigned *out) {\n    int t = threadIdx.x;\n"
            "    long long v = (long long)a[t] * a[t] * 3;\n"
            "    for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffff, v, o);\n"
            "    if (t == 0) { out[0] = (unsigned)v; out[1] = (unsigned)(v >> 32); }\n}\n")
    a = [2147483647, -2147483648, 123456789, -5, 65536, 99999, -77777, 1]
    run = reference(cu(tmp_path, code, "wsum.cu"), args={"a": a, "out": [0, 0]}, block=8, machine=LARGE_MACHINE)
    assert run.outputs["out"] == words(sum(x * x * 3 for x in a))


def test_a_64_bit_shuffle_with_a_computed_mask_is_refused_at_the_call(tmp_path):
    code = ("__global__ void k(long long *o, unsigned m) {\n    long long v = m;\n"
            "    v = __shfl_down_sync(m, v, 1);\n}\n")
    with pytest.raises(FrontendError, match=r"k\.cu:3:.*member mask"):
        reference(cu(tmp_path, code, "k.cu"), args={"o": [0], "m": 3}, block=4)


def test_a_wide_product_truncated_to_int_keeps_its_low_word(tmp_path):
    """``(int)((long long)a * a + 7)``: a value whose low word C keeps (2^40 + 7 truncates
    to 7), never clamped as an address's arithmetic is where it may leave 32 bits."""
    code = "__global__ void tr(const int *a, int *out) {\n    int t = threadIdx.x;\n" \
           "    out[t] = (int)((long long)a[t] * a[t] + 7);\n}\n"
    a = [1 << 20, 65537, -3, 46341]
    run = reference(cu(tmp_path, code, "tr.cu"), args={"a": a, "out": [0] * 4})
    assert run.outputs["out"] == [word(x * x + 7) for x in a]


@pytest.mark.parametrize("n", [0, 1, 7, 5000, 2000000])
def test_a_loop_clang_rewrites_into_a_64_bit_closed_formula_runs(tmp_path, n):
    """``for (k < n) s += k * k`` becomes n(n-1)(2n-1)/6 in 64-bit arithmetic (mul.wide,
    shifts, multiplies by constants); its int result wraps as the loop's would."""
    code = ("__global__ void squares(int* out, int n) {\n    int s = 0;\n"
            "    for (int k = 0; k < n; k++) {\n        s += k * k;\n    }\n    out[threadIdx.x] = s;\n}\n")
    run = reference(cu(tmp_path, code, "squares.cu"), args={"out": [0] * 4, "n": n})
    assert run.outputs["out"] == [word(sum(k * k for k in range(n)))] * 4


GUARDED_COMPARE = """.version 7.0
.target sm_75
.address_size 64
.visible .entry k(.param .u64 k_param_0, .param .u64 k_param_1)
{
\t.reg .pred %p<3>;
\t.reg .b32 %r<4>;
\t.reg .b64 %rd<6>;
\tld.param.u64 %rd1, [k_param_0];
\tld.param.u64 %rd2, [k_param_1];
\tmov.u32 %r1, %tid.x;
\tsetp.eq.s32 %p1, %r1, 1;
\tsetp.ne.s32 %p2, %r1, %r1;
\t@%p1 setp.lt.s64 %p2, %rd2, 5;
\tselp.u32 %r2, 1, 0, %p2;
\tmul.wide.s32 %rd3, %r1, 4;
\tadd.s64 %rd4, %rd1, %rd3;
\tst.global.u32 [%rd4], %r2;
\tret;
}
"""


@pytest.mark.parametrize("x, below", [(-(1 << 40), 1), (5, 0), ((1 << 32) + 1, 0), (4, 1)])
def test_a_guarded_64_bit_comparison_writes_only_where_its_guard_holds(x, below):
    """``@%p1 setp.lt.s64``: lane 1 compares; every other lane keeps its false predicate."""
    module = parse_ptx(GUARDED_COMPARE)
    params = [KernelParam("out", True, "int *"), KernelParam("x", False, "long long", 64, True)]
    program = bind(CompiledKernel(None, GUARDED_COMPARE, module, select_kernel(module, None), params),
                   {"out": [7, 7, 7, 7], "x": x}, machine=PUBLISHED_MACHINE)
    run = reference_run(program, PUBLISHED_MACHINE, budget=PUBLISHED_MACHINE.step_budget)
    assert read_outputs(program, run.memory)["out"] == [0, below, 0, 0]
